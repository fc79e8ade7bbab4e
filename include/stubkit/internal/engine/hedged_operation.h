// Copyright 2026 The stubkit Authors.
//
// The hedged operations (`HedgedOperationBase`, its async and sync forms),
// `ShouldHedge` and `AsyncHedgedCall`. Not API: see stubkit/hedging.h.

#ifndef STUBKIT_INTERNAL_HEDGED_OPERATION_H_
#define STUBKIT_INTERNAL_HEDGED_OPERATION_H_

#include <grpcpp/client_context.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/adaptive_hedging.h"
#include "stubkit/async_callback.h"
#include "stubkit/hedging.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/base/hint_parsing.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/internal/engine/async_call.h"
#include "stubkit/internal/engine/async_retry_operation.h"
#include "stubkit/internal/engine/hedge_decision.h"
#include "stubkit/internal/engine/retry_loop_state.h"
#include "stubkit/internal/engine/retry_sources.h"
#include "stubkit/method.h"
#include "stubkit/options.h"

namespace stubkit {
namespace internal {

// True when the call should be hedged (or its hedging policy is invalid and
// the hedged path must report that).
bool ShouldHedge(const MethodInfo& method, const OptionsView& options);

// One hedged call, shared by the sync and async forms. It applies the
// decisions of stubkit/internal/engine/hedge_decision.h (which attempt to
// launch, when to arm the hedge timer, when and how the call ends) and carries
// them out. Decisions are made under `mu_`; everything that may run user code
// (the attempts, the observer, metrics, log sink, the result callback) runs
// after unlocking, and only the one thread that ended the call finishes it. The
// base's `state()` is guarded by `mu_` while the call runs; once
// `finished_` is set, only the thread that set it uses it (others only
// detach their contexts); payload logging uses it before `Begin` or from
// the winner.
class HedgedOperationBase : public AsyncCallBase {
 public:
  HedgedOperationBase(const MethodInfo& method, Options call, Options client);
  ~HedgedOperationBase() override;

 protected:
  // An attempt the calling thread must start now (`index` -1: none), on
  // `context`; after starting it (async) or before running it (sync), the
  // thread calls `ArmHedgeTimer()` when `arm_timer` says so.
  struct Next {
    int index = -1;
    grpc::ClientContext* context = nullptr;
    bool arm_timer = false;
  };

  // Validates the call and launches attempt 0. When the call ends at once
  // (invalid options, cancelled, deadline passed) it has been delivered.
  Next Begin();
  // Attempt `index` succeeded. True when it is the first success: the call
  // is then over (the others are cancelled, the observer told) and the
  // caller stores the response and calls `Complete(absl::OkStatus())`.
  bool OnAttemptSucceeded(int index);
  // Attempt `index` failed; returns the attempt to start next, if any. The
  // call may have ended (and been delivered) instead.
  Next OnAttemptFailed(int index, const absl::Status& status);
  void ArmHedgeTimer();
  // Hands the result over (`Deliver`) and records that it was.
  void Complete(absl::Status status);
  // Blocks until the result was delivered and no attempt is in flight.
  void AwaitIdle();

  // The hedge timer launched attempt `next.index`: start it (on the timer
  // thread, which must not block) and arm the timer when asked.
  virtual void StartHedge(Next next) = 0;

 private:
  enum class Outcome { kNone, kSuccess, kCancelledOrEnded, kGiveUp, kAtEnd };
  enum class TimerState { kIdle, kArming, kScheduled };
  // What a decision asks the deciding thread to do once unlocked.
  struct Step {
    Next next;
    std::string attempt_log;
    Outcome outcome = Outcome::kNone;
    int winner = -1;
    // The attempt whose status ends the call (the winner, or the failure
    // returned); -1 when none does (cancelled).
    int final_index = -1;
    int launched = 0;
    absl::Status status;
    StopReason reason = StopReason::kPermanentError;
    std::string explanation;
    uint64_t cancel_timer = 0;
    // A hedge waits for the server's pushback: the timer is being armed.
    bool hedge_pending = false;
    // The hedging budget refused a hedge of this call (for the metrics).
    bool budget_refused = false;
  };

  void LaunchLocked(Step& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a call that has nothing in flight and nothing more to launch.
  void SettleLocked(Step& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndLocked(Step& step, Outcome outcome)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Disarms the hedge timer; `step` cancels it once unlocked.
  void ResetTimerLocked(Step& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AttemptDoneLocked(int index, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies a decision that keeps the call going after the non-fatal
  // failure `status` of attempt `index`.
  void GoOnLocked(Step& step, int index, const absl::Status& status,
                  const HedgeDecision& decision, const ServerHint& hint)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the observer of every attempt but the final one (unlocked, on the
  // thread ending the call).
  void ReportAttempts(const Step& step);
  // Carries out `step` unlocked; returns the attempt to start.
  Next Perform(Step& step);
  // Ends the call `step` decided to end, all but the delivery.
  absl::Status Conclude(Step& step);
  void OnHedgeTimer(uint64_t generation, bool fired);
  // The server's hint after the failed attempt `index` (its pushback and
  // RetryInfo, as the retry loop reads them), when hints are followed.
  ServerHint HintOf(int index, const absl::Status& status);
  void OnCancel() override;
  // Admission refused a hedge: no further hedges (`throttled_`).
  void RefusedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const HedgingPolicy& policy_;
  // Null: no adaptive hedging, the fixed delay and no hedging budget.
  AdaptiveHedging* const adaptive_;
  // The hedge delay: the policy's, fixed, or the adaptive percentile.
  FixedHedgeDelay fixed_delay_;
  std::optional<AdaptiveHedgeDelay> adaptive_delay_;
  HedgeDelaySource* delays_ = &fixed_delay_;  // asked under mu_
  // The retry throttle and budget, if any, then the hedging budget; the
  // decisions ask `admission_`, all of them that are set (under mu_).
  CallAdmission call_admission_;
  std::optional<BudgetAdmission> hedge_budget_;
  std::optional<BothAdmission> both_;
  AdmissionSource* admission_ = nullptr;

  Mutex mu_;
  // Signalled when the result is delivered or an attempt ends (AwaitIdle).
  CondVar idle_;
  // Fixed size: contexts never move, so a launched one is used unlocked.
  std::array<std::unique_ptr<grpc::ClientContext>,
             HedgingPolicy::kMaxAttemptsLimit>
      contexts_;
  std::array<Clock::time_point, HedgingPolicy::kMaxAttemptsLimit> starts_
      ABSL_GUARDED_BY(mu_);
  std::array<Clock::time_point, HedgingPolicy::kMaxAttemptsLimit> deadlines_
      ABSL_GUARDED_BY(mu_);
  std::array<bool, HedgingPolicy::kMaxAttemptsLimit> done_
      ABSL_GUARDED_BY(mu_) = {};
  // For the observer: each attempt's status and end, and whether it ended
  // after the call did (a loser).
  std::array<absl::Status, HedgingPolicy::kMaxAttemptsLimit> results_
      ABSL_GUARDED_BY(mu_);
  std::array<Clock::time_point, HedgingPolicy::kMaxAttemptsLimit> ends_
      ABSL_GUARDED_BY(mu_);
  std::array<bool, HedgingPolicy::kMaxAttemptsLimit> late_
      ABSL_GUARDED_BY(mu_) = {};
  std::array<bool, HedgingPolicy::kMaxAttemptsLimit> sent_
      ABSL_GUARDED_BY(mu_) = {};
  // For the observer: the wait a server's hint put before the hedge after
  // an attempt (kHedgeAfter), and the hint's kind.
  std::array<std::chrono::nanoseconds, HedgingPolicy::kMaxAttemptsLimit> waits_
      ABSL_GUARDED_BY(mu_) = {};
  std::array<WaitReason, HedgingPolicy::kMaxAttemptsLimit> wait_reasons_
      ABSL_GUARDED_BY(mu_) = {};
  int last_failure_index_ ABSL_GUARDED_BY(mu_) = -1;
  int launched_ ABSL_GUARDED_BY(mu_) = 0;
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool delivered_ ABSL_GUARDED_BY(mu_) = false;
  bool throttled_ ABSL_GUARDED_BY(mu_) = false;
  bool budget_refused_ ABSL_GUARDED_BY(mu_) = false;
  // Why admission refused a hedge (throttled_), for the summary.
  std::string refusal_ ABSL_GUARDED_BY(mu_);
  // The server's hint ruled out a retry: no further hedges (A6). Why: a
  // "don't retry" pushback, or a wait past ServerHintCeilingOption.
  bool pushed_back_ ABSL_GUARDED_BY(mu_) = false;
  std::string server_refusal_ ABSL_GUARDED_BY(mu_);
  // The server's pushback asked to wait past the call's end.
  bool pushback_past_end_ ABSL_GUARDED_BY(mu_) = false;
  // The wait of the arming under way: the hedging delay or a pushback.
  std::chrono::nanoseconds timer_delay_ ABSL_GUARDED_BY(mu_){0};
  absl::Status last_failure_ ABSL_GUARDED_BY(mu_);
  TimerState timer_ ABSL_GUARDED_BY(mu_) = TimerState::kIdle;
  // Identifies one arming of the timer; a callback of another is stale.
  uint64_t timer_generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t timer_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cancel_callback_ ABSL_GUARDED_BY(mu_) = 0;
};

// The async form: attempts through the async attempt callable.
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

  void Start() { Launch(Begin()); }

 private:
  void Launch(Next next) {
    if (next.index < 0) return;
    std::shared_ptr<HedgedOperation> self =
        std::static_pointer_cast<HedgedOperation>(shared_from_this());
    const int index = next.index;
    // Here, not in the locked launch: the hook is user code.
    RunContextSetup(*next.context, options());
    attempt_(*next.context, options(),
             [self, index](absl::StatusOr<Response> result) mutable {
               if (!result.ok()) {
                 self->Launch(self->OnAttemptFailed(index, result.status()));
               } else if (self->OnAttemptSucceeded(index)) {
                 MaybeLogPayload(self->state(), "response", *result);
                 self->response_ = *std::move(result);
                 self->Complete(absl::OkStatus());
               }
             });
    if (next.arm_timer) ArmHedgeTimer();
  }

  void StartHedge(Next next) override { Launch(next); }

  void Deliver(absl::Status status) override {
    DeliverOnce(done_, std::move(status), response_);
  }

  Attempt attempt_;
  Done done_;
  Response response_;
};

// The sync form: attempts through the sync attempt callable, which returns
// `absl::StatusOr<Response>` for a `grpc::ClientContext&` and may run on
// several threads at once. Attempt 1, and any attempt sent at once after a
// failure, runs on the thread whose attempt just ended (the caller's to
// begin with); a hedge sent by the timer gets a thread of its own. So a call
// answered before the first hedging delay starts no thread. Losers are
// cancelled with `ClientContext::TryCancel`, and `Run` returns only after
// every attempt has returned: the attempt may refer to the caller's stack.
template <typename Response, typename Attempt>
class SyncHedgedOperation final : public HedgedOperationBase {
 public:
  SyncHedgedOperation(const MethodInfo& method, Options call, Options client,
                      Attempt& attempt)
      : HedgedOperationBase(method, std::move(call), std::move(client)),
        attempt_(attempt) {}

  template <typename Request>
  absl::StatusOr<Response> Run(const Request& request) {
    MaybeLogPayload(state(), "request", request);
    RunAttempts(Begin());
    AwaitIdle();
    std::vector<std::thread> threads;
    {
      MutexLock lock(&threads_mu_);
      threads.swap(threads_);
    }
    for (std::thread& thread : threads) thread.join();
    if (!final_status_.ok()) return std::move(final_status_);
    return std::move(response_);
  }

 private:
  // Runs `next`, then whatever attempt its failure sends at once, and so on.
  void RunAttempts(Next next) {
    while (next.index >= 0) {
      if (next.arm_timer) ArmHedgeTimer();
      // Here, not in the locked launch: the hook is user code.
      RunContextSetup(*next.context, options());
      absl::StatusOr<Response> result = attempt_(*next.context);
      if (result.ok()) {
        if (OnAttemptSucceeded(next.index)) {
          MaybeLogPayload(state(), "response", *result);
          response_ = *std::move(result);
          Complete(absl::OkStatus());
        }
        return;
      }
      next = OnAttemptFailed(next.index, result.status());
    }
  }

  void StartHedge(Next next) override {
    // Armed here: the new thread's attempt may block at once.
    if (next.arm_timer) ArmHedgeTimer();
    next.arm_timer = false;
    auto self =
        std::static_pointer_cast<SyncHedgedOperation>(shared_from_this());
    bool started = true;
    {
      // Held while the thread starts, so `Run` cannot take the list before
      // the thread is in it.
      MutexLock lock(&threads_mu_);
      try {
        threads_.emplace_back([self, next] { self->RunAttempts(next); });
      } catch (const std::system_error&) {
        started = false;
      }
    }
    if (!started) {
      Next after = OnAttemptFailed(
          next.index, absl::ResourceExhaustedError(
                          "stubkit: no thread for a hedged attempt"));
      if (after.index >= 0) StartHedge(after);
    }
  }

  void Deliver(absl::Status status) override {
    final_status_ = std::move(status);
  }

  Attempt& attempt_;
  // Written before `Complete`, read after `AwaitIdle`.
  absl::Status final_status_;
  Response response_;
  Mutex threads_mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(threads_mu_);
};

// Runs one hedged call; `done` receives the result exactly once, on a gRPC
// or timer thread (or inline when the call ends before anything is sent).
template <typename Response>
void AsyncHedgedCall(const MethodInfo& method, Options call, Options client,
                     typename HedgedOperation<Response>::Attempt attempt,
                     AsyncCallback<Response> done) {
  auto operation = std::make_shared<HedgedOperation<Response>>(
      method, std::move(call), std::move(client), std::move(attempt),
      std::move(done));
  operation->Start();
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_HEDGED_OPERATION_H_
