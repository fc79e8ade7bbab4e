// Copyright 2026 The stubkit Authors.
//
// Glue the generated code uses between grpc_cpp_plugin stubs and stubkit:
// `ToStatusOr`, and the decorator stack built once per connection. Not API.

#ifndef STUBKIT_INTERNAL_STUB_SUPPORT_H_
#define STUBKIT_INTERNAL_STUB_SUPPORT_H_

#include <grpcpp/support/status.h>

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "stubkit/decorator.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

// Turns the result of a grpc_cpp_plugin unary call into a `StatusOr`.
template <typename Response>
absl::StatusOr<Response> ToStatusOr(const grpc::Status& status,
                                    Response&& response) {
  if (!status.ok()) return FromGrpcStatus(status);
  return absl::StatusOr<Response>(std::move(response));
}

// Builds the stack once, when a connection is made. A factory that returns
// null is skipped (the stack below it is kept), so a conditional decorator
// can decline without breaking the chain.
template <typename Stub>
std::shared_ptr<Stub> ApplyDecorators(
    std::shared_ptr<Stub> stub,
    const std::vector<StubDecoratorFactory<Stub>>& decorators) {
  for (const auto& decorate : decorators) {
    if (!decorate) continue;
    std::shared_ptr<Stub> wrapped = decorate(stub);
    if (wrapped != nullptr) stub = std::move(wrapped);
  }
  return stub;
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_STUB_SUPPORT_H_
