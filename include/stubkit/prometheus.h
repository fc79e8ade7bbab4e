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
// ```cpp
// #include <prometheus/exposer.h>
//
// #include <memory>
//
// #include "stubkit/prometheus.h"
// #include "stubkit/stubkit.h"
//
// // Link stubkit::prometheus and prometheus-cpp::pull (the Exposer).
// void Export(prometheus::Exposer& exposer,
//             const std::shared_ptr<stubkit::MetricsCollector>& metrics) {
//   exposer.RegisterCollectable(
//       std::make_shared<stubkit::PrometheusCollectable>(metrics));
// }
// ```
//
// prometheus-cpp 1.0's Registry only holds its own families, so the
// collectable is registered where a Registry is (Exposer, Gateway), not in
// one. Every series is labelled `grpc_method` (the full gRPC method name)
// and `grpc_target` (the collector's target, or "other"): gRFC A96's
// grpc.method and grpc.target. The families, A96's first:
//
//   grpc_client_call_retries            A96 grpc.client.call.retries:
//                                       histogram, per call that retried,
//                                       of its retries (buckets 1..5)
//   grpc_client_call_hedges             A96 grpc.client.call.hedges: the
//                                       same for hedges (a hedged call
//                                       makes no retries)
//   grpc_client_call_retry_delay_seconds
//                                       A96 grpc.client.call.retry_delay:
//                                       histogram, per call that retried,
//                                       of the total time it waited between
//                                       attempts (backoff, server hints,
//                                       the throttle's waiting mode)
//   stubkit_client_calls_total          stubkit's: counter, also labelled
//                                       `stop_reason` (success,
//                                       permanent_error, non_idempotent,
//                                       exhausted, deadline, throttled,
//                                       cancelled, invalid_argument,
//                                       not_resumable, server_refused)
//   stubkit_client_call_duration_seconds
//                                       stubkit's: histogram of whole-call
//                                       latency, buckets
//                                       kLatencyBucketBoundsMs

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

// The metric families for one snapshot (see the list above); `target` is
// the grpc_target label ("other" when empty).
std::vector<prometheus::MetricFamily> ToPrometheus(
    const std::vector<MethodMetrics>& snapshot, absl::string_view target = {});

class PrometheusCollectable final : public prometheus::Collectable {
 public:
  explicit PrometheusCollectable(
      std::shared_ptr<const MetricsCollector> metrics)
      : metrics_(std::move(metrics)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    return ToPrometheus(metrics_->Snapshot(), metrics_->target());
  }

 private:
  std::shared_ptr<const MetricsCollector> metrics_;
};

}  // namespace stubkit

#endif  // STUBKIT_PROMETHEUS_H_
