// Copyright 2026 The stubkit Authors.
//
// Channels without gRPC's own retries.
//
// gRPC C++ has a retry layer of its own (service config `retryPolicy`,
// transparent retries), enabled by default. Stacked under stubkit, each of
// stubkit's attempts could become several on the wire: the two layers
// multiply, and stubkit's counts, deadlines and idempotency rules would no
// longer describe what the server sees. These helpers make channels with
// `GRPC_ARG_ENABLE_RETRIES` set to 0, so stubkit is the only retry layer:
//
// ```cpp
// #include "demo/key_value.stubkit.h"  // protos/demo/key_value.proto
// #include "stubkit/channel.h"
//
// demo::KeyValueClient MakeClient() {
//   auto channel = stubkit::CreateChannel("localhost:50051",
//                                         grpc::InsecureChannelCredentials());
//   return demo::KeyValueClient(channel);
// }
// ```
//
// This also turns off gRPC's transparent retries (resending an RPC that
// never reached the server), on purpose: off is the only setting under
// which one stubkit attempt is at most one attempt on the wire for every
// target and resolver. A call that never reached the server then fails its
// attempt with `UNAVAILABLE`, retried only if the call is idempotent. A
// caller's own `GRPC_ARG_ENABLE_RETRIES` is dropped, not merely followed by
// a 0 (gRPC 1.51 honours the first of repeated keys). Why, with the gRPC
// sources: docs/retry-semantics.md ("Two layers of retries").

#ifndef STUBKIT_CHANNEL_H_
#define STUBKIT_CHANNEL_H_

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>
#include <string>

namespace stubkit {

// `args` (default: none) with gRPC's retries, configured and transparent,
// switched off: a copy of `args` without their `GRPC_ARG_ENABLE_RETRIES`, with
// it set to 0.
grpc::ChannelArguments ChannelArgumentsWithoutGrpcRetries(
    grpc::ChannelArguments args = {});

// Like `grpc::CreateCustomChannel`, with gRPC's retries, configured and
// transparent, switched off (see the top of this file).
std::shared_ptr<grpc::Channel> CreateChannel(
    const std::string& target,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    grpc::ChannelArguments args = {});

}  // namespace stubkit

#endif  // STUBKIT_CHANNEL_H_
