// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_throttle.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "src/internal/format.h"

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

RetryThrottle::RetryThrottle(double max_tokens, double token_ratio,
                             WaitForRecovery waiting)
    : RetryThrottle(max_tokens, token_ratio) {
  if (!status_.ok()) return;
  if (!(waiting.probe_interval > std::chrono::nanoseconds::zero() &&
        waiting.probe_interval <= std::chrono::hours(1))) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle::WaitForRecovery: probe_interval must be in (0, 1h], "
        "got ",
        internal::FormatDuration(waiting.probe_interval)));
    return;
  }
  if (!(waiting.probes >= 1 && waiting.probes <= 1000)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle::WaitForRecovery: probes must be in [1, 1000], got ",
        waiting.probes));
    return;
  }
  waiting_ = true;
  wait_options_ = waiting;
  // Rounded up, so that no window of probe_interval holds more than
  // `probes`.
  probe_spacing_ =
      (waiting.probe_interval + std::chrono::nanoseconds(waiting.probes - 1)) /
      waiting.probes;
  random_.seed(std::random_device{}());
}

bool RetryThrottle::OnRetryableFailure() {
  int64_t current = milli_tokens_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = std::max<int64_t>(0, current - 1000);
  } while (!milli_tokens_.compare_exchange_weak(current, next,
                                                std::memory_order_relaxed));
  const bool allowed = next * 2 > max_milli_;
  if (!allowed && waiting_) {
    // A refused retry: the backend is down (again); banked credits go.
    std::lock_guard<std::mutex> lock(mu_);
    down_.store(true, std::memory_order_relaxed);
    credits_ = 0;
  }
  return allowed;
}

void RetryThrottle::Recovered(bool earns_credit) {
  // Healthy and nobody waiting: the success path takes no lock.
  if (!down_.load(std::memory_order_relaxed) &&
      waiters_.load(std::memory_order_relaxed) == 0) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  down_.store(false, std::memory_order_relaxed);
  if (earns_credit && waiters_.load(std::memory_order_relaxed) > 0) {
    // At most max_tokens banked: a burst no larger than the bucket.
    credits_ = std::min(credits_ + 1, std::max<int64_t>(1, max_milli_ / 1000));
    earned_since_slot_ = true;
  }
}

void RetryThrottle::OnWaitedSuccess() {
  if (waiting_) Recovered(/*earns_credit=*/false);
  Refill();
}

void RetryThrottle::BeginWait() {
  waiters_.fetch_add(1, std::memory_order_relaxed);
}

void RetryThrottle::EndWait() {
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

bool RetryThrottle::TryAdmit(time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  bool admit = false;
  if (!down_.load(std::memory_order_relaxed) && credits_ > 0) {
    --credits_;
    admit = true;
  } else if (now >= next_probe_) {
    // A probe while down. While up, the same pace is the floor that drains
    // waiters when no new call earns credits; with credits coming, it would
    // only add to them (and to the bound).
    next_probe_ =
        now + std::chrono::duration_cast<time_point::duration>(probe_spacing_);
    admit = down_.load(std::memory_order_relaxed) || !earned_since_slot_;
    earned_since_slot_ = false;
  }
  if (admit) waiters_.fetch_sub(1, std::memory_order_relaxed);
  return admit;
}

std::chrono::nanoseconds RetryThrottle::PollDelay() {
  const int64_t interval = wait_options_.probe_interval.count();
  std::lock_guard<std::mutex> lock(mu_);
  std::uniform_int_distribution<int64_t> draw(interval / 2, interval);
  return std::chrono::nanoseconds(draw(random_));
}

void RetryThrottle::OnSuccess() {
  if (waiting_) Recovered(/*earns_credit=*/true);
  Refill();
}

void RetryThrottle::Refill() {
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
