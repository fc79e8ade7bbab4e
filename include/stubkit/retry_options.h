// Copyright 2026 The stubkit Authors.
//
// The options that control retries, deadlines and per-attempt metadata.
//
// Each is a tag for `stubkit::Options`; set any of them for a whole client
// when it is built, or for one call:
//
//   using namespace std::chrono_literals;
//   auto client_options = stubkit::Options{}
//       .set<stubkit::RetryPolicyOption>(stubkit::RetryPolicy::LimitedTime(10min))
//       .set<stubkit::BackoffPolicyOption>(
//           stubkit::ExponentialBackoffPolicy()
//               .WithInitialDelay(200ms)
//               .WithMaximumDelay(45s))
//       .set<stubkit::IdempotencyMapOption>(
//           {{"demo.Ledger.Append", stubkit::Idempotency::kIdempotent}});
//   auto one_call = stubkit::Options{}
//       .set<stubkit::AttemptTimeoutOption>(2s)
//       .set<stubkit::IdempotencyOption>(stubkit::Idempotency::kIdempotent);
//
// Each option's default and meaning: docs/options.md (the table); the
// errors bad values give: docs/options.md#invalid-options.

#ifndef STUBKIT_RETRY_OPTIONS_H_
#define STUBKIT_RETRY_OPTIONS_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "stubkit/backoff_policy.h"
#include "stubkit/method.h"
#include "stubkit/retry_policy.h"

namespace stubkit {

struct RetryPolicyOption {
  using Type = RetryPolicy;
  static Type Default() { return RetryPolicy::LimitedTime(); }
};

struct BackoffPolicyOption {
  using Type = ExponentialBackoffPolicy;
  static Type Default() { return ExponentialBackoffPolicy(); }
};

// IdempotencyOption, which forces the idempotency of a call, is declared in
// stubkit/method.h beside `Idempotency` (included above), so that generated
// headers name it without this header.

// Per-method idempotency, keyed by the proto full name
// ("package.Service.Method"; gRPC's "package.Service/Method" is read the
// same, as in MethodOptionsOption). Overrides the proto;
// `IdempotencyOption` wins over it. A generated client refuses a key of
// its service naming no method of it, or one method under both spellings.
struct IdempotencyMapOption {
  using Type = absl::flat_hash_map<std::string, Idempotency>;
  static Type Default() { return {}; }
};

// After an attempt fails with UNAVAILABLE, its backoff wait watches the
// channel: it asks the channel to reconnect and ends as soon as the channel
// is ready again (never later than the backoff). Unary calls and streams
// of every kind; only for clients built over a channel, and waits through
// the default sleepers; see
// docs/reconnects.md. False: the wait runs its full backoff.
struct FollowReconnectOption {
  using Type = bool;
  static Type Default() { return true; }
};

// Each attempt's own deadline is min(call end, attempt start + this). An
// attempt that runs out of its own time is retried (if the call is
// idempotent) as if it had failed with UNAVAILABLE. Zero means none.
//
// Server and bidi streams: it bounds only the wait for an attempt's first
// response (as gRPC's perAttemptRecvTimeout stops at the response headers).
// An attempt with none by then is cancelled and counts as timed out
// (DEADLINE_EXCEEDED, retried as above); once a response arrived, only the
// call's end (TotalTimeoutOption, DeadlineOption) bounds the stream. Client
// streams, whose one response ends the call: the whole attempt, as for
// unary calls. See docs/streaming.md.
struct AttemptTimeoutOption {
  using Type = std::chrono::nanoseconds;
  static Type Default() { return Type::zero(); }
};

// The whole call, across attempts and waits, ends this long after it
// started. Zero means no limit beyond the retry policy's.
struct TotalTimeoutOption {
  using Type = std::chrono::nanoseconds;
  static Type Default() { return Type::zero(); }
};

// An absolute end for the whole call, like `ClientContext::set_deadline`.
struct DeadlineOption {
  using Type = std::chrono::system_clock::time_point;
  static Type Default() { return Type::max(); }
};

// The least time an attempt needs to be useful. An attempt, or a wait and
// the attempt after it, that would have less than this before the call's
// end (deadline, total timeout, retry policy's time limit) is not started:
// the call stops at once instead of sending a request doomed to time out
// (a server's downstream calls inherit the incoming deadline, see
// stubkit/server_propagation.h). Zero, the default, keeps any time left
// worth an attempt: only the caller knows how fast its backend answers.
// A stream's attempts outlive the policy's time limit (it bounds only how
// long the stream is reopened), so for streams the time counts to the
// total timeout or the deadline alone. Negative is INVALID_ARGUMENT. Hedged
// calls do not read it.
struct MinAttemptTimeOption {
  using Type = std::chrono::nanoseconds;
  static Type Default() { return Type::zero(); }
};

// Metadata added to every attempt.
struct MetadataOption {
  using Type = std::vector<std::pair<std::string, std::string>>;
  static Type Default() { return {}; }
};

// When true, attempts after the first carry `x-retry-attempt: <n>`, so
// servers can tell retries from new calls.
struct RetryAttemptHeaderOption {
  using Type = bool;
  static Type Default() { return true; }
};

inline constexpr char kRetryAttemptHeader[] = "x-retry-attempt";

}  // namespace stubkit

#endif  // STUBKIT_RETRY_OPTIONS_H_
