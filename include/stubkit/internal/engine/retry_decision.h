// Copyright 2026 The stubkit Authors.
//
// The retry decision: what happens after one failed attempt. This is the
// one place that defines the order of the rules (docs/retry-semantics.md
// and ARCHITECTURE.md point here):
//
//   0. the caller cancelled                      -> stop, kCancelled
//   1. the attempt ran out of the call's end     -> stop, the end's reason
//   2. not a retryable code (an attempt's own
//      timeout is retryable)                     -> stop, kPermanentError
//      (a retryable failure is reported to the admission source here,
//      whatever follows: it says the backend struggles)
//   3. not idempotent                            -> stop, kNonIdempotent
//   4. a stream that may not repeat what it
//      delivered                                 -> stop, kNotResumable
//   5. the retry policy's error count is spent,
//      or, for a request that is itself a retry
//      upstream, NestedRetryOption's count       -> stop, kExhausted
//   6. the call's end has passed                 -> stop, the end's reason
//   7. admission refused                         -> wait for admission, or
//                                                   stop, kThrottled
//   8. the wait source refused (server hints)    -> stop, kServerRefused
//   9. the wait would pass the call's end, or
//      leave the next attempt less than its
//      minimum time (MinAttemptTimeOption)       -> stop, the end's reason
//  10. admission takes its due (a retry budget's
//      withdrawal: last, so that a call stopped
//      by any rule above spends nothing); another
//      call took the last of it since step 7     -> stop, kThrottled
//  11. otherwise                                 -> retry after the wait
//
// The steps are three pure functions; between them the driver commits what
// they say to the call's sources (RunRetryDecision in
// stubkit/internal/engine/retry_sources.h):
//
//   DecideOutcome    steps 0-2: stop, or a retryable failure, which the
//                    driver reports to the admission source
//   DecideAdmission  steps 3-7, given the source's answer: stop, wait for
//                    admission, or go on to the wait
//   DecideWait       steps 8-11, given the wait the wait source chose: stop,
//                    or retry once the driver took admission's due
//
// None of them reads a clock, does I/O, counts, draws a random number, or
// runs an observer, log or metric: the driver passes `now` in, asks the
// sources, and reports the decision itself (RetryLoopState). What varies by
// feature comes through two interfaces: an `AdmissionSource` (the retry
// throttle; a retry budget) and a `WaitSource` (backoff and server hints).
// A new source is a new class, not a new branch here. A deadline inherited
// from a server's call is the call's end (DeadlineOption, set by
// stubkit/server_propagation.h), which the facts carry with the least
// useful attempt time.
//
//   RetryDecision decision = RunRetryDecision(status, facts, policy,
//                                             &admission, waits);
//   if (decision.kind == RetryDecision::Kind::kRetry) Sleep(decision.wait);

#ifndef STUBKIT_INTERNAL_RETRY_DECISION_H_
#define STUBKIT_INTERNAL_RETRY_DECISION_H_

#include <chrono>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/clock.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_policy.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

// Whether a DEADLINE_EXCEEDED seen at `now` is the expiry of the deadline an
// attempt started at `start` was given, within the tolerance explained in
// retry_decision.cc. `deadline` is time_point::max() for none.
bool ReachedDeadline(Clock::time_point now, Clock::time_point start,
                     Clock::time_point deadline);

// Whether `status` is an attempt running out of its deadline
// (`its_deadline`, given at `its_start`; see ReachedDeadline), seen at
// `now`: its own attempt timeout, or the call's `end` (after which the call
// is over). For loops that run attempts side by side (hedging).
enum class Expiry { kNone, kAttemptTimeout, kCallEnd };
Expiry ClassifyExpiry(const absl::Status& status, Clock::time_point now,
                      Clock::time_point its_start,
                      Clock::time_point its_deadline, Clock::time_point end);

// "the call's deadline" or "the retry policy's time limit", for `end_reason`
// kDeadline or kExhausted: what ended a call that reached its end.
absl::string_view EndWhat(StopReason end_reason);

// The facts of one failed attempt and the state of its call's budget.
struct FailureFacts {
  using time_point = Clock::time_point;

  absl::string_view method;  // "package.Service.Method", for explanations
  time_point now;
  bool cancelled = false;
  bool idempotent = false;
  // Non-empty: a stream delivered messages and may not repeat them; the
  // reason, for the explanation ("broke after delivering messages ...").
  absl::string_view repeat_forbidden;
  // Retryable failures before this one, counted since the policy started.
  int failures = 0;
  time_point attempt_start;
  time_point attempt_deadline = time_point::max();
  // The call's end (the earliest of the policy's time limit, the total
  // timeout and the deadline) and what it is (kDeadline or kExhausted).
  time_point end = time_point::max();
  StopReason end_reason = StopReason::kExhausted;
  // The call's own end, without the policy's time limit: a stream attempt's
  // deadline is bounded by it, not by `end`.
  time_point call_end = time_point::max();
  // A stream: the policy's time limit bounds how long it is reopened, not
  // an attempt (RetryLoopState::UseStreamDeadlines).
  bool stream = false;
  // The least time an attempt needs before the end that bounds it
  // (MinAttemptTimeOption): `end`, or a stream's `call_end`.
  std::chrono::nanoseconds min_attempt_time{0};
  // The call serves an incoming request that is itself a retry (attempt
  // `incoming_attempt` upstream): at most `nested_max_failures` retries
  // (NestedRetryOption); -1: no such limit.
  int nested_max_failures = -1;
  int incoming_attempt = 0;
};

// The end that bounds an attempt's deadline (`end`, or a stream's
// `call_end`), which MinAttemptTimeOption counts from, and its reason.
Clock::time_point AttemptBound(const FailureFacts& facts);
StopReason AttemptBoundReason(const FailureFacts& facts);

// Admits retries: the retry throttle's token bucket, its waiting mode, a
// retry budget. Not thread-safe by itself; one decision at a time calls it.
class AdmissionSource {
 public:
  virtual ~AdmissionSource() = default;
  // A retryable failure happened (counted whether or not the call may
  // retry). Returns whether a retry may go now.
  virtual bool OnRetryableFailure() = 0;
  // Whether a retry or a hedge may go now, counting nothing: a hedged call
  // asks before each hedge (stubkit/internal/engine/hedge_decision.h).
  virtual bool Admits() const = 0;
  // After a refusal: whether the call may wait for admission instead of
  // stopping.
  virtual bool MayWait() const = 0;
  // After a refusal the call does not wait out: why, for the status.
  virtual std::string Refusal() const = 0;
  // A retry or a hedge goes now: takes what it spends (a budget's
  // withdrawal; nothing for the token bucket, which counts failures).
  // Returns false when another call took the last of it since
  // `OnRetryableFailure` or `Admits` said yes: the retry or hedge must not
  // go.
  virtual bool Take() = 0;
  // After a refusal: the source that refused (a composite names its part).
  virtual const AdmissionSource* Refuser() const { return this; }
  // At the end of a wait for admission (`MayWait`): lets the call attempt
  // now if this source and `also` (a composite's next part) both admit it,
  // all or nothing. By default what `Take` does; the throttle's waiting
  // mode releases waiting calls at its own pace.
  virtual bool TryRelease(Clock::time_point /*now*/,
                          absl::FunctionRef<bool()> also) {
    return also() && Take();
  }
  // For a source that refills within a window from new calls (a retry
  // budget): that window, which bounds how long a refusal of a waiting call
  // may last; zero for others.
  virtual std::chrono::nanoseconds RefillWindow() const {
    return std::chrono::nanoseconds::zero();
  }
};

// What a wait source chose.
struct WaitChoice {
  bool refused = false;  // the call must stop (kThrottled), see `refusal`
  std::chrono::nanoseconds delay{0};
  WaitReason reason = WaitReason::kBackoff;
  std::string refusal;  // when refused: why ("the server asked ...")
};

// Chooses the wait before the next attempt: backoff, server hints.
class WaitSource {
 public:
  virtual ~WaitSource() = default;
  // The wait after `status`, the call's `failures`-th retryable failure
  // (from 1).
  virtual WaitChoice NextWait(const absl::Status& status, int failures) = 0;
};

// What happens after a failed attempt.
struct RetryDecision {
  enum class Kind {
    kRetry,             // retry after `wait` (`wait_reason`)
    kWaitForAdmission,  // wait until the admission source admits a retry
    kStop,              // stop with `stop_reason`, `explanation`
  };
  Kind kind = Kind::kStop;
  StopReason stop_reason = StopReason::kSuccess;
  std::string explanation;  // kStop: for the status's retry summary
  std::chrono::nanoseconds wait{0};
  WaitReason wait_reason = WaitReason::kNone;
  // The failure ran out of the attempt's own timeout (retryable).
  bool attempt_timed_out = false;
  // Retryable failures counted after this one: the caller keeps it for the
  // next decision (`FailureFacts::failures`).
  int failures = 0;
  // kRetry: the driver takes the admission's due before the retry goes.
  bool take_admission = false;
};

// A stop, for a driver that stops on a source's refusal.
RetryDecision StopDecision(StopReason reason, std::string explanation,
                           int failures);

// Whether `status` is the failed attempt running out of its own deadline
// (`facts.attempt_deadline`, see ReachedDeadline).
bool AttemptTimedOut(const absl::Status& status, const FailureFacts& facts);

// Steps 0-2: the stop the attempt's outcome calls for, or none: the failure
// is retryable, and the driver reports it to the admission source
// (AdmissionSource::OnRetryableFailure) whatever follows.
// `policy.IsRetryable` may run user code (a `RetryableIf` predicate), so no
// stubkit lock may be held.
std::optional<RetryDecision> DecideOutcome(const absl::Status& status,
                                           const FailureFacts& facts,
                                           const RetryPolicy& policy);

// What the admission source answered to a retryable failure.
struct AdmissionAnswer {
  bool admitted = true;  // true without a source
  // When refused: AdmissionSource::MayWait, and, when it may not wait,
  // AdmissionSource::Refusal.
  bool may_wait = false;
  std::string refusal;
};

// Steps 3-7, after DecideOutcome found the failure retryable
// (`timed_out`: AttemptTimedOut): a stop, a wait for admission, or none:
// the driver asks the wait source for the wait (step 8) and calls
// DecideWait.
std::optional<RetryDecision> DecideAdmission(const FailureFacts& facts,
                                             const RetryPolicy& policy,
                                             const AdmissionAnswer& answer,
                                             bool timed_out);

// Steps 8-11, with the wait source's choice: a stop, or a retry after
// `chosen.delay` whose `take_admission` tells the driver to take the
// admission's due first (AdmissionSource::Take) and to stop with
// kThrottled when it cannot (step 10).
RetryDecision DecideWait(const FailureFacts& facts, const WaitChoice& chosen,
                         bool timed_out);

// The facts of a call in the throttle's waiting mode when one of its waits
// ends (RetryLoopState::AfterThrottleWait).
struct ThrottleWaitFacts {
  using time_point = Clock::time_point;

  time_point now;
  bool cancelled = false;
  // The call's end and its reason, as FailureFacts'.
  time_point end = time_point::max();
  StopReason end_reason = StopReason::kExhausted;
  // What the release asked at `now` said: not asked yet, refused by the
  // throttle (the backend has not recovered, or another call's turn), or
  // refused by the retry budget (the throttle would have let the call go).
  enum class Release { kNotAsked, kThrottleRefused, kBudgetRefused };
  Release release = Release::kNotAsked;
  // The budget refused this call's release before (or at `now`), first at
  // `budget_refused_since`; its window (RetryBudget's ttl).
  bool budget_refused_before = false;
  time_point budget_refused_since = time_point::min();
  std::chrono::nanoseconds budget_window{0};
};

// What a call in the throttle's wait does next.
struct ThrottleWaitDecision {
  enum class Kind {
    kCancelled,   // the caller cancelled: stop as a cancel does
    kAskRelease,  // ask the throttle (and budget, all or nothing) to release
    kWait,        // ask again after the throttle's pace, at most `wait`
    kStop,        // stop with kThrottled, `explanation`
  };
  Kind kind = Kind::kStop;
  std::string explanation;
  std::chrono::nanoseconds wait{0};
};

// Decides at the end of a throttle wait, in this order: cancelled; the
// call's end has passed (an attempt released now could only fail); not
// asked yet -> ask; refused by the budget for a whole window (a reserve
// under one retry per window, and no new calls: it may never come) -> stop;
// otherwise wait, within the call's end. Pure: the driver asks for the
// release (AdmissionSource::TryRelease), draws the throttle's pace
// (RetryThrottle::PollDelay, a random draw it makes only for a wait) and
// leaves the throttle's wait.
ThrottleWaitDecision DecideAfterThrottleWait(const ThrottleWaitFacts& facts);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_RETRY_DECISION_H_
