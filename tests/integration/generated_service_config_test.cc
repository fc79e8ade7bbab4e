// Copyright 2026 The stubkit Authors.
//
// A gRPC service config drives a generated client against a real server
// that fails as each request asks: attempts, waits (on a fake clock) and
// stops are the config's, a configured policy makes its method retryable
// (as under gRPC, unless the idempotency rule is kept), and per-call
// options beat the config.
//
// Most tests build the client from `ServiceConfig::OptionsFor(method)`;
// `ToOptionsResolvesPerMethodEntries` builds it from `ToOptions()`, whose
// service and method entries the generated client resolves.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "stubkit/clock.h"
#include "stubkit/logging.h"
#include "stubkit/service_config.h"
#include "stubkit/testing/echo.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::Request;
using ::stubkit::testing::TestServer;

constexpr char kEcho[] = "stubkit.testing.EchoService.Echo";
constexpr char kAppend[] = "stubkit.testing.EchoService.Append";

// A fake clock that also records the waits it was asked for.
class RecordingClock : public FakeClock {
 public:
  void SleepFor(nanoseconds duration) override {
    {
      absl::MutexLock lock(&mu_);
      waits_.push_back(duration);
    }
    FakeClock::SleepFor(duration);
  }
  std::vector<nanoseconds> waits() {
    absl::MutexLock lock(&mu_);
    return waits_;
  }

 private:
  absl::Mutex mu_;
  std::vector<nanoseconds> waits_;
};

// Every method of EchoService: 4 attempts, waits of at most 1 s, 2 s, 4 s.
constexpr char kServiceRetries[] = R"({
  "methodConfig": [{
    "name": [{"service": "stubkit.testing.EchoService"}],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "1s",
      "maxBackoff": "4s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE", "ABORTED"]
    }
  }]
})";

class GeneratedServiceConfigTest : public ::testing::Test {
 protected:
  GeneratedServiceConfigTest() : server_(&service_) {}

  // The config's options for `method`, on the fake clock.
  Options ClientOptions(const std::string& json, const std::string& method) {
    absl::StatusOr<ServiceConfig> config = ParseServiceConfig(json);
    EXPECT_TRUE(config.ok()) << config.status();
    if (!config.ok()) return Options{};
    return config->OptionsFor(method).MergedWith(Clock());
  }
  Options Clock() const {
    return Options{}.set<ClockOption>(clock_).set<SleeperOption>(clock_);
  }

  std::shared_ptr<RecordingClock> clock_ = std::make_shared<RecordingClock>();
  FlakyEchoService service_;
  TestServer server_;
};

TEST_F(GeneratedServiceConfigTest, RetriesAndWaitsAsTheConfigSays) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(),
                           ClientOptions(kServiceRetries, kEcho));
  absl::StatusOr<EchoResponse> response = client.Echo(Request("ok", 2));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->attempt(), 3);
  EXPECT_EQ(service_.attempts("ok"), 3);
  // Full jitter, as gRFC A6: wait n is within [0, min(1s * 2^n, 4s)].
  std::vector<nanoseconds> waits = clock_->waits();
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_LE(waits[0], seconds(1));
  EXPECT_LE(waits[1], seconds(2));
}

TEST_F(GeneratedServiceConfigTest, StopsAfterMaxAttempts) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(),
                           ClientOptions(kServiceRetries, kEcho));
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("exhausted", 100, grpc::StatusCode::ABORTED));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(service_.attempts("exhausted"), 4);  // maxAttempts counts all
  std::vector<nanoseconds> waits = clock_->waits();
  ASSERT_EQ(waits.size(), 3u);
  EXPECT_LE(waits[2], seconds(4));
  std::optional<RetrySummary> summary = GetRetrySummary(response.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(summary->attempts, 4);
}

TEST_F(GeneratedServiceConfigTest, CodesOutsideTheConfigAreNotRetried) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(),
                           ClientOptions(kServiceRetries, kEcho));
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("internal", 100, grpc::StatusCode::INTERNAL));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(service_.attempts("internal"), 1);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kPermanentError);
}

// Issue 23 item 8: as under gRPC, a retryPolicy is the service owner's
// word that the method may be repeated, whatever the proto says.
TEST_F(GeneratedServiceConfigTest, AConfiguredPolicyRetriesAsGrpcDoes) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(),
                           ClientOptions(kServiceRetries, kAppend));
  absl::StatusOr<EchoResponse> response = client.Append(Request("append", 1));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(service_.attempts("append"), 2);
}

TEST_F(GeneratedServiceConfigTest, KeepIdempotencyRulesNeverRetriesAppend) {
  // Opt-in: stubkit's rule decides; Append is not idempotent by its proto.
  ASSERT_TRUE(server_.ok());
  ServiceConfigImport how;
  how.keep_idempotency_rules = true;
  absl::StatusOr<ServiceConfig> config =
      ParseServiceConfig(kServiceRetries, how);
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<std::string> lines;
  class Sink : public LogSink {
   public:
    explicit Sink(std::vector<std::string>* lines) : lines_(lines) {}
    void Write(absl::string_view line) override { lines_->emplace_back(line); }

   private:
    std::vector<std::string>* lines_;
  };
  EchoServiceClient client(
      server_.Channel(),
      config->ToOptions().MergedWith(Clock()).set<LogSinkOption>(
          std::make_shared<Sink>(&lines)));
  absl::StatusOr<EchoResponse> response = client.Append(Request("append", 1));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("append"), 1);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kNonIdempotent);
  // The retry the file gave and the rule dropped is logged, once per
  // client.
  EXPECT_EQ(client.Append(Request("again", 1)).status().code(),
            absl::StatusCode::kUnavailable);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "stubkit: stubkit.testing.EchoService.Append: the service config "
            "retries it, but it is not idempotent by stubkit's rule "
            "(ServiceConfigImport::keep_idempotency_rules): not retried; mark "
            "it idempotent if the server deduplicates it");
  // Marked idempotent by the user, it follows the config.
  absl::StatusOr<EchoResponse> marked =
      client.Append(Request("marked", 1),
                    Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(service_.attempts("marked"), 2);
}

TEST_F(GeneratedServiceConfigTest, PerCallOptionsBeatTheConfig) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(),
                           ClientOptions(kServiceRetries, kEcho));
  absl::StatusOr<EchoResponse> response = client.Echo(
      Request("override", 100),
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1)));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("override"), 2);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kExhausted);
}

TEST_F(GeneratedServiceConfigTest, OmittedMaxAttemptsStopsAtTheTimeout) {
  // googleapis style: no maxAttempts, bounded by the timeout.
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions(R"({
      "methodConfig": [{
        "name": [{"service": "stubkit.testing.EchoService",
                  "method": "Echo"}],
        "timeout": "10s",
        "retryPolicy": {"initialBackoff": "1s", "maxBackoff": "2s",
          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
      }]})",
                                                            kEcho));
  const auto start = clock_->Now();
  absl::StatusOr<EchoResponse> response = client.Echo(Request("timed", 1000));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  // Waits of at most 2 s within 10 s: several attempts, never past the end.
  EXPECT_GE(service_.attempts("timed"), 5);
  EXPECT_LE(clock_->Now() - start, seconds(10));
  std::optional<RetrySummary> summary = GetRetrySummary(response.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_THAT(summary->stop_reason,
              ::testing::AnyOf(StopReason::kExhausted, StopReason::kDeadline));
  EXPECT_EQ(summary->attempts, service_.attempts("timed"));
}

TEST_F(GeneratedServiceConfigTest, NoRetryPolicyMakesOneAttempt) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions(R"({
      "methodConfig": [{"name": [{}], "timeout": "30s"}]})",
                                                            kEcho));
  absl::StatusOr<EchoResponse> response = client.Echo(Request("once", 1));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("once"), 1);
}

TEST_F(GeneratedServiceConfigTest, RetryThrottlingStopsRetries) {
  ASSERT_TRUE(server_.ok());
  // Two tokens: the first failure leaves one, at half: no retry.
  const std::string json = R"({
      "methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 5,
        "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1,
        "retryableStatusCodes": ["UNAVAILABLE"]}}],
      "retryThrottling": {"maxTokens": 2, "tokenRatio": 1}})";
  EchoServiceClient client(server_.Channel(), ClientOptions(json, kEcho));
  absl::StatusOr<EchoResponse> response = client.Echo(Request("throttled", 5));
  EXPECT_EQ(service_.attempts("throttled"), 1);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kThrottled);
}

TEST_F(GeneratedServiceConfigTest, HedgingPolicy) {
  ASSERT_TRUE(server_.ok());
  // A long hedging delay: only the non-fatal failures send the hedges.
  EchoServiceClient client(server_.Channel(), ClientOptions(R"({
      "methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3,
        "hedgingDelay": "600s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}]})",
                                                            kEcho));
  absl::StatusOr<EchoResponse> response = client.Echo(Request("hedged", 2));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(service_.attempts("hedged"), 3);
}

TEST_F(GeneratedServiceConfigTest, WaitForReadyComesFromTheConfig) {
  // A channel to a port nobody listens on: fail-fast attempts fail at once
  // with UNAVAILABLE; with waitForReady the attempt waits for a connection
  // until the (real) 200 ms timeout ends the call with DEADLINE_EXCEEDED.
  TestServer other(&service_);
  ASSERT_TRUE(other.ok());
  const std::string address = other.address();
  other.Shutdown();
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(R"({
      "methodConfig": [{"name": [{}], "timeout": "0.200s",
                        "waitForReady": true}]})");
  ASSERT_TRUE(config.ok()) << config.status();
  EchoServiceClient client(channel, config->OptionsFor(kEcho));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<EchoResponse> response = client.Echo(Request("wfr", 0));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded)
      << response.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(30));
}

TEST_F(GeneratedServiceConfigTest, ToOptionsResolvesPerMethodEntries) {
  ASSERT_TRUE(server_.ok());
  // Default: no retries. The service: 2 attempts. Echo itself: 4 attempts.
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(R"({
      "methodConfig": [
        {"name": [{}], "timeout": "60s"},
        {"name": [{"service": "stubkit.testing.EchoService"}],
         "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s",
           "maxBackoff": "1s", "backoffMultiplier": 1,
           "retryableStatusCodes": ["UNAVAILABLE"]}},
        {"name": [{"service": "stubkit.testing.EchoService",
                   "method": "Echo"}],
         "retryPolicy": {"maxAttempts": 4, "initialBackoff": "1s",
           "maxBackoff": "1s", "backoffMultiplier": 1,
           "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  ASSERT_TRUE(config.ok()) << config.status();
  EchoServiceClient client(server_.Channel(),
                           config->ToOptions().MergedWith(Clock()));

  absl::StatusOr<EchoResponse> echo = client.Echo(Request("echo", 100));
  EXPECT_EQ(service_.attempts("echo"), 4);
  // Append gets the service's entry (2 attempts) once marked idempotent.
  absl::StatusOr<EchoResponse> append =
      client.Append(Request("append", 100),
                    Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));
  EXPECT_EQ(service_.attempts("append"), 2);
  // A per-call option still wins over the method's entry.
  absl::StatusOr<EchoResponse> call = client.Echo(
      Request("call", 100),
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  EXPECT_EQ(service_.attempts("call"), 1);
}

// Issue 22 item 1: a config written for a newer version of the API names a
// method this client does not have. gRPC never looks it up; under stubkit
// it once made every call of the client fail with INVALID_ARGUMENT.
TEST_F(GeneratedServiceConfigTest, AMethodTheClientLacksIsIgnored) {
  ASSERT_TRUE(server_.ok());
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(R"({
      "methodConfig": [
        {"name": [{"service": "stubkit.testing.EchoService",
                   "method": "EchoTwice"}], "timeout": "5s"},
        {"name": [{"service": "stubkit.testing.EchoService",
                   "method": "Echo"}],
         "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
           "maxBackoff": "1s", "backoffMultiplier": 1,
           "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<std::string> lines;
  class Sink : public LogSink {
   public:
    explicit Sink(std::vector<std::string>* lines) : lines_(lines) {}
    void Write(absl::string_view line) override { lines_->emplace_back(line); }

   private:
    std::vector<std::string>* lines_;
  };
  EchoServiceClient client(
      server_.Channel(),
      config->ToOptions().MergedWith(Clock()).set<LogSinkOption>(
          std::make_shared<Sink>(&lines)));
  absl::StatusOr<EchoResponse> echo = client.Echo(Request("newer", 2));
  ASSERT_TRUE(echo.ok()) << echo.status();
  EXPECT_EQ(service_.attempts("newer"), 3);
  absl::StatusOr<EchoResponse> append = client.Append(Request("append", 0));
  EXPECT_TRUE(append.ok()) << append.status();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "stubkit: stubkit.testing.EchoService: the service config names "
            "a method this client does not have "
            "(stubkit.testing.EchoService/EchoTwice); ignored, as gRPC does "
            "(its methods: Echo, Append)");
  // A hand-written entry with the same name is still a typo to refuse.
  EchoServiceClient typo(
      server_.Channel(),
      Options{}.set<MethodOptionsOption>(
          {{"stubkit.testing.EchoService.EchoTwice", Options{}}}));
  EXPECT_EQ(typo.Echo(Request("typo", 0)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Issue 23, silent misconfigurations: a file whose "service" has a typo
// names nothing of the client; the client says so once, instead of
// running on no retries silently.
TEST_F(GeneratedServiceConfigTest, AFileThatNamesNothingOfTheClientSaysSo) {
  ASSERT_TRUE(server_.ok());
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(R"({
      "methodConfig": [
        {"name": [{"service": "stubkit.EchoService"}],
         "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
           "maxBackoff": "1s", "backoffMultiplier": 1,
           "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<std::string> lines;
  class Sink : public LogSink {
   public:
    explicit Sink(std::vector<std::string>* lines) : lines_(lines) {}
    void Write(absl::string_view line) override { lines_->emplace_back(line); }

   private:
    std::vector<std::string>* lines_;
  };
  auto sink = std::make_shared<Sink>(&lines);
  int round = 0;
  for (const Options& options :
       {config->ToOptions(), config->ToOptions("stubkit.testing.EchoService"),
        config->OptionsFor("stubkit.testing.EchoService.Echo")}) {
    lines.clear();
    EchoServiceClient client(
        server_.Channel(),
        Options(options).MergedWith(Clock()).set<LogSinkOption>(sink));
    // Not retried, as under gRPC, which looks the typo up no more.
    EXPECT_EQ(client.Echo(Request("typo" + std::to_string(++round), 1))
                  .status()
                  .code(),
              absl::StatusCode::kUnavailable);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_THAT(lines[0],
                ::testing::HasSubstr(
                    "stubkit.testing.EchoService: the service config names "
                    "no method of this service"));
  }
  // A file that names the service, or has a {} entry, says nothing.
  lines.clear();
  EchoServiceClient named(server_.Channel(), ParseServiceConfig(kServiceRetries)
                                                 ->ToOptions()
                                                 .set<LogSinkOption>(sink));
  EchoServiceClient any(server_.Channel(),
                        ParseServiceConfig(R"({"methodConfig": [
                            {"name": [{}], "timeout": "5s"}]})")
                            ->ToOptions()
                            .set<LogSinkOption>(sink));
  EXPECT_TRUE(lines.empty());
}

}  // namespace
}  // namespace stubkit
