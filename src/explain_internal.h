// Copyright 2026 The stubkit Authors.
//
// What the explainer's sources (explain.cc, explain_load.cc; the
// stubkit::explain library) share: a method's name resolved against a
// client's options as a generated client of that method's service would
// resolve them, and escaping for their SVG charts. Not API.

#ifndef STUBKIT_SRC_EXPLAIN_INTERNAL_H_
#define STUBKIT_SRC_EXPLAIN_INTERNAL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/options.h"

namespace stubkit {
namespace internal {

struct NamedMethod {
  std::string service;    // "pkg.Service"
  std::string name;       // "Method"
  std::string full_name;  // "pkg.Service.Method"
  // The client's options with only the MethodOptionsOption entries that can
  // concern this method, and logging off (the explainer is not a client).
  Options lower;
  // Whether an entry names the method or its service.
  bool named = false;
};

// "package.Service.Method" or "package.Service/Method"; INVALID_ARGUMENT
// for anything else.
absl::StatusOr<NamedMethod> ResolveNamedMethod(const Options& client,
                                               absl::string_view method);

// `text` for an SVG or XML text node or attribute: < > & " escaped.
std::string XmlEscape(absl::string_view text);

// The explainer's draws, injected into the real retry loop through the
// backoff policy it hands the loop (a friend of ExponentialBackoffPolicy).
class ExplainerDraws {
 public:
  // A copy of `policy` whose every wait draws `uniform01`, in [0, 1),
  // instead of the process-wide generator.
  static ExponentialBackoffPolicy Pinned(ExponentialBackoffPolicy policy,
                                         double uniform01) {
    policy.pinned_draw_ = uniform01;
    return policy;
  }
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_SRC_EXPLAIN_INTERNAL_H_
