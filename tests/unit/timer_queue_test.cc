// Copyright 2026 The stubkit Authors.
//
// The timer thread behind async backoff (internal::TimerQueue), each test on
// a private queue. Waits that must fire are short; waits that must not are
// an hour long and cancelled, so no assertion depends on a tight timing.

#include "stubkit/internal/api/timer_queue.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

// Far longer than anything here needs on a loaded machine.
constexpr seconds kPatience{10};

// Polls `done` on the steady clock until it holds or `kPatience` has passed.
template <typename Predicate>
bool Eventually(Predicate done) {
  const Steady::time_point give_up = Steady::now() + kPatience;
  while (!done()) {
    if (Steady::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// Opens a gate that holds the timer thread, however the test ends, before
// the queue (declared earlier) joins the thread.
struct OpenOnExit {
  std::atomic<bool>& gate;
  ~OpenOnExit() { gate = true; }
};

TEST(TimerQueueTest, DestroyingTheQueueEndsEachPendingWaitOnce) {
  std::vector<int> runs(10, 0);
  std::atomic<int> fired{0};
  {
    TimerQueue queue;
    queue.Schedule(milliseconds(0), [&](bool ok) { fired += ok; });
    ASSERT_TRUE(Eventually([&] { return fired.load() == 1; }));
    for (int i = 0; i < 10; ++i) {
      queue.Schedule(hours(1), [&, i](bool ok) {
        EXPECT_FALSE(ok);
        ++runs[i];
      });
    }
  }
  EXPECT_THAT(runs, ::testing::Each(1));
  EXPECT_EQ(fired.load(), 1);
}

// Hardening #11c: a cancelled wait stayed in the heap until its time came,
// so 100,000 cancelled one-hour waits held 100,000 entries for an hour.
TEST(TimerQueueTest, CancelledWaitsLeaveNothingBehind) {
  TimerQueue queue;
  int cancelled = 0;  // Cancel runs done(false) on this thread
  for (int i = 0; i < 100000; ++i) {
    queue.Cancel(queue.Schedule(hours(1), [&](bool ok) { cancelled += !ok; }));
  }
  EXPECT_EQ(cancelled, 100000);
  const TimerQueue::Footprint footprint = queue.footprint();
  EXPECT_EQ(footprint.pending, 0u);
  EXPECT_LE(footprint.heap_entries, TimerQueue::kCompactionFloor);
}

TEST(TimerQueueTest, MemoryFollowsThePendingWaits) {
  TimerQueue queue;
  std::vector<int> kept_runs(1000, 0);
  std::vector<uint64_t> kept;
  for (int i = 0; i < 1000; ++i) {
    kept.push_back(queue.Schedule(hours(1), [&, i](bool ok) {
      EXPECT_FALSE(ok);
      ++kept_runs[i];
    }));
  }
  // Scheduled and cancelled one by one, then all at once.
  for (int i = 0; i < 100000; ++i) {
    queue.Cancel(queue.Schedule(hours(1), [](bool) {}));
  }
  EXPECT_LE(queue.footprint().heap_entries,
            2 * 1000 + TimerQueue::kCompactionFloor);
  std::vector<uint64_t> burst;
  for (int i = 0; i < 100000; ++i) {
    burst.push_back(queue.Schedule(hours(1), [](bool) {}));
  }
  EXPECT_EQ(queue.footprint().pending, 101000u);
  for (uint64_t id : burst) queue.Cancel(id);
  const TimerQueue::Footprint footprint = queue.footprint();
  EXPECT_EQ(footprint.pending, 1000u);
  EXPECT_LE(footprint.heap_entries, 2 * 1000 + TimerQueue::kCompactionFloor);
  // Nor is the burst's storage kept.
  EXPECT_LE(footprint.heap_capacity, 4 * 1000 + TimerQueue::kCompactionFloor);
  EXPECT_LE(footprint.pending_capacity,
            4 * 1000 + TimerQueue::kCompactionFloor);
  // The waits kept are all still there, each ended once.
  for (uint64_t id : kept) queue.Cancel(id);
  EXPECT_THAT(kept_runs, ::testing::Each(1));
  EXPECT_LE(queue.footprint().heap_entries, TimerQueue::kCompactionFloor);
}

// The bound holds when pending waits end by firing too.
TEST(TimerQueueTest, CancelledEntriesPurgedAsWaitsFire) {
  // Holds the timer thread while the queue is filled.
  std::atomic<bool> gate_entered{false}, gate_open{false};
  TimerQueue queue;
  OpenOnExit open_on_exit{gate_open};
  queue.Schedule(milliseconds(0), [&](bool) {
    gate_entered = true;
    while (!gate_open) std::this_thread::sleep_for(milliseconds(1));
  });
  ASSERT_TRUE(Eventually([&] { return gate_entered.load(); }));
  std::atomic<int> fired{0};
  for (int i = 0; i < 1000; ++i) {
    queue.Schedule(milliseconds(0), [&](bool ok) { fired += ok; });
  }
  std::vector<uint64_t> long_waits;
  for (int i = 0; i < 1000; ++i) {
    long_waits.push_back(queue.Schedule(hours(1), [](bool) {}));
  }
  // 900 cancelled of 2000 pending: not yet worth a purge.
  for (int i = 0; i < 900; ++i) queue.Cancel(long_waits[i]);
  EXPECT_EQ(queue.footprint().heap_entries, 2000u);
  gate_open = true;
  ASSERT_TRUE(Eventually([&] { return fired.load() == 1000; }));
  // 900 cancelled of 100 pending.
  const TimerQueue::Footprint footprint = queue.footprint();
  EXPECT_EQ(footprint.pending, 100u);
  EXPECT_LE(footprint.heap_entries, 2 * 100u);
}

// Hardening #11g: which thread runs a callback. done(true) runs on the
// queue's one thread; done(false) on the thread that called Cancel, before
// Cancel returns.
TEST(TimerQueueTest, CallbackThreads) {
  TimerQueue queue;
  std::atomic<int> fired{0};
  std::thread::id first, second;
  queue.Schedule(milliseconds(0), [&](bool ok) {
    EXPECT_TRUE(ok);
    first = std::this_thread::get_id();
    ++fired;
  });
  queue.Schedule(milliseconds(1), [&](bool ok) {
    EXPECT_TRUE(ok);
    second = std::this_thread::get_id();
    ++fired;
  });
  ASSERT_TRUE(Eventually([&] { return fired.load() == 2; }));
  EXPECT_EQ(first, second);
  EXPECT_NE(first, std::this_thread::get_id());

  const uint64_t id = queue.Schedule(hours(1), [&](bool ok) {
    EXPECT_FALSE(ok);
    second = std::this_thread::get_id();
    ++fired;
  });
  std::thread::id canceller;
  bool ran_before_cancel_returned = false;
  std::thread([&] {
    canceller = std::this_thread::get_id();
    queue.Cancel(id);
    ran_before_cancel_returned = fired.load() == 3;
  }).join();
  EXPECT_TRUE(ran_before_cancel_returned);
  EXPECT_EQ(second, canceller);
  // Too late: nothing runs twice.
  queue.Cancel(id);
  EXPECT_EQ(fired.load(), 3);
}

// One slow callback holds up the waits due after it (one thread runs them
// all), but not Schedule or Cancel: a cancelled wait still ends at once.
TEST(TimerQueueTest, SlowCallbackDelaysLaterWaitsButNotCancel) {
  std::atomic<bool> gate_entered{false}, gate_open{false};
  TimerQueue queue;
  OpenOnExit open_on_exit{gate_open};
  queue.Schedule(milliseconds(0), [&](bool) {
    gate_entered = true;
    while (!gate_open) std::this_thread::sleep_for(milliseconds(1));
  });
  ASSERT_TRUE(Eventually([&] { return gate_entered.load(); }));
  std::atomic<bool> later_fired{false};
  queue.Schedule(milliseconds(0), [&](bool ok) { later_fired = ok; });
  bool cancelled = false;
  queue.Cancel(queue.Schedule(hours(1), [&](bool ok) { cancelled = !ok; }));
  EXPECT_TRUE(cancelled);
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(later_fired.load());  // due, but behind the slow callback
  gate_open = true;
  EXPECT_TRUE(Eventually([&] { return later_fired.load(); }));
}

// Whether the queue's lock can be taken, asked from another thread: a thread
// cannot probe a std::mutex it may hold itself. A probe that finds the lock
// held leaves a thread waiting for it, joined when the probe is destroyed.
class LockProbe {
 public:
  explicit LockProbe(TimerQueue& queue) : queue_(queue) {}
  ~LockProbe() {
    for (std::thread& thread : threads_) thread.join();
  }
  bool QueueLockFree() {
    auto answered = std::make_shared<std::atomic<bool>>(false);
    std::thread thread([this, answered] {
      (void)queue_.footprint();
      *answered = true;
    });
    const bool free = Eventually([&] { return answered->load(); });
    std::lock_guard<std::mutex> lock(mu_);
    threads_.push_back(std::move(thread));
    return free;
  }

 private:
  TimerQueue& queue_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

// Runs `f` when destroyed: what a callback captures is user code too.
class OnDestroy {
 public:
  explicit OnDestroy(std::function<void()> f) : f_(std::move(f)) {}
  ~OnDestroy() { f_(); }

 private:
  std::function<void()> f_;
};

// No lock of the queue is held while a callback runs, nor while what it
// captured is destroyed (the timer thread destroyed a fired callback with
// the lock held).
TEST(TimerQueueTest, NoQueueLockWhileCallbacksRunOrAreDestroyed) {
  auto queue = std::make_unique<TimerQueue>();
  LockProbe probe(*queue);
  struct Seen {
    std::atomic<int> destroyed{0};
    std::atomic<int> lock_free_in_callback{0};
    std::atomic<int> lock_free_in_destructor{0};
  };
  auto seen = std::make_shared<Seen>();
  // A callback that checks the lock, and holds what checks it again when
  // destroyed.
  auto make_callback = [&probe, seen] {
    auto keep = std::make_shared<OnDestroy>([&probe, seen] {
      seen->lock_free_in_destructor += probe.QueueLockFree();
      ++seen->destroyed;
    });
    return [&probe, seen, keep](bool) {
      seen->lock_free_in_callback += probe.QueueLockFree();
    };
  };
  // Fires on the timer thread.
  queue->Schedule(milliseconds(0), make_callback());
  // Cancelled on this thread.
  queue->Cancel(queue->Schedule(hours(1), make_callback()));
  ASSERT_TRUE(Eventually([&] { return seen->destroyed.load() == 2; }));
  EXPECT_EQ(seen->lock_free_in_callback.load(), 2);
  EXPECT_EQ(seen->lock_free_in_destructor.load(), 2);
  // Ended by the queue's destructor.
  queue->Schedule(hours(1), make_callback());
  queue.reset();
  EXPECT_EQ(seen->destroyed.load(), 3);
  EXPECT_EQ(seen->lock_free_in_callback.load(), 3);
  EXPECT_EQ(seen->lock_free_in_destructor.load(), 3);
}

}  // namespace
}  // namespace internal
}  // namespace stubkit

namespace stubkit {
namespace internal {
namespace {

// Issue 22, item 4: the pool behind the default sleeper is bounded, and a
// thread that cannot be made neither terminates the process nor loses the
// callback.
void NeverStartsAThread(std::function<void()>) {
  throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
}

std::atomic<int> threads_allowed{0};
void StartsAllowedThreads(std::function<void()> work) {
  if (threads_allowed.fetch_sub(1) <= 0) {
    throw std::system_error(
        std::make_error_code(std::errc::resource_unavailable_try_again));
  }
  std::thread(std::move(work)).detach();
}

// Blocks callbacks until released.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  void AwaitWaiting(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return waiting_ >= n; });
  }
  int waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(CallbackRunnerTest, NoThreadAtAllRunsTheCallbackOnTheCallingThread) {
  CallbackRunner runner(4, &NeverStartsAThread);
  std::thread::id ran_on;
  bool fired = false;
  runner.Run([&](bool f) {
    fired = f;
    ran_on = std::this_thread::get_id();
  });
  EXPECT_TRUE(fired);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(runner.threads(), 0u);
}

TEST(CallbackRunnerTest, AThreadThatCannotBeMadeLeavesTheCallbackInLine) {
  threads_allowed = 1;
  Gate gate;
  std::atomic<int> ran{0};
  std::atomic<bool> second_on_caller{false};
  {
    CallbackRunner runner(4, &StartsAllowedThreads);
    runner.Run([&](bool) {
      gate.Wait();
      ran.fetch_add(1);
    });
    gate.AwaitWaiting(1);
    const std::thread::id caller = std::this_thread::get_id();
    runner.Run([&, caller](bool) {
      second_on_caller = std::this_thread::get_id() == caller;
      ran.fetch_add(1);
    });
    EXPECT_EQ(runner.threads(), 1u);
    EXPECT_EQ(ran.load(), 0);  // queued behind the blocked one
    gate.Open();
  }  // the destructor waits for the queue to drain
  EXPECT_EQ(ran.load(), 2);
  EXPECT_FALSE(second_on_caller.load());
}

TEST(CallbackRunnerTest, ThePoolStopsGrowingAtItsBound) {
  Gate gate;
  std::atomic<int> ran{0};
  {
    CallbackRunner runner(2);
    for (int i = 0; i < 5; ++i) {
      runner.Run([&](bool) {
        gate.Wait();
        ran.fetch_add(1);
      });
    }
    EXPECT_EQ(runner.threads(), 2u);
    gate.AwaitWaiting(2);
    EXPECT_EQ(gate.waiting(), 2);
    gate.Open();
  }
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace internal
}  // namespace stubkit
