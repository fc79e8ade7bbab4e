// Copyright 2026 The stubkit Authors.
//
// Hedging through generated clients against a real server: a slow first
// attempt loses to a hedge, and the server sees the loser cancelled.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stubkit/cancellation.h"
#include "stubkit/hedging.h"
#include "stubkit/retry_throttle.h"
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
using ::testing::HasSubstr;

Options Hedged(int max_attempts, milliseconds delay) {
  return Options{}.set<HedgingPolicyOption>(
      HedgingPolicy().WithMaxAttempts(max_attempts).WithHedgingDelay(delay));
}

void WaitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 2000 && !condition(); ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
}

class GeneratedHedgingTest : public ::testing::Test {
 protected:
  GeneratedHedgingTest() : server_(&service_) {}

  FlakyEchoService service_;
  TestServer server_;
};

TEST_F(GeneratedHedgingTest, HedgeWinsOverASlowFirstAttemptSync) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 1;
  // At most 2 attempts: with a third allowed, a hedge slower than the 30 ms
  // delay (a loaded machine) would send it, and the counts below would vary.
  EchoServiceClient client(server_.Channel(), Hedged(2, milliseconds(30)));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<EchoResponse> response = client.Echo(Request("sync"));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->attempt(), 2);            // the hedge answered
  EXPECT_LT(elapsed, std::chrono::seconds(4));  // the slow one hangs 5 s
  EXPECT_EQ(service_.headers("sync", kRetryAttemptHeader)[1], "2");
  // The slow attempt was cancelled, and the server saw it.
  WaitFor([&] { return service_.cancelled_attempts.load() == 1; });
  EXPECT_EQ(service_.cancelled_attempts.load(), 1);
  EXPECT_EQ(service_.attempts("sync"), 2);
}

TEST_F(GeneratedHedgingTest, HedgeWinsOverASlowFirstAttemptAsync) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 1;
  EchoServiceClient client(server_.Channel());
  absl::StatusOr<EchoResponse> response =
      client.AsyncEcho(Request("async"), Hedged(2, milliseconds(30))).get();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->attempt(), 2);
  EXPECT_EQ(service_.attempts("async"), 2);
  WaitFor([&] { return service_.cancelled_attempts.load() == 1; });
  EXPECT_EQ(service_.cancelled_attempts.load(), 1);
}

TEST_F(GeneratedHedgingTest, NonFatalFailureSendsTheNextHedgeAtOnce) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel());
  // A long hedging delay: only failures can trigger the hedges.
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("nonfatal", 2), Hedged(3, milliseconds(60000)));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(service_.attempts("nonfatal"), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(GeneratedHedgingTest, AllHedgesFailing) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel());
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("allfail", 10), Hedged(3, milliseconds(5)));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("allfail"), 3);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kExhausted);
  EXPECT_THAT(response.status().message(), HasSubstr("all 3 hedged attempts"));
}

TEST_F(GeneratedHedgingTest, FatalCodeEndsTheCall) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel());
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("fatal", 10, grpc::StatusCode::PERMISSION_DENIED),
                  Hedged(3, milliseconds(60000)));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(service_.attempts("fatal"), 1);
}

TEST_F(GeneratedHedgingTest, NonIdempotentMethodsAreNeverHedged) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 1;
  EchoServiceClient client(server_.Channel());
  absl::StatusOr<EchoResponse> response = client.Append(
      Request("append"),
      Hedged(3, milliseconds(10)).set<AttemptTimeoutOption>(milliseconds(300)));
  EXPECT_FALSE(response.ok());
  EXPECT_EQ(service_.attempts("append"), 1);
}

TEST_F(GeneratedHedgingTest, DrainedThrottleStopsHedges) {
  ASSERT_TRUE(server_.ok());
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
  throttle->OnRetryableFailure();
  throttle->OnRetryableFailure();  // 2 tokens: at half, no retries
  EchoServiceClient client(server_.Channel(),
                           Options{}.set<RetryThrottleOption>(throttle));
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("throttled", 5), Hedged(3, milliseconds(5)));
  EXPECT_FALSE(response.ok());
  EXPECT_EQ(service_.attempts("throttled"), 1);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kThrottled);
}

TEST_F(GeneratedHedgingTest, InvalidHedgingPolicyFailsBeforeSending) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel());
  for (const HedgingPolicy& bad :
       {HedgingPolicy().WithMaxAttempts(0).WithHedgingDelay(milliseconds(5)),
        HedgingPolicy().WithMaxAttempts(11).WithHedgingDelay(milliseconds(5)),
        HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(milliseconds(-5)),
        HedgingPolicy()
            .WithMaxAttempts(3)
            .WithHedgingDelay(milliseconds(5))
            .WithNonFatalCodes(StatusCodeSet{})}) {
    absl::StatusOr<EchoResponse> response = client.Echo(
        Request("invalid"), Options{}.set<HedgingPolicyOption>(bad));
    EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(response.status().message(), HasSubstr("HedgingPolicy"));
  }
  EXPECT_EQ(service_.attempts("invalid"), 0);
}

TEST_F(GeneratedHedgingTest, CancellingAHedgedCall) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 3;
  auto token = std::make_shared<CancellationToken>();
  EchoServiceClient client(server_.Channel());
  auto future = client.AsyncEcho(
      Request("cancel"),
      Hedged(3, milliseconds(10)).set<CancellationOption>(token));
  WaitFor([&] { return service_.attempts("cancel") == 3; });
  token->Cancel();
  absl::StatusOr<EchoResponse> response = future.get();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  WaitFor([&] { return service_.cancelled_attempts.load() == 3; });
  EXPECT_EQ(service_.cancelled_attempts.load(), 3);
}

// A user decorator that overrides only the sync method.
class SyncCountingStub : public ::stubkit::testing::EchoServiceStubDecorator {
 public:
  using EchoServiceStubDecorator::EchoServiceStubDecorator;
  absl::StatusOr<EchoResponse> Echo(grpc::ClientContext& context,
                                    const OptionsView& options,
                                    const EchoRequest& request) override {
    ++attempts;
    return EchoServiceStubDecorator::Echo(context, options, request);
  }
  std::atomic<int> attempts{0};
};

// Issue item 5: sync hedged calls went through AsyncEcho, so a decorator of
// the sync Echo never saw them.
TEST_F(GeneratedHedgingTest, SyncHedgedAttemptsGoThroughTheSyncDecorator) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 1;
  auto counting = std::make_shared<std::shared_ptr<SyncCountingStub>>();
  EchoServiceClient client(
      server_.Channel(),
      Options{}.set<EchoServiceClient::DecoratorsOption>(
          {[counting](
               std::shared_ptr<::stubkit::testing::EchoServiceStub> child) {
            *counting = std::make_shared<SyncCountingStub>(std::move(child));
            return *counting;
          }}));
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("decorated"), Hedged(3, milliseconds(30)));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_GE(response->attempt(), 2);  // a hedge answered
  // The decorator saw every attempt, the slow loser included (a third hedge
  // may go out on a loaded machine).
  EXPECT_GE((*counting)->attempts.load(), 2);
  EXPECT_GE((*counting)->attempts.load(), service_.attempts("decorated"));
  WaitFor([&] { return service_.cancelled_attempts.load() == 1; });
  EXPECT_EQ(service_.cancelled_attempts.load(), 1);
}

// A grpc StubInterface without the callback API, like grpc's generated
// MockEchoServiceStub: async() is null; sync calls go to a real stub.
class SyncOnlyStub : public ::stubkit::testing::EchoService::StubInterface {
 public:
  explicit SyncOnlyStub(std::shared_ptr<grpc::Channel> channel)
      : real_(::stubkit::testing::EchoService::NewStub(channel)) {}
  grpc::Status Echo(grpc::ClientContext* context, const EchoRequest& request,
                    EchoResponse* response) override {
    return real_->Echo(context, request, response);
  }
  grpc::Status Append(grpc::ClientContext* context, const EchoRequest& request,
                      EchoResponse* response) override {
    return real_->Append(context, request, response);
  }

 private:
  using Reader = grpc::ClientAsyncResponseReaderInterface<EchoResponse>;
  Reader* AsyncEchoRaw(grpc::ClientContext*, const EchoRequest&,
                       grpc::CompletionQueue*) override {
    return nullptr;
  }
  Reader* PrepareAsyncEchoRaw(grpc::ClientContext*, const EchoRequest&,
                              grpc::CompletionQueue*) override {
    return nullptr;
  }
  Reader* AsyncAppendRaw(grpc::ClientContext*, const EchoRequest&,
                         grpc::CompletionQueue*) override {
    return nullptr;
  }
  Reader* PrepareAsyncAppendRaw(grpc::ClientContext*, const EchoRequest&,
                                grpc::CompletionQueue*) override {
    return nullptr;
  }

  std::unique_ptr<::stubkit::testing::EchoService::Stub> real_;
};

EchoServiceClient SyncOnlyClient(const TestServer& server) {
  return EchoServiceClient(::stubkit::testing::MakeEchoServiceConnection(
      ::stubkit::testing::MakeEchoServiceGrpcStub(
          std::make_unique<SyncOnlyStub>(server.Channel()))));
}

TEST_F(GeneratedHedgingTest, StubWithoutCallbackApiHedgesSyncCalls) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 1;
  EchoServiceClient client = SyncOnlyClient(server_);
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request("sync-only"), Hedged(3, milliseconds(30)));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_GE(response->attempt(), 2);  // a hedge answered
}

TEST_F(GeneratedHedgingTest, StubWithoutCallbackApiFailsAsyncCallsUnsent) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client = SyncOnlyClient(server_);
  for (const Options& call :
       {Options{}, Hedged(3, milliseconds(30)),
        Options{}.set<RetryPolicyOption>(
            RetryPolicy::LimitedErrorCount(5).WithRetryableCodes(
                {grpc::StatusCode::FAILED_PRECONDITION}))}) {
    absl::StatusOr<EchoResponse> response =
        client.AsyncEcho(Request("async-only"), call).get();
    EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(response.status().message(),
                HasSubstr("stubkit.testing.EchoService.Echo"));
    EXPECT_THAT(response.status().message(), HasSubstr("no callback API"));
  }
  EXPECT_EQ(service_.attempts("async-only"), 0);
}

// Item 11d: a deadline already in the past sends nothing.
TEST_F(GeneratedHedgingTest, DeadlineInThePastSendsNothing) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel());
  const Options past = Options{}.set<DeadlineOption>(
      std::chrono::system_clock::now() - std::chrono::seconds(1));
  Options hedged_past = Hedged(3, milliseconds(30));
  hedged_past.set<DeadlineOption>(past.get<DeadlineOption>());
  std::vector<absl::StatusOr<EchoResponse>> results = {
      client.Echo(Request("past"), past),
      client.AsyncEcho(Request("past"), past).get(),
      client.Echo(Request("past"), hedged_past),
      client.AsyncEcho(Request("past"), hedged_past).get()};
  for (const auto& result : results) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
    std::optional<RetrySummary> summary = GetRetrySummary(result.status());
    ASSERT_TRUE(summary.has_value()) << result.status();
    EXPECT_EQ(summary->stop_reason, StopReason::kDeadline) << result.status();
    EXPECT_EQ(summary->attempts, 0);
  }
  EXPECT_EQ(service_.attempts("past"), 0);
}

TEST_F(GeneratedHedgingTest, CancellingASyncHedgedCall) {
  ASSERT_TRUE(server_.ok());
  service_.slow_attempts = 3;
  auto token = std::make_shared<CancellationToken>();
  EchoServiceClient client(server_.Channel());
  auto future = std::async(std::launch::async, [&] {
    return client.Echo(
        Request("sync-cancel"),
        Hedged(3, milliseconds(10)).set<CancellationOption>(token));
  });
  WaitFor([&] { return service_.attempts("sync-cancel") == 3; });
  token->Cancel();
  absl::StatusOr<EchoResponse> response = future.get();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  WaitFor([&] { return service_.cancelled_attempts.load() == 3; });
  EXPECT_EQ(service_.cancelled_attempts.load(), 3);
}

}  // namespace
}  // namespace stubkit
