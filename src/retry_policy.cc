// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_policy.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "src/internal/base/format.h"

namespace stubkit {
namespace {

constexpr int kMaxCode = 16;  // UNAUTHENTICATED, the last gRPC code.

}  // namespace

StatusCodeSet::StatusCodeSet(std::initializer_list<grpc::StatusCode> codes) {
  for (grpc::StatusCode code : codes) insert(code);
}

bool StatusCodeSet::contains(grpc::StatusCode code) const {
  int value = static_cast<int>(code);
  return value >= 0 && value <= kMaxCode && (bits_ & (1u << value)) != 0;
}

StatusCodeSet& StatusCodeSet::insert(grpc::StatusCode code) {
  int value = static_cast<int>(code);
  if (value <= 0 || value > kMaxCode) {
    invalid_ = true;  // OK or out of range; reported by the policy.
  } else {
    bits_ |= 1u << value;
  }
  return *this;
}

StatusCodeSet& StatusCodeSet::erase(grpc::StatusCode code) {
  int value = static_cast<int>(code);
  if (value > 0 && value <= kMaxCode) bits_ &= ~(1u << value);
  return *this;
}

std::string StatusCodeSet::ToString() const {
  std::vector<absl::string_view> names;
  for (int value = 1; value <= kMaxCode; ++value) {
    if ((bits_ & (1u << value)) != 0) {
      names.push_back(internal::StatusCodeName(value));
    }
  }
  return absl::StrJoin(names, ", ");
}

RetryPolicy::RetryPolicy(Limit limit, std::chrono::nanoseconds time_limit,
                         int max_failures)
    : limit_(limit), time_limit_(time_limit), max_failures_(max_failures) {}

void RetryPolicy::Validate() {
  if (limit_ == Limit::kTime &&
      time_limit_ <= std::chrono::nanoseconds::zero()) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryPolicy::LimitedTime: time_limit must be positive, got ",
        internal::FormatDuration(time_limit_)));
  } else if (limit_ == Limit::kErrorCount && max_failures_ < 0) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("RetryPolicy::LimitedErrorCount: max_failures must "
                     "not be negative, got ",
                     max_failures_));
  } else if (retryable_codes_.has_invalid_code()) {
    status_ = absl::InvalidArgumentError(
        "RetryPolicy: retryable_codes holds OK or a value that is not a gRPC "
        "status code");
  } else if (retryable_codes_.empty()) {
    status_ = absl::InvalidArgumentError(
        "RetryPolicy: retryable_codes must not be empty; to disable retries "
        "use RetryPolicy::LimitedErrorCount(0)");
  } else {
    status_ = absl::OkStatus();
  }
}

RetryPolicy& RetryPolicy::WithRetryableCodes(StatusCodeSet codes) & {
  retryable_codes_ = codes;
  Validate();
  return *this;
}

RetryPolicy& RetryPolicy::WithRetryableIf(
    std::function<bool(const absl::Status&)> predicate) & {
  retryable_if_ = std::move(predicate);
  return *this;
}

std::string RetryPolicy::ToString() const {
  std::string limit =
      limit_ == Limit::kTime
          ? absl::StrCat("RetryPolicy::LimitedTime(",
                         internal::FormatDuration(time_limit_))
          : absl::StrCat("RetryPolicy::LimitedErrorCount(", max_failures_);
  return absl::StrCat(limit, ", retryable: ", retryable_codes_.ToString(),
                      retryable_if_ ? " or RetryableIf" : "", ")");
}

RetryPolicy RetryPolicy::LimitedTime(std::chrono::nanoseconds time_limit) {
  RetryPolicy policy(Limit::kTime, time_limit, kUnlimitedFailures);
  policy.Validate();
  return policy;
}

RetryPolicy RetryPolicy::LimitedErrorCount(int max_failures) {
  RetryPolicy policy(Limit::kErrorCount, std::chrono::nanoseconds::zero(),
                     max_failures);
  policy.Validate();
  return policy;
}

}  // namespace stubkit
