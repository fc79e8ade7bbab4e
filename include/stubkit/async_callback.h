// Copyright 2026 The stubkit Authors.
//
// The callback types of async calls: what a generated `AsyncM` and
// `AsyncRetryLoop` (stubkit/async_retry_loop.h) take. The threads they
// run on: docs/cancellation.md.

#ifndef STUBKIT_ASYNC_CALLBACK_H_
#define STUBKIT_ASYNC_CALLBACK_H_

#include <grpcpp/client_context.h>

#include <functional>

#include "absl/status/statusor.h"
#include "stubkit/options.h"

namespace stubkit {

// Receives the result of an async call (or attempt), exactly once.
template <typename Response>
using AsyncCallback = std::function<void(absl::StatusOr<Response>)>;

// Starts one async attempt on a fresh context with the call's options, and
// calls its callback exactly once.
template <typename Response>
using AsyncAttempt = std::function<void(
    grpc::ClientContext&, const OptionsView&, AsyncCallback<Response>)>;

}  // namespace stubkit

#endif  // STUBKIT_ASYNC_CALLBACK_H_
