// Copyright 2026 The stubkit Authors.

#include "stubkit/backoff_policy.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/internal/base/process_random.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr int kSamples = 2000;

TEST(BackoffPolicyTest, DefaultSequenceIsTruncatedExponentialWithJitter) {
  ExponentialBackoffPolicy policy;
  ASSERT_TRUE(policy.status().ok());
  for (int n = 0; n < 20; ++n) {
    const nanoseconds low =
        std::min<nanoseconds>(seconds(1) * (int64_t{1} << n), minutes(5));
    const nanoseconds high = std::min<nanoseconds>(
        seconds(1) * (int64_t{1} << n) + seconds(1), minutes(5));
    nanoseconds seen_min = nanoseconds::max();
    nanoseconds seen_max = nanoseconds::min();
    for (int i = 0; i < kSamples; ++i) {
      nanoseconds delay = policy.DelayFor(n);
      ASSERT_GE(delay, low) << "retry " << n;
      ASSERT_LE(delay, high) << "retry " << n;
      seen_min = std::min(seen_min, delay);
      seen_max = std::max(seen_max, delay);
    }
    if (low < minutes(5) && high < minutes(5)) {
      // The jitter really spreads the waits across its 1 s range.
      EXPECT_LT(seen_min - low, milliseconds(50)) << "retry " << n;
      EXPECT_GT(seen_max - low, milliseconds(950)) << "retry " << n;
    }
  }
}

TEST(BackoffPolicyTest, DefaultJitterIsExactForAGivenDraw) {
  ExponentialBackoffPolicy policy;
  EXPECT_EQ(policy.DelayFor(0, 0.0), seconds(1));
  EXPECT_EQ(policy.DelayFor(0, 0.5), milliseconds(1500));
  EXPECT_EQ(policy.DelayFor(3, 0.25), milliseconds(8250));
  EXPECT_EQ(policy.DelayFor(8, 0.0), seconds(256));
  EXPECT_EQ(policy.DelayFor(8, 0.5), milliseconds(256500));
  EXPECT_EQ(policy.DelayFor(9, 0.0), minutes(5));
  // Huge retry counts saturate instead of overflowing.
  EXPECT_EQ(policy.DelayFor(100000, 0.7), minutes(5));
  EXPECT_EQ(policy.DelayFor(std::numeric_limits<int>::max(), 0.7), minutes(5));
}

TEST(BackoffPolicyTest, NoJitterIsDeterministic) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(milliseconds(200))
                                        .WithMaximumDelay(seconds(45))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::None());
  ASSERT_TRUE(policy.status().ok());
  EXPECT_EQ(policy.DelayFor(0), milliseconds(200));
  EXPECT_EQ(policy.DelayFor(1), milliseconds(400));
  EXPECT_EQ(policy.DelayFor(4), milliseconds(3200));
  EXPECT_EQ(policy.DelayFor(10), seconds(45));
}

TEST(BackoffPolicyTest, FullJitterStaysWithinTheExponentialBound) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(seconds(1))
                                        .WithMaximumDelay(minutes(5))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::Full());
  for (int n = 0; n < 12; ++n) {
    const nanoseconds bound =
        std::min<nanoseconds>(seconds(1) * (int64_t{1} << n), minutes(5));
    nanoseconds seen_min = nanoseconds::max();
    for (int i = 0; i < kSamples; ++i) {
      nanoseconds delay = policy.DelayFor(n);
      ASSERT_GE(delay, nanoseconds::zero());
      ASSERT_LE(delay, bound);
      seen_min = std::min(seen_min, delay);
    }
    EXPECT_LT(seen_min, bound / 10) << "full jitter reaches near zero";
  }
}

TEST(BackoffPolicyTest, ProportionalJitterStaysWithinTheFraction) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(seconds(1))
                                        .WithMaximumDelay(minutes(5))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::Proportional(0.2));
  ASSERT_TRUE(policy.status().ok());
  for (int n = 0; n < 12; ++n) {
    const double base = std::min<double>(1e9 * std::pow(2.0, n), 300e9);
    for (int i = 0; i < kSamples; ++i) {
      double delay = static_cast<double>(policy.DelayFor(n).count());
      ASSERT_GE(delay, base * 0.8 - 1) << "retry " << n;
      ASSERT_LE(delay, std::min(base * 1.2, 300e9) + 1) << "retry " << n;
    }
  }
}

TEST(BackoffPolicyTest, DrawsDifferAcrossCalls) {
  ExponentialBackoffPolicy policy;
  std::set<int64_t> distinct;
  for (int i = 0; i < 100; ++i) distinct.insert(policy.DelayFor(0).count());
  EXPECT_GT(distinct.size(), 90u);
}

TEST(BackoffPolicyTest, InvalidArgumentsNameTheField) {
  struct Case {
    ExponentialBackoffPolicy policy;
    const char* field;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Case cases[] = {
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(-1))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(2.0),
       "initial_delay"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(0))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(2.0),
       "initial_delay"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(10))
           .WithMaximumDelay(seconds(1))
           .WithMultiplier(2.0),
       "maximum_delay"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(1))
           .WithMaximumDelay(seconds(-10))
           .WithMultiplier(2.0),
       "maximum_delay"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(1))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(0),
       "multiplier"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(1))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(-2),
       "multiplier"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(1))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(nan),
       "multiplier"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(1))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(inf),
       "multiplier"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(1))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(2.0)
           .WithJitter(Jitter::Proportional(0)),
       "fraction"},
      {ExponentialBackoffPolicy()
           .WithInitialDelay(seconds(1))
           .WithMaximumDelay(seconds(10))
           .WithMultiplier(2.0)
           .WithJitter(Jitter::Proportional(1.5)),
       "fraction"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.policy.status().code(), absl::StatusCode::kInvalidArgument)
        << c.field;
    EXPECT_THAT(c.policy.status().message(), HasSubstr(c.field));
    // An invalid policy never produces a wait.
    EXPECT_EQ(c.policy.DelayFor(0), nanoseconds::zero());
  }
  // Equal initial and maximum, and a multiplier of exactly 1, are fine.
  EXPECT_TRUE(ExponentialBackoffPolicy()
                  .WithInitialDelay(seconds(1))
                  .WithMaximumDelay(seconds(1))
                  .WithMultiplier(1.0)
                  .status()
                  .ok());
}

// gRFC A6 allows a multiplier in (0, 1): the waits shrink.
TEST(ExponentialBackoffPolicyTest, MultiplierBelowOneShrinksTheWaits) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(seconds(8))
                                        .WithMaximumDelay(seconds(10))
                                        .WithMultiplier(0.5)
                                        .WithJitter(Jitter::None());
  ASSERT_TRUE(policy.status().ok()) << policy.status();
  EXPECT_EQ(policy.DelayFor(0), seconds(8));
  EXPECT_EQ(policy.DelayFor(1), seconds(4));
  EXPECT_EQ(policy.DelayFor(3), seconds(1));
}

// Jitter::Grpc(): gRPC C++ 1.51's BackOff, for imported service configs.
TEST(ExponentialBackoffPolicyTest, GrpcJitter) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(seconds(1))
                                        .WithMaximumDelay(seconds(3))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::Grpc());
  // The first retry waits exactly the initial backoff, whatever the draw.
  EXPECT_EQ(policy.DelayFor(0, 0.0), seconds(1));
  EXPECT_EQ(policy.DelayFor(0, 0.99), seconds(1));
  // Then the capped exponential, times U[0.8, 1.2], not capped again.
  EXPECT_EQ(policy.DelayFor(1, 0.0), milliseconds(1600));
  EXPECT_EQ(policy.DelayFor(1, 0.5), seconds(2));
  EXPECT_EQ(policy.DelayFor(5, 0.0), milliseconds(2400));
  EXPECT_EQ(policy.DelayFor(5, 1.0), milliseconds(3600));
  EXPECT_EQ(Jitter::Grpc().ToString(), "grpc");
}

TEST(BackoffPolicyTest, ProcessUniformIsInUnitInterval) {
  for (int i = 0; i < 10000; ++i) {
    double u = internal::ProcessUniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace stubkit

namespace stubkit {
namespace {

// Found by tests/fuzz/options_fuzzer: with a maximum near nanoseconds::max()
// the capped delay, as a double, rounded up past int64's range, and the
// conversion back was undefined (in practice a negative wait).
TEST(BackoffPolicyTest, MaximumNearTheLimitOfNanosecondsIsExact) {
  ExponentialBackoffPolicy policy =
      ExponentialBackoffPolicy()
          .WithInitialDelay(std::chrono::seconds(1))
          .WithMaximumDelay(std::chrono::nanoseconds::max())
          .WithMultiplier(10.0)
          .WithJitter(Jitter::None());
  ASSERT_TRUE(policy.status().ok());
  EXPECT_EQ(policy.DelayFor(0, 0.0), std::chrono::seconds(1));
  EXPECT_EQ(policy.DelayFor(100, 0.0), std::chrono::nanoseconds::max());
  ExponentialBackoffPolicy full =
      ExponentialBackoffPolicy()
          .WithInitialDelay(std::chrono::seconds(1))
          .WithMaximumDelay(std::chrono::nanoseconds::max())
          .WithMultiplier(10.0)
          .WithJitter(Jitter::Full());
  EXPECT_GE(full.DelayFor(100, 0.999999), std::chrono::nanoseconds::zero());
  EXPECT_LE(full.DelayFor(100, 0.999999), std::chrono::nanoseconds::max());
}

// The explainer's bands come from RangeFor: every drawn wait lies in them,
// and the extremes are reached.
TEST(BackoffPolicyTest, RangeForHoldsEveryDraw) {
  const auto base = ExponentialBackoffPolicy()
                        .WithInitialDelay(std::chrono::milliseconds(100))
                        .WithMaximumDelay(std::chrono::seconds(3))
                        .WithMultiplier(1.7);
  for (Jitter jitter :
       {Jitter::UpToInitialDelay(), Jitter::Full(), Jitter::Proportional(0.3),
        Jitter::None(), Jitter::Grpc()}) {
    const auto policy = base.WithJitter(jitter);
    for (int retry = 0; retry < 12; ++retry) {
      const auto range = policy.RangeFor(retry);
      EXPECT_LE(range.shortest, range.median) << jitter.ToString();
      EXPECT_LE(range.median, range.longest) << jitter.ToString();
      EXPECT_EQ(range.shortest, policy.DelayFor(retry, 0.0));
      EXPECT_GE(range.longest, policy.DelayFor(retry, 0.999999999));
      EXPECT_LE(range.longest - policy.DelayFor(retry, 0.999999999),
                nanoseconds(10));
      for (int i = 0; i < 200; ++i) {
        const auto wait = policy.DelayFor(retry);
        EXPECT_GE(wait, range.shortest) << jitter.ToString() << " " << retry;
        EXPECT_LE(wait, range.longest) << jitter.ToString() << " " << retry;
      }
    }
  }
}

}  // namespace
}  // namespace stubkit
