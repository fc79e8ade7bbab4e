// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/api/timer_queue.h"

#include <algorithm>
#include <new>
#include <system_error>
#include <utility>

namespace stubkit {
namespace internal {

TimerQueue::TimerQueue() : thread_([this] { Run(); }) {}

TimerQueue::~TimerQueue() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.NotifyOne();
  thread_.join();
  // Every wait completes exactly once.
  absl::flat_hash_map<uint64_t, std::function<void(bool)>> pending;
  {
    MutexLock lock(&mu_);
    pending.swap(pending_);
  }
  for (auto& [id, done] : pending) done(false);
}

uint64_t TimerQueue::Schedule(std::chrono::nanoseconds duration,
                              std::function<void(bool)> done) {
  const Steady::time_point when = SteadyDeadline(duration);
  bool earliest;
  uint64_t id;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    pending_.emplace(id, std::move(done));
    earliest = heap_.empty() || when < heap_.front().when;
    heap_.push_back(Entry{when, id});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
  }
  if (earliest) wake_.NotifyOne();
  return id;
}

void TimerQueue::Cancel(uint64_t id) {
  std::function<void(bool)> done;
  {
    MutexLock lock(&mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;  // ran, running or cancelled
    done = std::move(it->second);
    pending_.erase(it);
    // The heap entry stays for now; Run() skips ids no longer pending.
    MaybePurgeCancelled();
  }
  done(false);
}

TimerQueue::Footprint TimerQueue::footprint() const {
  MutexLock lock(&mu_);
  return Footprint{heap_.size(), heap_.capacity(), pending_.size(),
                   pending_.capacity()};
}

void TimerQueue::MaybePurgeCancelled() {
  const size_t live = pending_.size();
  if (heap_.size() < kCompactionFloor || heap_.size() - live <= live) return;
  // O(heap) at most once per heap/2 cancellations: O(1) each, amortized.
  std::vector<Entry> kept;
  kept.reserve(live);
  for (const Entry& entry : heap_) {
    if (pending_.contains(entry.id)) kept.push_back(entry);
  }
  std::make_heap(kept.begin(), kept.end(), std::greater<Entry>());
  heap_.swap(kept);
  // The map keeps its peak capacity unless told.
  if (pending_.capacity() > 4 * live + kCompactionFloor) pending_.rehash(0);
}

void TimerQueue::Run() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (heap_.empty()) {
      wake_.Wait(lock);
      continue;
    }
    const Steady::time_point when = heap_.front().when;
    if (when > Steady::now()) {
      // Sleep until then, or until an earlier entry arrives.
      if (when == Steady::time_point::max()) {
        wake_.Wait(lock);
      } else {
        wake_.WaitUntil(lock, when);
      }
      continue;
    }
    const uint64_t id = heap_.front().id;
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
    heap_.pop_back();
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;  // cancelled
    std::function<void(bool)> done = std::move(it->second);
    pending_.erase(it);
    // Fewer pending waits: the cancelled entries left may now outnumber them.
    MaybePurgeCancelled();
    mu_.Unlock();
    done(true);
    // What it captured is user code too: destroyed before the lock is taken.
    done = nullptr;
    mu_.Lock();
  }
}

CallbackRunner::CallbackRunner(size_t max_threads, ThreadStarter start_thread)
    : max_threads_(max_threads == 0 ? 1 : max_threads),
      start_thread_(start_thread) {}

CallbackRunner::~CallbackRunner() {
  MutexLock lock(&mu_);
  stopping_ = true;
  wake_.NotifyAll();
  all_ended_.Wait(
      lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return threads_ == 0; });
}

void CallbackRunner::StartDetachedThread(std::function<void()> work) {
  std::thread(std::move(work)).detach();
}

void CallbackRunner::Run(std::function<void(bool)> done) {
  {
    MutexLock lock(&mu_);
    ready_.push_back(std::move(done));
    if (idle_ >= ready_.size()) {
      wake_.NotifyOne();
      return;
    }
    if (threads_ >= max_threads_) return;  // waits for a thread to free up
    ++threads_;
  }
  try {
    start_thread_([this] { Work(); });
    return;
  } catch (const std::system_error&) {
  } catch (const std::bad_alloc&) {
  }
  // No thread: a running one takes the callback in turn; with none at all,
  // it runs here, late but not lost.
  std::function<void(bool)> inline_done;
  {
    MutexLock lock(&mu_);
    --threads_;
    if (threads_ > 0) {
      wake_.NotifyOne();  // an idle one, if any, takes it at once
      return;
    }
    all_ended_.NotifyAll();
    if (ready_.empty()) return;
    inline_done = std::move(ready_.front());
    ready_.pop_front();
  }
  inline_done(true);
}

size_t CallbackRunner::threads() const {
  MutexLock lock(&mu_);
  return threads_;
}

void CallbackRunner::Work() {
  MutexLock lock(&mu_);
  for (;;) {
    if (ready_.empty()) {
      if (stopping_) break;
      ++idle_;
      // wait_for(kIdleExit): a wait until now + kIdleExit on the steady clock.
      const bool woken =
          wake_.WaitUntil(lock, std::chrono::steady_clock::now() + kIdleExit,
                          [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                            return !ready_.empty() || stopping_;
                          });
      --idle_;
      if (!woken && threads_ > 1) break;
      continue;
    }
    std::function<void(bool)> done = std::move(ready_.front());
    ready_.pop_front();
    mu_.Unlock();
    done(true);
    done = nullptr;  // what it captured is user code too
    mu_.Lock();
  }
  --threads_;
  if (threads_ == 0) all_ended_.NotifyAll();
}

namespace {

// The timer queue, with fired callbacks handed to a CallbackRunner; a
// cancelled wait's done(false) still runs on the cancelling thread.
class OffloadingSleeper final : public AsyncSleeper {
 public:
  uint64_t Schedule(std::chrono::nanoseconds duration,
                    std::function<void(bool)> done) override {
    return queue_.Schedule(duration,
                           [this, done = std::move(done)](bool fired) mutable {
                             if (fired) {
                               runner_.Run(std::move(done));
                             } else {
                               done(false);
                             }
                           });
  }
  void Cancel(uint64_t id) override { queue_.Cancel(id); }

 private:
  CallbackRunner runner_;
  TimerQueue queue_;  // last: its thread stops first
};

}  // namespace

AsyncSleeper& DefaultAsyncSleeper() {
  // Never destroyed: its threads run for the life of the process.
  static OffloadingSleeper* const sleeper = new OffloadingSleeper;
  return *sleeper;
}

}  // namespace internal
}  // namespace stubkit
