// Copyright 2026 The stubkit Authors.
//
// The spellings renamed in 0.x (docs/options.md, "Renamed in 0.x")
// still compile and mean exactly what their new names mean. This is the one
// place that uses them: everything else uses the new names, so the build
// warns about none. Delete each case with its old spelling, before 1.0.
// It includes the old headers client_support.h and operation.h, and none of
// the new ones they forward to.

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "stubkit/async_streaming.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/client_support.h"
#include "stubkit/hedging.h"
#include "stubkit/operation.h"
#include "stubkit/retry_policy.h"
#include "stubkit/retry_throttle.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

static_assert(std::is_same_v<DoneCallback, StreamDoneCallback>);
// What moved to decorator.h and long_running_operation.h.
static_assert(std::is_same_v<DecoratorsOptionFor<int>::Type,
                             std::vector<StubDecoratorFactory<int>>>);
static_assert(PollingPolicy::kDefaultTimeLimit == minutes(30));

void ExpectSameRetryPolicy(const RetryPolicy& old_one,
                           const RetryPolicy& new_one) {
  EXPECT_EQ(old_one.ToString(), new_one.ToString());
  EXPECT_EQ(old_one.status(), new_one.status());
  EXPECT_EQ(old_one.max_retries(), new_one.max_failures());
  EXPECT_EQ(old_one.max_time(), new_one.time_limit());
  EXPECT_EQ(old_one.retryable_codes(), new_one.retryable_codes());
}

TEST(DeprecatedNamesTest, RetryPolicy) {
  EXPECT_EQ(RetryPolicy::kUnlimitedRetries, RetryPolicy::kUnlimitedFailures);
  EXPECT_EQ(RetryPolicy::kDefaultMaximumDuration,
            RetryPolicy::kDefaultTimeLimit);
  ExpectSameRetryPolicy(LimitedTimeRetryPolicy(), RetryPolicy::LimitedTime());
  for (nanoseconds limit : {nanoseconds(seconds(5)), nanoseconds(0),
                            nanoseconds(-1), nanoseconds::max()}) {
    ExpectSameRetryPolicy(LimitedTimeRetryPolicy(limit),
                          RetryPolicy::LimitedTime(limit));
  }
  for (int failures : {0, 3, -1, std::numeric_limits<int>::max()}) {
    ExpectSameRetryPolicy(LimitedErrorCountRetryPolicy(failures),
                          RetryPolicy::LimitedErrorCount(failures));
  }
}

void ExpectSameJitter(const Jitter& a, const Jitter& b) {
  EXPECT_EQ(a.kind(), b.kind());
  EXPECT_EQ(a.fraction(), b.fraction());
  EXPECT_EQ(a.ToString(), b.ToString());
}

TEST(DeprecatedNamesTest, Jitter) {
  ExpectSameJitter(Jitter::Default(), Jitter::UpToInitialDelay());
  EXPECT_EQ(Jitter::Kind::kDefault, Jitter::Kind::kUpToInitialDelay);
  // Log text keeps the old name.
  EXPECT_EQ(Jitter::UpToInitialDelay().ToString(), "default");
}

void ExpectSameBackoff(const ExponentialBackoffPolicy& old_one,
                       const ExponentialBackoffPolicy& new_one) {
  EXPECT_EQ(old_one.status(), new_one.status());
  EXPECT_EQ(old_one.initial_delay(), new_one.initial_delay());
  EXPECT_EQ(old_one.maximum_delay(), new_one.maximum_delay());
  // NaN is the one multiplier not equal to itself.
  EXPECT_TRUE(
      old_one.multiplier() == new_one.multiplier() ||
      (std::isnan(old_one.multiplier()) && std::isnan(new_one.multiplier())));
  ExpectSameJitter(old_one.jitter(), new_one.jitter());
  EXPECT_EQ(old_one.ToString(), new_one.ToString());
  for (int retry = 0; retry < 5; ++retry) {
    EXPECT_EQ(old_one.DelayFor(retry, 0.5), new_one.DelayFor(retry, 0.5));
  }
}

TEST(DeprecatedNamesTest, ExponentialBackoffPolicy) {
  struct Case {
    nanoseconds initial, maximum;
    double multiplier;
    Jitter jitter;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Case cases[] = {
      {seconds(1), minutes(5), 2.0, Jitter::UpToInitialDelay()},
      {milliseconds(200), seconds(45), 1.5, Jitter::Full()},
      {seconds(1), seconds(3), 2.0, Jitter::Grpc()},
      // Invalid: the same status, named field and message, either way.
      {seconds(0), minutes(5), 2.0, Jitter::None()},
      {seconds(-1), seconds(-10), 2.0, Jitter::None()},
      {seconds(10), seconds(1), 2.0, Jitter::None()},
      {seconds(1), seconds(10), nan, Jitter::None()},
      {seconds(1), seconds(10), 0, Jitter::None()},
      {seconds(1), seconds(10), 2.0, Jitter::Proportional(0)},
      {seconds(0), seconds(10), nan, Jitter::Proportional(2)},
  };
  for (const Case& c : cases) {
    const ExponentialBackoffPolicy old_one(c.initial, c.maximum, c.multiplier,
                                           c.jitter);
    ExpectSameBackoff(old_one, ExponentialBackoffPolicy()
                                   .WithInitialDelay(c.initial)
                                   .WithMaximumDelay(c.maximum)
                                   .WithMultiplier(c.multiplier)
                                   .WithJitter(c.jitter));
    // The order of the setters does not matter.
    ExpectSameBackoff(old_one, ExponentialBackoffPolicy()
                                   .WithJitter(c.jitter)
                                   .WithMultiplier(c.multiplier)
                                   .WithMaximumDelay(c.maximum)
                                   .WithInitialDelay(c.initial));
  }
  // The jitter's default argument.
  ExpectSameBackoff(
      ExponentialBackoffPolicy(milliseconds(200), seconds(45), 2.0),
      ExponentialBackoffPolicy()
          .WithInitialDelay(milliseconds(200))
          .WithMaximumDelay(seconds(45)));
}

void ExpectSameHedging(const HedgingPolicy& old_one,
                       const HedgingPolicy& new_one) {
  EXPECT_EQ(old_one.status(), new_one.status());
  EXPECT_EQ(old_one.max_attempts(), new_one.max_attempts());
  EXPECT_EQ(old_one.hedging_delay(), new_one.hedging_delay());
  EXPECT_EQ(old_one.non_fatal_codes(), new_one.non_fatal_codes());
  EXPECT_EQ(old_one.enabled(), new_one.enabled());
}

TEST(DeprecatedNamesTest, HedgingPolicy) {
  struct Case {
    int max_attempts;
    nanoseconds delay;
    StatusCodeSet codes;
  };
  const Case cases[] = {
      {3, milliseconds(50), {grpc::StatusCode::UNAVAILABLE}},
      {1, nanoseconds(0), {grpc::StatusCode::UNAVAILABLE}},
      {10, nanoseconds(0), {grpc::StatusCode::INTERNAL}},
      {0, milliseconds(10), {grpc::StatusCode::UNAVAILABLE}},
      {11, milliseconds(-1), {}},
      {2, milliseconds(-1), {grpc::StatusCode::UNAVAILABLE}},
      {2, milliseconds(10), {}},
      {2, milliseconds(10), {grpc::StatusCode::OK}},
  };
  for (const Case& c : cases) {
    const HedgingPolicy old_one(c.max_attempts, c.delay, c.codes);
    ExpectSameHedging(old_one, HedgingPolicy()
                                   .WithMaxAttempts(c.max_attempts)
                                   .WithHedgingDelay(c.delay)
                                   .WithNonFatalCodes(c.codes));
    ExpectSameHedging(old_one, HedgingPolicy()
                                   .WithNonFatalCodes(c.codes)
                                   .WithHedgingDelay(c.delay)
                                   .WithMaxAttempts(c.max_attempts));
  }
  // The codes' default argument.
  ExpectSameHedging(
      HedgingPolicy(3, milliseconds(50)),
      HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(milliseconds(50)));
}

void ExpectSameThrottle(const RetryThrottle& old_one,
                        const RetryThrottle& new_one) {
  EXPECT_EQ(old_one.status(), new_one.status());
  EXPECT_EQ(old_one.max_tokens(), new_one.max_tokens());
  EXPECT_EQ(old_one.token_ratio(), new_one.token_ratio());
  EXPECT_EQ(old_one.tokens(), new_one.tokens());
  EXPECT_EQ(old_one.waiting(), new_one.waiting_mode());
  EXPECT_EQ(old_one.wait_options().probe_interval,
            new_one.wait_options().probe_interval);
  EXPECT_EQ(old_one.wait_options().probes, new_one.wait_options().probes);
  EXPECT_EQ(old_one.wait_options().release_ratio,
            new_one.wait_options().release_ratio);
}

TEST(DeprecatedNamesTest, RetryThrottle) {
  const std::pair<double, double> buckets[] = {
      {10, 0.1}, {1000, 1}, {0, 0.1}, {-3, 0.1}, {1e9, 0.1}, {10, 0}, {10, 11}};
  for (const auto& [max_tokens, ratio] : buckets) {
    const auto config =
        RetryThrottle::Config().WithMaxTokens(max_tokens).WithTokenRatio(ratio);
    ExpectSameThrottle(RetryThrottle(max_tokens, ratio), RetryThrottle(config));
    RetryThrottle::WaitForRecovery waiting;
    waiting.probes = 3;
    ExpectSameThrottle(RetryThrottle(max_tokens, ratio, waiting),
                       RetryThrottle(config.WithWaitForRecovery(waiting)));
  }
  RetryThrottle::WaitForRecovery bad;
  bad.probe_interval = minutes(61);
  ExpectSameThrottle(RetryThrottle(10, 0.1, bad),
                     RetryThrottle(RetryThrottle::Config()
                                       .WithMaxTokens(10)
                                       .WithTokenRatio(0.1)
                                       .WithWaitForRecovery(bad)));
}

}  // namespace
}  // namespace stubkit
