// Copyright 2026 The stubkit Authors.
//
// The sources the retry decision (stubkit/internal/engine/retry_decision.h)
// draws on in a call of the retry loop:
//
//   ThrottleAdmission  admission: the retry throttle's token bucket, and
//                      its waiting mode (stubkit/retry_throttle.h)
//   BudgetAdmission    admission: the retry budget (stubkit/retry_budget.h)
//   BothAdmission      admission by two sources, each of which must admit
//   CallAdmission      the admission a call's options choose: none, the
//                      throttle, the budget, or both
//   BackoffWaits       the wait: the backoff policy's delay, replaced by a
//                      server's hint (grpc-retry-pushback-ms, RetryInfo)
//                      within ServerHintCeilingOption
//
// A new admission rule or a new wait rule is a new class here.
// RunRetryDecision runs the retry decision's pure steps against them,
// committing between the steps what each says.
//
//   BackoffWaits waits(backoff_policy, options, reporter);
//   waits.SetAttempt(ServerTrailers(context));  // attempt_context.h
//   CallAdmission admission(throttle, wait_enabled, budget, clock);
//   RunRetryDecision(status, facts, policy, admission.get(), waits);

#ifndef STUBKIT_INTERNAL_RETRY_SOURCES_H_
#define STUBKIT_INTERNAL_RETRY_SOURCES_H_

#include <grpcpp/support/string_ref.h>

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/clock.h"
#include "stubkit/internal/engine/call_reporter.h"
#include "stubkit/internal/engine/hedge_decision.h"
#include "stubkit/internal/engine/retry_decision.h"
#include "stubkit/options.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace internal {

// The retry throttle as the decision's admission source.
class ThrottleAdmission final : public AdmissionSource {
 public:
  // `wait_enabled`: the loop supports the throttle's waiting mode.
  // `attempt_start` and `now`: the failed attempt's start and the failure's
  // time, an overload answer for the adaptive release (min: unknown, as
  // for a hedge's).
  ThrottleAdmission(RetryThrottle& throttle, bool wait_enabled,
                    Clock::time_point attempt_start = Clock::time_point::min(),
                    Clock::time_point now = Clock::time_point::min())
      : throttle_(throttle),
        wait_enabled_(wait_enabled),
        attempt_start_(attempt_start),
        now_(now) {}
  bool OnRetryableFailure() override {
    return throttle_.OnRetryableFailure(attempt_start_, now_);
  }
  bool Admits() const override { return throttle_.RetryAllowed(); }
  bool MayWait() const override {
    return wait_enabled_ && throttle_.waiting_mode();
  }
  std::string Refusal() const override;
  // The bucket counts failures, not retries: nothing to take.
  bool Take() override { return true; }
  // The waiting mode's release (RetryThrottle::TryAdmit).
  bool TryRelease(Clock::time_point now,
                  absl::FunctionRef<bool()> also) override {
    return throttle_.TryAdmit(now, also);
  }

 private:
  RetryThrottle& throttle_;
  const bool wait_enabled_;
  const Clock::time_point attempt_start_;
  const Clock::time_point now_;
};

// The retry budget as the decision's admission source: a retryable failure
// counts nothing (the budget counts requests and retries, not failures),
// and a retry or hedge that goes withdraws one. Time is the call's clock.
class BudgetAdmission final : public AdmissionSource {
 public:
  // What the budget's withdrawals are, for the refusal: retries (a
  // `RetryBudgetOption`), or hedges (an `AdaptiveHedgingOption`'s budget).
  enum class Spends { kRetries, kHedges };
  // `clock` null: the steady clock.
  BudgetAdmission(RetryBudget& budget, const Clock* clock,
                  Spends spends = Spends::kRetries)
      : budget_(budget), clock_(clock), spends_(spends) {}
  bool OnRetryableFailure() override { return Admits(); }
  bool Admits() const override { return budget_.CanWithdraw(Now()); }
  bool MayWait() const override { return false; }
  std::string Refusal() const override;
  bool Take() override { return budget_.TryWithdraw(Now()); }
  // A withdrawal at the waiting call's `now`, once `also` admitted.
  bool TryRelease(Clock::time_point now,
                  absl::FunctionRef<bool()> also) override {
    return also() && budget_.TryWithdraw(now);
  }
  std::chrono::nanoseconds RefillWindow() const override {
    return budget_.config().ttl();
  }

 private:
  Clock::time_point Now() const {
    return clock_ != nullptr ? clock_->Now() : std::chrono::steady_clock::now();
  }
  RetryBudget& budget_;
  const Clock* clock_;
  Spends spends_;
};

// Two sources that must both admit. Both are told of every failure (the
// token bucket counts each, whatever the budget says); `first` is asked
// first, and its `Take` should take nothing (the token bucket's), since a
// take `second` refuses cannot be given back. When both are budgets (a
// retry budget, then a hedged call's hedging budget), a take lost that way
// counts one withdrawal that was not sent, which errs toward less load. A
// refusal is the refusing source's: it says why, and whether the call may
// wait.
class BothAdmission final : public AdmissionSource {
 public:
  BothAdmission(AdmissionSource& first, AdmissionSource& second)
      : first_(first), second_(second) {}
  bool OnRetryableFailure() override;
  bool Admits() const override;
  bool MayWait() const override {
    return refused_ != nullptr && refused_->MayWait();
  }
  std::string Refusal() const override {
    return refused_ != nullptr ? refused_->Refusal() : std::string();
  }
  bool Take() override;
  const AdmissionSource* Refuser() const override {
    return refused_ != nullptr ? refused_->Refuser() : nullptr;
  }
  // `first` releases only if `second` (then `also`) does.
  bool TryRelease(Clock::time_point now,
                  absl::FunctionRef<bool()> also) override;

 private:
  AdmissionSource& first_;
  AdmissionSource& second_;
  // The source that refused last (mutable: `Admits` is a question, but
  // the refusal that follows must name who said no).
  mutable AdmissionSource* refused_ = nullptr;
};

// The admission a call's options choose: the throttle (`RetryThrottleOption`),
// the budget (`RetryBudgetOption`), both, or none (`get()` null). Not
// copyable: `get()` points into it.
class CallAdmission {
 public:
  // `wait_enabled`: the loop supports the throttle's waiting mode. `clock`
  // null: the steady clock. `attempt_start`, `now`: as ThrottleAdmission's.
  CallAdmission(RetryThrottle* throttle, bool wait_enabled, RetryBudget* budget,
                const Clock* clock,
                Clock::time_point attempt_start = Clock::time_point::min(),
                Clock::time_point now = Clock::time_point::min());
  CallAdmission(const CallAdmission&) = delete;
  CallAdmission& operator=(const CallAdmission&) = delete;
  AdmissionSource* get() { return source_; }

 private:
  std::optional<ThrottleAdmission> throttle_;
  std::optional<BudgetAdmission> budget_;
  std::optional<BothAdmission> both_;
  AdmissionSource* source_ = nullptr;
};

// A server's retry hint after a failed attempt: the pushback in its
// trailers (null: none) and google.rpc.RetryInfo in its status's details;
// with both, the longer wait. A "don't retry" pushback, or a wait longer
// than ServerHintCeilingOption, refuses the retry (`refusal` says why).
// For the retry loop (BackoffWaits) and hedged calls alike.
struct ServerHint {
  enum class Kind { kNone, kWait, kRefused };
  Kind kind = Kind::kNone;
  std::chrono::nanoseconds delay{0};
  WaitReason reason = WaitReason::kNone;  // kPushback or kRetryInfo
  std::string refusal;
  // Status details too large or malformed to read: their size, for a log
  // line (the hint reads on without them).
  std::optional<size_t> malformed_details;
};
ServerHint ReadServerHint(
    const std::multimap<grpc::string_ref, grpc::string_ref>* trailers,
    const absl::Status& status, const OptionsView& options);

// Backoff, or the server's hint in the failed attempt's trailers and status
// (with both hints, the longer). A hint resets the backoff: the wait after
// the next failure is the initial one again (gRFC A6).
class BackoffWaits final : public WaitSource {
 public:
  // `backoff`, `options` and `reporter` outlive this object.
  BackoffWaits(const ExponentialBackoffPolicy& backoff,
               const OptionsView& options, const CallReporter& reporter);
  // The trailers of the attempt that just failed, before each decision;
  // they outlive it.
  void SetAttempt(
      const std::multimap<grpc::string_ref, grpc::string_ref>* trailers) {
    trailers_ = trailers;
  }
  WaitChoice NextWait(const absl::Status& status, int failures) override;
  // The retry policy started again (a resumed stream): so does the backoff.
  void Restart() { backoff_origin_ = 0; }
  // Whether server hints are followed (ServerHintsOption).
  bool use_hints() const { return use_hints_; }

 private:
  const ExponentialBackoffPolicy& backoff_;
  const OptionsView& options_;
  const CallReporter& reporter_;
  const bool use_hints_;
  const std::multimap<grpc::string_ref, grpc::string_ref>* trailers_ = nullptr;
  // The failure count when a server's hint last chose the wait.
  int backoff_origin_ = 0;
};

// The retry decision after a failed attempt
// (stubkit/internal/engine/retry_decision.h lists its steps), against the
// call's sources: reports a retryable failure to `admission` (may be null: no
// throttle), asks `waits` for the wait, and takes admission's due before a
// retry. `policy.IsRetryable` may run user code, so no stubkit lock may be
// held.
RetryDecision RunRetryDecision(const absl::Status& status,
                               const FailureFacts& facts,
                               const RetryPolicy& policy,
                               AdmissionSource* admission, WaitSource& waits);

// The hedged call's launch decision (stubkit/internal/engine/hedge_decision.h)
// against its admission source (may be null): a hedge the source admits
// has taken its due, or does not go (kThrottled).
HedgeLaunch RunHedgeLaunch(int index, int max_attempts, bool pushed_back,
                           bool refused, AdmissionSource* admission);

// The hedged call's decision after a failed attempt, reporting a non-fatal
// failure to `admission` (may be null: no throttle).
HedgeDecision RunHedgeDecision(const absl::Status& status,
                               const HedgeFailureFacts& facts,
                               const HedgingPolicy& policy,
                               AdmissionSource* admission);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_RETRY_SOURCES_H_
