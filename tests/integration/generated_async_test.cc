// Copyright 2026 The stubkit Authors.
//
// Generated AsyncX methods against a real server: retries on a timer, the
// same decisions as sync calls, cancellation, and clients destroyed while
// their calls are in flight.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/testing/echo.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::Request;
using ::stubkit::testing::TestServer;

class GeneratedAsyncTest : public ::testing::Test {
 protected:
  GeneratedAsyncTest() : server_(&service_) {}

  FlakyEchoService service_;
  TestServer server_;
};

TEST_F(GeneratedAsyncTest, RetriesToSuccessOnAFakeClock) {
  ASSERT_TRUE(server_.ok());
  auto clock = std::make_shared<FakeClock>();
  EchoServiceClient client(
      server_.Channel(),
      Options{}.set<ClockOption>(clock).set<AsyncSleeperOption>(clock));
  const auto start = clock->Now();
  absl::StatusOr<EchoResponse> response =
      client.AsyncEcho(Request("fake", 3)).get();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->attempt(), 4);
  EXPECT_EQ(service_.attempts("fake"), 4);
  // 1 s, 2 s and 4 s of default backoff, each plus up to 1 s of jitter.
  EXPECT_GE(clock->Now() - start, std::chrono::seconds(7));
  EXPECT_LE(clock->Now() - start, std::chrono::seconds(10));
}

TEST_F(GeneratedAsyncTest, CallbackOverloadAndSyncDecisions) {
  ASSERT_TRUE(server_.ok());
  auto fast =
      Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                             .WithInitialDelay(milliseconds(1))
                                             .WithMaximumDelay(milliseconds(5))
                                             .WithMultiplier(2.0));
  EchoServiceClient client(server_.Channel(), fast);
  std::promise<absl::StatusOr<EchoResponse>> done;
  client.AsyncEcho(Request("callback", 2), [&](absl::StatusOr<EchoResponse> r) {
    done.set_value(std::move(r));
  });
  absl::StatusOr<EchoResponse> response = done.get_future().get();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(service_.attempts("callback"), 3);

  // Not idempotent: one attempt, as with the sync call.
  absl::StatusOr<EchoResponse> append =
      client.AsyncAppend(Request("append", 1)).get();
  EXPECT_FALSE(append.ok());
  EXPECT_EQ(service_.attempts("append"), 1);
  EXPECT_EQ(GetRetrySummary(append.status())->stop_reason,
            StopReason::kNonIdempotent);

  // A per-call option beats the client's.
  absl::StatusOr<EchoResponse> once =
      client
          .AsyncEcho(Request("once", 5), Options{}.set<RetryPolicyOption>(
                                             RetryPolicy::LimitedErrorCount(0)))
          .get();
  EXPECT_FALSE(once.ok());
  EXPECT_EQ(service_.attempts("once"), 1);
}

TEST_F(GeneratedAsyncTest, CancelDuringBackoff) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel());
  auto token = std::make_shared<CancellationToken>();
  auto future = client.AsyncEcho(
      Request("cancel", 5),
      Options{}.set<CancellationOption>(token).set<BackoffPolicyOption>(
          ExponentialBackoffPolicy()
              .WithInitialDelay(std::chrono::minutes(10))
              .WithMaximumDelay(std::chrono::minutes(10))
              .WithMultiplier(1.0)
              .WithJitter(Jitter::None())));
  while (service_.attempts("cancel") < 1) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  std::this_thread::sleep_for(milliseconds(20));
  const auto cancelled_at = std::chrono::steady_clock::now();
  token->Cancel();
  absl::StatusOr<EchoResponse> response = future.get();
  // Far sooner than the 10-minute wait it cancelled; loose on purpose
  // (ctest -j2 and ASan on 2 cores).
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at,
            std::chrono::seconds(1));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.attempts("cancel"), 1);
}

TEST_F(GeneratedAsyncTest, DestroyingTheClientMidFlightIsSafe) {
  ASSERT_TRUE(server_.ok());
  std::vector<std::future<absl::StatusOr<EchoResponse>>> futures;
  auto channel = server_.Channel();
  {
    EchoServiceClient client(channel,
                             Options{}.set<BackoffPolicyOption>(
                                 ExponentialBackoffPolicy()
                                     .WithInitialDelay(milliseconds(20))
                                     .WithMaximumDelay(milliseconds(20))
                                     .WithMultiplier(1.0)));
    for (int i = 0; i < 50; ++i) {
      futures.push_back(
          client.AsyncEcho(Request("inflight-" + std::to_string(i), i % 3)));
    }
  }  // the client, its connection and its options are gone
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<EchoResponse> response = futures[i].get();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->attempt(), i % 3 + 1);
  }
}

TEST_F(GeneratedAsyncTest, DestroyingTheClientAndCancellingIsSafe) {
  ASSERT_TRUE(server_.ok());
  auto token = std::make_shared<CancellationToken>();
  std::vector<std::future<absl::StatusOr<EchoResponse>>> futures;
  {
    EchoServiceClient client(server_.Channel(),
                             Options{}.set<CancellationOption>(token));
    for (int i = 0; i < 20; ++i) {
      futures.push_back(
          client.AsyncEcho(Request("gone-" + std::to_string(i), 9)));
    }
  }
  std::this_thread::sleep_for(milliseconds(20));
  token->Cancel();
  for (auto& future : futures) {
    EXPECT_EQ(future.get().status().code(), absl::StatusCode::kCancelled);
  }
}

}  // namespace
}  // namespace stubkit
