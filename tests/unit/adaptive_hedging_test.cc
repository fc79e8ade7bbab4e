// Copyright 2026 The stubkit Authors.
//
// The latency window and AdaptiveHedging on explicit times: percentiles
// against a sorted-vector model, window expiry, the fallback below
// min_samples, clamping, the refresh interval, and the hedging budget over
// every window. The hedged loop's use of them is in hedging_test.cc.

#include "stubkit/adaptive_hedging.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/internal/base/latency_window.h"

namespace stubkit {
namespace {

using internal::LatencyWindow;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using time_point = AdaptiveHedging::time_point;

time_point At(nanoseconds offset) { return time_point(hours(1000)) + offset; }

TEST(LatencyWindowTest, BucketsAreContiguousAndNarrow) {
  EXPECT_EQ(LatencyWindow::LowerBound(0), nanoseconds(0));
  for (int b = 0; b + 1 < LatencyWindow::kBuckets; ++b) {
    ASSERT_EQ(LatencyWindow::UpperBound(b), LatencyWindow::LowerBound(b + 1))
        << b;
    const nanoseconds lower = LatencyWindow::LowerBound(b);
    const nanoseconds width = LatencyWindow::UpperBound(b) - lower;
    // 1 us wide below 16 us, then at most 1/16 of the lower bound.
    EXPECT_LE(width, std::max<nanoseconds>(microseconds(1), lower / 16)) << b;
    EXPECT_EQ(LatencyWindow::BucketOf(lower), b);
    EXPECT_EQ(
        LatencyWindow::BucketOf(LatencyWindow::UpperBound(b) - nanoseconds(1)),
        b);
  }
  EXPECT_EQ(LatencyWindow::BucketOf(nanoseconds(-5)), 0);
  EXPECT_EQ(LatencyWindow::BucketOf(hours(100)), LatencyWindow::kBuckets - 1);
}

// The model: the ceil(q * n)-th smallest sample. The window's answer is the
// upper bound of that sample's bucket: never below it, at most 1/16 (or
// 1 us) above.
TEST(LatencyWindowTest, QuantilesMatchASortedVector) {
  std::mt19937_64 random(27);
  std::lognormal_distribution<double> body(std::log(2e6), 0.3);  // ~2 ms
  std::uniform_real_distribution<double> tail(100e6, 200e6);
  std::bernoulli_distribution in_tail(0.02);
  for (int n : {1, 7, 100, 1000, 20000}) {
    LatencyWindow window(seconds(10));
    std::vector<nanoseconds> model;
    for (int i = 0; i < n; ++i) {
      const nanoseconds latency(
          static_cast<int64_t>(in_tail(random) ? tail(random) : body(random)));
      window.Record(At(milliseconds(i % 1000)), latency);
      model.push_back(latency);
    }
    std::sort(model.begin(), model.end());
    const time_point now = At(seconds(1));
    EXPECT_EQ(window.Count(now), n);
    for (double q : {0.5, 0.9, 0.95, 0.98, 0.99, 0.999}) {
      const auto rank = std::max<int64_t>(
          1, static_cast<int64_t>(std::ceil(q * static_cast<double>(n))));
      const nanoseconds truth = model[rank - 1];
      const std::optional<nanoseconds> got = window.Quantile(now, q, 1);
      ASSERT_TRUE(got.has_value());
      EXPECT_GT(*got, truth) << "n=" << n << " q=" << q;
      EXPECT_LE(*got,
                truth + std::max<nanoseconds>(microseconds(1), truth / 16))
          << "n=" << n << " q=" << q;
    }
  }
}

TEST(LatencyWindowTest, SamplesLeaveTheWindow) {
  // 8 slices of 1 s: a sample counts for between 7 and 8 seconds.
  LatencyWindow window(seconds(8));
  window.Record(At(milliseconds(500)), milliseconds(100));
  window.Record(At(milliseconds(1500)), milliseconds(2));
  EXPECT_EQ(window.Count(At(milliseconds(7999))), 2);
  EXPECT_EQ(window.Count(At(seconds(8))), 1);  // the first slice expired
  EXPECT_EQ(
      window.Quantile(At(seconds(8)), 0.5, 1),
      LatencyWindow::UpperBound(LatencyWindow::BucketOf(milliseconds(2))));
  EXPECT_EQ(window.Count(At(seconds(9))), 0);
  // A slot reused by a later slice starts empty.
  window.Record(At(seconds(16)), milliseconds(3));
  EXPECT_EQ(window.Count(At(seconds(16))), 1);
  // A sample older than what its slot now counts is dropped.
  window.Record(At(milliseconds(8500)), milliseconds(50));
  EXPECT_EQ(window.Count(At(seconds(16))), 1);
}

TEST(LatencyWindowTest, TooFewSamplesGiveNoQuantile) {
  LatencyWindow window(seconds(10));
  EXPECT_FALSE(window.Quantile(At(seconds(0)), 0.95, 1).has_value());
  for (int i = 0; i < 9; ++i) window.Record(At(seconds(0)), milliseconds(2));
  EXPECT_FALSE(window.Quantile(At(seconds(0)), 0.95, 10).has_value());
  window.Record(At(seconds(0)), milliseconds(2));
  EXPECT_TRUE(window.Quantile(At(seconds(0)), 0.95, 10).has_value());
}

AdaptiveHedging::Config Small() {
  return AdaptiveHedging::Config()
      .WithPercentile(0.9)
      .WithWindow(seconds(8))
      .WithMinDelay(milliseconds(1))
      .WithMaxDelay(milliseconds(50))
      .WithMinSamples(10);
}

TEST(AdaptiveHedgingTest, FallsBackToTheFixedDelayUntilEnoughSamples) {
  AdaptiveHedging adaptive(Small());
  ASSERT_TRUE(adaptive.status().ok()) << adaptive.status();
  time_point now = At(seconds(0));
  EXPECT_EQ(adaptive.HedgeDelay(now, milliseconds(20)), milliseconds(20));
  // The fixed delay is clamped as the learned one is.
  EXPECT_EQ(adaptive.HedgeDelay(now, milliseconds(500)), milliseconds(50));
  EXPECT_EQ(adaptive.HedgeDelay(now, microseconds(10)), milliseconds(1));
  for (int i = 0; i < 10; ++i) adaptive.Record(now, milliseconds(4));
  // Recomputed at most every min(window / 8, 100 ms): not yet.
  EXPECT_EQ(adaptive.HedgeDelay(now, milliseconds(20)), milliseconds(20));
  now += milliseconds(100);
  const nanoseconds p90 =
      LatencyWindow::UpperBound(LatencyWindow::BucketOf(milliseconds(4)));
  EXPECT_EQ(adaptive.Percentile(now), p90);
  EXPECT_EQ(adaptive.HedgeDelay(now, milliseconds(20)), p90);
  // Once the samples leave the window: the fixed delay again.
  now += seconds(9);
  EXPECT_EQ(adaptive.HedgeDelay(now, milliseconds(20)), milliseconds(20));
}

TEST(AdaptiveHedgingTest, TheLearnedDelayIsClamped) {
  AdaptiveHedging adaptive(Small());
  time_point now = At(seconds(0));
  for (int i = 0; i < 100; ++i) adaptive.Record(now, seconds(2));
  EXPECT_EQ(adaptive.HedgeDelay(now, milliseconds(20)), milliseconds(50));
  now += seconds(9);
  for (int i = 0; i < 100; ++i) adaptive.Record(now, microseconds(20));
  now += milliseconds(100);
  EXPECT_EQ(adaptive.HedgeDelay(now, milliseconds(20)), milliseconds(1));
}

TEST(AdaptiveHedgingTest, DelayFollowsAShiftWithinTheWindow) {
  AdaptiveHedging adaptive(Small().WithMaxDelay(seconds(1)));
  time_point now = At(seconds(0));
  for (int s = 0; s < 8; ++s, now += seconds(1)) {
    for (int i = 0; i < 100; ++i) adaptive.Record(now, milliseconds(2));
  }
  const nanoseconds before = adaptive.HedgeDelay(now, milliseconds(20));
  EXPECT_LT(before, milliseconds(3));
  for (int s = 0; s < 8; ++s, now += seconds(1)) {
    for (int i = 0; i < 100; ++i) adaptive.Record(now, milliseconds(10));
  }
  const nanoseconds after = adaptive.HedgeDelay(now, milliseconds(20));
  EXPECT_GE(after, milliseconds(10));
  EXPECT_LT(after, milliseconds(11));
}

TEST(AdaptiveHedgingTest, DefaultsAreFinaglesShape) {
  const AdaptiveHedging adaptive;
  ASSERT_TRUE(adaptive.status().ok());
  EXPECT_EQ(adaptive.config().percentile(), 0.95);
  EXPECT_EQ(adaptive.config().max_extra_load(), 0.05);
  EXPECT_EQ(adaptive.budget().config().percent_can_retry(), 0.05);
  EXPECT_EQ(adaptive.budget().config().ttl(), seconds(1));
  EXPECT_EQ(adaptive.budget().config().min_retries_per_second(), 1);
}

// The budget over every window: after each hedge, the hedges in the
// budget's window ending then (its bucket of ttl / 10 and the 9 before),
// counted from the true events, stay within min rate * ttl + 5 % of the
// calls in it.
TEST(AdaptiveHedgingTest, TheBudgetIsNeverExceededOverAnyWindow) {
  AdaptiveHedging adaptive(AdaptiveHedging::Config()
                               .WithMaxExtraLoad(0.05)
                               .WithMinHedgesPerSecond(1)
                               .WithBudgetWindow(seconds(1)));
  RetryBudget& budget = adaptive.budget();
  std::mt19937_64 random(96);
  std::uniform_int_distribution<int> gap_us(0, 4000);
  std::bernoulli_distribution wants_hedge(0.5);    // far more than allowed
  std::deque<std::pair<time_point, bool>> events;  // (time, is hedge)
  time_point now = At(seconds(0));
  int64_t hedges = 0;
  int64_t refused = 0;
  for (int i = 0; i < 20000; ++i) {
    now += microseconds(gap_us(random));
    budget.Deposit(now);
    events.emplace_back(now, false);
    if (!wants_hedge(random)) continue;
    if (!budget.TryWithdraw(now)) {
      ++refused;
      continue;
    }
    ++hedges;
    events.emplace_back(now, true);
    // The budget's window at `now`: its bucket (100 ms) and the 9 before.
    const int64_t width = nanoseconds(milliseconds(100)).count();
    const int64_t t = now.time_since_epoch().count();
    const time_point start{nanoseconds((t / width - 9) * width)};
    while (events.front().first < start) events.pop_front();
    int64_t calls = 0;
    int64_t window_hedges = 0;
    for (const auto& [when, is_hedge] : events) {
      (is_hedge ? window_hedges : calls) += 1;
    }
    // 1/s over 1 s, plus 5 % of the calls.
    ASSERT_LE(window_hedges * 100, 100 + 5 * calls) << "at call " << i;
  }
  EXPECT_GT(hedges, 0);
  EXPECT_GT(refused, 0);
}

TEST(AdaptiveHedgingTest, BadConfigsSayWhy) {
  const std::vector<std::pair<AdaptiveHedging::Config, std::string>> cases = {
      {AdaptiveHedging::Config().WithPercentile(95), "percentile must be in"},
      {AdaptiveHedging::Config().WithPercentile(0.1), "percentile must be in"},
      {AdaptiveHedging::Config().WithWindow(milliseconds(1)),
       "window must be in [10ms, 1h]"},
      {AdaptiveHedging::Config().WithMinDelay(milliseconds(-1)),
       "min_delay must not be negative"},
      {AdaptiveHedging::Config()
           .WithMinDelay(milliseconds(10))
           .WithMaxDelay(milliseconds(5)),
       "max_delay must be in [min_delay"},
      {AdaptiveHedging::Config().WithMinSamples(0), "min_samples must be in"},
      {AdaptiveHedging::Config().WithMaxExtraLoad(0),
       "max_extra_load must be in (0, 1]"},
      {AdaptiveHedging::Config().WithMaxExtraLoad(5),
       "max_extra_load must be in (0, 1]"},
      {AdaptiveHedging::Config().WithMinHedgesPerSecond(-1),
       "min_hedges_per_second must be in"},
      {AdaptiveHedging::Config().WithBudgetWindow(seconds(0)),
       "budget_window must be in [1ms, 1h]"},
  };
  for (const auto& [config, says] : cases) {
    AdaptiveHedging adaptive(config);
    EXPECT_EQ(adaptive.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(adaptive.status().message()), HasSubstr(says));
    EXPECT_THAT(std::string(adaptive.status().message()),
                HasSubstr("AdaptiveHedging: "));
  }
}

}  // namespace
}  // namespace stubkit
