// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/async_retry_operation.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/api/timer_queue.h"

namespace stubkit {
namespace internal {

AsyncRetryOperationBase::AsyncRetryOperationBase(const MethodInfo& method,
                                                 Options call, Options client)
    : AsyncCallBase(method, std::move(call), std::move(client)) {}

AsyncRetryOperationBase::~AsyncRetryOperationBase() = default;

void AsyncRetryOperationBase::Start() {
  if (!state().setup_status().ok()) {
    Finish(state().setup_status());
    return;
  }
  cancel_callback_ = WatchCancellation();
  RunAttempt();
}

void AsyncRetryOperationBase::RunAttempt() {
  context_.emplace();
  if (!state().PrepareAttempt(*context_)) {
    Finish(CancelledStatus());
    return;
  }
  ConfigureAttempt(*context_);
  // Last, so that the hook sees (and may override) a stream's deadline.
  state().RunContextSetup(*context_);
  StartAttempt(*context_, options());
}

void AsyncRetryOperationBase::OnAttemptDone(const absl::Status& status) {
  state().FinishAttempt(*context_);
  if (status.ok()) {
    state().OnSuccess();
    Finish(absl::OkStatus());
    return;
  }
  if (IsNoAsyncStubError(status)) {
    // Nothing reached the network, and no attempt ever will.
    Finish(state().GiveUp(status, StopReason::kPermanentError,
                          "not retried: the stub cannot make async calls"));
    return;
  }
  absl::Status final_status;
  std::chrono::nanoseconds wait;
  if (!DecideFailure(status, *context_, &final_status, &wait)) {
    Finish(std::move(final_status));
    return;
  }
  // Hold nothing of the finished attempt (its call and arena) while waiting.
  context_.reset();
  ScheduleWait(wait);
}

bool AsyncRetryOperationBase::DecideFailure(const absl::Status& status,
                                            const grpc::ClientContext& context,
                                            absl::Status* final_status,
                                            std::chrono::nanoseconds* wait) {
  return state().OnFailure(status, context, final_status, wait);
}

void AsyncRetryOperationBase::ScheduleWait(std::chrono::nanoseconds wait) {
  uint64_t generation;
  {
    MutexLock lock(&mu_);
    if (finished_) return;
    waiting_ = true;
    timer_ = 0;
    generation = ++wait_generation_;
  }
  auto self =
      std::static_pointer_cast<AsyncRetryOperationBase>(shared_from_this());
  uint64_t timer =
      sleeper().Schedule(wait, [self](bool fired) { self->OnWaitDone(fired); });
  {
    MutexLock lock(&mu_);
    // The wait may have ended inside `Schedule`, and the next attempt may
    // have failed and begun a newer wait already: `timer` is then stale and
    // must not replace the live wait's id, or a cancel would miss it.
    if (!waiting_ || wait_generation_ != generation) return;
    timer_ = timer;
  }
  // A cancel that came before `timer_` was known could not stop the timer.
  CancellationToken* token = state().cancellation();
  if (token != nullptr && token->cancelled()) sleeper().Cancel(timer);
  if (state().channel_follow().active()) WatchChannel(generation);
}

void AsyncRetryOperationBase::WatchChannel(uint64_t generation) {
  // Weak: a watch outlives the wait; it must not keep the call alive.
  std::weak_ptr<AsyncCallBase> weak = weak_from_this();
  const uint64_t watch = channel_->Join(
      [weak, generation] {
        // On the watcher thread, which must not run the next attempt (the
        // context setup hook and decorators are user code): the timer thread
        // hands it to its callback pool.
        DefaultAsyncSleeper().Schedule(
            std::chrono::nanoseconds::zero(), [weak, generation](bool fired) {
              if (!fired) return;
              if (auto self = weak.lock()) {
                static_cast<AsyncRetryOperationBase*>(self.get())
                    ->OnChannelReady(generation);
              }
            });
      },
      state().channel_follow().down_at_attempt_start());
  {
    MutexLock lock(&mu_);
    if (waiting_ && wait_generation_ == generation && !finished_) {
      watch_ = watch;
      return;
    }
  }
  channel_->Leave(watch);  // the wait ended meanwhile
}

void AsyncRetryOperationBase::OnChannelReady(uint64_t generation) {
  uint64_t timer;
  {
    MutexLock lock(&mu_);
    if (finished_ || !waiting_ || wait_generation_ != generation) return;
    woken_by_channel_ = true;
    timer = timer_;
  }
  // Ends the wait through the sleeper, so that the timer and the wake meet
  // in one place (OnWaitDone), whichever comes first.
  if (timer != 0) sleeper().Cancel(timer);
}

void AsyncRetryOperationBase::OnWaitDone(bool fired) {
  bool woken;
  uint64_t watch;
  bool finished;
  {
    MutexLock lock(&mu_);
    waiting_ = false;
    timer_ = 0;
    woken = std::exchange(woken_by_channel_, false);
    watch = std::exchange(watch_, 0);
    finished = finished_;
  }
  if (watch != 0) channel_->Leave(watch);
  if (finished) return;
  CancellationToken* token = state().cancellation();
  if ((!fired && !woken) || (token != nullptr && token->cancelled())) {
    Finish(CancelledStatus());
    return;
  }
  if (!fired) state().OnChannelReady();  // woken before the backoff's end
  if (state().waiting_for_throttle()) {
    // A poll of the throttle's waiting mode, on the sleeper's thread.
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    switch (state().AfterThrottleWait(&final_status, &wait)) {
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
    MutexLock lock(&mu_);
    if (finished_ || !waiting_)
      return;  // an attempt in flight is cancelled
               // by the token through its context
    timer = timer_;
  }
  if (timer != 0) sleeper().Cancel(timer);
}

void AsyncRetryOperationBase::Finish(absl::Status status) {
  {
    MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
  }
  UnwatchCancellation(cancel_callback_);
  Deliver(std::move(status));
}

absl::Status DroppedCallbackError() {
  return absl::InternalError(
      "stubkit: the async call's callback was destroyed without being called "
      "(a connection or mock that never completes the call, such as a "
      "mocked AsyncM with no action), so the call has no result");
}

void ReportSecondCall() {
  static constexpr absl::string_view kLine =
      "stubkit: an async call's callback was called a second time; the "
      "second result is ignored (a connection or mock that completes a call "
      "twice)\n";
  // One write(2), no lock, no allocation: any thread, any time.
  [[maybe_unused]] ssize_t written =
      write(STDERR_FILENO, kLine.data(), kLine.size());
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
