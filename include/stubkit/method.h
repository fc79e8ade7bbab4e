// Copyright 2026 The stubkit Authors.
//
// The static description of one RPC method, and idempotency.
//
// Generated code describes each method once, as a constant, and hands it to
// the runtime, which decides everything else (retries, metadata, logging):
//
//   constexpr stubkit::MethodInfo kGetUser{
//       "demo.UserService.GetUser", stubkit::RpcKind::kUnary,
//       stubkit::Idempotency::kIdempotent};
//
// A method is idempotent by default when its proto says so
// (`idempotency_level = IDEMPOTENT` or `NO_SIDE_EFFECTS`, or a
// `google.api.http` `get` or `put` binding). A client can override that per
// method name with `IdempotencyMapOption`, and a call with
// `IdempotencyOption`. Only idempotent calls are ever retried. What the
// generator reads from the proto: docs/generated-code.md.

#ifndef STUBKIT_METHOD_H_
#define STUBKIT_METHOD_H_

#include "absl/strings/string_view.h"

namespace stubkit {

enum class Idempotency { kIdempotent, kNonIdempotent };

enum class RpcKind {
  kUnary,
  kServerStreaming,
  kClientStreaming,
  kBidiStreaming
};

struct MethodInfo {
  // The proto full name, "package.Service.Method".
  absl::string_view full_name;
  RpcKind kind;
  Idempotency default_idempotency;
  // The method's position in its service, counted from 0 in proto order:
  // generated clients look their per-method options up by it.
  int index = 0;
};

absl::string_view ToString(Idempotency idempotency);
absl::string_view ToString(RpcKind kind);

// Forces the idempotency of a call (or, set on a client, of all its calls).
// One of the retry options (stubkit/retry_options.h, docs/options.md),
// declared here so that generated headers name it without the others.
struct IdempotencyOption {
  using Type = Idempotency;
  static Type Default() { return Idempotency::kNonIdempotent; }
};

}  // namespace stubkit

#endif  // STUBKIT_METHOD_H_
