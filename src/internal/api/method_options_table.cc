// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/api/method_options_table.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "stubkit/internal/base/method_name.h"
#include "stubkit/logging.h"
#include "stubkit/retry_options.h"

namespace stubkit {

namespace internal {

namespace {

// Whether another key of `entries` lies under `key` ("a.B.C.D" or
// "a.B.C/D" under "a.B.C"): then "a.B.C" is a service named like a method
// of "a.B", not a typo of a.B's method name.
bool IsServicePrefix(const MethodOptionsOption::Type& entries,
                     absl::string_view key) {
  for (auto it = entries.upper_bound(std::string(key)); it != entries.end();
       ++it) {
    absl::string_view other = it->first;
    if (!absl::StartsWith(other, key)) break;  // sorted: no more below key
    const char next = other.size() > key.size() ? other[key.size()] : '\0';
    if (next == '.' || next == '/') return true;
  }
  return false;
}

// Says, once per client, which imported entries name no method of
// `service` (gRPC ignores them too).
void WarnIgnored(const Options& client, absl::string_view service,
                 const std::vector<absl::string_view>& ignored,
                 const std::vector<absl::string_view>& methods) {
  if (ignored.empty()) return;
  WriteConfigWarning(
      client,
      absl::StrCat("stubkit: ", service, ": the service config names ",
                   ignored.size() == 1 ? "a method" : "methods",
                   " this client does not have (", absl::StrJoin(ignored, ", "),
                   "); ignored, as gRPC does (its methods: ",
                   absl::StrJoin(methods, ", "), ")"));
}

}  // namespace

MethodOptionsTable::MethodOptionsTable(
    const Options& client, absl::string_view service,
    std::initializer_list<absl::string_view> methods)
    : service_(service), methods_(methods) {
  WarnIfServiceNotNamed(client);
  CheckIdempotencyMap(client);
  const auto* entries = client.find<MethodOptionsOption>();
  if (entries == nullptr || entries->empty()) return;
  std::vector<Layers> layers(methods_.size());
  const Options* service_layer = nullptr;
  bool any = false;
  std::vector<absl::string_view> ignored;  // imported, naming no method
  for (const auto& [key, options] : *entries) {
    // Keys of other services are not ours to judge: one options object
    // (a whole service config, say) may cover several services.
    const bool imported = options.get<ImportedEntryOption>();
    if (key == service_) {
      service_layer = &options;
    } else {
      // "pkg.Service/Method" (gRPC's spelling) is always a method;
      // "pkg.Service.Method" is one unless it is another service's name.
      // Not one: "pkg.FooBar", "pkg.Foo.Bar.Baz", "pkg.Foo.Bar/Baz".
      bool slash = false;
      std::optional<absl::string_view> method =
          MethodOfService(key, service_, &slash);
      if (!method.has_value()) continue;
      const absl::string_view name = *method;
      // An imported dotted key is a service ("pkg.Foo.Bar"), never ours.
      if (!slash && imported) continue;
      auto it = std::find(methods_.begin(), methods_.end(), name);
      if (it == methods_.end()) {
        if (imported) {
          ignored.push_back(key);
        } else if (!slash && IsServicePrefix(*entries, key)) {
          continue;  // the service "pkg.Foo.Bar", not ours
        } else if (status_.ok()) {
          status_ = absl::InvalidArgumentError(absl::StrCat(
              "MethodOptionsOption: \"", key, "\" names no method of ",
              service_, " (its methods: ", absl::StrJoin(methods_, ", "),
              "); the call was not sent"));
        }
        continue;
      }
      layers[it - methods_.begin()].method = &options;
    }
    any = true;
    if (options.has<MethodOptionsOption>() && status_.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          "MethodOptionsOption: the entry \"", key,
          "\" holds a MethodOptionsOption; entries do not nest; the call was "
          "not sent"));
    }
  }
  WarnIgnored(client, service_, ignored, methods_);
  if (!any) return;
  for (Layers& entry : layers) entry.service = service_layer;
  layers_ = std::move(layers);
}

void MethodOptionsTable::CheckIdempotencyMap(const Options& client) {
  const auto* map = client.find<IdempotencyMapOption>();
  if (map == nullptr) return;
  // Sorted, so that the first refusal does not depend on hashing.
  std::map<absl::string_view, absl::string_view> spelled;  // method -> key
  std::vector<absl::string_view> keys;
  for (const auto& [key, idempotency] : *map) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  for (absl::string_view key : keys) {
    // Either spelling, as MethodOptionsOption takes them.
    std::optional<absl::string_view> name = MethodOfService(key, service_);
    if (!name.has_value()) continue;  // another service's
    if (std::find(methods_.begin(), methods_.end(), *name) == methods_.end()) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          "IdempotencyMapOption: \"", key, "\" names no method of ", service_,
          " (its methods: ", absl::StrJoin(methods_, ", "),
          "); the call was not sent"));
      return;
    }
    auto [it, inserted] = spelled.emplace(*name, key);
    if (!inserted) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          "IdempotencyMapOption: ", *name, " is given twice, as \"", it->second,
          "\" and \"", key, "\"; the call was not sent"));
      return;
    }
  }
}

void MethodOptionsTable::WarnIfServiceNotNamed(const Options& client) const {
  const auto* imported = client.find<ImportedServicesOption>();
  if (imported == nullptr || *imported == nullptr) return;
  const ImportedServices& file = **imported;
  for (const std::string& warning : file.warnings) {
    WriteConfigWarning(client, absl::StrCat("stubkit: ", service_,
                                            ": service config: ", warning));
  }
  // A `{}` entry covers this service; an awaiter's operations client is
  // rarely named, and its polls follow the file either way.
  if (file.has_default || service_ == "google.longrunning.Operations") return;
  if (std::binary_search(file.services.begin(), file.services.end(),
                         service_)) {
    return;
  }
  WriteConfigWarning(
      client,
      absl::StrCat(
          "stubkit: ", service_,
          ": the service config names no method of this service (it names ",
          file.services.empty() ? std::string("none")
                                : absl::StrJoin(file.services, ", "),
          ", and has no {} entry); its methods are ",
          file.keep_stubkit_defaults ? "left to the client's options"
                                     : "not retried, as under gRPC",
          file.key_hint.empty()
              ? std::string(". A typo in the file's \"service\"?")
              : absl::StrCat(". The file's key ", file.key_hint,
                             ": gRPC and stubkit ignore it")));
}

void WriteConfigWarning(const Options& client, absl::string_view line) {
  // Written unless the client turned logging off itself: a warning that
  // is off by default would warn nobody.
  if (client.has<LogLevelOption>() &&
      client.get<LogLevelOption>() == LogLevel::kOff) {
    return;
  }
  std::shared_ptr<LogSink> sink = client.get<LogSinkOption>();
  if (sink == nullptr) sink = StderrLogSink();
  sink->Write(line);
}

void MethodOptionsTable::RefuseDecorators(absl::string_view make_connection,
                                          absl::string_view client_name) {
  // Wins over a bad MethodOptionsOption entry, as the refusal it replaces
  // did: it is the first thing to fix.
  status_ = absl::InvalidArgumentError(absl::StrCat(
      service_, ": DecoratorsOption must be given to ", make_connection,
      " (or to the ", client_name,
      " constructor that takes a channel); the client was built from a "
      "connection, which cannot apply them, so the call was not sent"));
}

absl::Status MethodOptionsTable::Mismatch(
    int method, const IdempotencyPredicate& predicate,
    const std::string& request_type) const {
  return absl::InvalidArgumentError(absl::StrCat(
      "IdempotencyPredicateOption: ", service_, ".", methods_[method],
      " takes a ", request_type, " but its predicate takes a ",
      predicate.request_type(), "; set the predicate for that method only"));
}

}  // namespace internal
}  // namespace stubkit
