// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/timer_queue.h"

#include <thread>
#include <utility>

#include "absl/time/clock.h"

namespace stubkit {
namespace internal {

TimerQueue::TimerQueue() {
  std::thread([this] { Run(); }).detach();
}

uint64_t TimerQueue::Schedule(std::chrono::nanoseconds duration,
                              std::function<void(bool)> done) {
  absl::MutexLock lock(&mu_);
  uint64_t id = next_id_++;
  absl::Time when = absl::Now() + absl::FromChrono(duration);
  pending_.emplace(id, std::move(done));
  heap_.push(Entry{when, id});
  return id;
}

void TimerQueue::Cancel(uint64_t id) {
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

void TimerQueue::Run() {
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

AsyncSleeper& DefaultAsyncSleeper() {
  // Never destroyed: its thread runs for the life of the process.
  static TimerQueue* const queue = new TimerQueue;
  return *queue;
}

}  // namespace internal
}  // namespace stubkit
