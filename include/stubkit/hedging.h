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
// Hedges count against a `RetryThrottleOption` bucket: each non-fatal failure
// takes a token, and no hedge is sent while the bucket is at or below half.
// In the throttle's waiting mode (`RetryThrottle::WaitForRecovery`) a hedged
// call does not wait for the recovery: it stops with kThrottled as with the
// plain bucket. Hedges buy latency; a call that may sit out an outage
// should not be hedged. Its success still counts as a recovery.
// Hedges draw on a `RetryBudgetOption` budget as retries do: each hedge
// sent withdraws one (the call itself deposits one request), and no hedge
// is sent once the budget is spent (stubkit/retry_budget.h).
// An attempt that runs out of its own `AttemptTimeoutOption` is non-fatal,
// as in the retry loop. The call's end (the retry policy's time limit, the
// total timeout, the deadline) bounds every hedge and ends the call, with
// its stop reason, whatever hedges are still running.
//
// Sync calls go through the stub's sync method `M`, async calls through
// `AsyncM`, hedged or not: a decorator that must see every attempt overrides
// both. A sync hedged call runs attempt 1 on the caller's thread (a call
// answered within the first hedging delay starts no thread); each hedge the
// timer sends runs on a thread of its own, losers are cancelled with
// `grpc::ClientContext::TryCancel`, and the call returns once every attempt
// has returned. So the sync `M` of a decorator may run on several threads at
// once. A gRPC stub without the callback API (gRPC's generated `MockFooStub`,
// whose `async()` is null) serves sync calls, hedged included; its async
// calls fail with FAILED_PRECONDITION before anything is sent.
//
// Threads: the observer, metrics and log sink run on the thread that ended
// the attempt or the call (a gRPC, timer, hedge or the caller's thread),
// never under a stubkit lock; an async call's callback likewise.

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
