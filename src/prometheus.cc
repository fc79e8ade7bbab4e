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

prometheus::MetricFamily Family(std::string name, std::string help,
                                prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

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

// Calls by stop reason: every reason, zeros included, so that rate() sees
// a series from its first scrape.
void AppendStops(const Labels& labels, const MethodMetrics& m,
                 prometheus::MetricFamily& calls) {
  for (int i = 0; i < kStopReasonCount; ++i) {
    prometheus::ClientMetric stop;
    stop.label = labels;
    stop.label.push_back({"stop_reason", std::string(PrometheusLabel(
                                             static_cast<StopReason>(i)))});
    stop.counter.value = static_cast<double>(m.stops[static_cast<size_t>(i)]);
    calls.metric.push_back(std::move(stop));
  }
}

}  // namespace

std::vector<prometheus::MetricFamily> ToPrometheus(
    const std::vector<MethodMetrics>& snapshot, absl::string_view target) {
  // gRFC A96's instruments, named as OpenTelemetry's Prometheus exporter
  // names them (dots to underscores, unit "s" as "_seconds").
  auto retries = Family("grpc_client_call_retries",
                        "A96 grpc.client.call.retries: per call that "
                        "retried, the number of retries.",
                        prometheus::MetricType::Histogram);
  auto hedges = Family("grpc_client_call_hedges",
                       "A96 grpc.client.call.hedges: per call that hedged, "
                       "the number of hedges.",
                       prometheus::MetricType::Histogram);
  auto retry_delay = Family("grpc_client_call_retry_delay_seconds",
                            "A96 grpc.client.call.retry_delay: per call that "
                            "retried, the total time it waited between "
                            "attempts.",
                            prometheus::MetricType::Histogram);
  // stubkit's own.
  auto calls = Family("stubkit_client_calls_total",
                      "Finished calls by method and stop reason.",
                      prometheus::MetricType::Counter);
  auto duration = Family("stubkit_client_call_duration_seconds",
                         "Whole-call latency, retries and waits included.",
                         prometheus::MetricType::Histogram);
  auto refused = Family("stubkit_client_hedges_refused_total",
                        "Hedged calls whose hedge the hedging budget "
                        "refused (AdaptiveHedgingOption).",
                        prometheus::MetricType::Counter);
  const std::string target_label =
      target.empty() ? std::string("other") : std::string(target);
  for (const MethodMetrics& m : snapshot) {
    const Labels labels = {{"grpc_method", m.method},
                           {"grpc_target", target_label}};
    retries.metric.push_back(Histogram(labels, m.retries_buckets,
                                       kCountBucketBounds, 1,
                                       static_cast<double>(m.retries)));
    hedges.metric.push_back(Histogram(labels, m.hedges_buckets,
                                      kCountBucketBounds, 1,
                                      static_cast<double>(m.hedges)));
    retry_delay.metric.push_back(Histogram(labels, m.retry_delay_buckets,
                                           kLatencyBucketBoundsMs, 1000,
                                           m.retry_delay_sum_ms / 1000));

    AppendStops(labels, m, calls);

    duration.metric.push_back(Histogram(labels, m.latency_buckets,
                                        kLatencyBucketBoundsMs, 1000,
                                        m.latency_sum_ms / 1000));
    prometheus::ClientMetric refusals;
    refusals.label = labels;
    refusals.counter.value = static_cast<double>(m.hedges_refused_by_budget);
    refused.metric.push_back(std::move(refusals));
  }
  return {std::move(retries), std::move(hedges),   std::move(retry_delay),
          std::move(calls),   std::move(duration), std::move(refused)};
}

}  // namespace stubkit
