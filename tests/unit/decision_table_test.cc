// Copyright 2026 The stubkit Authors.
//
// The order of the retry decision (docs/retry-semantics.md), one row at a
// time where two rules could both apply, sync and async, on a fake clock:
//
//   1. not a retryable code        -> kPermanentError
//   2. not idempotent              -> kNonIdempotent
//   3. the retry policy exhausted  -> kExhausted
//   4. the wait would pass the end -> kDeadline (or kExhausted when the
//                                     policy's own time limit came first)

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/retry_loop.h"

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
    return Options{}.set<BackoffPolicyOption>(
        ExponentialBackoffPolicy(seconds(1), seconds(1), 2.0, Jitter::None()));
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

}  // namespace
}  // namespace stubkit
