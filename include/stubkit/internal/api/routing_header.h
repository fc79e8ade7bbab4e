// Copyright 2026 The stubkit Authors.
//
// Builds the `x-goog-request-params` value of one attempt (see
// stubkit/routing.h). Generated code prints, once per routed method, a
// function that reads the typed request:
//
//   void GetBookParams(const GetBookRequest& request,
//                      ::stubkit::internal::RequestParams& params) {
//     params.Match("project", request.parent(), "{project=projects/*}/**");
//     params.Set("name", request.name());
//   }
//
// and its gRPC stub's sync and async methods each call
//
//   ::stubkit::internal::ApplyRoutingHeader(context, options, request,
//                                           GetBookParams);
//
// Not public API.

#ifndef STUBKIT_INTERNAL_ROUTING_HEADER_H_
#define STUBKIT_INTERNAL_ROUTING_HEADER_H_

#include <grpcpp/client_context.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "stubkit/options.h"
#include "stubkit/routing.h"

namespace stubkit {
namespace internal {

inline constexpr char kRequestParamsHeader[] = "x-goog-request-params";

// Percent-encodes every byte but the RFC 3986 unreserved characters
// (A-Z a-z 0-9 - . _ ~), as AIP-4222 asks of keys and values.
std::string UrlEncode(absl::string_view text);

// The part of `value` that the one named variable of `path_template`
// matches (`{key=pattern}`; `{key}` is `{key=*}`), when the whole of
// `value` matches the template; nullopt otherwise. `*` is one non-empty
// segment, `**` any number of segments (zero too), anything else a literal
// segment.
absl::optional<absl::string_view> MatchPathTemplate(
    absl::string_view value, absl::string_view path_template);

class RequestParams {
 public:
  // Sets `key` to `value`; an empty value is ignored. A key set again keeps
  // its place and takes the new value ("last one wins").
  void Set(absl::string_view key, absl::string_view value);
  // Integer fields of an http path variable, in decimal, zero included: 0
  // is a legitimate id, and it is in the path of the http rule too. The
  // generated code does not call this for a field it can tell is unset (a
  // field with presence, or one inside an unset message).
  void Set(absl::string_view key, std::int64_t value) {
    Set(key, absl::string_view(absl::StrCat(value)));
  }
  void Set(absl::string_view key, std::uint64_t value) {
    Set(key, absl::string_view(absl::StrCat(value)));
  }
  void Set(absl::string_view key, std::int32_t value) {
    Set(key, static_cast<std::int64_t>(value));
  }
  void Set(absl::string_view key, std::uint32_t value) {
    Set(key, static_cast<std::uint64_t>(value));
  }
  // Sets `key` to what `path_template` matches in `value`, if it matches.
  void Match(absl::string_view key, absl::string_view value,
             absl::string_view path_template);

  // The header value; "" when nothing was set.
  std::string Value() const;
  // Adds the header to `context` unless nothing was set.
  void Apply(grpc::ClientContext& context) const;

 private:
  std::vector<std::pair<std::string, std::string>> params_;
};

// Adds the header `params_of` builds from `request` to the attempt's
// `context`, unless the call turned it off with `RoutingHeaderOption`.
template <typename Request>
void ApplyRoutingHeader(grpc::ClientContext& context,
                        const OptionsView& options, const Request& request,
                        void (*params_of)(const Request&, RequestParams&)) {
  if (!options.get<RoutingHeaderOption>()) return;
  RequestParams params;
  params_of(request, params);
  params.Apply(context);
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_ROUTING_HEADER_H_
