// Copyright 2026 The stubkit Authors.
//
// Stub decorators: code that wraps every attempt of a generated client's
// calls (metadata, counting, fault injection) without touching the client.
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
// The first decorator wraps the gRPC stub, the last sees an attempt first.
// Sync calls use `Get`, async ones `AsyncGet`, hedged or not; a hedged sync
// call's attempts run on several threads at once, so be thread-safe. Add
// metadata with the checked `stubkit::AddMetadata`. docs/generated-code.md.

#ifndef STUBKIT_DECORATOR_H_
#define STUBKIT_DECORATOR_H_

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

}  // namespace stubkit

#endif  // STUBKIT_DECORATOR_H_
