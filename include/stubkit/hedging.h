// Copyright 2026 The stubkit Authors.
//
// Hedging: race several attempts of an idempotent unary call.
//
// With a hedging policy the first attempt is sent at once; whenever
// `hedging_delay` passes with no answer, another is sent, up to
// `max_attempts`. The first success wins and the others are cancelled. A
// failure with a code in `non_fatal_codes` (UNAVAILABLE by default) sends the
// next hedge at once; any other failure ends the call. Hedging trades load
// for tail latency, so it is off by default and applies only to idempotent
// calls (a non-idempotent call runs once, as without hedging).
//
//   using namespace std::chrono_literals;
//   auto options = stubkit::Options{}.set<stubkit::HedgingPolicyOption>(
//       stubkit::HedgingPolicy(/*max_attempts=*/3, /*hedging_delay=*/50ms));
//   auto response = client.Get(request, options);       // sync or
//   auto future = client.AsyncGet(request, options);    // async
//
// Hedges count against a `RetryThrottleOption` bucket: each non-fatal failure
// takes a token, and no hedge is sent while the bucket is at or below half.
// The retry policy's time limit and the call's deadline bound every hedge.

#ifndef STUBKIT_HEDGING_H_
#define STUBKIT_HEDGING_H_

#include <grpcpp/client_context.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "stubkit/async_retry_loop.h"
#include "stubkit/retry_policy.h"

namespace stubkit {

class HedgingPolicy {
 public:
  // At most this many attempts in all.
  static constexpr int kMaxAttemptsLimit = 10;

  // No hedging: one attempt at a time, as the retry loop does.
  HedgingPolicy() : HedgingPolicy(1, std::chrono::nanoseconds::zero()) {}
  // `max_attempts` in [1, 10]; `hedging_delay` not negative (zero sends all
  // attempts at once); `non_fatal_codes` neither empty nor holding OK.
  HedgingPolicy(int max_attempts, std::chrono::nanoseconds hedging_delay,
                StatusCodeSet non_fatal_codes = {
                    grpc::StatusCode::UNAVAILABLE});

  int max_attempts() const { return max_attempts_; }
  std::chrono::nanoseconds hedging_delay() const { return hedging_delay_; }
  const StatusCodeSet& non_fatal_codes() const { return non_fatal_codes_; }
  bool enabled() const { return max_attempts_ > 1; }
  const absl::Status& status() const { return status_; }

 private:
  int max_attempts_;
  std::chrono::nanoseconds hedging_delay_;
  StatusCodeSet non_fatal_codes_;
  absl::Status status_;
};

struct HedgingPolicyOption {
  using Type = HedgingPolicy;
  static Type Default() { return HedgingPolicy(); }
};

namespace internal {

// The response-independent part of one hedged call.
class HedgedOperationBase
    : public std::enable_shared_from_this<HedgedOperationBase> {
 public:
  HedgedOperationBase(const MethodInfo& method, Options call, Options client);
  virtual ~HedgedOperationBase();

  void Start();

 protected:
  // Starts attempt `index` on `context`; the subclass then calls
  // `TryWin(index)` on success or `OnAttemptFailed(index, status)`.
  virtual void StartAttempt(int index, grpc::ClientContext& context,
                            const OptionsView& options) = 0;
  // Hands the result over: OK means the winner's stored response.
  virtual void Deliver(absl::Status status) = 0;

  // True when attempt `index` is the first success; the caller then stores
  // its response and calls `Deliver(OkStatus())`. The others are cancelled.
  bool TryWin(int index);
  void OnAttemptFailed(int index, const absl::Status& status);
  RetryLoopState& state() { return state_; }

 private:
  void Launch();
  void ScheduleHedge();
  void OnHedgeTimer(bool fired);
  void Finish(absl::Status status);
  void CancelOthers(int winner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Options call_;
  Options client_;
  OptionsView view_;
  absl::Mutex mu_;
  RetryLoopState state_ ABSL_GUARDED_BY(mu_);
  const HedgingPolicy& policy_;
  AsyncSleeper* sleeper_;
  std::shared_ptr<AsyncSleeper> sleeper_owner_;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts_
      ABSL_GUARDED_BY(mu_);
  std::vector<bool> done_ ABSL_GUARDED_BY(mu_);
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t timer_ ABSL_GUARDED_BY(mu_) = 0;
  bool timer_pending_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_failure_ ABSL_GUARDED_BY(mu_);
  uint64_t cancel_callback_ = 0;
};

template <typename Response>
class HedgedOperation final : public HedgedOperationBase {
 public:
  using Attempt = typename AsyncRetryOperation<Response>::Attempt;
  using Done = AsyncCallback<Response>;

  HedgedOperation(const MethodInfo& method, Options call, Options client,
                  Attempt attempt, Done done)
      : HedgedOperationBase(method, std::move(call), std::move(client)),
        attempt_(std::move(attempt)),
        done_(std::move(done)) {}

 private:
  void StartAttempt(int index, grpc::ClientContext& context,
                    const OptionsView& options) override {
    std::shared_ptr<HedgedOperation> self =
        std::static_pointer_cast<HedgedOperation>(shared_from_this());
    attempt_(context, options,
             [self, index](absl::StatusOr<Response> result) mutable {
               if (!result.ok()) {
                 self->OnAttemptFailed(index, result.status());
               } else if (self->TryWin(index)) {
                 self->response_ = *std::move(result);
                 self->Deliver(absl::OkStatus());
               }
               ReleaseOffCallbackThread(std::move(self));
             });
  }

  void Deliver(absl::Status status) override {
    DeliverOnce(done_, std::move(status), response_);
  }

  Attempt attempt_;
  Done done_;
  Response response_;
};

}  // namespace internal

// Runs one hedged call; `done` receives the result exactly once.
template <typename Response>
void AsyncHedgedCall(
    const MethodInfo& method, Options call, Options client,
    typename internal::HedgedOperation<Response>::Attempt attempt,
    AsyncCallback<Response> done) {
  auto operation = std::make_shared<internal::HedgedOperation<Response>>(
      method, std::move(call), std::move(client), std::move(attempt),
      std::move(done));
  operation->Start();
}

}  // namespace stubkit

#endif  // STUBKIT_HEDGING_H_
