// Copyright 2026 The stubkit Authors.

#include "stubkit/long_running_operation.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "src/internal/base/format.h"
#include "stubkit/cancellation.h"
#include "stubkit/internal/entry/operation_poller.h"
#include "stubkit/retry_options.h"
#include "stubkit/status.h"

namespace stubkit {

PollingPolicy::PollingPolicy(ExponentialBackoffPolicy backoff,
                             std::chrono::nanoseconds time_limit)
    : backoff_(std::move(backoff)), time_limit_(time_limit) {}

absl::Status PollingPolicy::status() const {
  if (!backoff_.status().ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PollingPolicy: ", backoff_.status().message()));
  }
  if (time_limit_ <= std::chrono::nanoseconds::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PollingPolicy: time_limit must be positive, got ",
                     internal::FormatDuration(time_limit_)));
  }
  return absl::OkStatus();
}

std::string PollingPolicy::ToString() const {
  return absl::StrCat("PollingPolicy(", backoff_.ToString(), ", time limit ",
                      internal::FormatDuration(time_limit_), ")");
}

std::optional<std::string> GetOperationName(const absl::Status& status) {
  auto name = status.GetPayload(kOperationNamePayloadKey);
  if (!name.has_value()) return std::nullopt;
  return std::string(*name);
}

namespace internal {

absl::Status WithOperationName(absl::Status status, const std::string& name) {
  if (!status.ok() && !name.empty()) {
    status.SetPayload(kOperationNamePayloadKey, absl::Cord(name));
  }
  return status;
}

absl::Status NoOperationsClient(absl::string_view method) {
  return absl::FailedPreconditionError(absl::StrCat(
      method,
      ": cannot poll the operation: the client was built from a connection "
      "without the google.longrunning.Operations connection to poll on; set "
      "the client's OperationsConnectionOption"));
}

absl::Status OperationFailed(absl::string_view method, const std::string& name,
                             int code, const std::string& message,
                             std::string serialized_status) {
  absl::StatusCode status_code = static_cast<absl::StatusCode>(code);
  std::string text = message;
  if (code <= 0 || code > 16) {
    // OK (or no code) is not a failure; an unknown code is not ours to map.
    text = absl::StrCat(message, " [stubkit: operation ", name, " of ", method,
                        " failed with code ", code, "]");
    status_code = absl::StatusCode::kUnknown;
  }
  absl::Status status(status_code, text);
  status.SetPayload(kErrorDetailsPayloadKey,
                    absl::Cord(std::move(serialized_status)));
  return WithOperationName(std::move(status), name);
}

absl::Status ResponseTypeMismatch(absl::string_view method,
                                  const std::string& name,
                                  absl::string_view type_url,
                                  absl::string_view expected) {
  return WithOperationName(
      absl::InternalError(absl::StrCat(
          method, ": operation ", name, " finished with a response of type '",
          type_url, "', but the method's operation_info declares '", expected,
          "' (or the response does not parse as one)")),
      name);
}

absl::Status NoResult(absl::string_view method, const std::string& name) {
  return WithOperationName(
      absl::InternalError(absl::StrCat(method, ": operation ", name,
                                       " is done but has neither a response "
                                       "nor an error")),
      name);
}

absl::Status PollingTimedOut(absl::string_view method, const std::string& name,
                             int polls, std::chrono::nanoseconds elapsed,
                             const PollingPolicy& policy) {
  return WithOperationName(
      absl::DeadlineExceededError(absl::StrCat(
          method, ": operation ", name, " is not done after ", polls,
          polls == 1 ? " poll" : " polls", " over ", FormatDuration(elapsed),
          "; the polling policy's time limit is ",
          FormatDuration(policy.time_limit()),
          ". Resume polling by the operation's name "
          "(stubkit::GetOperationName(status))")),
      name);
}

absl::Status PollingCancelled(absl::string_view method, const std::string& name,
                              bool cancel_requested,
                              const absl::Status& cancel_result) {
  std::string text =
      absl::StrCat(method, ": polling operation ", name, " was cancelled");
  if (cancel_requested) {
    absl::StrAppend(&text, cancel_result.ok()
                               ? "; CancelOperation was sent"
                               : absl::StrCat("; CancelOperation failed: ",
                                              cancel_result.ToString()));
  } else {
    absl::StrAppend(&text, "; the operation itself was not cancelled");
  }
  return WithOperationName(absl::CancelledError(text), name);
}

absl::Status InvalidPollingPolicy(absl::string_view method,
                                  const PollingPolicy& policy) {
  return absl::InvalidArgumentError(
      absl::StrCat(method, ": ", policy.status().message()));
}

Options PollCallOptions(const Options& call) {
  Options poll = call;
  poll.unset<IdempotencyOption>();
  return poll;
}

Options CancelCallOptions(const Options& call) {
  Options cancel = PollCallOptions(call);
  cancel.set<CancellationOption>(nullptr);
  return cancel;
}

Options PollWithinLimit(const Options& poll_call,
                        std::chrono::nanoseconds total_timeout,
                        std::chrono::nanoseconds remaining) {
  Options poll = poll_call;
  if (remaining <= std::chrono::nanoseconds::zero()) {
    poll.set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(0));
  } else if (total_timeout <= std::chrono::nanoseconds::zero() ||
             remaining < total_timeout) {
    poll.set<TotalTimeoutOption>(remaining);
  } else {
    // Set again even when it came from the call's own options: one from the
    // client's, a method's or a service's layer is not in them, and the
    // Operations client resolves the poll with its own layers.
    poll.set<TotalTimeoutOption>(total_timeout);
  }
  return poll;
}

std::chrono::nanoseconds PollWait(const PollingPolicy& policy, int polls,
                                  std::chrono::nanoseconds remaining) {
  return std::min(policy.backoff().DelayFor(polls), remaining);
}

}  // namespace internal
}  // namespace stubkit
