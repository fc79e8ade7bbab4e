// Copyright 2026 The stubkit Authors.
//
// Fuzzes `GetRetrySummary`, which parses the `stubkit/RetrySummary` payload
// of any absl::Status (a status can come from anywhere, including a server
// that forwards one), and `WithRetrySummary`, which appends the summary to a
// message and must keep code, message prefix and payloads.

#include <cstdint>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "stubkit/internal/api/retry_summary.h"
#include "stubkit/metrics.h"
#include "stubkit/status.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stubkit::fuzz::FuzzInput in(data, size);
  const int code = 1 + in.Byte() % 16;
  const std::string message = in.String(256);
  const int64_t attempts = in.Integral<int32_t>();
  const int64_t elapsed = in.Integral<int64_t>();
  const int reason = in.Byte() % stubkit::kStopReasonCount;
  const std::string payload = in.Rest();

  absl::Status status(static_cast<absl::StatusCode>(code), message);
  status.SetPayload(stubkit::kRetrySummaryPayloadKey, absl::Cord(payload));
  std::optional<stubkit::RetrySummary> parsed =
      stubkit::GetRetrySummary(status);
  if (parsed.has_value()) {
    FUZZ_CHECK(static_cast<int>(parsed->stop_reason) >= 0 &&
               static_cast<int>(parsed->stop_reason) <=
                   static_cast<int>(stubkit::StopReason::kServerRefused));
    (void)stubkit::ToString(parsed->stop_reason);
  }

  // Attach a summary with arbitrary numbers: it must round-trip exactly.
  stubkit::RetrySummary summary;
  summary.stop_reason = static_cast<stubkit::StopReason>(reason);
  summary.attempts = static_cast<int>(attempts);
  summary.elapsed = std::chrono::nanoseconds(elapsed);
  status.SetPayload(stubkit::kErrorDetailsPayloadKey, absl::Cord(payload));
  absl::Status with =
      stubkit::internal::WithRetrySummary(status, summary, "explained");
  FUZZ_CHECK(with.code() == status.code());
  FUZZ_CHECK(absl::StartsWith(with.message(), message));
  FUZZ_CHECK(stubkit::GetErrorDetails(with) == payload);
  std::optional<stubkit::RetrySummary> back = stubkit::GetRetrySummary(with);
  FUZZ_CHECK(back.has_value());
  FUZZ_CHECK(back->stop_reason == summary.stop_reason);
  FUZZ_CHECK(back->attempts == summary.attempts);
  FUZZ_CHECK(back->elapsed == summary.elapsed);
  return 0;
}
