// Copyright 2026 The stubkit Authors.

#include "stubkit/method.h"

namespace stubkit {

absl::string_view ToString(Idempotency idempotency) {
  return idempotency == Idempotency::kIdempotent ? "idempotent"
                                                 : "non-idempotent";
}

absl::string_view ToString(RpcKind kind) {
  switch (kind) {
    case RpcKind::kUnary:
      return "unary";
    case RpcKind::kServerStreaming:
      return "server streaming";
    case RpcKind::kClientStreaming:
      return "client streaming";
    case RpcKind::kBidiStreaming:
      return "bidi streaming";
  }
  return "unknown";
}

}  // namespace stubkit
