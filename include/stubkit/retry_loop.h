// Copyright 2026 The stubkit Authors.
//
// The synchronous retry loop.
//
// `RetryLoop` runs one call: it makes attempts, each with a fresh
// `grpc::ClientContext`, and between failed attempts decides, in this order:
//
//   1. the status code is not retryable       -> stop (permanent error)
//   2. the call is not idempotent             -> stop (not retried)
//   3. the retry policy is exhausted          -> stop (attempts, time)
//      the retry throttle refuses             -> stop (throttled), or wait
//                                                in its waiting mode
//   4. the backoff wait would end after the
//      call's end (policy time or deadline)   -> stop, as in 3
//   otherwise wait, then try again.
//
// The returned error keeps the last attempt's code, message and details and
// adds a summary (see `stubkit/status.h`). Generated connections call it;
// it also wraps any hand-written stub call:
//
//   absl::StatusOr<EchoResponse> response = stubkit::RetryLoop<EchoResponse>(
//       kEchoMethod, stubkit::OptionsView(call_options, client_options),
//       [&](grpc::ClientContext& context) -> absl::StatusOr<EchoResponse> {
//         EchoResponse r;
//         grpc::Status s = raw_stub->Echo(&context, request, &r);
//         if (!s.ok()) return stubkit::FromGrpcStatus(s);
//         return r;
//       });
//
// The attempt is a template parameter, not a `std::function`: the success
// path allocates nothing of its own. The rules: docs/retry-semantics.md.

#ifndef STUBKIT_RETRY_LOOP_H_
#define STUBKIT_RETRY_LOOP_H_
#include <utility>

#include "absl/status/statusor.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/method.h"
#include "stubkit/options.h"

namespace stubkit {

// Runs `attempt` (callable as `absl::StatusOr<Response>(grpc::ClientContext&)`)
// under the retry, backoff and idempotency rules of `options`.
template <typename Response, typename Attempt>
absl::StatusOr<Response> RetryLoop(const MethodInfo& method,
                                   const OptionsView& options,
                                   Attempt&& attempt) {
  internal::RetryLoopState state(method, options);
  if (!state.setup_status().ok()) return state.setup_status();
  state.EnableThrottleWait();
  return internal::RunRetryLoop<Response>(state, attempt);
}

// As above, and logs `request` when payload logging is on.
template <typename Response, typename Request, typename Attempt>
absl::StatusOr<Response> RetryLoop(const MethodInfo& method,
                                   const OptionsView& options,
                                   const Request& request, Attempt&& attempt) {
  internal::RetryLoopState state(method, options);
  if (!state.setup_status().ok()) return state.setup_status();
  internal::MaybeLogPayload(state, "request", request);
  state.EnableThrottleWait();
  return internal::RunRetryLoop<Response>(state, attempt);
}

}  // namespace stubkit

#endif  // STUBKIT_RETRY_LOOP_H_
