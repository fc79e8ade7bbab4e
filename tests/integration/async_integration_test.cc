// Copyright 2026 The stubkit Authors.
//
// The async loop around gRPC's callback API, against a real server.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/channel.h"
#include "stubkit/retry_loop.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::TestServer;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};

class AsyncIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(&service_);
    ASSERT_TRUE(server_->ok());
    stub_ = EchoService::NewStub(stubkit::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
    client_.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                         .WithInitialDelay(milliseconds(5))
                                         .WithMaximumDelay(milliseconds(20))
                                         .WithMultiplier(2.0));
  }

  std::future<absl::StatusOr<EchoResponse>> Call(EchoRequest request,
                                                 Options call = {}) {
    // The attempt owns what gRPC needs until its callback runs.
    std::shared_ptr<EchoService::Stub> stub = stub_;
    auto shared_request = std::make_shared<EchoRequest>(std::move(request));
    return AsyncRetryLoop<EchoResponse>(
        kEcho, std::move(call), client_,
        [stub, shared_request](grpc::ClientContext& context, const OptionsView&,
                               AsyncCallback<EchoResponse> done) {
          internal::StartAsyncUnary<EchoResponse>(
              [&](EchoResponse* response, auto on_done) {
                stub->async()->Echo(&context, shared_request.get(), response,
                                    std::move(on_done));
              },
              std::move(done));
        });
  }

  static EchoRequest Failing(const std::string& message, int fail_first) {
    EchoRequest request;
    request.set_message(message);
    request.set_fail_first(fail_first);
    request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
    return request;
  }

  FlakyEchoService service_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<EchoService::Stub> stub_;
  Options client_;
};

TEST_F(AsyncIntegrationTest, RetriesToSuccess) {
  absl::StatusOr<EchoResponse> response = Call(Failing("async", 3)).get();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->attempt(), 4);
  EXPECT_EQ(service_.attempts("async"), 4);
  EXPECT_THAT(service_.headers("async", kRetryAttemptHeader),
              ::testing::ElementsAre("-", "2", "3", "4"));
}

TEST_F(AsyncIntegrationTest, ManyConcurrentCalls) {
  std::vector<std::future<absl::StatusOr<EchoResponse>>> futures;
  for (int i = 0; i < 200; ++i) {
    futures.push_back(Call(Failing("many-" + std::to_string(i), i % 3)));
  }
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<EchoResponse> response = futures[i].get();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(service_.attempts("many-" + std::to_string(i)), i % 3 + 1);
  }
}

TEST_F(AsyncIntegrationTest, CancelDuringAnAttempt) {
  service_.slow_attempts = 1;
  auto token = std::make_shared<CancellationToken>();
  auto future =
      Call(Failing("slow", 0), Options{}.set<CancellationOption>(token));
  while (service_.attempts("slow") < 1) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  const auto cancelled_at = std::chrono::steady_clock::now();
  token->Cancel();
  absl::StatusOr<EchoResponse> response = future.get();
  const auto latency = std::chrono::steady_clock::now() - cancelled_at;
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.attempts("slow"), 1);
  // Far sooner than the 5 s the slow attempt would hang; loose on purpose
  // (ctest -j2 and ASan on 2 cores).
  EXPECT_LT(latency, std::chrono::seconds(1));
}

TEST_F(AsyncIntegrationTest, CancelDuringBackoff) {
  auto token = std::make_shared<CancellationToken>();
  auto call = Options{}.set<CancellationOption>(token).set<BackoffPolicyOption>(
      ExponentialBackoffPolicy()
          .WithInitialDelay(std::chrono::minutes(5))
          .WithMaximumDelay(std::chrono::minutes(5))
          .WithMultiplier(1.0)
          .WithJitter(Jitter::None()));
  auto future = Call(Failing("backoff", 5), call);
  while (service_.attempts("backoff") < 1) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  std::this_thread::sleep_for(milliseconds(20));
  const auto cancelled_at = std::chrono::steady_clock::now();
  token->Cancel();
  absl::StatusOr<EchoResponse> response = future.get();
  const auto latency = std::chrono::steady_clock::now() - cancelled_at;
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.attempts("backoff"), 1);
  // Far sooner than the 5-minute wait it cancelled.
  EXPECT_LT(latency, std::chrono::seconds(1));
}

TEST_F(AsyncIntegrationTest, SyncCallCancelledDuringAnAttempt) {
  service_.slow_attempts = 1;
  auto token = std::make_shared<CancellationToken>();
  std::thread canceller([&] {
    while (service_.attempts("sync-slow") < 1) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    token->Cancel();
  });
  EchoRequest request = Failing("sync-slow", 0);
  absl::StatusOr<EchoResponse> response = RetryLoop<EchoResponse>(
      kEcho, OptionsView(Options{}.set<CancellationOption>(token), client_),
      [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
        EchoResponse r;
        grpc::Status status = stub_->Echo(&context, request, &r);
        if (!status.ok()) return FromGrpcStatus(status);
        return r;
      });
  canceller.join();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(service_.attempts("sync-slow"), 1);
}

}  // namespace
}  // namespace stubkit
