// Copyright 2026 The stubkit Authors.
//
// ServiceConfig: a gRPC service config's retry, hedging, timeout, throttling
// and wait-for-ready rules, as stubkit options.
//
// Teams that retry with gRPC's built-in layer describe their rules in a
// service config (gRFC A6): JSON with a `methodConfig` list and an optional
// `retryThrottling`; googleapis publishes one per API
// (`*_grpc_service_config.json`). stubkit reads the same file and applies
// the rules with its own retry loop:
//
//   absl::StatusOr<stubkit::ServiceConfig> config =
//       stubkit::LoadServiceConfigFile("pubsub_grpc_service_config.json");
//   if (!config.ok()) return config.status();  // INVALID_ARGUMENT, JSON path
//   google::pubsub::v1::PublisherClient client(channel, config->ToOptions());
//   // Or one method's rules, flattened, for a client or a single call:
//   client.Publish(request,
//                  config->OptionsFor("google.pubsub.v1.Publisher.Publish"));
//
// Per-call options still win over the config, and other client options can
// be layered with `Options::MergedWith`.
//
// IDEMPOTENCY STILL DECIDES. A service config says which status codes are
// worth retrying; it never makes a non-idempotent method retryable (or
// hedged). A method is retried only when it is idempotent by stubkit's rule
// (the proto's `idempotency_level`, a `google.api.http` GET/PUT binding,
// `IdempotencyMapOption`, or `IdempotencyOption` for a call). gRPC's own
// layer retries any method the config names; stubkit does not, so that a
// `Create` or `Append` is never sent twice behind the caller's back. To
// retry such a method as the config says, mark it idempotent yourself.
//
// Mapping (gRFC A6, `grpc/service_config/service_config.proto`):
//
// | service config              | stubkit                                  |
// | --------------------------- | ---------------------------------------- |
// | name {service, method}      | that method ("pkg.Service.Method")       |
// | name {service}              | every method of the service              |
// | name {} (or both empty)     | every method: the client's options       |
// | timeout                     | TotalTimeoutOption (whole call)          |
// | retryPolicy.maxAttempts n   | RetryPolicy::LimitedErrorCount(n - 1)      |
// | retryPolicy, no maxAttempts | RetryPolicy::LimitedTime(timeout), or the  |
// |                             | default 30 minutes without a timeout     |
// | retryableStatusCodes        | the policy's codes (names or numbers)    |
// | initialBackoff, maxBackoff, | ExponentialBackoffPolicy(initial, max,   |
// | backoffMultiplier           | multiplier, Jitter::Full())              |
// | no retryPolicy              | RetryPolicy::LimitedErrorCount(0): none    |
// | hedgingPolicy               | HedgingPolicyOption(maxAttempts,         |
// |                             | hedgingDelay, nonFatalStatusCodes)       |
// | waitForReady                | WaitForReadyOption                       |
// | retryThrottling             | one RetryThrottleOption(maxTokens,       |
// |                             | tokenRatio) for all methods              |
//
// - The most specific entry wins, as a whole, as in gRPC: a method entry
//   replaces its service's entry, which replaces the default (`{}`) entry;
//   fields are not merged across entries. An entry without `timeout` or
//   `waitForReady` resets what a less specific entry set (no total timeout,
//   fail fast); one with neither a retry nor a hedging policy makes no
//   retries ("no retries by the config", gRPC's meaning). A method that no
//   entry names keeps the client's own options and stubkit's defaults.
// - Jitter is `Jitter::Full()`: gRFC A6 draws each wait uniformly from
//   [0, min(initialBackoff * multiplier^n, maxBackoff)], so the same file
//   spreads retries the same way under stubkit as under gRPC.
// - `maxAttempts` counts the first attempt and is honoured as written: gRPC
//   clamps values above 5 silently, stubkit does not (hedging allows at
//   most `HedgingPolicy::kMaxAttemptsLimit`, 10, and larger is an error).
// - `maxAttempts` omitted (which gRPC rejects, and googleapis' files do):
//   the policy is bounded by time, the entry's `timeout`, as GAPIC clients
//   treat those files.
// - `retryThrottling`: one `RetryThrottle` per parsed `ServiceConfig`,
//   shared by every client and call that uses its options (gRPC shares one
//   per server name). Parse again for a separate bucket.
// - Accepted and ignored: every other field (message size limits, load
//   balancing, health checks, and fields of newer gRPC versions). protobuf's
//   JSON parser also accepts snake_case names, numbers in strings, and a
//   single value where a list is expected.
//
// Bad input is INVALID_ARGUMENT naming the JSON path, e.g.
// `methodConfig[2].retryPolicy.initialBackoff: must be positive, got "-1s"`:
// invalid JSON, wrong types, unknown status code names, durations that are
// malformed, negative or zero, a multiplier below 1, `maxBackoff` below
// `initialBackoff`, duplicate names, an entry with both a retry and a
// hedging policy, an empty or missing `name` list. Durations use the
// protobuf JSON form: "0.100s", "60s".

#ifndef STUBKIT_SERVICE_CONFIG_H_
#define STUBKIT_SERVICE_CONFIG_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stubkit/options.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {

class ServiceConfig {
 public:
  // No rules: `ToOptions()` and `OptionsFor()` are empty.
  ServiceConfig() = default;

  // The flattened options of one method, "package.Service.Method": its
  // entry's, else its service's, else the default entry's, plus the
  // throttle. Empty when no entry names the method and there is no default
  // and no throttle.
  Options OptionsFor(absl::string_view method) const;

  // Options for a client: the default entry's options, the throttle, and
  // every service and method entry in `MethodOptionsOption`.
  Options ToOptions() const;
  // As above, with only the entries of `service` ("package.Service"), for a
  // client of one service built from a file that names several.
  Options ToOptions(absl::string_view service) const;

  // The shared throttle, or null without `retryThrottling`.
  const std::shared_ptr<RetryThrottle>& throttle() const { return throttle_; }

 private:
  friend absl::StatusOr<ServiceConfig> ParseServiceConfig(
      absl::string_view json);

  struct Entry {
    // What the entry sets, and what it resets (see above), so that layered
    // over the less specific entries it gives the most specific one's rules.
    Options options;
    std::string service;  // "package.Service"
  };

  // The client's options: with every entry (`service` null) or only
  // `*service`'s.
  Options ClientOptions(const absl::string_view* service) const;

  // The default entry's options.
  Options default_;
  // Keyed "package.Service" and "package.Service.Method".
  std::map<std::string, Entry> entries_;
  std::shared_ptr<RetryThrottle> throttle_;
};

// Parses a service config's JSON text.
absl::StatusOr<ServiceConfig> ParseServiceConfig(absl::string_view json);

// Reads and parses a file; NOT_FOUND (or another code from the file system)
// when it cannot be read, INVALID_ARGUMENT naming the file and the JSON
// path when its content is bad.
absl::StatusOr<ServiceConfig> LoadServiceConfigFile(const std::string& path);

}  // namespace stubkit

#endif  // STUBKIT_SERVICE_CONFIG_H_
