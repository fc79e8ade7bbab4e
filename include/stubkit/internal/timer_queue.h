// Copyright 2026 The stubkit Authors.
//
// TimerQueue: the default AsyncSleeper, a min-heap of deadlines served by one
// thread. Ten thousand calls in backoff cost ten thousand heap entries, not
// threads.
//
// Not public API: `internal::DefaultAsyncSleeper()` is the process-wide one.

#ifndef STUBKIT_INTERNAL_TIMER_QUEUE_H_
#define STUBKIT_INTERNAL_TIMER_QUEUE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "stubkit/clock.h"

namespace stubkit {
namespace internal {

class TimerQueue : public AsyncSleeper {
 public:
  // Starts the thread, which runs for the life of the process.
  TimerQueue();

  uint64_t Schedule(std::chrono::nanoseconds duration,
                    std::function<void(bool)> done) override;
  void Cancel(uint64_t id) override;

 private:
  struct Entry {
    absl::Time when;
    uint64_t id;
    bool operator>(const Entry& other) const { return when > other.when; }
  };

  void Run();

  absl::Mutex mu_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::function<void(bool)>> pending_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_TIMER_QUEUE_H_
