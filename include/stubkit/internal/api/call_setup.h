// Copyright 2026 The stubkit Authors.
//
// How the call options of stubkit/call_options.h reach each attempt's
// grpc::ClientContext, and the response metadata back. Not API.

#ifndef STUBKIT_INTERNAL_CALL_SETUP_H_
#define STUBKIT_INTERNAL_CALL_SETUP_H_

#include <grpcpp/client_context.h>

#include "absl/status/status.h"
#include "stubkit/call_options.h"
#include "stubkit/options.h"

namespace stubkit {
namespace internal {

// INVALID_ARGUMENT for a set option gRPC would misuse or abort on.
absl::Status ValidateCallOptions(const OptionsView& options);
// Applies the set options above, all but the setup hook, to `context`.
void ApplyCallOptions(grpc::ClientContext& context, const OptionsView& options);
// Runs the setup hook, if set. Call it with no stubkit lock held, last
// before the attempt starts.
void RunContextSetup(grpc::ClientContext& context, const OptionsView& options);
// Replaces `*out` with what `context`'s finished call received; the
// initial metadata and the peer stay empty for a context with no gRPC call
// (why that is safe: src/call_options.cc).
void CopyResponseMetadata(const grpc::ClientContext& context,
                          ResponseMetadata* out);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_CALL_SETUP_H_
