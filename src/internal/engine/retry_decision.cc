// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/retry_decision.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"

namespace stubkit {
namespace internal {

using std::chrono::nanoseconds;
using time_point = Clock::time_point;

// gRPC's timer may be read a hair before our clock reaches the same instant,
// and the server enforces the deadline we send (grpc-timeout) from its own
// cached clock, so on a loaded machine its verdict can come several
// milliseconds early (seen in CI under ASan). So one that arrives within a
// tenth of the attempt's budget of its deadline (at least 2 ms, at most
// 50 ms) counts as that deadline's: a server's own DEADLINE_EXCEEDED that
// close to ours is treated as ours, and the call stops or retries as it
// would a moment later anyway.
bool ReachedDeadline(time_point now, time_point start, time_point deadline) {
  if (deadline == time_point::max()) return false;
  const nanoseconds tolerance = std::clamp<nanoseconds>(
      (deadline - start) / 10, std::chrono::milliseconds(2),
      std::chrono::milliseconds(50));
  // Not `now + tolerance`: `now` may be near max() after waits of
  // nanoseconds::max() (a fake clock saturates there).
  return deadline - now <= tolerance;
}

Expiry ClassifyExpiry(const absl::Status& status, Clock::time_point now,
                      Clock::time_point its_start,
                      Clock::time_point its_deadline, Clock::time_point end) {
  if (status.code() != absl::StatusCode::kDeadlineExceeded) {
    return Expiry::kNone;
  }
  if (!ReachedDeadline(now, its_start, its_deadline)) return Expiry::kNone;
  return its_deadline == end || now >= end ? Expiry::kCallEnd
                                           : Expiry::kAttemptTimeout;
}

time_point AttemptBound(const FailureFacts& facts) {
  return facts.stream ? facts.call_end : facts.end;
}

StopReason AttemptBoundReason(const FailureFacts& facts) {
  // A stream's bound is the total timeout or the deadline.
  return facts.stream ? StopReason::kDeadline : facts.end_reason;
}

absl::string_view EndWhat(StopReason end_reason) {
  return end_reason == StopReason::kDeadline ? "the call's deadline"
                                             : "the retry policy's time limit";
}

namespace {

RetryDecision Stop(StopReason reason, std::string explanation, int failures) {
  RetryDecision decision;
  decision.kind = RetryDecision::Kind::kStop;
  decision.stop_reason = reason;
  decision.explanation = std::move(explanation);
  decision.failures = failures;
  return decision;
}

std::string NotRetryable(const absl::Status& status,
                         const RetryPolicy& policy) {
  return absl::StrCat(
      "not retried: ", StatusCodeName(static_cast<int>(status.code())),
      " is not a retryable code (retryable: ",
      policy.retryable_codes().ToString(),
      policy.has_retryable_if() ? "; the RetryableIf predicate declined it"
                                : "",
      ")");
}

}  // namespace

namespace {

// Steps 0-2: what the attempt's own outcome says, before anything counts.
std::optional<RetryDecision> StopForTheOutcome(const absl::Status& status,
                                               const FailureFacts& facts,
                                               const RetryPolicy& policy,
                                               bool timed_out) {
  const int failures = facts.failures;
  // 0. The caller's cancel wins over anything the attempt says.
  if (facts.cancelled) return Stop(StopReason::kCancelled, "", failures);
  // 1. The call's own end ran out during the attempt.
  if (timed_out && facts.attempt_deadline == facts.end) {
    return Stop(
        facts.end_reason,
        absl::StrCat("gave up: ", EndWhat(facts.end_reason), " was reached"),
        failures);
  }
  // A stream's attempt ran out of the call's end (its deadline is bounded
  // by `call_end`, not by the policy's time limit).
  if (timed_out && facts.attempt_deadline >= facts.call_end) {
    return Stop(StopReason::kDeadline,
                "gave up: the call's deadline was reached", failures);
  }
  // 2. Permanent errors. An attempt that ran out of its own (shorter)
  // timeout counts as retryable: the next attempt may be faster.
  if (!timed_out && !policy.IsRetryable(status)) {
    return Stop(StopReason::kPermanentError, NotRetryable(status, policy),
                failures);
  }
  return std::nullopt;
}

// Steps 3-6: whether this call may be repeated at all, and again.
std::optional<RetryDecision> StopForTheCall(const FailureFacts& facts,
                                            const RetryPolicy& policy,
                                            int counted) {
  // 3. Never repeat an operation that may not be safe to repeat.
  if (!facts.idempotent) {
    return Stop(
        StopReason::kNonIdempotent,
        absl::StrCat("not retried: ", facts.method, " is not idempotent"),
        facts.failures);
  }
  // 4. Nor a stream's messages, once delivered.
  if (!facts.repeat_forbidden.empty()) {
    return Stop(
        StopReason::kNotResumable,
        absl::StrCat("not resumed: the stream ", facts.repeat_forbidden),
        facts.failures);
  }
  // 5. The retry policy's error count.
  if (policy.max_failures() != RetryPolicy::kUnlimitedFailures &&
      counted > policy.max_failures()) {
    return Stop(
        StopReason::kExhausted,
        absl::StrCat("gave up: retry policy exhausted (at most ",
                     policy.max_failures(),
                     policy.max_failures() == 1 ? " retry)" : " retries)"),
        counted);
  }
  // A retry upstream: retry at one layer (stubkit/server_propagation.h).
  if (facts.nested_max_failures >= 0 && counted > facts.nested_max_failures) {
    return Stop(
        StopReason::kExhausted,
        absl::StrCat(facts.nested_max_failures == 0
                         ? "not retried: "
                         : "gave up: at most 1 retry as ",
                     "the request it serves is itself a retry (attempt ",
                     facts.incoming_attempt,
                     " upstream) and the layer above retries it "
                     "(NestedRetryOption)"),
        counted);
  }
  // 6. The call's end.
  if (facts.now >= facts.end) {
    return Stop(
        facts.end_reason,
        absl::StrCat("gave up: ", EndWhat(facts.end_reason), " was reached"),
        counted);
  }
  return std::nullopt;
}

// Step 9: never start a wait that would end after the call's end, nor one
// after which the next attempt would have less than its minimum time.
std::optional<RetryDecision> StopForTheWait(const FailureFacts& facts,
                                            const WaitChoice& chosen,
                                            int counted) {
  if (facts.end != time_point::max()) {
    const nanoseconds left = facts.end - facts.now;
    if (chosen.delay >= left) {
      return Stop(
          facts.end_reason,
          absl::StrCat("gave up: the next wait (", FormatDuration(chosen.delay),
                       ", ", ToString(chosen.reason), ") would pass ",
                       EndWhat(facts.end_reason)),
          counted);
    }
  }
  const time_point bound = AttemptBound(facts);
  if (facts.min_attempt_time > nanoseconds::zero() &&
      bound != time_point::max() &&
      bound - facts.now - chosen.delay < facts.min_attempt_time) {
    const StopReason reason = AttemptBoundReason(facts);
    return Stop(reason,
                absl::StrCat("gave up: after the next wait (",
                             FormatDuration(chosen.delay), ", ",
                             ToString(chosen.reason), ") less than ",
                             FormatDuration(facts.min_attempt_time),
                             " (MinAttemptTimeOption) would be left before ",
                             EndWhat(reason)),
                counted);
  }
  return std::nullopt;
}

RetryDecision Retrying(RetryDecision::Kind kind, nanoseconds wait,
                       WaitReason reason, bool timed_out, int counted) {
  RetryDecision decision;
  decision.kind = kind;
  decision.wait = wait;
  decision.wait_reason = reason;
  decision.attempt_timed_out = timed_out;
  decision.failures = counted;
  return decision;
}

}  // namespace

RetryDecision StopDecision(StopReason reason, std::string explanation,
                           int failures) {
  return Stop(reason, std::move(explanation), failures);
}

bool AttemptTimedOut(const absl::Status& status, const FailureFacts& facts) {
  return status.code() == absl::StatusCode::kDeadlineExceeded &&
         ReachedDeadline(facts.now, facts.attempt_start,
                         facts.attempt_deadline);
}

// The steps, numbered as in the list in retry_decision.h's header comment;
// each helper above holds the ones it names.
std::optional<RetryDecision> DecideOutcome(const absl::Status& status,
                                           const FailureFacts& facts,
                                           const RetryPolicy& policy) {
  return StopForTheOutcome(status, facts, policy,
                           AttemptTimedOut(status, facts));
}

std::optional<RetryDecision> DecideAdmission(const FailureFacts& facts,
                                             const RetryPolicy& policy,
                                             const AdmissionAnswer& answer,
                                             bool timed_out) {
  const int counted = facts.failures + 1;
  if (auto stop = StopForTheCall(facts, policy, counted)) return stop;
  // 7. Admission.
  if (!answer.admitted) {
    if (answer.may_wait) {
      return Retrying(RetryDecision::Kind::kWaitForAdmission,
                      nanoseconds::zero(), WaitReason::kThrottle, timed_out,
                      counted);
    }
    return Stop(StopReason::kThrottled, answer.refusal, counted);
  }
  return std::nullopt;
}

RetryDecision DecideWait(const FailureFacts& facts, const WaitChoice& chosen,
                         bool timed_out) {
  const int counted = facts.failures + 1;
  // 8. The wait, which the server may refuse.
  if (chosen.refused) {
    return Stop(StopReason::kServerRefused,
                absl::StrCat("gave up: ", chosen.refusal), counted);
  }
  if (auto stop = StopForTheWait(facts, chosen, counted)) {
    return *std::move(stop);
  }
  // 10-11. Retry, once admission takes its due (the driver commits it).
  RetryDecision retry = Retrying(RetryDecision::Kind::kRetry, chosen.delay,
                                 chosen.reason, timed_out, counted);
  retry.take_admission = true;
  return retry;
}

ThrottleWaitDecision DecideAfterThrottleWait(const ThrottleWaitFacts& facts) {
  using Kind = ThrottleWaitDecision::Kind;
  using Release = ThrottleWaitFacts::Release;
  ThrottleWaitDecision decision;
  if (facts.cancelled) {
    decision.kind = Kind::kCancelled;
    return decision;
  }
  if (facts.now >= facts.end) {
    decision.kind = Kind::kStop;
    decision.explanation =
        facts.budget_refused_before
            ? absl::StrCat(
                  "gave up: the retry budget had no retry left "
                  "when the throttle let one go, before ",
                  EndWhat(facts.end_reason), " was reached")
            : absl::StrCat("gave up: the backend did not recover before ",
                           EndWhat(facts.end_reason), " was reached");
    return decision;
  }
  if (facts.release == Release::kNotAsked) {
    decision.kind = Kind::kAskRelease;
    return decision;
  }
  if (facts.release == Release::kBudgetRefused &&
      facts.now - facts.budget_refused_since >= facts.budget_window) {
    decision.kind = Kind::kStop;
    decision.explanation =
        absl::StrCat("gave up: the retry budget had no retry for ",
                     FormatDuration(facts.now - facts.budget_refused_since),
                     " (a whole window) after the throttle let the call go");
    return decision;
  }
  decision.kind = Kind::kWait;
  decision.wait = facts.end - facts.now;
  return decision;
}

}  // namespace internal
}  // namespace stubkit
