// Copyright 2026 The stubkit Authors.
//
// The reporter of one call: the one place that builds observer events
// (RetryObserverOption), log lines (LogLevelOption, LogSinkOption) and
// metric updates (MetricsOption). Drivers hand it the facts of each step,
// named after what happened: an attempt starts, is retried, waits for the
// throttle, the call stops or succeeds. It reads each option once, and a
// sink that is not configured costs a null check; a line is formatted only
// when it will be written.
//
// Which thread, which locks: the reporter is called by the thread that
// decides (the caller's for sync calls, a gRPC or timer thread for async
// ones), never under a stubkit lock: the observer and the sink are user
// code, and may call back into stubkit.
//
//   CallReporter reporter;
//   reporter.Configure(method.full_name, options);
//   reporter.OnRetry(ended, Wait{delay, WaitReason::kBackoff}, no_timeout);
//   reporter.OnStop(ended, reason, explanation, totals);

#ifndef STUBKIT_INTERNAL_CALL_REPORTER_H_
#define STUBKIT_INTERNAL_CALL_REPORTER_H_

#include <google/protobuf/message.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/clock.h"
#include "stubkit/logging.h"
#include "stubkit/metrics.h"
#include "stubkit/options.h"
#include "stubkit/retry_observer.h"
#include "stubkit/status.h"

namespace stubkit {
namespace internal {

// An attempt's end, from which the reporter builds the observer's event.
struct EndedAttempt {
  int attempt = 0;  // from 1
  absl::Status status;
  Clock::time_point attempt_start;
  Clock::time_point now;         // when it ended (or was decided on)
  Clock::time_point call_start;  // for the event's `elapsed`
  // The attempt's context while it lives, else null.
  const grpc::ClientContext* context = nullptr;
  bool started_on_reconnect = false;
  bool hedge_loser = false;
};

// A wait and why, as the observer's event carries them.
struct ReportedWait {
  std::chrono::nanoseconds delay{0};
  WaitReason reason = WaitReason::kNone;
};

// What a call's end counts in the metrics.
struct CallTotals {
  int attempts = 0;
  int hedges = 0;  // attempts after the first of a hedged call
  std::chrono::nanoseconds elapsed{0};
  std::chrono::nanoseconds retry_delay{0};
};

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

  // Attempt `attempt` starts at `now` with `deadline` (max: none): the
  // kRpc line with its timeout and the metadata it sends (credentials
  // redacted; `attempt_header`: with x-retry-attempt). With `deferred` the
  // line is stored there, for a caller holding a lock to `Log` later.
  void OnAttemptStart(
      int attempt, Clock::time_point now, Clock::time_point deadline,
      bool to_first_response,
      const std::vector<std::pair<std::string, std::string>>* metadata,
      bool attempt_header, std::string* deferred = nullptr) const;
  // The attempt failed and is retried after `wait`: its event and the
  // kRetries line. `attempt_timeout` non-zero: the attempt's own timeout
  // (AttemptTimeoutOption) ended it.
  void OnRetry(const EndedAttempt& ended, ReportedWait wait,
               std::chrono::nanoseconds attempt_timeout) const;
  // The attempt failed and the call waits for the throttle to let it retry
  // (its waiting mode), polling first after `first_poll`.
  void OnThrottleWait(const EndedAttempt& ended,
                      std::chrono::nanoseconds first_poll) const;
  // The call stopped for `reason`: the final event, the call's metrics,
  // and a line at kRetries (kRpc for a permanent error or a cancel on the
  // first attempt, the caller's business).
  void OnStop(const EndedAttempt& ended, StopReason reason,
              absl::string_view explanation, const CallTotals& totals) const;
  // The call succeeded: the final event, its metrics, a kRpc line.
  void OnSuccess(const EndedAttempt& ended, const CallTotals& totals) const;
  // A hedged call's attempt other than the one the final event describes
  // (its wait: the hint a failed one's successor waited).
  void OnHedgedAttempt(const EndedAttempt& ended, ReportedWait wait) const;
  // A wait ended early, `waited` of `planned`, on the channel's return;
  // attempt `next` starts.
  void OnChannelReady(int next, std::chrono::nanoseconds waited,
                      std::chrono::nanoseconds planned) const;
  // A server's status details could not be read (`bytes` long).
  void OnMalformedDetails(size_t bytes) const;
  // An event of `kCounter`, a COUNTER row of STUBKIT_METRICS (a metric
  // counted when it happens, not at the call's end); e.g.
  // Count<&MethodMetrics::hedges_refused_by_budget>().
  template <int64_t MethodMetrics::*kCounter>
  void Count() const {
    if (metrics_ != nullptr) metrics_->Count<kCounter>(method_);
  }
  // A call refused for invalid options before any attempt (counted like
  // any other call's end, so a misconfigured client shows in its metrics);
  // before, or without, `Configure`.
  static void OnInvalidOptions(absl::string_view method,
                               const OptionsView& options);

 private:
  // Hands the event built from `ended` to the observer.
  void Observe(const EndedAttempt& ended, bool final, ReportedWait wait,
               StopReason reason) const;
  void RecordCall(StopReason reason, const CallTotals& totals) const;

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
