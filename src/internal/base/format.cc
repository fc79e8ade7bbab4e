// Copyright 2026 The stubkit Authors.

#include "src/internal/base/format.h"

#include "absl/time/time.h"

namespace stubkit {
namespace internal {

std::string FormatDuration(std::chrono::nanoseconds duration) {
  // Three or so significant digits: "7.1s", "92.3ms", "257us", "30m".
  absl::Duration d = absl::FromChrono(duration);
  absl::Duration magnitude = absl::AbsDuration(d);
  absl::Duration unit = magnitude >= absl::Minutes(1)   ? absl::Seconds(1)
                        : magnitude >= absl::Seconds(1) ? absl::Milliseconds(10)
                        : magnitude >= absl::Milliseconds(1)
                            ? absl::Microseconds(100)
                            : absl::Microseconds(1);
  if (magnitude < absl::Microseconds(1)) unit = absl::Nanoseconds(1);
  // Round the magnitude half up, then restore the sign: Trunc() goes toward
  // zero, so adding half a unit to a negative duration would round -1s to
  // -990ms.
  absl::Duration rounded = absl::Trunc(magnitude + unit / 2, unit);
  return absl::FormatDuration(d < absl::ZeroDuration() ? -rounded : rounded);
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
