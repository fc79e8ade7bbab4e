// Copyright 2026 The stubkit Authors.
//
// AdaptiveHedging: hedge at a percentile of observed latency, under a load
// budget (Finagle's BackupRequestFilter).
//
// A fixed `hedging_delay` set from today's p95 fails when the service slows
// down for everyone: every call crosses the delay, every call hedges, and
// the client doubles its load. With an `AdaptiveHedgingOption` the delay
// before each hedge is the chosen percentile of the latencies recently seen
// by the calls that share the object, and the hedges themselves are capped
// at a fraction of the calls over a sliding window (`max_extra_load`); a
// hedge the budget refuses is not sent and the call waits for the attempts
// it has. The `HedgingPolicyOption` still says how many attempts at most and
// which codes are non-fatal; its `hedging_delay` is the delay used until the
// window holds `min_samples` latencies.
//
// ```cpp
// #include <chrono>
// #include <memory>
//
// #include "stubkit/stubkit.h"
//
// stubkit::Options AdaptivelyHedged() {
//   using namespace std::chrono_literals;
//   auto adaptive = std::make_shared<stubkit::AdaptiveHedging>(
//       stubkit::AdaptiveHedging::Config()
//           .WithPercentile(0.95)      // hedge after the p95 ...
//           .WithMinDelay(1ms)         // ... but never before 1 ms
//           .WithMaxDelay(200ms)       // ... nor after 200 ms
//           .WithMaxExtraLoad(0.05));  // hedges at most 5 % of the calls
//   return stubkit::Options{}
//       .set<stubkit::HedgingPolicyOption>(
//           stubkit::HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(20ms))
//       .set<stubkit::AdaptiveHedgingOption>(adaptive);
// }
// ```
//
// Sharing: the object is the state (the latencies and the budget), held by
// `shared_ptr` like `RetryBudgetOption`. Set it in a client's options and
// every hedged method of that client shares one percentile and one budget;
// set a separate object per method through `MethodOptionsOption` when
// methods' latencies differ (they usually do: a per-client percentile mixes
// a fast Get with a slow List). Sharing one object across clients of the
// same backend is allowed. It has no effect on calls that are not hedged.
//
// What is recorded: once per successful hedged call, the time from its first
// attempt's start to the first success. When the first attempt wins that is
// its latency; when a hedge wins it is a lower bound of the first attempt's
// latency that is already past the delay, so the count of samples above the
// percentile, which is all a percentile depends on, stays right although the
// loser's own latency is never seen. Failed calls record nothing.
//
// The latencies live in a lock-free windowed histogram
// (stubkit/internal/latency_window.h: log-linear buckets of atomics, 8 time
// slices): recording is one relaxed atomic increment, with no lock and no
// allocation; the percentile is at most 6.25 % above the true one. The delay
// is recomputed from it at most every `window / 8` (and at most every
// 100 ms), not per call. The budget is a `RetryBudget` with ttl
// `budget_window`, `min_hedges_per_second` and `max_extra_load` as its
// percent: each hedged call deposits one, each hedge withdraws one.
//
// Metrics: `MethodMetrics::hedges` counts the hedges sent (A96's
// grpc.client.call.hedges) and `hedges_refused_by_budget` the calls whose
// hedge the budget refused.
//
// Invalid parameters leave `status()` non-OK and make hedged calls fail
// before sending with INVALID_ARGUMENT. Time is the calls' clock
// (`ClockOption`): share an object only among calls on the same clock.
// Thread-safe.

#ifndef STUBKIT_ADAPTIVE_HEDGING_H_
#define STUBKIT_ADAPTIVE_HEDGING_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "stubkit/internal/latency_window.h"
#include "stubkit/retry_budget.h"

namespace stubkit {

class AdaptiveHedging {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // The parameters: a copyable value, checked when the object is built.
  class Config {
   public:
    // The latency percentile the hedge waits for, in [0.5, 0.9999].
    // Default 0.95 (Finagle's 1 - max_extra_load).
    [[nodiscard]] Config WithPercentile(double percentile) const {
      return With(&Config::percentile_, percentile);
    }
    // How far back latencies count, in [10 ms, 1 h]. Default 10 s.
    [[nodiscard]] Config WithWindow(std::chrono::nanoseconds window) const {
      return With(&Config::window_, window);
    }
    // The learned delay is clamped to [min_delay, max_delay]; so is the
    // fixed delay used before enough samples. 0 <= min <= max <= 1 h.
    // Defaults 1 ms and 1 s.
    [[nodiscard]] Config WithMinDelay(std::chrono::nanoseconds delay) const {
      return With(&Config::min_delay_, delay);
    }
    [[nodiscard]] Config WithMaxDelay(std::chrono::nanoseconds delay) const {
      return With(&Config::max_delay_, delay);
    }
    // Latencies the window must hold before the percentile replaces the
    // policy's fixed delay, in [1, 1e6]. Default 100.
    [[nodiscard]] Config WithMinSamples(int64_t samples) const {
      return With(&Config::min_samples_, samples);
    }
    // Hedges as a fraction of the calls over `budget_window`, in (0, 1].
    // Default 0.05 (5 %).
    [[nodiscard]] Config WithMaxExtraLoad(double fraction) const {
      return With(&Config::max_extra_load_, fraction);
    }
    // Hedges per second allowed whatever the call rate, so that a quiet
    // client can still hedge, in [0, 1e6]. Default 1.
    [[nodiscard]] Config WithMinHedgesPerSecond(double rate) const {
      return With(&Config::min_hedges_per_second_, rate);
    }
    // The budget's sliding window, in [1 ms, 1 h]. Default 1 s: a short
    // window keeps the extra load within budget second by second when the
    // latency shifts (a long one lets a burst spend what quiet seconds
    // saved).
    [[nodiscard]] Config WithBudgetWindow(
        std::chrono::nanoseconds window) const {
      return With(&Config::budget_window_, window);
    }

    double percentile() const { return percentile_; }
    std::chrono::nanoseconds window() const { return window_; }
    std::chrono::nanoseconds min_delay() const { return min_delay_; }
    std::chrono::nanoseconds max_delay() const { return max_delay_; }
    int64_t min_samples() const { return min_samples_; }
    double max_extra_load() const { return max_extra_load_; }
    double min_hedges_per_second() const { return min_hedges_per_second_; }
    std::chrono::nanoseconds budget_window() const { return budget_window_; }

   private:
    template <typename T>
    Config With(T Config::*field, T value) const {
      Config copy = *this;
      copy.*field = value;
      return copy;
    }

    double percentile_ = 0.95;
    std::chrono::nanoseconds window_ = std::chrono::seconds(10);
    std::chrono::nanoseconds min_delay_ = std::chrono::milliseconds(1);
    std::chrono::nanoseconds max_delay_ = std::chrono::seconds(1);
    int64_t min_samples_ = 100;
    double max_extra_load_ = 0.05;
    double min_hedges_per_second_ = 1;
    std::chrono::nanoseconds budget_window_ = std::chrono::seconds(1);
  };

  AdaptiveHedging() : AdaptiveHedging(Config()) {}
  explicit AdaptiveHedging(const Config& config);
  AdaptiveHedging(const AdaptiveHedging&) = delete;
  AdaptiveHedging& operator=(const AdaptiveHedging&) = delete;

  // The delay before a hedge sent at `now`: the percentile, clamped, or
  // `fixed` (clamped too) while the window holds too few latencies.
  // Recomputed at most every refresh interval; between, one atomic load.
  std::chrono::nanoseconds HedgeDelay(time_point now,
                                      std::chrono::nanoseconds fixed);
  // The percentile now, unclamped and uncached; empty below min_samples.
  std::optional<std::chrono::nanoseconds> Percentile(time_point now) const;
  // The latencies in the window now.
  int64_t samples(time_point now) const { return latencies_.Count(now); }

  // One hedged call's latency (see above). Lock-free, no allocation.
  void Record(time_point now, std::chrono::nanoseconds latency) {
    latencies_.Record(now, latency);
  }

  // The hedging budget: calls deposited, hedges withdrawn.
  RetryBudget& budget() { return budget_; }
  const RetryBudget& budget() const { return budget_; }

  const Config& config() const { return config_; }
  const absl::Status& status() const { return status_; }

 private:
  static absl::Status Check(const Config& config);
  std::chrono::nanoseconds Clamp(std::chrono::nanoseconds delay) const;

  Config config_;
  absl::Status status_;
  int64_t refresh_ns_;
  internal::LatencyWindow latencies_;
  RetryBudget budget_;
  // The clamped percentile as last computed (-1: too few samples), and when
  // it is due again (ns on the calls' clock).
  std::atomic<int64_t> learned_ns_{-1};
  std::atomic<int64_t> refresh_at_ns_{INT64_MIN};
};

// Off by default (null): hedges wait the policy's fixed delay.
struct AdaptiveHedgingOption {
  using Type = std::shared_ptr<AdaptiveHedging>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_ADAPTIVE_HEDGING_H_
