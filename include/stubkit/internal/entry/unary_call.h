// Copyright 2026 The stubkit Authors.
//
// The entry points generated connections use for unary calls.
//
// They pick the loop for a call: the retry loop, or — when a
// `HedgingPolicyOption` is set and the call is idempotent — hedging. Sync
// calls always go through the sync per-attempt call (the stub's `M`), async
// calls through the async one (`AsyncM`), hedged or not; so a decorator that
// must see every attempt overrides both. The sync form takes the attempt
// inline (no allocation on the success path without hedging):
//
//   return stubkit::internal::RunUnary<Resp>(
//       kMethod, options, request,
//       [&](grpc::ClientContext& context) { return stub->M(context, ...); },
//       [&] { return MakeAsyncAttempt(request); });  // unused, kept for
//                                                    // generated code
//
// A connection made over a channel passes its `ConnectionChannel` last, so
// that retry waits after a connection failure follow the channel back
// (stubkit/internal/engine/connection_channel.h); hedged calls do not use it.
//
// A hedged sync call runs attempt 1 on the caller's thread and each hedge on
// a thread of its own (see `internal::SyncHedgedOperation`), so the attempt
// must be safe to call from several threads at once.
//
// Not API; see `stubkit/retry_loop.h` and `stubkit/hedging.h`.

#ifndef STUBKIT_INTERNAL_UNARY_CALL_H_
#define STUBKIT_INTERNAL_UNARY_CALL_H_

#include <future>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "stubkit/async_callback.h"
#include "stubkit/internal/api/options_layers.h"
#include "stubkit/internal/engine/async_retry_operation.h"
#include "stubkit/internal/engine/connection_channel.h"
#include "stubkit/internal/engine/hedged_operation.h"
#include "stubkit/method.h"
#include "stubkit/options.h"
#include "stubkit/retry_loop.h"

namespace stubkit {
namespace internal {

// `make_async_attempt` is no longer used: sync hedging runs `attempt`.
template <typename Response, typename Request, typename Attempt,
          typename MakeAsyncAttempt>
absl::StatusOr<Response> RunUnary(
    const MethodInfo& method, const OptionsView& options,
    const Request& request, Attempt&& attempt,
    MakeAsyncAttempt&& /*make_async_attempt*/,
    const std::shared_ptr<ConnectionChannel>& channel = nullptr) {
  if (ShouldHedge(method, options)) {
    using Operation =
        SyncHedgedOperation<Response, std::remove_reference_t<Attempt>>;
    auto operation = std::make_shared<Operation>(
        method, options.call(), CopyLowerLayers(options), attempt);
    return operation->Run(request);
  }
  // RetryLoop's body, with the channel (the connection keeps it alive).
  RetryLoopState state(method, options);
  if (!state.setup_status().ok()) return state.setup_status();
  MaybeLogPayload(state, "request", request);
  state.EnableThrottleWait();
  state.channel_follow().set_channel(channel.get());
  return RunRetryLoop<Response>(state, attempt);
}

// `attempt` is callable as `AsyncAttempt<Response>`; it is stored in the
// operation as it is (no std::function) unless the call is hedged.
template <typename Response, typename Attempt>
void RunAsyncUnary(
    const MethodInfo& method, const OptionsView& options, Attempt&& attempt,
    AsyncCallback<Response> done,
    const std::shared_ptr<ConnectionChannel>& channel = nullptr) {
  if (ShouldHedge(method, options)) {
    AsyncHedgedCall<Response>(
        method, options.call(), CopyLowerLayers(options),
        AsyncAttempt<Response>(std::forward<Attempt>(attempt)),
        std::move(done));
    return;
  }
  StartAsyncRetryLoop<Response>(
      method, options.call(), CopyLowerLayers(options),
      std::forward<Attempt>(attempt), std::move(done), channel);
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_UNARY_CALL_H_
