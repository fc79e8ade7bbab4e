// Copyright 2026 The stubkit Authors.
//
// Server hints, throttling, the observer, logging and metrics in the retry
// loop, driven by a fake clock.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/retry_loop.h"
#include "tests/testing/status_details.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr MethodInfo kGet{"test.Service.Get", RpcKind::kUnary,
                          Idempotency::kIdempotent};
constexpr MethodInfo kCreate{"test.Service.Create", RpcKind::kUnary,
                             Idempotency::kNonIdempotent};

class CapturingSink : public LogSink {
 public:
  void Write(absl::string_view line) override {
    absl::MutexLock lock(&mu_);
    lines_.emplace_back(line);
  }
  std::vector<std::string> lines() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }
  std::string all() {
    std::string out;
    for (const auto& line : lines()) out += line + "\n";
    return out;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> lines_;
};

absl::Status Unavailable(const std::string& details = "") {
  return FromGrpcStatus(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "down", details));
}

class RetryLoopFeaturesTest : public ::testing::Test {
 protected:
  RetryLoopFeaturesTest() : clock_(std::make_shared<FakeClock>()) {
    client_.set<ClockOption>(clock_).set<SleeperOption>(clock_);
    client_.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                         .WithInitialDelay(seconds(1))
                                         .WithMaximumDelay(minutes(1))
                                         .WithMultiplier(2.0)
                                         .WithJitter(Jitter::None()));
    client_.set<RetryObserverOption>(
        [this](const AttemptEvent& e) { events_.push_back(e); });
  }

  // Attempts return `results` in turn; the last one repeats.
  absl::StatusOr<std::string> Run(const MethodInfo& method,
                                  std::vector<absl::Status> results,
                                  const Options& call = {}) {
    attempts_ = 0;
    events_.clear();
    return RetryLoop<std::string>(
        method, OptionsView(call, client_),
        [&](grpc::ClientContext&) -> absl::StatusOr<std::string> {
          absl::Status s =
              results[std::min<size_t>(attempts_, results.size() - 1)];
          ++attempts_;
          if (s.ok()) return std::string("fine");
          return s;
        });
  }

  std::shared_ptr<FakeClock> clock_;
  Options client_;
  int attempts_ = 0;
  std::vector<AttemptEvent> events_;
};

TEST_F(RetryLoopFeaturesTest, ObserverSeesEveryAttemptAndTheOutcome) {
  ASSERT_TRUE(Run(kGet, {Unavailable(), Unavailable(), absl::OkStatus()}).ok());
  ASSERT_EQ(events_.size(), 3u);
  EXPECT_EQ(events_[0].method, "test.Service.Get");
  EXPECT_EQ(events_[0].attempt, 1);
  EXPECT_EQ(events_[0].status.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(events_[0].final);
  EXPECT_EQ(events_[0].wait, seconds(1));
  EXPECT_EQ(events_[0].wait_reason, WaitReason::kBackoff);
  EXPECT_EQ(events_[1].wait, seconds(2));
  EXPECT_TRUE(events_[2].final);
  EXPECT_TRUE(events_[2].status.ok());
  EXPECT_EQ(events_[2].stop_reason, StopReason::kSuccess);
  EXPECT_EQ(events_[2].elapsed, seconds(3));

  Run(kCreate, {Unavailable()}).IgnoreError();
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_TRUE(events_[0].final);
  EXPECT_EQ(events_[0].stop_reason, StopReason::kNonIdempotent);
}

TEST_F(RetryLoopFeaturesTest, RetryInfoLongerThanBackoffSetsTheWait) {
  std::string details = testing::StatusWithRetryInfo(5, 0);
  ASSERT_TRUE(Run(kGet, {Unavailable(details), absl::OkStatus()}).ok());
  EXPECT_EQ(events_[0].wait, seconds(5));
  EXPECT_EQ(events_[0].wait_reason, WaitReason::kRetryInfo);
}

TEST_F(RetryLoopFeaturesTest, RetryInfoShorterThanBackoffReplacesIt) {
  // The server said 100 ms; the backoff would have said 1 s. The server's
  // word replaces the draw, as pushback does in gRPC.
  std::string details = testing::StatusWithRetryInfo(0, 100000000);
  ASSERT_TRUE(Run(kGet, {Unavailable(details), absl::OkStatus()}).ok());
  EXPECT_EQ(events_[0].wait, milliseconds(100));
  EXPECT_EQ(events_[0].wait_reason, WaitReason::kRetryInfo);
  EXPECT_EQ(events_[1].elapsed, milliseconds(100));
}

TEST_F(RetryLoopFeaturesTest, RetryInfoNeverExtendsTheCall) {
  auto call = Options{}.set<TotalTimeoutOption>(seconds(30));
  std::string details = testing::StatusWithRetryInfo(60, 0);
  absl::StatusOr<std::string> result =
      Run(kGet, {Unavailable(details), absl::OkStatus()}, call);
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kDeadline);
  EXPECT_THAT(result.status().message(), HasSubstr("server RetryInfo"));
}

TEST_F(RetryLoopFeaturesTest, HintAboveTheCeilingStopsTheCall) {
  // A count-only policy with no deadline: without a ceiling this hint would
  // park the call for an hour (or, from a broken server, for centuries).
  std::string details = testing::StatusWithRetryInfo(3600, 0);
  auto call =
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(5));
  absl::StatusOr<std::string> result =
      Run(kGet, {Unavailable(details), absl::OkStatus()}, call);
  EXPECT_EQ(attempts_, 1);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kServerRefused);
  EXPECT_THAT(result.status().message(),
              AllOf(HasSubstr("the server asked to wait 1h"),
                    HasSubstr("server RetryInfo"),
                    HasSubstr("longer than 5m (ServerHintCeilingOption)")));
  EXPECT_EQ(events_[0].elapsed, nanoseconds(0));  // stopped without waiting
}

TEST_F(RetryLoopFeaturesTest, HintAtTheCeilingIsHonoured) {
  std::string details = testing::StatusWithRetryInfo(300, 0);
  ASSERT_TRUE(Run(kGet, {Unavailable(details), absl::OkStatus()}).ok());
  EXPECT_EQ(events_[0].wait, minutes(5));
  EXPECT_EQ(events_[0].wait_reason, WaitReason::kRetryInfo);
}

TEST_F(RetryLoopFeaturesTest, TheCeilingIsAnOption) {
  std::string details = testing::StatusWithRetryInfo(3600, 0);
  auto call = Options{}
                  .set<ServerHintCeilingOption>(std::chrono::hours(2))
                  .set<RetryPolicyOption>(
                      RetryPolicy::LimitedTime(std::chrono::hours(3)));
  ASSERT_TRUE(Run(kGet, {Unavailable(details), absl::OkStatus()}, call).ok());
  EXPECT_EQ(events_[0].wait, std::chrono::hours(1));

  for (nanoseconds bad : {nanoseconds(0), nanoseconds(-1)}) {
    absl::StatusOr<std::string> invalid = Run(
        kGet, {absl::OkStatus()}, Options{}.set<ServerHintCeilingOption>(bad));
    EXPECT_EQ(attempts_, 0);
    EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(invalid.status().message(),
                HasSubstr("ServerHintCeilingOption must be positive"));
  }
}

TEST_F(RetryLoopFeaturesTest, RetryInfoNeverMakesPermanentErrorsRetryable) {
  std::string details = testing::StatusWithRetryInfo(1, 0);
  auto permanent =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::INTERNAL, "bug", details));
  Run(kGet, {permanent, absl::OkStatus()}).IgnoreError();
  EXPECT_EQ(attempts_, 1);
  Run(kCreate, {Unavailable(details), absl::OkStatus()}).IgnoreError();
  EXPECT_EQ(attempts_, 1);
}

TEST_F(RetryLoopFeaturesTest, HintsCanBeSwitchedOff) {
  std::string details = testing::StatusWithRetryInfo(5, 0);
  auto call = Options{}.set<ServerHintsOption>(false);
  ASSERT_TRUE(Run(kGet, {Unavailable(details), absl::OkStatus()}, call).ok());
  EXPECT_EQ(events_[0].wait, seconds(1));
  EXPECT_EQ(events_[0].wait_reason, WaitReason::kBackoff);
}

TEST_F(RetryLoopFeaturesTest, MalformedDetailsAreIgnoredAndLogged) {
  auto sink = std::make_shared<CapturingSink>();
  auto call = Options{}
                  .set<LogLevelOption>(LogLevel::kRetries)
                  .set<LogSinkOption>(sink);
  for (std::string details :
       {std::string("\xff\xff\xff", 3), std::string(200000, 'x')}) {
    ASSERT_TRUE(Run(kGet, {Unavailable(details), absl::OkStatus()}, call).ok());
    EXPECT_EQ(events_[0].wait, seconds(1));
  }
  EXPECT_THAT(sink->all(), HasSubstr("ignoring malformed or oversized"));
}

TEST_F(RetryLoopFeaturesTest, ThrottleStopsRetriesWhenTheBucketDrains) {
  auto throttle = std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(4).WithTokenRatio(1));
  client_.set<RetryThrottleOption>(throttle);
  // 4 tokens: the first failure leaves 3 (> 2, retry), the second 2 (stop).
  absl::StatusOr<std::string> result = Run(kGet, {Unavailable()});
  EXPECT_EQ(attempts_, 2);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kThrottled);
  EXPECT_THAT(result.status().message(), HasSubstr("retry throttled"));
  // While drained, every call makes exactly one attempt.
  Run(kGet, {Unavailable()}).IgnoreError();
  EXPECT_EQ(attempts_, 1);
  // Successes refill it.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(kGet, {absl::OkStatus()}).ok());
  ASSERT_TRUE(Run(kGet, {Unavailable(), absl::OkStatus()}).ok());
  EXPECT_EQ(attempts_, 2);
}

TEST_F(RetryLoopFeaturesTest, InvalidThrottleFailsBeforeSending) {
  client_.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
      RetryThrottle::Config().WithMaxTokens(-1).WithTokenRatio(1)));
  absl::StatusOr<std::string> result = Run(kGet, {absl::OkStatus()});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("max_tokens"));
  EXPECT_EQ(attempts_, 0);
}

TEST_F(RetryLoopFeaturesTest, MetricsCountCallsAttemptsAndStops) {
  auto metrics = std::make_shared<MetricsCollector>();
  client_.set<MetricsOption>(metrics);
  Run(kGet, {Unavailable(), absl::OkStatus()}).IgnoreError();
  Run(kGet, {absl::OkStatus()}).IgnoreError();
  Run(kGet, {absl::InternalError("bug")}).IgnoreError();
  Run(kCreate, {Unavailable()}).IgnoreError();
  Run(kGet, {Unavailable()},
      Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2)))
      .IgnoreError();
  std::vector<MethodMetrics> snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  const MethodMetrics& create = snapshot[0];
  const MethodMetrics& get = snapshot[1];
  EXPECT_EQ(create.method, "test.Service.Create");
  EXPECT_EQ(create.calls, 1);
  EXPECT_EQ(create.stopped(StopReason::kNonIdempotent), 1);
  EXPECT_EQ(get.calls, 4);
  EXPECT_EQ(get.attempts, 2 + 1 + 1 + 3);
  EXPECT_EQ(get.retries, 3);
  EXPECT_EQ(get.stopped(StopReason::kSuccess), 2);
  EXPECT_EQ(get.stopped(StopReason::kPermanentError), 1);
  EXPECT_EQ(get.stopped(StopReason::kExhausted), 1);
  int64_t in_buckets = 0;
  for (int64_t count : get.latency_buckets) in_buckets += count;
  EXPECT_EQ(in_buckets, 4);
  // The 1 s wait puts the first call in the (500 ms, 1 s] bucket... or above.
  EXPECT_GT(get.latency_sum_ms, 1000);
}

TEST_F(RetryLoopFeaturesTest, LogsRetriesWithoutCredentialsOrPayloads) {
  auto sink = std::make_shared<CapturingSink>();
  auto call =
      Options{}
          .set<LogLevelOption>(LogLevel::kRpc)
          .set<LogSinkOption>(sink)
          .set<MetadataOption>({{"authorization", "Bearer s3cr3t-t0ken"},
                                {"x-api-key", "k3y-value"},
                                {"cookie", "session=c00kie"},
                                {"x-goog-iam-authorization-token", "iam-t0k"},
                                {"trace-bin", "binary-secret"},
                                {"x-tenant", "blue"}});
  ASSERT_TRUE(Run(kGet, {Unavailable(), absl::OkStatus()}, call).ok());
  std::string log = sink->all();
  EXPECT_THAT(log, HasSubstr("test.Service.Get attempt 1 failed with "
                             "UNAVAILABLE: down; retrying in 1s (backoff)"));
  EXPECT_THAT(log, HasSubstr("attempt 2 OK"));
  EXPECT_THAT(log, HasSubstr("x-tenant: blue"));
  EXPECT_THAT(log, HasSubstr("authorization: [REDACTED]"));
  EXPECT_THAT(log, HasSubstr("x-retry-attempt: 2"));
  for (const char* secret :
       {"s3cr3t", "k3y-value", "c00kie", "iam-t0k", "binary-secret"}) {
    EXPECT_THAT(log, Not(HasSubstr(secret))) << secret;
  }
}

TEST_F(RetryLoopFeaturesTest, RetriesLevelLogsOnlyRetriesAndGiveUps) {
  auto sink = std::make_shared<CapturingSink>();
  auto call = Options{}
                  .set<LogLevelOption>(LogLevel::kRetries)
                  .set<LogSinkOption>(sink)
                  .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1));
  Run(kGet, {absl::OkStatus()}, call).IgnoreError();
  EXPECT_TRUE(sink->lines().empty());
  Run(kGet, {Unavailable()}, call).IgnoreError();
  EXPECT_THAT(sink->lines(),
              ElementsAre(HasSubstr("retrying in 1s"),
                          AllOf(HasSubstr("gave up: retry policy exhausted"),
                                HasSubstr("after 2 attempts"))));
}

// Issue 22, item 12: at the `retries` level every call that gives up says
// why, whatever the reason; only a permanent error on the first attempt
// (the caller's business) stays at `rpc`.
TEST_F(RetryLoopFeaturesTest, RetriesLevelLogsEveryGiveUp) {
  auto sink = std::make_shared<CapturingSink>();
  auto logged = Options{}
                    .set<LogLevelOption>(LogLevel::kRetries)
                    .set<LogSinkOption>(sink);
  // UNAVAILABLE on a non-idempotent method: "why wasn't it retried?"
  Run(kCreate, {Unavailable()}, logged).IgnoreError();
  EXPECT_THAT(sink->all(), HasSubstr("not retried: test.Service.Create is not "
                                     "idempotent after 1 attempt"));

  // The attempt itself ran into the total timeout.
  sink = std::make_shared<CapturingSink>();
  logged.set<LogSinkOption>(sink);
  Options timed = logged;
  timed.set<TotalTimeoutOption>(seconds(5));
  RetryLoop<std::string>(
      kGet, OptionsView(timed, client_),
      [&](grpc::ClientContext&) -> absl::StatusOr<std::string> {
        clock_->Advance(seconds(5));
        return absl::DeadlineExceededError("Deadline Exceeded");
      })
      .IgnoreError();
  EXPECT_THAT(sink->all(), HasSubstr("gave up: the call's deadline was "
                                     "reached after 1 attempt"));

  // A deadline already past: nothing sent, still a line.
  sink = std::make_shared<CapturingSink>();
  logged.set<LogSinkOption>(sink);
  Options past = logged;
  past.set<DeadlineOption>(std::chrono::system_clock::now() - seconds(1));
  Run(kGet, {absl::OkStatus()}, past).IgnoreError();
  EXPECT_THAT(sink->all(), AllOf(HasSubstr("before attempt 1 was sent"),
                                 HasSubstr("stopped before any attempt")));

  // A permanent error on the first attempt stays the caller's business.
  sink = std::make_shared<CapturingSink>();
  logged.set<LogSinkOption>(sink);
  Run(kGet, {absl::InvalidArgumentError("bad")}, logged).IgnoreError();
  EXPECT_TRUE(sink->lines().empty()) << sink->all();
}

TEST_F(RetryLoopFeaturesTest, AnAttemptTimeoutRetrySaysSo) {
  auto sink = std::make_shared<CapturingSink>();
  auto call = Options{}
                  .set<LogLevelOption>(LogLevel::kRetries)
                  .set<LogSinkOption>(sink)
                  .set<AttemptTimeoutOption>(seconds(2));
  int attempts = 0;
  RetryLoop<std::string>(
      kGet, OptionsView(call, client_),
      [&](grpc::ClientContext&) -> absl::StatusOr<std::string> {
        if (attempts++ > 0) return std::string("fine");
        clock_->Advance(seconds(2));
        return absl::DeadlineExceededError("Deadline Exceeded");
      })
      .IgnoreError();
  EXPECT_THAT(sink->all(),
              AllOf(HasSubstr("attempt 1 failed with DEADLINE_EXCEEDED"),
                    HasSubstr("its attempt timeout (2s, AttemptTimeoutOption)"),
                    HasSubstr("retrying in 1s")));
}

TEST_F(RetryLoopFeaturesTest, OneRetryIsSingular) {
  absl::StatusOr<std::string> result =
      Run(kGet, {Unavailable()},
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(1)));
  EXPECT_THAT(result.status().message(), HasSubstr("(at most 1 retry)"));
  result =
      Run(kGet, {Unavailable()},
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(2)));
  EXPECT_THAT(result.status().message(), HasSubstr("(at most 2 retries)"));
}

TEST_F(RetryLoopFeaturesTest, LoggingOffWritesNothing) {
  auto sink = std::make_shared<CapturingSink>();
  auto call =
      Options{}.set<LogLevelOption>(LogLevel::kOff).set<LogSinkOption>(sink);
  Run(kGet, {Unavailable(), absl::OkStatus()}, call).IgnoreError();
  EXPECT_TRUE(sink->lines().empty());
}

// RetryPolicy::WithRetryableIf: the INTERNAL of a reset stream is retried.
RetryPolicy RetryResetStreams() {
  return RetryPolicy::LimitedErrorCount(3).WithRetryableIf(
      [](const absl::Status& status) {
        return status.code() == absl::StatusCode::kInternal &&
               absl::StrContains(status.message(), "RST_STREAM");
      });
}

TEST_F(RetryLoopFeaturesTest, PredicateMakesAChosenInternalRetryable) {
  const absl::Status reset =
      absl::InternalError("Received RST_STREAM with error code 2");
  auto call = Options{}.set<RetryPolicyOption>(RetryResetStreams());
  absl::StatusOr<std::string> result =
      Run(kGet, {reset, reset, absl::OkStatus()}, call);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(attempts_, 3);
  EXPECT_EQ(events_[0].wait, seconds(1));  // the usual backoff

  // Other INTERNALs stay permanent, and the error says why.
  result =
      Run(kGet, {absl::InternalError("bad state"), absl::OkStatus()}, call);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kPermanentError);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("the RetryableIf predicate declined it"));

  // The codes still count: UNAVAILABLE is retried as before.
  result = Run(kGet, {Unavailable(), absl::OkStatus()}, call);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(attempts_, 2);

  // The policy's limit applies: 3 retries, then exhausted.
  result = Run(kGet, {reset}, call);
  EXPECT_EQ(attempts_, 4);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kExhausted);
}

TEST_F(RetryLoopFeaturesTest, PredicateNeverRetriesANonIdempotentCall) {
  auto call = Options{}.set<RetryPolicyOption>(RetryResetStreams());
  absl::StatusOr<std::string> result =
      Run(kCreate, {absl::InternalError("RST_STREAM"), absl::OkStatus()}, call);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(attempts_, 1);
  EXPECT_EQ(GetRetrySummary(result.status())->stop_reason,
            StopReason::kNonIdempotent);
}

TEST_F(RetryLoopFeaturesTest, WithoutThePredicateInternalIsPermanent) {
  absl::StatusOr<std::string> result =
      Run(kGet, {absl::InternalError("RST_STREAM"), absl::OkStatus()},
          Options{}.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3)));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(attempts_, 1);
  EXPECT_THAT(std::string(result.status().message()),
              Not(HasSubstr("predicate")));
}

TEST(RedactionTest, CredentialKeys) {
  for (const char* key :
       {"authorization", "Authorization", "proxy-authorization", "cookie",
        "set-cookie", "x-api-key", "api_key", "x-goog-api-key", "x-auth-token",
        "grpc-trace-bin", "x-client-secret", "password", "x-session-id",
        "x-amz-security-token", "credentials"}) {
    EXPECT_TRUE(IsCredentialMetadataKey(key)) << key;
  }
  for (const char* key : {"x-tenant", "user-agent", "x-request-id",
                          "x-retry-attempt", "content-type"}) {
    EXPECT_FALSE(IsCredentialMetadataKey(key)) << key;
  }
}

}  // namespace
}  // namespace stubkit

namespace stubkit {
namespace {

TEST(LogLevelFromEnvironmentTest, ReadsStubkitLog) {
  struct Case {
    const char* value;
    LogLevel level;
  };
  for (Case c :
       {Case{"retries", LogLevel::kRetries}, Case{"rpc", LogLevel::kRpc},
        Case{"RPC", LogLevel::kRpc}, Case{"off", LogLevel::kOff},
        Case{"", LogLevel::kOff}, Case{"verbose", LogLevel::kOff}}) {
    setenv("STUBKIT_LOG", c.value, 1);
    EXPECT_EQ(LogLevelFromEnvironment(), c.level) << c.value;
  }
  unsetenv("STUBKIT_LOG");
  EXPECT_EQ(LogLevelFromEnvironment(), LogLevel::kOff);
}

}  // namespace
}  // namespace stubkit
