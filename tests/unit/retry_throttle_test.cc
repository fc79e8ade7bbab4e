// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_throttle.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace {

using ::testing::HasSubstr;

TEST(RetryThrottleTest, FollowsGrpcTokenBucketSemantics) {
  RetryThrottle throttle(
      RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.5));
  ASSERT_TRUE(throttle.status().ok());
  EXPECT_EQ(throttle.tokens(), 10);
  // 10 -> 6: retries allowed while tokens > 5.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(throttle.OnRetryableFailure()) << i;
  EXPECT_FALSE(throttle.OnRetryableFailure());  // 5: not above half
  EXPECT_FALSE(throttle.RetryAllowed());
  EXPECT_EQ(throttle.tokens(), 5);
  throttle.OnSuccess();  // 5.5
  EXPECT_TRUE(throttle.RetryAllowed());
  for (int i = 0; i < 100; ++i) throttle.OnRetryableFailure();
  EXPECT_EQ(throttle.tokens(), 0);  // never below zero
  for (int i = 0; i < 100; ++i) throttle.OnSuccess();
  EXPECT_EQ(throttle.tokens(), 10);  // never above the maximum
}

TEST(RetryThrottleTest, InvalidParametersAreReported) {
  EXPECT_THAT(RetryThrottle(
                  RetryThrottle::Config().WithMaxTokens(0).WithTokenRatio(0.1))
                  .status()
                  .message(),
              HasSubstr("max_tokens"));
  EXPECT_THAT(RetryThrottle(
                  RetryThrottle::Config().WithMaxTokens(-3).WithTokenRatio(0.1))
                  .status()
                  .message(),
              HasSubstr("max_tokens"));
  EXPECT_THAT(
      RetryThrottle(
          RetryThrottle::Config().WithMaxTokens(5000).WithTokenRatio(0.1))
          .status()
          .message(),
      HasSubstr("max_tokens"));
  EXPECT_THAT(
      RetryThrottle(RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0))
          .status()
          .message(),
      HasSubstr("token_ratio"));
  EXPECT_THAT(RetryThrottle(
                  RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(11))
                  .status()
                  .message(),
              HasSubstr("token_ratio"));
}

TEST(RetryThrottleTest, ConcurrentUpdatesLoseNothing) {
  RetryThrottle throttle(
      RetryThrottle::Config().WithMaxTokens(1000).WithTokenRatio(1));
  for (int i = 0; i < 500; ++i) throttle.OnRetryableFailure();  // 500 left
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        throttle.OnRetryableFailure();
        throttle.OnSuccess();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(throttle.tokens(), 500);
}

}  // namespace
}  // namespace stubkit
