// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_loop.h"

#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "src/internal/format.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::nanoseconds;
using time_point = Clock::time_point;

// gRPC reports DEADLINE_EXCEEDED when its own timer fires, which may be read
// a hair before our clock reaches the same instant.
constexpr std::chrono::milliseconds kDeadlineTolerance{2};

time_point AddSaturating(time_point base, nanoseconds delta) {
  if (delta >= time_point::max() - base) return time_point::max();
  return base + std::chrono::duration_cast<time_point::duration>(delta);
}

bool ResolveIdempotent(const MethodInfo& method, const OptionsView& options) {
  if (const Idempotency* forced = options.find<IdempotencyOption>()) {
    return *forced == Idempotency::kIdempotent;
  }
  if (const auto* by_name = options.find<IdempotencyMapOption>()) {
    auto it = by_name->find(method.full_name);
    if (it != by_name->end()) return it->second == Idempotency::kIdempotent;
  }
  return method.default_idempotency == Idempotency::kIdempotent;
}

absl::Status ValidateOptions(const OptionsView& options,
                             const RetryPolicy& retry_policy,
                             const ExponentialBackoffPolicy& backoff_policy) {
  if (!retry_policy.status().ok()) return retry_policy.status();
  if (!backoff_policy.status().ok()) return backoff_policy.status();
  nanoseconds attempt_timeout = options.get<AttemptTimeoutOption>();
  if (attempt_timeout < nanoseconds::zero()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AttemptTimeoutOption must not be negative, got ",
        FormatDuration(attempt_timeout)));
  }
  nanoseconds total_timeout = options.get<TotalTimeoutOption>();
  if (total_timeout < nanoseconds::zero()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TotalTimeoutOption must not be negative, got ",
        FormatDuration(total_timeout)));
  }
  return absl::OkStatus();
}

}  // namespace

RetryLoopState::RetryLoopState(const MethodInfo& method,
                               const OptionsView& options)
    : method_(method),
      retry_policy_(options.get<RetryPolicyOption>()),
      backoff_policy_(options.get<BackoffPolicyOption>()),
      options_(options),
      clock_(options.get<ClockOption>().get()),
      sleeper_(options.get<SleeperOption>().get()) {
  start_ = Now();
  setup_status_ = ValidateOptions(options, retry_policy_, backoff_policy_);
  if (!setup_status_.ok()) {
    RetrySummary summary{StopReason::kInvalidArgument, 0, nanoseconds(0)};
    setup_status_ = WithRetrySummary(setup_status_, summary,
                                     "invalid options, nothing was sent");
    return;
  }
  idempotent_ = ResolveIdempotent(method, options);

  if (retry_policy_.max_time() > nanoseconds::zero()) {
    end_ = AddSaturating(start_, retry_policy_.max_time());
    end_reason_ = StopReason::kExhausted;
  }
  nanoseconds total_timeout = options.get<TotalTimeoutOption>();
  if (total_timeout > nanoseconds::zero()) {
    time_point total_end = AddSaturating(start_, total_timeout);
    if (total_end < end_) {
      end_ = total_end;
      end_reason_ = StopReason::kDeadline;
    }
  }
  const auto& deadline = options.get<DeadlineOption>();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    // Map the wall-clock deadline onto the steady clock once, at the start.
    nanoseconds remaining = deadline - std::chrono::system_clock::now();
    time_point deadline_end =
        remaining <= nanoseconds::zero() ? start_
                                         : AddSaturating(start_, remaining);
    if (deadline_end < end_) {
      end_ = deadline_end;
      end_reason_ = StopReason::kDeadline;
    }
  }
}

time_point RetryLoopState::Now() const {
  return clock_ != nullptr ? clock_->Now() : std::chrono::steady_clock::now();
}

void RetryLoopState::PrepareAttempt(grpc::ClientContext& context) {
  ++attempts_;
  time_point now = Now();
  attempt_deadline_ = end_;
  nanoseconds attempt_timeout = options_.get<AttemptTimeoutOption>();
  if (attempt_timeout > nanoseconds::zero()) {
    attempt_deadline_ = std::min(end_, AddSaturating(now, attempt_timeout));
  }
  if (attempt_deadline_ != time_point::max()) {
    // gRPC wants a wall-clock deadline; carry over the remaining time.
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::duration_cast<
                             std::chrono::system_clock::duration>(
                             std::max(attempt_deadline_ - now,
                                      time_point::duration::zero())));
  }
  if (const auto* metadata = options_.find<MetadataOption>()) {
    for (const auto& [key, value] : *metadata) context.AddMetadata(key, value);
  }
  if (attempts_ > 1 && options_.get<RetryAttemptHeaderOption>()) {
    context.AddMetadata(kRetryAttemptHeader, std::to_string(attempts_));
  }
}

absl::Status RetryLoopState::Stop(const absl::Status& status,
                                  StopReason reason,
                                  absl::string_view explanation,
                                  time_point now) const {
  RetrySummary summary{reason, attempts_, now - start_};
  return WithRetrySummary(status, summary, explanation);
}

bool RetryLoopState::OnFailure(const absl::Status& status,
                               const grpc::ClientContext& /*context*/,
                               absl::Status* final_status, nanoseconds* wait) {
  const time_point now = Now();
  const bool past_attempt_deadline =
      attempt_deadline_ != time_point::max() &&
      now + kDeadlineTolerance >= attempt_deadline_;
  const bool deadline_exceeded =
      status.code() == absl::StatusCode::kDeadlineExceeded &&
      past_attempt_deadline;
  const absl::string_view end_what = end_reason_ == StopReason::kDeadline
                                         ? "the call's deadline"
                                         : "the retry policy's time limit";

  // The call's own end ran out during the attempt.
  if (deadline_exceeded && attempt_deadline_ == end_) {
    *final_status = Stop(status, end_reason_,
                         absl::StrCat("gave up: ", end_what, " was reached"),
                         now);
    return false;
  }
  // 1. Permanent errors. An attempt that ran out of its own (shorter)
  // timeout counts as retryable: the next attempt may be faster.
  const bool attempt_timed_out = deadline_exceeded;
  if (!attempt_timed_out && !retry_policy_.retryable_codes().contains(
                                status.code())) {
    *final_status = Stop(
        status, StopReason::kPermanentError,
        absl::StrCat("not retried: ",
                     StatusCodeName(static_cast<int>(status.code())),
                     " is not a retryable code (retryable: ",
                     retry_policy_.retryable_codes().ToString(), ")"),
        now);
    return false;
  }
  // 2. Never repeat an operation that may not be safe to repeat.
  if (!idempotent_) {
    *final_status = Stop(status, StopReason::kNonIdempotent,
                         absl::StrCat("not retried: ", method_.full_name,
                                      " is not idempotent"),
                         now);
    return false;
  }
  // 3. The retry policy.
  ++failures_;
  if (retry_policy_.max_retries() != RetryPolicy::kUnlimitedRetries &&
      failures_ > retry_policy_.max_retries()) {
    *final_status = Stop(
        status, StopReason::kExhausted,
        absl::StrCat("gave up: retry policy exhausted (at most ",
                     retry_policy_.max_retries(), " retries)"),
        now);
    return false;
  }
  if (now >= end_) {
    *final_status = Stop(status, end_reason_,
                         absl::StrCat("gave up: ", end_what, " was reached"),
                         now);
    return false;
  }
  // 4. Never start a wait that would end after the call's end.
  nanoseconds delay = backoff_policy_.DelayFor(failures_ - 1);
  if (end_ != time_point::max() && delay >= end_ - now) {
    *final_status = Stop(
        status, end_reason_,
        absl::StrCat("gave up: the next wait (", FormatDuration(delay),
                     ") would pass ", end_what),
        now);
    return false;
  }
  *wait = delay;
  return true;
}

void RetryLoopState::Sleep(nanoseconds wait) {
  if (sleeper_ != nullptr) {
    sleeper_->SleepFor(wait);
  } else {
    std::this_thread::sleep_for(wait);
  }
}

}  // namespace internal
}  // namespace stubkit
