// Copyright 2026 The stubkit Authors.
//
// Hedging: race several attempts of an idempotent unary call.
//
// With a hedging policy the first attempt is sent at once; whenever
// `hedging_delay` passes with no answer, another is sent, up to
// `max_attempts`. The first success wins and the others are cancelled. A
// failure with a code in `non_fatal_codes` (UNAVAILABLE by default) sends the
// next hedge at once; any other failure ends the call. Hedging trades load
// for tail latency, so it is off by default and applies only to idempotent
// calls (a non-idempotent call runs once, as without hedging).
//
//   using namespace std::chrono_literals;
//   auto options = stubkit::Options{}.set<stubkit::HedgingPolicyOption>(
//       stubkit::HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(50ms));
//   auto response = client.Get(request, options);       // sync or
//   auto future = client.AsyncGet(request, options);    // async
//
// Hedges take tokens from a `RetryThrottleOption` bucket and draw on a
// `RetryBudgetOption` budget as retries do; the call's end bounds every
// hedge. Threads: a sync hedged call runs attempt 1 on the caller's thread
// and each later hedge on a thread of its own, so a decorator's sync `M`
// may run on several threads at once; the observer, metrics and log sink
// run on the thread that ended the attempt or the call, never under a
// stubkit lock. Server hints, the order of the rules, adaptive delays:
// docs/hedging.md.

#ifndef STUBKIT_HEDGING_H_
#define STUBKIT_HEDGING_H_

#include <chrono>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "stubkit/retry_policy.h"

namespace stubkit {

class HedgingPolicy {
 public:
  // At most this many attempts in all.
  static constexpr int kMaxAttemptsLimit = 10;

  // No hedging: one attempt at a time, as the retry loop does.
  HedgingPolicy() = default;
  ABSL_DEPRECATED(
      "2026-11-27, removed before 1.0: use HedgingPolicy().WithMaxAttempts(n)"
      ".WithHedgingDelay(d)")
  HedgingPolicy(int max_attempts, std::chrono::nanoseconds hedging_delay,
                StatusCodeSet non_fatal_codes = {
                    grpc::StatusCode::UNAVAILABLE});

  // Copies with one field replaced; the policy is checked again after each,
  // so the order does not matter. `max_attempts` in [1, 10];
  // `hedging_delay` not negative (zero, the default, sends all attempts at
  // once); `non_fatal_codes` neither empty nor holding OK.
  [[nodiscard]] HedgingPolicy WithMaxAttempts(int max_attempts) const {
    return With(&HedgingPolicy::max_attempts_, max_attempts);
  }
  [[nodiscard]] HedgingPolicy WithHedgingDelay(
      std::chrono::nanoseconds hedging_delay) const {
    return With(&HedgingPolicy::hedging_delay_, hedging_delay);
  }
  [[nodiscard]] HedgingPolicy WithNonFatalCodes(
      StatusCodeSet non_fatal_codes) const {
    return With(&HedgingPolicy::non_fatal_codes_, non_fatal_codes);
  }

  int max_attempts() const { return max_attempts_; }
  std::chrono::nanoseconds hedging_delay() const { return hedging_delay_; }
  const StatusCodeSet& non_fatal_codes() const { return non_fatal_codes_; }
  bool enabled() const { return max_attempts_ > 1; }
  const absl::Status& status() const { return status_; }

 private:
  // A copy with `field` replaced, checked again as a whole.
  template <typename T>
  HedgingPolicy With(T HedgingPolicy::*field, T value) const {
    HedgingPolicy copy = *this;
    copy.*field = value;
    copy.Validate();
    return copy;
  }
  void Validate();

  int max_attempts_ = 1;
  std::chrono::nanoseconds hedging_delay_ = std::chrono::nanoseconds::zero();
  StatusCodeSet non_fatal_codes_{grpc::StatusCode::UNAVAILABLE};
  absl::Status status_;
};

struct HedgingPolicyOption {
  using Type = HedgingPolicy;
  static Type Default() { return HedgingPolicy(); }
};

}  // namespace stubkit

#endif  // STUBKIT_HEDGING_H_
