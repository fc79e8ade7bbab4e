// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/retry_loop_state.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/internal/format.h"
#include "stubkit/internal/call_setup.h"
#include "stubkit/internal/connection_channel.h"
#include "stubkit/internal/deadline.h"
#include "stubkit/internal/metadata.h"
#include "stubkit/internal/method_options.h"
#include "stubkit/internal/retry_decision.h"
#include "stubkit/internal/retry_summary.h"
#include "stubkit/internal/server_hints.h"
#include "stubkit/internal/timer_queue.h"
#include "stubkit/internal/validate_options.h"

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
    auto it = by_name->find(method.full_name);
    if (it != by_name->end()) return it->second == Idempotency::kIdempotent;
  }
  return method.default_idempotency == Idempotency::kIdempotent;
}

namespace {

std::string Describe(const absl::Status& status) {
  return absl::StrCat(StatusCodeName(static_cast<int>(status.code())), ": ",
                      status.message());
}

}  // namespace

RetryLoopState::RetryLoopState(const MethodInfo& method,
                               const OptionsView& options)
    : method_(method),
      retry_policy_(options.get<RetryPolicyOption>()),
      backoff_policy_(options.get<BackoffPolicyOption>()),
      options_(options),
      clock_(options.get<ClockOption>().get()),
      sleeper_(options.get<SleeperOption>().get()) {
  start_ = Now();
  setup_status_ = ValidateOptions(options, &retry_policy_, &backoff_policy_);
  if (!setup_status_.ok()) {
    RetrySummary summary{StopReason::kInvalidArgument, 0, nanoseconds(0)};
    setup_status_ = WithRetrySummary(setup_status_, summary,
                                     "invalid options, nothing was sent");
    // Counted like any other call's end (an invalid hedging policy already
    // is), so a misconfigured client shows in its metrics.
    if (MetricsCollector* metrics = options.get<MetricsOption>().get()) {
      metrics->RecordCall(method_.full_name, 0, StopReason::kInvalidArgument,
                          nanoseconds(0));
    }
    return;
  }
  Setup(options);
}

void RetryLoopState::Setup(const OptionsView& options) {
  idempotent_ = IsIdempotent(method_, options);
  // Each optional layer costs one lookup here and a null check later.
  if (const auto* observer = options.find<RetryObserverOption>()) {
    if (*observer) observer_ = observer;
  }
  throttle_ = options.get<RetryThrottleOption>().get();
  metrics_ = options.get<MetricsOption>().get();
  cancel_ = options.get<CancellationOption>().get();
  if (const auto* metadata = options.find<ResponseMetadataOption>()) {
    response_metadata_ = metadata->get();
  }
  log_level_ = options.get<LogLevelOption>();
  if (log_level_ != LogLevel::kOff) {
    log_sink_ = options.get<LogSinkOption>().get();
    if (log_sink_ == nullptr) log_sink_ = StderrLogSink().get();
    log_payloads_ =
        log_level_ == LogLevel::kRpc && options.get<LogPayloadsOption>();
  }
  use_hints_ = options.get<ServerHintsOption>();

  if (retry_policy_.max_time() > nanoseconds::zero()) {
    end_ = AddSaturating(start_, retry_policy_.max_time());
    end_reason_ = StopReason::kExhausted;
  }
  call_end_ = CallEnd(options, start_);
  if (call_end_ < end_) {
    end_ = call_end_;
    end_reason_ = StopReason::kDeadline;
  }
}

time_point RetryLoopState::Now() const {
  return clock_ != nullptr ? clock_->Now() : std::chrono::steady_clock::now();
}

void RetryLoopState::Log(LogLevel level, absl::string_view line) const {
  if (log_sink_ != nullptr && log_level_ >= level) log_sink_->Write(line);
}

void RetryLoopState::LogPayload(
    absl::string_view what, const google::protobuf::Message& message) const {
  Log(LogLevel::kRpc, absl::StrCat("stubkit: ", method_.full_name, " ", what,
                                   " {", message.ShortDebugString(), "}"));
}

bool RetryLoopState::PrepareAttempt(grpc::ClientContext& context,
                                    std::string* deferred_log) {
  delay_pending_ = nanoseconds::zero();  // the wait, if any, is over
  const time_point now = Now();
  // An attempt past the call's end (a deadline already in the past, say)
  // could only fail: stop before sending it.
  if (now >= end_) {
    ended_before_attempt_ = true;
    return false;
  }
  finished_context_ = nullptr;
  if (cancel_ != nullptr && !cancel_->Attach(&context)) return false;
  ++attempts_;
  attempt_start_ = now;
  attempt_on_reconnect_ = std::exchange(woke_on_reconnect_, false);
  attempt_deadline_ = AttemptEnd(now, stream_deadlines_ ? call_end_ : end_,
                                 options_.get<AttemptTimeoutOption>());
  SetAttemptDeadline(context, now, attempt_deadline_);
  const auto* metadata = options_.find<MetadataOption>();
  if (metadata != nullptr) {
    for (const auto& [key, value] : *metadata) context.AddMetadata(key, value);
  }
  const bool attempt_header =
      attempts_ > 1 && options_.get<RetryAttemptHeaderOption>();
  if (attempt_header) {
    context.AddMetadata(kRetryAttemptHeader, std::to_string(attempts_));
  }
  ApplyCallOptions(context, options_);
  if (log_level_ >= LogLevel::kRpc) {
    std::vector<std::pair<std::string, std::string>> sent;
    if (metadata != nullptr) sent = *metadata;
    if (attempt_header) {
      sent.emplace_back(kRetryAttemptHeader, std::to_string(attempts_));
    }
    std::string line =
        absl::StrCat("stubkit: ", method_.full_name, " attempt ", attempts_,
                     " starts; timeout ",
                     attempt_deadline_ == time_point::max()
                         ? std::string("none")
                         : FormatDuration(attempt_deadline_ - now),
                     "; metadata {", FormatMetadataRedacted(sent), "}");
    if (deferred_log != nullptr) {
      *deferred_log = std::move(line);
    } else {
      Log(LogLevel::kRpc, line);
    }
  }
  return true;
}

void RetryLoopState::FinishAttempt(grpc::ClientContext& context,
                                   bool record_metadata) {
  if (cancel_ != nullptr) cancel_->Detach(&context);
  if (!record_metadata) return;  // a hedge's loser, after the call ended
  if (response_metadata_ != nullptr) {
    CopyResponseMetadata(context, response_metadata_);
  }
  if (observer_ != nullptr) finished_context_ = &context;
}

absl::Status RetryLoopState::GiveUp(const absl::Status& status,
                                    StopReason reason,
                                    absl::string_view explanation) {
  absl::Status final_status;
  Stop(status, reason, explanation, Now(), &final_status);
  return final_status;
}

absl::Status RetryLoopState::Cancelled() {
  if (delay_pending_ > nanoseconds::zero()) {
    // Cancelled during a wait: only the part waited counts.
    const nanoseconds waited = std::clamp<nanoseconds>(
        Now() - delay_began_, nanoseconds::zero(), delay_pending_);
    retry_delay_ -= delay_pending_ - waited;
    delay_pending_ = nanoseconds::zero();
  }
  if (waiting_for_throttle_) {
    throttle_->EndWait();
    LeaveThrottleWait(Now());
  }
  absl::Status final_status;
  if (ended_before_attempt_) {
    const absl::string_view what = EndWhat(end_reason_);
    Stop(absl::DeadlineExceededError(absl::StrCat(
             what, " passed before attempt ", attempts_ + 1, " was sent")),
         end_reason_, absl::StrCat("gave up: ", what, " was reached"), Now(),
         &final_status);
    return final_status;
  }
  Stop(absl::CancelledError("call cancelled by the caller"),
       StopReason::kCancelled, "cancelled", Now(), &final_status);
  return final_status;
}

RetryLoopState::Expiry RetryLoopState::ClassifyExpiry(
    const absl::Status& status, time_point its_start,
    time_point its_deadline) const {
  if (status.code() != absl::StatusCode::kDeadlineExceeded) {
    return Expiry::kNone;
  }
  const time_point now = Now();
  if (!ReachedDeadline(now, its_start, its_deadline)) return Expiry::kNone;
  return its_deadline == end_ || now >= end_ ? Expiry::kCallEnd
                                             : Expiry::kAttemptTimeout;
}

absl::Status RetryLoopState::GiveUpAtEnd(const absl::Status& status) {
  return GiveUp(
      status, end_reason_,
      absl::StrCat("gave up: ", EndWhat(end_reason_), " was reached"));
}

void RetryLoopState::Notify(const absl::Status& status, time_point now,
                            bool final, Wait wait, StopReason reason) {
  if (observer_ == nullptr) return;
  AttemptEvent event;
  event.method = method_.full_name;
  event.attempt = final && final_attempt_ > 0 ? final_attempt_ : attempts_;
  event.status = status;
  event.attempt_duration = now - attempt_start_;
  event.elapsed = now - start_;
  event.final = final;
  event.wait = wait.delay;
  event.wait_reason = wait.reason;
  event.stop_reason = reason;
  event.context = finished_context_;
  event.started_on_reconnect = attempt_on_reconnect_ && !hedged_;
  // Only the event that follows the attempt gets it: the context may be
  // gone by the next one (a cancelled backoff wait).
  finished_context_ = nullptr;
  (*observer_)(event);
}

void RetryLoopState::NotifyHedgedAttempt(int attempt, time_point its_start,
                                         time_point its_end,
                                         const absl::Status& status,
                                         bool hedge_loser,
                                         const grpc::ClientContext* context) {
  if (observer_ == nullptr) return;
  AttemptEvent event;
  event.method = method_.full_name;
  event.attempt = attempt;
  event.status = status;
  event.attempt_duration = its_end - its_start;
  event.elapsed = its_end - start_;
  event.hedge_loser = hedge_loser;
  event.context = context;
  (*observer_)(event);
}

void RetryLoopState::OnSuccess() {
  if (channel_ != nullptr) {
    channel_->CheckGrpcRetries(options_, method_.full_name, true);
  }
  if (throttle_ != nullptr) {
    if (waited_for_throttle_) {
      throttle_->OnWaitedSuccess();
    } else {
      throttle_->OnSuccess();
    }
  }
  if (observer_ == nullptr && metrics_ == nullptr &&
      log_level_ < LogLevel::kRpc) {
    return;
  }
  const time_point now = Now();
  Notify(absl::OkStatus(), now, true, Wait{nanoseconds(0), WaitReason::kNone},
         StopReason::kSuccess);
  if (metrics_ != nullptr) {
    metrics_->RecordCall(method_.full_name, attempts_, StopReason::kSuccess,
                         now - start_, hedged_ ? attempts_ - 1 : 0,
                         retry_delay_);
  }
  // The line is built only when it will be written: formatting it costs an
  // allocation on every call.
  if (log_sink_ != nullptr && log_level_ >= LogLevel::kRpc) {
    Log(LogLevel::kRpc,
        absl::StrCat("stubkit: ", method_.full_name, " attempt ", attempts_,
                     " OK after ", FormatDuration(now - attempt_start_)));
  }
}

bool RetryLoopState::Stop(const absl::Status& status, StopReason reason,
                          absl::string_view explanation, time_point now,
                          absl::Status* final_status) {
  RetrySummary summary{reason, attempts_, now - start_};
  std::string waited;
  if (waited_ > nanoseconds::zero()) {
    waited = absl::StrCat(explanation, "; waited ", FormatDuration(waited_),
                          " in all for the backend to recover (retry "
                          "throttle, waiting mode)");
    explanation = waited;
  }
  std::string resumed;
  if (resumes_ > 0) {
    resumed = absl::StrCat(explanation, "; the stream was resumed ", resumes_,
                           resumes_ == 1 ? " time" : " times");
    explanation = resumed;
  }
  *final_status = WithRetrySummary(status, summary, explanation);
  Notify(status, now, true, Wait{nanoseconds(0), WaitReason::kNone}, reason);
  if (metrics_ != nullptr) {
    metrics_->RecordCall(method_.full_name, attempts_, reason, now - start_,
                         hedged_ && attempts_ > 1 ? attempts_ - 1 : 0,
                         retry_delay_);
  }
  // Every call that gives up is worth a line at `retries`, whatever the
  // reason (the non-idempotent case answers "why wasn't it retried?"); a
  // permanent error or a cancel on the first attempt, never meant to be
  // retried, is the caller's business.
  const bool callers_business =
      attempts_ <= 1 && (reason == StopReason::kPermanentError ||
                         reason == StopReason::kCancelled);
  const LogLevel level = callers_business ? LogLevel::kRpc : LogLevel::kRetries;
  if (log_sink_ != nullptr && log_level_ >= level) {
    if (attempts_ == 0) {
      Log(level, absl::StrCat("stubkit: ", method_.full_name,
                              " stopped before any attempt: ", Describe(status),
                              "; ", explanation));
    } else {
      Log(level, absl::StrCat("stubkit: ", method_.full_name, " attempt ",
                              attempts_, " failed with ", Describe(status),
                              "; ", explanation, " after ", attempts_,
                              attempts_ == 1 ? " attempt" : " attempts"));
    }
  }
  return false;
}

WaitChoice RetryLoopState::ChooseWait(const absl::Status& status,
                                      const grpc::ClientContext& context,
                                      int failures) {
  WaitChoice choice;
  choice.delay = backoff_policy_.DelayFor(failures - 1 - backoff_origin_);
  choice.reason = WaitReason::kBackoff;
  if (!use_hints_) return choice;
  // A server hint replaces the backoff draw; with both hints, the longer.
  std::optional<Wait> hint;
  const auto& trailers = context.GetServerTrailingMetadata();
  auto pushback = trailers.find(kRetryPushbackHeader);
  if (pushback != trailers.end()) {
    absl::string_view value(pushback->second.data(), pushback->second.size());
    Pushback parsed = ParsePushback(value);
    if (parsed.kind == Pushback::Kind::kDoNotRetry) {
      choice.refused = true;
      choice.refusal =
          absl::StrCat("retry throttled by the server (", kRetryPushbackHeader,
                       ": ", value.substr(0, 32), ")");
      return choice;
    }
    hint = Wait{parsed.delay, WaitReason::kPushback};
  }
  if (auto details = status.GetPayload(kErrorDetailsPayloadKey)) {
    RetryInfoHint parsed = details->size() > kMaxStatusDetailsBytes
                               ? RetryInfoHint{RetryInfoHint::Kind::kMalformed}
                               : ParseRetryInfoDelay(std::string(*details));
    if (parsed.kind == RetryInfoHint::Kind::kDelay) {
      if (!hint.has_value() || parsed.delay > hint->delay) {
        hint = Wait{parsed.delay, WaitReason::kRetryInfo};
      }
    } else if (parsed.kind == RetryInfoHint::Kind::kMalformed) {
      Log(LogLevel::kRetries,
          absl::StrCat("stubkit: ", method_.full_name,
                       " ignoring malformed or oversized status details (",
                       details->size(), " bytes)"));
    }
  }
  if (!hint.has_value()) return choice;
  const nanoseconds ceiling = options_.get<ServerHintCeilingOption>();
  if (hint->delay > ceiling) {
    choice.refused = true;
    choice.refusal =
        absl::StrCat("the server asked to wait ", FormatDuration(hint->delay),
                     " (", ToString(hint->reason), "), longer than ",
                     FormatDuration(ceiling), " (ServerHintCeilingOption)");
    return choice;
  }
  choice.delay = hint->delay;
  choice.reason = hint->reason;
  // A6: "If this attempt also fails, retry delay will reset to initial
  // backoff for the following retry."
  backoff_origin_ = failures;
  return choice;
}

namespace {

// The retry throttle as the decision's admission source.
class ThrottleAdmission final : public AdmissionSource {
 public:
  ThrottleAdmission(RetryThrottle& throttle, bool wait_enabled)
      : throttle_(throttle), wait_enabled_(wait_enabled) {}
  bool OnRetryableFailure() override { return throttle_.OnRetryableFailure(); }
  bool MayWait() const override { return wait_enabled_ && throttle_.waiting(); }
  std::string Refusal() const override {
    return "gave up: retry throttled (the client's retry token bucket is at "
           "or below half)";
  }

 private:
  RetryThrottle& throttle_;
  const bool wait_enabled_;
};

}  // namespace

// Backoff and the hints in the failed attempt's trailers and status.
class RetryLoopState::Waits final : public WaitSource {
 public:
  Waits(RetryLoopState& state, const grpc::ClientContext& context)
      : state_(state), context_(context) {}
  WaitChoice NextWait(const absl::Status& status, int failures) override {
    return state_.ChooseWait(status, context_, failures);
  }

 private:
  RetryLoopState& state_;
  const grpc::ClientContext& context_;
};

bool RetryLoopState::OnFailure(const absl::Status& status,
                               const grpc::ClientContext& context,
                               absl::Status* final_status, nanoseconds* wait) {
  follow_channel_ = false;
  if (channel_ != nullptr) {
    channel_->CheckGrpcRetries(options_, method_.full_name, false);
  }
  const time_point now = Now();
  FailureFacts facts;
  facts.method = method_.full_name;
  facts.now = now;
  facts.cancelled = cancel_ != nullptr && cancel_->cancelled();
  facts.idempotent = idempotent_;
  facts.repeat_forbidden = repeat_forbidden_;
  facts.failures = failures_;
  facts.attempt_start = attempt_start_;
  facts.attempt_deadline = attempt_deadline_;
  facts.end = end_;
  facts.end_reason = end_reason_;
  facts.call_end = call_end_;
  std::optional<ThrottleAdmission> admission;
  if (throttle_ != nullptr)
    admission.emplace(*throttle_, throttle_wait_enabled_);
  Waits waits(*this, context);
  const RetryDecision decision = DecideAfterFailure(
      status, facts, retry_policy_, admission ? &*admission : nullptr, waits);
  failures_ = decision.failures;
  return Report(status, decision, now, final_status, wait);
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
        NoticeDroppedRetry();
      }
      return Stop(status, decision.stop_reason, decision.explanation, now,
                  final_status);
    case RetryDecision::Kind::kWaitForAdmission:
      // Waiting mode: sit out the outage within the call's own limits.
      *wait = BeginThrottleWait(status, now);
      BeginDelay(now, *wait);
      Notify(status, now, false, Wait{*wait, WaitReason::kThrottle},
             StopReason::kSuccess);
      if (log_sink_ != nullptr && log_level_ >= LogLevel::kRetries) {
        Log(LogLevel::kRetries,
            absl::StrCat("stubkit: ", method_.full_name, " attempt ", attempts_,
                         " failed with ", Describe(status),
                         "; waiting for the backend to recover (retry "
                         "throttle, waiting mode)"));
      }
      return true;
    case RetryDecision::Kind::kRetry:
      break;
  }
  const Wait chosen{decision.wait, decision.wait_reason};
  Notify(status, now, false, chosen, StopReason::kSuccess);
  if (log_sink_ != nullptr && log_level_ >= LogLevel::kRetries) {
    // Here a DEADLINE_EXCEEDED can only be the attempt's own timeout: the
    // call's end stopped the call before.
    Log(LogLevel::kRetries,
        absl::StrCat(
            "stubkit: ", method_.full_name, " attempt ", attempts_,
            " failed with ", Describe(status),
            decision.attempt_timed_out
                ? absl::StrCat(
                      " after its attempt timeout (",
                      FormatDuration(options_.get<AttemptTimeoutOption>()),
                      ", AttemptTimeoutOption)")
                : std::string(),
            "; retrying in ", FormatDuration(chosen.delay), " (",
            ToString(chosen.reason), ")"));
  }
  *wait = chosen.delay;
  BeginDelay(now, chosen.delay);
  // The option is read only here, on the retry path.
  follow_channel_ = channel_ != nullptr &&
                    FollowsChannel(status, chosen.reason) &&
                    options_.get<FollowReconnectOption>();
  return true;
}

void RetryLoopState::NoticeDroppedRetry() const {
  const auto* notice = options_.find<DroppedRetryNoticeOption>();
  if (notice == nullptr || *notice == nullptr || (*notice)->exchange(true)) {
    return;
  }
  const LogLevel* level = options_.find<LogLevelOption>();
  if (level != nullptr && *level == LogLevel::kOff) return;
  LogSink* sink = options_.get<LogSinkOption>().get();
  if (sink == nullptr) sink = StderrLogSink().get();
  sink->Write(absl::StrCat(
      "stubkit: ", method_.full_name,
      ": the service config retries it, but it is not idempotent by "
      "stubkit's rule (ServiceConfigImport::keep_idempotency_rules): not "
      "retried; mark it idempotent if the server deduplicates it"));
}

void RetryLoopState::BeginDelay(time_point now, nanoseconds wait) {
  // Saturates: a wait may be nanoseconds::max() (the options fuzzer found
  // the overflow), and a sum of large waits must not wrap.
  wait = std::max(wait, nanoseconds::zero());
  retry_delay_ = wait > nanoseconds::max() - retry_delay_ ? nanoseconds::max()
                                                          : retry_delay_ + wait;
  delay_pending_ = wait;
  delay_began_ = now;
}

void RetryLoopState::RestartPolicy() {
  failures_ = 0;  // the error count, and the backoff's position
  backoff_origin_ = 0;
  end_ = call_end_;
  end_reason_ = StopReason::kDeadline;
  if (retry_policy_.max_time() > nanoseconds::zero()) {
    const time_point policy_end =
        AddSaturating(Now(), retry_policy_.max_time());
    if (policy_end <= end_) {
      end_ = policy_end;
      end_reason_ = StopReason::kExhausted;
    }
  }
}

RetryLoopState::~RetryLoopState() {
  if (waiting_for_throttle_) throttle_->EndWait();
}

nanoseconds RetryLoopState::BeginThrottleWait(const absl::Status& status,
                                              time_point now) {
  throttle_->BeginWait();
  waiting_for_throttle_ = true;
  waiting_status_ = status;
  wait_start_ = now;
  // end_ > now here: OnFailure stopped the call otherwise.
  return std::min<nanoseconds>(throttle_->PollDelay(), end_ - now);
}

void RetryLoopState::LeaveThrottleWait(time_point now) {
  if (!waiting_for_throttle_) return;
  waiting_for_throttle_ = false;
  waited_ += now - wait_start_;
  waiting_status_ = absl::OkStatus();
}

RetryLoopState::ThrottleStep RetryLoopState::AfterThrottleWait(
    absl::Status* final_status, nanoseconds* wait) {
  delay_pending_ = nanoseconds::zero();  // the loop waited it out
  follow_channel_ = false;
  const time_point now = Now();
  if (cancel_ != nullptr && cancel_->cancelled()) {
    *final_status = Cancelled();
    return ThrottleStep::kStop;
  }
  // The call's end comes first: an attempt admitted now could only fail.
  if (now >= end_) {
    throttle_->EndWait();
    const absl::Status status = waiting_status_;
    LeaveThrottleWait(now);
    // Stop adds how long it waited.
    Stop(status, StopReason::kThrottled,
         absl::StrCat("gave up: the backend did not recover before ",
                      EndWhat(end_reason_), " was reached"),
         now, final_status);
    return ThrottleStep::kStop;
  }
  if (throttle_->TryAdmit(now)) {  // leaves the throttle's count
    LeaveThrottleWait(now);
    waited_for_throttle_ = true;
    return ThrottleStep::kAttempt;
  }
  *wait = std::min<nanoseconds>(throttle_->PollDelay(), end_ - now);
  BeginDelay(now, *wait);
  return ThrottleStep::kWait;
}

void RetryLoopState::OnChannelReady() {
  const time_point now = Now();
  nanoseconds waited = nanoseconds::zero();
  if (delay_pending_ > nanoseconds::zero()) {
    waited = std::clamp<nanoseconds>(now - delay_began_, nanoseconds::zero(),
                                     delay_pending_);
    retry_delay_ -= delay_pending_ - waited;
  }
  const nanoseconds planned = delay_pending_;
  delay_pending_ = nanoseconds::zero();
  woke_on_reconnect_ = true;
  if (log_sink_ != nullptr && log_level_ >= LogLevel::kRetries) {
    Log(LogLevel::kRetries,
        absl::StrCat("stubkit: ", method_.full_name,
                     " the channel is ready again; attempt ", attempts_ + 1,
                     " starts after ", FormatDuration(waited), " of its ",
                     FormatDuration(planned), " wait"));
  }
}

namespace {

// A sync wait that may end early: woken by the channel's watch (on the
// watcher thread) or by a cancel (on the cancelling thread).
struct SyncWake {
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false;      // guarded by mu
  bool cancelled = false;  // guarded by mu
  void Set(bool SyncWake::*flag) {
    {
      std::lock_guard<std::mutex> lock(mu);
      this->*flag = true;
    }
    cv.notify_all();
  }
};

}  // namespace

bool RetryLoopState::SleepFollowingChannel(nanoseconds wait) {
  // Shared with the callbacks: a wake may come after this wait is over.
  auto wake = std::make_shared<SyncWake>();
  const std::chrono::steady_clock::time_point until = SteadyDeadline(wait);
  uint64_t registration = 0;
  if (cancel_ != nullptr) {
    registration =
        cancel_->AddCallback([wake] { wake->Set(&SyncWake::cancelled); });
  }
  // The watcher thread polls the channel meanwhile (see
  // connection_channel.h): this thread only waits on the steady clock.
  const uint64_t watch =
      channel_->Join([wake] { wake->Set(&SyncWake::woken); });
  bool woken;
  {
    std::unique_lock<std::mutex> lock(wake->mu);
    wake->cv.wait_until(lock, until,
                        [&] { return wake->woken || wake->cancelled; });
    woken = wake->woken;
  }
  channel_->Leave(watch);
  if (cancel_ != nullptr) {
    cancel_->RemoveCallback(registration);
    if (cancel_->cancelled()) return false;
  }
  if (woken) OnChannelReady();
  return true;
}

bool RetryLoopState::Sleep(nanoseconds wait) {
  if (sleeper_ == nullptr && follow_channel_) {
    return SleepFollowingChannel(wait);
  }
  if (sleeper_ != nullptr) {
    sleeper_->SleepFor(wait);
  } else if (cancel_ != nullptr) {
    return cancel_->WaitFor(wait);
  } else {
    std::this_thread::sleep_for(wait);
  }
  return cancel_ == nullptr || !cancel_->cancelled();
}

}  // namespace internal
}  // namespace stubkit
