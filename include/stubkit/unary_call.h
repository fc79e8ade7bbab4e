// Copyright 2026 The stubkit Authors.
//
// The entry points generated connections use for unary calls.
//
// They pick the loop for a call: the retry loop, or — when a
// `HedgingPolicyOption` is set and the call is idempotent — hedging. The sync
// form takes the per-attempt call inline (no allocation on the success path)
// and a factory for an owning async attempt, built only when hedging needs
// one:
//
//   return stubkit::internal::RunUnary<Resp>(
//       kMethod, options, request,
//       [&](grpc::ClientContext& context) { return stub->M(context, ...); },
//       [&] { return MakeAsyncAttempt(request); });
//
// Not for direct use; see `stubkit/retry_loop.h` and `stubkit/hedging.h`.

#ifndef STUBKIT_UNARY_CALL_H_
#define STUBKIT_UNARY_CALL_H_

#include <future>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/hedging.h"
#include "stubkit/retry_loop.h"

namespace stubkit {
namespace internal {

// True when the call should be hedged (or its hedging policy is invalid and
// the hedged path must report that).
bool ShouldHedge(const MethodInfo& method, const OptionsView& options);

template <typename Response, typename Request, typename Attempt,
          typename MakeAsyncAttempt>
absl::StatusOr<Response> RunUnary(const MethodInfo& method,
                                  const OptionsView& options,
                                  const Request& request, Attempt&& attempt,
                                  MakeAsyncAttempt&& make_async_attempt) {
  if (ShouldHedge(method, options)) {
    auto promise = std::make_shared<std::promise<absl::StatusOr<Response>>>();
    std::future<absl::StatusOr<Response>> future = promise->get_future();
    AsyncHedgedCall<Response>(method, options.call(), options.client(),
                              make_async_attempt(),
                              [promise](absl::StatusOr<Response> result) {
                                promise->set_value(std::move(result));
                              });
    return future.get();
  }
  return RetryLoop<Response>(method, options, request,
                             std::forward<Attempt>(attempt));
}

template <typename Response>
void RunAsyncUnary(const MethodInfo& method, const OptionsView& options,
                   typename AsyncRetryOperation<Response>::Attempt attempt,
                   AsyncCallback<Response> done) {
  if (ShouldHedge(method, options)) {
    AsyncHedgedCall<Response>(method, options.call(), options.client(),
                              std::move(attempt), std::move(done));
    return;
  }
  AsyncRetryLoop<Response>(method, options.call(), options.client(),
                           std::move(attempt), std::move(done));
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_UNARY_CALL_H_
