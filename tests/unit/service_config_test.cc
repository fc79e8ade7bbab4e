// Copyright 2026 The stubkit Authors.
//
// ParseServiceConfig over service configs written in gRPC's documented JSON
// format: each mapping rule, each precedence rule, each bad-input row.

#include "stubkit/service_config.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/call_options.h"
#include "stubkit/hedging.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
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
  EXPECT_EQ(retry.max_retries(), 3);  // maxAttempts counts the first
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

TEST(ServiceConfigMappingTest, NeverMakesAMethodIdempotent) {
  ServiceConfig config = MustParse(Default(kRetry));
  for (const Options& options :
       {config.OptionsFor("pkg.Service.Append"), config.ToOptions()}) {
    EXPECT_FALSE(options.has<IdempotencyOption>());
    EXPECT_FALSE(options.has<IdempotencyMapOption>());
  }
}

TEST(ServiceConfigMappingTest, MaxAttemptsAboveGrpcsCapIsHonoured) {
  ServiceConfig config = MustParse(Default(R"("retryPolicy": {
      "maxAttempts": 12, "initialBackoff": "1s", "maxBackoff": "1s",
      "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]})"));
  EXPECT_EQ(config.OptionsFor("a.B.C").get<RetryPolicyOption>().max_retries(),
            11);
}

TEST(ServiceConfigMappingTest, OmittedMaxAttemptsIsBoundedByTheTimeout) {
  // As googleapis' files are written (gRPC itself would reject this).
  ServiceConfig config = MustParse(Default(R"("timeout": "60s",
      "retryPolicy": {"initialBackoff": "0.100s", "maxBackoff": "60s",
      "backoffMultiplier": 1.3, "retryableStatusCodes": ["UNAVAILABLE"]})"));
  Options options = config.OptionsFor("a.B.C");
  const RetryPolicy& retry = options.get<RetryPolicyOption>();
  EXPECT_EQ(retry.max_retries(), RetryPolicy::kUnlimitedRetries);
  EXPECT_EQ(retry.max_time(), seconds(60));
  EXPECT_EQ(options.get<TotalTimeoutOption>(), seconds(60));
}

TEST(ServiceConfigMappingTest, OmittedMaxAttemptsWithoutTimeoutIsTheDefault) {
  ServiceConfig config = MustParse(Default(R"("retryPolicy": {
      "initialBackoff": "1s", "maxBackoff": "2s", "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]})"));
  EXPECT_EQ(config.OptionsFor("a.B.C").get<RetryPolicyOption>().max_time(),
            RetryPolicy::kDefaultMaximumDuration);
}

TEST(ServiceConfigMappingTest, NoRetryPolicyMeansNoRetries) {
  ServiceConfig config = MustParse(Default(R"("timeout": "5s")"));
  Options options = config.OptionsFor("a.B.C");
  ASSERT_TRUE(options.has<RetryPolicyOption>());
  EXPECT_EQ(options.get<RetryPolicyOption>().max_retries(), 0);
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
  EXPECT_EQ(options.get<RetryPolicyOption>().max_retries(), 0);
}

TEST(ServiceConfigMappingTest, HedgingDefaults) {
  // hedgingDelay defaults to 0 (all at once), as in gRPC; no
  // nonFatalStatusCodes keeps stubkit's UNAVAILABLE.
  ServiceConfig config = MustParse(Default(R"("hedgingPolicy": {
      "maxAttempts": 10})"));
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

TEST(ServiceConfigMappingTest, OneThrottleSharedByEveryMethodAndClient) {
  ServiceConfig config = MustParse(R"({
      "methodConfig": [{"name": [{"service": "a.B"}], "timeout": "1s"}],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  ASSERT_NE(config.throttle(), nullptr);
  EXPECT_EQ(config.throttle()->max_tokens(), 10);
  EXPECT_DOUBLE_EQ(config.throttle()->token_ratio(), 0.1);
  EXPECT_EQ(config.OptionsFor("a.B.C").get<RetryThrottleOption>(),
            config.throttle());
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<RetryThrottleOption>(),
            config.throttle());
  EXPECT_EQ(config.ToOptions().get<RetryThrottleOption>(), config.throttle());
  ServiceConfig copy = config;
  EXPECT_EQ(copy.ToOptions().get<RetryThrottleOption>(), config.throttle());
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
                .max_retries(),
            0);
  // Publisher.DeleteTopic is named by no entry, and there is no default.
  EXPECT_TRUE(
      config.OptionsFor("google.pubsub.v1.Publisher.DeleteTopic").empty());
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
      config.OptionsFor("a.B.Exact").get<RetryPolicyOption>().max_retries(), 4);
  EXPECT_EQ(config.OptionsFor("a.B.Other").get<TotalTimeoutOption>(),
            seconds(20));
  EXPECT_EQ(
      config.OptionsFor("a.B.Other").get<RetryPolicyOption>().max_retries(), 2);
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<TotalTimeoutOption>(), seconds(100));
  EXPECT_EQ(config.OptionsFor("x.Y.Z").get<RetryPolicyOption>().max_retries(),
            1);
}

TEST(ServiceConfigPrecedenceTest, TheMostSpecificEntryWinsAsAWhole) {
  // "Bare" names only itself: nothing of its service's or the default's
  // entry leaks in (gRPC does not merge entries either).
  Options bare = MustParse(kLayered).OptionsFor("a.B.Bare");
  EXPECT_EQ(bare.get<RetryPolicyOption>().max_retries(), 0);
  EXPECT_EQ(bare.get<TotalTimeoutOption>(), seconds(0));
  EXPECT_FALSE(bare.get<WaitForReadyOption>());
  EXPECT_EQ(bare.get<BackoffPolicyOption>().initial_delay(),
            ExponentialBackoffPolicy().initial_delay());
}

TEST(ServiceConfigPrecedenceTest, UnnamedMethodsKeepTheClientsOptions) {
  // Without a default entry the config says nothing about other methods.
  ServiceConfig config =
      MustParse(R"({"methodConfig": [{"name": [{"service": "a.B"}]}]})");
  EXPECT_TRUE(config.OptionsFor("x.Y.Z").empty());
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
              ElementsAre(Key("a.B"), Key("a.B.Bare"), Key("a.B.Exact")));
  // Layered in order (client, service, method), the entries give what
  // OptionsFor flattens.
  const auto& entries = options.get<MethodOptionsOption>();
  Options bare =
      options.MergedWith(entries.at("a.B")).MergedWith(entries.at("a.B.Bare"));
  EXPECT_EQ(bare.get<TotalTimeoutOption>(), seconds(0));
  EXPECT_EQ(bare.get<RetryPolicyOption>().max_retries(), 0);
  Options exact =
      options.MergedWith(entries.at("a.B")).MergedWith(entries.at("a.B.Exact"));
  EXPECT_EQ(exact.get<RetryPolicyOption>().max_retries(), 4);
}

TEST(ServiceConfigPrecedenceTest, ToOptionsForOneService) {
  ServiceConfig config = MustParse(R"({"methodConfig": [
      {"name": [{"service": "a.B"}, {"service": "a.B", "method": "C"},
                {"service": "a.Bc"}, {"service": "x.Y", "method": "Z"}]}]})");
  EXPECT_THAT(config.ToOptions("a.B").get<MethodOptionsOption>(),
              ElementsAre(Key("a.B"), Key("a.B.C")));
  EXPECT_THAT(config.ToOptions().get<MethodOptionsOption>(),
              ElementsAre(Key("a.B"), Key("a.B.C"), Key("a.Bc"), Key("x.Y.Z")));
}

TEST(ServiceConfigPrecedenceTest, EmptyConfig) {
  ServiceConfig config = MustParse("{}");
  EXPECT_TRUE(config.ToOptions().empty());
  EXPECT_TRUE(config.OptionsFor("a.B.C").empty());
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
            "retryThrottling.tokenRatio: expected a number, got \"x\"");
  EXPECT_EQ(ErrorOf(Default(R"("timeout": 5)")),
            "methodConfig[0].timeout: not a duration such as \"0.100s\" "
            "(Invalid data type for duration, value is 5)");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}], "retryPolicy": 3}]})"),
            "methodConfig[0].retryPolicy: expected an object, got 3");
  EXPECT_EQ(ErrorOf(Default(R"("retryPolicy": {"maxAttempts": 2,
          "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1,
          "retryableStatusCodes": ["UNAVAILABLE", true]})")),
            "methodConfig[0].retryPolicy.retryableStatusCodes[1]: expected a "
            "status code name or number");
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
  EXPECT_EQ(ErrorOf(RetryWithCodes(R"(["OK"])")),
            path + "[0]: OK is not a failure");
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
            "methodConfig[2].retryPolicy.initialBackoff: must be positive, "
            "got \"-1s\"");
  EXPECT_EQ(ErrorOf(Default(Retry("0s", "10s"))),
            "methodConfig[0].retryPolicy.initialBackoff: must be positive, "
            "got \"0s\"");
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "-0.5s"))),
            "methodConfig[0].retryPolicy.maxBackoff: must be positive, got "
            "\"-0.500s\"");
  EXPECT_EQ(ErrorOf(Default(R"("timeout": "0s")")),
            "methodConfig[0].timeout: must be positive, got \"0s\"");
  EXPECT_EQ(ErrorOf(Default(R"("timeout": "-3s")")),
            "methodConfig[0].timeout: must be positive, got \"-3s\"");
  EXPECT_EQ(ErrorOf(Default(R"("timeout": "1.5")")),
            "methodConfig[0].timeout: not a duration such as \"0.100s\" "
            "(Illegal duration format; duration must end with 's')");
  EXPECT_THAT(ErrorOf(Default(Retry("abc", "10s"))),
              StartsWith("methodConfig[0].retryPolicy.initialBackoff: not a "
                         "duration such as \"0.100s\""));
  EXPECT_THAT(ErrorOf(Default(R"("timeout": "99999999999999s")")),
              StartsWith("methodConfig[0].timeout: not a duration"));
  // Valid protobuf Durations beyond what nanoseconds hold.
  EXPECT_EQ(ErrorOf(Default(R"("timeout": "315576000000s")")),
            "methodConfig[0].timeout: too large, got \"315576000000s\"");
  // A zero hedging delay is valid (every hedge at once); negative is not.
  EXPECT_EQ(ErrorOf(Default(R"("hedgingPolicy": {"maxAttempts": 2,
                "hedgingDelay": "-0.001s"})")),
            "methodConfig[0].hedgingPolicy.hedgingDelay: must not be "
            "negative, got \"-0.001s\"");
}

TEST(ServiceConfigBadInputTest, MultiplierBelowOne) {
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "0.5"))),
            "methodConfig[0].retryPolicy.backoffMultiplier: must be at least "
            "1, got 0.5");
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "-2"))),
            "methodConfig[0].retryPolicy.backoffMultiplier: must be at least "
            "1, got -2");
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "\"NaN\""))),
            "methodConfig[0].retryPolicy.backoffMultiplier: must be at least "
            "1, got nan");
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "10s", "\"Infinity\""))),
            "methodConfig[0].retryPolicy.backoffMultiplier: must be at least "
            "1, got inf");
}

TEST(ServiceConfigBadInputTest, MaxBackoffBelowInitialBackoff) {
  EXPECT_EQ(ErrorOf(Default(Retry("2s", "1.500s"))),
            "methodConfig[0].retryPolicy.maxBackoff: must be at least "
            "initialBackoff (\"2s\"), got \"1.500s\"");
}

TEST(ServiceConfigBadInputTest, DuplicateNames) {
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [
                {"name": [{"service": "a.B", "method": "C"}]},
                {"name": [{"service": "a.D"},
                          {"service": "a.B", "method": "C"}]}]})"),
            "methodConfig[1].name[1]: duplicate name \"a.B.C\", also at "
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
}

TEST(ServiceConfigBadInputTest, BothRetryAndHedgingPolicy) {
  EXPECT_EQ(ErrorOf(Default(Retry("1s", "1s") +
                            R"(, "hedgingPolicy": {"maxAttempts": 2})")),
            "methodConfig[0]: has both a retryPolicy and a hedgingPolicy "
            "(gRPC allows one)");
}

TEST(ServiceConfigBadInputTest, EmptyOrMissingNameList) {
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}]}, {"name": []}]})"),
            "methodConfig[1].name: must list at least one name ({} for every "
            "method)");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"timeout": "1s"}]})"),
            "methodConfig[0].name: must list at least one name ({} for every "
            "method)");
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
  EXPECT_EQ(ErrorOf(Default(R"("hedgingPolicy": {"maxAttempts": 11})")),
            "methodConfig[0].hedgingPolicy.maxAttempts: must be at most 10, "
            "got 11");
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
            "retryThrottling.maxTokens: must be in (0, 1000], got 0");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 1001,
                "tokenRatio": 0.1}})"),
            "retryThrottling.maxTokens: must be in (0, 1000], got 1001");
  EXPECT_EQ(ErrorOf(R"({"retryThrottling": {"maxTokens": 10,
                "tokenRatio": 0}})"),
            "retryThrottling.tokenRatio: must be in [0.001, maxTokens], got 0");
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
  std::ofstream(path) << Default(R"("timeout": "0s")");
  absl::StatusOr<ServiceConfig> config = LoadServiceConfigFile(path);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            path + ": methodConfig[0].timeout: must be positive, got \"0s\"");
  std::remove(path.c_str());
}

TEST(ServiceConfigFileTest, MissingFile) {
  absl::StatusOr<ServiceConfig> config =
      LoadServiceConfigFile("/nonexistent/service_config.json");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(),
              HasSubstr("/nonexistent/service_config.json"));
}

}  // namespace
}  // namespace stubkit
