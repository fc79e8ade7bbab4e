// Copyright 2026 The stubkit Authors.
//
// Backoff: how long to wait between attempts.
//
// `ExponentialBackoffPolicy` implements truncated exponential backoff. For the
// n-th retry (n counted from 0) the base delay is initial * multiplier^n,
// capped at `maximum`, and a `Jitter` spreads clients apart:
//
//   kUpToInitialDelay  min(initial * multiplier^n + U[0, initial], maximum)
//                      (the default, the classic recipe: with 1 s that is
//                      0..1000 ms extra)
//   kFull          U[0, min(initial * multiplier^n, maximum)]
//   kProportional  min(initial * multiplier^n, maximum) * U[1 - f, 1 + f],
//                  capped at `maximum`
//   kNone          min(initial * multiplier^n, maximum)
//   kGrpc          gRPC C++'s own retries: exactly `initial` for n = 0,
//                  then min(initial * multiplier^n, maximum) * U[0.8, 1.2]
//                  (which may pass `maximum` by a fifth, as gRPC's does)
//
//   using namespace std::chrono_literals;
//   stubkit::ExponentialBackoffPolicy defaults;  // 1 s, doubling, 5 min cap
//   auto spread = stubkit::ExponentialBackoffPolicy()
//                     .WithMaximumDelay(1min)
//                     .WithMultiplier(1.5)
//                     .WithJitter(stubkit::Jitter::Proportional(0.2));
//
// Each `With...` returns a copy with one field replaced: named, so that the
// two delays cannot be swapped unnoticed. Invalid arguments are recorded in
// `status()`, never clamped. Defaults and jitter: docs/options.md.

#ifndef STUBKIT_BACKOFF_POLICY_H_
#define STUBKIT_BACKOFF_POLICY_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/base/attributes.h"
#include "absl/status/status.h"

namespace stubkit {
namespace internal {
class ExplainerDraws;  // the policy explainer's pinned draws
}  // namespace internal

class Jitter {
 public:
  enum class Kind {
    kUpToInitialDelay,
    kFull,
    kProportional,
    kNone,
    kGrpc,
    kDefault ABSL_DEPRECATED(
        "2026-11-27, removed before 1.0: use kUpToInitialDelay") =
        kUpToInitialDelay,
  };

  // Adds U[0, initial delay] to the exponential delay. The default.
  static Jitter UpToInitialDelay() {
    return Jitter(Kind::kUpToInitialDelay, 0);
  }
  ABSL_DEPRECATED("2026-11-27, removed before 1.0: use UpToInitialDelay()")
  static Jitter Default() { return UpToInitialDelay(); }
  // Draws the whole delay from U[0, exponential delay].
  static Jitter Full() { return Jitter(Kind::kFull, 0); }
  // Scales the exponential delay by U[1 - fraction, 1 + fraction];
  // `fraction` must be in (0, 1].
  static Jitter Proportional(double fraction = 0.2) {
    return Jitter(Kind::kProportional, fraction);
  }
  static Jitter None() { return Jitter(Kind::kNone, 0); }
  // The waits of gRPC C++'s built-in retries (1.51), for a service config
  // that must space its retries exactly as it did under gRPC.
  static Jitter Grpc() { return Jitter(Kind::kGrpc, 0.2); }

  Kind kind() const { return kind_; }
  double fraction() const { return fraction_; }
  std::string ToString() const;

 private:
  Jitter(Kind kind, double fraction) : kind_(kind), fraction_(fraction) {}

  Kind kind_;
  double fraction_;
};

class ExponentialBackoffPolicy {
 public:
  static constexpr std::chrono::seconds kDefaultInitialDelay{1};
  static constexpr std::chrono::minutes kDefaultMaximumDelay{5};
  static constexpr double kDefaultMultiplier = 2.0;

  // 1 s, doubling, capped at 5 min, `Jitter::UpToInitialDelay()`.
  ExponentialBackoffPolicy() = default;
  ABSL_DEPRECATED(
      "2026-11-27, removed before 1.0: use ExponentialBackoffPolicy()"
      ".WithInitialDelay(i).WithMaximumDelay(m).WithMultiplier(x)")
  ExponentialBackoffPolicy(std::chrono::nanoseconds initial_delay,
                           std::chrono::nanoseconds maximum_delay,
                           double multiplier,
                           Jitter jitter = Jitter::UpToInitialDelay());

  // Copies with one field replaced. `initial_delay` must be positive,
  // `maximum_delay` at least `initial_delay`, and `multiplier` positive
  // (below 1 the waits shrink, as gRFC A6 allows). The whole policy is
  // checked again after each, so the order does not matter: only the last
  // value's `status()` counts.
  [[nodiscard]] ExponentialBackoffPolicy WithInitialDelay(
      std::chrono::nanoseconds initial_delay) const {
    return With(&ExponentialBackoffPolicy::initial_delay_, initial_delay);
  }
  [[nodiscard]] ExponentialBackoffPolicy WithMaximumDelay(
      std::chrono::nanoseconds maximum_delay) const {
    return With(&ExponentialBackoffPolicy::maximum_delay_, maximum_delay);
  }
  [[nodiscard]] ExponentialBackoffPolicy WithMultiplier(
      double multiplier) const {
    return With(&ExponentialBackoffPolicy::multiplier_, multiplier);
  }
  [[nodiscard]] ExponentialBackoffPolicy WithJitter(Jitter jitter) const {
    return With(&ExponentialBackoffPolicy::jitter_, jitter);
  }

  // The wait before retry number `retry` (0 for the first retry), drawing
  // from `uniform01` (a value in [0, 1)) when the jitter needs one.
  std::chrono::nanoseconds DelayFor(int retry, double uniform01) const;
  // As above, drawing from the process-wide generator.
  std::chrono::nanoseconds DelayFor(int retry) const;

  // The least, the median and the greatest wait `DelayFor(retry)` can
  // draw. `DelayFor` grows with its draw for every jitter, so these are
  // its draws at 0, 0.5 and the largest double below 1
  // (`kLargestDraw`): the policy explainer (stubkit/explain.h) reads its
  // bands here, from the same arithmetic the retry loop waits by.
  struct DelayRange {
    std::chrono::nanoseconds shortest;
    std::chrono::nanoseconds median;
    std::chrono::nanoseconds longest;
  };
  DelayRange RangeFor(int retry) const;
  static constexpr double kLargestDraw = 1.0 - 0x1.0p-53;

  std::chrono::nanoseconds initial_delay() const { return initial_delay_; }
  std::chrono::nanoseconds maximum_delay() const { return maximum_delay_; }
  double multiplier() const { return multiplier_; }
  const Jitter& jitter() const { return jitter_; }

  // OK, or `InvalidArgument` naming the bad field.
  const absl::Status& status() const { return status_; }
  std::string ToString() const;

 private:
  // A copy with `field` replaced, checked again as a whole.
  template <typename T>
  ExponentialBackoffPolicy With(T ExponentialBackoffPolicy::*field,
                                T value) const {
    ExponentialBackoffPolicy copy = *this;
    copy.*field = value;
    copy.Validate();
    return copy;
  }
  void Validate();
  // The policy explainer (src/explain_internal.h) runs the real retry loop
  // with every wait drawn at one point of its range: it hands the loop a
  // copy whose `DelayFor(retry)` draws `pinned_draw_` (negative: the
  // process-wide generator). In the policy, not in an option, so that the
  // loop looks nothing up per wait.
  friend class internal::ExplainerDraws;

  std::chrono::nanoseconds initial_delay_ = kDefaultInitialDelay;
  std::chrono::nanoseconds maximum_delay_ = kDefaultMaximumDelay;
  double multiplier_ = kDefaultMultiplier;
  Jitter jitter_ = Jitter::UpToInitialDelay();
  double pinned_draw_ = -1.0;
  absl::Status status_;
};

}  // namespace stubkit

#endif  // STUBKIT_BACKOFF_POLICY_H_
