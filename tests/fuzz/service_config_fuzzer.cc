// Copyright 2026 The stubkit Authors.
//
// Fuzzes ParseServiceConfig with any bytes as a service config's JSON text
// (the seeds are valid configs and one of each bad-input kind). Checks:
//
//   - bad input is INVALID_ARGUMENT with a one-line message that starts
//     with a JSON path ("methodConfig[", "retryThrottling") or says the JSON
//     itself is invalid;
//   - a config that parses yields only valid options: every retry policy,
//     backoff, hedging policy and throttle has an OK status, timeouts are
//     positive, and nothing marks a method idempotent;
//   - OptionsFor(method) equals the client's options layered with the
//     method's service entry and its own entry from ToOptions();
//   - every call of OptionsFor and ToOptions shares the one throttle.

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/call_options.h"
#include "stubkit/hedging.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/service_config.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using std::chrono::nanoseconds;

void CheckValid(const stubkit::Options& options) {
  if (const auto* retry = options.find<stubkit::RetryPolicyOption>()) {
    FUZZ_CHECK(retry->status().ok());
  }
  if (const auto* backoff = options.find<stubkit::BackoffPolicyOption>()) {
    FUZZ_CHECK(backoff->status().ok());
  }
  if (const auto* hedging = options.find<stubkit::HedgingPolicyOption>()) {
    FUZZ_CHECK(hedging->status().ok());
  }
  if (const auto* timeout = options.find<stubkit::TotalTimeoutOption>()) {
    FUZZ_CHECK(*timeout >= nanoseconds::zero());
  }
  if (const auto* throttle = options.find<stubkit::RetryThrottleOption>()) {
    FUZZ_CHECK(*throttle != nullptr && (*throttle)->status().ok());
  }
  FUZZ_CHECK(!options.has<stubkit::IdempotencyOption>());
  FUZZ_CHECK(!options.has<stubkit::IdempotencyMapOption>());
}

// The options the retry loop reads agree.
void CheckSame(const stubkit::Options& a, const stubkit::Options& b) {
  FUZZ_CHECK(a.has<stubkit::RetryPolicyOption>() ==
             b.has<stubkit::RetryPolicyOption>());
  const auto& ra = a.get<stubkit::RetryPolicyOption>();
  const auto& rb = b.get<stubkit::RetryPolicyOption>();
  FUZZ_CHECK(ra.max_retries() == rb.max_retries());
  FUZZ_CHECK(ra.max_time() == rb.max_time());
  FUZZ_CHECK(ra.retryable_codes() == rb.retryable_codes());
  FUZZ_CHECK(a.get<stubkit::TotalTimeoutOption>() ==
             b.get<stubkit::TotalTimeoutOption>());
  FUZZ_CHECK(a.has<stubkit::WaitForReadyOption>() ==
             b.has<stubkit::WaitForReadyOption>());
  FUZZ_CHECK(a.get<stubkit::WaitForReadyOption>() ==
             b.get<stubkit::WaitForReadyOption>());
  FUZZ_CHECK(a.get<stubkit::HedgingPolicyOption>().max_attempts() ==
             b.get<stubkit::HedgingPolicyOption>().max_attempts());
  FUZZ_CHECK(a.get<stubkit::BackoffPolicyOption>().initial_delay() ==
             b.get<stubkit::BackoffPolicyOption>().initial_delay());
  FUZZ_CHECK(a.get<stubkit::RetryThrottleOption>() ==
             b.get<stubkit::RetryThrottleOption>());
}

void CheckMethod(const stubkit::ServiceConfig& config,
                 const stubkit::Options& client, const std::string& method) {
  stubkit::Options flat = config.OptionsFor(method);
  CheckValid(flat);
  FUZZ_CHECK(flat.get<stubkit::RetryThrottleOption>() == config.throttle());
  // What a client does with ToOptions(): client, service, method.
  stubkit::Options layered = client;
  layered.unset<stubkit::MethodOptionsOption>();
  const auto& entries = client.get<stubkit::MethodOptionsOption>();
  const size_t dot = method.rfind('.');
  if (dot != std::string::npos && dot > 0) {
    auto service = entries.find(method.substr(0, dot));
    if (service != entries.end()) layered = layered.MergedWith(service->second);
    auto own = entries.find(method);
    if (own != entries.end()) layered = layered.MergedWith(own->second);
  }
  CheckSame(flat, layered);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<stubkit::ServiceConfig> config =
      stubkit::ParseServiceConfig(json);
  if (!config.ok()) {
    const absl::Status& status = config.status();
    FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    const absl::string_view message = status.message();
    FUZZ_CHECK(!message.empty());
    FUZZ_CHECK(message.find('\n') == absl::string_view::npos);
    // A JSON path first: a field's ("methodConfig[0].timeout: ...") or, when
    // protobuf names only the object, the object's ("retryThrottling: ...").
    FUZZ_CHECK(absl::StartsWith(message, "methodConfig") ||
               absl::StartsWith(message, "retryThrottling") ||
               absl::StartsWith(message, "invalid service config JSON: "));
    return 0;
  }
  const stubkit::Options client = config->ToOptions();
  CheckValid(client);
  FUZZ_CHECK(client.get<stubkit::RetryThrottleOption>() == config->throttle());
  for (const auto& [name, entry] : client.get<stubkit::MethodOptionsOption>()) {
    CheckValid(entry);
    FUZZ_CHECK(!entry.has<stubkit::RetryThrottleOption>());
    // `name` as a method, and a method of `name` as a service.
    CheckMethod(*config, client, name);
    CheckMethod(*config, client, name + ".Fuzz");
  }
  CheckMethod(*config, client, "fuzz.Unnamed.Method");
  return 0;
}
