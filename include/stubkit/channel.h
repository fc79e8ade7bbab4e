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
// This also turns off gRPC's transparent retries (resending an RPC that never
// reached the server), and on purpose. What gRPC 1.51 does:
//
// - Both kinds of retry live only in the retry filter. In client_channel.cc,
//   `ClientChannel::UpdateServiceConfigInDataPlaneLocked` ends the per-call
//   filter stack with `RetryFilter` when `GRPC_ARG_ENABLE_RETRIES` is on, and
//   with `DynamicTerminationFilter` (no retries of any kind) when it is off.
//   In retry_filter.cc, `RetryFilter::CallData::CallAttempt::BatchData::
//   RecvTrailingMetadataReady` retries transparently on the transport's
//   stream network state (not sent on the wire: always; not seen by the
//   server: once), and otherwise asks `CallAttempt::ShouldRetry`, which
//   retries only under the `retryPolicy` of the call's method config.
//   Nothing else in the client channel resends a call.
// - So transparent retries alone would need retries on and no `retryPolicy`
//   anywhere: a default service config without one (`GRPC_ARG_SERVICE_CONFIG`)
//   and no resolved one (`GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION`). That
//   is not a guarantee. `ClientChannel::OnResolverResultChangedLocked` uses
//   the default config only when the resolver returns none, and takes the
//   resolver's `ConfigSelector` otherwise; the disable-resolution argument is
//   read by the c-ares DNS resolver alone (dns_resolver_ares.cc). An `xds:`
//   target's resolver builds method configs with the route's retry policy
//   (xds_resolver.cc), and any registered resolver may do the same. Forcing
//   our default config would also replace the caller's own service config
//   (load balancing, timeouts, wait-for-ready).
// - Off is the only setting under which one stubkit attempt is at most one
//   attempt on the wire for every target and resolver. Its cost: a call that
//   never reached the server fails its attempt with `UNAVAILABLE`, and
//   stubkit retries it only if the call is idempotent. A caller who wants
//   transparent retries and controls the resolver can build a channel with
//   `grpc::CreateCustomChannel` instead, and accept that gRPC may then retry.
//
// A caller's own `GRPC_ARG_ENABLE_RETRIES` is dropped, not merely followed
// by a 0: `grpc::ChannelArguments` keeps repeated keys, and gRPC 1.51 honours
// the first.

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
// transparent, switched off (see above).
std::shared_ptr<grpc::Channel> CreateChannel(
    const std::string& target,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    grpc::ChannelArguments args = {});

}  // namespace stubkit

#endif  // STUBKIT_CHANNEL_H_
