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

}  // namespace
}  // namespace internal
}  // namespace stubkit
