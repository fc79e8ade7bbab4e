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
// Per-call options still win over the config. By default a file behaves
// as under gRPC's own retries: it governs exactly the methods it names, and
// a `retryPolicy` or `hedgingPolicy` makes its methods retryable whatever
// stubkit's idempotency rule says; `ServiceConfigImport` opts into
// stubkit's own rules, one by one. A file gRPC 1.51 accepts loads, one it
// refuses is refused (INVALID_ARGUMENT naming the JSON path), and a
// `retryThrottling` gives one `RetryThrottle` per parsed config, shared by
// every client built from it. The mapping, the opt-ins, what still differs
// from gRPC and the mistakes reported: docs/service-config.md.

#ifndef STUBKIT_SERVICE_CONFIG_H_
#define STUBKIT_SERVICE_CONFIG_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/options.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {

// How an imported file combines with stubkit's own rules. The defaults
// reproduce gRPC's behaviour; each field opts into a stubkit difference.
struct ServiceConfigImport {
  // Methods no entry names: false (gRPC): not retried nor hedged. true:
  // the client's own options and stubkit's defaults (30 minutes of
  // retries for an idempotent method), throttled by the file's bucket.
  bool keep_stubkit_defaults = false;
  // false (gRPC): a retryPolicy or hedgingPolicy makes its methods
  // retryable. true: stubkit's idempotency rule still decides (the proto's
  // `idempotency_level`, a GET/PUT binding, `IdempotencyMapOption`); the
  // first call whose configured retry that drops logs it, once per
  // client.
  bool keep_idempotency_rules = false;
  // The largest `maxAttempts` honoured; larger values count as this one.
  // gRPC clamps to 5; stubkit allows up to 10 for hedging (more is
  // clamped to 10) and any number for retries.
  int max_attempts = 5;
  // The waits' spread: `Jitter::Full()` is gRFC A6's text (U[0, capped
  // exponential]); `Jitter::Grpc()` is gRPC C++ 1.51's (exactly
  // initialBackoff first, then the capped exponential times U[0.8, 1.2]).
  Jitter jitter = Jitter::Full();
};

class ServiceConfig {
 public:
  // No rules: `ToOptions()` and `OptionsFor()` are empty.
  ServiceConfig() = default;

  // The flattened options of one method, "package.Service.Method" (or
  // "package.Service/Method"): its entry's, else its service's, else the
  // default entry's. For a method no entry names: no retries, as under
  // gRPC (or nothing with `keep_stubkit_defaults`). Used as a client's
  // options, a client of a service the file does not name logs so once.
  Options OptionsFor(absl::string_view method) const;

  // Options for a client: the default entry's options, the throttle, and
  // every service and method entry in `MethodOptionsOption`.
  Options ToOptions() const;
  // As above, with only the entries of `service` ("package.Service"), for a
  // client of one service built from a file that names several.
  Options ToOptions(absl::string_view service) const;

  // The shared throttle, or null without `retryThrottling`.
  const std::shared_ptr<RetryThrottle>& throttle() const { return throttle_; }

  // What the file holds that stubkit reads differently from gRPC 1.51, or
  // ignores as gRPC does (docs/service-config.md lists each), one line each
  // starting with its JSON path. A client built from these options also
  // writes them, once, to its LogSinkOption.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  friend absl::StatusOr<ServiceConfig> ParseServiceConfig(
      absl::string_view json, const ServiceConfigImport& how);

  struct Entry {
    // What the entry sets, and what it resets (an entry without `timeout`
    // or `waitForReady` resets them), so that layered over the less
    // specific entries it gives the most specific one's rules.
    Options options;
    std::string service;  // "package.Service"
  };

  // The client's options: with every entry (`service` null) or only
  // `*service`'s.
  Options ClientOptions(const absl::string_view* service) const;
  // Sets a fresh DroppedRetryNoticeOption when `options` retry and the
  // idempotency rule is kept.
  void NoticeDroppedRetries(Options& options) const;
  // Records in `options` the services the entries name (all, or only
  // `*service`).
  void SetImported(Options& options, const absl::string_view* service) const;

  // The options of the methods no entry names: the default entry's, or
  // none (no retries; nothing with `keep_stubkit_defaults`).
  Options default_;
  bool has_default_ = false;
  ServiceConfigImport how_;
  // Keyed "package.Service" and "package.Service/Method" (gRPC's
  // spelling: "a.B/C" and the service "a.B.C" are different names).
  std::map<std::string, Entry> entries_;
  std::shared_ptr<RetryThrottle> throttle_;
  std::vector<std::string> warnings_;
  // A misspelt key ("method_config"), named when a client finds that the
  // file names nothing of its service.
  std::string key_hint_;
};

// Parses a service config's JSON text.
absl::StatusOr<ServiceConfig> ParseServiceConfig(
    absl::string_view json, const ServiceConfigImport& how = {});

// Reads and parses a file; NOT_FOUND (or another code from the file system)
// when it cannot be read, INVALID_ARGUMENT naming the file and the JSON
// path when its content is bad.
absl::StatusOr<ServiceConfig> LoadServiceConfigFile(
    const std::string& path, const ServiceConfigImport& how = {});

}  // namespace stubkit

#endif  // STUBKIT_SERVICE_CONFIG_H_
