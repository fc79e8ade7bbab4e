// Copyright 2026 The stubkit Authors.
//
// The asynchronous retry loop.
//
// `AsyncRetryLoop` runs one call without blocking a thread: each attempt is
// started through gRPC's callback API, and backoff waits sit in a timer
// (`AsyncSleeperOption`; by default one process-wide timer thread). The
// retry decisions are the sync loop's own (`internal::RetryLoopState`).
//
//   stubkit::AsyncRetryLoop<EchoResponse>(
//       kEchoMethod, call_options, client_options,
//       // Starts one attempt; calls `done` exactly once.
//       [stub, request](grpc::ClientContext& context,
//                       const stubkit::OptionsView& options,
//                       stubkit::AsyncCallback<EchoResponse> done) {
//         auto response = std::make_shared<EchoResponse>();
//         stub->async()->Echo(&context, &request, response.get(),
//             [response, done](grpc::Status s) {
//               if (!s.ok()) return done(stubkit::FromGrpcStatus(s));
//               done(std::move(*response));
//             });
//       },
//       [](absl::StatusOr<EchoResponse> result) { /* the call's result */ });
//
// The options are copied (cheaply: values are shared), so the caller's
// `Options` need not outlive the call. A `CancellationOption` token cancels
// the attempt in flight and any pending wait at once. In a retry throttle's
// waiting mode the call waits for the backend's recovery in the same timer;
// its next attempt then starts on the timer's thread. Callback threads:
// docs/cancellation.md; the sync form: docs/generated-code.md.

#ifndef STUBKIT_ASYNC_RETRY_LOOP_H_
#define STUBKIT_ASYNC_RETRY_LOOP_H_

#include <future>
#include <utility>

#include "absl/status/statusor.h"
#include "stubkit/async_callback.h"
#include "stubkit/internal/engine/async_retry_operation.h"
#include "stubkit/method.h"
#include "stubkit/options.h"

namespace stubkit {

// Runs one call asynchronously; `done` receives its result exactly once, on
// a gRPC or timer thread (or inline when the options are invalid).
// `attempt` is callable as `AsyncAttempt<Response>`, `done` as
// `AsyncCallback<Response>`; both are stored as they are.
template <typename Response, typename Attempt = AsyncAttempt<Response>,
          typename Done = AsyncCallback<Response>>
void AsyncRetryLoop(const MethodInfo& method, Options call, Options client,
                    Attempt attempt, Done done) {
  internal::StartAsyncRetryLoop<Response>(method, std::move(call),
                                          std::move(client), std::move(attempt),
                                          std::move(done));
}

// As above, returning a future of the result.
template <typename Response, typename Attempt = AsyncAttempt<Response>>
std::future<absl::StatusOr<Response>> AsyncRetryLoop(const MethodInfo& method,
                                                     Options call,
                                                     Options client,
                                                     Attempt attempt) {
  std::promise<absl::StatusOr<Response>> promise;
  std::future<absl::StatusOr<Response>> future = promise.get_future();
  AsyncRetryLoop<Response>(
      method, std::move(call), std::move(client), std::move(attempt),
      [promise = std::move(promise)](absl::StatusOr<Response> result) mutable {
        promise.set_value(std::move(result));
      });
  return future;
}

}  // namespace stubkit

#endif  // STUBKIT_ASYNC_RETRY_LOOP_H_
