// Copyright 2026 The stubkit Authors.
//
// The retry loop's decision table, driven by a fake clock: no test sleeps.

#include "stubkit/retry_loop.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/default_policy_spec.h"
#include "tests/testing/recording_sleeper.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::stubkit::testing::RecordingSleeper;
using ::testing::HasSubstr;

constexpr MethodInfo kIdempotentMethod{"test.Service.Get", RpcKind::kUnary,
                                       Idempotency::kIdempotent};
constexpr MethodInfo kNonIdempotentMethod{
    "test.Service.Create", RpcKind::kUnary, Idempotency::kNonIdempotent};

class RetryLoopTest : public ::testing::Test {
 protected:
  RetryLoopTest()
      : clock_(std::make_shared<FakeClock>()),
        sleeper_(std::make_shared<RecordingSleeper>(clock_)),
        client_(
            Options{}.set<ClockOption>(clock_).set<SleeperOption>(sleeper_)) {}

  // Runs a call whose attempts fail with `codes` in turn (the last repeats;
  // OK means success). Each attempt takes `attempt_duration` of fake time.
  absl::StatusOr<int> Run(const MethodInfo& method,
                          std::vector<absl::StatusCode> codes,
                          const Options& call = {},
                          nanoseconds attempt_duration = milliseconds(10)) {
    attempts_ = 0;
    return RetryLoop<int>(
        method, OptionsView(call, client_),
        [&](grpc::ClientContext& context) -> absl::StatusOr<int> {
          contexts_deadlines_.push_back(context.deadline());
          absl::StatusCode code =
              codes[std::min<size_t>(attempts_, codes.size() - 1)];
          ++attempts_;
          clock_->Advance(attempt_duration);
          if (code == absl::StatusCode::kOk) return 42;
          return absl::Status(code, "attempt " + std::to_string(attempts_));
        });
  }

  nanoseconds Elapsed(FakeClock::time_point start) const {
    return clock_->Now() - start;
  }

  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<RecordingSleeper> sleeper_;
  Options client_;
  int attempts_ = 0;
  std::vector<std::chrono::system_clock::time_point> contexts_deadlines_;
};

TEST_F(RetryLoopTest, SuccessOnFirstAttemptDoesNotWait) {
  absl::StatusOr<int> result = Run(kIdempotentMethod, {absl::StatusCode::kOk});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 42);
  EXPECT_EQ(attempts_, 1);
  EXPECT_TRUE(sleeper_->waits.empty());
}

TEST_F(RetryLoopTest, RetriesUnavailableUntilSuccess) {
  absl::StatusOr<int> result =
      Run(kIdempotentMethod,
          {absl::StatusCode::kUnavailable, absl::StatusCode::kUnavailable,
           absl::StatusCode::kUnavailable, absl::StatusCode::kOk});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(attempts_, 4);
  ASSERT_EQ(sleeper_->waits.size(), 3u);
  // The default backoff: 1 s, 2 s, 4 s, each plus up to 1 s of jitter.
  for (int n = 0; n < 3; ++n) {
    EXPECT_GE(sleeper_->waits[n], seconds(1 << n));
    EXPECT_LE(sleeper_->waits[n], seconds((1 << n) + 1));
  }
}

TEST_F(RetryLoopTest, OnlyUnavailableIsRetriedByDefault) {
  for (int raw = 1; raw <= 16; ++raw) {
    auto code = static_cast<absl::StatusCode>(raw);
    auto call =
        Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3));
    absl::StatusOr<int> result = Run(kIdempotentMethod, {code}, call);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), code);
    if (code == absl::StatusCode::kUnavailable) {
      EXPECT_EQ(attempts_, 4) << "UNAVAILABLE is retried";
      EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
                StopReason::kExhausted);
    } else {
      EXPECT_EQ(attempts_, 1) << "code " << raw << " must not be retried";
      EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
                StopReason::kPermanentError);
      EXPECT_THAT(result.status().message(), HasSubstr("not a retryable code"));
    }
  }
}

TEST_F(RetryLoopTest, DefaultPolicyGivesUpWithinThirtyMinutes) {
  const auto start = clock_->Now();
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kUnavailable}, {},
          milliseconds(100));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  // The original message is kept; the summary is appended.
  EXPECT_THAT(result.status().message(), HasSubstr("attempt "));
  EXPECT_THAT(result.status().message(), HasSubstr("time limit"));
  std::optional<RetrySummary> summary = GetRetrySummary(result.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(summary->attempts, attempts_);
  // The spec's formula gives the exact attempt count (14: waits of 1..256 s
  // plus jitter, then four of 5 min) and bounds the elapsed time; a shorter
  // limit (20 min: 12 attempts, < 1200 s) would fail here.
  testing::DefaultPolicyOutcome fastest =
      testing::SimulateDefaultPolicy(milliseconds(100), 0.0);
  testing::DefaultPolicyOutcome slowest =
      testing::SimulateDefaultPolicy(milliseconds(100), 1.0);
  ASSERT_EQ(fastest.attempts, slowest.attempts);
  ASSERT_EQ(fastest.attempts, 14);
  EXPECT_EQ(attempts_, fastest.attempts);
  EXPECT_GE(Elapsed(start), fastest.elapsed - milliseconds(1));
  EXPECT_LE(Elapsed(start), slowest.elapsed + milliseconds(1));
  EXPECT_LE(Elapsed(start), minutes(30));
  // No wait ever crossed the limit, and waits were capped at 5 minutes.
  nanoseconds waited{0};
  for (nanoseconds wait : sleeper_->waits) {
    EXPECT_LE(wait, minutes(5));
    waited += wait;
  }
  EXPECT_EQ(sleeper_->waits.size(), static_cast<size_t>(attempts_ - 1));
  EXPECT_EQ(waited + milliseconds(100) * attempts_, Elapsed(start));
}

TEST_F(RetryLoopTest, WaitThatWouldCrossTheLimitIsNotStarted) {
  auto call = Options{}
                  .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(10)))
                  .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                                .WithInitialDelay(seconds(1))
                                                .WithMaximumDelay(minutes(1))
                                                .WithMultiplier(2.0)
                                                .WithJitter(Jitter::None()));
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kUnavailable}, call,
          nanoseconds(0));
  // Waits 1, 2, 4 (t = 7 s); the next, 8 s, would end at 15 s > 10 s.
  EXPECT_EQ(attempts_, 4);
  EXPECT_EQ(sleeper_->waits,
            (std::vector<nanoseconds>{seconds(1), seconds(2), seconds(4)}));
  EXPECT_THAT(result.status().message(), HasSubstr("next wait (8s, backoff)"));
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kExhausted);
  EXPECT_EQ(GetRetrySummary(result.status())->elapsed, seconds(7));
}

// A wait that fits but wakes late (a loaded machine oversleeps) ends the
// call as a wait that would not fit: the last failure, not a
// DEADLINE_EXCEEDED that no attempt returned. CI's ASan run found it.
TEST_F(RetryLoopTest, WaitThatWakesPastTheLimitReturnsTheLastFailure) {
  class Oversleeper : public Sleeper {
   public:
    explicit Oversleeper(std::shared_ptr<FakeClock> clock)
        : clock_(std::move(clock)) {}
    void SleepFor(nanoseconds wait) override {
      clock_->Advance(wait + seconds(5));
    }

   private:
    std::shared_ptr<FakeClock> clock_;
  };
  for (const bool total_timeout : {false, true}) {
    SCOPED_TRACE(total_timeout ? "total timeout" : "time limit");
    Options call =
        Options{}
            .set<SleeperOption>(std::make_shared<Oversleeper>(clock_))
            .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                          .WithInitialDelay(seconds(1))
                                          .WithMaximumDelay(seconds(1))
                                          .WithMultiplier(2.0)
                                          .WithJitter(Jitter::None()));
    if (total_timeout) {
      call.set<TotalTimeoutOption>(seconds(3));
    } else {
      call.set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(3)));
    }
    absl::StatusOr<int> result =
        Run(kIdempotentMethod, {absl::StatusCode::kUnavailable}, call,
            nanoseconds(0));
    // The 1 s wait fits in 3 s; it wakes at 6 s.
    EXPECT_EQ(attempts_, 1);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable)
        << result.status();
    EXPECT_THAT(result.status().message(), HasSubstr("attempt 1"));
    EXPECT_THAT(result.status().message(), HasSubstr("while waiting to retry"));
    std::optional<RetrySummary> summary = GetRetrySummary(result.status());
    ASSERT_TRUE(summary.has_value());
    EXPECT_EQ(summary->stop_reason,
              total_timeout ? StopReason::kDeadline : StopReason::kExhausted);
    EXPECT_EQ(summary->attempts, 1);
  }
}

TEST_F(RetryLoopTest, NonIdempotentCallsAreNeverRetried) {
  absl::StatusOr<int> result =
      Run(kNonIdempotentMethod, {absl::StatusCode::kUnavailable});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(attempts_, 1);
  EXPECT_TRUE(sleeper_->waits.empty());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(result.status().message(),
              HasSubstr("attempt 1 [stubkit: not retried: test.Service.Create "
                        "is not idempotent; 1 attempt over 10ms]"));
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kNonIdempotent);
}

TEST_F(RetryLoopTest, PerCallIdempotencyOverridesTheMethod) {
  auto forced = Options{}.set<IdempotencyOption>(Idempotency::kIdempotent);
  EXPECT_TRUE(Run(kNonIdempotentMethod,
                  {absl::StatusCode::kUnavailable, absl::StatusCode::kOk},
                  forced)
                  .ok());
  EXPECT_EQ(attempts_, 2);

  auto not_safe = Options{}.set<IdempotencyOption>(Idempotency::kNonIdempotent);
  EXPECT_FALSE(Run(kIdempotentMethod,
                   {absl::StatusCode::kUnavailable, absl::StatusCode::kOk},
                   not_safe)
                   .ok());
  EXPECT_EQ(attempts_, 1);
}

TEST_F(RetryLoopTest, ClientIdempotencyMapOverridesTheProto) {
  client_.set<IdempotencyMapOption>(
      {{"test.Service.Create", Idempotency::kIdempotent},
       {"test.Service.Get", Idempotency::kNonIdempotent}});
  EXPECT_TRUE(Run(kNonIdempotentMethod,
                  {absl::StatusCode::kUnavailable, absl::StatusCode::kOk})
                  .ok());
  EXPECT_EQ(attempts_, 2);
  EXPECT_FALSE(Run(kIdempotentMethod,
                   {absl::StatusCode::kUnavailable, absl::StatusCode::kOk})
                   .ok());
  EXPECT_EQ(attempts_, 1);
  // A per-call option still beats the client's map.
  auto forced = Options{}.set<IdempotencyOption>(Idempotency::kIdempotent);
  EXPECT_TRUE(Run(kIdempotentMethod,
                  {absl::StatusCode::kUnavailable, absl::StatusCode::kOk},
                  forced)
                  .ok());
}

TEST_F(RetryLoopTest, PerCallOptionsBeatTheClients) {
  client_.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5));
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kUnavailable},
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_EQ(attempts_, 1);
  EXPECT_THAT(result.status().message(), HasSubstr("at most 0 retries"));
  // Without the per-call option the client's policy applies.
  Run(kIdempotentMethod, {absl::StatusCode::kUnavailable}).IgnoreError();
  EXPECT_EQ(attempts_, 6);
}

TEST_F(RetryLoopTest, ExtraRetryableCodesAreRetried) {
  auto call = Options{}.set<RetryPolicyOption>(
      RetryPolicy::LimitedErrorCount(5).WithRetryableCodes(
          {grpc::StatusCode::UNAVAILABLE,
           grpc::StatusCode::RESOURCE_EXHAUSTED}));
  EXPECT_TRUE(Run(kIdempotentMethod,
                  {absl::StatusCode::kResourceExhausted,
                   absl::StatusCode::kUnavailable, absl::StatusCode::kOk},
                  call)
                  .ok());
  EXPECT_EQ(attempts_, 3);
}

TEST_F(RetryLoopTest, InvalidOptionsFailBeforeAnyAttempt) {
  struct Case {
    Options options;
    const char* field;
  };
  Case cases[] = {
      {Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(-5))),
       "time_limit"},
      {Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(-1)),
       "max_failures"},
      {Options{}.set<RetryPolicyOption>(
           RetryPolicy::LimitedTime().WithRetryableCodes({})),
       "retryable_codes"},
      {Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                              .WithInitialDelay(seconds(1))
                                              .WithMaximumDelay(seconds(10))
                                              .WithMultiplier(0)),
       "multiplier"},
      {Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                              .WithInitialDelay(seconds(10))
                                              .WithMaximumDelay(seconds(1))
                                              .WithMultiplier(2.0)),
       "maximum_delay"},
      {Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                              .WithInitialDelay(seconds(-1))
                                              .WithMaximumDelay(seconds(1))
                                              .WithMultiplier(2.0)),
       "initial_delay"},
      {Options{}.set<AttemptTimeoutOption>(seconds(-1)),
       "AttemptTimeoutOption"},
      {Options{}.set<TotalTimeoutOption>(seconds(-1)), "TotalTimeoutOption"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<int> result =
        Run(kIdempotentMethod, {absl::StatusCode::kOk}, c.options);
    ASSERT_FALSE(result.ok()) << c.field;
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(result.status().message(), HasSubstr(c.field));
    EXPECT_THAT(result.status().message(), HasSubstr("nothing was sent"));
    EXPECT_EQ(attempts_, 0) << c.field;
    EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
              StopReason::kInvalidArgument);
  }
  // Invalid client options are reported the same way, on the first call.
  client_.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                       .WithInitialDelay(seconds(1))
                                       .WithMaximumDelay(seconds(10))
                                       .WithMultiplier(-0.9));
  absl::StatusOr<int> result = Run(kIdempotentMethod, {absl::StatusCode::kOk});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(attempts_, 0);
}

TEST_F(RetryLoopTest, ServerErrorDetailsSurvive) {
  const std::string details("\x08\x0e\x12\x04oops", 8);
  auto result = RetryLoop<int>(
      kIdempotentMethod,
      OptionsView(
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1)),
          client_),
      [&](grpc::ClientContext&) -> absl::StatusOr<int> {
        return FromGrpcStatus(
            grpc::Status(grpc::StatusCode::UNAVAILABLE, "down", details));
      });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(GetErrorDetails(result.status()), details);
  EXPECT_EQ(ToGrpcStatus(result.status()).error_details(), details);
}

TEST_F(RetryLoopTest, AttemptTimeoutSetsEachAttemptsDeadline) {
  auto call = Options{}.set<AttemptTimeoutOption>(seconds(2));
  const auto before = std::chrono::system_clock::now();
  Run(kIdempotentMethod, {absl::StatusCode::kOk}, call).IgnoreError();
  const auto after = std::chrono::system_clock::now();
  ASSERT_EQ(contexts_deadlines_.size(), 1u);
  EXPECT_GE(contexts_deadlines_[0], before + seconds(2) - milliseconds(1));
  EXPECT_LE(contexts_deadlines_[0], after + seconds(2));
}

TEST_F(RetryLoopTest, CountPolicyWithoutTimeoutsSetsNoDeadline) {
  auto call =
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2));
  Run(kIdempotentMethod, {absl::StatusCode::kOk}, call).IgnoreError();
  ASSERT_EQ(contexts_deadlines_.size(), 1u);
  EXPECT_GT(contexts_deadlines_[0],
            std::chrono::system_clock::now() + std::chrono::hours(24 * 365));
}

// Found by tests/fuzz/options_fuzzer: a time limit of a few centuries
// (valid: it is positive) overflowed system_clock::now() + remaining: signed
// overflow, undefined. The wrapped time was negative, which gRPC 1.51
// happens to read as "no deadline"; now stubkit says so itself. The UBSan
// builds (scripts/sanitize.sh, the fuzz corpus replay) catch a regression;
// this checks the outcome.
TEST_F(RetryLoopTest, CenturiesLongLimitIsNoDeadlineRatherThanAPastOne) {
  auto call = Options{}.set<RetryPolicyOption>(
      RetryPolicy::LimitedTime(std::chrono::hours(24 * 365 * 250)));
  Run(kIdempotentMethod, {absl::StatusCode::kOk}, call).IgnoreError();
  ASSERT_EQ(contexts_deadlines_.size(), 1u);
  EXPECT_GT(contexts_deadlines_[0],
            std::chrono::system_clock::now() + std::chrono::hours(24 * 365));
}

TEST_F(RetryLoopTest, LastAttemptDeadlineIsTruncatedToTheCallsEnd) {
  auto call = Options{}
                  .set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(30)))
                  .set<AttemptTimeoutOption>(minutes(10));
  const auto before = std::chrono::system_clock::now();
  Run(kIdempotentMethod, {absl::StatusCode::kOk}, call).IgnoreError();
  EXPECT_LE(contexts_deadlines_[0],
            std::chrono::system_clock::now() + seconds(30));
  EXPECT_GE(contexts_deadlines_[0], before + seconds(30) - milliseconds(1));
}

TEST_F(RetryLoopTest, AttemptThatRanOutOfItsOwnTimeIsRetried) {
  auto call = Options{}.set<AttemptTimeoutOption>(seconds(2));
  // Each attempt runs for its whole 2 s and gRPC reports DEADLINE_EXCEEDED.
  absl::StatusOr<int> result =
      Run(kIdempotentMethod,
          {absl::StatusCode::kDeadlineExceeded,
           absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kOk},
          call, seconds(2));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(attempts_, 3);
}

TEST_F(RetryLoopTest, AttemptTimeoutOnNonIdempotentCallIsNotRetried) {
  auto call = Options{}.set<AttemptTimeoutOption>(seconds(2));
  absl::StatusOr<int> result =
      Run(kNonIdempotentMethod, {absl::StatusCode::kDeadlineExceeded}, call,
          seconds(2));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kNonIdempotent);
}

TEST_F(RetryLoopTest, ServerDeadlineExceededIsPermanent) {
  auto call = Options{}.set<AttemptTimeoutOption>(seconds(2));
  // The server answered DEADLINE_EXCEEDED on its own after 10 ms.
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kDeadlineExceeded}, call,
          milliseconds(10));
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kPermanentError);
}

// The server enforces the deadline stubkit sends from its own clock and can
// report it a little early (CI saw it under ASan): within a tenth of the
// attempt's budget (2..50 ms) of the deadline, DEADLINE_EXCEEDED is the
// deadline's expiry; earlier, it is the server's own verdict.
TEST_F(RetryLoopTest, DeadlineExceededJustBeforeTheCallsEndIsTheDeadline) {
  auto call = Options{}.set<TotalTimeoutOption>(milliseconds(300));
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kDeadlineExceeded}, call,
          milliseconds(275));  // 25 ms early: within 30 ms
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kDeadline);
}

TEST_F(RetryLoopTest, DeadlineExceededWellBeforeTheCallsEndIsTheServers) {
  auto call = Options{}.set<TotalTimeoutOption>(milliseconds(300));
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kDeadlineExceeded}, call,
          milliseconds(265));  // 35 ms early: beyond 30 ms
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kPermanentError);
}

TEST_F(RetryLoopTest, DeadlineExceededToleranceIsAtMost50Ms) {
  auto call = Options{}.set<AttemptTimeoutOption>(seconds(2));
  // 60 ms before a 2 s attempt timeout: the server's, not retried.
  absl::StatusOr<int> early =
      Run(kIdempotentMethod, {absl::StatusCode::kDeadlineExceeded}, call,
          milliseconds(1940));
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(early.status())->stop_reason,
            StopReason::kPermanentError);
  // 40 ms before it: the attempt timed out, and is retried.
  absl::StatusOr<int> late =
      Run(kIdempotentMethod,
          {absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kOk}, call,
          milliseconds(1960));
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(attempts_, 2);
}

TEST_F(RetryLoopTest, TotalTimeoutStopsTheCallWithDeadlineReason) {
  auto call = Options{}
                  .set<TotalTimeoutOption>(seconds(5))
                  .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                                .WithInitialDelay(seconds(1))
                                                .WithMaximumDelay(minutes(1))
                                                .WithMultiplier(2.0)
                                                .WithJitter(Jitter::None()));
  const auto start = clock_->Now();
  absl::StatusOr<int> result = Run(
      kIdempotentMethod, {absl::StatusCode::kUnavailable}, call, seconds(0));
  EXPECT_EQ(attempts_, 3);  // waits 1 s and 2 s; 4 s more would pass 5 s
  EXPECT_LE(Elapsed(start), seconds(5));
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kDeadline);
  EXPECT_THAT(result.status().message(), HasSubstr("deadline"));
}

TEST_F(RetryLoopTest, CallDeadlineReachedDuringAttemptStops) {
  auto call = Options{}.set<TotalTimeoutOption>(seconds(3));
  // The attempt used up the whole call; gRPC reports DEADLINE_EXCEEDED.
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kDeadlineExceeded}, call,
          seconds(3));
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kDeadline);
}

TEST_F(RetryLoopTest, DeadlineInThePastStopsBeforeSending) {
  auto call = Options{}.set<DeadlineOption>(std::chrono::system_clock::now() -
                                            seconds(1));
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kOk}, call, seconds(0));
  EXPECT_EQ(attempts_, 0);  // a doomed gRPC call is never made
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  std::optional<RetrySummary> summary = GetRetrySummary(result.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kDeadline);
  EXPECT_EQ(summary->attempts, 0);
}

TEST_F(RetryLoopTest, TimeLimitStartsWithTheCallNotThePolicy) {
  // A policy built long before the call still gives the call its full time.
  client_.set<RetryPolicyOption>(RetryPolicy::LimitedTime(seconds(10)));
  client_.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                       .WithInitialDelay(seconds(1))
                                       .WithMaximumDelay(seconds(1))
                                       .WithMultiplier(1.0)
                                       .WithJitter(Jitter::None()));
  clock_->Advance(std::chrono::hours(5));
  absl::StatusOr<int> result =
      Run(kIdempotentMethod, {absl::StatusCode::kUnavailable}, {}, seconds(0));
  // Waits of 1 s at t = 0..8; the wait at t = 9 would end at the limit.
  EXPECT_EQ(attempts_, 10);
}

}  // namespace
}  // namespace stubkit
