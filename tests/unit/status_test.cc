// Copyright 2026 The stubkit Authors.

#include "stubkit/status.h"

#include <cstdint>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/internal/api/retry_summary.h"

namespace stubkit {
namespace {

using ::testing::HasSubstr;

constexpr int kStopReasonCountForTest =
    static_cast<int>(StopReason::kServerRefused) + 1;

TEST(StatusTest, OkConvertsToOk) {
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusTest, CodeMessageAndBinaryDetailsSurviveBothWays) {
  // Details are opaque bytes, including NULs.
  const std::string details("\x0a\x00\xff binary", 10);
  grpc::Status original(grpc::StatusCode::FAILED_PRECONDITION, "bad state",
                        details);
  absl::Status converted = FromGrpcStatus(original);
  EXPECT_EQ(converted.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(converted.message(), "bad state");
  ASSERT_TRUE(GetErrorDetails(converted).has_value());
  EXPECT_EQ(*GetErrorDetails(converted), details);

  grpc::Status back = ToGrpcStatus(converted);
  EXPECT_EQ(back.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(back.error_message(), "bad state");
  EXPECT_EQ(back.error_details(), details);
}

TEST(StatusTest, EveryCodeMapsOneToOne) {
  for (int code = 1; code <= 16; ++code) {
    grpc::Status status(static_cast<grpc::StatusCode>(code), "m");
    EXPECT_EQ(static_cast<int>(FromGrpcStatus(status).code()), code);
  }
}

TEST(StatusTest, NoDetailsMeansNoPayload) {
  absl::Status status =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::INTERNAL, "x"));
  EXPECT_FALSE(GetErrorDetails(status).has_value());
  EXPECT_FALSE(GetRetrySummary(status).has_value());
}

TEST(StatusTest, RetrySummaryIsAddedNotSubstituted) {
  absl::Status original = FromGrpcStatus(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "backend down", "dd"));
  RetrySummary summary{StopReason::kExhausted, 4,
                       std::chrono::milliseconds(7100)};
  absl::Status with = internal::WithRetrySummary(
      original, summary, "gave up: retry policy exhausted");
  EXPECT_EQ(with.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(with.message(), HasSubstr("backend down [stubkit: gave up"));
  EXPECT_THAT(with.message(), HasSubstr("4 attempts over 7.1s]"));
  EXPECT_EQ(GetErrorDetails(with), std::optional<std::string>("dd"));
  std::optional<RetrySummary> read = GetRetrySummary(with);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(read->attempts, 4);
  EXPECT_EQ(read->elapsed, std::chrono::milliseconds(7100));
}

// Issue 22, item 14: what a user prints reads as words, not "3 4 840411377".
TEST(StatusTest, ToStringShowsAReadableSummary) {
  absl::Status with = internal::WithRetrySummary(
      absl::UnavailableError("down"),
      RetrySummary{StopReason::kExhausted, 4,
                   std::chrono::nanoseconds(840411377)},
      "gave up: retry policy exhausted (at most 3 retries)");
  EXPECT_EQ(with.ToString(),
            "UNAVAILABLE: down [stubkit: gave up: retry policy exhausted (at "
            "most 3 retries); 4 attempts over 840.4ms] "
            "[stubkit/RetrySummary='stop=exhausted attempts=4 "
            "elapsed=0.840411377s']");
}

TEST(StatusTest, EveryStopReasonAndExtremeElapsedRoundTrip) {
  for (int reason = 0; reason < kStopReasonCountForTest; ++reason) {
    for (int64_t ns : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{999999999},
                       std::numeric_limits<int64_t>::max(),
                       std::numeric_limits<int64_t>::min()}) {
      RetrySummary summary{static_cast<StopReason>(reason), 7,
                           std::chrono::nanoseconds(ns)};
      std::optional<RetrySummary> back = GetRetrySummary(
          internal::WithRetrySummary(absl::UnavailableError("x"), summary, ""));
      ASSERT_TRUE(back.has_value()) << reason << " " << ns;
      EXPECT_EQ(back->stop_reason, summary.stop_reason);
      EXPECT_EQ(back->attempts, 7);
      EXPECT_EQ(back->elapsed.count(), ns);
    }
  }
}

TEST(StatusTest, MalformedSummaryPayloadIsIgnored) {
  for (const char* bad :
       {"", "1 2", "x 1 2", "99 1 2", "1 2 3 4", "-1 2 3", "3 4 840411377",
        "stop=exhausted attempts=4",
        "stop=bogus attempts=4 elapsed=1.000000000s",
        "stop=exhausted attempts=x elapsed=1.000000000s",
        "stop=exhausted attempts=4 elapsed=1.0s",
        "stop=exhausted attempts=4 elapsed=1.000000000",
        "stop=exhausted attempts=4 elapsed=9223372037.000000000s",
        "stop=exhausted attempts=4 elapsed=9223372036.854775808s",
        "stop=exhausted attempts=4 elapsed=.000000000s",
        "stop=exhausted attempts=4 elapsed=+1.000000000s"}) {
    absl::Status status = absl::UnavailableError("x");
    status.SetPayload(kRetrySummaryPayloadKey, absl::Cord(bad));
    EXPECT_FALSE(GetRetrySummary(status).has_value()) << bad;
  }
}

}  // namespace
}  // namespace stubkit
