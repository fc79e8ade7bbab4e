// Copyright 2026 The stubkit Authors.
//
// RetryBudget on explicit times: the window in milliseconds, no sleeping.
// Its threads are in tests/reliability/runtime_concurrency_test.cc (run
// under TSan by scripts/sanitize.sh tsan).

#include "stubkit/retry_budget.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using time_point = RetryBudget::time_point;

// An arbitrary origin, so that nothing depends on the clock's epoch.
time_point At(nanoseconds offset) { return time_point(hours(1000)) + offset; }

// Withdraws at `now` until refused; returns how many went.
int Drain(RetryBudget& budget, time_point now) {
  int taken = 0;
  while (budget.TryWithdraw(now)) {
    if (++taken > 1'000'000) break;
  }
  return taken;
}

TEST(RetryBudgetTest, DefaultsAreFinaglesAndAQuietClientMayRetry) {
  const RetryBudget::Config config;
  EXPECT_EQ(config.ttl(), seconds(10));
  EXPECT_EQ(config.min_retries_per_second(), 10);
  EXPECT_EQ(config.percent_can_retry(), 0.2);
  RetryBudget budget;
  ASSERT_TRUE(budget.status().ok());
  // No request yet: the reserve, 10/s over 10 s.
  EXPECT_TRUE(budget.CanWithdraw(At(seconds(0))));
  EXPECT_EQ(Drain(budget, At(seconds(0))), 100);
  EXPECT_FALSE(budget.CanWithdraw(At(seconds(0))));
  EXPECT_EQ(budget.retries(At(seconds(0))), 100);
}

TEST(RetryBudgetTest, AShareOfTheRequestsOnTopOfTheReserve) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(seconds(1))
                         .WithMinRetriesPerSecond(3)
                         .WithPercentCanRetry(0.5));
  for (int i = 0; i < 10; ++i) budget.Deposit(At(milliseconds(i)));
  EXPECT_EQ(budget.requests(At(milliseconds(20))), 10);
  // 3/s * 1 s + 50 % of 10.
  EXPECT_EQ(Drain(budget, At(milliseconds(20))), 8);
  // Two more requests make room for one more retry.
  budget.Deposit(At(milliseconds(30)));
  EXPECT_FALSE(budget.CanWithdraw(At(milliseconds(30))));
  budget.Deposit(At(milliseconds(30)));
  EXPECT_TRUE(budget.CanWithdraw(At(milliseconds(30))));
  EXPECT_EQ(Drain(budget, At(milliseconds(30))), 1);
}

TEST(RetryBudgetTest, PercentAloneAndReserveAlone) {
  RetryBudget share(RetryBudget::Config()
                        .WithTtl(milliseconds(100))
                        .WithMinRetriesPerSecond(0)
                        .WithPercentCanRetry(0.2));
  EXPECT_FALSE(share.CanWithdraw(At(milliseconds(0))));  // nothing sent yet
  for (int i = 0; i < 14; ++i) share.Deposit(At(milliseconds(1)));
  EXPECT_EQ(Drain(share, At(milliseconds(2))), 2);  // 20 % of 14 is 2.8
  share.Deposit(At(milliseconds(3)));
  EXPECT_EQ(Drain(share, At(milliseconds(3))), 1);  // of 15, 3

  // 2.5/s over 2 s: 5 retries, however many requests.
  RetryBudget reserve(RetryBudget::Config()
                          .WithTtl(seconds(2))
                          .WithMinRetriesPerSecond(2.5)
                          .WithPercentCanRetry(0));
  for (int i = 0; i < 1000; ++i) reserve.Deposit(At(milliseconds(1)));
  EXPECT_EQ(Drain(reserve, At(milliseconds(1))), 5);
}

TEST(RetryBudgetTest, CanWithdrawTakesNothing) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(100))
                         .WithMinRetriesPerSecond(10));  // 1 retry
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(budget.CanWithdraw(At({})));
  EXPECT_EQ(budget.retries(At({})), 0);
  EXPECT_TRUE(budget.TryWithdraw(At({})));
  EXPECT_FALSE(budget.CanWithdraw(At({})));
  EXPECT_FALSE(budget.TryWithdraw(At({})));
}

// ttl 100 ms: ten buckets of 10 ms. The window at t holds the bucket of t
// and the nine before it.
TEST(RetryBudgetTest, TheWindowSlidesBucketByBucket) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(100))
                         .WithMinRetriesPerSecond(0)
                         .WithPercentCanRetry(0.5));
  for (int i = 0; i < 10; ++i) budget.Deposit(At(milliseconds(5)));
  EXPECT_EQ(Drain(budget, At(milliseconds(5))), 5);
  // Still in the window at 99.999 ms: nothing more.
  EXPECT_EQ(budget.requests(At(milliseconds(100) - nanoseconds(1))), 10);
  EXPECT_FALSE(budget.CanWithdraw(At(milliseconds(100) - nanoseconds(1))));
  // At 100 ms the bucket [0, 10 ms) leaves, its requests and retries alike.
  EXPECT_EQ(budget.requests(At(milliseconds(100))), 0);
  EXPECT_EQ(budget.retries(At(milliseconds(100))), 0);
  EXPECT_FALSE(budget.CanWithdraw(At(milliseconds(100))));
  for (int i = 0; i < 2; ++i) budget.Deposit(At(milliseconds(100)));
  EXPECT_EQ(Drain(budget, At(milliseconds(100))), 1);
}

// The bucketing's tolerance: a request made late in its bucket leaves the
// window when that bucket does, after ttl - ttl / kBuckets at the least.
TEST(RetryBudgetTest, ABucketLeavesWholeSoTheWindowIsAtLeastNineTenths) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(100))
                         .WithMinRetriesPerSecond(0)
                         .WithPercentCanRetry(1));
  budget.Deposit(At(milliseconds(9)));
  EXPECT_EQ(budget.requests(At(milliseconds(99))), 1);
  EXPECT_EQ(budget.requests(At(milliseconds(100))), 0);  // 91 ms later
}

TEST(RetryBudgetTest, RetriesLeaveTogetherWithTheRequestsOfTheirTime) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(100))
                         .WithMinRetriesPerSecond(0)
                         .WithPercentCanRetry(0.5));
  for (int i = 0; i < 10; ++i) budget.Deposit(At(milliseconds(0)));
  EXPECT_EQ(Drain(budget, At(milliseconds(0))), 5);
  for (int i = 0; i < 10; ++i) budget.Deposit(At(milliseconds(50)));
  // 20 requests, 5 retries: 5 more.
  EXPECT_EQ(Drain(budget, At(milliseconds(60))), 5);
  // The first bucket leaves: 10 requests, the 5 later retries.
  EXPECT_EQ(budget.requests(At(milliseconds(100))), 10);
  EXPECT_EQ(budget.retries(At(milliseconds(100))), 5);
  EXPECT_FALSE(budget.CanWithdraw(At(milliseconds(100))));
  // Then the second: nothing left but what comes.
  EXPECT_EQ(budget.requests(At(milliseconds(150))), 0);
  EXPECT_EQ(budget.retries(At(milliseconds(160))), 0);
}

TEST(RetryBudgetTest, AQuietPeriodForgetsEverything) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(seconds(10))
                         .WithMinRetriesPerSecond(1)
                         .WithPercentCanRetry(0.2));
  for (int i = 0; i < 100; ++i) budget.Deposit(At(seconds(1)));
  EXPECT_EQ(Drain(budget, At(seconds(1))), 30);
  // Years later, in the same slots: nothing of it counts.
  const time_point later = At(seconds(1) + hours(24 * 365 * 3));
  EXPECT_EQ(budget.requests(later), 0);
  EXPECT_EQ(budget.retries(later), 0);
  EXPECT_EQ(Drain(budget, later), 10);
}

TEST(RetryBudgetTest, TimesBeforeTheClocksEpoch) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(10))
                         .WithMinRetriesPerSecond(0)
                         .WithPercentCanRetry(1));
  const time_point before(-milliseconds(1) - microseconds(500));
  budget.Deposit(before);
  EXPECT_EQ(budget.requests(time_point(-microseconds(1))), 1);
  // [-1.5 ms, 0) is in buckets -2 and -1 of 1 ms; -2 leaves at 8 ms.
  EXPECT_EQ(budget.requests(time_point(milliseconds(8) - nanoseconds(1))), 1);
  EXPECT_EQ(budget.requests(time_point(milliseconds(8))), 0);
  EXPECT_EQ(Drain(budget, before), 1);
}

// A fresh budget counts from its first reading, whatever the clock says:
// the steady clock since boot, a fake one at zero or before it, or an epoch
// beyond 2^39 buckets (with 100 us buckets, 1.7 years of uptime).
TEST(RetryBudgetTest, AFreshBudgetCountsAtAnyReading) {
  const time_point readings[] = {
      time_point(), time_point(-nanoseconds(1)),
      time_point(microseconds(100) * ((int64_t{1} << 39) + 5)),
      time_point(hours(24 * 365 * 200)), std::chrono::steady_clock::now()};
  for (const time_point now : readings) {
    SCOPED_TRACE(now.time_since_epoch().count());
    RetryBudget budget(RetryBudget::Config()
                           .WithTtl(milliseconds(1))
                           .WithMinRetriesPerSecond(0)
                           .WithPercentCanRetry(1));
    budget.Deposit(now);
    EXPECT_EQ(budget.requests(now), 1);
    EXPECT_EQ(Drain(budget, now), 1);
  }
}

// Calls on several threads read the clock a moment apart: a withdrawal
// whose clock reads earlier than the last one counts at the last one's
// time; a request older than a whole window behind its slot is dropped.
TEST(RetryBudgetTest, ClockReadsOutOfOrder) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(100))
                         .WithMinRetriesPerSecond(0)
                         .WithPercentCanRetry(1));
  budget.Deposit(At(milliseconds(95)));
  ASSERT_TRUE(budget.TryWithdraw(At(milliseconds(95))));
  budget.Deposit(At(milliseconds(195)));  // reuses the slot of 95 ms
  budget.Deposit(At(milliseconds(95)));   // a late arrival: out of window
  EXPECT_EQ(budget.requests(At(milliseconds(195))), 1);
  ASSERT_TRUE(budget.TryWithdraw(At(milliseconds(195))));
  // A withdrawal read at 96 ms counts at 195 ms, where nothing is left.
  EXPECT_FALSE(budget.TryWithdraw(At(milliseconds(96))));
  EXPECT_EQ(budget.retries(At(milliseconds(195))), 1);
}

TEST(RetryBudgetTest, ABucketsCountSaturatesInsteadOfWrapping) {
  RetryBudget budget(RetryBudget::Config()
                         .WithTtl(milliseconds(100))
                         .WithMinRetriesPerSecond(0)
                         .WithPercentCanRetry(1));
  constexpr int64_t kMax = (int64_t{1} << 24) - 1;
  for (int64_t i = 0; i < kMax + 5; ++i) budget.Deposit(At({}));
  EXPECT_EQ(budget.requests(At({})), kMax);
  EXPECT_TRUE(budget.CanWithdraw(At({})));
}

TEST(RetryBudgetTest, InvalidConfigsSayWhichValue) {
  struct Case {
    RetryBudget::Config config;
    const char* message;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const RetryBudget::Config base;
  const Case cases[] = {
      {base.WithTtl(nanoseconds(0)), "ttl must be in [1ms, 1h], got 0"},
      {base.WithTtl(-seconds(1)), "ttl must be in [1ms, 1h]"},
      {base.WithTtl(microseconds(999)), "ttl must be in [1ms, 1h]"},
      {base.WithTtl(hours(1) + nanoseconds(1)), "ttl must be in [1ms, 1h]"},
      {base.WithMinRetriesPerSecond(-1),
       "min_retries_per_second must be in [0, 1e6], got -1"},
      {base.WithMinRetriesPerSecond(nan), "min_retries_per_second"},
      {base.WithMinRetriesPerSecond(2e6), "min_retries_per_second"},
      {base.WithPercentCanRetry(-0.1),
       "percent_can_retry must be in [0, 1] (a fraction: 0.2 is 20%), got "
       "-0.1"},
      {base.WithPercentCanRetry(1.5), "percent_can_retry"},
      {base.WithPercentCanRetry(nan), "percent_can_retry"},
      {base.WithPercentCanRetry(20), "percent_can_retry"},
      {base.WithMinRetriesPerSecond(0).WithPercentCanRetry(0), "both 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    RetryBudget budget(c.config);
    EXPECT_EQ(budget.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(budget.status().message(), HasSubstr("RetryBudget: "));
    EXPECT_THAT(budget.status().message(), HasSubstr(c.message));
    // Used anyway, it admits nothing.
    budget.Deposit(At({}));
    EXPECT_FALSE(budget.CanWithdraw(At({})));
    EXPECT_FALSE(budget.TryWithdraw(At({})));
  }
  // The bounds themselves are valid.
  EXPECT_TRUE(RetryBudget(base.WithTtl(milliseconds(1))).status().ok());
  EXPECT_TRUE(RetryBudget(base.WithTtl(hours(1))).status().ok());
  EXPECT_TRUE(RetryBudget(base.WithMinRetriesPerSecond(0)).status().ok());
  EXPECT_TRUE(RetryBudget(base.WithPercentCanRetry(1)).status().ok());
  EXPECT_TRUE(RetryBudget(base.WithPercentCanRetry(0)).status().ok());
}

}  // namespace
}  // namespace stubkit
