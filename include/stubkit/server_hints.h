// Copyright 2026 The stubkit Authors.
//
// Server retry hints: the server may say how long to wait before retrying.
//
// Two hints are honoured after a failed attempt, unless `ServerHintsOption`
// is false:
//
//   - `grpc-retry-pushback-ms` trailing metadata (gRPC's A6 retry design):
//     a non-negative integer replaces the next backoff wait; a negative or
//     unparseable value means "do not retry": the call stops with
//     `StopReason::kServerRefused`, "the server said not to retry".
//   - `google.rpc.RetryInfo.retry_delay` inside `grpc-status-details-bin`:
//     replaces the next backoff wait too, as gRPC does for pushback and
//     google-cloud-cpp for RetryInfo: a server that says "retry in 1.5 s"
//     gets its retry at 1.5 s, not at a larger backoff draw.
//
// When both are present the longer wait is taken: the server asked for
// both, and waiting longer honours each. A hint longer than
// `ServerHintCeilingOption` (default 5 minutes, the default backoff's own
// maximum) is not honoured: the call stops with `StopReason::kServerRefused`
// and the message quotes what the server asked for, so a broken or hostile
// server cannot park a call, and its async state, for centuries.
//
//   auto options = stubkit::Options{}
//       .set<stubkit::ServerHintCeilingOption>(std::chrono::minutes(20));
//
// A hint never extends the retry policy or the call's deadline, and never
// makes a non-retryable code or a non-idempotent call retryable. The table
// of hints and what malformed ones do: docs/throttling.md ("Server hints").

#ifndef STUBKIT_SERVER_HINTS_H_
#define STUBKIT_SERVER_HINTS_H_

#include <chrono>

namespace stubkit {

// True (the default) to honour the server's pushback and RetryInfo hints.
struct ServerHintsOption {
  using Type = bool;
  static Type Default() { return true; }
};

// The longest server hint honoured; a longer one stops the call
// (kServerRefused). Must be positive; `nanoseconds::max()` honours any hint
// that fits the call's time. To ignore hints altogether, set
// `ServerHintsOption` to false instead.
struct ServerHintCeilingOption {
  using Type = std::chrono::nanoseconds;
  static Type Default() { return std::chrono::minutes(5); }
};

inline constexpr char kRetryPushbackHeader[] = "grpc-retry-pushback-ms";

}  // namespace stubkit

#endif  // STUBKIT_SERVER_HINTS_H_
