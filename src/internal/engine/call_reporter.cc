// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/call_reporter.h"

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::nanoseconds;

std::string Describe(const absl::Status& status) {
  return absl::StrCat(StatusCodeName(static_cast<int>(status.code())), ": ",
                      status.message());
}

}  // namespace

void CallReporter::Configure(absl::string_view method,
                             const OptionsView& options) {
  method_ = method;
  // Each optional sink costs one lookup here and a null check later.
  if (const auto* observer = options.find<RetryObserverOption>()) {
    if (*observer) observer_ = observer;
  }
  metrics_ = options.get<MetricsOption>().get();
  level_ = options.get<LogLevelOption>();
  if (level_ != LogLevel::kOff) {
    sink_ = options.get<LogSinkOption>().get();
    if (sink_ == nullptr) sink_ = StderrLogSink().get();
    payloads_ = level_ == LogLevel::kRpc && options.get<LogPayloadsOption>();
  }
}

void CallReporter::LogPayload(absl::string_view what,
                              const google::protobuf::Message& message) const {
  Log(LogLevel::kRpc, absl::StrCat("stubkit: ", method_, " ", what, " {",
                                   message.ShortDebugString(), "}"));
}

void CallReporter::Observe(const EndedAttempt& ended, bool final,
                           ReportedWait wait, StopReason reason) const {
  if (observer_ == nullptr) return;
  AttemptEvent event;
  event.method = method_;
  event.attempt = ended.attempt;
  event.status = ended.status;
  event.attempt_duration = ended.now - ended.attempt_start;
  event.elapsed = ended.now - ended.call_start;
  event.final = final;
  event.wait = wait.delay;
  event.wait_reason = wait.reason;
  event.stop_reason = reason;
  event.context = ended.context;
  event.started_on_reconnect = ended.started_on_reconnect;
  event.hedge_loser = ended.hedge_loser;
  (*observer_)(event);
}

void CallReporter::RecordCall(StopReason reason,
                              const CallTotals& totals) const {
  if (metrics_ == nullptr) return;
  metrics_->RecordCall(method_, totals.attempts, reason, totals.elapsed,
                       totals.hedges, totals.retry_delay);
}

void CallReporter::OnAttemptStart(
    int attempt, Clock::time_point now, Clock::time_point deadline,
    bool to_first_response,
    const std::vector<std::pair<std::string, std::string>>* metadata,
    bool attempt_header, std::string* deferred) const {
  if (!logs(LogLevel::kRpc)) return;
  std::vector<std::pair<std::string, std::string>> sent;
  if (metadata != nullptr) sent = *metadata;
  if (attempt_header) {
    sent.emplace_back(kRetryAttemptHeader, std::to_string(attempt));
  }
  std::string line = absl::StrCat(
      "stubkit: ", method_, " attempt ", attempt, " starts; timeout ",
      deadline == Clock::time_point::max() ? std::string("none")
                                           : FormatDuration(deadline - now),
      to_first_response ? " to the first response" : "", "; metadata {",
      FormatMetadataRedacted(sent), "}");
  if (deferred != nullptr) {
    *deferred = std::move(line);
  } else {
    sink_->Write(line);
  }
}

void CallReporter::OnRetry(const EndedAttempt& ended, ReportedWait wait,
                           nanoseconds attempt_timeout) const {
  Observe(ended, /*final=*/false, wait, StopReason::kSuccess);
  if (!logs(LogLevel::kRetries)) return;
  sink_->Write(absl::StrCat("stubkit: ", method_, " attempt ", ended.attempt,
                            " failed with ", Describe(ended.status),
                            attempt_timeout > nanoseconds::zero()
                                ? absl::StrCat(" after its attempt timeout (",
                                               FormatDuration(attempt_timeout),
                                               ", AttemptTimeoutOption)")
                                : std::string(),
                            "; retrying in ", FormatDuration(wait.delay), " (",
                            ToString(wait.reason), ")"));
}

void CallReporter::OnThrottleWait(const EndedAttempt& ended,
                                  nanoseconds first_poll) const {
  Observe(ended, /*final=*/false,
          ReportedWait{first_poll, WaitReason::kThrottle},
          StopReason::kSuccess);
  if (!logs(LogLevel::kRetries)) return;
  sink_->Write(absl::StrCat("stubkit: ", method_, " attempt ", ended.attempt,
                            " failed with ", Describe(ended.status),
                            "; waiting for the backend to recover (retry "
                            "throttle, waiting mode)"));
}

void CallReporter::OnStop(const EndedAttempt& ended, StopReason reason,
                          absl::string_view explanation,
                          const CallTotals& totals) const {
  Observe(ended, /*final=*/true, ReportedWait{}, reason);
  RecordCall(reason, totals);
  // Every call that gives up is worth a line at `retries`, whatever the
  // reason (the non-idempotent case answers "why wasn't it retried?"); a
  // permanent error or a cancel on the first attempt, never meant to be
  // retried, is the caller's business.
  const bool callers_business =
      totals.attempts <= 1 && (reason == StopReason::kPermanentError ||
                               reason == StopReason::kCancelled);
  const LogLevel level = callers_business ? LogLevel::kRpc : LogLevel::kRetries;
  if (!logs(level)) return;
  if (totals.attempts == 0) {
    sink_->Write(absl::StrCat("stubkit: ", method_,
                              " stopped before any attempt: ",
                              Describe(ended.status), "; ", explanation));
    return;
  }
  sink_->Write(absl::StrCat("stubkit: ", method_, " attempt ", totals.attempts,
                            " failed with ", Describe(ended.status), "; ",
                            explanation, " after ", totals.attempts,
                            totals.attempts == 1 ? " attempt" : " attempts"));
}

void CallReporter::OnSuccess(const EndedAttempt& ended,
                             const CallTotals& totals) const {
  Observe(ended, /*final=*/true, ReportedWait{}, StopReason::kSuccess);
  RecordCall(StopReason::kSuccess, totals);
  // Built only when it will be written: formatting it costs an allocation
  // on every call.
  if (!logs(LogLevel::kRpc)) return;
  sink_->Write(absl::StrCat("stubkit: ", method_, " attempt ", ended.attempt,
                            " OK after ",
                            FormatDuration(ended.now - ended.attempt_start)));
}

void CallReporter::OnHedgedAttempt(const EndedAttempt& ended,
                                   ReportedWait wait) const {
  Observe(ended, /*final=*/false, wait, StopReason::kSuccess);
}

void CallReporter::OnChannelReady(int next, nanoseconds waited,
                                  nanoseconds planned) const {
  if (!logs(LogLevel::kRetries)) return;
  sink_->Write(absl::StrCat("stubkit: ", method_,
                            " the channel is ready again; attempt ", next,
                            " starts after ", FormatDuration(waited),
                            " of its ", FormatDuration(planned), " wait"));
}

void CallReporter::OnMalformedDetails(size_t bytes) const {
  if (!logs(LogLevel::kRetries)) return;
  sink_->Write(absl::StrCat("stubkit: ", method_,
                            " ignoring malformed or oversized status details (",
                            bytes, " bytes)"));
}

void CallReporter::OnInvalidOptions(absl::string_view method,
                                    const OptionsView& options) {
  if (MetricsCollector* metrics = options.get<MetricsOption>().get()) {
    metrics->RecordCall(method, 0, StopReason::kInvalidArgument,
                        nanoseconds(0));
  }
}

void NoticeDroppedRetry(absl::string_view method, const OptionsView& options) {
  const auto* notice = options.find<DroppedRetryNoticeOption>();
  if (notice == nullptr || *notice == nullptr || (*notice)->exchange(true)) {
    return;
  }
  const LogLevel* level = options.find<LogLevelOption>();
  if (level != nullptr && *level == LogLevel::kOff) return;
  LogSink* sink = options.get<LogSinkOption>().get();
  if (sink == nullptr) sink = StderrLogSink().get();
  sink->Write(absl::StrCat(
      "stubkit: ", method,
      ": the service config retries it, but it is not idempotent by "
      "stubkit's rule (ServiceConfigImport::keep_idempotency_rules): not "
      "retried; mark it idempotent if the server deduplicates it"));
}

}  // namespace internal
}  // namespace stubkit
