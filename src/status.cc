// Copyright 2026 The stubkit Authors.

#include "stubkit/status.h"

#include <cstdint>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/internal/format.h"

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
  }
  return "unknown";
}

std::optional<RetrySummary> GetRetrySummary(const absl::Status& status) {
  auto payload = status.GetPayload(kRetrySummaryPayloadKey);
  if (!payload.has_value()) return std::nullopt;
  // "<reason> <attempts> <elapsed nanoseconds>"; anything else is ignored.
  std::string text(*payload);
  std::vector<absl::string_view> fields = absl::StrSplit(text, ' ');
  int reason = 0;
  int attempts = 0;
  int64_t elapsed = 0;
  if (fields.size() != 3 || !absl::SimpleAtoi(fields[0], &reason) ||
      !absl::SimpleAtoi(fields[1], &attempts) ||
      !absl::SimpleAtoi(fields[2], &elapsed) || reason < 0 ||
      reason > static_cast<int>(StopReason::kNotResumable)) {
    return std::nullopt;
  }
  RetrySummary summary;
  summary.stop_reason = static_cast<StopReason>(reason);
  summary.attempts = attempts;
  summary.elapsed = std::chrono::nanoseconds(elapsed);
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
  result.SetPayload(
      kRetrySummaryPayloadKey,
      absl::Cord(absl::StrCat(static_cast<int>(summary.stop_reason), " ",
                              summary.attempts, " ", summary.elapsed.count())));
  return result;
}

}  // namespace internal
}  // namespace stubkit
