// Copyright 2026 The stubkit Authors.
//
// Jitter (docs/options.md, the jitter table), for the n-th retry with base
// b = min(initial * multiplier^n, maximum):
//
//   Default()        min(initial * multiplier^n + U[0, initial], maximum)
//   Full()           U[0, b]
//   Proportional(f)  min(b * U[1 - f, 1 + f], maximum)
//   None()           b
//
// With initial = 200 ms the default's random part must stay within 200 ms
// (a fixed "0-1 s" would not), and each mode must really spread its values
// over its range, evenly, not only stay in bounds. The samples are random:
// the tolerances are several standard deviations wide.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/backoff_policy.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr int kSamples = 4000;

// Where samples fall in [low, high]: their extremes, mean and quartiles, as
// fractions of the range.
struct Spread {
  double min = 1, max = 0, mean = 0;
  std::array<double, 4> quartiles{};
};

Spread Measure(const std::vector<nanoseconds>& samples, nanoseconds low,
               nanoseconds high) {
  Spread s;
  const double range = static_cast<double>((high - low).count());
  for (nanoseconds d : samples) {
    const double x = static_cast<double>((d - low).count()) / range;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    s.mean += x / samples.size();
    s.quartiles[std::min(3, static_cast<int>(x * 4))] += 1.0 / samples.size();
  }
  return s;
}

// Uniform over the range: reaches both ends, centred, even quartiles (each
// 25 % +- 4 %; one standard deviation is 0.7 % at 4000 samples).
void ExpectUniform(const Spread& s, const std::string& what) {
  EXPECT_LT(s.min, 0.02) << what;
  EXPECT_GT(s.max, 0.98) << what;
  EXPECT_NEAR(s.mean, 0.5, 0.03) << what;
  for (double q : s.quartiles) EXPECT_NEAR(q, 0.25, 0.04) << what;
}

std::vector<nanoseconds> Sample(const ExponentialBackoffPolicy& policy,
                                int retry) {
  std::vector<nanoseconds> samples;
  for (int i = 0; i < kSamples; ++i) samples.push_back(policy.DelayFor(retry));
  return samples;
}

TEST(JitterTest, DefaultAddsUpToInitialNotASecond) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(milliseconds(200))
                                        .WithMaximumDelay(seconds(45))
                                        .WithMultiplier(2.0);
  ASSERT_TRUE(policy.status().ok());
  // Exact for a given draw: 200 ms * 2^n + u * 200 ms.
  EXPECT_EQ(policy.DelayFor(0, 0.0), milliseconds(200));
  EXPECT_EQ(policy.DelayFor(0, 0.5), milliseconds(300));
  EXPECT_EQ(policy.DelayFor(2, 0.25), milliseconds(850));
  EXPECT_EQ(policy.DelayFor(7, 0.5), milliseconds(25700));
  // 200 ms * 2^8 = 51.2 s: capped at the maximum, jitter included.
  EXPECT_EQ(policy.DelayFor(8, 0.0), seconds(45));
  EXPECT_EQ(policy.DelayFor(8, 0.9), seconds(45));
  for (int n = 0; n < 8; ++n) {
    const nanoseconds low = milliseconds(200) * (1 << n);
    const nanoseconds high = low + milliseconds(200);
    std::vector<nanoseconds> samples = Sample(policy, n);
    for (nanoseconds d : samples) {
      ASSERT_GE(d, low) << "retry " << n;
      ASSERT_LE(d, high) << "retry " << n;
    }
    ExpectUniform(Measure(samples, low, high),
                  "default jitter, retry " + std::to_string(n));
  }
}

TEST(JitterTest, DefaultWithTheDefaultInitialSpreadsOverOneSecond) {
  ExponentialBackoffPolicy policy;
  std::vector<nanoseconds> samples = Sample(policy, 2);
  ExpectUniform(Measure(samples, seconds(4), seconds(5)), "default policy");
}

TEST(JitterTest, FullSpreadsOverZeroToTheBase) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(milliseconds(200))
                                        .WithMaximumDelay(seconds(45))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::Full());
  ASSERT_TRUE(policy.status().ok());
  EXPECT_EQ(policy.DelayFor(3, 0.0), nanoseconds::zero());
  EXPECT_EQ(policy.DelayFor(3, 0.5), milliseconds(800));
  EXPECT_EQ(policy.DelayFor(20, 0.5), milliseconds(22500));
  for (int n : {0, 3, 8, 20}) {
    const nanoseconds base = std::min<nanoseconds>(
        milliseconds(200) * (1 << std::min(n, 10)), seconds(45));
    std::vector<nanoseconds> samples = Sample(policy, n);
    for (nanoseconds d : samples) {
      ASSERT_GE(d, nanoseconds::zero());
      ASSERT_LE(d, base);
    }
    ExpectUniform(Measure(samples, nanoseconds::zero(), base),
                  "full jitter, retry " + std::to_string(n));
  }
}

TEST(JitterTest, ProportionalSpreadsOverTheFraction) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(milliseconds(200))
                                        .WithMaximumDelay(seconds(45))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::Proportional(0.2));
  ASSERT_TRUE(policy.status().ok());
  EXPECT_EQ(policy.DelayFor(0, 0.0), milliseconds(160));
  EXPECT_EQ(policy.DelayFor(0, 0.5), milliseconds(200));
  for (int n : {0, 3, 7}) {
    const nanoseconds base = milliseconds(200) * (1 << n);
    const nanoseconds low = base * 8 / 10, high = base * 12 / 10;
    std::vector<nanoseconds> samples = Sample(policy, n);
    for (nanoseconds d : samples) {
      ASSERT_GE(d, low - nanoseconds(1)) << "retry " << n;
      ASSERT_LE(d, high + nanoseconds(1)) << "retry " << n;
    }
    ExpectUniform(Measure(samples, low, high),
                  "proportional jitter, retry " + std::to_string(n));
  }
  // Near the maximum, b * U[0.8, 1.2] is capped: never above 45 s, and
  // sometimes exactly 45 s.
  std::vector<nanoseconds> capped = Sample(policy, 8);  // b = 45 s
  int at_maximum = 0;
  for (nanoseconds d : capped) {
    ASSERT_GE(d, seconds(36) - nanoseconds(1));
    ASSERT_LE(d, seconds(45));
    at_maximum += d == seconds(45);
  }
  EXPECT_GT(at_maximum, kSamples / 3);
}

TEST(JitterTest, NoneDoesNotSpread) {
  ExponentialBackoffPolicy policy = ExponentialBackoffPolicy()
                                        .WithInitialDelay(milliseconds(200))
                                        .WithMaximumDelay(seconds(45))
                                        .WithMultiplier(2.0)
                                        .WithJitter(Jitter::None());
  for (int n : {0, 3, 8}) {
    std::set<int64_t> distinct;
    for (nanoseconds d : Sample(policy, n)) distinct.insert(d.count());
    EXPECT_EQ(distinct.size(), 1u);
  }
  EXPECT_EQ(policy.DelayFor(3), milliseconds(1600));
}

}  // namespace
}  // namespace stubkit
