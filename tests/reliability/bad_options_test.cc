// Copyright 2026 The stubkit Authors.
//
// Every public option, handed a value a user might get wrong: each is either
// refused with INVALID_ARGUMENT naming the option before anything is sent,
// or has a documented meaning that this test checks by behaviour. Tried
// through generated clients against real in-process servers: sync, async,
// hedged and server-streaming calls alike. Each row prints a
// "BADINPUT | input | outcome" line for the bad-input table in
// docs/reliability.md.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/call_options.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/hedging.h"
#include "stubkit/logging.h"
#include "stubkit/metrics.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_hints.h"
#include "stubkit/server_propagation.h"
#include "stubkit/testing/echo.stubkit.h"
#include "stubkit/testing/streams.stubkit.h"
#include "tests/testing/flaky_echo_service.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using testing::EchoRequest;
using testing::EchoResponse;
using testing::EchoServiceClient;
using testing::FlakyEchoService;
using ::testing::HasSubstr;
using testing::Item;
using testing::RangeRequest;
using testing::StreamService;
using testing::StreamServiceClient;
using testing::TestServer;

// Serves Range: `count` items, counting the streams it opened.
class CountingStreamService final : public StreamService::Service {
 public:
  grpc::Status Range(grpc::ServerContext*, const RangeRequest* request,
                     grpc::ServerWriter<Item>* writer) override {
    {
      absl::MutexLock lock(&mu_);
      ++opened_;
    }
    for (int i = 0; i < request->count(); ++i) {
      Item item;
      item.set_value(request->start() + i);
      writer->Write(item);
    }
    return grpc::Status::OK;
  }
  int opened() {
    absl::MutexLock lock(&mu_);
    return opened_;
  }

 private:
  absl::Mutex mu_;
  int opened_ = 0;
};

Options Fast() {
  return Options{}
      .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
      .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                    .WithInitialDelay(milliseconds(1))
                                    .WithMaximumDelay(milliseconds(5))
                                    .WithMultiplier(2.0));
}

Options Hedged(Options options) {
  return options.set<HedgingPolicyOption>(
      HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(milliseconds(50)));
}

void Report(const std::string& input, const std::string& outcome) {
  std::printf("BADINPUT | %s | %s\n", input.c_str(), outcome.c_str());
}

class BadOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(echo_server_.ok());
    ASSERT_TRUE(stream_server_.ok());
  }

  // Every call form with `options` as the call's options, and the client's
  // `client` options under them.
  void ExpectRefusedEverywhere(const std::string& input, const Options& options,
                               const std::string& says) {
    SCOPED_TRACE(input);
    EchoServiceClient echo(echo_server_.Channel(), Fast());
    StreamServiceClient streams(stream_server_.Channel(), Fast());
    EchoRequest request;
    request.set_message("refused");
    std::vector<absl::Status> results;
    results.push_back(echo.Echo(request, options).status());
    results.push_back(echo.AsyncEcho(request, options).get().status());
    results.push_back(echo.Echo(request, Hedged(options)).status());
    results.push_back(echo.AsyncEcho(request, Hedged(options)).get().status());
    RangeRequest range;
    range.set_count(3);
    StreamReader<Item> reader = streams.Range(range, options);
    Item item;
    EXPECT_FALSE(reader.Read(&item));
    results.push_back(reader.Finish());
    for (const absl::Status& status : results) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_THAT(std::string(status.message()), HasSubstr(says));
      ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
      EXPECT_EQ(GetRetrySummary(status)->stop_reason,
                StopReason::kInvalidArgument);
      EXPECT_EQ(GetRetrySummary(status)->attempts, 0);
    }
    EXPECT_EQ(echo_service_.total_attempts(), 0) << "something was sent";
    EXPECT_EQ(stream_service_.opened(), 0) << "a stream was opened";
    Report(input, "`INVALID_ARGUMENT: " + std::string(results[0].message()) +
                      "`; sync, async, hedged and streams alike; nothing "
                      "is sent");
  }

  FlakyEchoService echo_service_;
  TestServer echo_server_{&echo_service_};
  CountingStreamService stream_service_;
  TestServer stream_server_{&stream_service_};
};

TEST_F(BadOptionsTest, UppercaseMetadataKey) {
  ExpectRefusedEverywhere(
      "`MetadataOption({{\"X-Tenant\", \"blue\"}})`",
      Options{}.set<MetadataOption>({{"X-Tenant", "blue"}}),
      "MetadataOption: metadata key 'X-Tenant': keys may hold only lowercase");
}

TEST_F(BadOptionsTest, NewlineInMetadataValue) {
  ExpectRefusedEverywhere("`MetadataOption({{\"x-note\", \"a\\nb\"}})`",
                          Options{}.set<MetadataOption>({{"x-note", "a\nb"}}),
                          "metadata key 'x-note': its value holds byte 0x0a");
}

TEST_F(BadOptionsTest, ReservedAndEmptyMetadataKeys) {
  ExpectRefusedEverywhere(
      "`MetadataOption({{\"grpc-timeout\", \"1S\"}})`",
      Options{}.set<MetadataOption>({{"grpc-timeout", "1S"}}),
      "the 'grpc-' prefix is reserved");
  ExpectRefusedEverywhere("`MetadataOption({{\"\", \"v\"}})`",
                          Options{}.set<MetadataOption>({{"", "v"}}),
                          "metadata key must not be empty");
}

TEST_F(BadOptionsTest, ClientStreamsRefuseBadMetadataToo) {
  StreamServiceClient streams(stream_server_.Channel());
  auto options = Options{}.set<MetadataOption>({{"X-Tenant", "blue"}});
  auto writer = streams.Sum(options);
  EXPECT_FALSE(writer.Write(Item()));
  absl::StatusOr<testing::SumResponse> sum = writer.Finish();
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(sum.status().message()), HasSubstr("'X-Tenant'"));
  auto bidi = streams.Double(options);
  EXPECT_FALSE(bidi.Write(Item()));
  absl::Status status = bidi.Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  Report("`MetadataOption` with a bad key on a client or bidi stream",
         "`INVALID_ARGUMENT` from `Finish()` naming the key; `Write` "
         "returns false; nothing is sent");
}

TEST_F(BadOptionsTest, EmptyOrIllegalAuthority) {
  ExpectRefusedEverywhere("`AuthorityOption(\"\")`",
                          Options{}.set<AuthorityOption>(""),
                          "AuthorityOption must not be empty");
  ExpectRefusedEverywhere("`AuthorityOption(\"a b\")`",
                          Options{}.set<AuthorityOption>("a b"),
                          "AuthorityOption holds byte 32");
}

TEST_F(BadOptionsTest, CompressionOutOfRange) {
  // gRPC aborts the process on it in ClientContext::set_compression_algorithm.
  // The enum's own count is the one out-of-range value a program can form:
  // casting any other integer to this C enum is undefined behaviour.
  ExpectRefusedEverywhere(
      "`CompressionOption(GRPC_COMPRESS_ALGORITHMS_COUNT)`",
      Options{}.set<CompressionOption>(GRPC_COMPRESS_ALGORITHMS_COUNT),
      "CompressionOption: not a grpc_compression_algorithm (3)");
}

TEST_F(BadOptionsTest, ClientStreamsRefuseBadContextSettingsToo) {
  StreamServiceClient streams(stream_server_.Channel());
  for (const Options& options :
       {Options{}.set<AuthorityOption>(""),
        Options{}.set<CompressionOption>(GRPC_COMPRESS_ALGORITHMS_COUNT)}) {
    auto writer = streams.Sum(options);
    EXPECT_FALSE(writer.Write(Item()));
    absl::StatusOr<testing::SumResponse> sum = writer.Finish();
    EXPECT_EQ(sum.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(sum.status().message()),
                HasSubstr("nothing was sent"));
    auto bidi = streams.Double(options);
    EXPECT_FALSE(bidi.Write(Item()));
    EXPECT_EQ(bidi.Finish().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(stream_service_.opened(), 0);
  Report(
      "empty `AuthorityOption` or a bad `CompressionOption` on a client "
      "or bidi stream",
      "`INVALID_ARGUMENT` from `Finish()` naming the option; `Write` "
      "returns false; nothing is sent");
}

TEST_F(BadOptionsTest, ServerHintCeilingMustBePositive) {
  ExpectRefusedEverywhere(
      "`ServerHintCeilingOption(0)`",
      Options{}.set<ServerHintCeilingOption>(nanoseconds(0)),
      "ServerHintCeilingOption must be positive, got 0");
}

TEST_F(BadOptionsTest, EmptyNameInTheIdempotencyMap) {
  ExpectRefusedEverywhere(
      "`IdempotencyMapOption({{\"\", kIdempotent}})`",
      Options{}.set<IdempotencyMapOption>({{"", Idempotency::kIdempotent}}),
      "IdempotencyMapOption: a method name is empty");
}

TEST_F(BadOptionsTest, EnumValuesOutOfRange) {
  ExpectRefusedEverywhere(
      "`IdempotencyOption(static_cast<Idempotency>(7))`",
      Options{}.set<IdempotencyOption>(static_cast<Idempotency>(7)),
      "IdempotencyOption: not an Idempotency value (7)");
  ExpectRefusedEverywhere(
      "`LogLevelOption(static_cast<LogLevel>(9))`",
      Options{}.set<LogLevelOption>(static_cast<LogLevel>(9)),
      "LogLevelOption: not a LogLevel value (9)");
}

TEST_F(BadOptionsTest, NegativeTotalTimeout) {
  ExpectRefusedEverywhere("`TotalTimeoutOption(-1s)`",
                          Options{}.set<TotalTimeoutOption>(seconds(-1)),
                          "TotalTimeoutOption must not be negative, got -1s");
}

TEST_F(BadOptionsTest, ServerPropagationOptionsOutOfRange) {
  ExpectRefusedEverywhere(
      "`MinAttemptTimeOption(-1ms)`",
      Options{}.set<MinAttemptTimeOption>(milliseconds(-1)),
      "MinAttemptTimeOption must not be negative, got -1ms");
  ExpectRefusedEverywhere(
      "`NestedRetryOption(static_cast<NestedRetry>(7))`",
      Options{}.set<NestedRetryOption>(static_cast<NestedRetry>(7)),
      "NestedRetryOption: not a NestedRetry value (7)");
  ExpectRefusedEverywhere("`IncomingAttemptOption(-1)`",
                          Options{}.set<IncomingAttemptOption>(-1),
                          "IncomingAttemptOption must not be negative, got -1");
}

TEST_F(BadOptionsTest, BackoffOutOfShape) {
  ExpectRefusedEverywhere("`ExponentialBackoffPolicy().WithInitialDelay(0s)`",
                          Options{}.set<BackoffPolicyOption>(
                              ExponentialBackoffPolicy()
                                  .WithInitialDelay(seconds(0))
                                  .WithMaximumDelay(std::chrono::minutes(5))
                                  .WithMultiplier(2.0)),
                          "initial_delay must be positive");
  ExpectRefusedEverywhere(
      "`ExponentialBackoffPolicy().WithInitialDelay(2s).WithMaximumDelay(1s)`",
      Options{}.set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                             .WithInitialDelay(seconds(2))
                                             .WithMaximumDelay(seconds(1))
                                             .WithMultiplier(2.0)),
      "must not be below initial_delay");
}

TEST_F(BadOptionsTest, AbsurdCounts) {
  ExpectRefusedEverywhere(
      "`Config().WithMaxTokens(1e9).WithTokenRatio(0.1)`",
      Options{}.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
          RetryThrottle::Config().WithMaxTokens(1e9).WithTokenRatio(0.1))),
      "max_tokens must be in (0, 1000]");
  ExpectRefusedEverywhere(
      "`Config().WithMaxTokens(10).WithTokenRatio(0)`",
      Options{}.set<RetryThrottleOption>(std::make_shared<RetryThrottle>(
          RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0))),
      "token_ratio must be in (0, max_tokens]");
  ExpectRefusedEverywhere(
      "`RetryBudget::Config().WithPercentCanRetry(20)`",
      Options{}.set<RetryBudgetOption>(std::make_shared<RetryBudget>(
          RetryBudget::Config().WithPercentCanRetry(20))),
      "percent_can_retry must be in [0, 1] (a fraction: 0.2 is 20%)");
  ExpectRefusedEverywhere(
      "`RetryBudget::Config().WithTtl(0s)`",
      Options{}.set<RetryBudgetOption>(std::make_shared<RetryBudget>(
          RetryBudget::Config().WithTtl(std::chrono::seconds(0)))),
      "ttl must be in [1ms, 1h], got 0");
}

TEST_F(BadOptionsTest, AdaptiveHedgingOutOfRange) {
  for (const auto& [input, config, says] : std::vector<
           std::tuple<std::string, AdaptiveHedging::Config, std::string>>{
           {"`AdaptiveHedging::Config().WithPercentile(95)`",
            AdaptiveHedging::Config().WithPercentile(95),
            "AdaptiveHedging: percentile must be in [0.5, 0.9999] (a "
            "fraction: 0.95 is p95), got 95"},
           {"`.WithMinDelay(10ms).WithMaxDelay(5ms)`",
            AdaptiveHedging::Config()
                .WithMinDelay(milliseconds(10))
                .WithMaxDelay(milliseconds(5)),
            "AdaptiveHedging: max_delay must be in [min_delay (10ms), 1h], "
            "got 5ms"},
           {"`.WithMaxExtraLoad(5)`",
            AdaptiveHedging::Config().WithMaxExtraLoad(5),
            "AdaptiveHedging: max_extra_load must be in (0, 1] (a fraction: "
            "0.05 is 5%), got 5"},
           {"`.WithMinSamples(0)`", AdaptiveHedging::Config().WithMinSamples(0),
            "AdaptiveHedging: min_samples must be in [1, 1e6], got 0"}}) {
    SCOPED_TRACE(input);
    const Options options = Options{}.set<AdaptiveHedgingOption>(
        std::make_shared<AdaptiveHedging>(config));
    // Issue 39, item 8: as its header says, a hedged call fails before
    // sending; a call that is not hedged (no HedgingPolicyOption, a
    // non-idempotent method, a stream) never reads the option and goes on.
    EchoServiceClient echo(echo_server_.Channel(), Fast());
    EchoRequest request;
    request.set_message("adaptive");
    const int sent_before = echo_service_.total_attempts();
    for (const absl::Status& status :
         {echo.Echo(request, Hedged(options)).status(),
          echo.AsyncEcho(request, Hedged(options)).get().status()}) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_THAT(std::string(status.message()), HasSubstr(says));
      ASSERT_TRUE(GetRetrySummary(status).has_value()) << status;
      EXPECT_EQ(GetRetrySummary(status)->stop_reason,
                StopReason::kInvalidArgument);
    }
    EXPECT_EQ(echo_service_.total_attempts(), sent_before)
        << "a hedged call was sent";
    EXPECT_TRUE(echo.Echo(request, options).ok());
    EXPECT_TRUE(echo.AsyncEcho(request, options).get().ok());
    EXPECT_TRUE(echo.Append(request, Hedged(options)).ok());
    StreamServiceClient streams(stream_server_.Channel(), Fast());
    RangeRequest range;
    range.set_count(2);
    StreamReader<Item> reader = streams.Range(range, options);
    Item item;
    while (reader.Read(&item)) {
    }
    EXPECT_TRUE(reader.Finish().ok());
    Report(input, "`INVALID_ARGUMENT: " + std::string(says) +
                      "`; hedged calls only, nothing is sent; calls that "
                      "are not hedged ignore it");
  }
}

TEST_F(BadOptionsTest, HedgingPolicyOutOfRange) {
  // Refused for idempotent calls, which are the ones that would be hedged.
  EchoServiceClient echo(echo_server_.Channel());
  EchoRequest request;
  request.set_message("hedge");
  for (const auto& [input, policy, says] :
       std::vector<std::tuple<std::string, HedgingPolicy, std::string>>{
           {"`HedgingPolicy().WithMaxAttempts(11)`",
            HedgingPolicy().WithMaxAttempts(11).WithHedgingDelay(
                milliseconds(10)),
            "max_attempts must be in [1, 10], got 11"},
           {"`.WithHedgingDelay(-1ms)`",
            HedgingPolicy().WithMaxAttempts(2).WithHedgingDelay(
                milliseconds(-1)),
            "hedging_delay must not be negative"},
           {"`.WithNonFatalCodes({})`",
            HedgingPolicy()
                .WithMaxAttempts(2)
                .WithHedgingDelay(milliseconds(10))
                .WithNonFatalCodes(StatusCodeSet{}),
            "non_fatal_codes must be non-empty"}}) {
    auto options = Options{}.set<HedgingPolicyOption>(policy);
    absl::Status sync = echo.Echo(request, options).status();
    absl::Status async = echo.AsyncEcho(request, options).get().status();
    for (const absl::Status& status : {sync, async}) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << input;
      EXPECT_THAT(std::string(status.message()), HasSubstr(says));
    }
    Report(input, "`INVALID_ARGUMENT: " + std::string(sync.message()) +
                      "`; sync and async; nothing is sent");
  }
  EXPECT_EQ(echo_service_.total_attempts(), 0);
}

// Values with a documented meaning rather than an error: each is checked by
// what the call does.
TEST_F(BadOptionsTest, NullPointersAndFunctionsMeanUnset) {
  EchoServiceClient echo(echo_server_.Channel());
  auto options =
      Options{}
          .set<RetryObserverOption>(nullptr)
          .set<LogSinkOption>(nullptr)
          .set<MetricsOption>(nullptr)
          .set<RetryThrottleOption>(nullptr)
          .set<RetryBudgetOption>(nullptr)
          .set<CancellationOption>(nullptr)
          .set<ClockOption>(nullptr)
          .set<SleeperOption>(nullptr)
          .set<AsyncSleeperOption>(nullptr)
          .set<CallCredentialsOption>(nullptr)
          .set<ContextSetupOption>(nullptr)
          .set<ResponseMetadataOption>(nullptr)
          .set<BackoffPolicyOption>(ExponentialBackoffPolicy()
                                        .WithInitialDelay(milliseconds(1))
                                        .WithMaximumDelay(milliseconds(2))
                                        .WithMultiplier(2.0));
  EchoRequest request;
  request.set_message("nulls");
  request.set_fail_first(1);
  request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
  absl::StatusOr<EchoResponse> sync = echo.Echo(request, options);
  ASSERT_TRUE(sync.ok()) << sync.status();
  EXPECT_EQ(sync->attempt(), 2);
  request.set_message("nulls async");
  absl::StatusOr<EchoResponse> async = echo.AsyncEcho(request, options).get();
  ASSERT_TRUE(async.ok()) << async.status();
  EXPECT_EQ(async->attempt(), 2);
  Report(
      "null `RetryObserverOption`, `LogSinkOption`, `MetricsOption`, "
      "`RetryThrottleOption`, `RetryBudgetOption`, `CancellationOption`, "
      "`ClockOption`, "
      "`SleeperOption`, `AsyncSleeperOption`, `CallCredentialsOption`, "
      "`ContextSetupOption`, `ResponseMetadataOption`",
      "each means unset: no observer, stderr, no metrics, no throttle, no "
      "budget, not "
      "cancellable, the steady clock, real sleep, the shared timer thread, "
      "the channel's credentials only, no hook, nothing copied; the call "
      "retries and succeeds as without them");

  // Decorator factories that are null, or return null, are skipped.
  EchoServiceClient decorated(
      echo_server_.Channel(),
      Options{}.set<EchoServiceClient::DecoratorsOption>(
          {nullptr, [](std::shared_ptr<testing::EchoServiceStub>) {
             return std::shared_ptr<testing::EchoServiceStub>();
           }}));
  request.set_message("null decorators");
  request.set_fail_first(0);
  ASSERT_TRUE(decorated.Echo(request).ok());
  Report("`DecoratorsOption` holding a null factory, or one returning null",
         "skipped: the stack below it is kept");

  // A null resume hook means no resume: the break is reported.
  StreamServiceClient streams(stream_server_.Channel());
  RangeRequest range;
  range.set_count(3);
  StreamReader<Item> reader = streams.Range(
      range, Options{}.set<StreamServiceClient::RangeResumeOption>(nullptr));
  Item item;
  int read = 0;
  while (reader.Read(&item)) ++read;
  EXPECT_EQ(read, 3);
  EXPECT_TRUE(reader.Finish().ok());
  Report("a null `MResumeOption` hook",
         "no resume hook: a break after the "
         "first message is reported");
}

TEST_F(BadOptionsTest, ZeroAndHugeDurationsMeanNoLimit) {
  EchoServiceClient echo(echo_server_.Channel());
  EchoRequest request;
  request.set_message("durations");
  for (const auto& [input, options] :
       std::vector<std::pair<std::string, Options>>{
           {"`AttemptTimeoutOption(0)`, `TotalTimeoutOption(0)`",
            Options{}
                .set<AttemptTimeoutOption>(nanoseconds(0))
                .set<TotalTimeoutOption>(nanoseconds(0))},
           {"`AttemptTimeoutOption(nanoseconds::max())`, "
            "`TotalTimeoutOption(nanoseconds::max())`",
            Options{}
                .set<AttemptTimeoutOption>(nanoseconds::max())
                .set<TotalTimeoutOption>(nanoseconds::max())},
           {"`RetryPolicy::LimitedTime(nanoseconds::max())`",
            Options{}.set<RetryPolicyOption>(
                RetryPolicy::LimitedTime(nanoseconds::max()))},
           {"`DeadlineOption(system_clock::time_point::max())`",
            Options{}.set<DeadlineOption>(
                std::chrono::system_clock::time_point::max())},
           {"`ServerHintCeilingOption(nanoseconds::max())`",
            Options{}.set<ServerHintCeilingOption>(nanoseconds::max())},
           {"`RetryPolicy::LimitedErrorCount(INT_MAX)`",
            Options{}.set<RetryPolicyOption>(
                RetryPolicy::LimitedErrorCount(INT_MAX))}}) {
    absl::StatusOr<EchoResponse> sync = echo.Echo(request, options);
    EXPECT_TRUE(sync.ok()) << input << ": " << sync.status();
    absl::StatusOr<EchoResponse> async = echo.AsyncEcho(request, options).get();
    EXPECT_TRUE(async.ok()) << input << ": " << async.status();
  }
  Report("`AttemptTimeoutOption(0)`, `TotalTimeoutOption(0)`",
         "no limit of that kind (the retry policy still bounds the call)");
  Report(
      "`nanoseconds::max()` as a timeout, time limit or hint ceiling; "
      "`time_point::max()` as the deadline; `INT_MAX` failures",
      "saturates: no limit of that kind, never an overflow into the past");
}

TEST_F(BadOptionsTest, HedgingANonIdempotentCallMakesOneAttempt) {
  EchoServiceClient echo(echo_server_.Channel());
  auto options = Options{}
                     .set<HedgingPolicyOption>(
                         HedgingPolicy().WithMaxAttempts(3).WithHedgingDelay(
                             milliseconds(1)))
                     .set<IdempotencyOption>(Idempotency::kNonIdempotent);
  EchoRequest request;
  request.set_message("not hedged");
  request.set_fail_first(1);
  request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
  absl::StatusOr<EchoResponse> r = echo.Echo(request, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(echo_service_.attempts("not hedged"), 1);
  EXPECT_EQ(GetRetrySummary(r.status())->stop_reason,
            StopReason::kNonIdempotent);
  Report("`HedgingPolicyOption` with `IdempotencyOption(kNonIdempotent)`",
         "not hedged, not retried: one attempt, `" +
             std::string(r.status().message()) + "`");
}

TEST_F(BadOptionsTest, UnknownMethodInTheIdempotencyMapMatchesNothing) {
  EchoServiceClient echo(echo_server_.Channel(), Fast());
  EchoRequest request;
  request.set_message("unknown map entry");
  request.set_fail_first(1);
  request.set_fail_code(grpc::StatusCode::UNAVAILABLE);
  // Append is not idempotent by its proto; the entry names no real method.
  absl::StatusOr<EchoResponse> r = echo.Append(
      request,
      Options{}.set<IdempotencyMapOption>(
          {{"stubkit.testing.EchoService.Apend", Idempotency::kIdempotent}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(echo_service_.attempts("unknown map entry"), 1);
  Report("`IdempotencyMapOption` naming a method the client does not have",
         "matches no call; the proto's idempotency applies");
}

TEST_F(BadOptionsTest, DeadlineInThePastSendsNothing) {
  EchoServiceClient echo(echo_server_.Channel());
  EchoRequest request;
  request.set_message("past");
  for (auto deadline : {std::chrono::system_clock::now() - seconds(1),
                        std::chrono::system_clock::time_point::min()}) {
    auto options = Options{}.set<DeadlineOption>(deadline);
    const absl::Status results[] = {
        echo.Echo(request, options).status(),
        echo.AsyncEcho(request, options).get().status(),
        echo.Echo(request, Hedged(options)).status()};
    for (const absl::Status& status : results) {
      SCOPED_TRACE(&status - results);  // 0 sync, 1 async, 2 hedged
      EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
      ASSERT_TRUE(GetRetrySummary(status).has_value());
      EXPECT_EQ(GetRetrySummary(status)->stop_reason, StopReason::kDeadline);
    }
  }
  EXPECT_EQ(echo_service_.total_attempts(), 0);
  Report("`DeadlineOption` already past (or `time_point::min()`)",
         "`DEADLINE_EXCEEDED`, stop reason `kDeadline`, nothing sent; sync, "
         "async and hedged alike");
}

}  // namespace
}  // namespace stubkit
