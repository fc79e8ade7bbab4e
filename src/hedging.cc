// Copyright 2026 The stubkit Authors.

#include "stubkit/hedging.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/internal/format.h"
#include "stubkit/unary_call.h"

namespace stubkit {

HedgingPolicy::HedgingPolicy(int max_attempts,
                             std::chrono::nanoseconds hedging_delay,
                             StatusCodeSet non_fatal_codes)
    : max_attempts_(max_attempts),
      hedging_delay_(hedging_delay),
      non_fatal_codes_(non_fatal_codes) {
  if (max_attempts < 1 || max_attempts > kMaxAttemptsLimit) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("HedgingPolicy: max_attempts must be in [1, ",
                     kMaxAttemptsLimit, "], got ", max_attempts));
  } else if (hedging_delay < std::chrono::nanoseconds::zero()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("HedgingPolicy: hedging_delay must not be negative, got ",
                     internal::FormatDuration(hedging_delay)));
  } else if (non_fatal_codes.empty() || non_fatal_codes.has_invalid_code()) {
    status_ = absl::InvalidArgumentError(
        "HedgingPolicy: non_fatal_codes must be non-empty gRPC codes other "
        "than OK");
  }
}

namespace internal {

bool ShouldHedge(const MethodInfo& method, const OptionsView& options) {
  const HedgingPolicy* policy = options.find<HedgingPolicyOption>();
  if (policy == nullptr) return false;
  if (!policy->status().ok()) return true;
  return policy->enabled() && IsIdempotent(method, options);
}

HedgedOperationBase::HedgedOperationBase(const MethodInfo& method, Options call,
                                         Options client)
    : call_((KeepGrpcInitialised(), std::move(call))),
      client_(std::move(client)),
      view_(call_, client_),
      state_(method, view_),
      policy_(view_.get<HedgingPolicyOption>()),
      sleeper_owner_(view_.get<AsyncSleeperOption>()) {
  sleeper_ =
      sleeper_owner_ != nullptr ? sleeper_owner_.get() : &DefaultAsyncSleeper();
}

HedgedOperationBase::~HedgedOperationBase() = default;

void HedgedOperationBase::Start() {
  absl::Status invalid;
  {
    absl::MutexLock lock(&mu_);
    if (!state_.setup_status().ok()) {
      invalid = state_.setup_status();
    } else if (!policy_.status().ok()) {
      invalid = state_.GiveUp(policy_.status(), StopReason::kInvalidArgument,
                              "invalid options, nothing was sent");
    }
    if (!invalid.ok()) finished_ = true;
    contexts_.reserve(policy_.max_attempts());
  }
  if (!invalid.ok()) {
    Deliver(std::move(invalid));
    return;
  }
  if (CancellationToken* token = state_.cancellation()) {
    std::weak_ptr<HedgedOperationBase> weak = weak_from_this();
    cancel_callback_ = token->AddCallback([weak] {
      if (auto self = weak.lock()) self->OnHedgeTimer(false);
    });
  }
  Launch();
}

void HedgedOperationBase::Launch() {
  int index = 0;
  grpc::ClientContext* context = nullptr;
  absl::Status cancelled;
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    index = static_cast<int>(contexts_.size());
    if (index >= policy_.max_attempts()) return;
    // A drained retry bucket stops further hedges, as it stops retries.
    RetryThrottle* throttle = state_.throttle();
    if (index > 0 && throttle != nullptr && !throttle->RetryAllowed()) return;
    contexts_.push_back(std::make_unique<grpc::ClientContext>());
    done_.push_back(false);
    context = contexts_.back().get();
    if (!state_.PrepareAttempt(*context)) {
      done_.back() = true;
      if (outstanding_ > 0) return;  // they end CANCELLED and finish the call
      finished_ = true;
      cancelled = state_.Cancelled();
    } else {
      ++outstanding_;
    }
  }
  if (!cancelled.ok()) {
    Finish(std::move(cancelled));
    return;
  }
  StartAttempt(index, *context, view_);
  ScheduleHedge();
}

void HedgedOperationBase::ScheduleHedge() {
  std::chrono::nanoseconds delay;
  {
    absl::MutexLock lock(&mu_);
    if (finished_ || timer_pending_ ||
        static_cast<int>(contexts_.size()) >= policy_.max_attempts()) {
      return;
    }
    delay = policy_.hedging_delay();
    // No hedge is started past the call's end.
    if (state_.end() != Clock::time_point::max() &&
        delay >= state_.end() - state_.now()) {
      return;
    }
    timer_pending_ = true;
  }
  std::shared_ptr<HedgedOperationBase> self = shared_from_this();
  uint64_t id = sleeper_->Schedule(
      delay, [self](bool fired) { self->OnHedgeTimer(fired); });
  absl::MutexLock lock(&mu_);
  if (timer_pending_) timer_ = id;
}

void HedgedOperationBase::OnHedgeTimer(bool fired) {
  if (fired) {
    {
      absl::MutexLock lock(&mu_);
      timer_pending_ = false;
      timer_ = 0;
      if (finished_) return;
    }
    Launch();
    return;
  }
  // Our own Cancel() calling back, or the token asking to stop hedging.
  uint64_t to_cancel = 0;
  {
    absl::MutexLock lock(&mu_);
    to_cancel = timer_pending_ ? timer_ : 0;
    timer_pending_ = false;
    timer_ = 0;
  }
  if (to_cancel != 0) sleeper_->Cancel(to_cancel);
}

void HedgedOperationBase::CancelOthers(int winner) {
  for (int i = 0; i < static_cast<int>(contexts_.size()); ++i) {
    if (i != winner && !done_[i]) contexts_[i]->TryCancel();
  }
}

bool HedgedOperationBase::TryWin(int index) {
  uint64_t timer = 0;
  {
    absl::MutexLock lock(&mu_);
    done_[index] = true;
    --outstanding_;
    state_.FinishAttempt(*contexts_[index]);
    if (finished_) return false;
    finished_ = true;
    state_.OnSuccess();
    CancelOthers(index);
    timer = timer_pending_ ? timer_ : 0;
  }
  if (timer != 0) sleeper_->Cancel(timer);
  if (CancellationToken* token = state_.cancellation()) {
    if (cancel_callback_ != 0) token->RemoveCallback(cancel_callback_);
  }
  return true;
}

void HedgedOperationBase::OnAttemptFailed(int index,
                                          const absl::Status& status) {
  absl::Status final_status;
  bool launch_next = false;
  uint64_t timer = 0;
  {
    absl::MutexLock lock(&mu_);
    done_[index] = true;
    --outstanding_;
    state_.FinishAttempt(*contexts_[index]);
    if (finished_) return;
    CancellationToken* token = state_.cancellation();
    const int sent = static_cast<int>(contexts_.size());
    if (token != nullptr && token->cancelled()) {
      final_status = state_.Cancelled();
    } else if (!policy_.non_fatal_codes().contains(status.code())) {
      final_status = state_.GiveUp(
          status, StopReason::kPermanentError,
          absl::StrCat("hedged attempt ", index + 1, " failed with ",
                       StatusCodeName(static_cast<int>(status.code())),
                       ", which is fatal (non-fatal: ",
                       policy_.non_fatal_codes().ToString(), ")"));
    } else {
      RetryThrottle* throttle = state_.throttle();
      const bool allowed =
          throttle == nullptr || throttle->OnRetryableFailure();
      last_failure_ = status;
      if (allowed && sent < policy_.max_attempts()) {
        // A non-fatal failure sends the next hedge at once.
        launch_next = true;
        timer = timer_pending_ ? timer_ : 0;
      } else if (outstanding_ == 0) {
        final_status =
            allowed ? state_.GiveUp(status, StopReason::kExhausted,
                                    absl::StrCat("gave up: all ", sent,
                                                 " hedged attempts failed"))
                    : state_.GiveUp(status, StopReason::kThrottled,
                                    "gave up: retry throttled, no more hedges");
      }
    }
    if (!final_status.ok()) {
      finished_ = true;
      CancelOthers(-1);
      timer = timer_pending_ ? timer_ : 0;
    }
  }
  if (timer != 0) sleeper_->Cancel(timer);
  if (launch_next) {
    Launch();
    return;
  }
  if (!final_status.ok()) Finish(std::move(final_status));
}

void HedgedOperationBase::Finish(absl::Status status) {
  if (CancellationToken* token = state_.cancellation()) {
    if (cancel_callback_ != 0) token->RemoveCallback(cancel_callback_);
  }
  Deliver(std::move(status));
}

}  // namespace internal
}  // namespace stubkit
