// Copyright 2026 The stubkit Authors.
//
// Downstream calls made while serving a call: the incoming call's deadline,
// cancellation and retries carried to them, and their overload carried back.
//
// `IncomingCall` turns a handler's `grpc::ServerContext` (sync API) or
// `grpc::CallbackServerContext` (callback API) into the per-call options of
// its downstream stubkit calls: the incoming deadline bounds them
// (`DeadlineOption`), the incoming cancel cancels them
// (`CancellationOption`), and an incoming retry makes them retry at most
// as `NestedRetryOption` says (by default not at all: retry at one layer).
// `Reply` turns a downstream call that stopped for overload into a reply
// with `grpc-retry-pushback-ms: -1` (gRFC A6's "don't retry"):
//
//   grpc::Status Front::Get(grpc::ServerContext* context,
//                           const demo::GetRequest* request,
//                           demo::Entry* response) {
//     stubkit::IncomingCall incoming(*context);
//     absl::StatusOr<demo::Entry> entry =
//         backend_.Get(*request, incoming.options());  // a KeyValueClient
//     if (!entry.ok()) return incoming.Reply(entry.status());
//     *response = *std::move(entry);
//     return grpc::Status::OK;
//   }
//
// With the callback API, keep the `IncomingCall` in the reactor, call its
// `Cancel()` from `OnCancel`, and destroy it in `OnDone`. Threads: one
// process-wide thread polls cancellation every 5 ms and runs the token's
// callbacks with no stubkit lock held; destroying an `IncomingCall` waits
// for a poll in progress. Why one layer, complete servers, figures and
// limits: docs/overload.md.

#ifndef STUBKIT_SERVER_PROPAGATION_H_
#define STUBKIT_SERVER_PROPAGATION_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "stubkit/cancellation.h"
#include "stubkit/options.h"

namespace stubkit {

// The attempt number of the incoming request a downstream call serves: 1
// for a first attempt, n for the n-th; 0 (the default) when the call does
// not serve an incoming call, or nobody said. `IncomingCall` sets it.
// Negative is INVALID_ARGUMENT.
struct IncomingAttemptOption {
  using Type = int;
  static Type Default() { return 0; }
};

// What a downstream call does when the request it serves is itself a retry
// (IncomingAttemptOption > 1).
enum class NestedRetry {
  kAsUsual,  // retries as its retry policy says
  kOnce,     // at most 1 retry (2 attempts), within its retry policy
  kNever,    // 1 attempt: the layer above retries (the default)
};

// Set it on the client a handler calls its backends with (or per call).
// Any other value is INVALID_ARGUMENT.
struct NestedRetryOption {
  using Type = NestedRetry;
  static Type Default() { return NestedRetry::kNever; }
};

// The reply to the incoming call for a downstream failure.
struct UpstreamReply {
  grpc::Status status;
  // Adds `grpc-retry-pushback-ms: -1` to the reply's trailing metadata.
  bool do_not_retry = false;
};

// Maps a downstream call's final status to the reply. Runs on the thread
// calling `ReplyUpstream`, with no stubkit lock held.
using UpstreamReplyMapper =
    std::function<UpstreamReply(const absl::Status& downstream)>;

// The default mapping. "Don't retry" (`UNAVAILABLE` with the downstream
// message, which keeps its retry summary, and the pushback -1) when the
// downstream call stopped for overload: its retry summary says
// `kThrottled` (the throttle or the budget refused a retry),
// `kServerRefused` (the backend said not to retry), or `kExhausted` after
// `UNAVAILABLE` or `RESOURCE_EXHAUSTED` (the backend failed every attempt the
// policy allowed). `UNAVAILABLE` because every gRPC client treats it as
// transient, so the pushback is what stops a retry, and one code is simple to
// alert on. Any other status is passed on as it is (`ToGrpcStatus`): code,
// message, details.
UpstreamReply DefaultUpstreamReply(const absl::Status& downstream);

// `mapper(downstream)`'s status, after adding its trailer to `context`.
// Call it before the reply is sent (before `Finish` with the callback API).
grpc::Status ReplyUpstream(
    grpc::ServerContextBase& context, const absl::Status& downstream,
    const UpstreamReplyMapper& mapper = DefaultUpstreamReply);

// One incoming call, as seen by the downstream calls made to serve it. Not
// copyable or movable: the poller refers to it. Destroy it before the
// server context (a local of a sync handler, a member of a reactor).
class IncomingCall {
 public:
  struct Settings {
    // Poll the incoming call's `IsCancelled()` (see above). False when a
    // callback reactor forwards `OnCancel` to `Cancel()` itself.
    bool poll_cancellation = true;
    // How `Reply` maps a downstream failure; null: DefaultUpstreamReply.
    UpstreamReplyMapper reply;
  };

  explicit IncomingCall(grpc::ServerContextBase& context)
      : IncomingCall(context, Settings()) {}
  IncomingCall(grpc::ServerContextBase& context, Settings settings);
  ~IncomingCall();
  IncomingCall(const IncomingCall&) = delete;
  IncomingCall& operator=(const IncomingCall&) = delete;

  // The per-call options of a downstream call: `DeadlineOption` (when the
  // incoming call has a deadline), `CancellationOption`,
  // `IncomingAttemptOption`.
  const Options& options() const { return options_; }
  // `call` layered over `options()`; a `DeadlineOption` in both keeps the
  // earlier, and a `CancellationOption` of `call` is cancelled too when the
  // incoming call is. That token is not kept alive: memory does not grow
  // with the number of downstream calls.
  Options options(const Options& call) const;

  // The incoming request's attempt number (see IncomingAttemptOption).
  int attempt() const { return attempt_; }
  bool is_retry() const { return attempt_ > 1; }

  // Cancels the downstream calls, now and later. Any thread; idempotent.
  void Cancel() { token_->Cancel(); }

  // The reply for a downstream failure, through `Settings::reply`.
  grpc::Status Reply(const absl::Status& downstream) const;

 private:
  struct Downstream;  // the tokens of options(call), weakly

  grpc::ServerContextBase& context_;
  std::shared_ptr<CancellationToken> token_;
  // Shared with the one callback on `token_`, which may run after this
  // object is gone (downstream calls hold `token_`).
  std::shared_ptr<Downstream> downstream_;
  UpstreamReplyMapper reply_;
  Options options_;
  int attempt_ = 1;
  uint64_t watch_ = 0;  // the poller's id; 0: not polled
};

}  // namespace stubkit

#endif  // STUBKIT_SERVER_PROPAGATION_H_
