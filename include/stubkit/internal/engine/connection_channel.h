// Copyright 2026 The stubkit Authors.
//
// The channel behind a generated connection, as the retry loops see it
// (`ConnectionChannel`): waits that follow the server back after a
// connection failure, and the once-per-connection check for gRPC's own
// retries. Not API.
//
// `MakeFooConnection(channel, options)` makes one per connection and hands
// it to every unary call; a connection made over a stub (a mock, a
// hand-written stack) or over an in-process channel has none, and its
// calls wait out their backoff as they always did:
//
//   // once, when the connection is made over `channel`:
//   std::shared_ptr<ConnectionChannel> link = ConnectionChannel::Make(channel);
//   // per call:
//   RunUnary<Response>(method, options, request, attempt, make_async, link);
//   RunAsyncUnary<Response>(method, options, attempt, std::move(done), link);
//
// Following the server back (issue 30 item 2, docs/reconnects.md). After
// an attempt fails with UNAVAILABLE and the loop chose a backoff wait (not
// a server hint, not the throttle's wait), the wait joins the connection's
// watch (`Join`). The watch:
//
// - kicks the channel (`GetState(true)`: an IDLE channel starts to
//   connect) each time it looks;
// - keeps the channel's connection attempts going: it registers
//   `NotifyOnStateChange` on one process-wide completion queue whose thread
//   sits in `Next`, which polls the channel's connect attempts as a thread
//   in `WaitForStateChange` would (gRPC 1.51 otherwise only notices them
//   on its 5 s backup poller when no call waits on the channel);
// - while the channel is in TRANSIENT_FAILURE, resets its reconnect
//   backoff (`grpc::experimental::ChannelResetConnectionBackoff`) at most
//   once per `kReconnectProbeInterval`, for the whole connection however
//   many calls wait: the channel then tries to connect at once instead of
//   after gRPC's reconnect backoff (1 s, ×1.6, up to 120 s), which would
//   otherwise leave a restarted server unused for seconds. A server still
//   down gets at most one connection attempt per interval from the
//   connection (and its resolver a re-resolution at most as often);
//   the calls' own attempts stay bounded by their backoff;
// - wakes each waiting call that saw the channel not READY when the
//   channel becomes READY. A call that failed while the channel stayed
//   READY (the server itself answered UNAVAILABLE) is not woken early: its
//   backoff protects a server that is up but struggling.
//
// A woken call starts its next attempt at once; one not woken starts it at
// its backoff's end, as before; a cancel ends the wait at once. Calls are
// never made wait-for-ready: an attempt on a channel still down fails fast.
//
// Threads and locks: the watch runs on the watcher thread; a wake callback
// runs there with no stubkit lock held and must only hand the wake over
// (notify a sync waiter, schedule an async continuation on the timer
// thread): it never runs user code. `Join` and `Leave` take the
// connection's lock briefly.

#ifndef STUBKIT_INTERNAL_CONNECTION_CHANNEL_H_
#define STUBKIT_INTERNAL_CONNECTION_CHANNEL_H_

#include <grpc/grpc.h>
#include <grpcpp/channel.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stubkit/clock.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/options.h"
#include "stubkit/retry_observer.h"

namespace stubkit {
namespace internal {

// How often a connection's watch may reset its channel's reconnect backoff
// while the channel is in TRANSIENT_FAILURE and a call waits: the longest
// a restarted server stays unused, give or take a connection handshake.
inline constexpr std::chrono::milliseconds kReconnectProbeInterval{250};

// Whether the wait after a failed attempt follows the channel: an
// UNAVAILABLE attempt followed by a backoff wait. Server hints (the server
// said when to come back) and the throttle's wait (the backend is
// overloaded) are kept as they are.
bool FollowsChannel(const absl::Status& status, WaitReason reason);

// The watch's decisions, without gRPC or a clock of its own (the unit tests
// drive it with a FakeClock's times). Not thread-safe: ConnectionChannel
// guards it.
class ReconnectWatchLogic {
 public:
  using time_point = Clock::time_point;

  explicit ReconnectWatchLogic(
      std::chrono::nanoseconds probe_interval = kReconnectProbeInterval)
      : probe_interval_(probe_interval) {}

  struct Step {
    // Wake callbacks to run (outside any lock).
    std::vector<std::function<void()>> wake;
    // Ask gRPC to reconnect now (the reconnect backoff is reset).
    bool reset_backoff = false;
    // Register a watch (again): waiters remain and none is registered.
    bool arm = false;
  };

  // A wait begins while the channel is in `state`. `wake` runs once, when
  // the channel is READY after this wait saw it not READY, or at once when
  // it is READY and was in TRANSIENT_FAILURE when the failed attempt
  // started (`down_at_attempt_start`): it came back before the join.
  Step Join(uint64_t id, std::function<void()> wake,
            grpc_connectivity_state state, time_point now,
            bool down_at_attempt_start = false);
  // The wait ended without a wake (its backoff ran out, or it was
  // cancelled): returns its callback, for the caller to drop unlocked
  // (empty for an unknown id, or one already woken).
  std::function<void()> Leave(uint64_t id);
  // The registered watch ended (a state change, or its deadline) and the
  // channel is now in `state`.
  Step OnWatchEnded(grpc_connectivity_state state, time_point now);

  size_t waiters() const { return waiters_.size(); }
  bool armed() const { return armed_; }

 private:
  struct Waiter {
    uint64_t id;
    bool saw_not_ready;
    std::function<void()> wake;
  };
  // Marks, wakes and probes for `state`.
  void Observe(grpc_connectivity_state state, time_point now, Step& step);

  const std::chrono::nanoseconds probe_interval_;
  std::vector<Waiter> waiters_;
  bool armed_ = false;
  bool probed_ = false;
  time_point last_probe_;
};

// See the top of this file. Owned by shared_ptr: the connection, its async
// calls and a pending watch share it.
class ConnectionChannel
    : public std::enable_shared_from_this<ConnectionChannel> {
 public:
  // Null for a null channel, and for one that is not a client channel (an
  // in-process channel: gRPC can neither watch it nor retry on it).
  static std::shared_ptr<ConnectionChannel> Make(
      std::shared_ptr<grpc::ChannelInterface> channel);
  explicit ConnectionChannel(std::shared_ptr<grpc::ChannelInterface> channel);
  ConnectionChannel(const ConnectionChannel&) = delete;
  ConnectionChannel& operator=(const ConnectionChannel&) = delete;

  grpc::ChannelInterface& channel() const { return *channel_; }

  // Joins the watch (see ReconnectWatchLogic::Join); returns the id for
  // `Leave`. `wake` runs on the watcher thread, or inline here when the
  // channel is already back. Allocates: only on the retry path.
  uint64_t Join(std::function<void()> wake, bool down_at_attempt_start = false);
  void Leave(uint64_t id);

  // Issue 23: after an attempt of this connection, and until it could
  // tell, warns once when the channel's service config turns gRPC's own
  // retries on (`retryPolicy` or `hedgingPolicy`) and the channel was not
  // made by stubkit::CreateChannel, through the client's log sink (see
  // WriteConfigWarning). One atomic load once it is done.
  void CheckGrpcRetries(const OptionsView& options, absl::string_view method,
                        bool attempt_ok) {
    if (!grpc_retries_checked_.load(std::memory_order_acquire)) {
      CheckGrpcRetriesSlow(options, method, attempt_ok);
    }
  }

 private:
  class Watch;
  // Runs the step's wake callbacks and gRPC calls: without the lock.
  void Apply(ReconnectWatchLogic::Step step, grpc_connectivity_state state)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Arm(grpc_connectivity_state last);
  void OnWatchEnded();
  void CheckGrpcRetriesSlow(const OptionsView& options,
                            absl::string_view method, bool attempt_ok);

  const std::shared_ptr<grpc::ChannelInterface> channel_;
  grpc::Channel* const grpc_channel_;  // null: not a grpc::Channel
  Mutex mu_;
  ReconnectWatchLogic logic_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<bool> grpc_retries_checked_{false};
  std::atomic<int> grpc_retries_checks_{0};
};

// Remembers a channel made by stubkit::CreateChannel (gRPC's retries off),
// so that the check above does not warn about it. Weak: the channel's life
// is its owner's.
void RememberStubkitChannel(const std::shared_ptr<grpc::Channel>& channel);
bool IsStubkitChannel(const grpc::ChannelInterface* channel);

// Whether a service config JSON turns on gRPC's own retries or hedging.
bool ServiceConfigRetries(const std::string& json);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_CONNECTION_CHANNEL_H_
