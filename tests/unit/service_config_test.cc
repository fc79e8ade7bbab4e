// Copyright 2026 The stubkit Authors.
//
// ParseServiceConfig over service configs written in gRPC's documented JSON
// format: each mapping rule, each precedence rule, each bad-input row.

#include "stubkit/service_config.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/call_options.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/internal/engine/stream_retry.h"
#include "stubkit/logging.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Key;
using ::testing::StartsWith;

ServiceConfig MustParse(const std::string& json) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(json);
  EXPECT_TRUE(config.ok()) << config.status() << "\n" << json;
  return config.ok() ? *std::move(config) : ServiceConfig();
}

// The error message of a config that must be rejected.
std::string ErrorOf(const std::string& json) {
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(json);
  EXPECT_FALSE(config.ok()) << json;
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

// One methodConfig entry for every method, with `fields` added.
std::string Default(const std::string& fields) {
  return R"({"methodConfig": [{"name": [{}], )" + fields + "}]}";
}

constexpr char kRetry[] = R"("retryPolicy": {
    "maxAttempts": 4,
    "initialBackoff": "0.100s",
    "maxBackoff": "10s",
    "backoffMultiplier": 1.5,
    "retryableStatusCodes": ["UNAVAILABLE", 8]
  })";

// ---------------------------------------------------------------- mapping

TEST(ServiceConfigMappingTest, RetryPolicyTimeoutAndWaitForReady) {
  ServiceConfig config = MustParse(Default(std::string(kRetry) + R"(,
      "timeout": "30s", "waitForReady": true)"));
  Options options = config.OptionsFor("pkg.Service.Method");

  const RetryPolicy& retry = options.get<RetryPolicyOption>();
  ASSERT_TRUE(retry.status().ok()) << retry.status();
  EXPECT_EQ(retry.max_failures(), 3);  // maxAttempts counts the first
  EXPECT_EQ(retry.retryable_codes(),
            StatusCodeSet({grpc::StatusCode::UNAVAILABLE,
                           grpc::StatusCode::RESOURCE_EXHAUSTED}));
  const ExponentialBackoffPolicy& backoff = options.get<BackoffPolicyOption>();
  ASSERT_TRUE(options.has<BackoffPolicyOption>());
  EXPECT_EQ(backoff.initial_delay(), milliseconds(100));
  EXPECT_EQ(backoff.maximum_delay(), seconds(10));
  EXPECT_EQ(backoff.multiplier(), 1.5);
  // gRFC A6's waits: uniform in [0, capped exponential].
  EXPECT_EQ(backoff.jitter().kind(), Jitter::Kind::kFull);
  EXPECT_EQ(options.get<TotalTimeoutOption>(), seconds(30));
  ASSERT_TRUE(options.has<WaitForReadyOption>());
  EXPECT_TRUE(options.get<WaitForReadyOption>());
  // Not hedged, and no throttle without retryThrottling.
  ASSERT_TRUE(options.has<HedgingPolicyOption>());
  EXPECT_FALSE(options.get<HedgingPolicyOption>().enabled());
  EXPECT_FALSE(options.has<RetryThrottleOption>());
}

// Issue 23 item 8: a retryPolicy (or hedgingPolicy) is the service
// owner's statement that the method may be repeated, as under gRPC.
TEST(ServiceConfigMappingTest, APolicyMakesItsMethodsRetryable) {
  ServiceConfig config = MustParse(Default(kRetry));
  for (const Options& options :
       {config.OptionsFor("pkg.Service.Append"), config.ToOptions()}) {
    EXPECT_EQ(options.get<IdempotencyOption>(), Idempotency::kIdempotent);
  }
  ServiceConfig hedged = MustParse(Default(R"("hedgingPolicy": {
      "maxAttempts": 3})"));
  EXPECT_EQ(hedged.OptionsFor("a.B.C").get<IdempotencyOption>(),
            Idempotency::kIdempotent);
  // No policy: nothing said about idempotency.
  EXPECT_FALSE(MustParse(Default(R"("timeout": "1s")"))
                   .OptionsFor("a.B.C")
                   .has<IdempotencyOption>());
}

TEST(ServiceConfigMappingTest, KeepIdempotencyRulesNeverMakesAMethodRetryable) {
  ServiceConfigImport how;
  how.keep_idempotency_rules = true;
  absl::StatusOr<ServiceConfig> config =
      ParseServiceConfig(Default(kRetry), how);
  ASSERT_TRUE(config.ok()) << config.status();
  for (const Options& options :
       {config->OptionsFor("pkg.Service.Append"), config->ToOptions()}) {
    EXPECT_FALSE(options.has<IdempotencyOption>());
    EXPECT_FALSE(options.has<IdempotencyMapOption>());
  }
}

// Issue 23 item 4: A6 treats maxAttempts above 5 as 5.
TEST(ServiceConfigMappingTest, MaxAttemptsAboveFiveCountsAsFive) {
  const std::string json = Default(R"("retryPolicy": {
      "maxAttempts": 12, "initialBackoff": "1s", "maxBackoff": "1s",
      "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]})");
  EXPECT_EQ(MustParse(json)
                .OptionsFor("a.B.C")
                .get<RetryPolicyOption>()
                .max_failures(),
            4);
  // Opt-in: a higher limit.
  ServiceConfigImport how;
  how.max_attempts = 20;
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(json, how);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->OptionsFor("a.B.C").get<RetryPolicyOption>().max_failures(),
            11);
  how.max_attempts = 1;
  EXPECT_THAT(ParseServiceConfig(json, how).status().message(),
              HasSubstr("max_attempts must be at least 2"));
}

TEST(ServiceConfigMappingTest, OmittedMaxAttemptsIsBoundedByTheTimeout) {
  // As googleapis' files are written (gRPC itself would reject this).
  ServiceConfig config = MustParse(Default(R"("timeout": "60s",
      "retryPolicy": {"initialBackoff": "0.100s", "maxBackoff": "60s",
      "backoffMultiplier": 1.3, "retryableStatusCodes": ["UNAVAILABLE"]})"));
  Options options = config.OptionsFor("a.B.C");
  const RetryPolicy& retry = options.get<RetryPolicyOption>();
  EXPECT_EQ(retry.max_failures(), RetryPolicy::kUnlimitedFailures);
  EXPECT_EQ(retry.time_limit(), seconds(60));
  EXPECT_EQ(options.get<TotalTimeoutOption>(), seconds(60));
}

TEST(ServiceConfigMappingTest, OmittedMaxAttemptsWithoutTimeoutIsTheDefault) {
  ServiceConfig config = MustParse(Default(R"("retryPolicy": {
      "initialBackoff": "1s", "maxBackoff": "2s", "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]})"));
  EXPECT_EQ(config.OptionsFor("a.B.C").get<RetryPolicyOption>().time_limit(),
            RetryPolicy::kDefaultTimeLimit);
}

TEST(ServiceConfigMappingTest, NoRetryPolicyMeansNoRetries) {
  ServiceConfig config = MustParse(Default(R"("timeout": "5s")"));
  Options options = config.OptionsFor("a.B.C");
  ASSERT_TRUE(options.has<RetryPolicyOption>());
  EXPECT_EQ(options.get<RetryPolicyOption>().max_failures(), 0);
  EXPECT_FALSE(options.get<HedgingPolicyOption>().enabled());
}

TEST(ServiceConfigMappingTest, HedgingPolicy) {
  ServiceConfig config = MustParse(Default(R"("hedgingPolicy": {
      "maxAttempts": 3, "hedgingDelay": "0.050s",
      "nonFatalStatusCodes": ["UNAVAILABLE", "ABORTED"]})"));
  Options options = config.OptionsFor("a.B.C");
  const HedgingPolicy& hedging = options.get<HedgingPolicyOption>();
  ASSERT_TRUE(hedging.status().ok()) << hedging.status();
  EXPECT_EQ(hedging.max_attempts(), 3);
  EXPECT_EQ(hedging.hedging_delay(), milliseconds(50));
  EXPECT_EQ(hedging.non_fatal_codes(),
            StatusCodeSet(
                {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::ABORTED}));
  // No retries besides the hedges.
  EXPECT_EQ(options.get<RetryPolicyOption>().max_failures(), 0);
}

TEST(ServiceConfigMappingTest, HedgingDefaults) {
  // hedgingDelay defaults to 0 (all at once), as in gRPC; no
  // nonFatalStatusCodes keeps stubkit's UNAVAILABLE. maxAttempts 20 counts
  // as 5 (A6), or at most 10 (stubkit's limit) with a higher max_attempts.
  const std::string json = Default(R"("hedgingPolicy": {
      "maxAttempts": 20})");
  ServiceConfig config = MustParse(json);
  EXPECT_EQ(
      config.OptionsFor("a.B.C").get<HedgingPolicyOption>().max_attempts(), 5);
  ServiceConfigImport how;
  how.max_attempts = 100;
  config = *ParseServiceConfig(json, how);
  const HedgingPolicy& hedging =
      config.OptionsFor("a.B.C").get<HedgingPolicyOption>();
  EXPECT_EQ(hedging.max_attempts(), 10);
  EXPECT_EQ(hedging.hedging_delay(), milliseconds(0));
  EXPECT_EQ(hedging.non_fatal_codes(),
            StatusCodeSet({grpc::StatusCode::UNAVAILABLE}));
}

TEST(ServiceConfigMappingTest, WaitForReadyFalseAndNull) {
  Options off =
      MustParse(Default(R"("waitForReady": false)")).OptionsFor("a.B.C");
  ASSERT_TRUE(off.has<WaitForReadyOption>());
  EXPECT_FALSE(off.get<WaitForReadyOption>());
  Options null =
      MustParse(Default(R"("waitForReady": null)")).OptionsFor("a.B.C");
  EXPECT_FALSE(null.has<WaitForReadyOption>());
}

// Issue 23 item 3: only the methods with a policy count for the throttle
// (A6), so failures of a method the file does not retry cannot drain it.
TEST(ServiceConfigMappingTest, OneThrottleSharedByTheMethodsWithAPolicy) {
  ServiceConfig config = MustParse(std::string(R"({
      "methodConfig": [{"name": [{"service": "a.B"}], "timeout": "1s"},
                       {"name": [{"service": "a.B", "method": "R"}], )") +
                                   kRetry + R"(}],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  ASSERT_NE(config.throttle(), nullptr);
  EXPECT_EQ(config.throttle()->max_tokens(), 10);
  EXPECT_DOUBLE_EQ(config.throttle()->token_ratio(), 0.1);
  EXPECT_EQ(config.OptionsFor("a.B.R").get<RetryThrottleOption>(),
            config.throttle());
  EXPECT_EQ(config.OptionsFor("a.B.C").get<RetryThrottleOption>(), nullptr);
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<RetryThrottleOption>(), nullptr);
  const Options client = config.ToOptions();
  EXPECT_EQ(client.get<RetryThrottleOption>(), nullptr);
  EXPECT_EQ(
      client.get<MethodOptionsOption>().at("a.B/R").get<RetryThrottleOption>(),
      config.throttle());
  ServiceConfig copy = config;
  EXPECT_EQ(copy.OptionsFor("a.B.R").get<RetryThrottleOption>(),
            config.throttle());
  // With stubkit's defaults kept, unnamed methods retry, and count.
  ServiceConfigImport how;
  how.keep_stubkit_defaults = true;
  ServiceConfig kept = *ParseServiceConfig(R"({
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})",
                                           how);
  EXPECT_EQ(kept.OptionsFor("x.Y.Z").get<RetryThrottleOption>(),
            kept.throttle());
}

TEST(ServiceConfigMappingTest, OtherAndUnknownFieldsAreIgnored) {
  ServiceConfig config = MustParse(R"({
      "loadBalancingConfig": [{"round_robin": {}}],
      "loadBalancingPolicy": "round_robin",
      "healthCheckConfig": {"serviceName": "x"},
      "someFieldOfANewerGrpc": {"nested": [1, "two", {"three": 3}]},
      "methodConfig": [{
        "name": [{"service": "a.B", "method": "C"}],
        "maxRequestMessageBytes": "1024",
        "maxResponseMessageBytes": 2048,
        "timeout": "1s",
        "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s",
          "maxBackoff": "1s", "backoffMultiplier": 1,
          "retryableStatusCodes": ["UNAVAILABLE"],
          "perAttemptRecvTimeout": "1s"}
      }]})");
  EXPECT_EQ(config.OptionsFor("a.B.C").get<TotalTimeoutOption>(), seconds(1));
}

TEST(ServiceConfigMappingTest, StatusCodesByNameAndNumber) {
  ServiceConfig config = MustParse(Default(R"("retryPolicy": {
      "maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
      "backoffMultiplier": 1,
      "retryableStatusCodes": ["CANCELLED", 2, "DEADLINE_EXCEEDED", 16]})"));
  EXPECT_EQ(
      config.OptionsFor("a.B.C").get<RetryPolicyOption>().retryable_codes(),
      StatusCodeSet({grpc::StatusCode::CANCELLED, grpc::StatusCode::UNKNOWN,
                     grpc::StatusCode::DEADLINE_EXCEEDED,
                     grpc::StatusCode::UNAUTHENTICATED}));
}

TEST(ServiceConfigMappingTest, AGoogleapisStyleFile) {
  // Shaped like googleapis' pubsub_grpc_service_config.json.
  ServiceConfig config = MustParse(R"({
  "methodConfig": [{
    "name": [
      {"service": "google.pubsub.v1.Publisher", "method": "CreateTopic"},
      {"service": "google.pubsub.v1.Publisher", "method": "UpdateTopic"}
    ],
    "timeout": "60s",
    "retryPolicy": {
      "initialBackoff": "0.100s",
      "maxBackoff": "60s",
      "backoffMultiplier": 1.3,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }, {
    "name": [{"service": "google.pubsub.v1.Publisher", "method": "Publish"}],
    "timeout": "60s",
    "retryPolicy": {
      "initialBackoff": "0.100s",
      "maxBackoff": "60s",
      "backoffMultiplier": 4,
      "retryableStatusCodes": ["ABORTED", "CANCELLED", "INTERNAL",
        "RESOURCE_EXHAUSTED", "UNKNOWN", "UNAVAILABLE", "DEADLINE_EXCEEDED"]
    }
  }, {
    "name": [{"service": "google.pubsub.v1.Subscriber"}],
    "timeout": "60s"
  }]})");
  Options publish = config.OptionsFor("google.pubsub.v1.Publisher.Publish");
  EXPECT_EQ(publish.get<BackoffPolicyOption>().multiplier(), 4);
  EXPECT_TRUE(publish.get<RetryPolicyOption>().retryable_codes().contains(
      grpc::StatusCode::INTERNAL));
  Options create = config.OptionsFor("google.pubsub.v1.Publisher.CreateTopic");
  EXPECT_EQ(create.get<BackoffPolicyOption>().multiplier(), 1.3);
  EXPECT_EQ(config.OptionsFor("google.pubsub.v1.Subscriber.Pull")
                .get<RetryPolicyOption>()
                .max_failures(),
            0);
  // Publisher.DeleteTopic is named by no entry, and there is no default:
  // not retried, as under gRPC.
  EXPECT_EQ(config.OptionsFor("google.pubsub.v1.Publisher.DeleteTopic")
                .get<RetryPolicyOption>()
                .max_failures(),
            0);
}

// ------------------------------------------------------------- precedence

constexpr char kLayered[] = R"({"methodConfig": [
  {"name": [{}], "timeout": "100s", "waitForReady": true,
   "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s",
     "maxBackoff": "1s", "backoffMultiplier": 1,
     "retryableStatusCodes": ["UNAVAILABLE"]}},
  {"name": [{"service": "a.B"}], "timeout": "20s",
   "retryPolicy": {"maxAttempts": 3, "initialBackoff": "2s",
     "maxBackoff": "2s", "backoffMultiplier": 1,
     "retryableStatusCodes": ["ABORTED"]}},
  {"name": [{"service": "a.B", "method": "Exact"}], "timeout": "3s",
   "retryPolicy": {"maxAttempts": 5, "initialBackoff": "3s",
     "maxBackoff": "3s", "backoffMultiplier": 1,
     "retryableStatusCodes": ["INTERNAL"]}},
  {"name": [{"service": "a.B", "method": "Bare"}]}
]})";

TEST(ServiceConfigPrecedenceTest, MethodOverServiceOverDefault) {
  ServiceConfig config = MustParse(kLayered);
  EXPECT_EQ(config.OptionsFor("a.B.Exact").get<TotalTimeoutOption>(),
            seconds(3));
  EXPECT_EQ(
      config.OptionsFor("a.B.Exact").get<RetryPolicyOption>().max_failures(),
      4);
  EXPECT_EQ(config.OptionsFor("a.B.Other").get<TotalTimeoutOption>(),
            seconds(20));
  EXPECT_EQ(
      config.OptionsFor("a.B.Other").get<RetryPolicyOption>().max_failures(),
      2);
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<TotalTimeoutOption>(), seconds(100));
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<RetryPolicyOption>().max_failures(),
            1);
}

TEST(ServiceConfigPrecedenceTest, TheMostSpecificEntryWinsAsAWhole) {
  // "Bare" names only itself: nothing of its service's or the default's
  // entry leaks in (gRPC does not merge entries either).
  Options bare = MustParse(kLayered).OptionsFor("a.B.Bare");
  EXPECT_EQ(bare.get<RetryPolicyOption>().max_failures(), 0);
  EXPECT_EQ(bare.get<TotalTimeoutOption>(), seconds(0));
  EXPECT_FALSE(bare.get<WaitForReadyOption>());
  EXPECT_EQ(bare.get<BackoffPolicyOption>().initial_delay(),
            ExponentialBackoffPolicy().initial_delay());
}

// Issue 23 item 7: A6, "unless the service owner specifies a policy in the
// configuration, retries and hedging will not be enabled".
TEST(ServiceConfigPrecedenceTest, UnnamedMethodsAreNotRetried) {
  const std::string json =
      R"({"methodConfig": [{"name": [{"service": "a.B"}]}]})";
  ServiceConfig config = MustParse(json);
  for (const Options& options :
       {config.OptionsFor("x.Y.Z"), config.ToOptions()}) {
    EXPECT_EQ(options.get<RetryPolicyOption>().max_failures(), 0);
    EXPECT_FALSE(options.get<HedgingPolicyOption>().enabled());
  }
  EXPECT_TRUE(config.ToOptions().get<MethodOptionsOption>().count("a.B"));
}

TEST(ServiceConfigPrecedenceTest, KeepStubkitDefaultsForUnnamedMethods) {
  // Opt-in: without a default entry the config says nothing about other
  // methods, which keep the client's options.
  ServiceConfigImport how;
  how.keep_stubkit_defaults = true;
  ServiceConfig config = *ParseServiceConfig(
      R"({"methodConfig": [{"name": [{"service": "a.B"}]}]})", how);
  EXPECT_FALSE(config.OptionsFor("x.Y.Z").has<RetryPolicyOption>());
  EXPECT_TRUE(config.ToOptions().get<MethodOptionsOption>().count("a.B"));
  EXPECT_FALSE(config.ToOptions().has<RetryPolicyOption>());
}

TEST(ServiceConfigPrecedenceTest, ServiceWithEmptyMethodIsTheService) {
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B", "method": ""}], "timeout": "7s"},
      {"name": [{"service": "", "method": ""}], "timeout": "9s"}]})");
  EXPECT_EQ(config.OptionsFor("a.B.C").get<TotalTimeoutOption>(), seconds(7));
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<TotalTimeoutOption>(), seconds(9));
}

TEST(ServiceConfigPrecedenceTest, ToOptionsLayersTheEntries) {
  ServiceConfig config = MustParse(kLayered);
  Options options = config.ToOptions();
  // The default entry is the client's.
  EXPECT_EQ(options.get<TotalTimeoutOption>(), seconds(100));
  EXPECT_THAT(options.get<MethodOptionsOption>(),
              ElementsAre(Key("a.B"), Key("a.B/Bare"), Key("a.B/Exact")));
  // Layered in order (client, service, method), the entries give what
  // OptionsFor flattens.
  const auto& entries = options.get<MethodOptionsOption>();
  Options bare =
      options.MergedWith(entries.at("a.B")).MergedWith(entries.at("a.B/Bare"));
  EXPECT_EQ(bare.get<TotalTimeoutOption>(), seconds(0));
  EXPECT_EQ(bare.get<RetryPolicyOption>().max_failures(), 0);
  Options exact =
      options.MergedWith(entries.at("a.B")).MergedWith(entries.at("a.B/Exact"));
  EXPECT_EQ(exact.get<RetryPolicyOption>().max_failures(), 4);
}

TEST(ServiceConfigPrecedenceTest, ToOptionsForOneService) {
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B"}, {"service": "a.B", "method": "C"},
                {"service": "a.Bc"}, {"service": "x.Y", "method": "Z"}]}]})");
  EXPECT_THAT(config.ToOptions("a.B").get<MethodOptionsOption>(),
              ElementsAre(Key("a.B"), Key("a.B/C")));
  EXPECT_THAT(config.ToOptions().get<MethodOptionsOption>(),
              ElementsAre(Key("a.B"), Key("a.B/C"), Key("a.Bc"), Key("x.Y/Z")));
}

// Issue 22 item 9: the method C of a.B and the service a.B.C are different
// gRPC paths (/a.B/C and /a.B.C/...), not a duplicate.
TEST(ServiceConfigPrecedenceTest, MethodOfAServiceIsNotTheServiceOfThatName) {
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B", "method": "C"}], "timeout": "3s"},
      {"name": [{"service": "a.B.C"}], "timeout": "4s"}]})");
  EXPECT_EQ(config.OptionsFor("a.B.C").get<TotalTimeoutOption>(), seconds(3));
  EXPECT_EQ(config.OptionsFor("a.B/C").get<TotalTimeoutOption>(), seconds(3));
  EXPECT_EQ(config.OptionsFor("a.B.C.D").get<TotalTimeoutOption>(), seconds(4));
  EXPECT_THAT(config.ToOptions().get<MethodOptionsOption>(),
              ElementsAre(Key("a.B.C"), Key("a.B/C")));
  EXPECT_THAT(config.ToOptions("a.B.C").get<MethodOptionsOption>(),
              ElementsAre(Key("a.B.C")));
  // Each entry is marked as imported (see internal::ImportedEntryOption).
  const Options client = config.ToOptions();
  for (const auto& [key, entry] : client.get<MethodOptionsOption>()) {
    EXPECT_TRUE(entry.get<internal::ImportedEntryOption>()) << key;
  }
}

TEST(ServiceConfigPrecedenceTest, EmptyConfig) {
  // As gRPC with an empty config: nothing is retried.
  ServiceConfig config = MustParse("{}");
  EXPECT_EQ(config.ToOptions().get<RetryPolicyOption>().max_failures(), 0);
  EXPECT_FALSE(config.ToOptions().has<MethodOptionsOption>());
  EXPECT_EQ(config.OptionsFor("a.B.C").get<RetryPolicyOption>().max_failures(),
            0);
  ServiceConfigImport how;
  how.keep_stubkit_defaults = true;
  config = *ParseServiceConfig("{}", how);
  EXPECT_FALSE(config.ToOptions().has<RetryPolicyOption>());
  EXPECT_FALSE(config.OptionsFor("a.B.C").has<RetryPolicyOption>());
}

// -------------------------------------------------------------- bad input

TEST(ServiceConfigBadInputTest, InvalidJson) {
  EXPECT_THAT(ErrorOf(R"({"methodConfig": [)"),
              StartsWith("invalid service config JSON: "));
  EXPECT_THAT(ErrorOf(""), StartsWith("invalid service config JSON: "));
  EXPECT_THAT(ErrorOf("[1, 2]"), StartsWith("invalid service config JSON: "));
  EXPECT_THAT(ErrorOf(R"({"methodConfig" [{"name": [{}]}]})"),
              StartsWith("invalid service config JSON: "));
  EXPECT_THAT(ErrorOf("{\"methodConfig\": [{\"name\": [{\"service\": "
                      "\"\xff\"}]}]}"),
              StartsWith("invalid service config JSON: "));
  // The message is one line: no caret diagram.
  EXPECT_THAT(ErrorOf(R"({"methodConfig": [)"),
              ::testing::Not(HasSubstr("\n")));
}

TEST(ServiceConfigBadInputTest, WrongTypes) {
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": "abc"})")),
            "methodConfig[0].retryPolicy.maxAttempts: expected an integer, "
            "got \"abc\"");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{"service": 5}]}]})"),
            "methodConfig[0].name[0].service: expected a string, got 5");
  EXPECT_EQ(ErrorOf(Default(R"("waitForReady": "yes")")),
            "methodConfig[0].waitForReady: expected true or false");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 10,
                        "tokenRatio": "x"}})"),
            "retryThrottling.tokenRatio: expected a number such as 0.1, got "
            "\"x\"");
  EXPECT_EQ(ErrorOf(Default(R"("timeout": 5)")),
            "methodConfig[0].timeout: not a duration such as \"0.100s\" "
            "(not a string; got 5)");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}], "retryPolicy": 3}]})"),
            "methodConfig[0].retryPolicy: expected an object, got 3");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": 2,
          "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1,
          "retryableStatusCodes": ["UNAVAILABLE", true]})")),
            "methodConfig[0].retryPolicy.retryableStatusCodes[1]: expected a "
            "status code name or number");
}

// Every message comes from stubkit's own walk over the parsed JSON (no
// dependency's error text): the path as the user wrote it, then the problem.
TEST(ServiceConfigBadInputTest, MessagesNameThePathAndTheValue) {
  EXPECT_EQ(ErrorOf(R"({"methodConfig": {"name": [{}]}})"),
            "methodConfig: expected a list, got an object");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [[]]})"),
            "methodConfig[0]: expected an object, got a list");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": {}}]})"),
            "methodConfig[0].name: expected a list, got an object");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": ["a.B"]}]})"),
            "methodConfig[0].name[0]: expected an object, got \"a.B\"");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{"service": {}}]}]})"),
            "methodConfig[0].name[0].service: expected a string, got an "
            "object");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": 2.5})")),
            "methodConfig[0].retryPolicy.maxAttempts: expected an integer, "
            "got 2.5");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": 2,
                                "maxAttempts": 3})")),
            "methodConfig[0].retryPolicy.maxAttempts: given more than once");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [], "methodConfig": []})"),
            "methodConfig: given more than once");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": 2,
                "initialBackoff": "1s", "maxBackoff": "1s",
                "backoffMultiplier": 1, "retryableStatusCodes": "UNAVAILABLE"})")),
            "methodConfig[0].retryPolicy.retryableStatusCodes: expected a "
            "list, got \"UNAVAILABLE\"");
  EXPECT_EQ(ErrorOf("{\n  \"methodConfig\": [\n    {\"name\": [{}]},\n  ]\n}"),
            "invalid service config JSON: line 4, column 3: expected a value "
            "(an object, a list, a string, a number, true, false or null)");
  EXPECT_EQ(ErrorOf("[]"),
            "invalid service config JSON: expected an object at the top "
            "level, got a list");
}

// As gRPC reads a service config: integers and numbers may be strings, a
// null field is an absent one where gRPC 1.51 takes it so (it refuses a
// null timeout: see FilesGrpcAcceptsLoad), and what stubkit does not read
// is ignored
// (proto field names such as "method_config" included: gRPC's JSON names
// only).
TEST(ServiceConfigTest, ReadsValuesAsGrpcDoes) {
  ServiceConfig config = MustParse(R"({"methodConfig": [{"name": [{}],
      "waitForReady": null, "hedgingPolicy": null,
      "retryPolicy": {"maxAttempts": "3", "initialBackoff": "0.5s",
          "maxBackoff": "2s", "backoffMultiplier": "2",
          "retryableStatusCodes": ["UNAVAILABLE"], "newerField": {"x": [1]}},
      "futureField": true}],
      "method_config": 7, "loadBalancingConfig": [{"round_robin": {}}]})");
  const Options options = config.OptionsFor("a.B/C");
  EXPECT_EQ(options.get<RetryPolicyOption>().max_failures(), 2);
  EXPECT_FALSE(options.has<TotalTimeoutOption>());
  EXPECT_FALSE(options.has<WaitForReadyOption>());
}

std::string RetryWithCodes(const std::string& codes) {
  return Default(R"("retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s",
      "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": )" +
                 codes + "}");
}

TEST(ServiceConfigBadInputTest, UnknownCodeNames) {
  const std::string path = "methodConfig[0].retryPolicy.retryableStatusCodes";
  EXPECT_EQ(ErrorOf(RetryWithCodes(R"(["UNAVAILABLE", "TRANSIENT"])")),
            path +
                "[1]: unknown status code \"TRANSIENT\" (names are "
                "gRPC's, e.g. \"UNAVAILABLE\")");
  // Names are upper case, as gRPC writes them.
  EXPECT_THAT(ErrorOf(RetryWithCodes(R"(["unavailable"])")),
              StartsWith(path + "[0]: unknown status code \"unavailable\""));
  // What the input says is quoted on one line.
  EXPECT_EQ(ErrorOf(RetryWithCodes(R"(["UN\nAVAILABLE"])")),
            path +
                "[0]: unknown status code \"UN\\x0aAVAILABLE\" (names are "
                "gRPC's, e.g. \"UNAVAILABLE\")");
  EXPECT_EQ(ErrorOf(RetryWithCodes("[17]")),
            path + "[0]: status code numbers are 1 to 16, got 17");
  EXPECT_EQ(ErrorOf(RetryWithCodes("[0]")),
            path + "[0]: status code numbers are 1 to 16, got 0");
  EXPECT_EQ(ErrorOf(RetryWithCodes("[14.5]")),
            path + "[0]: status code numbers are 1 to 16, got 14.5");
  EXPECT_EQ(ErrorOf(RetryWithCodes("[]")), path + ": must not be empty");
  EXPECT_EQ(ErrorOf(Default(R"("hedgingPolicy": {"maxAttempts": 2,
                "nonFatalStatusCodes": ["BUSY"]})")),
            "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]: unknown "
            "status code \"BUSY\" (names are gRPC's, e.g. \"UNAVAILABLE\")");
}

std::string Retry(const std::string& initial, const std::string& maximum,
                  const std::string& multiplier = "2") {
  return R"("retryPolicy": {"maxAttempts": 3, "initialBackoff": ")" + initial +
         R"(", "maxBackoff": ")" + maximum + R"(", "backoffMultiplier": )" +
         multiplier + R"(, "retryableStatusCodes": ["UNAVAILABLE"]})";
}

TEST(ServiceConfigBadInputTest, NegativeZeroOrMalformedDurations) {
  // The issue's example: the third entry.
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [
                {"name": [{"service": "a.A"}]},
                {"name": [{"service": "a.B"}]},
                {"name": [{"service": "a.C"}], )" +
                    Retry("-1s", "10s") + "}]}"),
            "methodConfig[2].retryPolicy.initialBackoff: must not be negative, "
            "got \"-1s\"");
  EXPECT_EQ(ErrorOf(Default(Retry("0s", "10s"))),
            "methodConfig[0].retryPolicy.initialBackoff: must be greater than "
            "0 (in whole milliseconds)");
  // Below a millisecond is 0 to gRPC.
  EXPECT_EQ(ErrorOf(Default(Retry("0.0009s", "10s"))),
            "methodConfig[0].retryPolicy.initialBackoff: must be greater than "
            "0 (in whole milliseconds)");
  EXPECT_EQ(ErrorOf(Default(R"("timeout": "-3s")")),
            "methodConfig[0].timeout: must not be negative, got \"-3s\"");
  EXPECT_EQ(ErrorOf(Default(R"("timeout": "1.5")")),
            "methodConfig[0].timeout: not a duration such as \"0.100s\" "
            "(no s suffix; got \"1.5\")");
  // A signed fraction, which gRPC reads (1.-5s is 0.95 s): documented.
  EXPECT_THAT(ErrorOf(Default(R"("timeout": "1.-5s")")),
              HasSubstr("a signed fraction"));
  EXPECT_THAT(ErrorOf(Default(Retry("abc", "10s"))),
              StartsWith("methodConfig[0].retryPolicy.initialBackoff: not a "
                         "duration such as \"0.100s\""));
  EXPECT_THAT(ErrorOf(Default(R"("timeout": "99999999999999s")")),
              StartsWith("methodConfig[0].timeout: more than 315576000000 "
                         "seconds"));
  // A zero hedging delay is valid (every hedge at once); negative is not.
  EXPECT_EQ(ErrorOf(Default(R"("hedgingPolicy": {"maxAttempts": 2,
                "hedgingDelay": "-0.001s"})")),
            "methodConfig[0].hedgingPolicy.hedgingDelay: must not be "
            "negative, got \"-0.001s\"");
}

TEST(ServiceConfigBadInputTest, MultiplierNotPositive) {
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "0"))),
            "methodConfig[0].retryPolicy.backoffMultiplier: must be greater "
            "than 0 (as a float), got 0");
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "-2"))),
            "methodConfig[0].retryPolicy.backoffMultiplier: must be greater "
            "than 0 (as a float), got -2");
  // 0 as gRPC's float.
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "1e-50"))),
            "methodConfig[0].retryPolicy.backoffMultiplier: must be greater "
            "than 0 (as a float), got 1e-50");
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "\"NaN\""))),
            "methodConfig[0].retryPolicy.backoffMultiplier: NaN is not a "
            "multiplier (stubkit refuses it)");
}

// Issue 23 item 5: files gRFC A6 accepts.
TEST(ServiceConfigMappingTest, FilesA6Accepts) {
  // A multiplier in (0, 1): the waits shrink.
  Options shrinking =
      MustParse(Default(Retry("8s", "10s", "0.5"))).OptionsFor("a.B.C");
  EXPECT_EQ(shrinking.get<BackoffPolicyOption>().DelayFor(1, 1.0), seconds(4));
  // maxBackoff below initialBackoff: every wait is capped at maxBackoff.
  Options capped =
      MustParse(Default(Retry("2s", "1.500s"))).OptionsFor("a.B.C");
  EXPECT_EQ(capped.get<BackoffPolicyOption>().initial_delay(),
            milliseconds(1500));
  EXPECT_EQ(capped.get<BackoffPolicyOption>().maximum_delay(),
            milliseconds(1500));
  // ... also with a multiplier below 1, which gRPC accepts: the waits
  // start at maxBackoff, with a warning (issue 39 item 6).
  ServiceConfig shrinking_capped =
      MustParse(Default(Retry("2s", "1.500s", "0.5")));
  EXPECT_EQ(shrinking_capped.OptionsFor("a.B.C")
                .get<BackoffPolicyOption>()
                .initial_delay(),
            milliseconds(1500));
  EXPECT_THAT(shrinking_capped.warnings(),
              ElementsAre(HasSubstr("retryPolicy.maxBackoff: below "
                                    "initialBackoff with a backoffMultiplier "
                                    "below 1")));
  // timeout "0s" is no timeout, as in gRPC.
  ServiceConfig zero = MustParse(R"({"methodConfig": [
      {"name": [{}], "timeout": "5s"},
      {"name": [{"service": "a.B"}], "timeout": "0s"}]})");
  EXPECT_EQ(zero.OptionsFor("a.B.C").get<TotalTimeoutOption>(),
            nanoseconds::zero());
  EXPECT_EQ(zero.OptionsFor("x.Y.Z").get<TotalTimeoutOption>(), seconds(5));
  // Both policies in one entry: A6 allows one; gRPC 1.51 accepts it and
  // retries by the retryPolicy, and so does stubkit, with a warning.
  ServiceConfig both = MustParse(Default(
      std::string(kRetry) + R"(, "hedgingPolicy": {"maxAttempts": 2})"));
  EXPECT_FALSE(both.OptionsFor("a.B.C").get<HedgingPolicyOption>().enabled());
  EXPECT_GT(both.OptionsFor("a.B.C").get<RetryPolicyOption>().max_failures(),
            0);
  EXPECT_THAT(both.warnings(),
              ElementsAre(HasSubstr("the hedgingPolicy is ignored")));
  // ... and the hedgingPolicy must still be valid by A6.
  EXPECT_THAT(ErrorOf(Default(std::string(kRetry) +
                              R"(, "hedgingPolicy": {"maxAttempts": 1})")),
              HasSubstr("hedgingPolicy.maxAttempts"));
}

// Issue 39 item 6: files gRPC 1.51 accepts (its ValidateServiceConfigJSON
// says so; see ServiceConfigOracleTest) load, behave as under gRPC, and
// say where stubkit reads them differently.
TEST(ServiceConfigMappingTest, FilesGrpcAcceptsLoad) {
  // "OK" in retryableStatusCodes: ignored, as gRPC never retries OK.
  ServiceConfig ok = MustParse(Default(
      R"("retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
          "maxBackoff": "1s", "backoffMultiplier": 1,
          "retryableStatusCodes": ["OK", "UNAVAILABLE"]})"));
  const StatusCodeSet codes =
      ok.OptionsFor("a.B.C").get<RetryPolicyOption>().retryable_codes();
  EXPECT_EQ(codes, StatusCodeSet{grpc::StatusCode::UNAVAILABLE});
  EXPECT_THAT(ok.warnings(),
              ElementsAre(StartsWith("methodConfig[0].retryPolicy."
                                     "retryableStatusCodes[0]: \"OK\"")));
  // Only "OK": a policy that retries nothing.
  ServiceConfig only_ok = MustParse(Default(
      R"("retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
          "maxBackoff": "1s", "backoffMultiplier": 1,
          "retryableStatusCodes": ["OK"]})"));
  EXPECT_EQ(only_ok.OptionsFor("a.B.C").get<RetryPolicyOption>().max_failures(),
            0);
  // maxTokens above 1000: 1000, with a warning; tokenRatio above maxTokens
  // behaves as maxTokens.
  ServiceConfig big = MustParse(
      R"({"retryThrottling": {"maxTokens": 5000, "tokenRatio": 0.1}})");
  ASSERT_NE(big.throttle(), nullptr);
  EXPECT_EQ(big.throttle()->max_tokens(), 1000);
  EXPECT_THAT(big.warnings(),
              ElementsAre(StartsWith("retryThrottling.maxTokens: 5000 counts "
                                     "as 1000")));
  ServiceConfig ratio =
      MustParse(R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": 2}})");
  ASSERT_NE(ratio.throttle(), nullptr);
  EXPECT_EQ(ratio.throttle()->max_tokens(), 1);
  // Durations beyond what nanoseconds hold: no timeout, 100 years.
  ServiceConfig far = MustParse(Default(
      R"("timeout": "100000000000s", "retryPolicy": {"maxAttempts": 3,
          "initialBackoff": "1s", "maxBackoff": "10000000000s",
          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]})"));
  EXPECT_EQ(far.OptionsFor("a.B.C").get<TotalTimeoutOption>(),
            nanoseconds::zero());
  EXPECT_EQ(far.OptionsFor("a.B.C").get<BackoffPolicyOption>().maximum_delay(),
            std::chrono::hours(24) * 36525);
  EXPECT_EQ(far.warnings().size(), 2u);
  // "1 s", as gRPC reads it, with a warning.
  ServiceConfig spaced = MustParse(Default(R"("timeout": "1 s")"));
  EXPECT_EQ(spaced.OptionsFor("a.B.C").get<TotalTimeoutOption>(), seconds(1));
  EXPECT_THAT(spaced.warnings(),
              ElementsAre(StartsWith("methodConfig[0].timeout: \"1 s\" is not "
                                     "protobuf's duration form")));
  // Under a millisecond: truncated, as gRPC keeps milliseconds.
  EXPECT_EQ(MustParse(Default(R"("timeout": "0.0015s")"))
                .OptionsFor("a.B.C")
                .get<TotalTimeoutOption>(),
            milliseconds(1));
  // Entries without a name, or with an empty list: they apply to nothing.
  ServiceConfig unnamed = MustParse(R"({"methodConfig": [
      {"timeout": "1s"}, {"name": [], "timeout": "2s"},
      {"name": [{"service": "a.B"}], "timeout": "3s"}]})");
  EXPECT_EQ(unnamed.OptionsFor("a.B.C").get<TotalTimeoutOption>(), seconds(3));
  EXPECT_EQ(unnamed.OptionsFor("x.Y.Z").get<TotalTimeoutOption>(),
            nanoseconds::zero());
  EXPECT_THAT(unnamed.warnings(),
              ElementsAre(StartsWith("methodConfig[0].name: lists no name"),
                          StartsWith("methodConfig[1].name: lists no name")));
  // A number beyond a double: JSON still (gRPC takes it).
  ServiceConfig huge = MustParse(Default(
      R"("retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
          "maxBackoff": "4s", "backoffMultiplier": 1e400,
          "retryableStatusCodes": ["UNAVAILABLE"]})"));
  EXPECT_EQ(huge.OptionsFor("a.B.C").get<BackoffPolicyOption>().DelayFor(2, 1),
            seconds(4));
  // Null where gRPC refuses it.
  EXPECT_EQ(ErrorOf(Default(R"("timeout": null)")),
            "methodConfig[0].timeout: must not be null (gRPC refuses it)");
}

// Issue 39 item 6: a client writes the file's warnings once, to its sink.
TEST(ServiceConfigMappingTest, AClientWritesTheWarningsToItsSink) {
  struct Sink : LogSink {
    void Write(absl::string_view line) override { lines.emplace_back(line); }
    std::vector<std::string> lines;
  };
  auto sink = std::make_shared<Sink>();
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B"}], "timeout": "1 s"}]})");
  internal::MethodOptionsTable table(
      config.ToOptions().set<LogSinkOption>(sink), "a.B", {"C"});
  EXPECT_THAT(sink->lines,
              ElementsAre("stubkit: a.B: service config: "
                          "methodConfig[0].timeout: \"1 s\" is not "
                          "protobuf's duration form; read as gRPC 1.51 reads "
                          "it, 1000 ms"));
}

// Issue 23 item 6: gRPC's experimental per-attempt timeout.
TEST(ServiceConfigMappingTest, PerAttemptRecvTimeoutIsTheAttemptTimeout) {
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{}], "retryPolicy": {"maxAttempts": 3,
        "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1,
        "retryableStatusCodes": ["UNAVAILABLE"],
        "perAttemptRecvTimeout": "0.250s"}},
      {"name": [{"service": "a.B"}], "timeout": "1s"}]})");
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<AttemptTimeoutOption>(),
            milliseconds(250));
  // A more specific entry without it resets it.
  ASSERT_TRUE(config.OptionsFor("a.B.C").has<AttemptTimeoutOption>());
  EXPECT_EQ(config.OptionsFor("a.B.C").get<AttemptTimeoutOption>(),
            nanoseconds::zero());
  EXPECT_THAT(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": 3,
        "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1,
        "retryableStatusCodes": ["UNAVAILABLE"],
        "perAttemptRecvTimeout": "0s"})")),
              HasSubstr("retryPolicy.perAttemptRecvTimeout: must be positive"));
}

// Issue 23 item 9: gRPC C++'s spread, on request.
TEST(ServiceConfigMappingTest, JitterChoice) {
  EXPECT_EQ(MustParse(Default(kRetry))
                .OptionsFor("a.B.C")
                .get<BackoffPolicyOption>()
                .jitter()
                .kind(),
            Jitter::Kind::kFull);
  ServiceConfigImport how;
  how.jitter = Jitter::Grpc();
  EXPECT_EQ((*ParseServiceConfig(Default(kRetry), how))
                .OptionsFor("a.B.C")
                .get<BackoffPolicyOption>()
                .jitter()
                .kind(),
            Jitter::Kind::kGrpc);
  how.jitter = Jitter::Proportional(3);
  EXPECT_THAT(ParseServiceConfig(Default(kRetry), how).status().message(),
              HasSubstr("ServiceConfigImport::jitter"));
}

TEST(ServiceConfigBadInputTest, DuplicateNames) {
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [
                {"name": [{"service": "a.B", "method": "C"}]},
                {"name": [{"service": "a.D"},
                          {"service": "a.B", "method": "C"}]}]})"),
            "methodConfig[1].name[1]: duplicate name \"a.B/C\", also at "
            "methodConfig[0].name[0]");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [
                {"name": [{"service": "a.B"}, {"service": "a.B"}]}]})"),
            "methodConfig[0].name[1]: duplicate name \"a.B\", also at "
            "methodConfig[0].name[0]");
  // {} and {"service": ""} are both the default.
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}]},
                {"name": [{"service": ""}]}]})"),
            "methodConfig[1].name[0]: duplicate name {} (the default), also "
            "at methodConfig[0].name[0]");
}

// A key given twice where the mirror proto has an optional field (the
// service_config fuzzer found the garbled message this once gave).
TEST(ServiceConfigBadInputTest, KeyGivenTwice) {
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 5, "tokenRatio": 0.5,
                                            "tokenRatio": 0.5}})"),
            "retryThrottling.tokenRatio: given more than once");
  // Anywhere, as gRPC's JSON reader refuses it (issue 39 item 6).
  EXPECT_EQ(ErrorOf(R"({"loadBalancingConfig": [{"a": 1, "a": 2}]})"),
            "invalid service config JSON: loadBalancingConfig[0].a: given "
            "more than once");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}],
                        "newerField": {"b": 1, "b": 1}}]})"),
            "methodConfig[0].newerField.b: given more than once");
}

// An empty or missing name list loads (FilesGrpcAcceptsLoad); a method
// without its service does not, as under gRPC.
TEST(ServiceConfigBadInputTest, MethodWithoutService) {
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{"method": "Get"}]}]})"),
            "methodConfig[0].name[0]: method \"Get\" needs a service");
}

TEST(ServiceConfigBadInputTest, MaxAttempts) {
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": 1,
                "initialBackoff": "1s", "maxBackoff": "1s",
                "backoffMultiplier": 1,
                "retryableStatusCodes": ["UNAVAILABLE"]})")),
            "methodConfig[0].retryPolicy.maxAttempts: must be at least 2 (it "
            "counts the first attempt), got 1");
  EXPECT_EQ(ErrorOf(Default(R"("hedgingPolicy": {"hedgingDelay": "1s"})")),
            "methodConfig[0].hedgingPolicy.maxAttempts: is required");
}

TEST(ServiceConfigBadInputTest, MissingRetryPolicyFields) {
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {})")),
            "methodConfig[0].retryPolicy.initialBackoff: is required");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"initialBackoff": "1s"})")),
            "methodConfig[0].retryPolicy.maxBackoff: is required");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"initialBackoff": "1s",
                "maxBackoff": "1s"})")),
            "methodConfig[0].retryPolicy.backoffMultiplier: is required");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"initialBackoff": "1s",
                "maxBackoff": "1s", "backoffMultiplier": 2})")),
            "methodConfig[0].retryPolicy.retryableStatusCodes: must not be "
            "empty");
}

TEST(ServiceConfigBadInputTest, RetryThrottling) {
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 0,
                "tokenRatio": 0.1}})"),
            "retryThrottling.maxTokens: must be greater than 0");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 4294967296,
                "tokenRatio": 0.1}})"),
            "retryThrottling.maxTokens: expected an integer in [1, "
            "4294967295], got 4294967296");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 10,
                "tokenRatio": 0}})"),
            "retryThrottling.tokenRatio: must be greater than 0 (in "
            "thousandths), got 0");
  // gRPC counts 3 decimals: 0.0009 is 0.
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 10,
                "tokenRatio": 0.0009}})"),
            "retryThrottling.tokenRatio: must be greater than 0 (in "
            "thousandths), got 0.0009");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"tokenRatio": 1}})"),
            "retryThrottling.maxTokens: is required");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 10}})"),
            "retryThrottling.tokenRatio: is required");
}

// ------------------------------------------------------------------ files

TEST(ServiceConfigFileTest, LoadsAFile) {
  const std::string path = ::testing::TempDir() + "/service_config_ok.json";
  std::ofstream(path) << Default(R"("timeout": "2s")");
  absl::StatusOr<ServiceConfig> config = LoadServiceConfigFile(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->OptionsFor("a.B.C").get<TotalTimeoutOption>(), seconds(2));
  std::remove(path.c_str());
}

TEST(ServiceConfigFileTest, BadContentNamesTheFile) {
  const std::string path = ::testing::TempDir() + "/service_config_bad.json";
  std::ofstream(path) << Default(R"("timeout": "-1s")");
  absl::StatusOr<ServiceConfig> config = LoadServiceConfigFile(path);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      config.status().message(),
      path + ": methodConfig[0].timeout: must not be negative, got \"-1s\"");
  std::remove(path.c_str());
}

TEST(ServiceConfigFileTest, MissingFile) {
  absl::StatusOr<ServiceConfig> config =
      LoadServiceConfigFile("/nonexistent/service_config.json");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(),
              HasSubstr("/nonexistent/service_config.json"));
}

// ------------------------------------------- a client's table of entries

// The table looks a method up by its MethodInfo's index alone.
constexpr MethodInfo Nth(int index) {
  return MethodInfo{"", RpcKind::kUnary, Idempotency::kIdempotent, index};
}

// Issue 23, silent misconfigurations: IdempotencyMapOption keys that
// would never apply are refused. Issue 39 item 15: gRPC's spelling,
// "pkg.Service/Method", applies as MethodOptionsOption's does (one parser
// of method names).
TEST(ServiceConfigClientTableTest, IdempotencyMapKeysThatNeverApplyAreRefused) {
  auto table_for = [](const IdempotencyMapOption::Type& map) {
    return internal::MethodOptionsTable(
        Options{}.set<IdempotencyMapOption>(map), "inventory.v1.Inventory",
        {"Reserve", "Release"});
  };
  auto table_for_key = [&](const std::string& key) {
    return table_for({{key, Idempotency::kIdempotent}});
  };
  EXPECT_TRUE(table_for_key("inventory.v1.Inventory/Reserve").status().ok());
  EXPECT_TRUE(table_for_key("inventory.v1.Inventory.Reserve").status().ok());
  EXPECT_EQ(table_for_key("inventory.v1.Inventory.Reserv").status().message(),
            "IdempotencyMapOption: \"inventory.v1.Inventory.Reserv\" names no "
            "method of inventory.v1.Inventory (its methods: Reserve, "
            "Release); the call was not sent");
  EXPECT_EQ(table_for_key("inventory.v1.Inventory/Reserv").status().message(),
            "IdempotencyMapOption: \"inventory.v1.Inventory/Reserv\" names no "
            "method of inventory.v1.Inventory (its methods: Reserve, "
            "Release); the call was not sent");
  // One method in both spellings: which one wins would be arbitrary.
  EXPECT_EQ(
      table_for(
          {{"inventory.v1.Inventory/Reserve", Idempotency::kIdempotent},
           {"inventory.v1.Inventory.Reserve", Idempotency::kNonIdempotent}})
          .status()
          .message(),
      "IdempotencyMapOption: Reserve is given twice, as "
      "\"inventory.v1.Inventory.Reserve\" and "
      "\"inventory.v1.Inventory/Reserve\"; the call was not sent");
  // Other services' keys are not this client's business.
  EXPECT_TRUE(table_for_key("inventory.v2.Inventory/Reserve").status().ok());
  EXPECT_TRUE(table_for_key("inventory.v1.InventoryAdmin.X").status().ok());
  EXPECT_TRUE(table_for_key("inventory.v1.Inventory.Sub.X").status().ok());
  EXPECT_TRUE(table_for_key("inventory.v1.Inventory.Sub/X").status().ok());
}

// Issue 39 item 15: a call looks its method up in IdempotencyMapOption in
// either spelling, for unary calls and streams alike.
TEST(ServiceConfigClientTableTest, IdempotencyMapTakesGrpcsSpelling) {
  constexpr MethodInfo kReserve{"inventory.v1.Inventory.Reserve",
                                RpcKind::kUnary, Idempotency::kNonIdempotent,
                                0};
  for (const char* key :
       {"inventory.v1.Inventory/Reserve", "inventory.v1.Inventory.Reserve"}) {
    SCOPED_TRACE(key);
    const Options client =
        Options{}.set<IdempotencyMapOption>({{key, Idempotency::kIdempotent}});
    const Options call;
    EXPECT_TRUE(internal::IsIdempotent(kReserve, OptionsView(call, client)));
    // A stream's resume hook does not override an explicit entry.
    const Options non = Options{}.set<IdempotencyMapOption>(
        {{key, Idempotency::kNonIdempotent}});
    EXPECT_FALSE(internal::StreamCallOptions(kReserve, OptionsView(call, non),
                                             /*has_hook=*/true)
                     .has<IdempotencyOption>());
  }
}

// The slash spelling of a name longer than the lookup's stack buffer.
TEST(ServiceConfigClientTableTest,
     IdempotencyMapTakesALongNameInEitherSpelling) {
  const std::string service = "pkg." + std::string(300, 's');
  const std::string dotted = service + ".Put";
  const MethodInfo put{dotted, RpcKind::kUnary, Idempotency::kNonIdempotent, 0};
  for (const std::string& key : {service + "/Put", dotted}) {
    const Options client =
        Options{}.set<IdempotencyMapOption>({{key, Idempotency::kIdempotent}});
    const Options call;
    EXPECT_TRUE(internal::IsIdempotent(put, OptionsView(call, client)));
  }
}

// Captures what a client logs.
class LinesSink : public LogSink {
 public:
  void Write(absl::string_view line) override { lines.emplace_back(line); }
  std::vector<std::string> lines;
};

// Issue 22 item 1: a config naming a method the client lacks (a newer API,
// or google.longrunning.Operations/ListOperations for an awaiter's client)
// once made every call of the client fail. gRPC never looks such an entry
// up; stubkit ignores it with one log line per client.
TEST(ServiceConfigClientTableTest, ImportedUnknownMethodIsIgnoredAndLogged) {
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B", "method": "Old"},
                {"service": "a.B", "method": "New"},
                {"service": "a.B", "method": "Newer"}], "timeout": "3s"}]})");
  auto sink = std::make_shared<LinesSink>();
  Options client = config.ToOptions().set<LogSinkOption>(sink);
  internal::MethodOptionsTable table(client, "a.B", {"Old", "Other"});
  EXPECT_TRUE(table.status().ok()) << table.status();
  ASSERT_EQ(sink->lines.size(), 1u);
  EXPECT_EQ(sink->lines[0],
            "stubkit: a.B: the service config names methods this client "
            "does not have (a.B/New, a.B/Newer); ignored, as gRPC does (its "
            "methods: Old, Other)");
  // The method it has still gets its entry.
  Options call;
  EXPECT_EQ(table.View(Nth(0), call, client)
                .
                operator const OptionsView&()
                .get<TotalTimeoutOption>(),
            seconds(3));
  // A client that turned logging off says nothing.
  auto quiet_sink = std::make_shared<LinesSink>();
  internal::MethodOptionsTable silent(Options(client)
                                          .set<LogSinkOption>(quiet_sink)
                                          .set<LogLevelOption>(LogLevel::kOff),
                                      "a.B", {"Old", "Other"});
  EXPECT_TRUE(silent.status().ok());
  EXPECT_TRUE(quiet_sink->lines.empty());
}

// Issue 39 item 14: a snake_case key (the proto's field name) is ignored,
// as gRPC ignores it, but named, with the camelCase spelling it meant; and
// a client of a service the file then names nothing of says why.
TEST(ServiceConfigClientTableTest, SnakeCaseKeysAreNamedWithTheirSpelling) {
  ServiceConfig config = MustParse(R"({"method_config": [
      {"name": [{"service": "a.B"}], "timeout": "1s"}],
      "retryThrottling": {"max_tokens": 10, "maxTokens": 10,
                          "tokenRatio": 0.5},
      "loadBalancingConfig": [{"round_robin": {}}], "x": 1})");
  EXPECT_THAT(
      config.warnings(),
      ElementsAre("method_config: not a key gRPC reads: ignored, as gRPC "
                  "ignores it; did you mean \"methodConfig\"?",
                  "x: not a key gRPC reads: ignored, as gRPC ignores it",
                  "retryThrottling.max_tokens: not a key gRPC reads: "
                  "ignored, as gRPC ignores it; did you mean \"maxTokens\"?"));
  auto sink = std::make_shared<LinesSink>();
  internal::MethodOptionsTable table(
      config.ToOptions().set<LogSinkOption>(sink), "a.B", {"C"});
  ASSERT_EQ(sink->lines.size(), 4u);
  EXPECT_THAT(sink->lines[3],
              HasSubstr("names no method of this service (it names none, "
                        "and has no {} entry)"));
  EXPECT_THAT(sink->lines[3],
              HasSubstr("The file's key \"method_config\" is not gRPC's "
                        "spelling, \"methodConfig\""));
  // In an entry and its policies too.
  ServiceConfig entry = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B", "Method": "C"}],
       "retry_policy": {"maxAttempts": 3}}]})");
  EXPECT_THAT(entry.warnings(),
              ElementsAre(HasSubstr("methodConfig[0].retry_policy: not a key "
                                    "gRPC reads"),
                          HasSubstr("methodConfig[0].name[0].Method: not a "
                                    "key gRPC reads: ignored, as gRPC "
                                    "ignores it; did you mean \"method\"?")));
}

// The typo check of hand-written entries stays.
TEST(ServiceConfigClientTableTest, HandWrittenUnknownMethodIsRefused) {
  Options client = Options{}.set<MethodOptionsOption>(
      {{"a.B.Olld", Options{}.set<TotalTimeoutOption>(seconds(3))}});
  internal::MethodOptionsTable table(client, "a.B", {"Old", "Other"});
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(),
              HasSubstr("\"a.B.Olld\" names no method of a.B"));
  // gRPC's spelling is checked as well.
  internal::MethodOptionsTable slash(
      Options{}.set<MethodOptionsOption>({{"a.B/Olld", Options{}}}), "a.B",
      {"Old"});
  EXPECT_EQ(slash.status().code(), absl::StatusCode::kInvalidArgument);
}

// A refusing table puts its status in the call's own layer, where the
// retry loops return it before anything is sent (issue 26: this replaced a
// generated refusing connection per service).
TEST(ServiceConfigClientTableTest,
     RefusingTableRefusesEveryCallThroughTheView) {
  Options client = Options{}.set<MethodOptionsOption>(
      {{"a.B.Olld", Options{}.set<TotalTimeoutOption>(seconds(3))}});
  internal::MethodOptionsTable table(client, "a.B", {"Old", "Other"});
  ASSERT_FALSE(table.status().ok());
  constexpr MethodInfo kOther{"a.B.Other", RpcKind::kUnary,
                              Idempotency::kIdempotent, 1};
  Options call = Options{}.set<AttemptTimeoutOption>(seconds(1));
  internal::MethodCallOptions stream = table.View(kOther, call, client);
  const OptionsView& view = stream;
  EXPECT_EQ(view.call().get<internal::CallRefusalOption>(), table.status());
  // The call's own options are still there.
  EXPECT_EQ(view.get<AttemptTimeoutOption>(), seconds(1));
  internal::MethodCallOptions unary =
      table.View(kOther, call, client, std::string("request"));
  EXPECT_EQ(static_cast<const OptionsView&>(unary)
                .call()
                .get<internal::CallRefusalOption>(),
            table.status());
}

// The MethodInfo's index picks the method's layer.
TEST(ServiceConfigClientTableTest, ViewLooksTheMethodUpByItsIndex) {
  Options client = Options{}.set<MethodOptionsOption>(
      {{"a.B.Other", Options{}.set<TotalTimeoutOption>(seconds(7))}});
  internal::MethodOptionsTable table(client, "a.B", {"Old", "Other"});
  ASSERT_TRUE(table.status().ok()) << table.status();
  constexpr MethodInfo kOld{"a.B.Old", RpcKind::kUnary,
                            Idempotency::kIdempotent, 0};
  constexpr MethodInfo kOther{"a.B.Other", RpcKind::kUnary,
                              Idempotency::kIdempotent, 1};
  Options call;
  internal::MethodCallOptions old_view = table.View(kOld, call, client);
  internal::MethodCallOptions other_view = table.View(kOther, call, client);
  EXPECT_FALSE(
      static_cast<const OptionsView&>(old_view).find<TotalTimeoutOption>());
  EXPECT_EQ(
      static_cast<const OptionsView&>(other_view).get<TotalTimeoutOption>(),
      seconds(7));
  EXPECT_FALSE(static_cast<const OptionsView&>(other_view)
                   .call()
                   .has<internal::CallRefusalOption>());
}

struct TestDecoratorsOption {
  using Type = std::vector<int>;
  static Type Default() { return {}; }
};

// A client built from a connection cannot apply decorators: with some,
// every call is refused, and that refusal wins over a bad entry.
TEST(ServiceConfigClientTableTest, DecoratorsOnAClientFromAConnectionRefuse) {
  internal::MethodOptionsTable none(Options{}, "a.B", {"Old"});
  none.RefuseDecorators<TestDecoratorsOption>(Options{}, "MakeBConnection",
                                              "BClient");
  EXPECT_TRUE(none.status().ok());
  Options empty = Options{}.set<TestDecoratorsOption>({});
  none.RefuseDecorators<TestDecoratorsOption>(empty, "MakeBConnection",
                                              "BClient");
  EXPECT_TRUE(none.status().ok());

  Options client =
      Options{}.set<TestDecoratorsOption>({1}).set<MethodOptionsOption>(
          {{"a.B.Olld", Options{}}});
  internal::MethodOptionsTable table(client, "a.B", {"Old"});
  ASSERT_FALSE(table.status().ok());
  table.RefuseDecorators<TestDecoratorsOption>(client, "MakeBConnection",
                                               "BClient");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table.status().message(),
            "a.B: DecoratorsOption must be given to MakeBConnection (or to "
            "the BClient constructor that takes a channel); the client was "
            "built from a connection, which cannot apply them, so the call "
            "was not sent");
}

// Issue 22 item 9, in the table: a service named like another's package
// ("a.B.C" next to "a.B") is not a method of a.B, nor are its methods.
TEST(ServiceConfigClientTableTest, ServiceNamedLikeAMethodIsNotATypo) {
  Options client = Options{}.set<MethodOptionsOption>({
      {"a.B.C", Options{}.set<TotalTimeoutOption>(seconds(4))},
      {"a.B.C.D", Options{}.set<TotalTimeoutOption>(seconds(5))},
      {"a.B.C/E", Options{}.set<TotalTimeoutOption>(seconds(6))},
      {"a.B/Old", Options{}.set<TotalTimeoutOption>(seconds(7))},
  });
  internal::MethodOptionsTable b(client, "a.B", {"Old"});
  EXPECT_TRUE(b.status().ok()) << b.status();
  EXPECT_EQ(b.View(Nth(0), Options{}, client)
                .
                operator const OptionsView&()
                .get<TotalTimeoutOption>(),
            seconds(7));
  internal::MethodOptionsTable c(client, "a.B.C", {"D", "E"});
  EXPECT_TRUE(c.status().ok()) << c.status();
  EXPECT_EQ(c.View(Nth(0), Options{}, client)
                .
                operator const OptionsView&()
                .get<TotalTimeoutOption>(),
            seconds(5));
  EXPECT_EQ(c.View(Nth(1), Options{}, client)
                .
                operator const OptionsView&()
                .get<TotalTimeoutOption>(),
            seconds(6));
  // From a service config, both spellings are unambiguous.
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B.C"}], "timeout": "4s"},
      {"name": [{"service": "a.B", "method": "Old"}], "timeout": "7s"}]})");
  Options imported = config.ToOptions();
  internal::MethodOptionsTable from_config(imported, "a.B", {"Old"});
  EXPECT_TRUE(from_config.status().ok()) << from_config.status();
}

}  // namespace
}  // namespace stubkit
