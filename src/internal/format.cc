// Copyright 2026 The stubkit Authors.

#include "src/internal/format.h"

#include "absl/time/time.h"

namespace stubkit {
namespace internal {

std::string FormatDuration(std::chrono::nanoseconds duration) {
  return absl::FormatDuration(absl::FromChrono(duration));
}

absl::string_view StatusCodeName(int code) {
  static constexpr absl::string_view kNames[] = {
      "OK",
      "CANCELLED",
      "UNKNOWN",
      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION",
      "ABORTED",
      "OUT_OF_RANGE",
      "UNIMPLEMENTED",
      "INTERNAL",
      "UNAVAILABLE",
      "DATA_LOSS",
      "UNAUTHENTICATED",
  };
  if (code < 0 || code >= static_cast<int>(sizeof(kNames) / sizeof(kNames[0])))
    return "UNKNOWN_CODE";
  return kNames[code];
}

}  // namespace internal
}  // namespace stubkit
