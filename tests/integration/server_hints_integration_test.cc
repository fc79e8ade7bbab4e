// Copyright 2026 The stubkit Authors.
//
// Server hints, throttling and logging against a real gRPC server that sends
// pushback trailers and status details.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/channel.h"
#include "stubkit/retry_loop.h"
#include "stubkit/testing/echo.grpc.pb.h"
#include "tests/testing/flaky_echo_service.h"
#include "tests/testing/status_details.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::stubkit::testing::EchoRequest;
using ::stubkit::testing::EchoResponse;
using ::stubkit::testing::EchoService;
using ::stubkit::testing::FlakyEchoService;
using ::stubkit::testing::TestServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr MethodInfo kEcho{"stubkit.testing.EchoService.Echo", RpcKind::kUnary,
                           Idempotency::kIdempotent};

class CapturingSink : public LogSink {
 public:
  void Write(absl::string_view line) override {
    absl::MutexLock lock(&mu_);
    text_ += std::string(line) + "\n";
  }
  std::string text() {
    absl::MutexLock lock(&mu_);
    return text_;
  }

 private:
  absl::Mutex mu_;
  std::string text_;
};

class ServerHintsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(&service_);
    ASSERT_TRUE(server_->ok());
    stub_ = EchoService::NewStub(stubkit::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
    // Real clock; waits are recorded by the observer and skipped.
    client_.set<SleeperOption>(std::make_shared<FakeClock>());
    client_.set<RetryObserverOption>([this](const AttemptEvent& e) {
      absl::MutexLock lock(&mu_);
      events_.push_back(e);
    });
  }

  absl::StatusOr<EchoResponse> Call(const EchoRequest& request,
                                    const Options& call = {}) {
    {
      absl::MutexLock lock(&mu_);
      events_.clear();
    }
    return RetryLoop<EchoResponse>(
        kEcho, OptionsView(call, client_), request,
        [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
          EchoResponse response;
          grpc::Status status = stub_->Echo(&context, request, &response);
          if (!status.ok()) return FromGrpcStatus(status);
          return response;
        });
  }

  static EchoRequest Failing(const std::string& message, int fail_first) {
    EchoRequest request;
    request.set_message(message);
    request.set_fail_first(fail_first);
    request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
    return request;
  }

  std::vector<AttemptEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

  FlakyEchoService service_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<EchoService::Stub> stub_;
  Options client_;
  absl::Mutex mu_;
  std::vector<AttemptEvent> events_;
};

TEST_F(ServerHintsIntegrationTest, PositivePushbackReplacesTheBackoff) {
  EchoRequest request = Failing("pushback", 1);
  request.set_pushback_ms("250");
  ASSERT_TRUE(Call(request).ok());
  EXPECT_EQ(service_.attempts("pushback"), 2);
  ASSERT_GE(events().size(), 1u);
  EXPECT_EQ(events()[0].wait, milliseconds(250));
  EXPECT_EQ(events()[0].wait_reason, WaitReason::kPushback);
}

TEST_F(ServerHintsIntegrationTest, ZeroPushbackRetriesAtOnce) {
  EchoRequest request = Failing("zero", 2);
  request.set_pushback_ms("0");
  ASSERT_TRUE(Call(request).ok());
  EXPECT_EQ(service_.attempts("zero"), 3);
  EXPECT_EQ(events()[0].wait, nanoseconds(0));
}

TEST_F(ServerHintsIntegrationTest, NegativeOrGarbagePushbackStopsRetries) {
  for (const char* value : {"-1", "soon", "12ms", "1e3"}) {
    std::string message = std::string("stop-") + value;
    EchoRequest request = Failing(message, 1);
    request.set_pushback_ms(value);
    absl::StatusOr<EchoResponse> response = Call(request);
    ASSERT_FALSE(response.ok()) << value;
    EXPECT_EQ(service_.attempts(message), 1) << value;
    EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
    // The server's own answer, not the client's throttle: its own reason.
    EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
              StopReason::kServerRefused);
    EXPECT_THAT(response.status().message(),
                HasSubstr("the server said not to retry"));
    EXPECT_THAT(response.status().message(),
                ::testing::Not(HasSubstr("throttled")));
  }
}

TEST_F(ServerHintsIntegrationTest, PushbackIsIgnoredWhenHintsAreOff) {
  EchoRequest request = Failing("off", 1);
  request.set_pushback_ms("-1");
  ASSERT_TRUE(Call(request, Options{}.set<ServerHintsOption>(false)).ok());
  EXPECT_EQ(service_.attempts("off"), 2);
}

TEST_F(ServerHintsIntegrationTest, RetryInfoReplacesTheBackoff) {
  EchoRequest request = Failing("retry-info", 1);
  request.set_error_details(testing::StatusWithRetryInfo(7, 0));
  absl::StatusOr<EchoResponse> response = Call(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(events()[0].wait, seconds(7));
  EXPECT_EQ(events()[0].wait_reason, WaitReason::kRetryInfo);

  // Shorter than the backoff's draw: still the server's word.
  EchoRequest short_hint = Failing("retry-info-short", 1);
  short_hint.set_error_details(testing::StatusWithRetryInfo(0, 1500000));
  ASSERT_TRUE(Call(short_hint).ok());
  EXPECT_EQ(events()[0].wait, std::chrono::microseconds(1500));
  EXPECT_EQ(events()[0].wait_reason, WaitReason::kRetryInfo);
}

TEST_F(ServerHintsIntegrationTest, WithBothHintsTheLongerWins) {
  EchoRequest request = Failing("both", 1);
  request.set_pushback_ms("250");
  request.set_error_details(testing::StatusWithRetryInfo(2, 0));
  ASSERT_TRUE(Call(request).ok());
  EXPECT_EQ(events()[0].wait, seconds(2));
  EXPECT_EQ(events()[0].wait_reason, WaitReason::kRetryInfo);

  EchoRequest pushback_longer = Failing("both-pushback", 1);
  pushback_longer.set_pushback_ms("3000");
  pushback_longer.set_error_details(testing::StatusWithRetryInfo(1, 0));
  ASSERT_TRUE(Call(pushback_longer).ok());
  EXPECT_EQ(events()[0].wait, seconds(3));
  EXPECT_EQ(events()[0].wait_reason, WaitReason::kPushback);
}

TEST_F(ServerHintsIntegrationTest, PushbackAboveTheCeilingStopsTheCall) {
  // A count-only policy and no deadline: nothing else bounds this wait.
  EchoRequest request = Failing("huge-pushback", 1);
  request.set_pushback_ms("999999999999999999");
  absl::StatusOr<EchoResponse> response =
      Call(request,
           Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3)));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(service_.attempts("huge-pushback"), 1);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetRetrySummary(response.status())->stop_reason,
            StopReason::kServerRefused);
  EXPECT_THAT(response.status().message(),
              HasSubstr("(server pushback), longer than 5m "
                        "(ServerHintCeilingOption)"));
}

TEST_F(ServerHintsIntegrationTest, MalformedRetryInfoIsIgnored) {
  auto sink = std::make_shared<CapturingSink>();
  auto call = Options{}
                  .set<LogLevelOption>(LogLevel::kRetries)
                  .set<LogSinkOption>(sink);
  EchoRequest request = Failing("malformed", 1);
  request.set_error_details(std::string("\x1a\x7f garbage", 10));
  ASSERT_TRUE(Call(request, call).ok());
  EXPECT_EQ(events()[0].wait_reason, WaitReason::kBackoff);
  EXPECT_THAT(sink->text(), HasSubstr("ignoring malformed"));
}

TEST_F(ServerHintsIntegrationTest, HugeDetailsNeverCrashTheClient) {
  // Far beyond gRPC's metadata limit: gRPC itself rejects the trailers, and
  // the client gets an error rather than a crash or a hang.
  EchoRequest request = Failing("huge", 1);
  request.set_error_details(std::string(512 * 1024, '\x1a'));
  auto call =
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3));
  absl::StatusOr<EchoResponse> response = Call(request, call);
  // The bad-input row of docs/reliability.md: RESOURCE_EXHAUSTED is not
  // retryable, so one attempt and a permanent error.
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted)
      << response.status();
  std::optional<RetrySummary> summary = GetRetrySummary(response.status());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, StopReason::kPermanentError);
  EXPECT_EQ(summary->attempts, 1);
  EXPECT_EQ(service_.attempts("huge"), 1);
}

TEST_F(ServerHintsIntegrationTest, LargeDetailsWithRetryInfoStillWork) {
  // RetryInfo after 2000 bytes of other fields, within gRPC's limits.
  std::string padding;
  testing::AppendBytes(&padding, 2, std::string(2000, 'p'));
  EchoRequest padded = Failing("padded", 1);
  padded.set_error_details(padding + testing::StatusWithRetryInfo(3, 0));
  absl::StatusOr<EchoResponse> padded_response = Call(padded);
  ASSERT_TRUE(padded_response.ok()) << padded_response.status();
  EXPECT_EQ(events()[0].wait, seconds(3));
}

TEST_F(ServerHintsIntegrationTest, ThrottleBoundsAttemptsDuringAnOutage) {
  service_.outage = true;
  constexpr int kCalls = 50;
  auto call =
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5));

  // Without a throttle every call makes 6 attempts.
  for (int i = 0; i < kCalls; ++i) {
    Call(Failing("plain", 0), call).IgnoreError();
  }
  EXPECT_EQ(service_.attempts("plain"), kCalls * 6);

  // With gRPC's bucket (10 tokens, 0.1 per success): the first call spends
  // 5 tokens in 5 attempts, then every call makes exactly one attempt.
  client_.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1)));
  int throttled = 0;
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<EchoResponse> response = Call(Failing("throttled", 0), call);
    if (GetRetrySummary(response.status())->stop_reason ==
        StopReason::kThrottled) {
      ++throttled;
    }
  }
  EXPECT_EQ(service_.attempts("throttled"), 5 + (kCalls - 1));
  EXPECT_EQ(throttled, kCalls);
  // Amplification during the outage: attempts per call.
  EXPECT_LE(service_.attempts("throttled") / static_cast<double>(kCalls), 1.2);
}

TEST_F(ServerHintsIntegrationTest, LogsNeverContainCredentials) {
  auto sink = std::make_shared<CapturingSink>();
  auto call = Options{}
                  .set<LogLevelOption>(LogLevel::kRpc)
                  .set<LogSinkOption>(sink)
                  .set<MetadataOption>({{"authorization", "Bearer ya29.s3cr3t"},
                                        {"x-api-key", "AIzaSyK3Y"},
                                        {"cookie", "sid=c00kie"}});
  EchoRequest request = Failing("credentials", 1);
  ASSERT_TRUE(Call(request, call).ok());
  // The server did receive the credentials ...
  EXPECT_EQ(service_.headers("credentials", "authorization")[0],
            "Bearer ya29.s3cr3t");
  // ... and the log shows neither them nor the payload.
  std::string log = sink->text();
  EXPECT_THAT(log, HasSubstr("attempt 1 failed with UNAVAILABLE"));
  for (const char* secret : {"s3cr3t", "AIzaSyK3Y", "c00kie", "credentials"}) {
    EXPECT_THAT(log, Not(HasSubstr(secret))) << secret;
  }
  // Payloads appear only when asked for.
  ASSERT_TRUE(Call(Failing("payload-visible", 0),
                   Options{}
                       .set<LogLevelOption>(LogLevel::kRpc)
                       .set<LogSinkOption>(sink)
                       .set<LogPayloadsOption>(true))
                  .ok());
  EXPECT_THAT(sink->text(), HasSubstr("request {message: \"payload-visible\""));
  EXPECT_THAT(sink->text(),
              HasSubstr("response {message: \"payload-visible\""));
}

TEST_F(ServerHintsIntegrationTest, ChannelHelperDisablesGrpcRetries) {
  grpc::ChannelArguments args = ChannelArgumentsWithoutGrpcRetries();
  grpc_channel_args c_args = args.c_channel_args();
  bool found = false;
  for (size_t i = 0; i < c_args.num_args; ++i) {
    if (std::string(c_args.args[i].key) == GRPC_ARG_ENABLE_RETRIES) {
      found = true;
      EXPECT_EQ(c_args.args[i].value.integer, 0);
    }
  }
  EXPECT_TRUE(found);
}

// gRPC 1.51 honours the first of repeated arguments, so the helper must drop
// a caller's own setting rather than add a second one, and keep the rest.
TEST_F(ServerHintsIntegrationTest, ChannelHelperReplacesCallersGrpcRetries) {
  grpc::ChannelArguments callers;
  callers.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  callers.SetUserAgentPrefix("myapp/1.0");
  callers.SetInt("stubkit.test.int", 7);
  callers.SetString("stubkit.test.string", "kept");
  int marker = 0;
  callers.SetPointer("stubkit.test.pointer", &marker);
  grpc::ChannelArguments args = ChannelArgumentsWithoutGrpcRetries(callers);
  grpc_channel_args c_args = args.c_channel_args();
  std::vector<int> enable_retries;
  std::vector<std::string> user_agents;
  int kept = 0;
  for (size_t i = 0; i < c_args.num_args; ++i) {
    const grpc_arg& arg = c_args.args[i];
    const std::string key = arg.key;
    if (key == GRPC_ARG_ENABLE_RETRIES)
      enable_retries.push_back(arg.value.integer);
    if (key == GRPC_ARG_PRIMARY_USER_AGENT_STRING)
      user_agents.push_back(arg.value.string);
    if (key == "stubkit.test.int" && arg.value.integer == 7) ++kept;
    if (key == "stubkit.test.string" && std::string(arg.value.string) == "kept")
      ++kept;
    if (key == "stubkit.test.pointer" && arg.value.pointer.p == &marker) ++kept;
  }
  EXPECT_THAT(enable_retries, ElementsAre(0));
  ASSERT_EQ(user_agents.size(), 1u);
  EXPECT_THAT(user_agents[0], StartsWith("myapp/1.0 grpc-c++/"));
  EXPECT_EQ(kept, 3);
}

}  // namespace
}  // namespace stubkit
