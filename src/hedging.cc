// Copyright 2026 The stubkit Authors.

#include "stubkit/hedging.h"

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"

namespace stubkit {

HedgingPolicy::HedgingPolicy(int max_attempts,
                             std::chrono::nanoseconds hedging_delay,
                             StatusCodeSet non_fatal_codes)
    : max_attempts_(max_attempts),
      hedging_delay_(hedging_delay),
      non_fatal_codes_(non_fatal_codes) {
  Validate();
}

// The same checks, in the same order, however the fields were set.
void HedgingPolicy::Validate() {
  status_ = absl::OkStatus();
  if (max_attempts_ < 1 || max_attempts_ > kMaxAttemptsLimit) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("HedgingPolicy: max_attempts must be in [1, ",
                     kMaxAttemptsLimit, "], got ", max_attempts_));
  } else if (hedging_delay_ < std::chrono::nanoseconds::zero()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("HedgingPolicy: hedging_delay must not be negative, got ",
                     internal::FormatDuration(hedging_delay_)));
  } else if (non_fatal_codes_.empty() || non_fatal_codes_.has_invalid_code()) {
    status_ = absl::InvalidArgumentError(
        "HedgingPolicy: non_fatal_codes must be non-empty gRPC codes other "
        "than OK");
  }
}

}  // namespace stubkit
