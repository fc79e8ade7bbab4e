// Copyright 2026 The stubkit Authors.
//
// RetryThrottle: a token bucket that stops retries while a backend is down.
//
// The semantics are gRPC's retry throttling: the bucket starts full with
// `max_tokens`; each retryable failure takes one token; each success gives
// back `token_ratio`; while the bucket holds `max_tokens / 2` tokens or
// fewer, failed attempts are not retried. In an outage every client soon
// makes a single attempt per call, instead of multiplying the load.
//
// Off by default. One bucket is shared by all calls of a client and can be
// shared across clients:
//
//   auto throttle = std::make_shared<stubkit::RetryThrottle>(
//       /*max_tokens=*/10, /*token_ratio=*/0.1);
//   auto options = stubkit::Options{}
//       .set<stubkit::RetryThrottleOption>(throttle);
//
// Thread-safe and lock-free. A success on a full bucket is a single atomic
// load. Invalid parameters (max_tokens outside (0, 1000], token_ratio outside
// (0, max_tokens]) leave `status()` non-OK and make calls fail before sending.

#ifndef STUBKIT_RETRY_THROTTLE_H_
#define STUBKIT_RETRY_THROTTLE_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"

namespace stubkit {

class RetryThrottle {
 public:
  RetryThrottle(double max_tokens, double token_ratio);

  // Takes a token for a retryable failure; returns true when a retry is
  // still allowed afterwards.
  bool OnRetryableFailure();
  void OnSuccess();
  // Whether a retry is allowed now, without changing the bucket.
  bool RetryAllowed() const;

  double tokens() const;
  double max_tokens() const { return max_milli_ / 1000.0; }
  double token_ratio() const { return ratio_milli_ / 1000.0; }
  const absl::Status& status() const { return status_; }

 private:
  // Fixed point, thousandths of a token, like gRPC's own implementation.
  int64_t max_milli_;
  int64_t ratio_milli_;
  std::atomic<int64_t> milli_tokens_;
  absl::Status status_;
};

struct RetryThrottleOption {
  using Type = std::shared_ptr<RetryThrottle>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_RETRY_THROTTLE_H_
