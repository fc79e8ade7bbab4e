// Copyright 2026 The stubkit Authors.
//
// The retry budget (stubkit/retry_budget.h) in the retry loops, against a
// real gRPC server on 127.0.0.1: retries during an outage stop at the
// budget's share of the calls, the window forgets, traffic refills it,
// hedges draw on it, it composes with the token bucket, and clients share
// it. Sync calls wait on a FakeClock, so the window is fake time and the
// test does not sleep.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/clock.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/entry/unary_call.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_loop.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/status.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::TestServer;
using ::testing::HasSubstr;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};

class RetryBudgetIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(&service_);
    ASSERT_TRUE(server_->ok());
    stub_ = EchoService::NewStub(grpc::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  // Options on the fake clock: up to `max_failures` retries, 1 ms backoff.
  Options OnFakeClock(int max_failures) const {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<AsyncSleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(max_failures))
        .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                      .WithInitialDelay(milliseconds(1))
                                      .WithMaximumDelay(milliseconds(1))
                                      .WithJitter(Jitter::None()));
  }

  absl::StatusOr<EchoResponse> Call(const std::string& message,
                                    const Options& client) {
    EchoRequest request;
    request.set_message(message);
    return RetryLoop<EchoResponse>(
        kEcho, OptionsView(Options{}, client),
        [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
          EchoResponse response;
          grpc::Status status = stub_->Echo(&context, request, &response);
          if (!status.ok()) return FromGrpcStatus(status);
          return response;
        });
  }

  absl::StatusOr<EchoResponse> AsyncCall(const std::string& message,
                                         const Options& client) {
    auto request = std::make_shared<EchoRequest>();
    request->set_message(message);
    EchoService::Stub* stub = stub_.get();
    return AsyncRetryLoop<EchoResponse>(
               kEcho, Options{}, client,
               [stub, request](grpc::ClientContext& context, const OptionsView&,
                               AsyncCallback<EchoResponse> done) {
                 internal::StartAsyncUnary<EchoResponse>(
                     [&](EchoResponse* response, auto on_done) {
                       stub->async()->Echo(&context, request.get(), response,
                                           std::move(on_done));
                     },
                     std::move(done));
               })
        .get();
  }

  // A hedged sync call (a hedge on a thread of its own per attempt).
  absl::StatusOr<EchoResponse> HedgedCall(const std::string& message,
                                          const Options& client) {
    EchoRequest request;
    request.set_message(message);
    EchoService::Stub* stub = stub_.get();
    return internal::RunUnary<EchoResponse>(
        kEcho, OptionsView(Options{}, client), request,
        [stub, &request](
            grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
          EchoResponse response;
          grpc::Status status = stub->Echo(&context, request, &response);
          if (!status.ok()) return FromGrpcStatus(status);
          return response;
        },
        [] { return 0; });
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  FlakyEchoService service_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<EchoService::Stub> stub_;
};

TEST_F(RetryBudgetIntegrationTest,
       AnOutageCostsAShareOfTheCallsAndTheWindowForgets) {
  // 2 retries per second over 1 s, plus a quarter of the calls.
  auto budget = std::make_shared<RetryBudget>(RetryBudget::Config()
                                                  .WithTtl(seconds(1))
                                                  .WithMinRetriesPerSecond(2)
                                                  .WithPercentCanRetry(0.25));
  const Options client = OnFakeClock(3).set<RetryBudgetOption>(budget);
  service_.outage = true;
  int refused = 0;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<EchoResponse> r = Call("down " + std::to_string(i), client);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);  // kept
    const auto summary = GetRetrySummary(r.status());
    ASSERT_TRUE(summary.has_value());
    if (summary->stop_reason == StopReason::kThrottled) {
      ++refused;
      EXPECT_THAT(r.status().message(), HasSubstr("retry budget spent"));
    }
  }
  // 20 calls, a few ms of fake time: 2 + 20 / 4 retries, not 60.
  EXPECT_EQ(budget->requests(clock_->Now()), 20);
  EXPECT_EQ(budget->retries(clock_->Now()), 7);
  EXPECT_EQ(service_.total_attempts(), 27);
  EXPECT_GT(refused, 10);

  // A window later the outage's retries are forgotten; 8 calls that succeed
  // and the next failing one (9 requests) make room for 2 + 9 / 4 retries.
  clock_->Advance(seconds(2));
  service_.outage = false;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Call("up", client).ok());
  service_.outage = true;
  absl::StatusOr<EchoResponse> r =
      Call("down again", OnFakeClock(10).set<RetryBudgetOption>(budget));
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kThrottled);
  EXPECT_EQ(service_.attempts("down again"), 5);
}

TEST_F(RetryBudgetIntegrationTest, HedgesDrawOnTheBudget) {
  // One retry in the window (0.1/s over 10 s), none from the share.
  auto budget = std::make_shared<RetryBudget>(RetryBudget::Config()
                                                  .WithTtl(seconds(10))
                                                  .WithMinRetriesPerSecond(0.1)
                                                  .WithPercentCanRetry(0));
  // Failures send the next hedge at once; the delay never fires.
  const Options client =
      Options{}.set<RetryBudgetOption>(budget).set<HedgingPolicyOption>(
          HedgingPolicy()
              .WithMaxAttempts(3)
              .WithHedgingDelay(seconds(30))
              .WithNonFatalCodes({grpc::StatusCode::UNAVAILABLE}));
  service_.outage = true;
  absl::StatusOr<EchoResponse> first = HedgedCall("first", client);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(GetRetrySummary(first.status())->stop_reason,
            StopReason::kThrottled);
  EXPECT_THAT(first.status().message(),
              HasSubstr("retry budget spent (1 retry in the last 10s for 1 "
                        "request; it allows 0.1/s plus 0% of the requests)"));
  EXPECT_THAT(first.status().message(), HasSubstr("no more hedges"));
  EXPECT_EQ(service_.attempts("first"), 2);  // the one hedge the budget had
  absl::StatusOr<EchoResponse> second = HedgedCall("second", client);
  EXPECT_EQ(GetRetrySummary(second.status())->stop_reason,
            StopReason::kThrottled);
  EXPECT_EQ(service_.attempts("second"), 1);
  EXPECT_EQ(budget->requests(std::chrono::steady_clock::now()), 2);
  EXPECT_EQ(budget->retries(std::chrono::steady_clock::now()), 1);
}

TEST_F(RetryBudgetIntegrationTest, WithATokenBucketBothMustAdmit) {
  service_.outage = true;
  {  // The budget refuses first: 2 retries, and the bucket has plenty.
    auto budget = std::make_shared<RetryBudget>(RetryBudget::Config()
                                                    .WithTtl(seconds(1))
                                                    .WithMinRetriesPerSecond(2)
                                                    .WithPercentCanRetry(0));
    auto throttle = std::make_shared<RetryThrottle>(
        RetryThrottle::Config().WithMaxTokens(100).WithTokenRatio(1));
    absl::StatusOr<EchoResponse> r = Call(
        "budget",
        OnFakeClock(10).set<RetryBudgetOption>(budget).set<RetryThrottleOption>(
            throttle));
    EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kThrottled);
    EXPECT_THAT(r.status().message(), HasSubstr("retry budget spent"));
    EXPECT_EQ(service_.attempts("budget"), 3);
    EXPECT_EQ(throttle->tokens(), 97);  // every failure counted
  }
  {  // The bucket refuses first; the budget keeps its other retries.
    auto budget = std::make_shared<RetryBudget>(RetryBudget::Config()
                                                    .WithTtl(seconds(1))
                                                    .WithMinRetriesPerSecond(10)
                                                    .WithPercentCanRetry(0));
    auto throttle = std::make_shared<RetryThrottle>(
        RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
    absl::StatusOr<EchoResponse> r = Call(
        "bucket",
        OnFakeClock(10).set<RetryBudgetOption>(budget).set<RetryThrottleOption>(
            throttle));
    EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kThrottled);
    EXPECT_THAT(r.status().message(), HasSubstr("token bucket"));
    EXPECT_EQ(service_.attempts("bucket"), 2);
    EXPECT_EQ(budget->retries(clock_->Now()), 1);
  }
}

TEST_F(RetryBudgetIntegrationTest, ClientsShareOneBudget) {
  // No reserve: only the calls make room for retries.
  auto budget = std::make_shared<RetryBudget>(RetryBudget::Config()
                                                  .WithTtl(seconds(1))
                                                  .WithMinRetriesPerSecond(0)
                                                  .WithPercentCanRetry(0.5));
  const Options busy = OnFakeClock(10).set<RetryBudgetOption>(budget);
  const Options quiet = OnFakeClock(10).set<RetryBudgetOption>(budget);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Call("busy", busy).ok());
  service_.outage = true;
  // The quiet client's async call is the seventh request: 3 retries.
  absl::StatusOr<EchoResponse> r = AsyncCall("quiet", quiet);
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason, StopReason::kThrottled);
  EXPECT_EQ(service_.attempts("quiet"), 4);
  EXPECT_EQ(budget->requests(clock_->Now()), 7);
}

TEST_F(RetryBudgetIntegrationTest, AnInvalidBudgetFailsTheCallUnsent) {
  auto budget = std::make_shared<RetryBudget>(
      RetryBudget::Config().WithTtl(std::chrono::nanoseconds(0)));
  absl::StatusOr<EchoResponse> r =
      Call("never", OnFakeClock(3).set<RetryBudgetOption>(budget));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("RetryBudget: ttl must be in [1ms, 1h], got 0"));
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason,
            StopReason::kInvalidArgument);
  EXPECT_EQ(service_.total_attempts(), 0);
}

}  // namespace
}  // namespace stubkit
