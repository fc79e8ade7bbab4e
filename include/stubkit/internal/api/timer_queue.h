// Copyright 2026 The stubkit Authors.
//
// TimerQueue: the default AsyncSleeper, a min-heap of deadlines served by one
// thread. Ten thousand calls in backoff cost ten thousand heap entries, not
// threads.
//
// Threads: done(true) on the queue's thread, done(false) on the thread
// calling Cancel (or destroying the queue); never under the queue's lock. A
// slow callback delays the waits due after it, so the process-wide sleeper
// (`internal::DefaultAsyncSleeper()`) hands each fired callback to a
// `CallbackRunner`: a pool of threads that grows while every one is busy, up
// to `CallbackRunner::kMaxThreads`, so that a user callback that blocks
// delays no other call's backoff until that many block at once.
//
// A cancelled wait's callback is released at once; its heap entry (16 bytes)
// is skipped when it reaches the top, and the heap is rebuilt without them
// once they outnumber the pending waits, so memory follows the waits still
// pending: at most 2 entries per pending wait, or kCompactionFloor.
//
// Every wait is on the steady clock: deadlines are
// `std::chrono::steady_clock` time points and the thread sleeps in
// `CondVar::WaitUntil` (stubkit/internal/base/mutex.h), a
// `std::condition_variable::wait_until`, which libstdc++ (GCC 12) implements
// with pthread_cond_clockwait(CLOCK_MONOTONIC) for steady_clock time points.
// Not abseil's timed waits: in abseil 20220623 `Mutex::AwaitWithDeadline`
// takes an `absl::Time` (the wall clock, absl::Now()), `AwaitWithTimeout`
// turns its timeout into one with gettimeofday(), and the futex behind both
// waits with FUTEX_CLOCK_REALTIME (absl/synchronization/internal/futex.h,
// kernel_timeout.h): a wall clock stepped back one hour delayed a retry by
// one hour (tests/unit/wall_clock_step_test.cc).
//
// Not public API: `internal::DefaultAsyncSleeper()` is the process-wide one.

#ifndef STUBKIT_INTERNAL_TIMER_QUEUE_H_
#define STUBKIT_INTERNAL_TIMER_QUEUE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "stubkit/clock.h"
#include "stubkit/internal/base/mutex.h"

namespace stubkit {
namespace internal {

// now + duration on the steady clock, saturating: the latest time point
// means "never". A negative duration means now.
inline std::chrono::steady_clock::time_point SteadyDeadline(
    std::chrono::nanoseconds duration) {
  using Steady = std::chrono::steady_clock;
  const Steady::time_point now = Steady::now();
  if (duration <= Steady::duration::zero()) return now;
  if (duration >= Steady::time_point::max() - now) {
    return Steady::time_point::max();
  }
  return now + std::chrono::duration_cast<Steady::duration>(duration);
}

// Runs callbacks on a pool of detached threads: a callback that finds every
// thread busy starts another, up to `max_threads`; beyond that it waits in
// line for the first thread to come free. Threads idle for `kIdleExit` end,
// down to one. When no thread can be made (`start_thread` throws: a pids
// cgroup, RLIMIT_NPROC, memory), the callback waits for a running thread,
// or, when there is none, runs on the calling thread: late, never lost, and
// never a `std::terminate`.
class CallbackRunner {
 public:
  // Starts a detached thread running `work`; throws std::system_error (as
  // std::thread does) when it cannot.
  using ThreadStarter = void (*)(std::function<void()> work);
  static void StartDetachedThread(std::function<void()> work);

  static constexpr size_t kMaxThreads = 64;
  static constexpr std::chrono::seconds kIdleExit{10};

  explicit CallbackRunner(size_t max_threads = kMaxThreads,
                          ThreadStarter start_thread = &StartDetachedThread);
  // Waits for the threads to finish what is queued and end.
  ~CallbackRunner();
  CallbackRunner(const CallbackRunner&) = delete;
  CallbackRunner& operator=(const CallbackRunner&) = delete;

  // Runs `done(true)` on a pool thread (see above).
  void Run(std::function<void(bool)> done) ABSL_LOCKS_EXCLUDED(mu_);

  // For tests: the threads running now.
  size_t threads() const;

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t max_threads_;
  const ThreadStarter start_thread_;
  mutable Mutex mu_;
  CondVar wake_;
  CondVar all_ended_;
  std::deque<std::function<void(bool)>> ready_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;
  size_t threads_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

class TimerQueue : public AsyncSleeper {
 public:
  // Starts the thread.
  TimerQueue();
  // Stops the thread, then calls `done(false)` for each wait still pending,
  // on the destroying thread. Not from one of the queue's own callbacks.
  // (The process-wide queue is never destroyed.)
  ~TimerQueue() override;
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  uint64_t Schedule(std::chrono::nanoseconds duration,
                    std::function<void(bool)> done) override;
  void Cancel(uint64_t id) override;

  // Below this many heap entries, cancelled ones are not purged.
  static constexpr size_t kCompactionFloor = 64;

  // For tests: what the queue holds.
  struct Footprint {
    size_t heap_entries;  // pending waits, and cancelled ones not yet purged
    size_t heap_capacity;
    size_t pending;  // waits scheduled, neither run nor cancelled
    size_t pending_capacity;
  };
  Footprint footprint() const;

 private:
  using Steady = std::chrono::steady_clock;
  struct Entry {
    Steady::time_point when;
    uint64_t id;
    bool operator>(const Entry& other) const { return when > other.when; }
  };

  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Rebuilds the heap without cancelled entries once they outnumber the
  // pending ones.
  void MaybePurgeCancelled() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  // Signalled when an entry becomes the earliest, and on stopping.
  CondVar wake_;
  // A min-heap (std::push_heap with std::greater) of deadlines, cancelled
  // ones included until purged.
  std::vector<Entry> heap_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::function<void(bool)>> pending_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread thread_;  // last: starts once the rest is built
};

// The process-wide timer: one thread, however many calls wait; fired
// callbacks run on a pool that grows while all its threads are busy.
AsyncSleeper& DefaultAsyncSleeper();

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_TIMER_QUEUE_H_
