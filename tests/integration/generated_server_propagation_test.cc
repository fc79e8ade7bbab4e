// Copyright 2026 The stubkit Authors.
//
// stubkit/server_propagation.h with generated clients at both hops, as a
// user writes it: client -> middle (sync API, its backend client generated)
// -> backend, on 127.0.0.1. A hedged client stops its hedges on the
// middle's "don't retry", and the middle's generated client takes the
// incoming deadline.

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "stubkit/channel.h"
#include "stubkit/hedging.h"
#include "stubkit/server_propagation.h"
#include "stubkit/testing/echo.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EchoRequest;
using testing::EchoResponse;
using testing::EchoService;
using testing::EchoServiceClient;
using testing::FlakyEchoService;
using ::testing::HasSubstr;
using testing::TestServer;

Options FastRetries(int max_failures) {
  return Options{}
      .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(max_failures))
      .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                    .WithInitialDelay(milliseconds(1))
                                    .WithMaximumDelay(milliseconds(2)))
      .set<FollowReconnectOption>(false);
}

// Serves Echo by calling the backend through a generated client.
class Middle final : public EchoService::Service {
 public:
  explicit Middle(EchoServiceClient backend) : backend_(std::move(backend)) {}

  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    ++calls;
    IncomingCall incoming(*context);
    absl::StatusOr<EchoResponse> result =
        backend_.Echo(*request, incoming.options());
    if (!result.ok()) return incoming.Reply(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  }

  std::atomic<int> calls{0};

 private:
  EchoServiceClient backend_;
};

class GeneratedServerPropagationTest : public ::testing::Test {
 protected:
  GeneratedServerPropagationTest()
      : middle_(EchoServiceClient(
            stubkit::CreateChannel(backend_server_.address(),
                                   grpc::InsecureChannelCredentials()),
            FastRetries(2))),
        middle_server_(&middle_) {}

  FlakyEchoService backend_;
  TestServer backend_server_{&backend_};
  Middle middle_;
  TestServer middle_server_;
};

TEST_F(GeneratedServerPropagationTest, HedgedClientStopsOnTheMiddlesPushback) {
  ASSERT_TRUE(backend_server_.ok() && middle_server_.ok());
  backend_.outage = true;
  EchoServiceClient client(
      stubkit::CreateChannel(middle_server_.address(),
                             grpc::InsecureChannelCredentials()),
      FastRetries(5).set<HedgingPolicyOption>(
          HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(seconds(2))));
  EchoRequest request;
  request.set_message("hedged");
  absl::StatusOr<EchoResponse> result = client.Echo(request);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("the server said not to retry (grpc-retry-pushback-ms: "
                        "-1), no more hedges"));
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kServerRefused);
  // One hedged attempt reached the middle, whose client made 3.
  EXPECT_EQ(middle_.calls.load(), 1);
  EXPECT_EQ(backend_.total_attempts(), 3);
}

TEST_F(GeneratedServerPropagationTest, TheMiddlesClientTakesTheDeadline) {
  ASSERT_TRUE(backend_server_.ok() && middle_server_.ok());
  backend_.slow_attempts = 1;  // hangs until its caller gives up
  EchoServiceClient client(
      stubkit::CreateChannel(middle_server_.address(),
                             grpc::InsecureChannelCredentials()),
      FastRetries(0));
  EchoRequest request;
  request.set_message("slow");
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<EchoResponse> result = client.Echo(
      request, Options{}.set<TotalTimeoutOption>(milliseconds(300)));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  // The backend's attempt ended with the client's deadline, not its own
  // 5 s: it saw the cancel.
  const auto until = std::chrono::steady_clock::now() + seconds(5);
  while (backend_.cancelled_attempts.load() == 0 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(backend_.cancelled_attempts.load(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
}

}  // namespace
}  // namespace stubkit
