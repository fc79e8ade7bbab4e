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
// Register it where a Registry is (Exposer, Gateway), not in one. Every
// series is labelled `grpc_method` and `grpc_target` (gRFC A96's); one
// family per row of STUBKIT_METRICS (metrics.h) that names one, described
// in docs/observability.md.

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

// The metric families for one snapshot (see above); `target` is
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
