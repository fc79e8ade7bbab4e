// Copyright 2026 The stubkit Authors.
//
// The retry loop around a raw grpc_cpp_plugin stub, against a real gRPC
// server that the test starts on 127.0.0.1 with a port picked by the kernel.

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_interceptor.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/cancellation.h"
#include "stubkit/retry_loop.h"
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
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};
constexpr MethodInfo kAppend{"stubkit.testing.EchoService.Append",
                             RpcKind::kUnary, Idempotency::kNonIdempotent};

// Records waits without sleeping; time itself is the real clock.
class SkippingSleeper : public Sleeper {
 public:
  void SleepFor(nanoseconds duration) override { waits.push_back(duration); }
  std::vector<nanoseconds> waits;
};

class RetryLoopIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(&service_);
    ASSERT_TRUE(server_->ok());
    stub_ = EchoService::NewStub(grpc::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
    sleeper_ = std::make_shared<SkippingSleeper>();
    client_options_.set<SleeperOption>(sleeper_);
  }
  void TearDown() override { server_->Shutdown(); }

  absl::StatusOr<EchoResponse> Call(const MethodInfo& method,
                                    const EchoRequest& request,
                                    const Options& call = {}) {
    return RetryLoop<EchoResponse>(
        method, OptionsView(call, client_options_),
        [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
          EchoResponse response;
          grpc::Status status =
              &method == &kEcho ? stub_->Echo(&context, request, &response)
                                : stub_->Append(&context, request, &response);
          if (!status.ok()) return FromGrpcStatus(status);
          return response;
        });
  }

  static EchoRequest Request(const std::string& message, int fail_first,
                             grpc::StatusCode code) {
    EchoRequest request;
    request.set_message(message);
    request.set_fail_first(fail_first);
    request.set_fail_code(code);
    return request;
  }

  FlakyEchoService service_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<EchoService::Stub> stub_;
  std::shared_ptr<SkippingSleeper> sleeper_;
  Options client_options_;
};

TEST_F(RetryLoopIntegrationTest, RetriesUnavailableThenSucceeds) {
  for (int failures : {0, 1, 3}) {
    std::string message = "hello-" + std::to_string(failures);
    absl::StatusOr<EchoResponse> response =
        Call(kEcho, Request(message, failures, grpc::StatusCode::UNAVAILABLE));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->message(), message);
    EXPECT_EQ(service_.attempts(message), failures + 1);
    EXPECT_EQ(response->attempt(), failures + 1);
  }
}

TEST_F(RetryLoopIntegrationTest, RetriesCarryTheAttemptHeader) {
  ASSERT_TRUE(
      Call(kEcho, Request("headers", 2, grpc::StatusCode::UNAVAILABLE)).ok());
  EXPECT_THAT(service_.headers("headers", kRetryAttemptHeader),
              ElementsAre("-", "2", "3"));

  auto no_header = Options{}.set<RetryAttemptHeaderOption>(false);
  ASSERT_TRUE(
      Call(kEcho, Request("quiet", 1, grpc::StatusCode::UNAVAILABLE), no_header)
          .ok());
  EXPECT_THAT(service_.headers("quiet", kRetryAttemptHeader),
              ElementsAre("-", "-"));
}

TEST_F(RetryLoopIntegrationTest, UserMetadataReachesEveryAttempt) {
  auto call = Options{}.set<MetadataOption>({{"x-tenant", "blue"}});
  ASSERT_TRUE(
      Call(kEcho, Request("meta", 1, grpc::StatusCode::UNAVAILABLE), call)
          .ok());
  EXPECT_THAT(service_.headers("meta", "x-tenant"),
              ElementsAre("blue", "blue"));
}

TEST_F(RetryLoopIntegrationTest, NonRetryableCodeMakesOneAttempt) {
  EchoRequest request =
      Request("perm", 5, grpc::StatusCode::FAILED_PRECONDITION);
  request.set_error_details("details:perm");
  absl::StatusOr<EchoResponse> response = Call(kEcho, request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(service_.attempts("perm"), 1);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(response.status().message(), HasSubstr("injected failure 1"));
  // The server's binary details arrive intact.
  EXPECT_EQ(GetErrorDetails(response.status()), "details:perm");
}

TEST_F(RetryLoopIntegrationTest, NonIdempotentMethodMakesOneAttempt) {
  absl::StatusOr<EchoResponse> response =
      Call(kAppend, Request("append", 1, grpc::StatusCode::UNAVAILABLE));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(service_.attempts("append"), 1);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kNonIdempotent);
}

TEST_F(RetryLoopIntegrationTest, ExhaustedPolicyReportsAttempts) {
  auto call =
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2));
  absl::StatusOr<EchoResponse> response =
      Call(kEcho, Request("down", 100, grpc::StatusCode::UNAVAILABLE), call);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(service_.attempts("down"), 3);
  EXPECT_THAT(response.status().message(), HasSubstr("3 attempts"));
  EXPECT_EQ(sleeper_->waits.size(), 2u);
}

TEST_F(RetryLoopIntegrationTest, SlowAttemptTimesOutAndIsRetried) {
  service_.slow_attempts = 1;
  auto call = Options{}.set<AttemptTimeoutOption>(milliseconds(100));
  absl::StatusOr<EchoResponse> response =
      Call(kEcho, Request("slow", 0, grpc::StatusCode::OK), call);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(service_.attempts("slow"), 2);
}

TEST_F(RetryLoopIntegrationTest, UnreachableServerIsRetriedAsUnavailable) {
  server_->Shutdown();
  auto call =
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2));
  absl::StatusOr<EchoResponse> response =
      Call(kEcho, Request("gone", 0, grpc::StatusCode::OK), call);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetRetrySummary(response.status())->attempts, 3);
}

// Runs `hook` when gRPC sends a cancel: the client interceptor's
// PRE_SEND_CANCEL point, which `ClientContext::TryCancel` runs on the
// cancelling thread. An interceptor is user code.
class CancelHookInterceptorFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit CancelHookInterceptorFactory(std::function<void()> hook)
      : hook_(std::move(hook)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    return new Hook(hook_);
  }

 private:
  class Hook : public grpc::experimental::Interceptor {
   public:
    explicit Hook(std::function<void()> hook) : hook_(std::move(hook)) {}
    void Intercept(
        grpc::experimental::InterceptorBatchMethods* methods) override {
      if (methods->QueryInterceptionHookPoint(
              grpc::experimental::InterceptionHookPoints::PRE_SEND_CANCEL)) {
        hook_();
      }
      methods->Proceed();
    }

   private:
    std::function<void()> hook_;
  };
  std::function<void()> hook_;
};

// `CancellationToken::Cancel` must not hold the token's lock while gRPC runs
// interceptors for the cancel: another thread that uses the token (here,
// one the interceptor waits for) would block until the interceptor gave up.
TEST_F(RetryLoopIntegrationTest, CancelRunsInterceptorsWithoutTheTokenLock) {
  auto token = std::make_shared<CancellationToken>();
  std::atomic<int> hooks{0};
  std::atomic<bool> token_usable_from_hook{false};
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<CancelHookInterceptorFactory>([&] {
    ++hooks;
    auto answered = std::make_shared<std::promise<bool>>();
    std::future<bool> answer = answered->get_future();
    // Detached: if it blocks on the token's lock, it must not hold up the
    // hook's return (which releases that lock).
    std::thread([token, answered] {
      answered->set_value(token->cancelled());
    }).detach();
    token_usable_from_hook =
        answer.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  }));
  stub_ = EchoService::NewStub(
      grpc::experimental::CreateCustomChannelWithInterceptors(
          server_->address(), grpc::InsecureChannelCredentials(),
          grpc::ChannelArguments(), std::move(interceptors)));
  service_.slow_attempts = 1;  // the server holds the attempt up to 5 s
  std::thread canceller([&] {
    while (service_.attempts("held") == 0) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    token->Cancel();
  });
  absl::StatusOr<EchoResponse> response =
      Call(kEcho, Request("held", 0, grpc::StatusCode::OK),
           Options{}.set<CancellationOption>(token));
  canceller.join();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(hooks.load(), 1);
  EXPECT_TRUE(token_usable_from_hook.load());
}

}  // namespace
}  // namespace stubkit
