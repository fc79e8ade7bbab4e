// Copyright 2026 The stubkit Authors.
//
// Prometheus export of a MetricsCollector (optional library
// stubkit::prometheus, built when prometheus-cpp is found; CMake option
// STUBKIT_WITH_PROMETHEUS).
//
// The collector is polled, not pushed to: PrometheusCollectable is a
// prometheus::Collectable whose Collect() takes a Snapshot() at scrape time
// and turns it into metric families. Nothing is added to a call's path.
//
//   auto metrics = std::make_shared<stubkit::MetricsCollector>();
//   auto options = stubkit::Options{}.set<stubkit::MetricsOption>(metrics);
//   ...
//   prometheus::Exposer exposer("127.0.0.1:9464");
//   auto collectable =
//       std::make_shared<stubkit::PrometheusCollectable>(metrics);
//   exposer.RegisterCollectable(collectable);  // beside your own Registry
//
// prometheus-cpp 1.0's Registry only holds its own families, so the
// collectable is registered where a Registry is (Exposer, Gateway), not in
// one. Families, each labelled by `method` (the full gRPC method name):
//
//   grpc_client_call_retries_total      counter: attempts sent after an
//                                       earlier one failed, summed over
//                                       calls (the sum of gRPC A96's
//                                       grpc.client.call.retries histogram;
//                                       the collector keeps no per-call
//                                       distribution of counts)
//   grpc_client_call_hedges_total       counter: attempts hedged calls sent
//                                       beside their first (the sum of A96's
//                                       grpc.client.call.hedges; a hedged
//                                       call makes no retries)
//   grpc_client_call_retry_delay_seconds
//                                       histogram of A96's
//                                       grpc.client.call.retry_delay: per
//                                       call that retried, the total time it
//                                       waited between attempts (backoff,
//                                       server hints, the throttle's waiting
//                                       mode), buckets kLatencyBucketBoundsMs
//   stubkit_client_calls_total          counter, also labelled `stop_reason`
//                                       (success, permanent_error,
//                                       non_idempotent, exhausted, deadline,
//                                       throttled, cancelled,
//                                       invalid_argument)
//   stubkit_client_call_duration_seconds
//                                       histogram of whole-call latency,
//                                       buckets kLatencyBucketBoundsMs

#ifndef STUBKIT_PROMETHEUS_H_
#define STUBKIT_PROMETHEUS_H_

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "stubkit/metrics.h"
#include "stubkit/status.h"

namespace stubkit {

// The `stop_reason` label's value: "success", "exhausted", ...
absl::string_view PrometheusLabel(StopReason reason);

// The metric families for one snapshot (see the list above).
std::vector<prometheus::MetricFamily> ToPrometheus(
    const std::vector<MethodMetrics>& snapshot);

class PrometheusCollectable final : public prometheus::Collectable {
 public:
  explicit PrometheusCollectable(
      std::shared_ptr<const MetricsCollector> metrics)
      : metrics_(std::move(metrics)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    return ToPrometheus(metrics_->Snapshot());
  }

 private:
  std::shared_ptr<const MetricsCollector> metrics_;
};

}  // namespace stubkit

#endif  // STUBKIT_PROMETHEUS_H_
