// Copyright 2026 The stubkit Authors.

#include "stubkit/status.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "src/internal/base/format.h"
#include "stubkit/internal/api/retry_summary.h"

namespace stubkit {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // gRPC and absl share code numbers (both follow google.rpc.Code).
  absl::Status result(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
  if (!status.error_details().empty()) {
    result.SetPayload(kErrorDetailsPayloadKey,
                      absl::Cord(status.error_details()));
  }
  return result;
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::optional<std::string> details = GetErrorDetails(status);
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()),
                      details.has_value() ? *std::move(details) : "");
}

std::optional<std::string> GetErrorDetails(const absl::Status& status) {
  auto payload = status.GetPayload(kErrorDetailsPayloadKey);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

absl::string_view ToString(StopReason reason) {
  switch (reason) {
    case StopReason::kSuccess:
      return "success";
    case StopReason::kPermanentError:
      return "permanent error";
    case StopReason::kNonIdempotent:
      return "non-idempotent";
    case StopReason::kExhausted:
      return "retry policy exhausted";
    case StopReason::kDeadline:
      return "deadline";
    case StopReason::kThrottled:
      return "retry throttled";
    case StopReason::kCancelled:
      return "cancelled";
    case StopReason::kInvalidArgument:
      return "invalid options";
    case StopReason::kNotResumable:
      return "stream not resumable";
    case StopReason::kServerRefused:
      return "refused by the server";
  }
  return "unknown";
}

absl::string_view ToIdentifier(StopReason reason) {
  // Stable identifiers, unlike ToString's prose.
  switch (reason) {
    case StopReason::kSuccess:
      return "success";
    case StopReason::kPermanentError:
      return "permanent_error";
    case StopReason::kNonIdempotent:
      return "non_idempotent";
    case StopReason::kExhausted:
      return "exhausted";
    case StopReason::kDeadline:
      return "deadline";
    case StopReason::kThrottled:
      return "throttled";
    case StopReason::kCancelled:
      return "cancelled";
    case StopReason::kInvalidArgument:
      return "invalid_argument";
    case StopReason::kNotResumable:
      return "not_resumable";
    case StopReason::kServerRefused:
      return "server_refused";
  }
  return "unknown";
}

namespace {

// The summary payload reads as it prints in `absl::Status::ToString()`:
// "stop=exhausted attempts=4 elapsed=0.840411377s" (elapsed exact, in
// seconds with nine decimals).
std::string FormatSummary(const RetrySummary& summary) {
  const int64_t ns = summary.elapsed.count();
  // |ns| without overflow for INT64_MIN.
  const uint64_t magnitude =
      ns < 0 ? ~static_cast<uint64_t>(ns) + 1 : static_cast<uint64_t>(ns);
  return absl::StrFormat("stop=%s attempts=%d elapsed=%s%d.%09ds",
                         ToIdentifier(summary.stop_reason), summary.attempts,
                         ns < 0 ? "-" : "", magnitude / 1000000000,
                         magnitude % 1000000000);
}

bool ParseStopReason(absl::string_view text, StopReason* reason) {
  for (int i = 0; i <= static_cast<int>(StopReason::kServerRefused); ++i) {
    if (ToIdentifier(static_cast<StopReason>(i)) == text) {
      *reason = static_cast<StopReason>(i);
      return true;
    }
  }
  return false;
}

bool ParseElapsed(absl::string_view text, std::chrono::nanoseconds* elapsed) {
  const bool negative = absl::ConsumePrefix(&text, "-");
  if (!absl::ConsumeSuffix(&text, "s")) return false;
  const size_t dot = text.find('.');
  if (dot == absl::string_view::npos || text.size() - dot - 1 != 9) {
    return false;
  }
  uint64_t seconds = 0;
  uint64_t fraction = 0;
  const absl::string_view whole = text.substr(0, dot);
  const absl::string_view part = text.substr(dot + 1);
  if (whole.empty() || !absl::c_all_of(whole, absl::ascii_isdigit) ||
      !absl::c_all_of(part, absl::ascii_isdigit) ||
      !absl::SimpleAtoi(whole, &seconds) ||
      !absl::SimpleAtoi(part, &fraction)) {
    return false;
  }
  // At most 2^63 ns (2^63 only when negative).
  constexpr uint64_t kMaxSeconds = 9223372036;
  if (seconds > kMaxSeconds) return false;
  const uint64_t magnitude = seconds * 1000000000 + fraction;
  const uint64_t limit = uint64_t{1} << 63;
  if (magnitude > limit || (!negative && magnitude == limit)) return false;
  *elapsed =
      std::chrono::nanoseconds(negative ? static_cast<int64_t>(~magnitude + 1)
                                        : static_cast<int64_t>(magnitude));
  return true;
}

}  // namespace

std::optional<RetrySummary> GetRetrySummary(const absl::Status& status) {
  auto payload = status.GetPayload(kRetrySummaryPayloadKey);
  if (!payload.has_value()) return std::nullopt;
  // As FormatSummary writes it; anything else is ignored.
  std::string text(*payload);
  std::vector<absl::string_view> fields = absl::StrSplit(text, ' ');
  RetrySummary summary;
  if (fields.size() != 3 || !absl::ConsumePrefix(&fields[0], "stop=") ||
      !absl::ConsumePrefix(&fields[1], "attempts=") ||
      !absl::ConsumePrefix(&fields[2], "elapsed=") ||
      !ParseStopReason(fields[0], &summary.stop_reason) ||
      !absl::SimpleAtoi(fields[1], &summary.attempts) ||
      !ParseElapsed(fields[2], &summary.elapsed)) {
    return std::nullopt;
  }
  return summary;
}

namespace internal {

absl::Status WithRetrySummary(const absl::Status& status,
                              const RetrySummary& summary,
                              absl::string_view explanation) {
  std::string message =
      absl::StrCat(status.message(), status.message().empty() ? "" : " ",
                   "[stubkit: ", explanation, "; ", summary.attempts,
                   summary.attempts == 1 ? " attempt" : " attempts", " over ",
                   FormatDuration(summary.elapsed), "]");
  absl::Status result(status.code(), message);
  status.ForEachPayload(
      [&result](absl::string_view key, const absl::Cord& value) {
        result.SetPayload(key, value);
      });
  result.SetPayload(kRetrySummaryPayloadKey,
                    absl::Cord(FormatSummary(summary)));
  return result;
}

}  // namespace internal
}  // namespace stubkit
