// Copyright 2026 The stubkit Authors.
//
// The decision state of one call (`RetryLoopState`), shared by the sync,
// async, hedged and stream loops, and the sync loop's body. Not API: see
// stubkit/retry_loop.h.

#ifndef STUBKIT_INTERNAL_RETRY_LOOP_STATE_H_
#define STUBKIT_INTERNAL_RETRY_LOOP_STATE_H_

#include <google/protobuf/message.h>
#include <grpcpp/client_context.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/call_options.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/internal/api/attempt_context.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/engine/call_reporter.h"
#include "stubkit/internal/engine/call_wait.h"
#include "stubkit/internal/engine/retry_decision.h"
#include "stubkit/internal/engine/retry_sources.h"
#include "stubkit/internal/engine/validate_options.h"
#include "stubkit/logging.h"
#include "stubkit/method.h"
#include "stubkit/metrics.h"
#include "stubkit/options.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_observer.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_policy.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_hints.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

// Whether a call of `method` with `options` may be repeated: the call's
// `IdempotencyOption` (where a generated client also puts what a request-aware
// predicate decided, see stubkit/method_options.h), else the client's
// `IdempotencyMapOption`, else the proto's.
bool IsIdempotent(const MethodInfo& method, const OptionsView& options);

// What a call's options hand its loop: read once, when the call starts.
struct CallSources {
  const Clock* clock = nullptr;  // null: std::chrono::steady_clock
  Sleeper* sleeper = nullptr;    // null: std::this_thread::sleep_for
  RetryThrottle* throttle = nullptr;
  // Deposited into once, when the first attempt starts.
  RetryBudget* budget = nullptr;
  CancellationToken* cancel = nullptr;
  ResponseMetadata* response_metadata = nullptr;
};

// How far a call got: its attempts, and how the last one ended for the
// reports that follow it.
struct CallProgress {
  Clock::time_point start;
  int attempts = 0;
  int resumes = 0;        // streams: breaks the resume hook accepted
  int final_attempt = 0;  // the final event's attempt; 0: attempts
  bool hedged = false;
  // With an observer: the context of the attempt `FinishAttempt` ended, for
  // the next event only (cleared once notified and when an attempt starts).
  const grpc::ClientContext* finished_context = nullptr;
  // The attempt running started on the channel's return (for its event).
  bool on_reconnect = false;
  // BoundEstablishment: the attempt timeout ends at the first response.
  bool establish_only = false;
  std::chrono::nanoseconds establish_timeout{0};
  // PrepareAttempt refused: the call's end had passed, or (too_little_time)
  // less than MinAttemptTimeOption was left.
  bool ended_before_attempt = false;
  bool too_little_time = false;
  // The failure a wait followed: the call's result if that wait wakes past
  // the call's end (a late wake-up must not change what the caller gets).
  absl::Status last_failure;
};

// The decision state of one call: shared by every loop flavour, so the
// decision table exists once.
class RetryLoopState {
 public:
  using time_point = Clock::time_point;

  RetryLoopState(const MethodInfo& method, const OptionsView& options);
  // Leaves the throttle's wait, if the call is still in it.
  ~RetryLoopState();
  RetryLoopState(const RetryLoopState&) = delete;
  RetryLoopState& operator=(const RetryLoopState&) = delete;

  // Non-OK when the options are invalid; the call must return it unsent.
  const absl::Status& setup_status() const { return setup_status_; }

  // Starts the next attempt: sets `context`'s deadline, metadata and the
  // settings of stubkit/call_options.h but for the setup hook. Returns
  // false when the call was cancelled or its end (deadline, total timeout,
  // policy time limit) already passed, so the attempt would be doomed; the
  // call must then return `Cancelled()`. With `deferred_log` the attempt's
  // log line is stored there instead of written (for a caller holding a
  // lock: it writes it with `WriteLog` after unlocking).
  bool PrepareAttempt(grpc::ClientContext& context,
                      std::string* deferred_log = nullptr);
  // Runs the `ContextSetupOption` hook on a prepared `context`: last, after
  // any adjustment of the caller's own (a stream's deadline), unlocked,
  // right before the attempt starts. Reads only the options: any thread.
  void RunContextSetup(grpc::ClientContext& context) const {
    if (!NothingSet(options_)) internal::RunContextSetup(context, options_);
  }
  // Ends the attempt started with `context`, after its call is over and
  // before `context` is destroyed. With `record_metadata` it fills the
  // `ResponseMetadataOption`, if set: the last attempt finished wins.
  void FinishAttempt(grpc::ClientContext& context, bool record_metadata = true);

  // Records a successful attempt; the call is over.
  void OnSuccess();

  // Decides after a failed attempt (RunRetryDecision in
  // stubkit/internal/engine/retry_sources.h) and reports the decision. Returns
  // true to retry after `*wait`; false to stop, with the status to return
  // in `*final_status`.
  bool OnFailure(const absl::Status& status, const grpc::ClientContext& context,
                 absl::Status* final_status, std::chrono::nanoseconds* wait);
  // OnFailure for a stream that can go on only through its resume hook
  // (DecideStreamFailure in stubkit/internal/engine/stream_retry.h): the
  // decision comes first, and `resume` (which runs the hook) only when it is to
  // retry, so that a stream that stops anyway never runs the user's hook.
  // `resume` returning false (the hook declined) stops the call,
  // kNotResumable, "not resumed: the stream " + `declined`.
  bool OnFailure(const absl::Status& status, const grpc::ClientContext& context,
                 absl::FunctionRef<bool()> resume, absl::string_view declined,
                 absl::Status* final_status, std::chrono::nanoseconds* wait);

  // For streams, before the first `PrepareAttempt`: a stream's attempt is
  // not bounded by the retry policy's time limit (the policy bounds how long
  // stubkit keeps reopening it), so each attempt's deadline is min(the
  // call's own end, attempt start + AttemptTimeoutOption), on this state's
  // clock like every other (stubkit/internal/engine/deadline.h). `OnFailure`
  // classifies DEADLINE_EXCEEDED against it: the call's end stops with
  // kDeadline, the attempt timeout is retried as in unary calls.
  void UseStreamDeadlines() { facts_.stream = true; }

  // For server and bidi streams, after `UseStreamDeadlines`: the attempt
  // timeout bounds only the time until an attempt is established (its first
  // response), as gRPC's perAttemptRecvTimeout does, not its whole life.
  // `PrepareAttempt` then gives the context the call's end alone, and the
  // driver runs a timer of `establish_timeout()` (EstablishTimer in
  // stubkit/internal/engine/stream_retry.h) until `OnEstablished`.
  void BoundEstablishment() { progress_.establish_only = true; }
  // After `PrepareAttempt`: how long the attempt has to be established;
  // zero when nothing but the call's end bounds it (no timer).
  std::chrono::nanoseconds establish_timeout() const {
    return progress_.establish_timeout;
  }
  // The attempt received its first response: only the call's end bounds it
  // from now on, and a DEADLINE_EXCEEDED is classified against that.
  void OnEstablished() { facts_.attempt_deadline = AttemptBound(facts_); }
  // The driver's timer cancelled the attempt before it was established: the
  // status to decide with, DEADLINE_EXCEEDED, classified as the attempt's
  // own timeout (retryable), as a unary attempt's expired deadline is.
  absl::Status EstablishTimedOut();

  // For resumable streams, at a resume through the hook (progress: the
  // stream delivered messages, or a client stream's writes went past what
  // can be replayed): the retry policy (time limit and error count) and the
  // backoff start again from now, so a stream open for hours can still
  // resume. The call's own
  // end (TotalTimeoutOption, DeadlineOption, counted from the call's start)
  // stays: it bounds the whole life of the stream.
  void RestartPolicy();

  // For resumable streams, when the resume hook accepted a break: the
  // final status's summary says how many times the stream was resumed.
  void CountResume() { ++progress_.resumes; }

  // For streams that delivered messages in the failed attempt and may not
  // resume (no resume hook, or it declined): reopening would repeat them,
  // so the next `OnFailure` stops as for a non-idempotent call, with
  // `why` (a string literal) in the summary. Set before that `OnFailure`.
  void ForbidRepeat(absl::string_view why) { facts_.repeat_forbidden = why; }

  // Waits through the configured sleeper. Returns false when the call was
  // cancelled; it must then return `Cancelled()`. A wait that follows the
  // channel (`channel_follow().active()`, with no SleeperOption) ends early
  // when the channel is ready again
  // (stubkit/internal/engine/connection_channel.h).
  bool Sleep(std::chrono::nanoseconds wait);

  // The channel of the call's connection, for loops that follow it (sync
  // and async unary). After `OnFailure` returned true, `active()` says
  // whether the wait it chose may end early when the channel is ready again
  // (a backoff wait after UNAVAILABLE, with a channel).
  ChannelFollow& channel_follow() { return wait_.follow(); }
  // The wait `OnFailure` chose ended early because the channel is ready
  // again: only its elapsed part counts as retry delay, and the next
  // attempt's observer event says so (`AttemptEvent::started_on_reconnect`).
  void OnChannelReady();

  // The throttle's waiting mode (stubkit/retry_throttle.h), for loops that
  // support it (sync and async unary calls and streams; not hedged calls)
  // and call this before the first
  // attempt. Then `OnFailure` may return true with the call in the
  // throttle's wait (`waiting_for_throttle()`): after each wait the loop
  // calls `AfterThrottleWait`, which says whether to attempt now, wait
  // `*wait` more, or stop with `*final_status`. A cancelled wait returns
  // `Cancelled()` as any other, which also leaves the throttle's wait.
  void EnableThrottleWait() { wait_.throttle().Enable(); }
  bool waiting_for_throttle() const { return wait_.throttle().waiting(); }
  enum class ThrottleStep { kAttempt, kWait, kStop };
  ThrottleStep AfterThrottleWait(absl::Status* final_status,
                                 std::chrono::nanoseconds* wait);

  // The status of a call cancelled through its `CancellationOption`; or,
  // after `PrepareAttempt` refused because the call's end had passed, the
  // failure the last wait followed (a wait that woke late), else
  // DEADLINE_EXCEEDED; either with the end's stop reason.
  absl::Status Cancelled();
  CancellationToken* cancellation() const { return sources_.cancel; }

  // Ends the call with `status` for `reason` (observer, metrics and logs
  // see it as the final attempt) and returns the status to hand back. For
  // loops with decisions of their own, such as hedging.
  absl::Status GiveUp(const absl::Status& status, StopReason reason,
                      absl::string_view explanation);
  // GiveUp while the call waits to retry (or before the attempt after the
  // wait did anything), for a reason of the loop's own: as for a cancel,
  // only the part of the wait that passed counts as retry delay.
  absl::Status GiveUpWaiting(const absl::Status& status, StopReason reason,
                             absl::string_view explanation);
  RetryThrottle* throttle() const { return sources_.throttle; }
  RetryBudget* budget() const { return sources_.budget; }
  // Whether server hints (pushback, RetryInfo) are followed.
  bool use_hints() const { return waits_.use_hints(); }
  // The state's clock (ClockOption, else the steady clock).
  time_point now() const;
  // ClockOption's clock; null for the steady clock.
  const Clock* clock() const { return sources_.clock; }

  // The call's budget as the decision sees it: idempotency, the call's end
  // (`end`: the earliest of the policy time limit, the total timeout and
  // the deadline, or time_point::max()), and the last attempt
  // `PrepareAttempt` started (`attempt_start`, `attempt_deadline`), which
  // loops running attempts side by side (hedging) read.
  const FailureFacts& facts() const { return facts_; }
  // Ends the call because its end was reached: `status` with the end's stop
  // reason (deadline or retry policy).
  absl::Status GiveUpAtEnd(const absl::Status& status);
  // Observer, logs and metrics (a line `PrepareAttempt` deferred is
  // written at kRpc; payloads are logged through it).
  const CallReporter& reporter() const { return reporter_; }

  int attempts() const { return progress_.attempts; }
  // For hedging: attempts after the first are hedges, not retries (gRPC
  // A96), in the metrics.
  void MarkHedged() { progress_.hedged = true; }
  // For hedging: the attempt the final event describes (by default the last
  // one prepared).
  void SetFinalAttempt(int attempt, time_point its_start) {
    progress_.final_attempt = attempt;
    facts_.attempt_start = its_start;
  }
  time_point start() const { return progress_.start; }

 private:
  void Setup(const OptionsView& options);
  // Setup's lookups whose defaults leave the sources and facts as they
  // were initialized: skipped when nothing is set.
  void SetupSources(const OptionsView& options);
  // The decision after a failed attempt seen at `now`, before it is
  // reported; `trailers`: its server's (ServerTrailers).
  RetryDecision Decide(const absl::Status& status,
                       const ServerTrailerMap* trailers, time_point now);
  // Tells the observer, the logs and the loop what `decision` is.
  bool Report(const absl::Status& status, const RetryDecision& decision,
              time_point now, absl::Status* final_status,
              std::chrono::nanoseconds* wait);
  bool Stop(const absl::Status& status, StopReason reason,
            absl::string_view explanation, time_point now,
            absl::Status* final_status);
  // The attempt that just ended (the final event's, with `final`), for the
  // reporter; hands over the finished attempt's context once.
  EndedAttempt Ended(const absl::Status& status, time_point now, bool final);
  CallTotals Totals(time_point now) const;
  // Enters the throttle's wait after `status`; returns the first poll delay.
  std::chrono::nanoseconds BeginThrottleWait(const absl::Status& status,
                                             time_point now);

  // A copy: the caller's MethodInfo may be a local that an async call or a
  // stream outlives.
  const MethodInfo method_;
  const RetryPolicy& retry_policy_;
  const OptionsView& options_;
  // Before waits_, which refers to it.
  CallReporter reporter_;
  // The decision's wait source; its backoff state lasts for the call.
  BackoffWaits waits_;
  CallSources sources_;
  absl::Status setup_status_;
  // What the decision reads, kept up to date (but for `now` and `cancelled`,
  // set per failure): idempotency, the call's ends, the attempt's deadline,
  // the failures counted, a stream's refusal to repeat.
  FailureFacts facts_;
  CallProgress progress_;
  // The retry delay, the throttle's wait and the channel followed.
  CallWait wait_;
};

template <typename T>
void MaybeLogPayload(const RetryLoopState& state, absl::string_view what,
                     const T& value) {
  if constexpr (std::is_base_of_v<google::protobuf::Message, T>) {
    if (state.reporter().log_payloads()) {
      state.reporter().LogPayload(what, value);
    }
  }
}

template <typename Response, typename Attempt>
absl::StatusOr<Response> RunRetryLoop(RetryLoopState& state, Attempt& attempt) {
  for (;;) {
    grpc::ClientContext context;
    if (!state.PrepareAttempt(context)) return state.Cancelled();
    state.RunContextSetup(context);
    absl::StatusOr<Response> result = attempt(context);
    state.FinishAttempt(context);
    if (result.ok()) {
      state.OnSuccess();
      MaybeLogPayload(state, "response", *result);
      return result;
    }
    absl::Status final_status;
    std::chrono::nanoseconds wait;
    if (!state.OnFailure(result.status(), context, &final_status, &wait)) {
      return final_status;
    }
    for (;;) {
      if (!state.Sleep(wait)) return state.Cancelled();
      if (!state.waiting_for_throttle()) break;
      const auto step = state.AfterThrottleWait(&final_status, &wait);
      if (step == RetryLoopState::ThrottleStep::kAttempt) break;
      if (step == RetryLoopState::ThrottleStep::kStop) return final_status;
    }
  }
}

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_RETRY_LOOP_STATE_H_
