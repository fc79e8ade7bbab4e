// Copyright 2026 The stubkit Authors.
//
// Metadata validation: every key and value gRPC 1.51 would abort on is
// refused with INVALID_ARGUMENT naming the key, and nothing legal is.

#include "stubkit/internal/base/metadata.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/retry_loop.h"

namespace stubkit {
namespace {

using internal::ValidateMetadata;
using ::testing::HasSubstr;

constexpr MethodInfo kGet{"test.Service.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent};

TEST(MetadataTest, LegalKeysAndValuesPass) {
  for (const char* key : {"x-tenant", "a", "x_y.z-0", "authorization",
                          "x-retry-attempt", "grpc", "my-grpc-key"}) {
    EXPECT_TRUE(ValidateMetadata(key, "blue").ok()) << key;
  }
  EXPECT_TRUE(ValidateMetadata("x", "").ok());
  EXPECT_TRUE(ValidateMetadata("x", " ~printable ASCII~ ").ok());
  // Binary keys take any bytes.
  EXPECT_TRUE(
      ValidateMetadata("trace-bin", std::string("\0\n\xff\x7f", 4)).ok());
}

TEST(MetadataTest, UppercaseAndOtherKeyBytesAreRefused) {
  for (const char* key : {"X-Tenant", "x tenant", "x:y", ":path", "x/y",
                          "ключ", "x\n"}) {
    absl::Status status = ValidateMetadata(key, "blue");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("lowercase letters, digits")) << key;
  }
  EXPECT_THAT(std::string(ValidateMetadata("X-Tenant", "b").message()),
              HasSubstr("'X-Tenant'"));
  // Unprintable bytes are escaped in the message.
  EXPECT_THAT(std::string(ValidateMetadata("x\n", "b").message()),
              HasSubstr("'x\\x0a'"));
}

TEST(MetadataTest, EmptyAndReservedKeysAreRefused) {
  EXPECT_THAT(std::string(ValidateMetadata("", "v").message()),
              HasSubstr("must not be empty"));
  absl::Status reserved = ValidateMetadata("grpc-timeout", "1S");
  EXPECT_EQ(reserved.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("reserved"));
}

TEST(MetadataTest, IllegalValueBytesAreRefusedOutsideBinaryKeys) {
  for (std::string value : {std::string("a\nb"), std::string("tab\t"),
                            std::string("\x7f"), std::string("caf\xc3\xa9"),
                            std::string("nul\0", 4)}) {
    absl::Status status = ValidateMetadata("x-note", value);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("'x-note': its value holds byte 0x"));
  }
}

TEST(MetadataTest, MetadataOptionIsRefusedBeforeAnyAttempt) {
  int attempts = 0;
  auto options = Options{}.set<MetadataOption>(
      {{"x-ok", "fine"}, {"X-Tenant", "blue"}});
  absl::StatusOr<int> result = RetryLoop<int>(
      kGet, OptionsView(options, Options{}),
      [&](grpc::ClientContext&) -> absl::StatusOr<int> { return ++attempts; });
  EXPECT_EQ(attempts, 0);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("MetadataOption: metadata key 'X-Tenant'"));
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kInvalidArgument);

  auto newline = Options{}.set<MetadataOption>({{"x-note", "a\nb"}});
  result = RetryLoop<int>(
      kGet, OptionsView(newline, Options{}),
      [&](grpc::ClientContext&) -> absl::StatusOr<int> { return ++attempts; });
  EXPECT_EQ(attempts, 0);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stubkit
