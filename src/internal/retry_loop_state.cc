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
#include "stubkit/internal/retry_summary.h"
#include "stubkit/internal/server_hints.h"
#include "stubkit/internal/timer_queue.h"
#include "stubkit/internal/validate_options.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::nanoseconds;
using time_point = Clock::time_point;

// Whether a DEADLINE_EXCEEDED seen at `now` is the expiry of the deadline an
// attempt started at `start` was given. gRPC's timer may be read a hair
// before our clock reaches the same instant, and the server enforces the
// deadline we send (grpc-timeout) from its own cached clock, so on a loaded
// machine its verdict can come several milliseconds early (seen in CI under
// ASan). So one that arrives within a tenth of the attempt's budget of its
// deadline (at least 2 ms, at most 50 ms) counts as that deadline's: a
// server's own DEADLINE_EXCEEDED that close to ours is treated as ours, and
// the call stops or retries as it would a moment later anyway.
bool ReachedDeadline(time_point now, time_point start, time_point deadline) {
  if (deadline == time_point::max()) return false;
  const nanoseconds tolerance = std::clamp<nanoseconds>(
      (deadline - start) / 10, std::chrono::milliseconds(2),
      std::chrono::milliseconds(50));
  return now + tolerance >= deadline;
}

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

// What ended a call that reached its end (see `RetryLoopState::end()`).
absl::string_view EndWhat(StopReason end_reason) {
  return end_reason == StopReason::kDeadline ? "the call's deadline"
                                             : "the retry policy's time limit";
}

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

bool RetryLoopState::ChooseWait(const absl::Status& status,
                                const grpc::ClientContext& context, Wait* wait,
                                std::string* refusal) {
  *wait = Wait{backoff_policy_.DelayFor(failures_ - 1 - backoff_origin_),
               WaitReason::kBackoff};
  if (!use_hints_) return true;
  // A server hint replaces the backoff draw; with both hints, the longer.
  std::optional<Wait> hint;
  const auto& trailers = context.GetServerTrailingMetadata();
  auto pushback = trailers.find(kRetryPushbackHeader);
  if (pushback != trailers.end()) {
    absl::string_view value(pushback->second.data(), pushback->second.size());
    Pushback parsed = ParsePushback(value);
    if (parsed.kind == Pushback::Kind::kDoNotRetry) {
      *refusal =
          absl::StrCat("retry throttled by the server (", kRetryPushbackHeader,
                       ": ", value.substr(0, 32), ")");
      return false;
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
  if (!hint.has_value()) return true;
  const nanoseconds ceiling = options_.get<ServerHintCeilingOption>();
  if (hint->delay > ceiling) {
    *refusal =
        absl::StrCat("the server asked to wait ", FormatDuration(hint->delay),
                     " (", ToString(hint->reason), "), longer than ",
                     FormatDuration(ceiling), " (ServerHintCeilingOption)");
    return false;
  }
  *wait = *hint;
  // A6: "If this attempt also fails, retry delay will reset to initial
  // backoff for the following retry."
  backoff_origin_ = failures_;
  return true;
}

bool RetryLoopState::OnFailure(const absl::Status& status,
                               const grpc::ClientContext& context,
                               absl::Status* final_status, nanoseconds* wait) {
  follow_channel_ = false;
  if (channel_ != nullptr) {
    channel_->CheckGrpcRetries(options_, method_.full_name, false);
  }
  const time_point now = Now();
  const bool deadline_exceeded =
      status.code() == absl::StatusCode::kDeadlineExceeded &&
      ReachedDeadline(now, attempt_start_, attempt_deadline_);
  const absl::string_view end_what = end_reason_ == StopReason::kDeadline
                                         ? "the call's deadline"
                                         : "the retry policy's time limit";

  if (cancel_ != nullptr && cancel_->cancelled()) {
    *final_status = Cancelled();
    return false;
  }
  // The call's own end ran out during the attempt.
  if (deadline_exceeded && attempt_deadline_ == end_) {
    return Stop(status, end_reason_,
                absl::StrCat("gave up: ", end_what, " was reached"), now,
                final_status);
  }
  // A stream's attempt ran out of the call's end (UseStreamDeadlines).
  if (deadline_exceeded && attempt_deadline_ >= call_end_) {
    return Stop(status, StopReason::kDeadline,
                "gave up: the call's deadline was reached", now, final_status);
  }
  // 1. Permanent errors. An attempt that ran out of its own (shorter)
  // timeout counts as retryable: the next attempt may be faster.
  // The policy's predicate, if any, is user code: no stubkit lock is held
  // here in any loop (hedging, which decides under its mutex, does not use
  // the retry policy).
  if (!deadline_exceeded && !retry_policy_.IsRetryable(status)) {
    return Stop(status, StopReason::kPermanentError,
                absl::StrCat("not retried: ",
                             StatusCodeName(static_cast<int>(status.code())),
                             " is not a retryable code (retryable: ",
                             retry_policy_.retryable_codes().ToString(),
                             retry_policy_.has_retryable_if()
                                 ? "; the RetryableIf predicate declined it"
                                 : "",
                             ")"),
                now, final_status);
  }
  // A retryable failure says the backend struggles, whatever happens next.
  const bool throttle_allows =
      throttle_ == nullptr || throttle_->OnRetryableFailure();
  // 2. Never repeat an operation that may not be safe to repeat.
  if (!idempotent_) {
    NoticeDroppedRetry();
    return Stop(
        status, StopReason::kNonIdempotent,
        absl::StrCat("not retried: ", method_.full_name, " is not idempotent"),
        now, final_status);
  }
  if (!repeat_forbidden_.empty()) {
    return Stop(status, StopReason::kNotResumable,
                absl::StrCat("not resumed: the stream ", repeat_forbidden_),
                now, final_status);
  }
  // 3. The retry policy, then the throttle.
  ++failures_;
  if (retry_policy_.max_retries() != RetryPolicy::kUnlimitedRetries &&
      failures_ > retry_policy_.max_retries()) {
    return Stop(status, StopReason::kExhausted,
                absl::StrCat(
                    "gave up: retry policy exhausted (at most ",
                    retry_policy_.max_retries(),
                    retry_policy_.max_retries() == 1 ? " retry)" : " retries)"),
                now, final_status);
  }
  if (now >= end_) {
    return Stop(status, end_reason_,
                absl::StrCat("gave up: ", end_what, " was reached"), now,
                final_status);
  }
  if (!throttle_allows) {
    if (throttle_wait_enabled_ && throttle_->waiting()) {
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
    }
    return Stop(status, StopReason::kThrottled,
                "gave up: retry throttled (the client's retry token bucket is "
                "at or below half)",
                now, final_status);
  }
  // 4. Choose the wait; never start one that would end after the call's end.
  Wait chosen;
  std::string refusal;
  if (!ChooseWait(status, context, &chosen, &refusal)) {
    return Stop(status, StopReason::kThrottled,
                absl::StrCat("gave up: ", refusal), now, final_status);
  }
  if (end_ != time_point::max() && chosen.delay >= end_ - now) {
    return Stop(
        status, end_reason_,
        absl::StrCat("gave up: the next wait (", FormatDuration(chosen.delay),
                     ", ", ToString(chosen.reason), ") would pass ", end_what),
        now, final_status);
  }
  Notify(status, now, false, chosen, StopReason::kSuccess);
  if (log_sink_ != nullptr && log_level_ >= LogLevel::kRetries) {
    // Here a DEADLINE_EXCEEDED can only be the attempt's own timeout: the
    // call's end stopped the call above.
    Log(LogLevel::kRetries,
        absl::StrCat(
            "stubkit: ", method_.full_name, " attempt ", attempts_,
            " failed with ", Describe(status),
            deadline_exceeded
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
