// Copyright 2026 The stubkit Authors.
//
// Generated unary clients against a real, fault-injecting gRPC server: the
// retry loop runs through every generated layer and the server counts the
// attempts it really received. A FakeClock absorbs the backoff waits.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stubkit/retry_loop.h"
#include "stubkit/testing/echo.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::EchoServiceClient;
using ::stubkit::testing::EchoServiceStub;
using ::stubkit::testing::EchoServiceStubDecorator;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::TestServer;

class GeneratedUnaryTest : public ::testing::Test {
 protected:
  GeneratedUnaryTest() : server_(&service_) {}

  Options ClientOptions() const {
    return Options{}
        .set<ClockOption>(clock_)
        .set<SleeperOption>(clock_)
        .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5))
        .set<BackoffPolicyOption>(
            ExponentialBackoffPolicy()
                .WithInitialDelay(std::chrono::seconds(1))
                .WithMaximumDelay(std::chrono::seconds(10))
                .WithMultiplier(2.0)
                .WithJitter(Jitter::None()));
  }

  static EchoRequest Request(int fail_first, int fail_code = 0) {
    EchoRequest request;
    request.set_message("hello");
    request.set_fail_first(fail_first);
    request.set_fail_code(fail_code);
    return request;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  FlakyEchoService service_;
  TestServer server_;
};

TEST_F(GeneratedUnaryTest, RetriesUnavailableThenSucceeds) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions());
  const auto start = clock_->Now();

  absl::StatusOr<EchoResponse> response = client.Echo(Request(2));

  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->message(), "hello");
  EXPECT_EQ(response->attempt(), 3);
  EXPECT_EQ(service_.attempts("hello"), 3);
  // Two backoff waits, 1s then 2s, taken on the fake clock.
  EXPECT_EQ(clock_->Now() - start, std::chrono::seconds(3));
  EXPECT_THAT(service_.headers("hello", kRetryAttemptHeader),
              ::testing::ElementsAre("-", "2", "3"));
}

TEST_F(GeneratedUnaryTest, NonRetryableCodeMakesOneAttempt) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions());

  absl::StatusOr<EchoResponse> response =
      client.Echo(Request(5, static_cast<int>(grpc::StatusCode::NOT_FOUND)));

  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(response.status().message()),
              ::testing::HasSubstr("injected failure 1"));
  EXPECT_EQ(service_.attempts("hello"), 1);
  std::optional<RetrySummary> summary = GetRetrySummary(response.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kPermanentError);
  EXPECT_EQ(summary->attempts, 1);
}

TEST_F(GeneratedUnaryTest, NonIdempotentMethodMakesOneAttempt) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions());

  // Append has no idempotency_level: not retried even for UNAVAILABLE.
  absl::StatusOr<EchoResponse> response = client.Append(Request(1));

  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("hello"), 1);
  std::optional<RetrySummary> summary = GetRetrySummary(response.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kNonIdempotent);
  EXPECT_THAT(std::string(response.status().message()),
              ::testing::HasSubstr("not idempotent"));
}

TEST_F(GeneratedUnaryTest, PerCallIdempotencyMakesAppendRetryable) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions());

  absl::StatusOr<EchoResponse> response = client.Append(
      Request(1), Options{}.set<IdempotencyOption>(Idempotency::kIdempotent));

  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(service_.attempts("hello"), 2);
}

TEST_F(GeneratedUnaryTest, PerCallOptionOverridesTheClients) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions());

  // This call alone allows no retries.
  absl::StatusOr<EchoResponse> once = client.Echo(
      Request(1),
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0)));
  ASSERT_FALSE(once.ok());
  EXPECT_EQ(once.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("hello"), 1);
  std::optional<RetrySummary> summary = GetRetrySummary(once.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kExhausted);

  // The client's own policy is untouched: the next call retries. The server
  // counts attempts over both calls, so attempt 2 fails too (2 <= 2).
  absl::StatusOr<EchoResponse> retried = client.Echo(Request(2));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(service_.attempts("hello"), 3);
}

// A user decorator that counts the attempts of one method.
class CountingStub : public EchoServiceStubDecorator {
 public:
  CountingStub(std::shared_ptr<EchoServiceStub> child,
               std::shared_ptr<std::atomic<int>> echo_attempts)
      : EchoServiceStubDecorator(std::move(child)),
        echo_attempts_(std::move(echo_attempts)) {}

  absl::StatusOr<EchoResponse> Echo(grpc::ClientContext& context,
                                    const OptionsView& options,
                                    const EchoRequest& request) override {
    ++*echo_attempts_;
    absl::Status added = AddMetadata(context, "x-decorated", "yes");
    if (!added.ok()) return added;
    return EchoServiceStubDecorator::Echo(context, options, request);
  }

 private:
  std::shared_ptr<std::atomic<int>> echo_attempts_;
};

TEST_F(GeneratedUnaryTest, UserDecoratorRunsOnEveryAttempt) {
  ASSERT_TRUE(server_.ok());
  auto echo_attempts = std::make_shared<std::atomic<int>>(0);
  int factory_calls = 0;
  EchoServiceClient client(
      server_.Channel(),
      ClientOptions().set<EchoServiceClient::DecoratorsOption>(
          {[&](std::shared_ptr<EchoServiceStub> child)
               -> std::shared_ptr<EchoServiceStub> {
            ++factory_calls;
            return std::make_shared<CountingStub>(std::move(child),
                                                  echo_attempts);
          }}));

  ASSERT_TRUE(client.Echo(Request(2)).ok());
  EXPECT_EQ(echo_attempts->load(), 3);
  EXPECT_EQ(service_.attempts("hello"), 3);
  // Methods the decorator does not override pass straight through.
  ASSERT_TRUE(client.Append(Request(0)).ok());
  EXPECT_EQ(echo_attempts->load(), 3);
  EXPECT_EQ(service_.attempts("hello"), 4);
  // The stack was built once, with the client, not per call.
  EXPECT_EQ(factory_calls, 1);
  EchoServiceClient copy = client;
  ASSERT_TRUE(copy.Echo(Request(0)).ok());
  EXPECT_EQ(echo_attempts->load(), 4);
  EXPECT_EQ(factory_calls, 1);
}

TEST_F(GeneratedUnaryTest, RetryAttemptHeaderCanBeTurnedOff) {
  ASSERT_TRUE(server_.ok());
  EchoServiceClient client(server_.Channel(), ClientOptions());
  absl::StatusOr<EchoResponse> response =
      client.Echo(Request(1), Options{}.set<RetryAttemptHeaderOption>(false));
  ASSERT_TRUE(response.ok());
  EXPECT_THAT(service_.headers("hello", kRetryAttemptHeader),
              ::testing::ElementsAre("-", "-"));
}

}  // namespace
}  // namespace stubkit
