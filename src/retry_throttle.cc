// Copyright 2026 The stubkit Authors.

#include "stubkit/retry_throttle.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "src/internal/format.h"

namespace stubkit {

RetryThrottle::RetryThrottle(double max_tokens, double token_ratio)
    : RetryThrottle(
          Config().WithMaxTokens(max_tokens).WithTokenRatio(token_ratio)) {}

RetryThrottle::RetryThrottle(double max_tokens, double token_ratio,
                             WaitForRecovery waiting)
    : RetryThrottle(Config()
                        .WithMaxTokens(max_tokens)
                        .WithTokenRatio(token_ratio)
                        .WithWaitForRecovery(waiting)) {}

RetryThrottle::RetryThrottle(const Config& config)
    : max_milli_(0), ratio_milli_(0), milli_tokens_(0) {
  const double max_tokens = config.max_tokens();
  const double token_ratio = config.token_ratio();
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
  if (!config.wait_for_recovery()) return;
  const WaitForRecovery& waiting = *config.wait_for_recovery();
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
  if (!(waiting.release_ratio > 0 && waiting.release_ratio <= 1)) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        "RetryThrottle::WaitForRecovery: release_ratio must be in (0, 1], "
        "got ",
        waiting.release_ratio));
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
    // A refused retry: the backend is down (again); the rate it proved
    // before goes.
    internal::MutexLock lock(&mu_);
    down_.store(true, std::memory_order_relaxed);
    window_start_ = time_point::min();
    window_fresh_ = 0;
    fresh_rate_ = 0;
  }
  return allowed;
}

void RetryThrottle::Recovered(bool fresh) {
  // Healthy and nobody waiting: the success path takes no lock.
  if (!down_.load(std::memory_order_relaxed) &&
      waiters_.load(std::memory_order_relaxed) == 0) {
    return;
  }
  internal::MutexLock lock(&mu_);
  down_.store(false, std::memory_order_relaxed);
  if (fresh) ++window_fresh_;
}

void RetryThrottle::OnWaitedSuccess() {
  if (waiting_) Recovered(/*fresh=*/false);
  Refill();
}

void RetryThrottle::BeginWait() {
  waiters_.fetch_add(1, std::memory_order_relaxed);
}

void RetryThrottle::EndWait() {
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

bool RetryThrottle::TryAdmit(time_point now) {
  internal::MutexLock lock(&mu_);
  using std::chrono::nanoseconds;
  nanoseconds spacing = probe_spacing_;
  if (!down_.load(std::memory_order_relaxed)) {
    // Measure R. Successes counted since window_start_ all lie in
    // [window_start_, now]; the window counts as at least probe_interval
    // long, so one early burst cannot make R large.
    if (window_start_ == time_point::min()) {
      // The first admission since the recovery opens the window; successes
      // before it are not counted (fewer counted is safe for the bound).
      window_start_ = now;
      window_fresh_ = 0;
    } else {
      const nanoseconds elapsed = std::max<nanoseconds>(
          now - window_start_, wait_options_.probe_interval);
      fresh_rate_ =
          std::max(fresh_rate_, static_cast<double>(window_fresh_) /
                                    static_cast<double>(elapsed.count()));
      if (now - window_start_ >= wait_options_.probe_interval) {
        window_start_ = now;
        window_fresh_ = 0;
      }
    }
    const double release_rate = wait_options_.release_ratio * fresh_rate_;
    // Rounded up (the pace never exceeds release_rate, but for a thousandth
    // of a nanosecond of float error); the probe pace is the floor.
    if (release_rate * static_cast<double>(spacing.count()) > 1) {
      spacing =
          nanoseconds(static_cast<int64_t>(std::ceil(1 / release_rate - 1e-3)));
    }
  }
  if (last_admit_ != time_point::min() && now - last_admit_ < spacing) {
    return false;
  }
  last_admit_ = now;
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

std::chrono::nanoseconds RetryThrottle::PollDelay() {
  const int64_t interval = wait_options_.probe_interval.count();
  internal::MutexLock lock(&mu_);
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
