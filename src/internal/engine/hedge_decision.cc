// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/hedge_decision.h"

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"

namespace stubkit {
namespace internal {

bool HedgeStartsInTime(Clock::time_point now, Clock::time_point end,
                       std::chrono::nanoseconds delay) {
  return end == Clock::time_point::max() || delay < end - now;
}

HedgeLaunch DecideHedgeLaunch(int index, int max_attempts, bool pushed_back,
                              bool refused) {
  if (index >= max_attempts) return HedgeLaunch::kNoneLeft;
  if (index == 0) return HedgeLaunch::kLaunch;
  if (pushed_back) return HedgeLaunch::kPushedBack;
  if (refused) return HedgeLaunch::kThrottled;
  return HedgeLaunch::kAskAdmission;
}

namespace {

HedgeDecision End(HedgeDecision::Kind kind, std::string explanation = {}) {
  HedgeDecision decision;
  decision.kind = kind;
  decision.explanation = std::move(explanation);
  return decision;
}

HedgeDecision NoMoreHedges(HedgeDecision::Why why) {
  HedgeDecision decision;
  decision.kind = HedgeDecision::Kind::kNoMoreHedges;
  decision.why = why;
  return decision;
}

}  // namespace

std::optional<HedgeDecision> DecideHedgeOutcome(const absl::Status& status,
                                                const HedgeFailureFacts& facts,
                                                const HedgingPolicy& policy) {
  using Kind = HedgeDecision::Kind;
  if (facts.cancelled) return End(Kind::kCancelled);
  if (facts.no_async_stub) {
    return End(Kind::kEnd, "not hedged: the stub cannot make async calls");
  }
  const Expiry expiry = ClassifyExpiry(status, facts.now, facts.attempt_start,
                                       facts.attempt_deadline, facts.end);
  const bool non_fatal = expiry == Expiry::kAttemptTimeout ||
                         policy.non_fatal_codes().contains(status.code());
  if (expiry == Expiry::kCallEnd || (non_fatal && facts.now >= facts.end)) {
    return End(Kind::kEndAtCallEnd);
  }
  if (!non_fatal) {
    return End(Kind::kEnd,
               absl::StrCat("hedged attempt ", facts.attempt, " failed with ",
                            StatusCodeName(static_cast<int>(status.code())),
                            ", which is fatal (non-fatal: ",
                            policy.non_fatal_codes().ToString(), ")"));
  }
  return std::nullopt;
}

HedgeDecision DecideHedgeAfterFailure(const HedgeFailureFacts& facts,
                                      bool admitted) {
  using Kind = HedgeDecision::Kind;
  using Why = HedgeDecision::Why;
  // Every attempt sent (or an earlier answer said no more): nothing left to
  // admit or refuse, as the retry loop's exhausted policy comes before its
  // admission.
  if (!facts.hedge_left) return NoMoreHedges(Why::kNoneLeft);
  if (!admitted) return NoMoreHedges(Why::kThrottled);
  if (facts.pushback.has_value()) {
    // A6: the server said not to retry: no further hedges; or the next
    // hedge waits as long as it asked.
    if (facts.pushback->kind == Pushback::Kind::kDoNotRetry) {
      return NoMoreHedges(Why::kPushedBack);
    }
    if (!HedgeStartsInTime(facts.now, facts.end, facts.pushback->delay)) {
      return NoMoreHedges(Why::kPushbackPastEnd);
    }
    HedgeDecision decision;
    decision.kind = Kind::kHedgeAfter;
    decision.delay = facts.pushback->delay;
    return decision;
  }
  HedgeDecision decision;
  decision.kind = Kind::kHedgeNow;
  return decision;
}

}  // namespace internal
}  // namespace stubkit
