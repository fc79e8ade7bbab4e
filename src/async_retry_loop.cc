// Copyright 2026 The stubkit Authors.

#include "stubkit/async_retry_loop.h"

#include <grpc/grpc.h>

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace stubkit {
namespace internal {

void KeepGrpcInitialised() {
  static const bool kInitialised = [] {
    grpc_init();
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

void ReleaseOffCallbackThread(std::shared_ptr<void> self) {
  // Always hand it over: whether this is the last reference is not knowable
  // without racing the other holders.
  DefaultAsyncSleeper().Schedule(std::chrono::nanoseconds(0),
                                 [keep = std::move(self)](bool) {});
}

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
  context_ = std::make_unique<grpc::ClientContext>();
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
  ReleaseOffCallbackThread(
      std::shared_ptr<grpc::ClientContext>(std::move(context_)));
  ScheduleWait(wait);
}

void AsyncRetryOperationBase::ScheduleWait(std::chrono::nanoseconds wait) {
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    waiting_ = true;
  }
  std::shared_ptr<AsyncRetryOperationBase> self = shared_from_this();
  uint64_t timer =
      sleeper_->Schedule(wait, [self](bool fired) { self->OnWaitDone(fired); });
  {
    absl::MutexLock lock(&mu_);
    if (!waiting_) return;  // the wait ended inline already
    timer_ = timer;
  }
  // A cancel that came before `timer_` was known could not stop the timer.
  CancellationToken* token = state_.cancellation();
  if (token != nullptr && token->cancelled()) sleeper_->Cancel(timer);
}

void AsyncRetryOperationBase::OnWaitDone(bool fired) {
  {
    absl::MutexLock lock(&mu_);
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
    absl::MutexLock lock(&mu_);
    if (finished_ || !waiting_)
      return;  // an attempt in flight is cancelled
               // by the token through its context
    timer = timer_;
  }
  if (timer != 0) sleeper_->Cancel(timer);
}

void AsyncRetryOperationBase::Finish(absl::Status status) {
  {
    absl::MutexLock lock(&mu_);
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
