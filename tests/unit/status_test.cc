// Copyright 2026 The stubkit Authors.

#include "stubkit/status.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace {

using ::testing::HasSubstr;

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

TEST(StatusTest, MalformedSummaryPayloadIsIgnored) {
  for (const char* bad : {"", "1 2", "x 1 2", "99 1 2", "1 2 3 4", "-1 2 3"}) {
    absl::Status status = absl::UnavailableError("x");
    status.SetPayload(kRetrySummaryPayloadKey, absl::Cord(bad));
    EXPECT_FALSE(GetRetrySummary(status).has_value()) << bad;
  }
}

}  // namespace
}  // namespace stubkit
