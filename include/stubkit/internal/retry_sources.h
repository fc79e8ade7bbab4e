// Copyright 2026 The stubkit Authors.
//
// The sources the retry decision (stubkit/internal/retry_decision.h) draws
// on in a call of the retry loop:
//
//   ThrottleAdmission  admission: the retry throttle's token bucket, and
//                      its waiting mode (stubkit/retry_throttle.h)
//   BackoffWaits       the wait: the backoff policy's delay, replaced by a
//                      server's hint (grpc-retry-pushback-ms, RetryInfo)
//                      within ServerHintCeilingOption
//
// A new admission rule (a retry budget) or a new wait rule (a deadline
// inherited from a server's call) is a new class here.
//
//   BackoffWaits waits(backoff_policy, options, reporter);
//   waits.SetAttempt(&context.GetServerTrailingMetadata());
//   DecideAfterFailure(status, facts, policy, &admission, waits);

#ifndef STUBKIT_INTERNAL_RETRY_SOURCES_H_
#define STUBKIT_INTERNAL_RETRY_SOURCES_H_

#include <grpcpp/support/string_ref.h>

#include <map>
#include <string>

#include "absl/status/status.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/internal/call_reporter.h"
#include "stubkit/internal/retry_decision.h"
#include "stubkit/options.h"
#include "stubkit/retry_throttle.h"

namespace stubkit {
namespace internal {

// The retry throttle as the decision's admission source.
class ThrottleAdmission final : public AdmissionSource {
 public:
  // `wait_enabled`: the loop supports the throttle's waiting mode.
  ThrottleAdmission(RetryThrottle& throttle, bool wait_enabled)
      : throttle_(throttle), wait_enabled_(wait_enabled) {}
  bool OnRetryableFailure() override { return throttle_.OnRetryableFailure(); }
  bool Admits() const override { return throttle_.RetryAllowed(); }
  bool MayWait() const override {
    return wait_enabled_ && throttle_.waiting_mode();
  }
  std::string Refusal() const override;
  // The bucket counts failures, not retries: nothing to take.
  bool Take() override { return true; }

 private:
  RetryThrottle& throttle_;
  const bool wait_enabled_;
};

// Backoff, or the server's hint in the failed attempt's trailers and status
// (with both hints, the longer). A hint resets the backoff: the wait after
// the next failure is the initial one again (gRFC A6).
class BackoffWaits final : public WaitSource {
 public:
  // `backoff`, `options` and `reporter` outlive this object.
  BackoffWaits(const ExponentialBackoffPolicy& backoff,
               const OptionsView& options, const CallReporter& reporter);
  // The trailers of the attempt that just failed, before each decision;
  // they outlive it.
  void SetAttempt(
      const std::multimap<grpc::string_ref, grpc::string_ref>* trailers) {
    trailers_ = trailers;
  }
  WaitChoice NextWait(const absl::Status& status, int failures) override;
  // The retry policy started again (a resumed stream): so does the backoff.
  void Restart() { backoff_origin_ = 0; }
  // Whether server hints are followed (ServerHintsOption).
  bool use_hints() const { return use_hints_; }

 private:
  const ExponentialBackoffPolicy& backoff_;
  const OptionsView& options_;
  const CallReporter& reporter_;
  const bool use_hints_;
  const std::multimap<grpc::string_ref, grpc::string_ref>* trailers_ = nullptr;
  // The failure count when a server's hint last chose the wait.
  int backoff_origin_ = 0;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_RETRY_SOURCES_H_
