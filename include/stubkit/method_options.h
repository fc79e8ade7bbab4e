// Copyright 2026 The stubkit Authors.
//
// Per-method options (`MethodOptionsOption`, declared in stubkit/options.h)
// as a generated client resolves them, and request-aware idempotency.
//
// Request-aware idempotency: a predicate over a method's typed request
// decides, call by call, whether the call is idempotent (may be retried or
// hedged). Set it for one method, through `MethodOptionsOption`:
//
//   auto options = stubkit::Options{}.set<stubkit::MethodOptionsOption>({
//       {"demo.Iam.SetIamPolicy",
//        stubkit::Options{}.set<stubkit::IdempotencyPredicateOption>(
//            stubkit::IdempotentIf<demo::SetIamPolicyRequest>(
//                [](const demo::SetIamPolicyRequest& request) {
//                  return !request.policy().etag().empty();
//                }))},
//   });
//
// A generated client runs the predicate once per call, on the calling
// thread, before anything is sent, for unary calls (sync, async, hedged)
// and server streams (a resumed stream keeps the first decision). The
// call's own `IdempotencyOption` wins over it; the predicate wins over every
// other source (`IdempotencyOption` in a method, service or client layer,
// `IdempotencyMapOption`, the proto). Client and bidi streams are never
// replayed, so they do not consult it. A predicate whose request type is not
// the method's fails the call with INVALID_ARGUMENT, unsent; so set one per
// method, not for a whole service or client. docs/options.md.

#ifndef STUBKIT_METHOD_OPTIONS_H_
#define STUBKIT_METHOD_OPTIONS_H_

#include <google/protobuf/message.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/internal/base/type_name.h"
#include "stubkit/method.h"
#include "stubkit/options.h"

namespace stubkit {
// A type-erased predicate over one request type; build it with
// `IdempotentIf`. Default-constructed (or from a null function): unset.
class IdempotencyPredicate {
 public:
  IdempotencyPredicate() = default;

  explicit operator bool() const { return predicate_ != nullptr; }

  // The predicate's verdict on `request`, or nullopt when it was built for
  // another request type.
  template <typename Request>
  std::optional<bool> Evaluate(const Request& request) const {
    if (type_ != internal::KeyOf<Request>()) return std::nullopt;
    return predicate_(&request);
  }

  // The full proto name of the request type it takes.
  const std::string& request_type() const { return type_name_; }

 private:
  template <typename Request>
  friend IdempotencyPredicate IdempotentIf(
      std::function<bool(const Request&)> predicate);

  const void* type_ = nullptr;
  std::function<bool(const void*)> predicate_;
  std::string type_name_;
};

// A predicate deciding whether a call with `Request` is idempotent.
template <typename Request>
IdempotencyPredicate IdempotentIf(
    std::function<bool(const Request&)> predicate) {
  IdempotencyPredicate erased;
  if (!predicate) return erased;
  erased.type_ = internal::KeyOf<Request>();
  erased.type_name_ = internal::TypeNameOf<Request>();
  erased.predicate_ = [predicate = std::move(predicate)](const void* request) {
    return predicate(*static_cast<const Request*>(request));
  };
  return erased;
}

// Request-aware idempotency for one method (see the top of this file).
// Unset, or null: none.
struct IdempotencyPredicateOption {
  using Type = IdempotencyPredicate;
  static Type Default() { return {}; }
};

}  // namespace stubkit

#endif  // STUBKIT_METHOD_OPTIONS_H_
