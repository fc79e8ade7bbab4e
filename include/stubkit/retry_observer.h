// Copyright 2026 The stubkit Authors.
//
// RetryObserverOption: a callback after every attempt of a call.
//
// The event says which method, which attempt, how it ended, and — when
// another attempt follows — how long the loop waits and why (backoff, the
// server's pushback, or its RetryInfo). The last event of a call has
// `final == true` and the call's outcome in `stop_reason`.
//
//   auto options = stubkit::Options{}.set<stubkit::RetryObserverOption>(
//       [](const stubkit::AttemptEvent& e) {
//         if (!e.final) {
//           std::cerr << e.method << " attempt " << e.attempt << ": "
//                     << e.status << ", next in "
//                     << absl::FromChrono(e.wait) << "\n";
//         }
//       });
//
// The callback runs on the calling thread, between attempts; it must not
// block for long. When the option is unset nothing is built or called. A
// hedged call reports all of its attempts when it ends, in launch order,
// on the thread that ends it: the failed ones, then those cancelled as
// losers (`hedge_loser`), then the final event.
//
// What the attempt received (headers, trailers, peer) is copied only on
// demand, by `ReceivedMetadata()`, during the callback. Wait reasons, logs
// and metrics: docs/observability.md.

#ifndef STUBKIT_RETRY_OBSERVER_H_
#define STUBKIT_RETRY_OBSERVER_H_

#include <chrono>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/call_options.h"
#include "stubkit/status.h"

namespace stubkit {

enum class WaitReason {
  kNone,       // no wait: the call is over
  kBackoff,    // the backoff policy's delay
  kPushback,   // the server's grpc-retry-pushback-ms
  kRetryInfo,  // the server's google.rpc.RetryInfo
  kThrottle,   // the retry throttle's waiting mode: until the backend
               // recovers (`wait` is the first poll; see retry_throttle.h)
};

absl::string_view ToString(WaitReason reason);

struct AttemptEvent {
  absl::string_view method;  // "package.Service.Method"
  int attempt = 0;           // from 1
  absl::Status status;       // the attempt's own status
  std::chrono::nanoseconds attempt_duration{0};
  std::chrono::nanoseconds elapsed{0};  // since the call started
  bool final = false;                   // no attempt follows
  std::chrono::nanoseconds wait{0};     // before the next attempt
  WaitReason wait_reason = WaitReason::kNone;
  StopReason stop_reason = StopReason::kSuccess;  // when final
  // A hedged attempt still running when another won or the call ended: it
  // was cancelled, and `status` is CANCELLED.
  bool hedge_loser = false;
  // The wait before this attempt ended before its backoff did: the attempt
  // before it failed with UNAVAILABLE, and the channel was ready again
  // (docs/reconnects.md). Only for clients built over a channel.
  bool started_on_reconnect = false;
  // The attempt's context, valid during the callback only; null for an
  // event no finished attempt is behind (a call cancelled during a backoff
  // wait, or refused before its first attempt). Prefer `ReceivedMetadata`:
  // gRPC asserts when initial metadata is read from a context that never
  // reached the server.
  const grpc::ClientContext* context = nullptr;

  // What the attempt received; empty without a context. During the
  // callback only. Copies (allocates) on each call.
  ResponseMetadata ReceivedMetadata() const;
};

struct RetryObserverOption {
  using Type = std::function<void(const AttemptEvent&)>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_RETRY_OBSERVER_H_
