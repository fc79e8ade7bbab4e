// Copyright 2026 The stubkit Authors.
//
// The reporter of one call: the one place that feeds the retry observer
// (RetryObserverOption), the log sink (LogLevelOption, LogSinkOption) and
// the metrics collector (MetricsOption). The retry loop hands it the facts
// of each attempt and each decision; the reporter reads each option once,
// and a sink that is not configured costs a null check.
//
// Which thread, which locks: the reporter is called by the thread that
// decides (the caller's for sync calls, a gRPC or timer thread for async
// ones), never under a stubkit lock: the observer and the sink are user
// code, and may call back into stubkit.
//
//   CallReporter reporter;
//   reporter.Configure(method.full_name, options);
//   if (reporter.logs(LogLevel::kRetries)) reporter.Log(..., line);
//   reporter.Observe(event);

#ifndef STUBKIT_INTERNAL_CALL_REPORTER_H_
#define STUBKIT_INTERNAL_CALL_REPORTER_H_

#include <google/protobuf/message.h>

#include <chrono>

#include "absl/strings/string_view.h"
#include "stubkit/logging.h"
#include "stubkit/metrics.h"
#include "stubkit/options.h"
#include "stubkit/retry_observer.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

class CallReporter {
 public:
  // Reports nothing until configured.
  CallReporter() = default;
  // Reads the observer, logging and metrics options for calls of `method`
  // (which must outlive the reporter).
  void Configure(absl::string_view method, const OptionsView& options);

  absl::string_view method() const { return method_; }
  // Whether a line at `level` is written: build a line only when it is.
  bool logs(LogLevel level) const {
    return sink_ != nullptr && level_ >= level;
  }
  void Log(LogLevel level, absl::string_view line) const {
    if (logs(level)) sink_->Write(line);
  }
  // Payloads are logged only at kRpc, and only when asked for.
  bool log_payloads() const { return payloads_; }
  void LogPayload(absl::string_view what,
                  const google::protobuf::Message& message) const;

  // Whether anything at all is reported; when not, the success path skips
  // reading the clock for it.
  bool active() const {
    return observer_ != nullptr || metrics_ != nullptr || logs(LogLevel::kRpc);
  }
  bool has_observer() const { return observer_ != nullptr; }
  // Hands `event` to the observer, if any, with the method filled in.
  void Observe(AttemptEvent& event) const;
  // Counts a finished call, if metrics are collected.
  void RecordCall(int attempts, StopReason reason,
                  std::chrono::nanoseconds elapsed, int hedges,
                  std::chrono::nanoseconds retry_delay) const;
  // Counts a hedged call whose hedge the hedging budget refused.
  void RecordHedgeRefusedByBudget() const;

 private:
  absl::string_view method_;
  const RetryObserverOption::Type* observer_ = nullptr;
  MetricsCollector* metrics_ = nullptr;
  LogSink* sink_ = nullptr;
  LogLevel level_ = LogLevel::kOff;
  bool payloads_ = false;
};

// Once per client: says that a retry the service config gave was dropped by
// the idempotency rule (DroppedRetryNoticeOption). Written even when the
// call's log level is unset, as a warning is: only kOff silences it.
void NoticeDroppedRetry(absl::string_view method, const OptionsView& options);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_CALL_REPORTER_H_
