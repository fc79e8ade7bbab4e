// Copyright 2026 The stubkit Authors.
//
// The hedging decisions (gRFC A6 hedging, stubkit/hedging.h): whether a
// hedged call may send its next attempt, when, and what happens after one
// of its attempts failed. Hedging's counterpart of retry_decision.h, and
// like it the one place that defines the order of its rules
// (docs/hedging.md and ARCHITECTURE.md point here).
//
// May attempt `index` (from 0) be sent (`DecideHedgeLaunch`)?
//
//   1. every attempt the policy allows was sent  -> no, none left
//   2. a hedge (index > 0), after the server's
//      pushback said not to retry                -> no, pushed back
//   3. a hedge, and admission refused an earlier
//      hedge of the call (it is not asked again:
//      a refusal ends the hedges, as it ends a
//      retry loop)                               -> no, throttled
//   4. a hedge, and admission refuses (a drained
//      retry throttle stops hedges as it stops
//      retries), or it admits but cannot take
//      its due (a spent retry budget)            -> no, throttled
//   5. otherwise                                 -> yes
//
// After a launch, the timer for the next hedge is armed only when a hedge
// is left and its delay (a `HedgeDelaySource`) ends before the call's end
// (`HedgeStartsInTime`): no hedge is sent past the call's end.
//
// After a failed attempt (`DecideHedgeOutcome`, then
// `DecideHedgeAfterFailure`):
//
//   0. the caller cancelled                      -> end: cancelled
//   1. the stub cannot make async calls          -> end: this failure
//   2. the attempt ran out of the call's end, or
//      failed non-fatally once the end passed    -> end: the call's end
//   3. a fatal code (not one of the policy's
//      non-fatal codes; an attempt's own timeout
//      is non-fatal, as in the retry loop)       -> end: this failure
//      (a non-fatal failure is reported to the admission source here)
//   4. no hedge left: every attempt was sent, or
//      an earlier refusal or pushback ended the
//      hedges (before admission, as the retry
//      loop's exhausted policy)                  -> no more hedges
//   5. admission refused                         -> no more hedges
//   6. the server's hint: do not retry           -> no more hedges
//   7. the server's hint asks for a wait:
//        the wait ends past the call's end       -> no more hedges
//        otherwise                               -> next hedge after it
//   8. otherwise                                 -> next hedge now
//
// In 4-8 the attempts in flight go on; the loop ends the call when none is
// left and none can be sent. The functions read no clock, do no I/O, run no
// user code and ask no admission source: where a step needs the source
// (launch step 4, failure step 3's report), the driver asks it and commits
// (RunHedgeLaunch and RunHedgeDecision in
// stubkit/internal/engine/retry_sources.h). The hedged loop decides under its
// mutex and reports after unlocking
// (stubkit/internal/engine/hedged_operation.h).
//
//   HedgeDecision decision =
//       RunHedgeDecision(status, facts, policy, admission);
//   if (decision.kind == HedgeDecision::Kind::kHedgeNow) Launch();

#ifndef STUBKIT_INTERNAL_HEDGE_DECISION_H_
#define STUBKIT_INTERNAL_HEDGE_DECISION_H_

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/clock.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/base/hint_parsing.h"
#include "stubkit/internal/engine/retry_decision.h"

namespace stubkit {
namespace internal {

// The delay before the next hedge: fixed (`FixedHedgeDelay`), or a latency
// percentile (an adaptive source), not a branch in the hedged loop.
class HedgeDelaySource {
 public:
  virtual ~HedgeDelaySource() = default;
  // The delay before the hedge after attempt `launched` (from 1) was sent
  // at `now`.
  virtual std::chrono::nanoseconds NextDelay(int launched,
                                             Clock::time_point now) = 0;
};

// `HedgingPolicy::hedging_delay()`, every time.
class FixedHedgeDelay final : public HedgeDelaySource {
 public:
  explicit FixedHedgeDelay(std::chrono::nanoseconds delay) : delay_(delay) {}
  std::chrono::nanoseconds NextDelay(int, Clock::time_point) override {
    return delay_;
  }

 private:
  std::chrono::nanoseconds delay_;
};

// The latency percentile of an `AdaptiveHedgingOption`, or the policy's
// fixed delay until it has enough samples (both clamped).
class AdaptiveHedgeDelay final : public HedgeDelaySource {
 public:
  AdaptiveHedgeDelay(AdaptiveHedging& adaptive, std::chrono::nanoseconds fixed)
      : adaptive_(adaptive), fixed_(fixed) {}
  std::chrono::nanoseconds NextDelay(int, Clock::time_point now) override {
    return adaptive_.HedgeDelay(now, fixed_);
  }

 private:
  AdaptiveHedging& adaptive_;
  std::chrono::nanoseconds fixed_;
};

// Whether a hedge sent `delay` after `now` starts before the call's `end`
// (time_point::max(): none).
bool HedgeStartsInTime(Clock::time_point now, Clock::time_point end,
                       std::chrono::nanoseconds delay);

enum class HedgeLaunch {
  kLaunch,
  kNoneLeft,
  kPushedBack,
  kThrottled,
  // Step 4: a hedge goes if admission admits it and it takes its due
  // (AdmissionSource::Admits, then Take); the driver asks (RunHedgeLaunch).
  kAskAdmission,
};

// Whether attempt `index` (from 0) may be sent, steps 1-3 of the order
// above. `refused`: admission refused an earlier hedge of the call.
HedgeLaunch DecideHedgeLaunch(int index, int max_attempts, bool pushed_back,
                              bool refused);

// The facts of one failed attempt of a hedged call.
struct HedgeFailureFacts {
  using time_point = Clock::time_point;

  time_point now;
  bool cancelled = false;
  // The stub has no async form (IsNoAsyncStubError): hedging cannot work.
  bool no_async_stub = false;
  int attempt = 1;  // the failed attempt, from 1, for the explanation
  time_point attempt_start;
  time_point attempt_deadline = time_point::max();
  time_point end = time_point::max();  // the call's end
  // Another attempt may still be sent: fewer than the policy's maximum were
  // launched, no pushback said not to retry, and admission refused none.
  bool hedge_left = false;
  // The server's hint after the failed attempt (its pushback or RetryInfo,
  // ReadServerHint; a wait past the ceiling is a "don't retry"), when
  // server hints are followed.
  std::optional<Pushback> pushback;
};

// What a hedged call does after a failed attempt.
struct HedgeDecision {
  enum class Kind {
    kCancelled,     // end the call: the caller cancelled
    kEndAtCallEnd,  // end the call: its end was reached
    kEnd,           // end the call with this failure (`explanation`)
    kHedgeNow,      // send the next hedge now; its timer restarts from it
    kHedgeAfter,    // send the next hedge after `delay` (server's hint)
    kNoMoreHedges,  // send no further hedge (`why`); in-flight ones go on
  };
  enum class Why { kNoneLeft, kThrottled, kPushedBack, kPushbackPastEnd };
  Kind kind = Kind::kEnd;
  Why why = Why::kNoneLeft;
  std::string explanation;  // kEnd: for the status's retry summary
  std::chrono::nanoseconds delay{0};
};

// Steps 0-3 after a failed attempt of a hedged call: the end the failure
// calls for, or none: it is non-fatal, and the driver reports it to the
// admission source (AdmissionSource::OnRetryableFailure) whatever follows.
std::optional<HedgeDecision> DecideHedgeOutcome(const absl::Status& status,
                                                const HedgeFailureFacts& facts,
                                                const HedgingPolicy& policy);

// Steps 4-8, given whether the admission source admitted (true without
// one).
HedgeDecision DecideHedgeAfterFailure(const HedgeFailureFacts& facts,
                                      bool admitted);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_HEDGE_DECISION_H_
