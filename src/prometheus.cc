// Copyright 2026 The stubkit Authors.

#include "stubkit/prometheus.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace stubkit {

absl::string_view PrometheusLabel(StopReason reason) {
  return ToIdentifier(reason);
}

namespace {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// A histogram of `buckets` (counts per bucket of `bounds`, then one above
// every bound), with `sum`; each bound is divided by `scale` (ms -> s).
template <size_t N, typename Bound, size_t M>
prometheus::ClientMetric Histogram(Labels labels,
                                   const std::array<int64_t, N>& buckets,
                                   const std::array<Bound, M>& bounds,
                                   double scale, double sum) {
  static_assert(N == M + 1, "one bucket above the last bound");
  prometheus::ClientMetric histogram;
  histogram.label = std::move(labels);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    cumulative += static_cast<uint64_t>(buckets[i]);
    // The last bucket is the one above every bound: +Inf.
    double bound = i < bounds.size() ? static_cast<double>(bounds[i]) / scale
                                     : std::numeric_limits<double>::infinity();
    histogram.histogram.bucket.push_back({cumulative, bound});
  }
  // The count is the buckets' total, so that it matches the +Inf bucket
  // even when a call is recorded while the snapshot is taken.
  histogram.histogram.sample_count = cumulative;
  histogram.histogram.sample_sum = sum;
  return histogram;
}

// A counter series of `value`.
prometheus::ClientMetric Counter(Labels labels, int64_t value) {
  prometheus::ClientMetric counter;
  counter.label = std::move(labels);
  counter.counter.value = static_cast<double>(value);
  return counter;
}

// The family `name`: `add_series(labels, m, family)` appends the series of
// each method `m` of the snapshot, labelled `labels`.
template <typename AddSeries>
prometheus::MetricFamily FamilyOf(const char* name, const char* help,
                                  prometheus::MetricType type,
                                  const std::vector<MethodMetrics>& snapshot,
                                  const std::string& target,
                                  AddSeries add_series) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  for (const MethodMetrics& m : snapshot) {
    add_series(Labels{{"grpc_method", m.method}, {"grpc_target", target}}, m,
               family);
  }
  return family;
}

}  // namespace

std::vector<prometheus::MetricFamily> ToPrometheus(
    const std::vector<MethodMetrics>& snapshot, absl::string_view target) {
  // One family per row of STUBKIT_METRICS (metrics.h) that names one, in
  // its order: gRFC A96's instruments are named as OpenTelemetry's
  // Prometheus exporter names them (dots to underscores, unit "s" as
  // "_seconds"), and every family carries A96's labels.
  const std::string target_label =
      target.empty() ? std::string("other") : std::string(target);
  std::vector<prometheus::MetricFamily> families;
  using prometheus::MetricType;
#define STUBKIT_COUNTER_(field, family, help)                               \
  if (family[0] != '\0') {                                                  \
    families.push_back(                                                     \
        FamilyOf(family, help, MetricType::Counter, snapshot, target_label, \
                 [](Labels labels, const MethodMetrics& m,                  \
                    prometheus::MetricFamily& f) {                          \
                   f.metric.push_back(Counter(std::move(labels), m.field)); \
                 }));                                                       \
  }
#define STUBKIT_COUNT_HISTOGRAM_(sum, buckets, family, help)                   \
  families.push_back(FamilyOf(                                                 \
      family, help, MetricType::Histogram, snapshot, target_label,             \
      [](Labels labels, const MethodMetrics& m, prometheus::MetricFamily& f) { \
        f.metric.push_back(Histogram(std::move(labels), m.buckets,             \
                                     kCountBucketBounds, 1,                    \
                                     static_cast<double>(m.sum)));             \
      }));
// Bounds in milliseconds, exported in seconds.
#define STUBKIT_TIME_HISTOGRAM_(buckets, sum_ms, family, help)                 \
  families.push_back(FamilyOf(                                                 \
      family, help, MetricType::Histogram, snapshot, target_label,             \
      [](Labels labels, const MethodMetrics& m, prometheus::MetricFamily& f) { \
        f.metric.push_back(Histogram(std::move(labels), m.buckets,             \
                                     kLatencyBucketBoundsMs, 1000,             \
                                     m.sum_ms / 1000));                        \
      }));
// Every reason, zeros included, so that rate() sees a series from its
// first scrape.
#define STUBKIT_BY_STOP_REASON_(field, family, help)                           \
  families.push_back(FamilyOf(                                                 \
      family, help, MetricType::Counter, snapshot, target_label,               \
      [](const Labels& labels, const MethodMetrics& m,                         \
         prometheus::MetricFamily& f) {                                        \
        for (int i = 0; i < kStopReasonCount; ++i) {                           \
          Labels by_reason = labels;                                           \
          by_reason.push_back(                                                 \
              {"stop_reason",                                                  \
               std::string(PrometheusLabel(static_cast<StopReason>(i)))});     \
          f.metric.push_back(                                                  \
              Counter(std::move(by_reason), m.field[static_cast<size_t>(i)])); \
        }                                                                      \
      }));
  STUBKIT_METRICS(STUBKIT_COUNTER_, STUBKIT_COUNT_HISTOGRAM_,
                  STUBKIT_TIME_HISTOGRAM_, STUBKIT_BY_STOP_REASON_)
#undef STUBKIT_COUNTER_
#undef STUBKIT_COUNT_HISTOGRAM_
#undef STUBKIT_TIME_HISTOGRAM_
#undef STUBKIT_BY_STOP_REASON_
  return families;
}

}  // namespace stubkit
