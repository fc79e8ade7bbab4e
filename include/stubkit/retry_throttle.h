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
// Thread-safe and lock-free (the waiting mode adds a small lock, taken only
// while the backend is down or calls wait). Invalid parameters leave
// `status()` non-OK and make calls fail before sending.
//
// Waiting mode (`Config::WithWaitForRecovery`): instead of failing at once
// with kThrottled, an idempotent call or stream reopen (not a hedge) that
// the bucket refuses waits for the throttle to see the backend recover
// (probes), then retries when released (kAdaptive paces releases to the
// server's spare capacity; kProportional at a fixed share).
// It never waits past its retry policy, total timeout or deadline. Time is
// the calls' own clock (`ClockOption`): share one throttle only among calls
// on the same clock. The rules, the figures and when to choose which mode:
// docs/throttling.md ("Waiting mode", "Overload and metastability").

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
#include "stubkit/internal/base/mutex.h"

namespace stubkit {

class RetryThrottle {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // The waiting mode's parameters (rules: docs/throttling.md, "Waiting mode").
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
  // may cut the release pace (docs/throttling.md).
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
  // waiting mode, a latency that may cut the pace (docs/throttling.md).
  void OnWaitedSuccess(time_point attempt_start, time_point now,
                       time_point attempt_deadline);

 private:
  void Recovered(bool fresh);
  void Refill();
  // kAdaptive: what a released call's success answered at `now` says of the
  // server's queue (its latency counted): none, maybe (a slow answer, not
  // confirmed; the pace holds), or one building (cut, after slow start, to
  // `*cut` of the pace: deeper for a deeper queue).
  enum class Answer { kFast, kSlow, kQueue };
  Answer Queueing(time_point attempt_start, time_point now,
                  time_point attempt_deadline, double* cut)
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
  // kAdaptive's latency signal (Queueing): the released successes'
  // latencies, the last kRecent of them (a ring; `recent_count_` of them
  // valid, cleared at a cut and when down) and the first kFirst; the
  // typical latency, log of nanoseconds, tracked as a median by a vote per
  // probe interval (`votes_`: answers above it less those below, since
  // `vote_start_`); the answers seen; and whether the last answer took past
  // half its attempt's time.
  static constexpr int kRecent = 8;
  static constexpr int kFirst = 15;
  int64_t recent_[kRecent] ABSL_GUARDED_BY(mu_) = {};
  int recent_count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t first_[kFirst] ABSL_GUARDED_BY(mu_) = {};
  double typical_log_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t votes_ ABSL_GUARDED_BY(mu_) = 0;
  // The share of answers over twice the typical latency with no queue
  // flagged, and this interval's answers and such answers.
  double tail_share_ ABSL_GUARDED_BY(mu_) = 0.25;
  int64_t interval_answers_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t interval_slow_ ABSL_GUARDED_BY(mu_) = 0;
  time_point vote_start_ ABSL_GUARDED_BY(mu_) = time_point::min();
  int64_t answers_ ABSL_GUARDED_BY(mu_) = 0;
  bool previous_late_ ABSL_GUARDED_BY(mu_) = false;
  std::minstd_rand random_ ABSL_GUARDED_BY(mu_);
};

struct RetryThrottleOption {
  using Type = std::shared_ptr<RetryThrottle>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_RETRY_THROTTLE_H_
