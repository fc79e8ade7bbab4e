// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/method_options.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace stubkit {

namespace internal {

MethodOptionsTable::MethodOptionsTable(
    const Options& client, absl::string_view service,
    std::initializer_list<absl::string_view> methods)
    : service_(service), methods_(methods) {
  const auto* entries = client.find<MethodOptionsOption>();
  if (entries == nullptr || entries->empty()) return;
  std::vector<Layers> layers(methods_.size());
  const Options* service_layer = nullptr;
  bool any = false;
  for (const auto& [key, options] : *entries) {
    absl::string_view name = key;
    // Keys of other services are not ours to judge: one options object
    // (a whole service config, say) may cover several services.
    if (!absl::ConsumePrefix(&name, service_)) continue;
    if (name.empty()) {
      service_layer = &options;
    } else if (!absl::ConsumePrefix(&name, ".")) {
      continue;  // "pkg.FooBar" is not "pkg.Foo"
    } else {
      auto it = std::find(methods_.begin(), methods_.end(), name);
      if (it == methods_.end()) {
        if (status_.ok()) {
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
  if (!any) return;
  for (Layers& entry : layers) entry.service = service_layer;
  layers_ = std::move(layers);
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
