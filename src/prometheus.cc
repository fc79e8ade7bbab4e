// Copyright 2026 The stubkit Authors.

#include "stubkit/prometheus.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

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

// A histogram of `buckets` (counts per kLatencyBucketBoundsMs bucket, the
// last one above every bound) and their sum in milliseconds, in seconds.
prometheus::ClientMetric Histogram(
    prometheus::ClientMetric::Label method,
    const std::array<int64_t, kLatencyBucketBoundsMs.size() + 1>& buckets,
    double sum_ms) {
  prometheus::ClientMetric histogram;
  histogram.label = {std::move(method)};
  uint64_t cumulative = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    cumulative += static_cast<uint64_t>(buckets[i]);
    // The last bucket is the one above every bound: +Inf.
    double bound = i < kLatencyBucketBoundsMs.size()
                       ? kLatencyBucketBoundsMs[i] / 1000
                       : std::numeric_limits<double>::infinity();
    histogram.histogram.bucket.push_back({cumulative, bound});
  }
  // The count is the buckets' total, so that it matches the +Inf bucket
  // even when a call is recorded while the snapshot is taken.
  histogram.histogram.sample_count = cumulative;
  histogram.histogram.sample_sum = sum_ms / 1000;
  return histogram;
}

}  // namespace

std::vector<prometheus::MetricFamily> ToPrometheus(
    const std::vector<MethodMetrics>& snapshot) {
  auto retries = Family("grpc_client_call_retries_total",
                        "Attempts sent after an earlier one failed, summed "
                        "over calls.",
                        prometheus::MetricType::Counter);
  auto hedges = Family("grpc_client_call_hedges_total",
                       "Attempts a hedged call sent beside its first, summed "
                       "over calls.",
                       prometheus::MetricType::Counter);
  auto retry_delay = Family("grpc_client_call_retry_delay_seconds",
                            "Per call that retried, the total time it waited "
                            "between attempts.",
                            prometheus::MetricType::Histogram);
  auto calls = Family("stubkit_client_calls_total",
                      "Finished calls by method and stop reason.",
                      prometheus::MetricType::Counter);
  auto duration = Family("stubkit_client_call_duration_seconds",
                         "Whole-call latency, retries and waits included.",
                         prometheus::MetricType::Histogram);
  for (const MethodMetrics& m : snapshot) {
    prometheus::ClientMetric::Label method{"method", m.method};

    prometheus::ClientMetric retry;
    retry.label = {method};
    retry.counter.value = static_cast<double>(m.retries);
    retries.metric.push_back(std::move(retry));

    prometheus::ClientMetric hedge;
    hedge.label = {method};
    hedge.counter.value = static_cast<double>(m.hedges);
    hedges.metric.push_back(std::move(hedge));

    retry_delay.metric.push_back(
        Histogram(method, m.retry_delay_buckets, m.retry_delay_sum_ms));

    // Every reason, zeros included, so that rate() sees a series from its
    // first scrape.
    for (int i = 0; i < kStopReasonCount; ++i) {
      prometheus::ClientMetric stop;
      stop.label = {method,
                    {"stop_reason",
                     std::string(PrometheusLabel(static_cast<StopReason>(i)))}};
      stop.counter.value = static_cast<double>(m.stops[i]);
      calls.metric.push_back(std::move(stop));
    }

    duration.metric.push_back(
        Histogram(method, m.latency_buckets, m.latency_sum_ms));
  }
  return {std::move(retries), std::move(calls), std::move(duration),
          std::move(hedges), std::move(retry_delay)};
}

}  // namespace stubkit
