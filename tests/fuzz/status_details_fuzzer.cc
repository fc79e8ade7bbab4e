// Copyright 2026 The stubkit Authors.
//
// Fuzzes what a server controls in `grpc-status-details-bin`: the hand-written
// protobuf wire decoder that finds `google.rpc.RetryInfo.retry_delay` in a
// serialized `google.rpc.Status`, and the lossless conversion of the details
// between grpc::Status and absl::Status.
//
// The first byte picks the mode: raw bytes, or bytes wrapped in a
// well-formed Status/Any/RetryInfo envelope so the fuzzer reaches the inner
// Duration decoder quickly.

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>

#include "stubkit/internal/base/hint_parsing.h"
#include "stubkit/status.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/testing/status_details.h"

using stubkit::internal::RetryInfoHint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stubkit::fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.Byte();
  std::string bytes = in.Rest();
  std::string details;
  switch (mode % 4) {
    case 0:  // raw google.rpc.Status bytes
      details = bytes;
      break;
    case 1:  // bytes as the RetryInfo message
      stubkit::testing::AppendBytes(
          &details, 3,
          stubkit::testing::Any("type.googleapis.com/google.rpc.RetryInfo",
                                bytes));
      break;
    case 2: {  // bytes as the Duration inside RetryInfo
      std::string retry_info;
      stubkit::testing::AppendBytes(&retry_info, 1, bytes);
      stubkit::testing::AppendBytes(
          &details, 3,
          stubkit::testing::Any("type.googleapis.com/google.rpc.RetryInfo",
                                retry_info));
      break;
    }
    case 3:  // bytes as an Any of another type, then a valid RetryInfo
      details = stubkit::testing::StatusWithRetryInfo(
          1, 5, stubkit::testing::Any("type.googleapis.com/x.Y", bytes));
      break;
  }

  RetryInfoHint hint = stubkit::internal::ParseRetryInfoDelay(details);
  FUZZ_CHECK(hint.kind == RetryInfoHint::Kind::kAbsent ||
             hint.kind == RetryInfoHint::Kind::kMalformed ||
             hint.kind == RetryInfoHint::Kind::kDelay);
  if (hint.kind == RetryInfoHint::Kind::kDelay) {
    FUZZ_CHECK(hint.delay >= std::chrono::nanoseconds::zero());
  }
  if (details.size() > stubkit::internal::kMaxStatusDetailsBytes) {
    FUZZ_CHECK(hint.kind == RetryInfoHint::Kind::kMalformed);
  }
  if (mode % 4 == 3 && hint.kind != RetryInfoHint::Kind::kMalformed) {
    // A well-formed unrelated Any before the RetryInfo must not hide it.
    FUZZ_CHECK(hint.kind == RetryInfoHint::Kind::kDelay);
    FUZZ_CHECK(hint.delay ==
               std::chrono::seconds(1) + std::chrono::nanoseconds(5));
  }

  // The details survive grpc::Status -> absl::Status -> grpc::Status.
  grpc::Status grpc_status(grpc::StatusCode::UNAVAILABLE, bytes, details);
  absl::Status status = stubkit::FromGrpcStatus(grpc_status);
  FUZZ_CHECK(status.code() == absl::StatusCode::kUnavailable);
  FUZZ_CHECK(status.message() == bytes);
  std::optional<std::string> kept = stubkit::GetErrorDetails(status);
  FUZZ_CHECK(details.empty() ? !kept.has_value() : kept == details);
  grpc::Status again = stubkit::ToGrpcStatus(status);
  FUZZ_CHECK(again.error_details() == details);
  FUZZ_CHECK(again.error_message() == bytes);
  return 0;
}
