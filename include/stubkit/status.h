// Copyright 2026 The stubkit Authors.
//
// Status conversion and the retry summary: docs/retry-semantics.md.
//
// stubkit returns `absl::Status` / `absl::StatusOr<T>`. A gRPC error keeps
// its code, message and binary details (`grpc::Status::error_details()`, a
// serialized `google.rpc.Status`, as a payload that converts back
// losslessly). A call that gave up retrying keeps the last attempt's code,
// appends a summary to the message and attaches a machine-readable one:
//
// ```cpp
// #include <optional>
// #include <string>
//
// #include "stubkit/stubkit.h"
//
// grpc::Status RoundTrip(const grpc::Status& grpc_status) {
//   absl::Status status = stubkit::FromGrpcStatus(grpc_status);
//   std::optional<std::string> details = stubkit::GetErrorDetails(status);
//   return stubkit::ToGrpcStatus(status);  // the same details
// }
//
// // status.message() of a call that retried and gave up, e.g.
// // "backend down [stubkit: gave up: retry policy exhausted (at most 3
// // retries); 4 attempts over 7.1s]".
// bool RetriedAndGaveUp(const absl::Status& status) {
//   std::optional<stubkit::RetrySummary> s = stubkit::GetRetrySummary(status);
//   return s && s->stop_reason == stubkit::StopReason::kExhausted &&
//          s->attempts > 1;
// }
// ```

#ifndef STUBKIT_STATUS_H_
#define STUBKIT_STATUS_H_

#include <grpcpp/support/status.h>

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace stubkit {

// Payload keys under which stubkit stores data in an `absl::Status`.
inline constexpr absl::string_view kErrorDetailsPayloadKey =
    "type.googleapis.com/google.rpc.Status";
inline constexpr absl::string_view kRetrySummaryPayloadKey =
    "stubkit/RetrySummary";

absl::Status FromGrpcStatus(const grpc::Status& status);
grpc::Status ToGrpcStatus(const absl::Status& status);

// The server's serialized `google.rpc.Status`, if it sent one.
std::optional<std::string> GetErrorDetails(const absl::Status& status);

// Why a call stopped.
enum class StopReason {
  kSuccess,
  kPermanentError,   // the status code is not retryable
  kNonIdempotent,    // retryable code, but the call is not idempotent
  kExhausted,        // the retry policy ran out of time or failures
  kDeadline,         // the call's own deadline or total timeout
  kThrottled,        // the retry throttle refused another attempt
  kCancelled,        // the caller cancelled the call
  kInvalidArgument,  // the options were invalid; nothing was sent
  kNotResumable,     // a stream could not resume: it broke after
                     // delivering messages with no resume hook, or the
                     // hook declined; or an async stream's writes queued
                     // past 4 MiB while it waited to reopen
  kServerRefused,    // the server's answer ruled out a retry: a "don't
                     // retry" pushback, or a wait longer than
                     // ServerHintCeilingOption
};

// Prose for messages: "retry policy exhausted".
absl::string_view ToString(StopReason reason);
// A stable identifier, as in metric labels and the summary payload:
// "exhausted", "non_idempotent", "not_resumable".
absl::string_view ToIdentifier(StopReason reason);

struct RetrySummary {
  StopReason stop_reason = StopReason::kSuccess;
  int attempts = 0;
  std::chrono::nanoseconds elapsed{0};
};

// The summary the retry loop attached, if `status` came from one.
std::optional<RetrySummary> GetRetrySummary(const absl::Status& status);

}  // namespace stubkit

#endif  // STUBKIT_STATUS_H_
