// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_policy.h"

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr grpc::StatusCode kAllCodes[] = {
    grpc::StatusCode::OK,
    grpc::StatusCode::CANCELLED,
    grpc::StatusCode::UNKNOWN,
    grpc::StatusCode::INVALID_ARGUMENT,
    grpc::StatusCode::DEADLINE_EXCEEDED,
    grpc::StatusCode::NOT_FOUND,
    grpc::StatusCode::ALREADY_EXISTS,
    grpc::StatusCode::PERMISSION_DENIED,
    grpc::StatusCode::RESOURCE_EXHAUSTED,
    grpc::StatusCode::FAILED_PRECONDITION,
    grpc::StatusCode::ABORTED,
    grpc::StatusCode::OUT_OF_RANGE,
    grpc::StatusCode::UNIMPLEMENTED,
    grpc::StatusCode::INTERNAL,
    grpc::StatusCode::UNAVAILABLE,
    grpc::StatusCode::DATA_LOSS,
    grpc::StatusCode::UNAUTHENTICATED,
};

TEST(RetryPolicyTest, DefaultRetriesOnlyUnavailable) {
  RetryPolicy policy = RetryPolicy::LimitedTime();
  ASSERT_TRUE(policy.status().ok());
  for (grpc::StatusCode code : kAllCodes) {
    EXPECT_EQ(policy.retryable_codes().contains(code),
              code == grpc::StatusCode::UNAVAILABLE)
        << static_cast<int>(code);
  }
  EXPECT_EQ(policy.time_limit(), minutes(30));
}

TEST(RetryPolicyTest, RetryableCodesCanBeChanged) {
  auto policy = RetryPolicy::LimitedErrorCount(3).WithRetryableCodes(
      {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::RESOURCE_EXHAUSTED});
  ASSERT_TRUE(policy.status().ok());
  EXPECT_TRUE(
      policy.retryable_codes().contains(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_TRUE(
      policy.retryable_codes().contains(absl::StatusCode::kUnavailable));
  EXPECT_FALSE(policy.retryable_codes().contains(grpc::StatusCode::INTERNAL));
  EXPECT_EQ(policy.max_failures(), 3);
  EXPECT_EQ(policy.retryable_codes().ToString(),
            "RESOURCE_EXHAUSTED, UNAVAILABLE");
}

TEST(RetryPolicyTest, ZeroFailuresIsValidAndMeansNoRetries) {
  RetryPolicy policy = RetryPolicy::LimitedErrorCount(0);
  EXPECT_TRUE(policy.status().ok());
  EXPECT_EQ(policy.max_failures(), 0);
}

TEST(RetryPolicyTest, InvalidArgumentsNameTheField) {
  RetryPolicy negative = RetryPolicy::LimitedTime(seconds(-1));
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("time_limit"));

  RetryPolicy zero = RetryPolicy::LimitedTime(seconds(0));
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.status().message(), HasSubstr("time_limit"));

  RetryPolicy count = RetryPolicy::LimitedErrorCount(-2);
  EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(count.status().message(), HasSubstr("max_failures"));

  auto empty = RetryPolicy::LimitedTime().WithRetryableCodes(StatusCodeSet{});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("retryable_codes"));

  auto with_ok = RetryPolicy::LimitedTime().WithRetryableCodes(
      {grpc::StatusCode::OK, grpc::StatusCode::UNAVAILABLE});
  EXPECT_EQ(with_ok.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(with_ok.status().message(), HasSubstr("retryable_codes"));

  // 20: past gRPC's last code (16) yet a valid value of the enum (0..31);
  // 42 was undefined behaviour to even form (UBSan: invalid enum load).
  auto out_of_range = RetryPolicy::LimitedTime().WithRetryableCodes(
      {static_cast<grpc::StatusCode>(20)});
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RetryPolicyTest, ToStringDescribesThePolicy) {
  EXPECT_EQ(RetryPolicy::LimitedTime(minutes(10)).ToString(),
            "RetryPolicy::LimitedTime(10m, retryable: UNAVAILABLE)");
  EXPECT_EQ(RetryPolicy::LimitedErrorCount(2).ToString(),
            "RetryPolicy::LimitedErrorCount(2, retryable: UNAVAILABLE)");
}

// Negative durations in messages were rounded toward zero: "got -990ms" for
// -1s (found while building the bad-input table in tests/reliability).
TEST(RetryPolicyTest, RetryableIfWidensTheCodes) {
  RetryPolicy policy = RetryPolicy::LimitedErrorCount(2).WithRetryableIf(
      [](const absl::Status& status) {
        return status.message() == "transient";
      });
  EXPECT_TRUE(policy.status().ok());
  EXPECT_TRUE(policy.has_retryable_if());
  EXPECT_TRUE(policy.IsRetryable(absl::UnavailableError("x")));
  EXPECT_TRUE(policy.IsRetryable(absl::InternalError("transient")));
  EXPECT_FALSE(policy.IsRetryable(absl::InternalError("other")));
  EXPECT_EQ(policy.ToString(),
            "RetryPolicy::LimitedErrorCount(2, retryable: UNAVAILABLE or "
            "RetryableIf)");
  // A null predicate removes it.
  policy.WithRetryableIf(nullptr);
  EXPECT_FALSE(policy.has_retryable_if());
  EXPECT_FALSE(policy.IsRetryable(absl::InternalError("transient")));
}

TEST(RetryPolicyTest, NegativeDurationsAreQuotedExactly) {
  EXPECT_THAT(RetryPolicy::LimitedTime(seconds(-1)).status().message(),
              HasSubstr("got -1s"));
  EXPECT_THAT(RetryPolicy::LimitedTime(std::chrono::milliseconds(-5))
                  .status()
                  .message(),
              HasSubstr("got -5ms"));
  EXPECT_THAT(RetryPolicy::LimitedTime(minutes(-90)).status().message(),
              HasSubstr("got -1h30m"));
}

}  // namespace
}  // namespace stubkit
