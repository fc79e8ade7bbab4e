// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/validate_options.h"

#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/call_options.h"
#include "stubkit/internal/api/call_setup.h"
#include "stubkit/internal/api/method_options_table.h"
#include "stubkit/internal/base/metadata.h"
#include "stubkit/logging.h"
#include "stubkit/retry_budget.h"
#include "stubkit/retry_options.h"
#include "stubkit/retry_throttle.h"
#include "stubkit/server_hints.h"
#include "stubkit/server_propagation.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::nanoseconds;

bool IsValid(Idempotency idempotency) {
  return idempotency == Idempotency::kIdempotent ||
         idempotency == Idempotency::kNonIdempotent;
}

// IdempotencyOption and IdempotencyMapOption: Idempotency values, and
// names that are not empty.
absl::Status ValidateIdempotency(const OptionsView& options) {
  if (const Idempotency* forced = options.find<IdempotencyOption>()) {
    if (!IsValid(*forced)) {
      return absl::InvalidArgumentError(
          absl::StrCat("IdempotencyOption: not an Idempotency value (",
                       static_cast<int>(*forced), ")"));
    }
  }
  if (const auto* by_name = options.find<IdempotencyMapOption>()) {
    for (const auto& [name, idempotency] : *by_name) {
      if (name.empty()) {
        return absl::InvalidArgumentError(
            "IdempotencyMapOption: a method name is empty; keys are full "
            "proto names, \"package.Service.Method\"");
      }
      if (!IsValid(idempotency)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "IdempotencyMapOption: \"", name, "\" maps to ",
            static_cast<int>(idempotency), ", not an Idempotency value"));
      }
    }
  }
  return absl::OkStatus();
}

// The options only a retried (or hedged) call reads: throttle, budget,
// server hints, idempotency, logging. An AdaptiveHedgingOption is read only
// by hedged calls, which check it (HedgedOperationBase::Begin).
absl::Status ValidateRetryOptions(const OptionsView& options) {
  if (const auto* throttle = options.find<RetryThrottleOption>()) {
    if (*throttle != nullptr && !(*throttle)->status().ok()) {
      return (*throttle)->status();
    }
  }
  if (const auto* budget = options.find<RetryBudgetOption>()) {
    if (*budget != nullptr && !(*budget)->status().ok()) {
      return (*budget)->status();
    }
  }
  if (const auto* ceiling = options.find<ServerHintCeilingOption>()) {
    if (*ceiling <= nanoseconds::zero()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ServerHintCeilingOption must be positive, got ",
          FormatDuration(*ceiling),
          "; to ignore server hints set ServerHintsOption to false"));
    }
  }
  if (absl::Status status = ValidateIdempotency(options); !status.ok()) {
    return status;
  }
  if (const int* incoming = options.find<IncomingAttemptOption>()) {
    if (*incoming < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "IncomingAttemptOption must not be negative, got ", *incoming));
    }
  }
  if (const NestedRetry* nested = options.find<NestedRetryOption>()) {
    if (*nested != NestedRetry::kAsUsual && *nested != NestedRetry::kOnce &&
        *nested != NestedRetry::kNever) {
      return absl::InvalidArgumentError(
          absl::StrCat("NestedRetryOption: not a NestedRetry value (",
                       static_cast<int>(*nested), ")"));
    }
  }
  if (const LogLevel* level = options.find<LogLevelOption>()) {
    if (*level != LogLevel::kOff && *level != LogLevel::kRetries &&
        *level != LogLevel::kRpc) {
      return absl::InvalidArgumentError(
          absl::StrCat("LogLevelOption: not a LogLevel value (",
                       static_cast<int>(*level), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateOptions(const OptionsView& options,
                             const RetryPolicy* retry_policy,
                             const ExponentialBackoffPolicy* backoff_policy) {
  const bool retried = retry_policy != nullptr;
  if (retried) {
    // A generated client's refusal (a request-aware idempotency predicate
    // for another request type); only ever in the call's own layer.
    if (const auto* refusal = options.call().find<CallRefusalOption>()) {
      if (!refusal->ok()) return *refusal;
    }
    if (!retry_policy->status().ok()) return retry_policy->status();
    if (!backoff_policy->status().ok()) return backoff_policy->status();
  }
  // Every default is valid.
  if (NothingSet(options)) return absl::OkStatus();
  if (absl::Status status = ValidateCallOptions(options); !status.ok()) {
    return status;
  }
  nanoseconds attempt_timeout = options.get<AttemptTimeoutOption>();
  if (attempt_timeout < nanoseconds::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AttemptTimeoutOption must not be negative, got ",
                     FormatDuration(attempt_timeout)));
  }
  nanoseconds total_timeout = options.get<TotalTimeoutOption>();
  if (total_timeout < nanoseconds::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TotalTimeoutOption must not be negative, got ",
                     FormatDuration(total_timeout)));
  }
  if (const auto* min_attempt = options.find<MinAttemptTimeOption>()) {
    if (*min_attempt < nanoseconds::zero()) {
      return absl::InvalidArgumentError(
          absl::StrCat("MinAttemptTimeOption must not be negative, got ",
                       FormatDuration(*min_attempt)));
    }
  }
  if (retried) {
    if (absl::Status status = ValidateRetryOptions(options); !status.ok()) {
      return status;
    }
  }
  // gRPC 1.51 aborts the process on an illegal key or value when the call
  // starts; refuse it here instead, naming the key.
  if (const auto* metadata = options.find<MetadataOption>()) {
    absl::Status status = ValidateMetadata(*metadata);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("MetadataOption: ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace stubkit
