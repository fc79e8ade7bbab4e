// Copyright 2026 The stubkit Authors.
//
// RetryThrottle: a token bucket that stops retries while a backend is down.
//
// The semantics are gRPC's retry throttling: the bucket starts full with
// `max_tokens`; each retryable failure takes one token; each success gives
// back `token_ratio`; while the bucket holds `max_tokens / 2` tokens or
// fewer, failed attempts are not retried. In an outage every client soon
// makes a single attempt per call, instead of multiplying the load.
//
// Off by default. One bucket is shared by all calls of a client and can be
// shared across clients:
//
//   auto throttle = std::make_shared<stubkit::RetryThrottle>(
//       stubkit::RetryThrottle::Config().WithMaxTokens(10).WithTokenRatio(0.1));
//   auto options = stubkit::Options{}
//       .set<stubkit::RetryThrottleOption>(throttle);
//
// The throttle is shared and holds its counters, so its parameters are a
// separate value, `RetryThrottle::Config`, named so that the two numbers
// cannot be swapped unnoticed.
//
// Thread-safe and lock-free (the waiting mode below adds a small lock,
// taken only while the backend is down or calls wait). A success on a full
// bucket is a single atomic load. Invalid parameters (max_tokens outside (0,
// 1000], token_ratio outside (0, max_tokens]) leave `status()` non-OK and make
// calls fail before sending.
//
// Waiting mode (opt in with `WaitForRecovery`). With the plain bucket, a
// call whose retry it refuses fails at once with kThrottled, however much of
// its retry policy is left. In waiting mode such a call (idempotent, sync or
// async unary) waits instead for the throttle to see the backend recover,
// then retries:
//
//   auto throttle = std::make_shared<stubkit::RetryThrottle>(
//       stubkit::RetryThrottle::Config()
//           .WithMaxTokens(10)
//           .WithTokenRatio(0.1)
//           .WithWaitForRecovery(stubkit::RetryThrottle::WaitForRecovery{}));
//
// The rules, for all the calls sharing the throttle:
// - Down: the bucket refused a retry. Recovered: a success went through the
//   throttle (any call's, first attempts included). A refused retry makes it
//   down again.
// - Probes: while down, at most `probes` waiting calls per `probe_interval`
//   may make an attempt; consecutive ones are at least probe_interval /
//   probes apart, so no window of `probe_interval` holds more. The bucket has
//   no time scale of its own, hence the interval; one probe is the least
//   that still sees a recovery when no new calls come. While they come,
//   their answers already tell: no probe goes within probe_interval /
//   probes of an attempt failing with a retryable code (the backend was
//   seen down since the last probe could have), so an outage under load
//   costs no attempt beyond the new calls' own, and a backend so loaded
//   that its attempts time out gets no probes on top.
// - Release: once recovered, waiting calls go one at a time, paced. How
//   fast is `release` (below); kAdaptive is the default.
//   kAdaptive searches for the server's spare capacity as
//   TCP's congestion control searches for a path's: additive increase,
//   multiplicative decrease. The pace starts at the probe pace (probes /
//   probe_interval) and, in slow start, each success of a released call
//   adds 1 / probe_interval to it, so it doubles every probe_interval while
//   releases succeed. A retryable failure of an attempt sent after the last
//   cut (a released call's or a new call's: the server is at capacity)
//   cuts the pace to 0.7 of itself, never below the probe pace, and ends
//   slow start; from then on each release that succeeds adds 1 / (pace *
//   probe_interval^2) * probes, one probe pace per probe_interval. A queue
//   builds up before anything times out, so released calls' latency is the
//   earlier signal: an answer is slow when it took more than twice the
//   least latency seen over the last 30 to 60 probe intervals (the
//   backend's time with no queue) or more than half its attempt's time (a
//   queue that never emptied, where the least was never seen). In slow
//   start one slow answer halves the pace (it may have doubled past the
//   spare capacity since the last good round) and ends slow start; after
//   it, two in a row (one is noise) cut it to 0.9 (a queue is an early
//   signal: a gentle cut keeps the server busy), and a single slow answer
//   holds the pace. Every cut is made once per round: answers to attempts
//   sent before the last cut do not cut again. So the releases give way
//   while requests still succeed, a queue deeper than the attempt timeout
//   is not filled, and they overshoot the spare capacity by one probe pace
//   per interval at most. The pace grows only while calls wait: it is not
//   banked for a later backlog. A refused retry (the backend is down again)
//   restarts the search from the probe pace, with slow start ending at 0.7
//   of the pace before. The latency signal assumes the backend's unloaded
//   latency is steady: one that varies more than twofold keeps the pace
//   near the probe pace (slow, never an overload). docs/throttling.md
//   ("Overload and metastability") has what benchmarks/overload_study
//   measured.
//   kProportional (the behaviour before kAdaptive, kept for those who
//   rely on it) releases at a fixed ratio of the rate the
//   recovered backend has shown it can answer.
//   The throttle measures R, the highest rate of successes of calls that
//   did not wait since the recovery (successes over a window of at least
//   `probe_interval`; a shorter window counts as probe_interval long, so R
//   ramps up over the first interval). Consecutive admissions are at least
//   1 / max(release_ratio * R, probes / probe_interval) apart. The bound: in
//   any window of length T after a recovery, the waiting calls released
//   are at most
//     max(release_ratio * R, probes / probe_interval) * T + 1,
//   so a server answering the new load at S/s sees at most
//   (1 + release_ratio) * S/s plus the probe pace, with no burst: no credit
//   is banked, and a refusal drops R. R is a maximum, not the current rate:
//   when the new load ebbs, the backlog drains on at the pace already
//   proven. With no new successes at all, the probe pace drains it. A
//   backlog of B calls takes about B / (release_ratio * S) to clear, however
//   much spare capacity the server has: what kAdaptive improves on where
//   overload is answered at once.
//   A call that waits polls the throttle every U[probe_interval / 2,
//   probe_interval] (jitter). Fairness among waiters is random, not
//   first-come first-served.
// - A waiting call stops at its retry policy's time limit, total timeout or
//   deadline, whichever is first (kThrottled, saying how long it waited), or
//   when its count policy is exhausted by the failures of the attempts it
//   was allowed (kExhausted); never later. A cancel ends its wait at once.
// - Non-idempotent calls never retry, so never wait. Hedged calls and
//   streams do not wait either: they stop with kThrottled as with the plain
//   bucket (a hedge exists to cut latency, not to sit out an outage).
//
// Waiting costs no thread: a sync call waits on its own thread (the
// `SleeperOption`, else the `CancellationOption` token, else a plain sleep,
// on the steady clock), an async call in its `AsyncSleeperOption` timer
// (the process-wide timer thread by default), and the call's next attempt
// starts from that timer's thread. The throttle itself keeps a few counters
// and a small lock, holds no waiter list and runs no callback: a waiting
// call costs nothing here, and its own state grows by a few dozen bytes.
// Time is the calls' own clock (`ClockOption`): share one throttle only
// among calls on the same clock.

#ifndef STUBKIT_RETRY_THROTTLE_H_
#define STUBKIT_RETRY_THROTTLE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>

#include "absl/base/attributes.h"
#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "stubkit/internal/mutex.h"

namespace stubkit {

class RetryThrottle {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // The waiting mode's parameters (see above).
  struct WaitForRecovery {
    // probe_interval in (0, 1 h]; probes in [1, 1000].
    std::chrono::nanoseconds probe_interval = std::chrono::seconds(1);
    int probes = 1;
    // How waiting calls are released once the backend recovers.
    enum class Release {
      // Additive increase, multiplicative decrease: finds the server's
      // spare capacity from its answers, failed and slow.
      kAdaptive,
      // At release_ratio times the new calls' highest success rate.
      kProportional,
    };
    Release release = Release::kAdaptive;
    // kProportional only; in (0, 1] in either mode. Waiting calls are
    // released at up to this fraction of the new calls' highest success
    // rate. 0.5: the recovering server sees at most 1.5 times the new load,
    // leaving room under twice it for bursts of the new load itself.
    double release_ratio = 0.5;
  };

  // The parameters of a throttle: a copyable value, checked when the
  // throttle is built (see `status()`). There is no default bucket: both
  // numbers must be set.
  class Config {
   public:
    // max_tokens in (0, 1000].
    [[nodiscard]] Config WithMaxTokens(double max_tokens) const {
      Config copy = *this;
      copy.max_tokens_ = max_tokens;
      return copy;
    }
    // token_ratio in (0, max_tokens].
    [[nodiscard]] Config WithTokenRatio(double token_ratio) const {
      Config copy = *this;
      copy.token_ratio_ = token_ratio;
      return copy;
    }
    // Turns on the waiting mode.
    [[nodiscard]] Config WithWaitForRecovery(WaitForRecovery waiting) const {
      Config copy = *this;
      copy.wait_for_recovery_ = waiting;
      return copy;
    }

    double max_tokens() const { return max_tokens_; }
    double token_ratio() const { return token_ratio_; }
    const std::optional<WaitForRecovery>& wait_for_recovery() const {
      return wait_for_recovery_;
    }

   private:
    double max_tokens_ = 0;
    double token_ratio_ = 0;
    std::optional<WaitForRecovery> wait_for_recovery_;
  };

  explicit RetryThrottle(const Config& config);
  ABSL_DEPRECATED(
      "2026-11-27, removed before 1.0: use RetryThrottle(RetryThrottle::"
      "Config().WithMaxTokens(m).WithTokenRatio(r))")
  RetryThrottle(double max_tokens, double token_ratio);
  ABSL_DEPRECATED(
      "2026-11-27, removed before 1.0: use RetryThrottle(RetryThrottle::"
      "Config().WithMaxTokens(m).WithTokenRatio(r).WithWaitForRecovery(w))")
  RetryThrottle(double max_tokens, double token_ratio, WaitForRecovery waiting);

  // Takes a token for a retryable failure; returns true when a retry is
  // still allowed afterwards.
  bool OnRetryableFailure();
  // The same, for the failure at `now` of an attempt that started at
  // `attempt_start`: in the adaptive waiting mode, an overload answer that
  // may cut the release pace (see above).
  bool OnRetryableFailure(time_point attempt_start, time_point now);
  void OnSuccess();
  // Whether a retry is allowed now, without changing the bucket.
  bool RetryAllowed() const;

  double tokens() const;
  double max_tokens() const {
    return static_cast<double>(max_milli_) / 1000.0;
  }
  double token_ratio() const {
    return static_cast<double>(ratio_milli_) / 1000.0;
  }
  const absl::Status& status() const { return status_; }

  // Whether this throttle is in waiting mode.
  bool waiting_mode() const { return waiting_; }
  ABSL_DEPRECATED("2026-11-27, removed before 1.0: use waiting_mode()")
  bool waiting() const { return waiting_; }
  const WaitForRecovery& wait_options() const { return wait_options_; }
  // Calls waiting now, and whether the backend is considered down.
  int waiters() const { return waiters_.load(std::memory_order_relaxed); }
  bool down() const { return down_.load(std::memory_order_relaxed); }
  // kAdaptive: the release pace now, in admissions per second (0 before
  // the first release since a recovery; always 0 with kProportional).
  double release_pace() const;

  // The rest is for the retry loops, in waiting mode. A call that waits
  // calls BeginWait once, then polls TryAdmit after each PollDelay until it
  // returns true (the call leaves the wait and attempts at once) or the call
  // ends (EndWait). A success of a call that waited is reported with
  // OnWaitedSuccess instead of OnSuccess (it does not count towards R).
  void BeginWait();
  bool TryAdmit(time_point now);
  // TryAdmit, all or nothing with a second admission (a retry budget's
  // withdrawal): when the throttle would admit, `also` runs, under the
  // throttle's lock (it must not call back into the throttle), and the call
  // is admitted only if it returns true; if not, the throttle is left as it
  // was, its release slot free for another waiting call.
  bool TryAdmit(time_point now, absl::FunctionRef<bool()> also);
  void EndWait();
  std::chrono::nanoseconds PollDelay();
  void OnWaitedSuccess();
  // The same, for an attempt sent at `attempt_start` with a deadline of
  // `attempt_deadline` (max: none) and answered at `now`: in the adaptive
  // waiting mode, a latency that may cut the pace (above).
  void OnWaitedSuccess(time_point attempt_start, time_point now,
                       time_point attempt_deadline);

 private:
  void Recovered(bool fresh);
  void Refill();
  // kAdaptive: what a released call's success answered at `now` says of the
  // server's queue (its latency counted): none, maybe (a slow answer, not
  // confirmed; the pace holds), or one building (cut).
  enum class Answer { kFast, kSlow, kQueue };
  Answer Queueing(time_point attempt_start, time_point now,
                  time_point attempt_deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The gap between admissions while up, in `release`'s way.
  std::chrono::nanoseconds ReleaseSpacing(time_point now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool adaptive() const {
    return wait_options_.release == WaitForRecovery::Release::kAdaptive;
  }
  // probes / probe_interval, in admissions per nanosecond.
  double probe_pace() const {
    return wait_options_.probes /
           static_cast<double>(wait_options_.probe_interval.count());
  }

  // Fixed point, thousandths of a token, like gRPC's own implementation.
  int64_t max_milli_;
  int64_t ratio_milli_;
  std::atomic<int64_t> milli_tokens_;
  absl::Status status_;

  // Waiting mode. `mu_` is taken by admissions, refusals, and successes
  // while down or while calls wait; no callback runs under it.
  bool waiting_ = false;
  WaitForRecovery wait_options_;
  std::chrono::nanoseconds probe_spacing_{0};
  // Read without the lock on the success path; written under it.
  std::atomic<bool> down_{false};
  std::atomic<int> waiters_{0};
  mutable internal::Mutex mu_;
  // The last admission (probe or release).
  time_point last_admit_ ABSL_GUARDED_BY(mu_) = time_point::min();
  // When an attempt last failed with a retryable code (time_since_epoch in
  // nanoseconds; min: none), which makes a probe pointless while it is
  // recent. Written without the lock.
  std::atomic<int64_t> last_failure_at_{std::numeric_limits<int64_t>::min()};
  // The measuring window of R: its start (min: none yet) and the successes
  // of calls that did not wait counted since.
  time_point window_start_ ABSL_GUARDED_BY(mu_) = time_point::min();
  int64_t window_fresh_ ABSL_GUARDED_BY(mu_) = 0;
  // R, in successes per nanosecond; 0 until measured, and after a refusal.
  double fresh_rate_ ABSL_GUARDED_BY(mu_) = 0;
  // kAdaptive: the release pace (admissions per nanosecond; 0 before the
  // first release since a recovery), the pace at which slow start ends,
  // and the last cut (or the first release): failures of attempts sent
  // before it do not cut again.
  double pace_ ABSL_GUARDED_BY(mu_) = 0;
  double slow_start_end_ ABSL_GUARDED_BY(mu_) =
      std::numeric_limits<double>::infinity();
  time_point last_cut_ ABSL_GUARDED_BY(mu_) = time_point::min();
  // kAdaptive's latency signal: the least latency of released successes in
  // the current and the previous window of 30 probe intervals, the current
  // window's start, and the latency of the last released success.
  std::chrono::nanoseconds least_latency_[2] ABSL_GUARDED_BY(mu_) = {
      std::chrono::nanoseconds::max(), std::chrono::nanoseconds::max()};
  time_point latency_window_ ABSL_GUARDED_BY(mu_) = time_point::min();
  std::chrono::nanoseconds previous_latency_ ABSL_GUARDED_BY(mu_){0};
  std::minstd_rand random_ ABSL_GUARDED_BY(mu_);
};

struct RetryThrottleOption {
  using Type = std::shared_ptr<RetryThrottle>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_RETRY_THROTTLE_H_
