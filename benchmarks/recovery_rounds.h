// Copyright 2026 The stubkit Authors.
//
// What the restart benchmarks (etcd_recovery, stream_recovery) share: one
// round's figures, the attempts a client's RetryObserverOption saw, and
// why a round took as long as it did.
//
//   auto log = std::make_shared<AttemptLog>();
//   options.set<stubkit::RetryObserverOption>(
//       [log](const stubkit::AttemptEvent& e) { log->Add(e); });
//   ... kill the server, restart it; `served`: when it serves again ...
//   Round round;
//   ExplainRound(log->Take(), served, round);

#ifndef STUBKIT_BENCHMARKS_RECOVERY_ROUNDS_H_
#define STUBKIT_BENCHMARKS_RECOVERY_ROUNDS_H_

#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "stubkit/retry_observer.h"

namespace stubkit {
namespace bench {

using RecoveryClock = std::chrono::steady_clock;

inline double Ms(RecoveryClock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One kill and restart.
struct Round {
  double down_ms = 0;      // kill -> the server serves again
  double recovery_ms = 0;  // serves -> the call delivers again
  // Why it took that long: the backoff wait still ahead when the server
  // served, and attempts that failed although it was serving (the
  // channel's cached connection failure).
  double backoff_left_ms = 0;
  int failed_after_serving = 0;
};

// Every attempt's end, from the client's RetryObserverOption (an observer
// only: it changes nothing about the retries).
class AttemptLog {
 public:
  struct Attempt {
    RecoveryClock::time_point end;
    bool ok;
    std::chrono::nanoseconds wait;  // before the next attempt
  };
  void Add(const AttemptEvent& event) {
    absl::MutexLock lock(&mu_);
    attempts_.push_back({RecoveryClock::now(), event.status.ok(), event.wait});
  }
  std::vector<Attempt> Take() {
    absl::MutexLock lock(&mu_);
    std::vector<Attempt> taken;
    taken.swap(attempts_);
    return taken;
  }

 private:
  absl::Mutex mu_;
  std::vector<Attempt> attempts_ ABSL_GUARDED_BY(mu_);
};

// Fills `round`'s why from the attempts of a round whose server served
// again at `served`.
inline void ExplainRound(const std::vector<AttemptLog::Attempt>& attempts,
                         RecoveryClock::time_point served, Round& round) {
  for (const AttemptLog::Attempt& a : attempts) {
    if (a.ok) continue;
    if (a.end >= served) {
      ++round.failed_after_serving;
    } else {
      // The last one before `served` wins.
      round.backoff_left_ms = std::max(0.0, Ms(a.end + a.wait - served));
    }
  }
}

}  // namespace bench
}  // namespace stubkit

#endif  // STUBKIT_BENCHMARKS_RECOVERY_ROUNDS_H_
