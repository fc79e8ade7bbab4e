// Copyright 2026 The stubkit Authors.
//
// Method names as stubkit's per-method options take them (MethodOptionsOption,
// IdempotencyMapOption, ServiceConfig::OptionsFor): the proto's full name,
// "pkg.Service.Method", or gRPC's, "pkg.Service/Method". One parser for
// every option, so that both spellings work everywhere. Not API.

#ifndef STUBKIT_INTERNAL_METHOD_NAME_H_
#define STUBKIT_INTERNAL_METHOD_NAME_H_

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace stubkit {
namespace internal {

// "pkg.Service/Method" or "pkg.Service.Method" -> ("pkg.Service",
// "Method"): at the '/' if there is one, else at the last '.'; a name
// with neither is a method of no service.
inline std::pair<absl::string_view, absl::string_view> SplitMethodName(
    absl::string_view name) {
  const size_t slash = name.find('/');
  if (slash != absl::string_view::npos) {
    return {name.substr(0, slash), name.substr(slash + 1)};
  }
  const size_t dot = name.rfind('.');
  if (dot == absl::string_view::npos) return {absl::string_view(), name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

// The method of `service` that `key` names in either spelling, or nullopt
// when `key` is not "<service>.<m>" or "<service>/<m>" with a plain `m`
// (another service's key, the service itself, a nested service's method).
// `m` may be empty ("pkg.Service/"): a method that no service has.
// `slash` tells which spelling it was.
inline std::optional<absl::string_view> MethodOfService(
    absl::string_view key, absl::string_view service, bool* slash = nullptr) {
  if (!absl::ConsumePrefix(&key, service) || key.empty()) return std::nullopt;
  const bool is_slash = key[0] == '/';
  if (!is_slash && key[0] != '.') return std::nullopt;  // "pkg.FooBar"
  key.remove_prefix(1);
  if (key.find_first_of("./") != absl::string_view::npos) return std::nullopt;
  if (slash != nullptr) *slash = is_slash;
  return key;
}

// The entry of `map` for the method `full_name` ("pkg.Service.Method"),
// under either spelling; null if none. The proto's spelling is tried
// first. It runs for every call of a client with an IdempotencyMapOption,
// so the other spelling is built on the stack (a heap string only for a
// name longer than any real one).
template <typename Map>
const typename Map::mapped_type* FindByMethodName(const Map& map,
                                                  absl::string_view full_name) {
  if (map.empty()) return nullptr;
  if (auto it = map.find(full_name); it != map.end()) {
    return &it->second;
  }
  const size_t dot = full_name.rfind('.');
  if (dot == absl::string_view::npos ||
      full_name.find('/') != absl::string_view::npos) {
    return nullptr;
  }
  char buffer[256];
  std::string long_name;
  char* slashed = buffer;
  if (full_name.size() > sizeof(buffer)) {
    long_name.resize(full_name.size());
    slashed = long_name.data();
  }
  full_name.copy(slashed, full_name.size());
  slashed[dot] = '/';
  if (auto it = map.find(absl::string_view(slashed, full_name.size()));
      it != map.end()) {
    return &it->second;
  }
  return nullptr;
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_METHOD_NAME_H_
