// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/async_retry_loop.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace stubkit {
namespace internal {

namespace {

// Holds one reference on gRPC's shared callback completion queue for the
// life of the process.
//
// The evidence (gRPC 1.51.1, Debian 12): without this, releasing an async
// operation inline at the end of its gRPC callback made ASan report a double
// free in grpc_cq_internal_unref on a thread started by libgrpc++
// (tests/integration/generated_async_test.cc, DestroyingTheClientMidFlight*,
// in 1 of about 30 repetitions). The operation holds the last references
// to the channel when the client was destroyed mid-flight (its context and
// its stub). In 1.51, with the default epoll poller
// (grpc_iomgr_run_in_background() is false), every grpc::Channel takes its
// callback queue from CompletionQueue::CallbackAlternativeCQ(): one queue
// for the process, reference-counted by channel, served by 2-16 "nexting"
// threads. ~Channel calls ReleaseCallbackAlternativeCQ(); when the count
// reaches 0 it shuts the queue down, joins the nexting threads and deletes
// the queue (src/cpp/common/completion_queue_cc.cc). Done from a callback,
// that is on a nexting thread: it cannot join itself, and it goes on
// polling the deleted queue when the callback returns.
//
// So the hazard is only the last channel of the process being destroyed
// on a nexting thread. A channel of our own that never goes away keeps
// the count above 0: it takes its reference in CallbackCQ(), called when a
// callback call is created on it. The call below is created and never
// started (nothing is sent; the target is never resolved), and everything
// is kept for the life of the process. This replaced a hop of every
// operation's last release to the timer thread (a process-wide lock and
// thread on every call's success path); same test, 60 repetitions, clean.
void KeepCallbackQueueReferenced() {
  struct Keeper {
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateChannel("unix:/dev/null/stubkit-callback-queue-keeper",
                            grpc::InsecureChannelCredentials());
    grpc::GenericStub stub{channel};
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
    grpc::ClientUnaryReactor reactor;
  };
  static Keeper* const keeper = new Keeper;  // never destroyed
  keeper->stub.PrepareUnaryCall(&keeper->context,
                                "/stubkit.internal.CallbackQueueKeeper/Never",
                                grpc::StubOptions(), &keeper->request,
                                &keeper->response, &keeper->reactor);
}

}  // namespace

void KeepGrpcInitialised() {
  static const bool kInitialised = [] {
    grpc_init();
    KeepCallbackQueueReferenced();
    return true;
  }();
  (void)kInitialised;
}

AsyncRetryOperationBase::AsyncRetryOperationBase(const MethodInfo& method,
                                                 Options call, Options client)
    : call_((KeepGrpcInitialised(), std::move(call))),
      client_(std::move(client)),
      view_(call_, client_),
      state_(method, view_),
      sleeper_owner_(view_.get<AsyncSleeperOption>()) {
  sleeper_ =
      sleeper_owner_ != nullptr ? sleeper_owner_.get() : &DefaultAsyncSleeper();
}

AsyncRetryOperationBase::~AsyncRetryOperationBase() = default;

void AsyncRetryOperationBase::Start() {
  if (!state_.setup_status().ok()) {
    Finish(state_.setup_status());
    return;
  }
  if (CancellationToken* token = state_.cancellation()) {
    // The callback keeps the operation alive until the token lets it go.
    std::weak_ptr<AsyncRetryOperationBase> weak = weak_from_this();
    cancel_callback_ = token->AddCallback([weak] {
      if (auto self = weak.lock()) self->OnCancel();
    });
  }
  RunAttempt();
}

void AsyncRetryOperationBase::RunAttempt() {
  context_.emplace();
  if (!state_.PrepareAttempt(*context_)) {
    Finish(state_.Cancelled());
    return;
  }
  ConfigureAttempt(*context_);
  // Last, so that the hook sees (and may override) a stream's deadline.
  state_.RunContextSetup(*context_);
  StartAttempt(*context_, view_);
}

void AsyncRetryOperationBase::OnAttemptDone(const absl::Status& status) {
  state_.FinishAttempt(*context_);
  if (status.ok()) {
    state_.OnSuccess();
    Finish(absl::OkStatus());
    return;
  }
  if (!MayRetry(status)) {
    Finish(status);
    return;
  }
  if (IsNoAsyncStubError(status)) {
    // Nothing reached the network, and no attempt ever will.
    Finish(state_.GiveUp(status, StopReason::kPermanentError,
                         "not retried: the stub cannot make async calls"));
    return;
  }
  absl::Status final_status;
  std::chrono::nanoseconds wait;
  if (!state_.OnFailure(status, *context_, &final_status, &wait)) {
    Finish(std::move(final_status));
    return;
  }
  // Hold nothing of the finished attempt (its call and arena) while waiting.
  context_.reset();
  ScheduleWait(wait);
}

void AsyncRetryOperationBase::ScheduleWait(std::chrono::nanoseconds wait) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    waiting_ = true;
  }
  std::shared_ptr<AsyncRetryOperationBase> self = shared_from_this();
  uint64_t timer =
      sleeper_->Schedule(wait, [self](bool fired) { self->OnWaitDone(fired); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!waiting_) return;  // the wait ended inline already
    timer_ = timer;
  }
  // A cancel that came before `timer_` was known could not stop the timer.
  CancellationToken* token = state_.cancellation();
  if (token != nullptr && token->cancelled()) sleeper_->Cancel(timer);
}

void AsyncRetryOperationBase::OnWaitDone(bool fired) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = false;
    timer_ = 0;
    if (finished_) return;
  }
  CancellationToken* token = state_.cancellation();
  if (!fired || (token != nullptr && token->cancelled())) {
    Finish(state_.Cancelled());
    return;
  }
  if (state_.waiting_for_throttle()) {
    // A poll of the throttle's waiting mode, on the sleeper's thread.
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    switch (state_.AfterThrottleWait(&final_status, &wait)) {
      case RetryLoopState::ThrottleStep::kAttempt:
        break;
      case RetryLoopState::ThrottleStep::kWait:
        ScheduleWait(wait);
        return;
      case RetryLoopState::ThrottleStep::kStop:
        Finish(std::move(final_status));
        return;
    }
  }
  RunAttempt();
}

void AsyncRetryOperationBase::OnCancel() {
  uint64_t timer = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_ || !waiting_)
      return;  // an attempt in flight is cancelled
               // by the token through its context
    timer = timer_;
  }
  if (timer != 0) sleeper_->Cancel(timer);
}

void AsyncRetryOperationBase::Finish(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  if (CancellationToken* token = state_.cancellation()) {
    if (cancel_callback_ != 0) token->RemoveCallback(cancel_callback_);
  }
  Deliver(std::move(status));
}

namespace {
constexpr absl::string_view kNoAsyncStubPayloadKey = "stubkit/NoAsyncStub";
}  // namespace

absl::Status NoAsyncStubError(absl::string_view method_full_name) {
  absl::Status status = absl::FailedPreconditionError(absl::StrCat(
      method_full_name,
      ": the gRPC stub has no callback API (its async() is null), so async "
      "calls, hedged or not, are unavailable; sync calls, hedged included, "
      "work"));
  status.SetPayload(kNoAsyncStubPayloadKey, absl::Cord());
  return status;
}

bool IsNoAsyncStubError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.GetPayload(kNoAsyncStubPayloadKey).has_value();
}

}  // namespace internal
}  // namespace stubkit
