// Copyright 2026 The stubkit Authors.
//
// The per-attempt context settings (stubkit/call_options.h) over fake
// transports: the setup hook runs once per attempt, after stubkit's own
// settings, in every loop; invalid settings are refused before anything
// is sent.

#include "stubkit/call_options.h"

#include <grpcpp/test/client_context_test_peer.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/entry/unary_call.h"
#include "stubkit/retry_loop.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr MethodInfo kGet{"test.Service.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent};

absl::Status Unavailable() { return absl::UnavailableError("down"); }

Options Fast() {
  return Options{}
      .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
      .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                    .WithInitialDelay(milliseconds(1))
                                    .WithMaximumDelay(milliseconds(2))
                                    .WithMultiplier(2.0));
}

// What the hook saw of each attempt's context when it ran: the retry header
// stubkit adds, and whether stubkit had set a deadline.
struct HookLog {
  absl::Mutex mu;  // hedged attempts run the hook on several threads
  std::vector<std::string> retry_headers;
  std::vector<bool> had_deadline;
  std::atomic<int> runs{0};
};

Options WithHook(Options options, HookLog* log) {
  return options.set<ContextSetupOption>([log](grpc::ClientContext& context) {
    ++log->runs;
    grpc::testing::ClientContextTestPeer peer(&context);
    auto sent = peer.GetSendInitialMetadata();
    auto header = sent.find(kRetryAttemptHeader);
    absl::MutexLock lock(&log->mu);
    log->retry_headers.push_back(header == sent.end() ? "-" : header->second);
    log->had_deadline.push_back(context.deadline() !=
                                std::chrono::system_clock::time_point::max());
    EXPECT_TRUE(AddMetadata(context, "x-hook", "ran").ok());
  });
}

TEST(ContextSetupTest, RunsOncePerAttemptAfterStubkitsSettings) {
  HookLog log;
  Options call =
      WithHook(Fast(), &log).set<TotalTimeoutOption>(std::chrono::minutes(1));
  Options client;
  int attempts = 0;
  std::vector<bool> attempt_saw_hook;
  absl::StatusOr<int> result =
      RetryLoop<int>(kGet, OptionsView(call, client),
                     [&](grpc::ClientContext& context) -> absl::StatusOr<int> {
                       grpc::testing::ClientContextTestPeer peer(&context);
                       attempt_saw_hook.push_back(
                           peer.GetSendInitialMetadata().count("x-hook") == 1);
                       if (++attempts < 3) return Unavailable();
                       return 7;
                     });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(log.runs.load(), 3);
  EXPECT_THAT(log.retry_headers, ElementsAre("-", "2", "3"));
  // The total timeout: stubkit's deadline came first.
  EXPECT_THAT(log.had_deadline, ElementsAre(true, true, true));
  EXPECT_THAT(attempt_saw_hook, ElementsAre(true, true, true));
}

TEST(ContextSetupTest, RunsOncePerAttemptInTheAsyncLoop) {
  HookLog log;
  std::atomic<int> attempts{0};
  auto future = AsyncRetryLoop<int>(
      kGet, WithHook(Fast(), &log), Options{},
      [&](grpc::ClientContext& context, const OptionsView&,
          AsyncCallback<int> done) {
        grpc::testing::ClientContextTestPeer peer(&context);
        EXPECT_EQ(peer.GetSendInitialMetadata().count("x-hook"), 1u);
        if (++attempts < 2) return done(Unavailable());
        done(9);
      });
  absl::StatusOr<int> result = future.get();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(log.runs.load(), 2);
  EXPECT_THAT(log.retry_headers, ElementsAre("-", "2"));
}

TEST(ContextSetupTest, RunsOnEveryHedgedAttempt) {
  HookLog log;
  Options call = WithHook(Fast(), &log)
                     .set<HedgingPolicyOption>(
                         HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(
                             milliseconds(0)));
  Options client;
  std::atomic<int> attempts{0};
  std::atomic<int> attempts_with_hook{0};
  auto attempt = [&](grpc::ClientContext& context) -> absl::StatusOr<int> {
    grpc::testing::ClientContextTestPeer peer(&context);
    if (peer.GetSendInitialMetadata().count("x-hook") == 1) {
      ++attempts_with_hook;
    }
    if (++attempts < 3) return Unavailable();
    return 5;
  };
  absl::StatusOr<int> result = internal::RunUnary<int>(
      kGet, OptionsView(call, client), 0, attempt, [] {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(attempts.load(), 3);
  EXPECT_EQ(attempts_with_hook.load(), 3);
  EXPECT_EQ(log.runs.load(), 3);
}

// The final attempt's metadata, from a fake transport: no attempt creates
// a gRPC call, so each leaves the metadata empty (stale values cleared),
// and reading it must not trip gRPC's assertion in
// GetServerInitialMetadata. stubkit reads initial metadata only from a
// context with a call (its `peer()` is not empty), so what a test peer
// injects into a context without one is not read. Real calls:
// tests/integration/generated_call_controls_test.cc.
TEST(ResponseMetadataTest, TheFinalAttemptsMetadataOnSuccessAndFailure) {
  auto received = std::make_shared<ResponseMetadata>();
  received->peer = "stale";
  received->trailing_metadata.emplace("stale", "1");
  Options call = Fast().set<ResponseMetadataOption>(received);
  Options client;
  std::vector<std::unique_ptr<grpc::testing::ClientContextTestPeer>> peers;
  int attempts = 0;
  auto attempt = [&](grpc::ClientContext& context) -> absl::StatusOr<int> {
    ++attempts;
    if (attempts == 1) return Unavailable();  // never reached "gRPC"
    peers.push_back(
        std::make_unique<grpc::testing::ClientContextTestPeer>(&context));
    peers.back()->AddServerInitialMetadata("x-attempt",
                                           std::to_string(attempts));
    if (attempts == 2) return Unavailable();
    return 1;
  };
  absl::StatusOr<int> result =
      RetryLoop<int>(kGet, OptionsView(call, client), attempt);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(attempts, 3);
  EXPECT_TRUE(received->initial_metadata.empty());  // no call was created
  EXPECT_TRUE(received->trailing_metadata.empty());
  EXPECT_EQ(received->peer, "");

  // A call whose only attempt never reached gRPC: empty, no assertion.
  attempts = 0;
  received->initial_metadata.emplace("stale", "1");
  absl::StatusOr<int> failed =
      RetryLoop<int>(kGet,
                     OptionsView(Options(call).set<RetryPolicyOption>(
                                     RetryPolicy::LimitedErrorCount(0)),
                                 client),
                     attempt);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(received->initial_metadata.empty());
}

TEST(ResponseMetadataTest, UnsetOrNullFillsNothing) {
  Options call = Fast().set<ResponseMetadataOption>(nullptr);
  Options client;
  absl::StatusOr<int> result = RetryLoop<int>(
      kGet, OptionsView(call, client),
      [](grpc::ClientContext&) -> absl::StatusOr<int> { return 1; });
  EXPECT_TRUE(result.ok());
}

TEST(CallOptionsValidationTest, RefusedBeforeAnythingIsSent) {
  struct Case {
    Options options;
    std::string says;
  };
  std::vector<Case> cases = {
      {Options{}.set<AuthorityOption>(""), "AuthorityOption must not be empty"},
      {Options{}.set<AuthorityOption>("a\nb"), "AuthorityOption holds byte 10"},
      {Options{}.set<CompressionOption>(GRPC_COMPRESS_ALGORITHMS_COUNT),
       "CompressionOption: not a grpc_compression_algorithm"},
  };
  for (const Case& c : cases) {
    int attempts = 0;
    Options client;
    absl::StatusOr<int> result =
        RetryLoop<int>(kGet, OptionsView(c.options, client),
                       [&](grpc::ClientContext&) -> absl::StatusOr<int> {
                         ++attempts;
                         return 1;
                       });
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(c.says));
    EXPECT_EQ(attempts, 0);
  }
  // Valid values pass.
  Options valid = Options{}
                      .set<AuthorityOption>("svc.example:443")
                      .set<CompressionOption>(GRPC_COMPRESS_DEFLATE)
                      .set<WaitForReadyOption>(true)
                      .set<CallCredentialsOption>(nullptr)
                      .set<ContextSetupOption>(nullptr);
  EXPECT_TRUE(
      internal::ValidateCallOptions(OptionsView(valid, Options{})).ok());
}

}  // namespace
}  // namespace stubkit
