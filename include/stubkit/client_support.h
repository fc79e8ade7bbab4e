// Copyright 2026 The stubkit Authors.
//
// Support for the code protoc-gen-stubkit generates: stub decorators and the
// glue between grpc_cpp_plugin stubs and stubkit's `absl::Status` world.
//
// Every generated service `Foo` has a per-attempt interface `FooStub`. A user
// decorator derives from the generated `FooStubDecorator`, overrides the
// methods it cares about, and is installed once, when the client is built:
//
//   class CountingStub : public demo::FooStubDecorator {
//    public:
//     using FooStubDecorator::FooStubDecorator;
//     absl::StatusOr<demo::GetResponse> Get(
//         grpc::ClientContext& context, const stubkit::OptionsView& options,
//         const demo::GetRequest& request) override {
//       ++attempts;  // runs on every attempt, retries included
//       return FooStubDecorator::Get(context, options, request);
//     }
//     std::atomic<int> attempts{0};
//   };
//
//   demo::FooClient client(channel, stubkit::Options{}.set<
//       demo::FooClient::DecoratorsOption>({
//           [](std::shared_ptr<demo::FooStub> child) {
//             return std::make_shared<CountingStub>(std::move(child));
//           }}));
//
// Decorators are applied in order: the first wraps the gRPC stub, the last
// is the outermost layer and sees each attempt first.
//
// Sync calls go through the sync methods (`Get`), async calls through the
// async ones (`AsyncGet`), hedged or not (see `stubkit/hedging.h`): a
// decorator that must see every attempt overrides both. The attempts of a
// hedged sync call run on several threads at once, so a decorator's sync
// methods must be thread-safe, as in the example.
//
// Everything in `stubkit::internal` is called by generated code only.

#ifndef STUBKIT_CLIENT_SUPPORT_H_
#define STUBKIT_CLIENT_SUPPORT_H_

#include <grpcpp/support/status.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "stubkit/method_options.h"
#include "stubkit/status.h"

namespace stubkit {

// Wraps the stub below it and returns the wrapper. `Stub` is a generated
// per-attempt interface such as `FooStub`.
template <typename Stub>
using StubDecoratorFactory =
    std::function<std::shared_ptr<Stub>(std::shared_ptr<Stub>)>;

// The option tag type behind each generated `FooClient::DecoratorsOption`;
// one tag per service, since each service has its own `Stub` type.
template <typename Stub>
struct DecoratorsOptionFor {
  using Type = std::vector<StubDecoratorFactory<Stub>>;
  static Type Default() { return {}; }
};

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

#endif  // STUBKIT_CLIENT_SUPPORT_H_
