// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/hedged_operation.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/internal/api/attempt_context.h"
#include "stubkit/internal/base/hint_parsing.h"
#include "stubkit/server_hints.h"

namespace stubkit {

namespace internal {
namespace {

// Once the call has ended and before its final event: tells the observer
// of attempt `attempt` (from 1), which ran from `its_start` to `its_end` and
// is not the one the final event describes. `context` is null for a loser
// still running.
void NotifyHedgedAttempt(const RetryLoopState& state, int attempt,
                         Clock::time_point its_start, Clock::time_point its_end,
                         const absl::Status& status, bool hedge_loser,
                         const grpc::ClientContext* context,
                         std::chrono::nanoseconds wait = {},
                         WaitReason wait_reason = WaitReason::kNone) {
  EndedAttempt ended;
  ended.attempt = attempt;
  ended.status = status;
  ended.attempt_start = its_start;
  ended.now = its_end;
  ended.call_start = state.start();
  ended.context = context;
  ended.hedge_loser = hedge_loser;
  state.reporter().OnHedgedAttempt(ended, ReportedWait{wait, wait_reason});
}

}  // namespace

bool ShouldHedge(const MethodInfo& method, const OptionsView& options) {
  const HedgingPolicy* policy = options.find<HedgingPolicyOption>();
  if (policy == nullptr) return false;
  if (!policy->status().ok()) return true;
  return policy->enabled() && IsIdempotent(method, options);
}

HedgedOperationBase::HedgedOperationBase(const MethodInfo& method, Options call,
                                         Options client)
    : AsyncCallBase(method, std::move(call), std::move(client)),
      policy_(options().get<HedgingPolicyOption>()),
      adaptive_(options().get<AdaptiveHedgingOption>().get()),
      fixed_delay_(policy_.hedging_delay()),
      // Hedged calls have no throttle waiting mode: a refusal ends the
      // hedges.
      call_admission_(state().throttle(), /*wait_enabled=*/false,
                      state().budget(), state().clock()) {
  state().MarkHedged();
  admission_ = call_admission_.get();
  if (adaptive_ == nullptr || !adaptive_->status().ok()) return;
  delays_ = &adaptive_delay_.emplace(*adaptive_, policy_.hedging_delay());
  admission_ = &hedge_budget_.emplace(adaptive_->budget(), state().clock(),
                                      BudgetAdmission::Spends::kHedges);
  if (AdmissionSource* call = call_admission_.get()) {
    admission_ = &both_.emplace(*call, *hedge_budget_);
  }
}

HedgedOperationBase::~HedgedOperationBase() = default;

HedgedOperationBase::Next HedgedOperationBase::Begin() {
  // Nothing else runs yet: no lock needed to end the call here.
  absl::Status invalid = state().setup_status();
  if (invalid.ok() && !policy_.status().ok()) {
    invalid = state().GiveUp(policy_.status(), StopReason::kInvalidArgument,
                             "invalid options, nothing was sent");
  }
  // Only a hedged call reads it, so only a hedged call fails for it.
  if (invalid.ok() && adaptive_ != nullptr && !adaptive_->status().ok()) {
    invalid = state().GiveUp(adaptive_->status(), StopReason::kInvalidArgument,
                             "invalid options, nothing was sent");
  }
  if (!invalid.ok()) {
    {
      MutexLock lock(&mu_);
      finished_ = true;
    }
    Complete(std::move(invalid));
    return Next{};
  }
  // Runs OnCancel inline when the token is already cancelled.
  if (const uint64_t id = WatchCancellation(); id != 0) {
    MutexLock lock(&mu_);
    cancel_callback_ = id;
  }
  Step step;
  {
    MutexLock lock(&mu_);
    LaunchLocked(step);
  }
  return Perform(step);
}

void HedgedOperationBase::LaunchLocked(Step& step) {
  if (finished_) return;
  const int index = launched_;
  switch (RunHedgeLaunch(index, policy_.max_attempts(), pushed_back_,
                         throttled_, admission_)) {
    case HedgeLaunch::kLaunch:
      break;
    case HedgeLaunch::kThrottled:
      // The call goes on with the attempts it has; an earlier refusal
      // keeps its reason.
      if (!throttled_) RefusedLocked();
      return;
    case HedgeLaunch::kNoneLeft:
    case HedgeLaunch::kPushedBack:
    case HedgeLaunch::kAskAdmission:  // RunHedgeLaunch asked: never returned
      return;
  }
  contexts_[index] = std::make_unique<grpc::ClientContext>();
  ++launched_;
  if (!state().PrepareAttempt(*contexts_[index], &step.attempt_log)) {
    // Cancelled, or the call's end passed: nothing more may be sent.
    done_[index] = true;
    EndLocked(step, Outcome::kCancelledOrEnded);
    return;
  }
  sent_[index] = true;
  starts_[index] = state().facts().attempt_start;
  // The hedging budget counts calls: the first attempt deposits.
  if (index == 0 && hedge_budget_) adaptive_->budget().Deposit(starts_[0]);
  deadlines_[index] = state().facts().attempt_deadline;
  ++outstanding_;
  step.next = Next{index, contexts_[index].get(), false};
  // Arm the hedge timer unless it is armed or no hedge is left. No hedge is
  // started past the call's end.
  if (timer_ == TimerState::kIdle && launched_ < policy_.max_attempts()) {
    const Clock::time_point now = state().now();
    const std::chrono::nanoseconds delay = delays_->NextDelay(launched_, now);
    if (HedgeStartsInTime(now, state().facts().end, delay)) {
      timer_ = TimerState::kArming;
      ++timer_generation_;
      timer_delay_ = delay;
      step.next.arm_timer = true;
    }
  }
}

void HedgedOperationBase::RefusedLocked() {
  throttled_ = true;
  refusal_ = admission_->Refusal();
  if (hedge_budget_ && admission_->Refuser() == &*hedge_budget_) {
    budget_refused_ = true;
  }
}

void HedgedOperationBase::SettleLocked(Step& step) {
  if (finished_ || outstanding_ > 0 || step.next.index >= 0 ||
      step.hedge_pending) {
    return;
  }
  // Nothing in flight and nothing could be launched: a pending hedge timer
  // would find the same, so end now rather than never.
  step.status = last_failure_.ok()
                    ? absl::UnavailableError("no hedged attempt could be sent")
                    : last_failure_;
  if (pushback_past_end_ && !throttled_ && !pushed_back_) {
    // As the retry loop stops when its next wait would pass the call's end.
    EndLocked(step, Outcome::kAtEnd);
    return;
  }
  if (throttled_) {
    step.reason = StopReason::kThrottled;
    // "gave up: retry throttled (...)" or "gave up: retry budget spent
    // (...)", then what it meant here.
    step.explanation = absl::StrCat(refusal_, ", no more hedges");
  } else if (pushed_back_) {
    step.reason = StopReason::kServerRefused;
    // As the retry loop says it: a "don't retry", or a wait past the
    // ceiling.
    step.explanation =
        absl::StrCat("gave up: ", server_refusal_, ", no more hedges");
  } else {
    step.reason = StopReason::kExhausted;
    step.explanation =
        absl::StrCat("gave up: all ", launched_, " hedged attempts failed");
  }
  EndLocked(step, Outcome::kGiveUp);
}

void HedgedOperationBase::EndLocked(Step& step, Outcome outcome) {
  finished_ = true;
  step.outcome = outcome;
  step.launched = launched_;
  step.budget_refused = budget_refused_;
  ResetTimerLocked(step);
}

void HedgedOperationBase::ResetTimerLocked(Step& step) {
  if (timer_ == TimerState::kScheduled) step.cancel_timer = timer_id_;
  // A callback of the old arming (or an arming under way) is now stale.
  if (timer_ != TimerState::kIdle) ++timer_generation_;
  timer_ = TimerState::kIdle;
}

void HedgedOperationBase::AttemptDoneLocked(int index,
                                            const absl::Status& status) {
  done_[index] = true;
  if (state().reporter().has_observer()) {
    results_[index] = status;
    ends_[index] = state().now();
    late_[index] = finished_;
  }
  --outstanding_;
  if (outstanding_ == 0) idle_.NotifyAll();
  // Only attempts that end before the call does: a loser cancelled after
  // the winner must not replace its metadata (nor write after delivery).
  state().FinishAttempt(*contexts_[index], /*record_metadata=*/!finished_);
}

HedgedOperationBase::Next HedgedOperationBase::Perform(Step& step) {
  if (!step.attempt_log.empty())
    state().reporter().Log(LogLevel::kRpc, step.attempt_log);
  // A hedge that waits for the server's pushback, with no attempt to start
  // now: no caller would arm its timer.
  if (step.hedge_pending && step.outcome == Outcome::kNone) {
    ArmHedgeTimer();
    step.next.arm_timer = false;
  }
  if (step.outcome != Outcome::kNone) {
    absl::Status final_status = Conclude(step);
    Complete(std::move(final_status));
  } else if (step.cancel_timer != 0) {
    sleeper().Cancel(step.cancel_timer);
  }
  return step.next;
}

absl::Status HedgedOperationBase::Conclude(Step& step) {
  // Launched contexts stay put and live as long as the operation; one
  // whose call already ended ignores TryCancel.
  for (int i = 0; i < step.launched; ++i) {
    if (i != step.winner) CancelAttempt(*contexts_[i]);
  }
  if (step.cancel_timer != 0) sleeper().Cancel(step.cancel_timer);
  uint64_t callback = 0;
  {
    MutexLock lock(&mu_);
    callback = cancel_callback_;
    cancel_callback_ = 0;
  }
  UnwatchCancellation(callback);
  // Only this thread ended the call, and no attempt starts any more: the
  // state is ours, and its observer, metrics and log sink run unlocked.
  if (state().reporter().has_observer()) ReportAttempts(step);
  if (step.budget_refused) {
    state().reporter().Count<&MethodMetrics::hedges_refused_by_budget>();
  }
  switch (step.outcome) {
    case Outcome::kSuccess:
      state().OnSuccess();
      return absl::OkStatus();
    case Outcome::kCancelledOrEnded:
      return state().Cancelled();
    case Outcome::kAtEnd:
      return state().GiveUpAtEnd(step.status);
    case Outcome::kGiveUp:
    case Outcome::kNone:
      break;
  }
  return state().GiveUp(step.status, step.reason, step.explanation);
}

void HedgedOperationBase::ReportAttempts(const Step& step) {
  struct Seen {
    bool sent;
    bool done;
    bool late;
    absl::Status status;
    Clock::time_point start, end;
    std::chrono::nanoseconds wait;
    WaitReason wait_reason;
  };
  std::array<Seen, HedgingPolicy::kMaxAttemptsLimit> seen;
  {
    MutexLock lock(&mu_);
    for (int i = 0; i < step.launched; ++i) {
      seen[i] = Seen{sent_[i],   done_[i], late_[i],  results_[i],
                     starts_[i], ends_[i], waits_[i], wait_reasons_[i]};
    }
  }
  // A call that ended with no attempt's status (cancelled, or its end
  // reached before a launch) gives its final event to its last attempt.
  int final_index = step.final_index;
  for (int i = step.launched - 1; final_index < 0 && i >= 0; --i) {
    if (seen[i].sent) final_index = i;
  }
  const Clock::time_point now = state().now();
  for (int i = 0; i < step.launched; ++i) {
    const Seen& attempt = seen[i];
    // Not sent: refused before it started (cancelled, or the call's end).
    if (i == final_index || !attempt.sent) continue;
    if (attempt.done && !attempt.late) {
      NotifyHedgedAttempt(state(), i + 1, attempt.start, attempt.end,
                          attempt.status, false, contexts_[i].get(),
                          attempt.wait, attempt.wait_reason);
    } else {
      // Cancelled above (TryCancel), whatever it answers later.
      NotifyHedgedAttempt(
          state(), i + 1, attempt.start, now,
          absl::CancelledError(absl::StrCat(
              "hedged attempt ", i + 1, " cancelled: ",
              step.winner >= 0
                  ? absl::StrCat("attempt ", step.winner + 1, " won")
                  : std::string("the call ended"))),
          true, nullptr);
    }
  }
  if (final_index >= 0) {
    state().SetFinalAttempt(final_index + 1, seen[final_index].start);
  }
}

void HedgedOperationBase::Complete(absl::Status status) {
  Deliver(std::move(status));
  MutexLock lock(&mu_);
  delivered_ = true;
  idle_.NotifyAll();
}

void HedgedOperationBase::AwaitIdle() {
  MutexLock lock(&mu_);
  idle_.Wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return delivered_ && outstanding_ == 0;
  });
}

void HedgedOperationBase::ArmHedgeTimer() {
  uint64_t generation = 0;
  std::chrono::nanoseconds delay{0};
  {
    MutexLock lock(&mu_);
    if (timer_ != TimerState::kArming) return;  // the call ended meanwhile
    generation = timer_generation_;
    delay = timer_delay_;
  }
  auto self = std::static_pointer_cast<HedgedOperationBase>(shared_from_this());
  uint64_t id = sleeper().Schedule(delay, [self, generation](bool fired) {
    self->OnHedgeTimer(generation, fired);
  });
  bool stale = false;
  {
    MutexLock lock(&mu_);
    if (generation != timer_generation_) {
      stale = true;  // ended (or fired inline) while scheduling
    } else if (timer_ == TimerState::kArming) {
      timer_ = TimerState::kScheduled;
      timer_id_ = id;
    }
  }
  // A no-op when it already fired.
  if (stale) sleeper().Cancel(id);
}

void HedgedOperationBase::OnHedgeTimer(uint64_t generation, bool fired) {
  Step step;
  {
    MutexLock lock(&mu_);
    // Only our own Cancel() cancels, and it made the generation stale.
    if (!fired || generation != timer_generation_ || finished_) return;
    timer_ = TimerState::kIdle;
    ++timer_generation_;
    LaunchLocked(step);
    SettleLocked(step);
  }
  Next next = Perform(step);
  if (next.index >= 0) StartHedge(next);
}

void HedgedOperationBase::OnCancel() {
  Step step;
  {
    MutexLock lock(&mu_);
    if (finished_) return;
    EndLocked(step, Outcome::kCancelledOrEnded);
  }
  Perform(step);
}

bool HedgedOperationBase::OnAttemptSucceeded(int index) {
  Step step;
  {
    MutexLock lock(&mu_);
    AttemptDoneLocked(index, absl::OkStatus());
    if (finished_) return false;
    if (adaptive_delay_) {
      // From the first attempt's start: its latency, or, when a hedge won,
      // a lower bound of it already past the delay (adaptive_hedging.h).
      const Clock::time_point now = state().now();
      adaptive_->Record(now, now - starts_[0]);
    }
    step.winner = index;
    step.final_index = index;
    EndLocked(step, Outcome::kSuccess);
  }
  Conclude(step).IgnoreError();  // OK: the caller completes with the response
  return true;
}

HedgedOperationBase::Next HedgedOperationBase::OnAttemptFailed(
    int index, const absl::Status& status) {
  Step step;
  {
    MutexLock lock(&mu_);
    AttemptDoneLocked(index, status);
    if (finished_) return Next{};
    HedgeFailureFacts facts;
    facts.now = state().now();
    CancellationToken* token = state().cancellation();
    facts.cancelled = token != nullptr && token->cancelled();
    facts.no_async_stub = IsNoAsyncStubError(status);
    facts.attempt = index + 1;
    facts.attempt_start = starts_[index];
    facts.attempt_deadline = deadlines_[index];
    facts.end = state().facts().end;
    facts.hedge_left =
        launched_ < policy_.max_attempts() && !pushed_back_ && !throttled_;
    const ServerHint hint = HintOf(index, status);
    if (hint.kind == ServerHint::Kind::kWait) {
      facts.pushback = Pushback{Pushback::Kind::kWait, hint.delay};
    } else if (hint.kind == ServerHint::Kind::kRefused) {
      facts.pushback = Pushback{Pushback::Kind::kDoNotRetry, hint.delay};
    }
    const HedgeDecision decision =
        RunHedgeDecision(status, facts, policy_, admission_);
    switch (decision.kind) {
      case HedgeDecision::Kind::kCancelled:
        EndLocked(step, Outcome::kCancelledOrEnded);
        break;
      case HedgeDecision::Kind::kEndAtCallEnd:
        // The call's own end: final, whatever hedges are still running.
        step.status = status;
        step.final_index = index;
        EndLocked(step, Outcome::kAtEnd);
        break;
      case HedgeDecision::Kind::kEnd:
        step.status = status;
        step.final_index = index;
        step.explanation = decision.explanation;
        EndLocked(step, Outcome::kGiveUp);
        break;
      case HedgeDecision::Kind::kHedgeNow:
      case HedgeDecision::Kind::kHedgeAfter:
      case HedgeDecision::Kind::kNoMoreHedges:
        GoOnLocked(step, index, status, decision, hint);
        break;
    }
  }
  return Perform(step);
}

void HedgedOperationBase::GoOnLocked(Step& step, int index,
                                     const absl::Status& status,
                                     const HedgeDecision& decision,
                                     const ServerHint& hint) {
  last_failure_ = status;
  last_failure_index_ = index;
  switch (decision.kind) {
    case HedgeDecision::Kind::kHedgeNow:
      // The hedge after this one waits a full delay from this launch.
      ResetTimerLocked(step);
      LaunchLocked(step);
      break;
    case HedgeDecision::Kind::kHedgeAfter:
      ResetTimerLocked(step);
      timer_ = TimerState::kArming;
      ++timer_generation_;
      timer_delay_ = decision.delay;
      waits_[index] = decision.delay;
      wait_reasons_[index] = hint.reason;
      step.hedge_pending = true;
      break;
    case HedgeDecision::Kind::kNoMoreHedges:
      switch (decision.why) {
        case HedgeDecision::Why::kThrottled:
          RefusedLocked();  // a timer already armed finds it so too
          break;
        case HedgeDecision::Why::kPushedBack:
          pushed_back_ = true;
          server_refusal_ = hint.refusal;
          ResetTimerLocked(step);
          break;
        case HedgeDecision::Why::kPushbackPastEnd:
          pushback_past_end_ = true;
          ResetTimerLocked(step);
          break;
        case HedgeDecision::Why::kNoneLeft:
          ResetTimerLocked(step);
          break;
      }
      break;
    default:
      break;
  }
  SettleLocked(step);
}

ServerHint HedgedOperationBase::HintOf(int index, const absl::Status& status) {
  if (!state().use_hints()) return {};
  return ReadServerHint(ServerTrailers(*contexts_[index]), status, options());
}

}  // namespace internal
}  // namespace stubkit
