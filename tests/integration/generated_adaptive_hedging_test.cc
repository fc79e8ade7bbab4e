// Copyright 2026 The stubkit Authors.
//
// Adaptive hedging (issue 27) through a generated client against a real
// server on 127.0.0.1 with a slow tail: the delay is learned from the calls
// that went before, and the hedging budget caps the hedges whatever the
// latency. The assertions hold on a loaded machine: none compares a
// duration with a tight bound.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stubkit/adaptive_hedging.h"
#include "stubkit/hedging.h"
#include "stubkit/metrics.h"
#include "stubkit/testing/echo.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::Request;
using ::stubkit::testing::TestServer;

// Answers after `delay_ms`; the next `hang` attempts wait until cancelled
// (5 s at most) and then fail.
class TailService final : public ::stubkit::testing::EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    const int attempt = ++attempts_;
    if (hang.load() > 0 && hang.fetch_sub(1) > 0) {
      for (int i = 0; i < 500 && !context->IsCancelled(); ++i) {
        std::this_thread::sleep_for(milliseconds(10));
      }
      return grpc::Status(grpc::StatusCode::INTERNAL, "hung");
    }
    std::this_thread::sleep_for(milliseconds(delay_ms.load()));
    response->set_message(request->message());
    response->set_attempt(attempt);
    return grpc::Status::OK;
  }

  int attempts() const { return attempts_.load(); }

  std::atomic<int> delay_ms{0};
  std::atomic<int> hang{0};

 private:
  std::atomic<int> attempts_{0};
};

class GeneratedAdaptiveHedgingTest : public ::testing::Test {
 protected:
  GeneratedAdaptiveHedgingTest() : server_(&service_) {}

  TailService service_;
  TestServer server_;
};

// 50 fast calls teach the client its latency; then a call whose first
// attempt hangs is answered by a hedge sent at the learned delay, long
// before the 10 s fixed delay (and the 5 s hang) would allow.
TEST_F(GeneratedAdaptiveHedgingTest, TheDelayIsLearnedFromFastCalls) {
  ASSERT_TRUE(server_.ok());
  auto adaptive =
      std::make_shared<AdaptiveHedging>(AdaptiveHedging::Config()
                                            .WithPercentile(0.9)
                                            .WithMinSamples(50)
                                            .WithMinDelay(milliseconds(1))
                                            .WithMaxDelay(seconds(10))
                                            .WithMinHedgesPerSecond(10));
  EchoServiceClient client(
      server_.Channel(),
      Options{}
          .set<HedgingPolicyOption>(
              HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(seconds(10)))
          .set<AdaptiveHedgingOption>(adaptive));
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(client.Echo(Request("fast")).ok());
  }
  EXPECT_EQ(service_.attempts(), 50);  // fast: none crossed 10 s
  // Past the learned delay's refresh interval (100 ms).
  std::this_thread::sleep_for(milliseconds(150));
  const auto learned =
      adaptive->HedgeDelay(std::chrono::steady_clock::now(), seconds(10));
  EXPECT_LT(learned, seconds(1)) << "the p90 of 50 local calls";
  service_.hang = 1;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<EchoResponse> response = client.Echo(Request("tail"));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->attempt(), 52);  // the hedge answered
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
}

// Every call is slower than the delay (1 ms, never learned: min_samples
// is out of reach), so every call wants a hedge; the budget, 5 % of the
// calls over a window longer than the test and no reserve, lets at most
// 5 % go. Each call either hedged or was refused.
TEST_F(GeneratedAdaptiveHedgingTest, TheBudgetCapsHedgesWhenEveryCallIsSlow) {
  ASSERT_TRUE(server_.ok());
  service_.delay_ms = 20;
  auto metrics = std::make_shared<MetricsCollector>();
  auto adaptive = std::make_shared<AdaptiveHedging>(
      AdaptiveHedging::Config()
          .WithMinSamples(1'000'000)
          .WithMinDelay(milliseconds(1))
          .WithMaxExtraLoad(0.05)
          .WithMinHedgesPerSecond(0)
          .WithBudgetWindow(std::chrono::hours(1)));
  EchoServiceClient client(
      server_.Channel(),
      Options{}
          .set<HedgingPolicyOption>(
              HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
                  milliseconds(1)))
          .set<AdaptiveHedgingOption>(adaptive)
          .set<MetricsOption>(metrics));
  constexpr int kCalls = 100;
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<EchoResponse> response = client.Echo(Request("slow"));
    ASSERT_TRUE(response.ok()) << response.status();
  }
  const std::vector<MethodMetrics> snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.size(), 1U);
  const MethodMetrics& m = snapshot[0];
  EXPECT_EQ(m.calls, kCalls);
  EXPECT_LE(m.hedges, kCalls * 5 / 100);
  EXPECT_GE(m.hedges, 1);
  EXPECT_EQ(m.hedges + m.hedges_refused_by_budget, kCalls);
  // A hedge cancelled before the server saw it is not counted there.
  EXPECT_LE(service_.attempts(), kCalls + m.hedges);
  EXPECT_GE(service_.attempts(), kCalls);
}

}  // namespace
}  // namespace stubkit
