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
// The attempt is a template parameter, not a `std::function`, and the loop's
// state lives on the stack: the success path allocates nothing of its own.

#ifndef STUBKIT_RETRY_LOOP_H_
#define STUBKIT_RETRY_LOOP_H_

#include <chrono>
#include <utility>

#include <grpcpp/client_context.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/clock.h"
#include "stubkit/method.h"
#include "stubkit/options.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

// The decision state of one call: shared by every loop flavour, so the
// decision table exists once.
class RetryLoopState {
 public:
  using time_point = Clock::time_point;

  RetryLoopState(const MethodInfo& method, const OptionsView& options);
  RetryLoopState(const RetryLoopState&) = delete;
  RetryLoopState& operator=(const RetryLoopState&) = delete;

  // Non-OK when the options are invalid; the call must return it unsent.
  const absl::Status& setup_status() const { return setup_status_; }

  // Starts the next attempt: sets `context`'s deadline and metadata.
  void PrepareAttempt(grpc::ClientContext& context);

  // Decides after a failed attempt. Returns true to retry after `*wait`;
  // false to stop, with the status to return in `*final_status`.
  bool OnFailure(const absl::Status& status,
                 const grpc::ClientContext& context, absl::Status* final_status,
                 std::chrono::nanoseconds* wait);

  // Waits through the configured sleeper.
  void Sleep(std::chrono::nanoseconds wait);

  int attempts() const { return attempts_; }
  bool idempotent() const { return idempotent_; }
  time_point start() const { return start_; }
  // The call's end: the earliest of the policy time limit, the total
  // timeout and the deadline, or time_point::max().
  time_point end() const { return end_; }

 private:
  time_point Now() const;
  absl::Status Stop(const absl::Status& status, StopReason reason,
                    absl::string_view explanation, time_point now) const;

  const MethodInfo& method_;
  const RetryPolicy& retry_policy_;
  const ExponentialBackoffPolicy& backoff_policy_;
  const OptionsView& options_;
  const Clock* clock_;  // null: std::chrono::steady_clock
  Sleeper* sleeper_;    // null: std::this_thread::sleep_for
  absl::Status setup_status_;
  bool idempotent_ = false;
  time_point start_;
  time_point end_ = time_point::max();
  StopReason end_reason_ = StopReason::kExhausted;
  time_point attempt_deadline_ = time_point::max();
  int attempts_ = 0;
  int failures_ = 0;
};

}  // namespace internal

// Runs `attempt` (callable as `absl::StatusOr<Response>(grpc::ClientContext&)`)
// under the retry, backoff and idempotency rules of `options`.
template <typename Response, typename Attempt>
absl::StatusOr<Response> RetryLoop(const MethodInfo& method,
                                   const OptionsView& options,
                                   Attempt&& attempt) {
  internal::RetryLoopState state(method, options);
  if (!state.setup_status().ok()) return state.setup_status();
  for (;;) {
    grpc::ClientContext context;
    state.PrepareAttempt(context);
    absl::StatusOr<Response> result = attempt(context);
    if (result.ok()) return result;
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    if (!state.OnFailure(result.status(), context, &final_status, &wait)) {
      return final_status;
    }
    state.Sleep(wait);
  }
}

}  // namespace stubkit

#endif  // STUBKIT_RETRY_LOOP_H_
