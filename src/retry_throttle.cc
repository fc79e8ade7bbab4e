// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_throttle.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace stubkit {

RetryThrottle::RetryThrottle(double max_tokens, double token_ratio)
    : max_milli_(0), ratio_milli_(0), milli_tokens_(0) {
  if (!(max_tokens > 0 && max_tokens <= 1000)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle: max_tokens must be in (0, 1000], got ", max_tokens));
    return;
  }
  if (!(token_ratio > 0 && token_ratio <= max_tokens)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle: token_ratio must be in (0, max_tokens], got ",
        token_ratio));
    return;
  }
  max_milli_ = std::llround(max_tokens * 1000);
  ratio_milli_ = std::max<int64_t>(1, std::llround(token_ratio * 1000));
  milli_tokens_.store(max_milli_);
}

bool RetryThrottle::OnRetryableFailure() {
  int64_t current = milli_tokens_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = std::max<int64_t>(0, current - 1000);
  } while (!milli_tokens_.compare_exchange_weak(current, next,
                                                std::memory_order_relaxed));
  return next * 2 > max_milli_;
}

void RetryThrottle::OnSuccess() {
  int64_t current = milli_tokens_.load(std::memory_order_relaxed);
  // The common case, a healthy backend, writes nothing.
  while (current < max_milli_) {
    int64_t next = std::min(max_milli_, current + ratio_milli_);
    if (milli_tokens_.compare_exchange_weak(current, next,
                                            std::memory_order_relaxed)) {
      return;
    }
  }
}

bool RetryThrottle::RetryAllowed() const {
  return milli_tokens_.load(std::memory_order_relaxed) * 2 > max_milli_;
}

double RetryThrottle::tokens() const {
  return milli_tokens_.load(std::memory_order_relaxed) / 1000.0;
}

}  // namespace stubkit
