// Copyright 2026 The stubkit Authors.
//
// Retry policies: when to stop retrying a call.
//
// A retry policy is a value. It says which status codes are worth another
// attempt and how long (or how many failures) a call may keep trying. The
// per-call counting state lives in the retry loop, so one policy serves every
// call of a client, and a time limit starts when each call starts, not when
// the policy is built.
//
//   using namespace std::chrono_literals;
//   // Give up 10 minutes after the call started (UNAVAILABLE only).
//   auto by_time = stubkit::RetryPolicy::LimitedTime(10min);
//   // Tolerate at most 3 retryable failures (4 attempts), and also retry
//   // RESOURCE_EXHAUSTED.
//   auto by_count =
//   stubkit::RetryPolicy::LimitedErrorCount(3).WithRetryableCodes(
//       {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::RESOURCE_EXHAUSTED});
//   // Also retry the INTERNAL of a reset HTTP/2 stream, a transient failure.
//   auto with_predicate =
//       stubkit::RetryPolicy::LimitedTime(10min).WithRetryableIf(
//           [](const absl::Status& s) {
//             return s.code() == absl::StatusCode::kInternal &&
//                    absl::StrContains(s.message(), "RST_STREAM");
//           });
//
// Invalid arguments never crash and are never clamped: the policy records an
// `InvalidArgument` status naming the field (see `status()`), and every call
// made with it fails with that status before sending anything. When a
// failure is retried: docs/retry-semantics.md.

#ifndef STUBKIT_RETRY_POLICY_H_
#define STUBKIT_RETRY_POLICY_H_

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/status/status.h"

namespace stubkit {

// A set of gRPC status codes, stored as a bitmask.
class StatusCodeSet {
 public:
  constexpr StatusCodeSet() = default;
  StatusCodeSet(std::initializer_list<grpc::StatusCode> codes);

  bool contains(grpc::StatusCode code) const;
  bool contains(absl::StatusCode code) const {
    return contains(static_cast<grpc::StatusCode>(code));
  }
  bool empty() const { return bits_ == 0; }
  StatusCodeSet& insert(grpc::StatusCode code);
  StatusCodeSet& erase(grpc::StatusCode code);
  // True when the set holds a code outside gRPC's 0..16 range or `OK`.
  bool has_invalid_code() const { return invalid_; }
  // "UNAVAILABLE, RESOURCE_EXHAUSTED".
  std::string ToString() const;

  friend bool operator==(StatusCodeSet a, StatusCodeSet b) {
    return a.bits_ == b.bits_ && a.invalid_ == b.invalid_;
  }

 private:
  uint32_t bits_ = 0;
  bool invalid_ = false;
};

// Made by `RetryPolicy::LimitedTime` or `RetryPolicy::LimitedErrorCount`.
class RetryPolicy {
 public:
  // Where `max_failures()` means "no limit on the count".
  static constexpr int kUnlimitedFailures = -1;
  // The time limit of `LimitedTime()`, as `PollingPolicy::kDefaultTimeLimit`.
  static constexpr std::chrono::minutes kDefaultTimeLimit{30};
  ABSL_DEPRECATED("2026-11-27, removed before 1.0: use kUnlimitedFailures")
  static constexpr int kUnlimitedRetries = kUnlimitedFailures;
  ABSL_DEPRECATED("2026-11-27, removed before 1.0: use kDefaultTimeLimit")
  static constexpr std::chrono::minutes kDefaultMaximumDuration =
      kDefaultTimeLimit;

  // Retries until `time_limit` (positive) has passed since the call's start.
  // Waits never cross that moment: a wait that would end after it is not
  // started.
  static RetryPolicy LimitedTime(
      std::chrono::nanoseconds time_limit = kDefaultTimeLimit);
  // Tolerates `max_failures` (not negative) retryable failures: at most
  // `max_failures + 1` attempts. `LimitedErrorCount(0)`: no retries.
  static RetryPolicy LimitedErrorCount(int max_failures);

  // The status codes worth another attempt. `UNAVAILABLE` by default.
  const StatusCodeSet& retryable_codes() const { return retryable_codes_; }
  // Time from the call's start after which no new attempt starts, or zero
  // for none.
  std::chrono::nanoseconds time_limit() const { return time_limit_; }
  // Retryable failures tolerated before giving up, or `kUnlimitedFailures`.
  int max_failures() const { return max_failures_; }
  ABSL_DEPRECATED("2026-11-27, removed before 1.0: use time_limit()")
  std::chrono::nanoseconds max_time() const { return time_limit_; }
  ABSL_DEPRECATED("2026-11-27, removed before 1.0: use max_failures()")
  int max_retries() const { return max_failures_; }

  // OK, or `InvalidArgument` naming the bad field.
  const absl::Status& status() const { return status_; }

  // Whether a failed attempt's `status` is worth another attempt: its code
  // is in `retryable_codes()`, or the `WithRetryableIf` predicate says so.
  // (Idempotency, the limits and the throttle are decided after this.)
  bool IsRetryable(const absl::Status& status) const {
    return retryable_codes_.contains(status.code()) ||
           (retryable_if_ && retryable_if_(status));
  }
  bool has_retryable_if() const { return static_cast<bool>(retryable_if_); }

  // Replaces the retryable codes. An empty set, or one with `OK`, is invalid.
  RetryPolicy& WithRetryableCodes(StatusCodeSet codes) &;
  RetryPolicy&& WithRetryableCodes(StatusCodeSet codes) && {
    return std::move(WithRetryableCodes(codes));
  }

  // Also makes a failure retryable when `predicate` returns true for its
  // status, in addition to the codes (a null predicate removes it). It only
  // widens what is retried: a non-idempotent call is still never retried,
  // and the policy's limits, the backoff and the throttle apply as usual.
  // It runs on the thread that saw the failure, with no stubkit lock held,
  // once per failed attempt; keep it fast and thread-safe, since one policy
  // serves every call of a client. Hedged calls do not consult it: their
  // `HedgingPolicy`'s non-fatal codes decide.
  RetryPolicy& WithRetryableIf(
      std::function<bool(const absl::Status&)> predicate) &;
  RetryPolicy&& WithRetryableIf(
      std::function<bool(const absl::Status&)> predicate) && {
    return std::move(WithRetryableIf(std::move(predicate)));
  }

  std::string ToString() const;

 protected:
  enum class Limit { kTime, kErrorCount };
  RetryPolicy(Limit limit, std::chrono::nanoseconds time_limit,
              int max_failures);
  void Validate();

 private:
  Limit limit_;
  StatusCodeSet retryable_codes_{grpc::StatusCode::UNAVAILABLE};
  std::function<bool(const absl::Status&)> retryable_if_;
  std::chrono::nanoseconds time_limit_;
  int max_failures_;
  absl::Status status_;
};

// The spellings before `RetryPolicy::LimitedTime` and
// `RetryPolicy::LimitedErrorCount`, kept compiling. They add nothing to a
// `RetryPolicy` (an option holds a plain `RetryPolicy`).
class ABSL_DEPRECATED(
    "2026-11-27, removed before 1.0: use RetryPolicy::LimitedTime")
    LimitedTimeRetryPolicy : public RetryPolicy {
 public:
  LimitedTimeRetryPolicy() : RetryPolicy(LimitedTime()) {}
  explicit LimitedTimeRetryPolicy(std::chrono::nanoseconds time_limit)
      : RetryPolicy(LimitedTime(time_limit)) {}
};

class ABSL_DEPRECATED(
    "2026-11-27, removed before 1.0: use RetryPolicy::LimitedErrorCount")
    LimitedErrorCountRetryPolicy : public RetryPolicy {
 public:
  explicit LimitedErrorCountRetryPolicy(int max_failures)
      : RetryPolicy(LimitedErrorCount(max_failures)) {}
};

}  // namespace stubkit

#endif  // STUBKIT_RETRY_POLICY_H_
