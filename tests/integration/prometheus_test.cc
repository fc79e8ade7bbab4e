// Copyright 2026 The stubkit Authors.
//
// stubkit::prometheus end to end: calls that retry against a real gRPC
// server on 127.0.0.1, a prometheus::Exposer on a picked port, and a scrape
// of /metrics over plain HTTP. Built only with STUBKIT_WITH_PROMETHEUS.

#include "stubkit/prometheus.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/entry/unary_call.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_policy.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::TestServer;
using ::testing::HasSubstr;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};
constexpr MethodInfo kAppend{"stubkit.testing.EchoService.Append",
                             RpcKind::kUnary, Idempotency::kNonIdempotent};

// Backoffs are recorded, not slept: the test stays fast.
class SkippingSleeper : public Sleeper {
 public:
  void SleepFor(nanoseconds) override {}
};

// GET `path` from 127.0.0.1:`port` over a plain socket; the whole response,
// or "" on a socket error. HTTP/1.0 without Accept-Encoding: the server
// answers uncompressed and closes the connection at the end.
std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) ==
      0) {
    std::string request =
        "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), 0) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) {
        response.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  return response;
}

// The value of the sample line `series` ("name{labels}"), if present.
std::optional<double> Sample(const std::string& body,
                             const std::string& series) {
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

std::string Calls(const std::string& method, const std::string& reason) {
  return "stubkit_client_calls_total{grpc_method=\"stubkit.testing."
         "EchoService." +
         method + "\",grpc_target=\"other\",stop_reason=\"" + reason + "\"}";
}

class PrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(&service_);
    ASSERT_TRUE(server_->ok());
    stub_ = EchoService::NewStub(server_->Channel());
    client_options_.set<SleeperOption>(std::make_shared<SkippingSleeper>());
    client_options_.set<MetricsOption>(metrics_);
    // Three attempts at most: a call that keeps failing stops as exhausted.
    client_options_.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2));
  }
  void TearDown() override { server_->Shutdown(); }

  absl::Status Call(const MethodInfo& method, const std::string& message,
                    int fail_first, grpc::StatusCode code) {
    EchoRequest request;
    request.set_message(message);
    request.set_fail_first(fail_first);
    request.set_fail_code(code);
    return RetryLoop<EchoResponse>(
               method, OptionsView(Options{}, client_options_),
               [&](grpc::ClientContext& context)
                   -> absl::StatusOr<EchoResponse> {
                 EchoResponse response;
                 grpc::Status status =
                     &method == &kEcho
                         ? stub_->Echo(&context, request, &response)
                         : stub_->Append(&context, request, &response);
                 if (!status.ok()) return FromGrpcStatus(status);
                 return response;
               })
        .status();
  }

  // A sync Echo hedged with up to 3 attempts; the hedging delay never
  // passes, so each further attempt goes out after a non-fatal failure.
  absl::Status HedgedEcho(const std::string& message, int fail_first) {
    EchoRequest request;
    request.set_message(message);
    request.set_fail_first(fail_first);
    request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
    const Options call = Options{}.set<HedgingPolicyOption>(
        HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(
            std::chrono::minutes(10)));
    return internal::RunUnary<EchoResponse>(
               kEcho, OptionsView(call, client_options_), request,
               [&](grpc::ClientContext& context)
                   -> absl::StatusOr<EchoResponse> {
                 EchoResponse response;
                 grpc::Status status =
                     stub_->Echo(&context, request, &response);
                 if (!status.ok()) return FromGrpcStatus(status);
                 return response;
               },
               [] {})
        .status();
  }

  std::shared_ptr<MetricsCollector> metrics_ =
      std::make_shared<MetricsCollector>();
  FlakyEchoService service_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<EchoService::Stub> stub_;
  Options client_options_;
};

TEST_F(PrometheusTest, ScrapeShowsRetriesStopReasonsAndLatency) {
  prometheus::Exposer exposer("127.0.0.1:0");
  std::vector<int> ports = exposer.GetListeningPorts();
  ASSERT_EQ(ports.size(), 1u);
  ASSERT_GT(ports[0], 0);
  auto collectable = std::make_shared<PrometheusCollectable>(metrics_);
  exposer.RegisterCollectable(collectable);

  const auto kUnavailable = grpc::StatusCode::UNAVAILABLE;
  EXPECT_TRUE(Call(kEcho, "two-failures", 2, kUnavailable).ok());
  EXPECT_TRUE(Call(kEcho, "one-failure", 1, kUnavailable).ok());
  EXPECT_TRUE(Call(kEcho, "no-failure", 0, kUnavailable).ok());
  EXPECT_FALSE(Call(kEcho, "always-fails", 100, kUnavailable).ok());
  EXPECT_FALSE(
      Call(kEcho, "permanent", 100, grpc::StatusCode::FAILED_PRECONDITION)
          .ok());
  EXPECT_FALSE(Call(kAppend, "append", 1, kUnavailable).ok());
  // What the server saw: 3 + 2 + 1 + 3 + 1 Echo attempts, 1 Append.
  ASSERT_EQ(service_.attempts("two-failures"), 3);
  ASSERT_EQ(service_.attempts("always-fails"), 3);
  ASSERT_EQ(service_.attempts("append"), 1);

  std::string response = HttpGet(ports[0], "/metrics");
  ASSERT_THAT(response, HasSubstr(" 200 OK"));
  std::string body = response.substr(response.find("\r\n\r\n") + 4);

  EXPECT_THAT(body, HasSubstr("# TYPE grpc_client_call_retries histogram"));
  EXPECT_THAT(body, HasSubstr("# TYPE stubkit_client_calls_total counter"));
  EXPECT_THAT(body, HasSubstr("# TYPE stubkit_client_call_duration_seconds "
                              "histogram"));
  // A96's labels: grpc_method, and grpc_target ("other": the collector
  // was made without a target).
  const std::string echo =
      "{grpc_method=\"stubkit.testing.EchoService.Echo\",grpc_target="
      "\"other\"}";
  const std::string append =
      "{grpc_method=\"stubkit.testing.EchoService.Append\",grpc_target="
      "\"other\"}";
  // A96: one observation per call that retried (3 of them), of its retries.
  EXPECT_EQ(Sample(body, "grpc_client_call_retries_sum" + echo), 2 + 1 + 2);
  EXPECT_EQ(Sample(body, "grpc_client_call_retries_count" + echo), 3);
  EXPECT_EQ(Sample(body, "grpc_client_call_retries_count" + append), 0);
  const std::string retries_bucket =
      "grpc_client_call_retries_bucket{grpc_method=\"stubkit.testing."
      "EchoService.Echo\",grpc_target=\"other\",le=";
  EXPECT_EQ(Sample(body, retries_bucket + "\"1\"}"), 1);
  EXPECT_EQ(Sample(body, retries_bucket + "\"2\"}"), 3);
  EXPECT_EQ(Sample(body, retries_bucket + "\"+Inf\"}"), 3);

  EXPECT_EQ(Sample(body, Calls("Echo", "success")), 3);
  EXPECT_EQ(Sample(body, Calls("Echo", "exhausted")), 1);
  EXPECT_EQ(Sample(body, Calls("Echo", "permanent_error")), 1);
  EXPECT_EQ(Sample(body, Calls("Echo", "non_idempotent")), 0);
  EXPECT_EQ(Sample(body, Calls("Append", "non_idempotent")), 1);
  EXPECT_EQ(Sample(body, Calls("Append", "success")), 0);

  EXPECT_EQ(Sample(body, "stubkit_client_call_duration_seconds_count" + echo),
            5);
  EXPECT_EQ(Sample(body, "stubkit_client_call_duration_seconds_count" + append),
            1);
  EXPECT_EQ(Sample(body,
                   "stubkit_client_call_duration_seconds_bucket{grpc_method="
                   "\"stubkit.testing.EchoService.Echo\",grpc_target=\"other\","
                   "le=\"+Inf\"}"),
            5);
  // Real calls took some time, and far less than the 30-minute top bound.
  std::optional<double> sum =
      Sample(body, "stubkit_client_call_duration_seconds_sum" + echo);
  ASSERT_TRUE(sum.has_value());
  EXPECT_GT(*sum, 0);
  EXPECT_LT(*sum, 1800);

  // Counters are cumulative: one more retried call shows on the next scrape.
  EXPECT_TRUE(Call(kEcho, "later", 1, kUnavailable).ok());
  body = HttpGet(ports[0], "/metrics");
  EXPECT_EQ(Sample(body, "grpc_client_call_retries_sum" + echo), 6);
  EXPECT_EQ(Sample(body, Calls("Echo", "success")), 4);
}

TEST_F(PrometheusTest, ScrapeShowsHedgesAndRetryDelay) {
  prometheus::Exposer exposer("127.0.0.1:0");
  std::vector<int> ports = exposer.GetListeningPorts();
  ASSERT_EQ(ports.size(), 1u);
  auto collectable = std::make_shared<PrometheusCollectable>(metrics_);
  exposer.RegisterCollectable(collectable);
  // Waits of exactly 100 ms, then 200 ms (chosen, not slept).
  client_options_.set<BackoffPolicyOption>(
      ExponentialBackoffPolicy()
          .WithInitialDelay(milliseconds(100))
          .WithMaximumDelay(milliseconds(1000))
          .WithMultiplier(2.0)
          .WithJitter(Jitter::None()));

  const auto kUnavailable = grpc::StatusCode::UNAVAILABLE;
  EXPECT_TRUE(Call(kEcho, "two-failures", 2, kUnavailable).ok());
  EXPECT_TRUE(Call(kEcho, "one-failure", 1, kUnavailable).ok());
  EXPECT_TRUE(Call(kEcho, "no-failure", 0, kUnavailable).ok());
  EXPECT_TRUE(HedgedEcho("hedged-once", 1).ok());
  EXPECT_TRUE(HedgedEcho("hedged-twice", 2).ok());
  ASSERT_EQ(service_.attempts("two-failures"), 3);
  ASSERT_EQ(service_.attempts("hedged-once"), 2);
  ASSERT_EQ(service_.attempts("hedged-twice"), 3);

  std::string response = HttpGet(ports[0], "/metrics");
  ASSERT_THAT(response, HasSubstr(" 200 OK"));
  const std::string body = response.substr(response.find("\r\n\r\n") + 4);
  EXPECT_THAT(body, HasSubstr("# TYPE grpc_client_call_hedges histogram"));
  EXPECT_THAT(body, HasSubstr("# TYPE grpc_client_call_retry_delay_seconds "
                              "histogram"));
  const std::string echo =
      "{grpc_method=\"stubkit.testing.EchoService.Echo\",grpc_target="
      "\"other\"}";
  // A96: a hedged call's further attempts are hedges, never retries.
  EXPECT_EQ(Sample(body, "grpc_client_call_retries_sum" + echo), 2 + 1);
  EXPECT_EQ(Sample(body, "grpc_client_call_hedges_sum" + echo), 1 + 2);
  EXPECT_EQ(Sample(body, "grpc_client_call_hedges_count" + echo), 2);
  // Observed for the two calls that retried: 100 + 200 ms and 100 ms.
  const std::string delay = "grpc_client_call_retry_delay_seconds";
  EXPECT_EQ(Sample(body, delay + "_count" + echo), 2);
  std::optional<double> sum = Sample(body, delay + "_sum" + echo);
  ASSERT_TRUE(sum.has_value());
  EXPECT_DOUBLE_EQ(*sum, 0.4);
  const std::string bucket =
      delay +
      "_bucket{grpc_method=\"stubkit.testing.EchoService.Echo\",grpc_target="
      "\"other\",le=";
  EXPECT_EQ(Sample(body, bucket + "\"0.05\"}"), 0);
  EXPECT_EQ(Sample(body, bucket + "\"0.1\"}"), 1);
  EXPECT_EQ(Sample(body, bucket + "\"0.2\"}"), 1);
  EXPECT_EQ(Sample(body, bucket + "\"0.5\"}"), 2);
  EXPECT_EQ(Sample(body, bucket + "\"+Inf\"}"), 2);
}

// The family `name` of `families` (found by name: a family added to
// STUBKIT_METRICS moves no other).
const prometheus::MetricFamily& Named(
    const std::vector<prometheus::MetricFamily>& families,
    const std::string& name) {
  for (const prometheus::MetricFamily& family : families) {
    if (family.name == name) return family;
  }
  ADD_FAILURE() << "no family " << name;
  static const prometheus::MetricFamily kNone;
  return kNone;
}

TEST(PrometheusFamiliesTest, HistogramBucketsAreCumulativeInSeconds) {
  MethodMetrics m;
  m.method = "pkg.Service.Method";
  m.latency_buckets[0] = 2;      // <= 0.5 ms
  m.latency_buckets[4] = 1;      // (5 ms, 10 ms]
  m.latency_buckets.back() = 1;  // above every bound
  m.latency_sum_ms = 2500;
  m.hedges = 4;
  m.hedges_buckets[1] = 2;       // two calls with 2 hedges each
  m.retry_delay_buckets[6] = 3;  // (20 ms, 50 ms]
  m.retry_delay_sum_ms = 120;
  m.hedges_refused_by_budget = 3;
  std::vector<prometheus::MetricFamily> families =
      ToPrometheus({m}, "dns:///backend:443");
  EXPECT_EQ(Named(families, "stubkit_client_hedges_refused_total")
                .metric.at(0)
                .counter.value,
            3);
  const prometheus::ClientMetric& duration =
      Named(families, "stubkit_client_call_duration_seconds").metric.at(0);
  ASSERT_EQ(duration.label.size(), 2u);
  EXPECT_EQ(duration.label[0].name, "grpc_method");
  EXPECT_EQ(duration.label[0].value, "pkg.Service.Method");
  EXPECT_EQ(duration.label[1].name, "grpc_target");
  EXPECT_EQ(duration.label[1].value, "dns:///backend:443");
  const prometheus::ClientMetric::Histogram& h = duration.histogram;
  ASSERT_EQ(h.bucket.size(), kLatencyBucketBoundsMs.size() + 1);
  EXPECT_EQ(h.bucket[0].upper_bound, 0.0005);
  EXPECT_EQ(h.bucket[0].cumulative_count, 2u);
  EXPECT_EQ(h.bucket[3].cumulative_count, 2u);
  EXPECT_EQ(h.bucket[4].upper_bound, 0.010);
  EXPECT_EQ(h.bucket[4].cumulative_count, 3u);
  EXPECT_EQ(h.bucket.back().cumulative_count, 4u);
  EXPECT_EQ(h.sample_count, 4u);
  EXPECT_EQ(h.sample_sum, 2.5);
  // One calls series per stop reason, zeros included.
  EXPECT_EQ(Named(families, "stubkit_client_calls_total").metric.size(),
            static_cast<size_t>(kStopReasonCount));

  const prometheus::ClientMetric::Histogram& hedges =
      Named(families, "grpc_client_call_hedges").metric.at(0).histogram;
  ASSERT_EQ(hedges.bucket.size(), kCountBucketBounds.size() + 1);
  EXPECT_EQ(hedges.bucket[0].upper_bound, 1);
  EXPECT_EQ(hedges.bucket[0].cumulative_count, 0u);
  EXPECT_EQ(hedges.bucket[1].cumulative_count, 2u);
  EXPECT_EQ(hedges.sample_count, 2u);
  EXPECT_EQ(hedges.sample_sum, 4);
  const prometheus::ClientMetric::Histogram& delay =
      Named(families, "grpc_client_call_retry_delay_seconds")
          .metric.at(0)
          .histogram;
  ASSERT_EQ(delay.bucket.size(), kLatencyBucketBoundsMs.size() + 1);
  EXPECT_EQ(delay.bucket[5].cumulative_count, 0u);
  EXPECT_EQ(delay.bucket[6].upper_bound, 0.050);
  EXPECT_EQ(delay.bucket[6].cumulative_count, 3u);
  EXPECT_EQ(delay.bucket.back().cumulative_count, 3u);
  EXPECT_EQ(delay.sample_count, 3u);
  EXPECT_EQ(delay.sample_sum, 0.12);
}

// Two methods with a different figure in every field: the exporter's text
// for them, as a scrape serves it.
std::vector<MethodMetrics> EveryFieldSet() {
  std::vector<MethodMetrics> snapshot(2);
  int64_t next = 1;
  for (MethodMetrics& m : snapshot) {
    m.method = next == 1 ? "pkg.Service.A" : "pkg.Service.B";
    m.calls = next++;
    m.attempts = next++;
    m.retries = next++;
    m.hedges = next++;
    for (int64_t& count : m.retries_buckets) count = next++;
    for (int64_t& count : m.hedges_buckets) count = next++;
    m.hedges_refused_by_budget = next++;
    for (int64_t& count : m.stops) count = next++;
    for (int64_t& count : m.latency_buckets) count = next++;
    m.latency_sum_ms = 1234.5678 * static_cast<double>(next++);
    for (int64_t& count : m.retry_delay_buckets) count = next++;
    m.retry_delay_sum_ms = 0.125 * static_cast<double>(next++);
  }
  return snapshot;
}

// The blocks of `text` (each from its "# HELP" line) of the families named
// in `names`, in their order in `text`.
std::string FamiliesNamed(const std::string& text,
                          const std::set<std::string>& names) {
  std::string kept;
  bool keep = false;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      keep = names.count(line.substr(7, line.find(' ', 7) - 7)) > 0;
    }
    if (keep) kept += line + "\n";
  }
  return kept;
}

// The families' text, byte for byte, pinned when they were six
// (prometheus_families.txt beside this file). A family added later does not
// change this pin: the test of the metrics' one list checks that every
// declared metric is exported.
TEST(PrometheusFamiliesTest, TextOfTheSixFamiliesIsPinned) {
  const std::string text = prometheus::TextSerializer().Serialize(
      ToPrometheus(EveryFieldSet(), "dns:///backend:443"));
  const std::string actual = FamiliesNamed(
      text,
      {"grpc_client_call_retries", "grpc_client_call_hedges",
       "grpc_client_call_retry_delay_seconds", "stubkit_client_calls_total",
       "stubkit_client_call_duration_seconds",
       "stubkit_client_hedges_refused_total"});
  const std::string golden =
      STUBKIT_SOURCE_DIR "/tests/integration/prometheus_families.txt";
  std::ifstream in(golden, std::ios::binary);
  std::stringstream expected;
  expected << in.rdbuf();
  if (actual != expected.str()) {
    // What to diff against the pin.
    const std::string written =
        ::testing::TempDir() + "prometheus_families.actual.txt";
    std::ofstream(written, std::ios::binary) << actual;
    ADD_FAILURE() << golden << " differs from the exporter's text, written "
                  << "to " << written;
  }
}
// A family per row of STUBKIT_METRICS that names one, in its order.
std::vector<std::string> DeclaredFamilies() {
  std::vector<std::string> names;
#define STUBKIT_ROW_(family) \
  if (family[0] != '\0') names.push_back(family);
#define STUBKIT_ONE_(field, family, help) STUBKIT_ROW_(family)
#define STUBKIT_TWO_(field, other, family, help) STUBKIT_ROW_(family)
  STUBKIT_METRICS(STUBKIT_ONE_, STUBKIT_TWO_, STUBKIT_TWO_, STUBKIT_ONE_)
#undef STUBKIT_ROW_
#undef STUBKIT_ONE_
#undef STUBKIT_TWO_
  return names;
}

// A metric is declared once: every family STUBKIT_METRICS names is
// exported, in its order, with a series for each method, and nothing else
// is; and docs/observability.md's table has a row for each.
TEST(PrometheusFamiliesTest, EveryDeclaredMetricIsExportedAndDocumented) {
  const std::vector<MethodMetrics> snapshot = EveryFieldSet();
  const std::vector<prometheus::MetricFamily> families =
      ToPrometheus(snapshot, "dns:///backend:443");
  std::vector<std::string> exported;
  for (const prometheus::MetricFamily& family : families) {
    exported.push_back(family.name);
    EXPECT_FALSE(family.help.empty()) << family.name;
    EXPECT_GE(family.metric.size(), snapshot.size()) << family.name;
  }
  const std::vector<std::string> declared = DeclaredFamilies();
  EXPECT_EQ(exported, declared);

  std::ifstream in(STUBKIT_SOURCE_DIR "/docs/observability.md");
  std::stringstream docs;
  docs << in.rdbuf();
  for (const std::string& name : declared) {
    EXPECT_THAT(docs.str(), HasSubstr("| `" + name + "{grpc_method"))
        << "docs/observability.md's table of families has no row for " << name;
  }
}

}  // namespace
}  // namespace stubkit
