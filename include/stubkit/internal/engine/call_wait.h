// Copyright 2026 The stubkit Authors.
//
// The wait between a call's attempts (`CallWait`): what a driver needs to
// wait, and what it must remember of its waits. Owned by the call's
// `RetryLoopState`, which decides when to wait and for how long; this file
// says how a sync driver waits and what the waits add up to.
//
//   CallWait& wait = ...;
//   wait.delay().Begin(now, backoff);             // A96's retry delay
//   bool woken = false;
//   if (!wait.Sleep(backoff, sleeper, cancel, &woken)) { /* cancelled */ }
//   if (woken) { /* the channel is back: count only the elapsed part */ }
//
// The async drivers wait on the timer thread instead
// (AsyncRetryOperationBase in stubkit/internal/async_retry_operation.h),
// with the same RetryDelay, ThrottleWait and ChannelFollow.

#ifndef STUBKIT_INTERNAL_CALL_WAIT_H_
#define STUBKIT_INTERNAL_CALL_WAIT_H_

#include <chrono>

#include "absl/status/status.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"

namespace stubkit {
namespace internal {

class ConnectionChannel;

// A96's retry delay of one call: the waits handed to the loop, summed
// (saturating). The last one, until the loop comes back, may yet be cut
// short by a cancel or the channel's return; then only its elapsed part
// counts.
class RetryDelay {
 public:
  using time_point = Clock::time_point;
  // A wait of `wait` begins at `now`.
  void Begin(time_point now, std::chrono::nanoseconds wait);
  // The loop came back from the wait: it counts in full.
  void End() { pending_ = std::chrono::nanoseconds::zero(); }
  // The wait ended early at `now`: returns its elapsed part, and counts only
  // that.
  std::chrono::nanoseconds CutShort(time_point now);
  // The wait in progress, zero when none.
  std::chrono::nanoseconds pending() const { return pending_; }
  std::chrono::nanoseconds total() const { return total_; }

 private:
  std::chrono::nanoseconds total_{0};
  std::chrono::nanoseconds pending_{0};
  time_point began_;
};

// A call's part in the retry throttle's waiting mode
// (stubkit/retry_throttle.h): whether it is in the throttle's wait, after which
// failure, and for how long in all. The throttle's own count
// (BeginWait/EndWait) is the caller's.
class ThrottleWait {
 public:
  using time_point = Clock::time_point;
  void Enable() { enabled_ = true; }
  bool enabled() const { return enabled_; }
  bool waiting() const { return waiting_; }
  // Enters the wait at `now`, after the failure `status`.
  void Begin(const absl::Status& status, time_point now);
  // The failure the call waits after.
  const absl::Status& failure() const { return status_; }
  // Leaves the wait at `now`, if in it; `admitted`: to attempt again.
  void Leave(time_point now, bool admitted = false);
  // Admitted at least once: the call's success earns the throttle no credit.
  bool admitted_once() const { return admitted_once_; }
  // Time spent in the wait, in all.
  std::chrono::nanoseconds waited() const { return waited_; }
  // The retry budget refused a release the throttle granted, at `now`:
  // returns since when it has refused each one.
  time_point NoteBudgetRefusal(time_point now);
  // The budget refused one of this call's releases (even if it took one
  // since).
  bool budget_refused() const { return budget_refused_; }

 private:
  bool enabled_ = false;
  bool waiting_ = false;
  bool admitted_once_ = false;
  bool budget_refused_ = false;
  // Since when the budget has refused each release (min: it has not, or it
  // took one since).
  time_point budget_held_since_ = time_point::min();
  absl::Status status_;
  time_point since_;
  std::chrono::nanoseconds waited_{0};
};

// A call's part in following its channel (FollowReconnectOption): the
// channel, whether the wait the loop chose may end early when the channel
// is ready again, and whether the next attempt starts on that return.
class ChannelFollow {
 public:
  // Null (the default): no channel, as for a connection built over a stub.
  // Set before the first attempt; it outlives the call.
  void set_channel(ConnectionChannel* channel) { channel_ = channel; }
  ConnectionChannel* channel() const { return channel_; }
  // Whether the wait chosen after the last failure follows the channel.
  bool active() const { return active_; }
  void set_active(bool active) { active_ = active; }
  // The wait ended because the channel is ready again.
  void Woke() { woke_ = true; }
  // An attempt starts: returns whether it starts on the channel's return.
  // Notes whether the channel is in TRANSIENT_FAILURE (an atomic read in
  // gRPC): a channel down then and READY when the wait joins came back in
  // between.
  bool StartAttempt();
  bool down_at_attempt_start() const { return down_at_attempt_start_; }
  // Waits `wait` on the steady clock, unless the channel is ready again
  // first (`*woken`) or `cancel` (may be null) is cancelled. Returns false
  // when cancelled.
  bool Wait(std::chrono::nanoseconds wait, CancellationToken* cancel,
            bool* woken);

 private:
  ConnectionChannel* channel_ = nullptr;
  bool active_ = false;
  bool woke_ = false;
  bool down_at_attempt_start_ = false;
};

// A sync wait of `wait` with nothing to follow: through `sleeper` when set
// (a test's, which cannot be cut short), else on the steady clock until
// `cancel` (may be null) is cancelled. Returns false when cancelled. Every
// sync wait goes through here or `CallWait::Sleep` (retries, a long-running
// operation's polls).
bool SleepThrough(std::chrono::nanoseconds wait, Sleeper* sleeper,
                  CancellationToken* cancel);

// The waits of one call: the three records above, and the sync wait.
class CallWait {
 public:
  RetryDelay& delay() { return delay_; }
  const RetryDelay& delay() const { return delay_; }
  ThrottleWait& throttle() { return throttle_; }
  const ThrottleWait& throttle() const { return throttle_; }
  ChannelFollow& follow() { return follow_; }
  const ChannelFollow& follow() const { return follow_; }

  // A sync driver's wait of `wait`: through `sleeper` when set (a test's,
  // which cannot be cut short), else on the steady clock, ended early by a
  // cancel of `cancel` (may be null) or, when `follow().active()`, by the
  // channel's return (`*woken`). Returns false when cancelled.
  bool Sleep(std::chrono::nanoseconds wait, Sleeper* sleeper,
             CancellationToken* cancel, bool* woken);

 private:
  RetryDelay delay_;
  ThrottleWait throttle_;
  ChannelFollow follow_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_CALL_WAIT_H_
