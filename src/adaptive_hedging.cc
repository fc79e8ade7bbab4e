// Copyright 2026 The stubkit Authors.

#include "stubkit/adaptive_hedging.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"

namespace stubkit {
namespace {

using std::chrono::nanoseconds;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("AdaptiveHedging: ", what));
}

RetryBudget::Config BudgetConfig(const AdaptiveHedging::Config& config) {
  return RetryBudget::Config()
      .WithTtl(config.budget_window())
      .WithMinRetriesPerSecond(config.min_hedges_per_second())
      .WithPercentCanRetry(config.max_extra_load());
}

}  // namespace

absl::Status AdaptiveHedging::Check(const Config& config) {
  using internal::FormatDuration;
  const double percentile = config.percentile();
  if (!(percentile >= 0.5 && percentile <= 0.9999)) {
    return Invalid(absl::StrCat(
        "percentile must be in [0.5, 0.9999] (a fraction: 0.95 is p95), got ",
        percentile));
  }
  const nanoseconds window = config.window();
  if (!(window >= std::chrono::milliseconds(10) &&
        window <= std::chrono::hours(1))) {
    return Invalid(absl::StrCat("window must be in [10ms, 1h], got ",
                                FormatDuration(window)));
  }
  if (config.min_delay() < nanoseconds::zero()) {
    return Invalid(absl::StrCat("min_delay must not be negative, got ",
                                FormatDuration(config.min_delay())));
  }
  if (config.max_delay() < config.min_delay() ||
      config.max_delay() > std::chrono::hours(1)) {
    return Invalid(absl::StrCat(
        "max_delay must be in [min_delay (", FormatDuration(config.min_delay()),
        "), 1h], got ", FormatDuration(config.max_delay())));
  }
  if (config.min_samples() < 1 || config.min_samples() > 1'000'000) {
    return Invalid(absl::StrCat("min_samples must be in [1, 1e6], got ",
                                config.min_samples()));
  }
  const double load = config.max_extra_load();
  if (!(load > 0 && load <= 1)) {
    return Invalid(absl::StrCat(
        "max_extra_load must be in (0, 1] (a fraction: 0.05 is 5%), got ",
        load));
  }
  const double rate = config.min_hedges_per_second();
  if (!(rate >= 0 && rate <= 1e6)) {
    return Invalid(
        absl::StrCat("min_hedges_per_second must be in [0, 1e6], got ", rate));
  }
  const nanoseconds budget_window = config.budget_window();
  if (!(budget_window >= std::chrono::milliseconds(1) &&
        budget_window <= std::chrono::hours(1))) {
    return Invalid(absl::StrCat("budget_window must be in [1ms, 1h], got ",
                                FormatDuration(budget_window)));
  }
  return absl::OkStatus();
}

AdaptiveHedging::AdaptiveHedging(const Config& config)
    : config_(config),
      status_(Check(config)),
      refresh_ns_(std::min<int64_t>(
          config.window().count() / internal::LatencyWindow::kSlices,
          std::chrono::nanoseconds(std::chrono::milliseconds(100)).count())),
      latencies_(config.window()),
      budget_(BudgetConfig(config)) {
  // An invalid config may also be an invalid budget; ours says why first.
  if (status_.ok() && !budget_.status().ok()) status_ = budget_.status();
  refresh_ns_ = std::max<int64_t>(refresh_ns_, 1);
}

nanoseconds AdaptiveHedging::Clamp(nanoseconds delay) const {
  return std::clamp(delay, config_.min_delay(), config_.max_delay());
}

std::optional<nanoseconds> AdaptiveHedging::Percentile(time_point now) const {
  return latencies_.Quantile(now, config_.percentile(), config_.min_samples());
}

nanoseconds AdaptiveHedging::HedgeDelay(time_point now, nanoseconds fixed) {
  const int64_t t = now.time_since_epoch().count();
  int64_t due = refresh_at_ns_.load(std::memory_order_relaxed);
  // Due, or the clock is far before the last refresh (another clock).
  if ((t >= due || t < due - 2 * refresh_ns_) &&
      refresh_at_ns_.compare_exchange_strong(due, t + refresh_ns_,
                                             std::memory_order_relaxed)) {
    const std::optional<nanoseconds> percentile = Percentile(now);
    learned_ns_.store(percentile ? Clamp(*percentile).count() : -1,
                      std::memory_order_relaxed);
  }
  const int64_t learned = learned_ns_.load(std::memory_order_relaxed);
  return learned >= 0 ? nanoseconds(learned) : Clamp(fixed);
}

}  // namespace stubkit
