// Uses the installed stubkit::prometheus (built only when the installed
// stubkit has it): one recorded call, exported in Prometheus text form.

#include <prometheus/text_serializer.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>

#include "stubkit/metrics.h"
#include "stubkit/prometheus.h"

int main() {
  auto metrics =
      std::make_shared<stubkit::MetricsCollector>("dns:///greeter:50051");
  metrics->RecordCall("greeter.Greeter.SayHello", 2,
                      stubkit::StopReason::kSuccess,
                      std::chrono::milliseconds(3));
  stubkit::PrometheusCollectable collectable(metrics);
  std::string text =
      prometheus::TextSerializer().Serialize(collectable.Collect());
  std::cout << text;
  // gRFC A96's grpc.client.call.retries, labelled grpc_method and
  // grpc_target.
  const std::string expected =
      "grpc_client_call_retries_sum{grpc_method=\"greeter.Greeter.SayHello\","
      "grpc_target=\"dns:///greeter:50051\"} 1";
  return text.find(expected) == std::string::npos ? 1 : 0;
}
