// Copyright 2026 The stubkit Authors.
//
// AdaptiveHedging: hedge at a percentile of observed latency, under a load
// budget (Finagle's BackupRequestFilter).
//
// With an `AdaptiveHedgingOption` the delay before each hedge is the chosen
// percentile of the latencies recently seen by the calls that share the
// object, and hedges are capped at a fraction of the calls over a sliding
// window (`max_extra_load`); a hedge the budget refuses is not sent. The
// `HedgingPolicyOption` is still required: the most attempts, the
// non-fatal codes, and the delay used until `min_samples` latencies.
//
//   using namespace std::chrono_literals;
//   auto adaptive = std::make_shared<stubkit::AdaptiveHedging>(
//       stubkit::AdaptiveHedging::Config()
//           .WithPercentile(0.95)      // hedge after the p95 ...
//           .WithMinDelay(1ms)         // ... but never before 1 ms
//           .WithMaxDelay(200ms)       // ... nor after 200 ms
//           .WithMaxExtraLoad(0.05));  // hedges at most 5 % of the calls
//   auto options = stubkit::Options{}
//       .set<stubkit::HedgingPolicyOption>(
//           stubkit::HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(20ms))
//       .set<stubkit::AdaptiveHedgingOption>(adaptive);
//
// The object is the state (latencies and budget): one per client, or one
// per method through `MethodOptionsOption` when latencies differ. It has no
// effect on calls that are not hedged. Thread-safe; recording a latency is
// one relaxed atomic increment. Invalid parameters make hedged calls fail
// unsent with INVALID_ARGUMENT. Time is the calls' clock (`ClockOption`).
// What is recorded, how, and fixed or adaptive: docs/hedging.md
// ("Adaptive hedging").

#ifndef STUBKIT_ADAPTIVE_HEDGING_H_
#define STUBKIT_ADAPTIVE_HEDGING_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "stubkit/internal/base/latency_window.h"
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
