// Copyright 2026 The stubkit Authors.
//
// The hedging decisions of stubkit/internal/engine/hedge_decision.h as tables:
// one row per rule and per pair of rules whose order matters. A row that fails
// names the rule, so a reordering shows which promise it broke.

#include "stubkit/internal/engine/hedge_decision.h"

#include <chrono>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/internal/engine/retry_sources.h"
#include "tests/testing/scripted_admission.h"

namespace stubkit {
namespace {

using internal::HedgeDecision;
using internal::HedgeFailureFacts;
using internal::HedgeLaunch;
using internal::HedgeStartsInTime;
using internal::Pushback;
using internal::RunHedgeDecision;
using internal::RunHedgeLaunch;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using Kind = HedgeDecision::Kind;
using Why = HedgeDecision::Why;
using time_point = Clock::time_point;

const time_point kStart = time_point() + std::chrono::hours(1);
time_point At(nanoseconds since_start) { return kStart + since_start; }
// A negative offset: none (time_point::max()).
time_point Point(nanoseconds since_start) {
  return since_start < nanoseconds::zero() ? time_point::max()
                                           : At(since_start);
}

using testing::ScriptedAdmission;

TEST(HedgeStartsInTime, StrictlyBeforeTheEnd) {
  EXPECT_TRUE(HedgeStartsInTime(At(seconds(0)), time_point::max(),
                                std::chrono::hours(1000)));
  EXPECT_TRUE(
      HedgeStartsInTime(At(seconds(0)), At(seconds(1)), milliseconds(999)));
  EXPECT_FALSE(HedgeStartsInTime(At(seconds(0)), At(seconds(1)), seconds(1)));
  EXPECT_FALSE(HedgeStartsInTime(At(seconds(2)), At(seconds(1)), seconds(0)));
}

struct LaunchRow {
  const char* name;
  int index;
  bool pushed_back = false;
  bool refused = false;  // admission refused an earlier hedge
  bool throttle = true;
  bool admit = true;
  bool take = true;
  HedgeLaunch expected = HedgeLaunch::kLaunch;
};

const LaunchRow kLaunchRows[] = {
    {.name = "the first attempt", .index = 0},
    {.name = "a hedge", .index = 1},
    {.name = "every attempt sent",
     .index = 3,
     .expected = HedgeLaunch::kNoneLeft},
    {.name = "none left before pushed back",
     .index = 3,
     .pushed_back = true,
     .expected = HedgeLaunch::kNoneLeft},
    {.name = "pushed back",
     .index = 1,
     .pushed_back = true,
     .expected = HedgeLaunch::kPushedBack},
    {.name = "pushed back before throttled",
     .index = 1,
     .pushed_back = true,
     .admit = false,
     .expected = HedgeLaunch::kPushedBack},
    {.name = "throttled",
     .index = 2,
     .admit = false,
     .expected = HedgeLaunch::kThrottled},
    {.name = "the first attempt is never throttled",
     .index = 0,
     .admit = false},
    {.name = "the first attempt ignores an earlier pushback",
     .index = 0,
     .pushed_back = true},
    {.name = "no throttle", .index = 2, .throttle = false, .admit = false},
    {.name = "admitted, but the budget's last retry was taken meanwhile",
     .index = 1,
     .take = false,
     .expected = HedgeLaunch::kThrottled},
    // Issue 39, item 9: a refusal ends the hedges; admission, which may
    // have recovered since, is not asked again.
    {.name = "refused before",
     .index = 2,
     .refused = true,
     .expected = HedgeLaunch::kThrottled},
    {.name = "none left before refused before",
     .index = 3,
     .refused = true,
     .expected = HedgeLaunch::kNoneLeft},
    {.name = "pushed back before refused before",
     .index = 1,
     .pushed_back = true,
     .refused = true,
     .expected = HedgeLaunch::kPushedBack},
    {.name = "the first attempt ignores a refusal",
     .index = 0,
     .refused = true},
};

TEST(RunHedgeLaunchTable, EveryRow) {
  for (const LaunchRow& row : kLaunchRows) {
    SCOPED_TRACE(row.name);
    ScriptedAdmission admission(row.admit, /*may_wait=*/false, row.take);
    EXPECT_EQ(RunHedgeLaunch(row.index, /*max_attempts=*/3, row.pushed_back,
                             row.refused, row.throttle ? &admission : nullptr),
              row.expected);
    EXPECT_EQ(admission.failures_seen, 0);  // asking counts no failure
    // A hedge that may go takes its due; one refused before takes nothing.
    const bool asked = row.throttle && row.index > 0 && row.index < 3 &&
                       !row.pushed_back && !row.refused && row.admit;
    EXPECT_EQ(admission.takes, asked ? 1 : 0);
  }
}

// Offsets from kStart; the attempt started at kStart.
struct FailureRow {
  const char* name;
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  nanoseconds now = seconds(1);
  bool cancelled = false;
  bool no_async_stub = false;
  nanoseconds attempt_deadline = nanoseconds(-1);
  nanoseconds end = seconds(100);
  bool hedge_left = true;
  std::optional<Pushback> pushback;
  bool throttle = true;
  bool admit = true;
  Kind kind = Kind::kHedgeNow;
  Why why = Why::kNoneLeft;            // kNoMoreHedges
  const char* explanation = "";        // kEnd: a part of it
  nanoseconds delay = nanoseconds(0);  // kHedgeAfter
  int admission_calls = 1;
};

const Pushback kDoNotRetry{Pushback::Kind::kDoNotRetry, nanoseconds(0)};
Pushback Wait(nanoseconds delay) { return {Pushback::Kind::kWait, delay}; }

const FailureRow kFailureRows[] = {
    {.name = "a non-fatal failure sends the next hedge now"},
    {.name = "cancelled",
     .cancelled = true,
     .kind = Kind::kCancelled,
     .admission_calls = 0},
    {.name = "cancelled before the call's end",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = seconds(100),
     .cancelled = true,
     .attempt_deadline = seconds(100),
     .kind = Kind::kCancelled,
     .admission_calls = 0},
    {.name = "cancelled before a stub that cannot hedge",
     .cancelled = true,
     .no_async_stub = true,
     .kind = Kind::kCancelled,
     .admission_calls = 0},
    {.name = "a stub that cannot make async calls",
     .no_async_stub = true,
     .kind = Kind::kEnd,
     .explanation = "not hedged: the stub cannot make async calls",
     .admission_calls = 0},
    {.name = "the attempt ran out of the call's end",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = seconds(100),
     .attempt_deadline = seconds(100),
     .kind = Kind::kEndAtCallEnd,
     .admission_calls = 0},
    {.name = "a non-fatal failure after the call's end",
     .now = seconds(101),
     .kind = Kind::kEndAtCallEnd,
     .admission_calls = 0},
    {.name = "a fatal failure after the call's end is this failure",
     .code = absl::StatusCode::kInternal,
     .now = seconds(101),
     .kind = Kind::kEnd,
     .explanation = "INTERNAL, which is fatal",
     .admission_calls = 0},
    {.name = "a fatal code",
     .code = absl::StatusCode::kInternal,
     .kind = Kind::kEnd,
     .explanation = "hedged attempt 2 failed with INTERNAL, which is fatal "
                    "(non-fatal: UNAVAILABLE)",
     .admission_calls = 0},
    {.name = "an attempt's own timeout is non-fatal",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = seconds(1),
     .attempt_deadline = seconds(1)},
    {.name = "a server's DEADLINE_EXCEEDED well before ours is fatal",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = milliseconds(500),
     .attempt_deadline = seconds(1),
     .kind = Kind::kEnd,
     .explanation = "DEADLINE_EXCEEDED, which is fatal",
     .admission_calls = 0},
    {.name = "throttled",
     .admit = false,
     .kind = Kind::kNoMoreHedges,
     .why = Why::kThrottled},
    {.name = "throttled before the server's pushback",
     .pushback = kDoNotRetry,
     .admit = false,
     .kind = Kind::kNoMoreHedges,
     .why = Why::kThrottled},
    {.name = "no throttle", .throttle = false, .admission_calls = 0},
    {.name = "the server said not to retry",
     .pushback = kDoNotRetry,
     .kind = Kind::kNoMoreHedges,
     .why = Why::kPushedBack},
    // Issue 39, item 2: every attempt sent is decided before admission and
    // the server's pushback, as the retry loop decides its exhausted policy
    // first. The failure is still counted (the token bucket counts each).
    {.name = "the server said not to retry, no hedge left",
     .hedge_left = false,
     .pushback = kDoNotRetry,
     .kind = Kind::kNoMoreHedges,
     .why = Why::kNoneLeft},
    {.name = "no hedge left before throttled",
     .hedge_left = false,
     .admit = false,
     .kind = Kind::kNoMoreHedges,
     .why = Why::kNoneLeft},
    {.name = "no hedge left before throttled, with a pushback",
     .hedge_left = false,
     .pushback = Wait(seconds(3)),
     .admit = false,
     .kind = Kind::kNoMoreHedges,
     .why = Why::kNoneLeft},
    {.name = "the server asked for a wait",
     .pushback = Wait(seconds(3)),
     .kind = Kind::kHedgeAfter,
     .delay = seconds(3)},
    {.name = "the server asked for a wait, no hedge left",
     .hedge_left = false,
     .pushback = Wait(seconds(3)),
     .kind = Kind::kNoMoreHedges,
     .why = Why::kNoneLeft},
    {.name = "the server's wait ends at the call's end",
     .pushback = Wait(seconds(99)),
     .kind = Kind::kNoMoreHedges,
     .why = Why::kPushbackPastEnd},
    {.name = "the server's wait ends just before the call's end",
     .pushback = Wait(seconds(99) - nanoseconds(1)),
     .kind = Kind::kHedgeAfter,
     .delay = seconds(99) - nanoseconds(1)},
    {.name = "no end at all, a long wait",
     .end = nanoseconds(-1),
     .pushback = Wait(std::chrono::hours(1000)),
     .kind = Kind::kHedgeAfter,
     .delay = std::chrono::hours(1000)},
    {.name = "no hedge left and no pushback",
     .hedge_left = false,
     .kind = Kind::kNoMoreHedges,
     .why = Why::kNoneLeft},
};

TEST(RunHedgeDecisionTable, EveryRow) {
  const HedgingPolicy policy =
      HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(milliseconds(50));
  for (const FailureRow& row : kFailureRows) {
    SCOPED_TRACE(row.name);
    HedgeFailureFacts facts;
    facts.now = At(row.now);
    facts.cancelled = row.cancelled;
    facts.no_async_stub = row.no_async_stub;
    facts.attempt = 2;
    facts.attempt_start = kStart;
    facts.attempt_deadline = Point(row.attempt_deadline);
    facts.end = Point(row.end);
    facts.hedge_left = row.hedge_left;
    facts.pushback = row.pushback;
    ScriptedAdmission admission(row.admit);
    const HedgeDecision decision =
        RunHedgeDecision(absl::Status(row.code, "scripted"), facts, policy,
                         row.throttle ? &admission : nullptr);
    EXPECT_EQ(decision.kind, row.kind);
    EXPECT_EQ(admission.failures_seen, row.admission_calls);
    EXPECT_EQ(admission.takes, 0);  // the next hedge's launch takes
    switch (row.kind) {
      case Kind::kEnd:
        EXPECT_THAT(decision.explanation, HasSubstr(row.explanation));
        break;
      case Kind::kNoMoreHedges:
        EXPECT_EQ(decision.why, row.why);
        break;
      case Kind::kHedgeAfter:
        EXPECT_EQ(decision.delay, row.delay);
        break;
      case Kind::kCancelled:
      case Kind::kEndAtCallEnd:
      case Kind::kHedgeNow:
        break;
    }
  }
}

// The policy's own non-fatal codes decide, not the retry loop's.
TEST(RunHedgeDecisionTable, NonFatalCodesAreThePolicys) {
  const HedgingPolicy policy =
      HedgingPolicy()
          .WithMaxAttempts(3)
          .WithHedgingDelay(milliseconds(50))
          .WithNonFatalCodes({grpc::StatusCode::RESOURCE_EXHAUSTED});
  HedgeFailureFacts facts;
  facts.now = At(seconds(1));
  facts.attempt_start = kStart;
  facts.hedge_left = true;
  EXPECT_EQ(RunHedgeDecision(absl::ResourceExhaustedError("busy"), facts,
                             policy, nullptr)
                .kind,
            Kind::kHedgeNow);
  EXPECT_EQ(
      RunHedgeDecision(absl::UnavailableError("down"), facts, policy, nullptr)
          .kind,
      Kind::kEnd);
}

}  // namespace
}  // namespace stubkit
