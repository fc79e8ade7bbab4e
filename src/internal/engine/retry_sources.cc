// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/retry_sources.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/internal/base/hint_parsing.h"
#include "stubkit/server_hints.h"

namespace stubkit {
namespace internal {

using std::chrono::nanoseconds;

std::string ThrottleAdmission::Refusal() const {
  return "gave up: retry throttled (the client's retry token bucket is at or "
         "below half)";
}

std::string BudgetAdmission::Refusal() const {
  const RetryBudget::Config& config = budget_.config();
  const Clock::time_point now = Now();
  const int64_t retries = budget_.retries(now);
  const int64_t requests = budget_.requests(now);
  const bool hedges = spends_ == Spends::kHedges;
  const char* taken = hedges ? (retries == 1 ? " hedge" : " hedges")
                             : (retries == 1 ? " retry" : " retries");
  const char* counted = hedges ? (requests == 1 ? " call" : " calls")
                               : (requests == 1 ? " request" : " requests");
  return absl::StrCat("gave up: ", hedges ? "hedging" : "retry",
                      " budget spent (", retries, taken, " in the last ",
                      FormatDuration(config.ttl()), " for ", requests, counted,
                      "; it allows ", config.min_retries_per_second(),
                      "/s plus ", config.percent_can_retry() * 100, "% of the",
                      hedges ? " calls)" : " requests)");
}

bool BothAdmission::OnRetryableFailure() {
  const bool first = first_.OnRetryableFailure();
  const bool second = second_.OnRetryableFailure();
  refused_ = !first ? &first_ : !second ? &second_ : nullptr;
  return first && second;
}

bool BothAdmission::Admits() const {
  refused_ = !first_.Admits()    ? &first_
             : !second_.Admits() ? &second_
                                 : nullptr;
  return refused_ == nullptr;
}

bool BothAdmission::Take() {
  refused_ = !first_.Take() ? &first_ : !second_.Take() ? &second_ : nullptr;
  return refused_ == nullptr;
}

bool BothAdmission::TryRelease(Clock::time_point now,
                               absl::FunctionRef<bool()> also) {
  bool second_refused = false;
  const bool released = first_.TryRelease(now, [&] {
    second_refused = !second_.TryRelease(now, also);
    return !second_refused;
  });
  refused_ = released ? nullptr : second_refused ? &second_ : &first_;
  return released;
}

CallAdmission::CallAdmission(RetryThrottle* throttle, bool wait_enabled,
                             RetryBudget* budget, const Clock* clock,
                             Clock::time_point attempt_start,
                             Clock::time_point now) {
  if (throttle != nullptr) {
    throttle_.emplace(*throttle, wait_enabled, attempt_start, now);
    source_ = &*throttle_;
  }
  if (budget != nullptr) {
    budget_.emplace(*budget, clock);
    source_ = &*budget_;
  }
  if (throttle_ && budget_) {
    // The throttle first: its Take takes nothing.
    both_.emplace(*throttle_, *budget_);
    source_ = &*both_;
  }
}

BackoffWaits::BackoffWaits(const ExponentialBackoffPolicy& backoff,
                           const OptionsView& options,
                           const CallReporter& reporter)
    : backoff_(backoff),
      options_(options),
      reporter_(reporter),
      use_hints_(options.get<ServerHintsOption>()) {}

ServerHint ReadServerHint(
    const std::multimap<grpc::string_ref, grpc::string_ref>* trailers,
    const absl::Status& status, const OptionsView& options) {
  ServerHint hint;
  if (trailers != nullptr) {
    auto pushback = trailers->find(kRetryPushbackHeader);
    if (pushback != trailers->end()) {
      absl::string_view value(pushback->second.data(), pushback->second.size());
      Pushback parsed = ParsePushback(value);
      if (parsed.kind == Pushback::Kind::kDoNotRetry) {
        hint.kind = ServerHint::Kind::kRefused;
        hint.reason = WaitReason::kPushback;
        hint.refusal =
            absl::StrCat("the server said not to retry (", kRetryPushbackHeader,
                         ": ", value.substr(0, 32), ")");
        return hint;
      }
      hint.kind = ServerHint::Kind::kWait;
      hint.delay = parsed.delay;
      hint.reason = WaitReason::kPushback;
    }
  }
  if (auto details = status.GetPayload(kErrorDetailsPayloadKey)) {
    RetryInfoHint parsed = details->size() > kMaxStatusDetailsBytes
                               ? RetryInfoHint{RetryInfoHint::Kind::kMalformed}
                               : ParseRetryInfoDelay(std::string(*details));
    if (parsed.kind == RetryInfoHint::Kind::kDelay) {
      if (hint.kind == ServerHint::Kind::kNone || parsed.delay > hint.delay) {
        hint.kind = ServerHint::Kind::kWait;
        hint.delay = parsed.delay;
        hint.reason = WaitReason::kRetryInfo;
      }
    } else if (parsed.kind == RetryInfoHint::Kind::kMalformed) {
      hint.malformed_details = details->size();
    }
  }
  if (hint.kind == ServerHint::Kind::kNone) return hint;
  // Read only here: most failures carry no hint.
  const nanoseconds ceiling = options.get<ServerHintCeilingOption>();
  if (hint.delay > ceiling) {
    hint.kind = ServerHint::Kind::kRefused;
    hint.refusal =
        absl::StrCat("the server asked to wait ", FormatDuration(hint.delay),
                     " (", ToString(hint.reason), "), longer than ",
                     FormatDuration(ceiling), " (ServerHintCeilingOption)");
  }
  return hint;
}

WaitChoice BackoffWaits::NextWait(const absl::Status& status, int failures) {
  WaitChoice choice;
  choice.delay = backoff_.DelayFor(failures - 1 - backoff_origin_);
  choice.reason = WaitReason::kBackoff;
  if (!use_hints_) return choice;
  ServerHint hint = ReadServerHint(trailers_, status, options_);
  if (hint.malformed_details.has_value()) {
    reporter_.OnMalformedDetails(*hint.malformed_details);
  }
  switch (hint.kind) {
    case ServerHint::Kind::kNone:
      return choice;
    case ServerHint::Kind::kRefused:
      choice.refused = true;
      choice.refusal = std::move(hint.refusal);
      return choice;
    case ServerHint::Kind::kWait:
      break;
  }
  choice.delay = hint.delay;
  choice.reason = hint.reason;
  // A6: "If this attempt also fails, retry delay will reset to initial
  // backoff for the following retry."
  backoff_origin_ = failures;
  return choice;
}

RetryDecision RunRetryDecision(const absl::Status& status,
                               const FailureFacts& facts,
                               const RetryPolicy& policy,
                               AdmissionSource* admission, WaitSource& waits) {
  if (auto stop = DecideOutcome(status, facts, policy)) return *std::move(stop);
  // A retryable failure says the backend struggles, whatever happens next.
  AdmissionAnswer answer;
  if (admission != nullptr && !admission->OnRetryableFailure()) {
    answer.admitted = false;
    answer.may_wait = admission->MayWait();
    if (!answer.may_wait) answer.refusal = admission->Refusal();
  }
  const bool timed_out = AttemptTimedOut(status, facts);
  if (auto next = DecideAdmission(facts, policy, answer, timed_out)) {
    return *std::move(next);
  }
  RetryDecision decision =
      DecideWait(facts, waits.NextWait(status, facts.failures + 1), timed_out);
  // Last, so that a call stopped by any step spends nothing; another call
  // may have taken the last of a shared budget since the answer above.
  if (decision.take_admission && admission != nullptr && !admission->Take()) {
    return StopDecision(StopReason::kThrottled, admission->Refusal(),
                        decision.failures);
  }
  return decision;
}

HedgeLaunch RunHedgeLaunch(int index, int max_attempts, bool pushed_back,
                           bool refused, AdmissionSource* admission) {
  const HedgeLaunch launch =
      DecideHedgeLaunch(index, max_attempts, pushed_back, refused);
  if (launch != HedgeLaunch::kAskAdmission) return launch;
  return admission == nullptr || (admission->Admits() && admission->Take())
             ? HedgeLaunch::kLaunch
             : HedgeLaunch::kThrottled;
}

HedgeDecision RunHedgeDecision(const absl::Status& status,
                               const HedgeFailureFacts& facts,
                               const HedgingPolicy& policy,
                               AdmissionSource* admission) {
  if (auto end = DecideHedgeOutcome(status, facts, policy)) {
    return *std::move(end);
  }
  // Counted whatever follows (the token bucket counts each failure).
  const bool admitted = admission == nullptr || admission->OnRetryableFailure();
  return DecideHedgeAfterFailure(facts, admitted);
}

}  // namespace internal
}  // namespace stubkit
