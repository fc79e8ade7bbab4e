// Copyright 2026 The stubkit Authors.
//
// The default AsyncSleeper: a min-heap of deadlines served by one thread.
// Ten thousand calls in backoff cost ten thousand heap entries, not threads.

#include <cstdint>
#include <functional>
#include <queue>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "stubkit/clock.h"

namespace stubkit {
namespace internal {
namespace {

class TimerQueue : public AsyncSleeper {
 public:
  TimerQueue() {
    std::thread([this] { Run(); }).detach();
  }

  uint64_t Schedule(std::chrono::nanoseconds duration,
                    std::function<void(bool)> done) override {
    absl::MutexLock lock(&mu_);
    uint64_t id = next_id_++;
    absl::Time when = absl::Now() + absl::FromChrono(duration);
    pending_.emplace(id, std::move(done));
    heap_.push(Entry{when, id});
    return id;
  }

  void Cancel(uint64_t id) override {
    std::function<void(bool)> done;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;  // ran, running or cancelled
      done = std::move(it->second);
      pending_.erase(it);
      // The heap entry stays; Run() skips ids no longer pending.
    }
    done(false);
  }

 private:
  struct Entry {
    absl::Time when;
    uint64_t id;
    bool operator>(const Entry& other) const { return when > other.when; }
  };

  void Run() {
    absl::MutexLock lock(&mu_);
    for (;;) {
      if (heap_.empty()) {
        auto has_entries = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return !heap_.empty();
        };
        mu_.Await(absl::Condition(&has_entries));
        continue;
      }
      const absl::Time when = heap_.top().when;
      if (when > absl::Now()) {
        // Sleep until then, or until an earlier entry arrives.
        auto earlier = [this, when]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return heap_.top().when < when;
        };
        mu_.AwaitWithDeadline(absl::Condition(&earlier), when);
        continue;
      }
      const uint64_t id = heap_.top().id;
      heap_.pop();
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;  // cancelled
      std::function<void(bool)> done = std::move(it->second);
      pending_.erase(it);
      mu_.Unlock();
      done(true);
      mu_.Lock();
    }
  }

  absl::Mutex mu_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::function<void(bool)>> pending_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace

AsyncSleeper& DefaultAsyncSleeper() {
  // Never destroyed: its thread runs for the life of the process.
  static TimerQueue* const queue = new TimerQueue;
  return *queue;
}

}  // namespace internal
}  // namespace stubkit
