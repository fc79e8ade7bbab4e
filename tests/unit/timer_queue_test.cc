// Copyright 2026 The stubkit Authors.
//
// The timer thread behind async backoff (internal::TimerQueue), each test on
// a private queue. Waits that must fire are short; waits that must not are
// an hour long and cancelled, so no assertion depends on a tight timing.

#include "stubkit/internal/timer_queue.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
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

}  // namespace
}  // namespace internal
}  // namespace stubkit
