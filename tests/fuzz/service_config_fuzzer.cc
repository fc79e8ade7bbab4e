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
//     positive, and methods are only ever marked idempotent (a policy is
//     the service owner's word, as under gRPC);
//   - OptionsFor(method) equals the client's options layered with the
//     method's service entry and its own entry from ToOptions();
//   - the one throttle is on exactly the options with a policy.

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
    FUZZ_CHECK(*throttle == nullptr || (*throttle)->status().ok());
  }
  if (const auto* idempotency = options.find<stubkit::IdempotencyOption>()) {
    FUZZ_CHECK(*idempotency == stubkit::Idempotency::kIdempotent);
  }
  FUZZ_CHECK(!options.has<stubkit::IdempotencyMapOption>());
}

// The throttle is the config's on options with a policy, and none else.
void CheckThrottle(const stubkit::ServiceConfig& config,
                   const stubkit::Options& options) {
  const auto& throttle = options.get<stubkit::RetryThrottleOption>();
  if (config.throttle() == nullptr) {
    FUZZ_CHECK(throttle == nullptr);
    return;
  }
  const bool repeats =
      options.get<stubkit::RetryPolicyOption>().max_failures() != 0 ||
      options.get<stubkit::HedgingPolicyOption>().enabled();
  FUZZ_CHECK(throttle == (repeats ? config.throttle() : nullptr));
}

// The options the retry loop reads agree.
void CheckSame(const stubkit::Options& a, const stubkit::Options& b) {
  FUZZ_CHECK(a.has<stubkit::RetryPolicyOption>() ==
             b.has<stubkit::RetryPolicyOption>());
  const auto& ra = a.get<stubkit::RetryPolicyOption>();
  const auto& rb = b.get<stubkit::RetryPolicyOption>();
  FUZZ_CHECK(ra.max_failures() == rb.max_failures());
  FUZZ_CHECK(ra.time_limit() == rb.time_limit());
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
  CheckThrottle(config, flat);
  // What a client does with ToOptions(): client, service, method.
  stubkit::Options layered = client;
  layered.unset<stubkit::MethodOptionsOption>();
  const auto& entries = client.get<stubkit::MethodOptionsOption>();
  // "pkg.Service/Method" or "pkg.Service.Method"; entries are keyed
  // "pkg.Service" and "pkg.Service/Method".
  size_t split = method.find('/');
  if (split == std::string::npos) split = method.rfind('.');
  if (split != std::string::npos && split > 0) {
    const std::string service_name = method.substr(0, split);
    auto service = entries.find(service_name);
    if (service != entries.end()) layered = layered.MergedWith(service->second);
    auto own = entries.find(service_name + "/" + method.substr(split + 1));
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
    // A JSON path first ("methodConfig[0].timeout: ...", "retryThrottling:
    // ..."), or the line and column of text that is not JSON.
    FUZZ_CHECK(absl::StartsWith(message, "methodConfig") ||
               absl::StartsWith(message, "retryThrottling") ||
               absl::StartsWith(message, "invalid service config JSON: "));
    return 0;
  }
  const stubkit::Options client = config->ToOptions();
  CheckValid(client);
  CheckThrottle(*config, client);
  for (const auto& [name, entry] : client.get<stubkit::MethodOptionsOption>()) {
    CheckValid(entry);
    CheckThrottle(*config, entry);
    // `name` as a method, and a method of `name` as a service.
    CheckMethod(*config, client, name);
    if (name.find('/') == std::string::npos) {
      CheckMethod(*config, client, name + ".Fuzz");
    }
  }
  CheckMethod(*config, client, "fuzz.Unnamed.Method");
  return 0;
}
