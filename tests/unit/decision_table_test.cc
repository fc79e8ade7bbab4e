// Copyright 2026 The stubkit Authors.
//
// The retry decision. First a table against the decision itself
// (`RunRetryDecision`, stubkit/internal/engine/retry_sources.h, over the steps
// stubkit/internal/engine/retry_decision.h lists), one row per rule and one per
// pair of rules that could both apply;
// then the same order through the sync and async loops on a fake clock,
// which shows that they report what the decision says.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/internal/engine/retry_decision.h"
#include "stubkit/internal/engine/retry_sources.h"
#include "stubkit/retry_loop.h"
#include "tests/testing/scripted_admission.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr MethodInfo kIdempotent{"test.Table.Get", RpcKind::kUnary,
                                 Idempotency::kIdempotent};
constexpr MethodInfo kNonIdempotent{"test.Table.Create", RpcKind::kUnary,
                                    Idempotency::kNonIdempotent};

struct Outcome {
  absl::Status status;
  int attempts = 0;
  StopReason reason = StopReason::kSuccess;
  nanoseconds elapsed{0};
};

class DecisionTableTest : public ::testing::TestWithParam<bool> {
 protected:
  bool async() const { return GetParam(); }

  // Every attempt fails with `code` and takes 10 ms of fake time.
  Outcome Run(const MethodInfo& method, absl::StatusCode code,
              const Options& call) {
    auto clock = std::make_shared<FakeClock>();
    Options client = Options{}
                         .set<ClockOption>(clock)
                         .set<SleeperOption>(clock)
                         .set<AsyncSleeperOption>(clock);
    auto attempts = std::make_shared<std::atomic<int>>(0);
    const auto start = clock->Now();
    absl::StatusOr<int> result;
    if (async()) {
      result =
          AsyncRetryLoop<int>(
              method, call, client,
              [clock, attempts, code](grpc::ClientContext&, const OptionsView&,
                                      AsyncCallback<int> done) {
                ++*attempts;
                clock->Advance(milliseconds(10));
                // Completes on another thread, as gRPC does.
                std::thread([done = std::move(done), code] {
                  done(absl::Status(code, "scripted"));
                }).detach();
              })
              .get();
    } else {
      result = RetryLoop<int>(method, OptionsView(call, client),
                              [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                                ++*attempts;
                                clock->Advance(milliseconds(10));
                                return absl::Status(code, "scripted");
                              });
    }
    Outcome outcome;
    outcome.status = result.status();
    outcome.attempts = attempts->load();
    outcome.elapsed = clock->Now() - start;
    std::optional<RetrySummary> summary = GetRetrySummary(result.status());
    EXPECT_TRUE(summary.has_value()) << result.status();
    if (summary) {
      outcome.reason = summary->stop_reason;
      EXPECT_EQ(summary->attempts, outcome.attempts);
    }
    return outcome;
  }

  static Options NoJitter() {
    return Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                                  .WithInitialDelay(seconds(1))
                                                  .WithMaximumDelay(seconds(1))
                                                  .WithMultiplier(2.0)
                                                  .WithJitter(Jitter::None()));
  }
};

INSTANTIATE_TEST_SUITE_P(SyncAndAsync, DecisionTableTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Async" : "Sync";
                         });

// Rule 1 before rule 2: a code that is not retryable on a non-idempotent
// call is a permanent error, not "not idempotent".
TEST_P(DecisionTableTest, NonRetryableCodeOnNonIdempotentCallIsPermanent) {
  Outcome o = Run(kNonIdempotent, absl::StatusCode::kInternal, Options{});
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(o.reason, StopReason::kPermanentError);
  EXPECT_EQ(o.attempts, 1);
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("INTERNAL is not a retryable code"));
}

// Rule 2 before rule 3: with no retries allowed at all, a retryable failure
// of a non-idempotent call still stops as "not idempotent".
TEST_P(DecisionTableTest, RetryableCodeOnNonIdempotentCallIsNonIdempotent) {
  Outcome o =
      Run(kNonIdempotent, absl::StatusCode::kUnavailable,
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(o.reason, StopReason::kNonIdempotent);
  EXPECT_EQ(o.attempts, 1);
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("test.Table.Create is not idempotent"));
}

// The same call when idempotent: rule 3 applies.
TEST_P(DecisionTableTest, RetryableCodeWithNoRetriesLeftIsExhausted) {
  Outcome o =
      Run(kIdempotent, absl::StatusCode::kUnavailable,
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_EQ(o.reason, StopReason::kExhausted);
  EXPECT_EQ(o.attempts, 1);
}

// Rule 4: the policy's time limit and TotalTimeoutOption both end the call;
// whichever is first names the stop.
TEST_P(DecisionTableTest, PolicyLimitShorterThanTotalTimeoutIsExhausted) {
  Outcome o =
      Run(kIdempotent, absl::StatusCode::kUnavailable,
          NoJitter()
              .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(5)))
              .set<TotalTimeoutOption>(seconds(60)));
  EXPECT_EQ(o.reason, StopReason::kExhausted);
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("the retry policy's time limit"));
  // Attempts at 0, 1.01, 2.02, 3.03, 4.04 s; the next wait would end at
  // 5.05 s, past the 5 s limit.
  EXPECT_EQ(o.attempts, 5);
  EXPECT_LT(o.elapsed, seconds(5));
}

TEST_P(DecisionTableTest, PolicyLimitLongerThanTotalTimeoutIsDeadline) {
  Outcome o =
      Run(kIdempotent, absl::StatusCode::kUnavailable,
          NoJitter()
              .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(60)))
              .set<TotalTimeoutOption>(seconds(5)));
  EXPECT_EQ(o.reason, StopReason::kDeadline);
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("the call's deadline"));
  EXPECT_EQ(o.attempts, 5);
  EXPECT_LT(o.elapsed, seconds(5));
}

// A count policy with a total timeout: whichever runs out first.
TEST_P(DecisionTableTest, CountPolicyAndTotalTimeoutWhicheverIsFirst) {
  Outcome by_count =
      Run(kIdempotent, absl::StatusCode::kUnavailable,
          NoJitter()
              .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2))
              .set<TotalTimeoutOption>(seconds(60)));
  EXPECT_EQ(by_count.reason, StopReason::kExhausted);
  EXPECT_EQ(by_count.attempts, 3);

  Outcome by_time =
      Run(kIdempotent, absl::StatusCode::kUnavailable,
          NoJitter()
              .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(100))
              .set<TotalTimeoutOption>(seconds(5)));
  EXPECT_EQ(by_time.reason, StopReason::kDeadline);
  EXPECT_EQ(by_time.attempts, 5);
}

// MinAttemptTimeOption: no wait after which the next attempt would have
// less than its minimum time. Attempts at 0 and 1.01 s; after the 1 s wait
// from 1.02 s only 0.48 s of the 2.5 s would be left, under 0.6 s.
TEST_P(DecisionTableTest, MinAttemptTimeStopsBeforeAUselessWait) {
  Outcome o = Run(kIdempotent, absl::StatusCode::kUnavailable,
                  NoJitter()
                      .set<TotalTimeoutOption>(milliseconds(2500))
                      .set<MinAttemptTimeOption>(milliseconds(600)));
  EXPECT_EQ(o.reason, StopReason::kDeadline);
  EXPECT_EQ(o.attempts, 2);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("(MinAttemptTimeOption) would be left"));
  // 0.5 s would do: the third attempt goes.
  Outcome enough = Run(kIdempotent, absl::StatusCode::kUnavailable,
                       NoJitter()
                           .set<TotalTimeoutOption>(milliseconds(2500))
                           .set<MinAttemptTimeOption>(milliseconds(400)));
  EXPECT_EQ(enough.attempts, 3);
}

// Less than the minimum attempt time left at the start: nothing is sent.
TEST_P(DecisionTableTest, MinAttemptTimeLongerThanTheCallSendsNothing) {
  Outcome o = Run(kIdempotent, absl::StatusCode::kUnavailable,
                  NoJitter()
                      .set<TotalTimeoutOption>(milliseconds(5))
                      .set<MinAttemptTimeOption>(milliseconds(10)));
  EXPECT_EQ(o.attempts, 0);
  EXPECT_EQ(o.reason, StopReason::kDeadline);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("less than 10ms (MinAttemptTimeOption) was left"));
}

TEST_P(DecisionTableTest, NegativeMinAttemptTimeIsInvalid) {
  Outcome o = Run(kIdempotent, absl::StatusCode::kUnavailable,
                  Options{}.set<MinAttemptTimeOption>(milliseconds(-1)));
  EXPECT_EQ(o.attempts, 0);
  EXPECT_EQ(o.reason, StopReason::kInvalidArgument);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("MinAttemptTimeOption must not be negative"));
}

// TotalTimeoutOption and DeadlineOption: the earlier end wins, whichever
// option sets it (docs/retry-semantics.md, "Deadlines"). Attempts at 0, 1.01
// and 2.02 s; the next 1 s wait would pass 2.5 s.
TEST_P(DecisionTableTest, EarlierOfTotalTimeoutAndDeadlineWins) {
  const auto in = [](nanoseconds d) {
    return std::chrono::system_clock::now() + d;
  };
  Outcome deadline_first =
      Run(kIdempotent, absl::StatusCode::kUnavailable,
          NoJitter()
              .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(100))
              .set<DeadlineOption>(in(milliseconds(2500)))
              .set<TotalTimeoutOption>(seconds(10)));
  EXPECT_EQ(deadline_first.reason, StopReason::kDeadline);
  EXPECT_EQ(deadline_first.attempts, 3);

  Outcome total_first =
      Run(kIdempotent, absl::StatusCode::kUnavailable,
          NoJitter()
              .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(100))
              .set<DeadlineOption>(in(seconds(10)))
              .set<TotalTimeoutOption>(milliseconds(2500)));
  EXPECT_EQ(total_first.reason, StopReason::kDeadline);
  EXPECT_EQ(total_first.attempts, 3);

  // Both later than the policy's own limit: the policy's limit wins.
  Outcome policy_first = Run(
      kIdempotent, absl::StatusCode::kUnavailable,
      NoJitter()
          .set<RetryPolicyOption>(RetryPolicy::LimitedTime(milliseconds(2500)))
          .set<DeadlineOption>(in(seconds(10)))
          .set<TotalTimeoutOption>(seconds(10)));
  EXPECT_EQ(policy_first.reason, StopReason::kExhausted);
  EXPECT_EQ(policy_first.attempts, 3);
}

// --- The table: RunRetryDecision alone. ---

using internal::FailureFacts;
using internal::RetryDecision;
using internal::RunRetryDecision;
using internal::WaitChoice;
using internal::WaitSource;
using Kind = RetryDecision::Kind;
using time_point = Clock::time_point;

using testing::ScriptedAdmission;

// A wait source that answers as scripted and records what it was asked.
class ScriptedWaits final : public WaitSource {
 public:
  explicit ScriptedWaits(WaitChoice choice) : choice_(std::move(choice)) {}
  WaitChoice NextWait(const absl::Status&, int failures) override {
    asked_for.push_back(failures);
    return choice_;
  }
  std::vector<int> asked_for;

 private:
  WaitChoice choice_;
};

constexpr time_point kStart{};  // the attempt started here

time_point At(nanoseconds since_start) { return kStart + since_start; }

// One row: the facts of a failed attempt, the sources' answers, and the
// decision expected.
struct Row {
  const char* name;
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  // Facts, relative to the attempt's start; <0 for "none" (max()).
  nanoseconds now{seconds(1)};
  nanoseconds attempt_deadline{-1};
  nanoseconds end{seconds(100)};
  StopReason end_reason = StopReason::kExhausted;
  nanoseconds call_end{-1};
  bool stream = false;
  nanoseconds min_attempt_time{0};
  int nested_max_failures = -1;
  int incoming_attempt = 0;
  bool cancelled = false;
  bool idempotent = true;
  const char* repeat_forbidden = "";
  int failures = 0;
  int max_failures = RetryPolicy::kUnlimitedFailures;
  // Sources: admission null when !throttle.
  bool throttle = true;
  bool admit = true;
  bool may_wait = false;
  bool take = true;
  WaitChoice wait{false, seconds(2), WaitReason::kBackoff, ""};
  // Expected.
  Kind kind = Kind::kRetry;
  StopReason reason = StopReason::kSuccess;
  const char* explanation = "";  // a substring
  int failures_after = 1;
  int admission_calls = 1;
  bool wait_asked = true;
  // Admission took its due: only when nothing else stopped the call.
  int takes = -1;  // -1: 1 for kRetry with an admission source, else 0
  bool attempt_timed_out = false;
};

time_point Point(nanoseconds offset) {
  return offset < nanoseconds::zero() ? time_point::max() : At(offset);
}

const WaitChoice kRefusedWait{true, seconds(0), WaitReason::kPushback,
                              "the server said no"};

const Row kRows[] = {
    {.name = "retryable failure: retry after the wait"},
    {.name = "cancelled beats everything",
     .code = absl::StatusCode::kInvalidArgument,
     .cancelled = true,
     .idempotent = false,
     .kind = Kind::kStop,
     .reason = StopReason::kCancelled,
     .failures_after = 0,
     .admission_calls = 0,
     .wait_asked = false},
    {.name = "attempt ran out of the call's deadline",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = seconds(5),
     .attempt_deadline = seconds(5),
     .end = seconds(5),
     .end_reason = StopReason::kDeadline,
     .kind = Kind::kStop,
     .reason = StopReason::kDeadline,
     .explanation = "gave up: the call's deadline was reached",
     .failures_after = 0,
     .admission_calls = 0,
     .wait_asked = false},
    {.name = "attempt ran out of the policy's time limit",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = seconds(5),
     .attempt_deadline = seconds(5),
     .end = seconds(5),
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "gave up: the retry policy's time limit was reached",
     .failures_after = 0,
     .admission_calls = 0,
     .wait_asked = false},
    {.name = "stream attempt ran out of the call's own end, not the policy's",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = seconds(8),
     .attempt_deadline = seconds(8),
     .end = seconds(5),
     .call_end = seconds(8),
     .kind = Kind::kStop,
     .reason = StopReason::kDeadline,
     .explanation = "the call's deadline was reached",
     .failures_after = 0,
     .admission_calls = 0,
     .wait_asked = false},
    {.name = "attempt timeout is retryable though the code is not",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = seconds(1),
     .attempt_deadline = seconds(1),
     .attempt_timed_out = true},
    {.name = "within the tolerance of the attempt's deadline counts as it",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = milliseconds(960),
     .attempt_deadline = seconds(1),
     .attempt_timed_out = true},
    {.name = "a server's DEADLINE_EXCEEDED well before ours is permanent",
     .code = absl::StatusCode::kDeadlineExceeded,
     .now = milliseconds(500),
     .attempt_deadline = seconds(1),
     .kind = Kind::kStop,
     .reason = StopReason::kPermanentError,
     .explanation = "DEADLINE_EXCEEDED is not a retryable code",
     .failures_after = 0,
     .admission_calls = 0,
     .wait_asked = false},
    {.name = "permanent code",
     .code = absl::StatusCode::kInternal,
     .kind = Kind::kStop,
     .reason = StopReason::kPermanentError,
     .explanation = "not retried: INTERNAL is not a retryable code "
                    "(retryable: UNAVAILABLE)",
     .failures_after = 0,
     .admission_calls = 0,
     .wait_asked = false},
    {.name = "permanent before non-idempotent",
     .code = absl::StatusCode::kInternal,
     .idempotent = false,
     .kind = Kind::kStop,
     .reason = StopReason::kPermanentError,
     .failures_after = 0,
     .admission_calls = 0,
     .wait_asked = false},
    {.name = "non-idempotent: the throttle still counts the failure",
     .idempotent = false,
     .kind = Kind::kStop,
     .reason = StopReason::kNonIdempotent,
     .explanation = "not retried: test.Table.Get is not idempotent",
     .failures_after = 0,
     .wait_asked = false},
    {.name = "non-idempotent before an exhausted policy",
     .idempotent = false,
     .failures = 3,
     .max_failures = 0,
     .kind = Kind::kStop,
     .reason = StopReason::kNonIdempotent,
     .failures_after = 3,
     .wait_asked = false},
    {.name = "non-idempotent before a stream that may not repeat",
     .idempotent = false,
     .repeat_forbidden = "broke after delivering messages",
     .kind = Kind::kStop,
     .reason = StopReason::kNonIdempotent,
     .failures_after = 0,
     .wait_asked = false},
    {.name = "a stream that may not repeat what it delivered",
     .repeat_forbidden = "broke after delivering messages",
     .kind = Kind::kStop,
     .reason = StopReason::kNotResumable,
     .explanation = "not resumed: the stream broke after delivering messages",
     .failures_after = 0,
     .wait_asked = false},
    {.name = "error count spent",
     .failures = 2,
     .max_failures = 2,
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "gave up: retry policy exhausted (at most 2 retries)",
     .failures_after = 3,
     .wait_asked = false},
    {.name = "error count spent, singular",
     .failures = 1,
     .max_failures = 1,
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "(at most 1 retry)",
     .failures_after = 2,
     .wait_asked = false},
    {.name = "last retry the count allows",
     .failures = 1,
     .max_failures = 2,
     .failures_after = 2},
    {.name = "unlimited count", .failures = 100000, .failures_after = 100001},
    {.name = "error count before the end",
     .now = seconds(200),
     .failures = 2,
     .max_failures = 2,
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "retry policy exhausted",
     .failures_after = 3,
     .wait_asked = false},
    {.name = "the call's end has passed",
     .now = seconds(100),
     .end_reason = StopReason::kDeadline,
     .kind = Kind::kStop,
     .reason = StopReason::kDeadline,
     .explanation = "gave up: the call's deadline was reached",
     .wait_asked = false},
    {.name = "the end before admission",
     .now = seconds(100),
     .admit = false,
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "the retry policy's time limit was reached",
     .wait_asked = false},
    {.name = "admission refused",
     .admit = false,
     .kind = Kind::kStop,
     .reason = StopReason::kThrottled,
     .explanation = "gave up: scripted refusal",
     .wait_asked = false},
    {.name = "admission refused, the call may wait for it",
     .admit = false,
     .may_wait = true,
     .kind = Kind::kWaitForAdmission,
     .wait_asked = false},
    {.name = "no admission source", .throttle = false, .admission_calls = 0},
    {.name = "admitted, but another call took the last of the budget",
     .take = false,
     .kind = Kind::kStop,
     .reason = StopReason::kThrottled,
     .explanation = "gave up: scripted refusal",
     .takes = 1},
    {.name = "the take comes after the server's refusal",
     .take = false,
     .wait = kRefusedWait,
     .kind = Kind::kStop,
     .reason = StopReason::kServerRefused,
     .explanation = "gave up: the server said no"},
    {.name = "the server refused the retry",
     .wait = kRefusedWait,
     .kind = Kind::kStop,
     .reason = StopReason::kServerRefused,
     .explanation = "gave up: the server said no"},
    {.name = "admission before the server's refusal",
     .admit = false,
     .wait = kRefusedWait,
     .kind = Kind::kStop,
     .reason = StopReason::kThrottled,
     .explanation = "scripted refusal",
     .wait_asked = false},
    {.name = "the wait would pass the end",
     .now = seconds(98),
     .end_reason = StopReason::kDeadline,
     .kind = Kind::kStop,
     .reason = StopReason::kDeadline,
     .explanation = "gave up: the next wait (2s, backoff) would pass the "
                    "call's deadline"},
    {.name = "the take comes after the wait would pass the end",
     .now = seconds(98),
     .end_reason = StopReason::kDeadline,
     .take = false,
     .kind = Kind::kStop,
     .reason = StopReason::kDeadline},
    {.name = "the wait ends just before the end",
     .now = seconds(98) - nanoseconds(1)},
    {.name = "the wait fits, but leaves less than the minimum attempt time",
     .now = seconds(97),
     .end_reason = StopReason::kDeadline,
     .min_attempt_time = milliseconds(1500),
     .kind = Kind::kStop,
     .reason = StopReason::kDeadline,
     .explanation = "gave up: after the next wait (2s, backoff) less than "
                    "1.5s (MinAttemptTimeOption) would be left before "
                    "the call's deadline"},
    {.name = "the wait leaves exactly the minimum attempt time",
     .now = seconds(97),
     .min_attempt_time = seconds(1)},
    // A stream's attempt outlives the policy's time limit (which bounds
    // its reopening): the minimum counts to its own end.
    {.name = "a stream: the minimum counts to the call's end, not the policy's",
     .now = seconds(97),
     .call_end = seconds(200),
     .stream = true,
     .min_attempt_time = seconds(30)},
    {.name = "a stream: too little time before the call's end",
     .now = seconds(97),
     .call_end = seconds(120),
     .stream = true,
     .min_attempt_time = seconds(30),
     .kind = Kind::kStop,
     .reason = StopReason::kDeadline,
     .explanation = "gave up: after the next wait (2s, backoff) less than "
                    "30s (MinAttemptTimeOption) would be left before the "
                    "call's deadline"},
    {.name = "a stream with no end but the policy's",
     .now = seconds(97),
     .stream = true,
     .min_attempt_time = std::chrono::hours(1)},
    {.name = "a minimum attempt time with no end at all",
     .end = nanoseconds(-1),
     .min_attempt_time = std::chrono::hours(1)},
    {.name = "a retried request, retried at the layer above only",
     .nested_max_failures = 0,
     .incoming_attempt = 2,
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "not retried: the request it serves is itself a retry "
                    "(attempt 2 upstream) and the layer above retries it "
                    "(NestedRetryOption)",
     .wait_asked = false},
    {.name = "a retried request, its one retry",
     .nested_max_failures = 1,
     .incoming_attempt = 3},
    {.name = "a retried request, its one retry spent",
     .nested_max_failures = 1,
     .incoming_attempt = 3,
     .failures = 1,
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "gave up: at most 1 retry as the request it serves is "
                    "itself a retry (attempt 3 upstream)",
     .failures_after = 2,
     .wait_asked = false},
    {.name = "the policy's count comes first",
     .nested_max_failures = 1,
     .incoming_attempt = 3,
     .max_failures = 0,
     .kind = Kind::kStop,
     .reason = StopReason::kExhausted,
     .explanation = "retry policy exhausted (at most 0 retries)",
     .wait_asked = false},
    {.name = "no end at all, a long wait",
     .end = nanoseconds(-1),
     .wait = {false, std::chrono::hours(1000), WaitReason::kRetryInfo, ""}},
};

TEST(RunRetryDecisionTable, EveryRow) {
  constexpr MethodInfo kMethod{"test.Table.Get", RpcKind::kUnary,
                               Idempotency::kIdempotent};
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.name);
    FailureFacts facts;
    facts.method = kMethod.full_name;
    facts.now = At(row.now);
    facts.cancelled = row.cancelled;
    facts.idempotent = row.idempotent;
    facts.repeat_forbidden = row.repeat_forbidden;
    facts.failures = row.failures;
    facts.attempt_start = kStart;
    facts.attempt_deadline = Point(row.attempt_deadline);
    facts.end = Point(row.end);
    facts.end_reason = row.end_reason;
    facts.call_end = Point(row.call_end);
    facts.stream = row.stream;
    facts.min_attempt_time = row.min_attempt_time;
    facts.nested_max_failures = row.nested_max_failures;
    facts.incoming_attempt = row.incoming_attempt;
    const RetryPolicy policy =
        row.max_failures == RetryPolicy::kUnlimitedFailures
            ? RetryPolicy::LimitedTime(std::chrono::hours(1))
            : RetryPolicy::LimitedErrorCount(row.max_failures);
    ScriptedAdmission admission(row.admit, row.may_wait, row.take);
    ScriptedWaits waits(row.wait);
    const RetryDecision decision =
        RunRetryDecision(absl::Status(row.code, "scripted"), facts, policy,
                         row.throttle ? &admission : nullptr, waits);
    EXPECT_EQ(decision.kind, row.kind);
    EXPECT_EQ(decision.failures, row.failures_after);
    EXPECT_EQ(admission.failures_seen, row.admission_calls);
    EXPECT_EQ(admission.takes,
              row.takes >= 0
                  ? row.takes
                  : (row.kind == Kind::kRetry && row.throttle ? 1 : 0));
    EXPECT_EQ(!waits.asked_for.empty(), row.wait_asked);
    if (!waits.asked_for.empty()) {
      // Asked once, with the failure's number counted from 1.
      EXPECT_EQ(waits.asked_for, std::vector<int>{row.failures + 1});
    }
    EXPECT_EQ(decision.attempt_timed_out, row.attempt_timed_out);
    switch (row.kind) {
      case Kind::kStop:
        EXPECT_EQ(decision.stop_reason, row.reason);
        EXPECT_THAT(decision.explanation, HasSubstr(row.explanation));
        break;
      case Kind::kRetry:
        EXPECT_EQ(decision.wait, row.wait.delay);
        EXPECT_EQ(decision.wait_reason, row.wait.reason);
        break;
      case Kind::kWaitForAdmission:
        EXPECT_EQ(decision.wait_reason, WaitReason::kThrottle);
        break;
    }
  }
}

// A RetryableIf predicate runs only when the code alone does not decide:
// never for a cancelled call or an attempt that ran out of the call's end.
TEST(RunRetryDecisionTable, PredicateRunsOnlyWhenItCanMatter) {
  int asked = 0;
  const RetryPolicy policy = RetryPolicy::LimitedTime(std::chrono::hours(1))
                                 .WithRetryableIf([&](const absl::Status&) {
                                   ++asked;
                                   return true;
                                 });
  ScriptedWaits waits({false, seconds(1), WaitReason::kBackoff, ""});
  FailureFacts facts;
  facts.method = "test.Table.Get";
  facts.idempotent = true;
  facts.now = At(seconds(1));
  facts.cancelled = true;
  RunRetryDecision(absl::InternalError("x"), facts, policy, nullptr, waits);
  EXPECT_EQ(asked, 0);
  facts.cancelled = false;
  const RetryDecision decision =
      RunRetryDecision(absl::InternalError("x"), facts, policy, nullptr, waits);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(decision.kind, Kind::kRetry);
}

// The steps alone are values: they ask no source, and a retry tells the
// driver to take admission's due.
TEST(RetryDecisionSteps, AreValuesTheDriverCommits) {
  const RetryPolicy policy = RetryPolicy::LimitedErrorCount(3);
  FailureFacts facts;
  facts.method = "test.Table.Get";
  facts.idempotent = true;
  facts.now = At(seconds(1));
  const absl::Status unavailable = absl::UnavailableError("x");
  EXPECT_FALSE(internal::DecideOutcome(unavailable, facts, policy));
  EXPECT_EQ(internal::DecideOutcome(absl::InternalError("x"), facts, policy)
                ->stop_reason,
            StopReason::kPermanentError);

  internal::AdmissionAnswer refused;
  refused.admitted = false;
  refused.may_wait = true;
  EXPECT_EQ(internal::DecideAdmission(facts, policy, refused, false)->kind,
            Kind::kWaitForAdmission);
  refused.may_wait = false;
  refused.refusal = "gave up: no tokens";
  const auto throttled =
      internal::DecideAdmission(facts, policy, refused, false);
  EXPECT_EQ(throttled->stop_reason, StopReason::kThrottled);
  EXPECT_EQ(throttled->explanation, "gave up: no tokens");
  EXPECT_FALSE(internal::DecideAdmission(facts, policy, {}, false));

  const RetryDecision retry = internal::DecideWait(
      facts, {false, seconds(2), WaitReason::kBackoff, ""}, false);
  EXPECT_EQ(retry.kind, Kind::kRetry);
  EXPECT_TRUE(retry.take_admission);
  EXPECT_EQ(retry.wait, seconds(2));
  EXPECT_EQ(retry.failures, 1);
  const RetryDecision refused_wait = internal::DecideWait(
      facts, {true, nanoseconds::zero(), WaitReason::kRetryInfo, "no"}, false);
  EXPECT_EQ(refused_wait.stop_reason, StopReason::kServerRefused);
  EXPECT_FALSE(refused_wait.take_admission);
}

// --- DecideAfterThrottleWait: a call in the throttle's waiting mode. ---

TEST(DecideAfterThrottleWaitTable, EveryRow) {
  using internal::DecideAfterThrottleWait;
  using internal::ThrottleWaitFacts;
  using TKind = internal::ThrottleWaitDecision::Kind;
  using Release = ThrottleWaitFacts::Release;
  struct Row {
    const char* name;
    bool cancelled;
    nanoseconds now;
    Release release;
    bool budget_refused_before;
    nanoseconds refused_since;  // when the budget first refused
    TKind kind;
    nanoseconds wait;         // kWait: the most it may wait
    const char* explanation;  // kStop: a part of it
  };
  // The call ends at 10 s (the policy's limit); the budget's window is 2 s.
  const Row rows[] = {
      {"cancel first, even past the end",
       true,
       seconds(11),
       Release::kNotAsked,
       true,
       seconds(1),
       TKind::kCancelled,
       {},
       ""},
      {"past the end: an attempt could only fail",
       false,
       seconds(10),
       Release::kNotAsked,
       false,
       {},
       TKind::kStop,
       {},
       "the backend did not recover before the retry policy's time limit"},
      {"past the end after a budget refusal says so",
       false,
       seconds(10),
       Release::kNotAsked,
       true,
       seconds(9),
       TKind::kStop,
       {},
       "the retry budget had no retry left when the throttle let one go"},
      {"within the end: ask",
       false,
       seconds(3),
       Release::kNotAsked,
       false,
       {},
       TKind::kAskRelease,
       {},
       ""},
      {"the throttle refused: wait, within the end",
       false,
       seconds(9),
       Release::kThrottleRefused,
       false,
       {},
       TKind::kWait,
       seconds(1),
       ""},
      {"the budget refused, less than a window: wait", false, seconds(4),
       Release::kBudgetRefused, true, seconds(3), TKind::kWait, seconds(6), ""},
      {"the budget refused for a whole window: stop",
       false,
       seconds(5),
       Release::kBudgetRefused,
       true,
       seconds(3),
       TKind::kStop,
       {},
       "no retry for 2s (a whole window)"},
      {"an old budget refusal, now the throttle's: wait", false, seconds(7),
       Release::kThrottleRefused, true, seconds(3), TKind::kWait, seconds(3),
       ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ThrottleWaitFacts facts;
    facts.now = Clock::time_point() + row.now;
    facts.cancelled = row.cancelled;
    facts.end = Clock::time_point() + seconds(10);
    facts.end_reason = StopReason::kExhausted;
    facts.release = row.release;
    facts.budget_refused_before = row.budget_refused_before;
    facts.budget_refused_since = Clock::time_point() + row.refused_since;
    facts.budget_window = seconds(2);
    const internal::ThrottleWaitDecision decision =
        DecideAfterThrottleWait(facts);
    EXPECT_EQ(decision.kind, row.kind);
    if (row.kind == TKind::kWait) EXPECT_EQ(decision.wait, row.wait);
    EXPECT_THAT(decision.explanation, HasSubstr(row.explanation));
  }
}

}  // namespace
}  // namespace stubkit
