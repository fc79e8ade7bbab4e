// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/call_reporter.h"

#include "absl/strings/str_cat.h"
#include "stubkit/internal/method_options_table.h"

namespace stubkit {
namespace internal {

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

void CallReporter::Observe(AttemptEvent& event) const {
  if (observer_ == nullptr) return;
  event.method = method_;
  (*observer_)(event);
}

void CallReporter::RecordCall(int attempts, StopReason reason,
                              std::chrono::nanoseconds elapsed, int hedges,
                              std::chrono::nanoseconds retry_delay) const {
  if (metrics_ == nullptr) return;
  metrics_->RecordCall(method_, attempts, reason, elapsed, hedges, retry_delay);
}

void CallReporter::RecordHedgeRefusedByBudget() const {
  if (metrics_ != nullptr) metrics_->RecordHedgeRefusedByBudget(method_);
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
