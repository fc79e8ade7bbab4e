// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/retry_loop_state.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/internal/api/attempt_context.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/internal/api/retry_summary.h"
#include "stubkit/internal/base/hint_parsing.h"
#include "stubkit/internal/base/metadata.h"
#include "stubkit/internal/base/method_name.h"
#include "stubkit/internal/engine/connection_channel.h"
#include "stubkit/internal/engine/deadline.h"
#include "stubkit/internal/engine/retry_decision.h"
#include "stubkit/internal/engine/retry_sources.h"
#include "stubkit/internal/engine/validate_options.h"
#include "stubkit/server_propagation.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::nanoseconds;
using time_point = Clock::time_point;

}  // namespace

}  // namespace internal

ResponseMetadata AttemptEvent::ReceivedMetadata() const {
  ResponseMetadata received;
  if (context != nullptr) internal::CopyResponseMetadata(*context, &received);
  return received;
}

namespace internal {

bool IsIdempotent(const MethodInfo& method, const OptionsView& options) {
  if (const Idempotency* forced = options.find<IdempotencyOption>()) {
    return *forced == Idempotency::kIdempotent;
  }
  if (const auto* by_name = options.find<IdempotencyMapOption>()) {
    // Either spelling, "pkg.Service.Method" or "pkg.Service/Method".
    if (const Idempotency* named =
            FindByMethodName(*by_name, method.full_name)) {
      return *named == Idempotency::kIdempotent;
    }
  }
  return method.default_idempotency == Idempotency::kIdempotent;
}

namespace {

// Sets an attempt's gRPC deadline; returns how long the driver's establish
// timer must give it (zero: none). With `establish_only` (server and bidi
// streams) the attempt timeout bounds only the wait for a first response:
// gRPC's deadline, which would end a healthy stream, stays at the call's.
nanoseconds SetAttemptDeadlines(grpc::ClientContext& context, time_point now,
                                time_point attempt_deadline, time_point bound,
                                bool establish_only) {
  if (establish_only && attempt_deadline < bound) {
    SetAttemptDeadline(context, now, bound);
    return attempt_deadline - now;
  }
  SetAttemptDeadline(context, now, attempt_deadline);
  return nanoseconds::zero();
}

}  // namespace

RetryLoopState::RetryLoopState(const MethodInfo& method,
                               const OptionsView& options)
    : method_(method),
      retry_policy_(options.get<RetryPolicyOption>()),
      options_(options),
      waits_(options.get<BackoffPolicyOption>(), options, reporter_) {
  sources_.clock = options.get<ClockOption>().get();
  sources_.sleeper = options.get<SleeperOption>().get();
  progress_.start = now();
  facts_.method = method_.full_name;
  setup_status_ = ValidateOptions(options, &retry_policy_,
                                  &options.get<BackoffPolicyOption>());
  if (!setup_status_.ok()) {
    RetrySummary summary{StopReason::kInvalidArgument, 0, nanoseconds(0)};
    setup_status_ = WithRetrySummary(setup_status_, summary,
                                     "invalid options, nothing was sent");
    // Counted like any other call's end (an invalid hedging policy already
    // is), so a misconfigured client shows in its metrics.
    CallReporter::OnInvalidOptions(method_.full_name, options);
    return;
  }
  Setup(options);
}

void RetryLoopState::Setup(const OptionsView& options) {
  facts_.idempotent = IsIdempotent(method_, options);
  // Each optional layer costs one lookup here and a null check later.
  reporter_.Configure(method_.full_name, options);
  if (retry_policy_.time_limit() > nanoseconds::zero()) {
    facts_.end = AddSaturating(progress_.start, retry_policy_.time_limit());
    facts_.end_reason = StopReason::kExhausted;
  }
  // With nothing set, each lookup below would find nothing (or a null
  // default), and the sources and facts keep their initial values.
  if (!NothingSet(options)) SetupSources(options);
  facts_.call_end = CallEnd(options, progress_.start);
  if (facts_.call_end < facts_.end) {
    facts_.end = facts_.call_end;
    facts_.end_reason = StopReason::kDeadline;
  }
}

void RetryLoopState::SetupSources(const OptionsView& options) {
  sources_.throttle = options.get<RetryThrottleOption>().get();
  sources_.budget = options.get<RetryBudgetOption>().get();
  sources_.cancel = options.get<CancellationOption>().get();
  if (const auto* metadata = options.find<ResponseMetadataOption>()) {
    sources_.response_metadata = metadata->get();
  }
  if (const int* incoming = options.find<IncomingAttemptOption>();
      incoming != nullptr && *incoming > 1) {
    facts_.incoming_attempt = *incoming;
    switch (options.get<NestedRetryOption>()) {
      case NestedRetry::kAsUsual:
        break;
      case NestedRetry::kOnce:
        facts_.nested_max_failures = 1;
        break;
      case NestedRetry::kNever:
        facts_.nested_max_failures = 0;
        break;
    }
  }
  if (const auto* min_attempt = options.find<MinAttemptTimeOption>()) {
    facts_.min_attempt_time = *min_attempt;
  }
}

time_point RetryLoopState::now() const {
  return sources_.clock != nullptr ? sources_.clock->Now()
                                   : std::chrono::steady_clock::now();
}

bool RetryLoopState::PrepareAttempt(grpc::ClientContext& context,
                                    std::string* deferred_log) {
  wait_.delay().End();  // the wait, if any, is over
  const time_point now = this->now();
  // An attempt past the call's end (a deadline already in the past, say)
  // could only fail: stop before sending it.
  if (now >= facts_.end) {
    progress_.ended_before_attempt = true;
    return false;
  }
  // Nor one with less than its minimum time left (MinAttemptTimeOption);
  // not a hedge, which would end the call while other attempts still run.
  if (!progress_.hedged && facts_.min_attempt_time > nanoseconds::zero() &&
      AttemptBound(facts_) != time_point::max() &&
      AttemptBound(facts_) - now < facts_.min_attempt_time) {
    progress_.ended_before_attempt = true;
    progress_.too_little_time = true;
    return false;
  }
  progress_.finished_context = nullptr;
  if (sources_.cancel != nullptr && !sources_.cancel->Attach(&context))
    return false;
  ++progress_.attempts;
  // The budget counts calls, not attempts: the call's first attempt is its
  // request.
  if (progress_.attempts == 1 && sources_.budget != nullptr)
    sources_.budget->Deposit(now);
  facts_.attempt_start = now;
  progress_.on_reconnect = wait_.follow().StartAttempt();
  facts_.attempt_deadline = AttemptEnd(now, AttemptBound(facts_),
                                       options_.get<AttemptTimeoutOption>());
  progress_.establish_timeout =
      SetAttemptDeadlines(context, now, facts_.attempt_deadline,
                          AttemptBound(facts_), progress_.establish_only);
  const auto* metadata =
      NothingSet(options_) ? nullptr : options_.find<MetadataOption>();
  if (metadata != nullptr) {
    for (const auto& [key, value] : *metadata) context.AddMetadata(key, value);
  }
  const bool attempt_header =
      progress_.attempts > 1 && options_.get<RetryAttemptHeaderOption>();
  if (attempt_header) {
    context.AddMetadata(kRetryAttemptHeader,
                        std::to_string(progress_.attempts));
  }
  if (!NothingSet(options_)) ApplyCallOptions(context, options_);
  reporter_.OnAttemptStart(progress_.attempts, now, facts_.attempt_deadline,
                           progress_.establish_timeout > nanoseconds::zero(),
                           metadata, attempt_header, deferred_log);
  return true;
}

void RetryLoopState::FinishAttempt(grpc::ClientContext& context,
                                   bool record_metadata) {
  if (sources_.cancel != nullptr) sources_.cancel->Detach(&context);
  if (!record_metadata) return;  // a hedge's loser, after the call ended
  if (sources_.response_metadata != nullptr) {
    CopyResponseMetadata(context, sources_.response_metadata);
  }
  if (reporter_.has_observer()) progress_.finished_context = &context;
}

absl::Status RetryLoopState::GiveUp(const absl::Status& status,
                                    StopReason reason,
                                    absl::string_view explanation) {
  absl::Status final_status;
  Stop(status, reason, explanation, now(), &final_status);
  return final_status;
}

absl::Status RetryLoopState::GiveUpWaiting(const absl::Status& status,
                                           StopReason reason,
                                           absl::string_view explanation) {
  // As for a cancel: only the part waited counts.
  if (wait_.delay().pending() > nanoseconds::zero())
    wait_.delay().CutShort(now());
  if (wait_.throttle().waiting()) {
    sources_.throttle->EndWait();
    wait_.throttle().Leave(now());
  }
  return GiveUp(status, reason, explanation);
}

absl::Status RetryLoopState::Cancelled() {
  // Cancelled during a wait: only the part waited counts.
  if (wait_.delay().pending() > nanoseconds::zero())
    wait_.delay().CutShort(now());
  if (wait_.throttle().waiting()) {
    sources_.throttle->EndWait();
    wait_.throttle().Leave(now());
  }
  absl::Status final_status;
  if (progress_.ended_before_attempt) {
    const StopReason reason = progress_.too_little_time
                                  ? AttemptBoundReason(facts_)
                                  : facts_.end_reason;
    const absl::string_view what = EndWhat(reason);
    if (!progress_.last_failure.ok()) {
      // The wait was chosen to end before the call's end but woke after it
      // (a loaded machine): the same result as a wait that would not fit.
      Stop(progress_.last_failure, reason,
           absl::StrCat("gave up: ", what,
                        " was reached while waiting to retry"),
           now(), &final_status);
      return final_status;
    }
    Stop(absl::DeadlineExceededError(
             progress_.too_little_time
                 ? absl::StrCat(
                       "less than ", FormatDuration(facts_.min_attempt_time),
                       " (MinAttemptTimeOption) was left before ", what,
                       " for attempt ", progress_.attempts + 1, ", not sent")
                 : absl::StrCat(what, " passed before attempt ",
                                progress_.attempts + 1, " was sent")),
         reason, absl::StrCat("gave up: ", what, " was reached"), now(),
         &final_status);
    return final_status;
  }
  Stop(absl::CancelledError("call cancelled by the caller"),
       StopReason::kCancelled, "cancelled", now(), &final_status);
  return final_status;
}

absl::Status RetryLoopState::EstablishTimedOut() {
  // The timer ran in real time; this state's clock (a test's FakeClock) may
  // lag behind it. The attempt's deadline is reached now, either way.
  facts_.attempt_deadline = std::min(facts_.attempt_deadline, now());
  return absl::DeadlineExceededError(
      absl::StrCat("no response within the attempt timeout (",
                   FormatDuration(options_.get<AttemptTimeoutOption>()),
                   ", AttemptTimeoutOption): the stream was not established"));
}

absl::Status RetryLoopState::GiveUpAtEnd(const absl::Status& status) {
  return GiveUp(
      status, facts_.end_reason,
      absl::StrCat("gave up: ", EndWhat(facts_.end_reason), " was reached"));
}

EndedAttempt RetryLoopState::Ended(const absl::Status& status, time_point now,
                                   bool final) {
  EndedAttempt ended;
  ended.attempt = final && progress_.final_attempt > 0 ? progress_.final_attempt
                                                       : progress_.attempts;
  ended.status = status;
  ended.attempt_start = facts_.attempt_start;
  ended.now = now;
  ended.call_start = progress_.start;
  ended.context = progress_.finished_context;
  ended.started_on_reconnect = progress_.on_reconnect && !progress_.hedged;
  // Only the event that follows the attempt gets it: the context may be
  // gone by the next one (a cancelled backoff wait).
  progress_.finished_context = nullptr;
  return ended;
}

CallTotals RetryLoopState::Totals(time_point now) const {
  return CallTotals{
      progress_.attempts,
      progress_.hedged && progress_.attempts > 1 ? progress_.attempts - 1 : 0,
      now - progress_.start, wait_.delay().total()};
}

void RetryLoopState::OnSuccess() {
  if (wait_.follow().channel() != nullptr) {
    wait_.follow().channel()->CheckGrpcRetries(options_, method_.full_name,
                                               true);
  }
  if (sources_.throttle != nullptr) {
    if (wait_.throttle().admitted_once()) {
      sources_.throttle->OnWaitedSuccess(facts_.attempt_start, now(),
                                         facts_.attempt_deadline);
    } else {
      sources_.throttle->OnSuccess();
    }
  }
  if (!reporter_.active()) return;  // the success path reads no clock
  const time_point now = this->now();
  reporter_.OnSuccess(Ended(absl::OkStatus(), now, true), Totals(now));
}

bool RetryLoopState::Stop(const absl::Status& status, StopReason reason,
                          absl::string_view explanation, time_point now,
                          absl::Status* final_status) {
  RetrySummary summary{reason, progress_.attempts, now - progress_.start};
  std::string waited;
  if (wait_.throttle().waited() > nanoseconds::zero()) {
    waited = absl::StrCat(explanation, "; waited ",
                          FormatDuration(wait_.throttle().waited()),
                          " in all for the backend to recover (retry "
                          "throttle, waiting mode)");
    explanation = waited;
  }
  std::string resumed;
  if (progress_.resumes > 0) {
    resumed = absl::StrCat(explanation, "; the stream was resumed ",
                           progress_.resumes,
                           progress_.resumes == 1 ? " time" : " times");
    explanation = resumed;
  }
  *final_status = WithRetrySummary(status, summary, explanation);
  reporter_.OnStop(Ended(status, now, true), reason, explanation, Totals(now));
  return false;
}

bool RetryLoopState::OnFailure(const absl::Status& status,
                               const grpc::ClientContext& context,
                               absl::Status* final_status, nanoseconds* wait) {
  const time_point now = this->now();
  const RetryDecision decision = Decide(status, ServerTrailers(context), now);
  return Report(status, decision, now, final_status, wait);
}

bool RetryLoopState::OnFailure(const absl::Status& status,
                               const grpc::ClientContext& context,
                               absl::FunctionRef<bool()> resume,
                               absl::string_view declined,
                               absl::Status* final_status, nanoseconds* wait) {
  const time_point now = this->now();
  const RetryDecision decision = Decide(status, ServerTrailers(context), now);
  // Last, once nothing else stops the call: the hook is user code with side
  // effects. (A retry budget's withdrawal was taken: a hook that declines
  // does not give it back.)
  if (decision.kind != RetryDecision::Kind::kStop && !resume()) {
    return Stop(status, StopReason::kNotResumable,
                absl::StrCat("not resumed: the stream ", declined), now,
                final_status);
  }
  return Report(status, decision, now, final_status, wait);
}

RetryDecision RetryLoopState::Decide(const absl::Status& status,
                                     const ServerTrailerMap* trailers,
                                     time_point now) {
  wait_.follow().set_active(false);
  if (wait_.follow().channel() != nullptr) {
    wait_.follow().channel()->CheckGrpcRetries(options_, method_.full_name,
                                               false);
  }
  facts_.now = now;
  facts_.cancelled = sources_.cancel != nullptr && sources_.cancel->cancelled();
  CallAdmission admission(sources_.throttle, wait_.throttle().enabled(),
                          sources_.budget, sources_.clock, facts_.attempt_start,
                          now);
  waits_.SetAttempt(trailers);
  const RetryDecision decision =
      RunRetryDecision(status, facts_, retry_policy_, admission.get(), waits_);
  waits_.SetAttempt(nullptr);  // they may not outlive the attempt
  facts_.failures = decision.failures;
  return decision;
}

bool RetryLoopState::Report(const absl::Status& status,
                            const RetryDecision& decision, time_point now,
                            absl::Status* final_status, nanoseconds* wait) {
  switch (decision.kind) {
    case RetryDecision::Kind::kStop:
      if (decision.stop_reason == StopReason::kCancelled) {
        *final_status = Cancelled();
        return false;
      }
      if (decision.stop_reason == StopReason::kNonIdempotent) {
        NoticeDroppedRetry(method_.full_name, options_);
      }
      return Stop(status, decision.stop_reason, decision.explanation, now,
                  final_status);
    case RetryDecision::Kind::kWaitForAdmission:
      *wait = BeginThrottleWait(status, now);
      return true;
    case RetryDecision::Kind::kRetry:
      break;
  }
  progress_.last_failure = status;
  const ReportedWait chosen{decision.wait, decision.wait_reason};
  // Here a DEADLINE_EXCEEDED can only be the attempt's own timeout: the
  // call's end stopped the call before.
  reporter_.OnRetry(Ended(status, now, false), chosen,
                    decision.attempt_timed_out
                        ? options_.get<AttemptTimeoutOption>()
                        : nanoseconds::zero());
  *wait = chosen.delay;
  wait_.delay().Begin(now, chosen.delay);
  // The option is read only here, on the retry path.
  wait_.follow().set_active(wait_.follow().channel() != nullptr &&
                            FollowsChannel(status, chosen.reason) &&
                            options_.get<FollowReconnectOption>());
  return true;
}

void RetryLoopState::RestartPolicy() {
  facts_.failures = 0;  // the error count, and the backoff's position
  waits_.Restart();
  facts_.end = facts_.call_end;
  facts_.end_reason = StopReason::kDeadline;
  if (retry_policy_.time_limit() > nanoseconds::zero()) {
    const time_point policy_end =
        AddSaturating(now(), retry_policy_.time_limit());
    if (policy_end <= facts_.end) {
      facts_.end = policy_end;
      facts_.end_reason = StopReason::kExhausted;
    }
  }
}

RetryLoopState::~RetryLoopState() {
  if (wait_.throttle().waiting()) sources_.throttle->EndWait();
}

nanoseconds RetryLoopState::BeginThrottleWait(const absl::Status& status,
                                              time_point now) {
  // Waiting mode: sit out the outage within the call's own limits.
  sources_.throttle->BeginWait();
  wait_.throttle().Begin(status, now);
  progress_.last_failure = status;
  // The end is after now here: the decision stopped the call otherwise.
  const nanoseconds wait =
      std::min<nanoseconds>(sources_.throttle->PollDelay(), facts_.end - now);
  wait_.delay().Begin(now, wait);
  reporter_.OnThrottleWait(Ended(status, now, false), wait);
  return wait;
}

RetryLoopState::ThrottleStep RetryLoopState::AfterThrottleWait(
    absl::Status* final_status, nanoseconds* wait) {
  using Kind = ThrottleWaitDecision::Kind;
  using Release = ThrottleWaitFacts::Release;
  wait_.delay().End();  // the loop waited it out
  wait_.follow().set_active(false);
  ThrottleWaitFacts facts;
  facts.now = now();
  facts.cancelled = sources_.cancel != nullptr && sources_.cancel->cancelled();
  facts.end = facts_.end;
  facts.end_reason = facts_.end_reason;
  facts.budget_refused_before = wait_.throttle().budget_refused();
  ThrottleWaitDecision decision = DecideAfterThrottleWait(facts);
  if (decision.kind == Kind::kAskRelease) {
    // The throttle and the budget release all or nothing: a withdrawal the
    // budget refuses leaves the throttle's release slot to another waiting
    // call. The budget has no waiting of its own: the call waits on in the
    // throttle's wait, where new calls refill the budget.
    CallAdmission admission(sources_.throttle, /*wait_enabled=*/true,
                            sources_.budget, sources_.clock);
    AdmissionSource& source = *admission.get();
    if (source.TryRelease(facts.now, [] { return true; })) {
      wait_.throttle().Leave(facts.now, /*admitted=*/true);
      return ThrottleStep::kAttempt;
    }
    facts.release = Release::kThrottleRefused;
    const AdmissionSource* refuser = source.Refuser();
    if (refuser != nullptr && refuser->RefillWindow() > nanoseconds::zero()) {
      facts.release = Release::kBudgetRefused;
      facts.budget_refused_since =
          wait_.throttle().NoteBudgetRefusal(facts.now);
      facts.budget_window = refuser->RefillWindow();
    }
    decision = DecideAfterThrottleWait(facts);
  }
  if (decision.kind == Kind::kCancelled) {
    *final_status = Cancelled();
    return ThrottleStep::kStop;
  }
  if (decision.kind == Kind::kWait) {
    *wait =
        std::min<nanoseconds>(sources_.throttle->PollDelay(), decision.wait);
    wait_.delay().Begin(facts.now, *wait);
    return ThrottleStep::kWait;
  }
  sources_.throttle->EndWait();  // a refused call still counts as waiting
  const absl::Status status = wait_.throttle().failure();
  wait_.throttle().Leave(facts.now);
  // Stop adds how long it waited.
  Stop(status, StopReason::kThrottled, decision.explanation, facts.now,
       final_status);
  return ThrottleStep::kStop;
}

void RetryLoopState::OnChannelReady() {
  const nanoseconds planned = wait_.delay().pending();
  const nanoseconds waited = planned > nanoseconds::zero()
                                 ? wait_.delay().CutShort(now())
                                 : nanoseconds::zero();
  wait_.follow().Woke();
  reporter_.OnChannelReady(progress_.attempts + 1, waited, planned);
}

bool RetryLoopState::Sleep(nanoseconds wait) {
  bool woken = false;
  if (!wait_.Sleep(wait, sources_.sleeper, sources_.cancel, &woken)) {
    return false;
  }
  if (woken) OnChannelReady();
  return true;
}

}  // namespace internal
}  // namespace stubkit
