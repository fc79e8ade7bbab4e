// Copyright 2026 The stubkit Authors.
//
// The operations behind async unary calls: `AsyncRetryOperation` (one
// call, one allocation), `StartAsyncUnary` (the gRPC callback glue) and the
// future block. Not API: see stubkit/async_retry_loop.h.

#ifndef STUBKIT_INTERNAL_ASYNC_RETRY_OPERATION_H_
#define STUBKIT_INTERNAL_ASYNC_RETRY_OPERATION_H_

#include <grpcpp/client_context.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/async_callback.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/internal/engine/async_call.h"
#include "stubkit/internal/engine/connection_channel.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/method.h"
#include "stubkit/options.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

// Calls `done` once: with `response` when `status` is OK, else with
// `status`. `done` is emptied first, so what it captured is released when
// it returns.
template <typename Response>
void DeliverOnce(AsyncCallback<Response>& done, absl::Status status,
                 Response& response) {
  AsyncCallback<Response> callback = std::move(done);
  if (status.ok()) {
    callback(std::move(response));
  } else {
    callback(std::move(status));
  }
}

// The response-independent part of one async call.
class AsyncRetryOperationBase : public AsyncCallBase {
 public:
  AsyncRetryOperationBase(const MethodInfo& method, Options call,
                          Options client);
  ~AsyncRetryOperationBase() override;

  // The channel to follow back after a connection failure (see
  // stubkit/internal/engine/connection_channel.h); before `Start`. Null: none.
  void set_channel(std::shared_ptr<ConnectionChannel> channel) {
    channel_ = std::move(channel);
    state().channel_follow().set_channel(channel_.get());
  }

  void Start();

 protected:
  // Starts one attempt on `context`; the subclass calls `OnAttemptDone`.
  virtual void StartAttempt(grpc::ClientContext& context,
                            const OptionsView& options) = 0;
  // Adjusts each attempt's context after the retry loop prepared it.
  virtual void ConfigureAttempt(grpc::ClientContext& /*context*/) {}
  // The retry decision after a failed attempt (RetryLoopState::OnFailure):
  // true to retry after `*wait`, false to stop with `*final_status`. A
  // stream decides through DecideStreamFailure (its resume hook).
  virtual bool DecideFailure(const absl::Status& status,
                             const grpc::ClientContext& context,
                             absl::Status* final_status,
                             std::chrono::nanoseconds* wait);

  // The status of a call its cancellation token ended (a wait, or an
  // attempt's start, refused): `state().Cancelled()`, unless the subclass
  // cancelled the token for a reason of its own.
  virtual absl::Status CancelledStatus() { return state().Cancelled(); }

  // Called once per attempt by the subclass.
  void OnAttemptDone(const absl::Status& status);

 private:
  void RunAttempt();
  // Waits `wait` in the sleeper, then OnWaitDone.
  void ScheduleWait(std::chrono::nanoseconds wait);
  void OnWaitDone(bool fired);
  // Joins the channel's watch for wait `generation`.
  void WatchChannel(uint64_t generation);
  // The channel's watch says it is ready again: ends wait `generation`
  // early, if it is still the live one. On a timer pool thread.
  void OnChannelReady(uint64_t generation);
  void Finish(absl::Status status);
  void OnCancel() override;

  // The attempt's context, in place: one allocation less per attempt.
  std::optional<grpc::ClientContext> context_;
  uint64_t cancel_callback_ = 0;
  std::shared_ptr<ConnectionChannel> channel_;

  // An internal::Mutex (a std::mutex), not an absl::Mutex: Debian's abseil
  // tracks every Mutex for deadlock detection, and creating, locking and
  // destroying one per call cost about 4% of an in-process call's
  // instructions (callgrind: GraphCycles::GetId, Mutex::ForgetDeadlockInfo).
  Mutex mu_;
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // The live wait's id; 0 while not known yet.
  uint64_t timer_ ABSL_GUARDED_BY(mu_) = 0;
  // Counts waits, to tell a stale id.
  uint64_t wait_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // The live wait's channel watch, if any.
  uint64_t watch_ ABSL_GUARDED_BY(mu_) = 0;
  // The live wait was ended by the channel.
  bool woken_by_channel_ ABSL_GUARDED_BY(mu_) = false;
};

// The receiving end of an attempt of an async unary call.
template <typename Response>
class AsyncUnaryTarget {
 public:
  // Where the gRPC call may write the response.
  virtual Response* response_slot() = 0;
  // The gRPC call is over; on OK the response is in `response_slot()`.
  virtual void OnGrpcDone(const grpc::Status& status) = 0;
  // The attempt's result, by any other way (a decorator, a refusal).
  virtual void OnResult(absl::StatusOr<Response> result) = 0;

 protected:
  ~AsyncUnaryTarget() = default;
};

// The callback an operation hands to each attempt. One pointer, trivially
// copyable: std::function stores it in place, and gRPC's copies of it are
// free. `StartAsyncUnary` recognises it and lets gRPC write straight into
// the operation.
template <typename Response>
struct AttemptDone {
  AsyncUnaryTarget<Response>* target;
  void operator()(absl::StatusOr<Response> result) const {
    target->OnResult(std::move(result));
  }
};

// One async unary call. `Attempt` and `Done` are stored in place (the
// generated attempt, with its copy of the request, and the user's
// callback), so that the whole call is one allocation.
template <typename Response, typename AttemptFn = AsyncAttempt<Response>,
          typename DoneFn = AsyncCallback<Response>>
class AsyncRetryOperation final : public AsyncRetryOperationBase,
                                  public AsyncUnaryTarget<Response> {
 public:
  using Attempt = AttemptFn;
  using Done = DoneFn;

  // `attempt` and `done` are forwarded into place: the attempt holds a copy
  // of the request, and each move of a protobuf message costs a swap and
  // the moved-from message's destructor.
  template <typename A, typename D>
  AsyncRetryOperation(const MethodInfo& method, Options call, Options client,
                      A&& attempt, D&& done)
      : AsyncRetryOperationBase(method, std::move(call), std::move(client)),
        attempt_(std::forward<A>(attempt)),
        done_(std::forward<D>(done)) {
    // Unary calls may wait out an outage in the throttle's waiting mode.
    state().EnableThrottleWait();
  }

 private:
  void StartAttempt(grpc::ClientContext& context,
                    const OptionsView& options) override {
    // The attempt's reference to the operation, dropped when it ends.
    in_flight_ = shared_from_this();
    attempt_(context, options,
             AsyncCallback<Response>(AttemptDone<Response>{this}));
  }

  Response* response_slot() override { return &response_; }

  void OnGrpcDone(const grpc::Status& status) override {
    std::shared_ptr<AsyncCallBase> self = std::move(in_flight_);
    if (status.ok()) {
      MaybeLogPayload(state(), "response", response_);
      OnAttemptDone(absl::OkStatus());
    } else {
      OnAttemptDone(FromGrpcStatus(status));
    }
  }

  void OnResult(absl::StatusOr<Response> result) override {
    std::shared_ptr<AsyncCallBase> self = std::move(in_flight_);
    if (result.ok()) {
      MaybeLogPayload(state(), "response", *result);
      response_ = *std::move(result);
      OnAttemptDone(absl::OkStatus());
    } else {
      OnAttemptDone(result.status());
    }
  }

  void Deliver(absl::Status status) override {
    Done callback = std::move(done_);
    if (status.ok()) {
      callback(std::move(response_));
    } else {
      callback(std::move(status));
    }
  }

  Attempt attempt_;
  Done done_;
  Response response_;
  std::shared_ptr<AsyncCallBase> in_flight_;
};

// A generated client's async attempt: the stub and a copy of the request
// (the call may outlive the caller's request), calling `Stub::*kAsync`.
// A plain struct, stored in place in the call's operation.
template <typename Stub, typename Request, typename Response,
          void (Stub::*kAsync)(grpc::ClientContext&, const OptionsView&,
                               const Request&, AsyncCallback<Response>)>
struct AsyncUnaryAttempt {
  std::shared_ptr<Stub> stub;
  Request request;
  void operator()(grpc::ClientContext& context, const OptionsView& options,
                  AsyncCallback<Response> done) const {
    ((*stub).*kAsync)(context, options, request, std::move(done));
  }
};

// The error for a grpc_cpp_plugin stub whose `async()` is null (gRPC's
// generated `MockFooStub`, or a hand-written `StubInterface`): no callback
// API, so async calls (hedged or not) cannot be made; sync calls can.
// FAILED_PRECONDITION, marked so that no loop retries or hedges it.
absl::Status NoAsyncStubError(absl::string_view method_full_name);
bool IsNoAsyncStubError(const absl::Status& status);

// Starts one callback-API unary call: `start(response, on_done)` must call
// the grpc_cpp_plugin `async()` method with them. From an operation's own
// attempt (`AttemptDone`), gRPC writes into the operation and calls it back
// directly: nothing is allocated. Otherwise one holder keeps the response
// and `done` until gRPC is done, and the status is converted.
template <typename Response, typename Start>
void StartAsyncUnary(Start&& start, AsyncCallback<Response> done) {
  if (const AttemptDone<Response>* own =
          done.template target<AttemptDone<Response>>()) {
    AsyncUnaryTarget<Response>* target = own->target;
    start(target->response_slot(),
          [target](grpc::Status status) { target->OnGrpcDone(status); });
    return;
  }
  struct Holder {
    Response response;
    AsyncCallback<Response> done;
  };
  auto* holder = new Holder{Response(), std::move(done)};
  start(&holder->response, [holder](grpc::Status status) {
    std::unique_ptr<Holder> owned(holder);
    AsyncCallback<Response> callback = std::move(owned->done);
    if (!status.ok()) {
      callback(FromGrpcStatus(status));
    } else {
      callback(std::move(owned->response));
    }
  });
}

// `AsyncRetryLoop` with `attempt` and `done` forwarded straight into the
// operation (generated code passes a temporary attempt holding a copy of the
// request: it is moved once, into place).
template <typename Response, typename Attempt, typename Done>
void StartAsyncRetryLoop(const MethodInfo& method, Options call, Options client,
                         Attempt&& attempt, Done&& done,
                         std::shared_ptr<ConnectionChannel> channel = nullptr) {
  auto operation = std::make_shared<
      AsyncRetryOperation<Response, std::decay_t<Attempt>, std::decay_t<Done>>>(
      method, std::move(call), std::move(client),
      std::forward<Attempt>(attempt), std::forward<Done>(done));
  if (channel != nullptr) operation->set_channel(std::move(channel));
  operation->Start();
}

// One heap block for a std::promise, its shared state and its result, which
// std::promise would otherwise allocate separately (3 allocations per
// future-form call). The block goes when the last of them is deallocated;
// a part that does not fit goes to the heap as usual.
template <typename Response>
class PromiseBlock {
 public:
  void* Allocate(size_t size, size_t align) {
    const size_t offset = (used_ + align - 1) / align * align;
    if (offset + size > sizeof(buffer_)) return nullptr;
    used_ = offset + size;
    refs_.fetch_add(1, std::memory_order_relaxed);
    return buffer_ + offset;
  }
  bool Owns(const void* p) const {
    return p >= static_cast<const void*>(buffer_) &&
           p < static_cast<const void*>(buffer_ + sizeof(buffer_));
  }
  void AddRef() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // The callbacks (`FulfilPromise` copies) that can still fulfil the
  // promise, and whether one did: the first claim wins.
  void AddHandle() { handles_.fetch_add(1, std::memory_order_relaxed); }
  bool DropHandle() {
    return handles_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  bool Claim() { return !claimed_.exchange(true, std::memory_order_acq_rel); }

 private:
  std::atomic<int> refs_{0};
  std::atomic<int> handles_{0};
  std::atomic<bool> claimed_{false};
  size_t used_ = 0;  // only while the promise is built, on one thread
  alignas(std::max_align_t) unsigned char buffer_
      [2 * sizeof(absl::StatusOr<Response>) + 256];
};

template <typename T, typename Response>
struct PromiseBlockAllocator {
  using value_type = T;
  explicit PromiseBlockAllocator(PromiseBlock<Response>* b) : block(b) {}
  template <typename U>
  PromiseBlockAllocator(const PromiseBlockAllocator<U, Response>& other)
      : block(other.block) {}
  T* allocate(size_t n) {
    void* p = block->Allocate(n * sizeof(T), alignof(T));
    return static_cast<T*>(p != nullptr ? p : ::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) {
    if (block->Owns(p)) {
      block->Release();
    } else {
      ::operator delete(p);
    }
  }
  template <typename U>
  bool operator==(const PromiseBlockAllocator<U, Response>& other) const {
    return block == other.block;
  }
  template <typename U>
  bool operator!=(const PromiseBlockAllocator<U, Response>& other) const {
    return block != other.block;
  }
  PromiseBlock<Response>* block;
};

// Non-template pieces (src/internal/engine/async_retry_operation.cc).
absl::Status DroppedCallbackError();
void ReportSecondCall();

// Fulfils a promise built by `Make` and destroys it: two pointers, so
// std::function stores it in place. The first call wins. When the last copy
// goes without any call (a connection that dropped the callback, such as a
// mocked `AsyncM` with no action), the future gets INTERNAL instead of
// never becoming ready; a second call is reported on stderr and ignored.
template <typename Response>
class FulfilPromise {
 public:
  using Promise = std::promise<absl::StatusOr<Response>>;

  // A future and the callback that fulfils it: one allocation.
  static std::pair<std::future<absl::StatusOr<Response>>, FulfilPromise>
  Make() {
    auto* block = new PromiseBlock<Response>;
    void* place = block->Allocate(sizeof(Promise), alignof(Promise));
    Promise* promise = new (place) Promise(
        std::allocator_arg, PromiseBlockAllocator<char, Response>(block));
    return {promise->get_future(), FulfilPromise(promise, block)};
  }

  FulfilPromise(const FulfilPromise& other)
      : promise_(other.promise_), block_(other.block_) {
    block_->AddRef();
    block_->AddHandle();
  }
  FulfilPromise(FulfilPromise&& other) noexcept
      : promise_(std::exchange(other.promise_, nullptr)),
        block_(std::exchange(other.block_, nullptr)) {}
  FulfilPromise& operator=(const FulfilPromise&) = delete;
  FulfilPromise& operator=(FulfilPromise&&) = delete;
  ~FulfilPromise() {
    if (block_ == nullptr) return;
    if (block_->DropHandle() && block_->Claim()) Fulfil(DroppedCallbackError());
    block_->Release();
  }

  void operator()(absl::StatusOr<Response> result) const {
    if (!block_->Claim()) {
      ReportSecondCall();
      return;
    }
    Fulfil(std::move(result));
  }

 private:
  FulfilPromise(Promise* promise, PromiseBlock<Response>* block)
      : promise_(promise), block_(block) {
    block_->AddRef();
    block_->AddHandle();
  }
  void Fulfil(absl::StatusOr<Response> result) const {
    promise_->set_value(std::move(result));
    promise_->~Promise();
    block_->Release();  // the promise's own place
  }

  Promise* promise_;
  PromiseBlock<Response>* block_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_ASYNC_RETRY_OPERATION_H_
