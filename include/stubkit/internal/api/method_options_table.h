// Copyright 2026 The stubkit Authors.
//
// A generated client's per-method option layers (`MethodOptionsTable`),
// resolved once when the client is built, and the effective options of one
// call (`MethodCallOptions`). Not API: see stubkit/method_options.h.

#ifndef STUBKIT_INTERNAL_METHOD_OPTIONS_TABLE_H_
#define STUBKIT_INTERNAL_METHOD_OPTIONS_TABLE_H_

#include <atomic>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/method.h"
#include "stubkit/method_options.h"
#include "stubkit/options.h"

namespace stubkit {
namespace internal {

// Set by a generated client in a call's own layer when the call must be
// refused before anything is sent; the loops return it as INVALID_ARGUMENT.
struct CallRefusalOption {
  using Type = absl::Status;
  static Type Default() { return absl::OkStatus(); }
};

// Set by `ServiceConfig` on each entry it puts in a `MethodOptionsOption`.
// An imported entry that names a method the client does not have is
// ignored (one log line per client), not refused: gRPC never looks such an
// entry up, and a file written for a newer API (or naming
// google.longrunning.Operations methods an awaiter's client lacks) must not
// break the client. Its method keys use gRPC's spelling,
// "pkg.Service/Method", and its dotted keys are always services.
struct ImportedEntryOption {
  using Type = bool;
  static Type Default() { return false; }
};

// Set by `ServiceConfig` on the options it makes: the services its file
// names, so that a client of a service it does not name says so once (a
// typo such as "inventory.Inventory" for "inventory.v1.Inventory" would
// otherwise leave the client on no retries, silently).
struct ImportedServices {
  std::vector<std::string> services;  // sorted
  bool has_default = false;           // a `{}` entry covers every service
  bool keep_stubkit_defaults = false;
  // `ServiceConfig::warnings()`: written once per client.
  std::vector<std::string> warnings;
  // A misspelt key of the file ("\"method_config\" is not gRPC's spelling,
  // \"methodConfig\""), the likely reason it names nothing of a service.
  std::string key_hint;
};
struct ImportedServicesOption {
  using Type = std::shared_ptr<const ImportedServices>;
  static Type Default() { return nullptr; }
};

// Set by `ServiceConfig` (with `keep_idempotency_rules`) on each entry with
// a retry or hedging policy: the first call of the client that the
// idempotency rule keeps from retrying as the file says logs it, once.
struct DroppedRetryNoticeOption {
  using Type = std::shared_ptr<std::atomic<bool>>;
  static Type Default() { return nullptr; }
};

// Writes a configuration warning (an ignored or suspicious setting) to the
// client's `LogSinkOption` (stderr by default), whatever the log level,
// unless the client sets `LogLevelOption` to `kOff` itself.
void WriteConfigWarning(const Options& client, absl::string_view line);

// The effective options of one call of a generated client: converts to the
// `OptionsView` the connection takes. Holds a copy of the call's options
// only when a request-aware predicate decided (or refused) the call.
// Lives for the full expression that calls the connection.
class MethodCallOptions {
 public:
  explicit MethodCallOptions(const OptionsView& view) : view_(view) {}
  MethodCallOptions(const OptionsView& view, Options call)
      : call_(std::move(call)),
        view_(*call_, view.method(), view.service(), view.client()) {}
  MethodCallOptions(const MethodCallOptions&) = delete;
  MethodCallOptions& operator=(const MethodCallOptions&) = delete;

  operator const OptionsView&() const { return view_; }  // NOLINT

 private:
  std::optional<Options> call_;
  OptionsView view_;
};

// A generated client's per-method and per-service layers, resolved once
// when the client is built: pointers into the client's `MethodOptionsOption`
// value, which its `Options` keeps alive and never changes.
class MethodOptionsTable {
 public:
  // `service`: its full name; `methods`: its method names, in the order the
  // generated code numbers them. Both must be literals (they are kept as
  // views).
  MethodOptionsTable(const Options& client, absl::string_view service,
                     std::initializer_list<absl::string_view> methods);

  // Non-OK when the client's `MethodOptionsOption` names a method this
  // service does not have, or nests one, or after `RefuseDecorators`:
  // every call fails with it (`View` puts it in the call's own layer as a
  // `CallRefusalOption`, which the retry loops return before anything is
  // sent).
  const absl::Status& status() const { return status_; }

  // For a client built from a connection: the connection was made already,
  // so the client's non-empty `decorators` can no longer be applied, and
  // every call is refused, naming `make_connection` ("MakeFooConnection")
  // and `client_name` ("FooClient").
  template <typename DecoratorsOption>
  void RefuseDecorators(const Options& client,
                        absl::string_view make_connection,
                        absl::string_view client_name) {
    const auto* decorators = client.find<DecoratorsOption>();
    if (decorators != nullptr && !decorators->empty()) {
      RefuseDecorators(make_connection, client_name);
    }
  }

  // For client and bidi streams. `info.index` picks the method's layer.
  MethodCallOptions View(const MethodInfo& info, const Options& call,
                         const Options& client) const {
    if (!status_.ok()) return Refused(info.index, call, client);
    return MethodCallOptions(Layered(info.index, call, client));
  }

  // For methods with a request: applies the request-aware predicate, if
  // any, unless the call sets `IdempotencyOption`.
  template <typename Request>
  MethodCallOptions View(const MethodInfo& info, const Options& call,
                         const Options& client, const Request& request) const {
    const int method = info.index;
    if (!status_.ok()) return Refused(method, call, client);
    OptionsView view = Layered(method, call, client);
    const auto* predicate = view.find<IdempotencyPredicateOption>();
    if (predicate == nullptr || !*predicate || call.has<IdempotencyOption>()) {
      return MethodCallOptions(view);
    }
    std::optional<bool> idempotent = predicate->Evaluate(request);
    if (!idempotent.has_value()) {
      return MethodCallOptions(
          view, Options(call).set<CallRefusalOption>(
                    Mismatch(method, *predicate, TypeNameOf<Request>())));
    }
    return MethodCallOptions(view,
                             Options(call).set<IdempotencyOption>(
                                 *idempotent ? Idempotency::kIdempotent
                                             : Idempotency::kNonIdempotent));
  }

 private:
  struct Layers {
    const Options* method = nullptr;
    const Options* service = nullptr;
  };

  MethodCallOptions Refused(int method, const Options& call,
                            const Options& client) const {
    return MethodCallOptions(Layered(method, call, client),
                             Options(call).set<CallRefusalOption>(status_));
  }
  void RefuseDecorators(absl::string_view make_connection,
                        absl::string_view client_name);

  OptionsView Layered(int method, const Options& call,
                      const Options& client) const {
    // A generated MethodInfo's index is always in range; any other gets
    // the client's layers only, not undefined behaviour.
    if (method < 0 || static_cast<size_t>(method) >= layers_.size()) {
      return OptionsView(call, client);
    }
    const Layers& layers = layers_[static_cast<size_t>(method)];
    return OptionsView(call, layers.method, layers.service, client);
  }
  absl::Status Mismatch(int method, const IdempotencyPredicate& predicate,
                        const std::string& request_type) const;
  void WarnIfServiceNotNamed(const Options& client) const;
  // Refuses IdempotencyMapOption keys of this service that would never
  // apply: gRPC's "pkg.Service/Method" spelling, or no such method.
  void CheckIdempotencyMap(const Options& client);

  // The method names are needed only to name a mismatch; `methods_` keeps
  // the views (of literals), which costs one allocation per client.

  absl::string_view service_;
  std::vector<absl::string_view> methods_;
  // Empty when no entry concerns this service: the common case.
  std::vector<Layers> layers_;
  absl::Status status_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_METHOD_OPTIONS_TABLE_H_
