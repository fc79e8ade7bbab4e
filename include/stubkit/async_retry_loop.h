// Copyright 2026 The stubkit Authors.
//
// The asynchronous retry loop.
//
// `AsyncRetryLoop` runs one call without blocking a thread: each attempt is
// started through gRPC's callback API, and backoff waits sit in a timer
// (`AsyncSleeperOption`; by default one process-wide timer thread). The
// retry decisions are the sync loop's own (`internal::RetryLoopState`).
//
//   stubkit::AsyncRetryLoop<EchoResponse>(
//       kEchoMethod, call_options, client_options,
//       // Starts one attempt; calls `done` exactly once.
//       [stub, request](grpc::ClientContext& context,
//                       const stubkit::OptionsView& options,
//                       stubkit::AsyncCallback<EchoResponse> done) {
//         auto response = std::make_shared<EchoResponse>();
//         stub->async()->Echo(&context, &request, response.get(),
//             [response, done](grpc::Status s) {
//               if (!s.ok()) return done(stubkit::FromGrpcStatus(s));
//               done(std::move(*response));
//             });
//       },
//       [](absl::StatusOr<EchoResponse> result) { /* the call's result */ });
//
// The options are copied (cheaply: values are shared), so the caller's
// `Options` need not outlive the call. A `CancellationOption` token cancels
// the attempt in flight and any pending wait at once.

#ifndef STUBKIT_ASYNC_RETRY_LOOP_H_
#define STUBKIT_ASYNC_RETRY_LOOP_H_

#include <grpcpp/client_context.h>

#include <functional>
#include <future>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "stubkit/method.h"
#include "stubkit/options.h"
#include "stubkit/retry_loop.h"

namespace stubkit {

// Receives the result of an async call (or attempt), exactly once.
template <typename Response>
using AsyncCallback = std::function<void(absl::StatusOr<Response>)>;

// Starts one async attempt on a fresh context with the call's options, and
// calls its callback exactly once.
template <typename Response>
using AsyncAttempt = std::function<void(
    grpc::ClientContext&, const OptionsView&, AsyncCallback<Response>)>;

namespace internal {

// Async calls keep gRPC initialised for the life of the process: a callback
// may still be inside gRPC when the application drops its last channel and
// server, and gRPC 1.51 must not shut down under it. It also keeps gRPC's
// shared callback queue referenced, so that an operation may drop the last
// reference to a channel from inside that channel's callback (see
// src/async_retry_loop.cc for the evidence): operations are released
// inline, on whatever thread they finish.
void KeepGrpcInitialised();

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
class AsyncRetryOperationBase
    : public std::enable_shared_from_this<AsyncRetryOperationBase> {
 public:
  AsyncRetryOperationBase(const MethodInfo& method, Options call,
                          Options client);
  virtual ~AsyncRetryOperationBase();

  void Start();

 protected:
  // Starts one attempt on `context`; the subclass calls `OnAttemptDone`.
  virtual void StartAttempt(grpc::ClientContext& context,
                            const OptionsView& options) = 0;
  // Delivers the result (`status` is the error, or OK for the stored value).
  virtual void Deliver(absl::Status status) = 0;
  // Adjusts each attempt's context after the retry loop prepared it.
  virtual void ConfigureAttempt(grpc::ClientContext& /*context*/) {}
  // After a failed attempt, before the retry decision: false stops the call
  // with `status` as it is (a stream that cannot be resumed, say).
  virtual bool MayRetry(const absl::Status& /*status*/) { return true; }
  RetryLoopState& state() { return state_; }
  const OptionsView& options() const { return view_; }

  // Called once per attempt by the subclass.
  void OnAttemptDone(const absl::Status& status);

 private:
  void RunAttempt();
  void OnWaitDone(bool fired);
  void Finish(absl::Status status);
  void OnCancel();

  Options call_;
  Options client_;
  OptionsView view_;
  RetryLoopState state_;
  AsyncSleeper* sleeper_;
  std::shared_ptr<AsyncSleeper> sleeper_owner_;
  std::unique_ptr<grpc::ClientContext> context_;
  uint64_t cancel_callback_ = 0;

  absl::Mutex mu_;
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t timer_ ABSL_GUARDED_BY(mu_) = 0;
};

template <typename Response>
class AsyncRetryOperation final : public AsyncRetryOperationBase {
 public:
  using Attempt = AsyncAttempt<Response>;
  using Done = AsyncCallback<Response>;

  AsyncRetryOperation(const MethodInfo& method, Options call, Options client,
                      Attempt attempt, Done done)
      : AsyncRetryOperationBase(method, std::move(call), std::move(client)),
        attempt_(std::move(attempt)),
        done_(std::move(done)) {}

 private:
  void StartAttempt(grpc::ClientContext& context,
                    const OptionsView& options) override {
    std::shared_ptr<AsyncRetryOperation> self =
        std::static_pointer_cast<AsyncRetryOperation>(shared_from_this());
    attempt_(context, options, [self](absl::StatusOr<Response> result) mutable {
      if (result.ok()) {
        MaybeLogPayload(self->state(), "response", *result);
        self->response_ = *std::move(result);
        self->OnAttemptDone(absl::OkStatus());
      } else {
        self->OnAttemptDone(result.status());
      }
    });
  }

  void Deliver(absl::Status status) override {
    DeliverOnce(done_, std::move(status), response_);
  }

  Attempt attempt_;
  Done done_;
  Response response_;
};

// The error for a grpc_cpp_plugin stub whose `async()` is null (gRPC's
// generated `MockFooStub`, or a hand-written `StubInterface`): no callback
// API, so async calls (hedged or not) cannot be made; sync calls can.
// FAILED_PRECONDITION, marked so that no loop retries or hedges it.
absl::Status NoAsyncStubError(absl::string_view method_full_name);
bool IsNoAsyncStubError(const absl::Status& status);

// Starts one callback-API unary call: `start(response, on_done)` must call
// the grpc_cpp_plugin `async()` method with them. Keeps the response alive
// until gRPC is done and converts the status.
template <typename Response, typename Start>
void StartAsyncUnary(Start&& start, AsyncCallback<Response> done) {
  auto response = std::make_shared<Response>();
  Response* raw = response.get();
  start(raw, [response = std::move(response),
              done = std::move(done)](grpc::Status status) {
    if (!status.ok()) {
      done(FromGrpcStatus(status));
    } else {
      done(std::move(*response));
    }
  });
}

}  // namespace internal

// Runs one call asynchronously; `done` receives its result exactly once, on
// a gRPC or timer thread (or inline when the options are invalid).
template <typename Response>
void AsyncRetryLoop(
    const MethodInfo& method, Options call, Options client,
    typename internal::AsyncRetryOperation<Response>::Attempt attempt,
    typename internal::AsyncRetryOperation<Response>::Done done) {
  auto operation = std::make_shared<internal::AsyncRetryOperation<Response>>(
      method, std::move(call), std::move(client), std::move(attempt),
      std::move(done));
  operation->Start();
}

// As above, returning a future of the result.
template <typename Response>
std::future<absl::StatusOr<Response>> AsyncRetryLoop(
    const MethodInfo& method, Options call, Options client,
    typename internal::AsyncRetryOperation<Response>::Attempt attempt) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<Response>>>();
  std::future<absl::StatusOr<Response>> future = promise->get_future();
  AsyncRetryLoop<Response>(method, std::move(call), std::move(client),
                           std::move(attempt),
                           [promise](absl::StatusOr<Response> result) {
                             promise->set_value(std::move(result));
                           });
  return future;
}

}  // namespace stubkit

#endif  // STUBKIT_ASYNC_RETRY_LOOP_H_
