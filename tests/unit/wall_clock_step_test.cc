// Copyright 2026 The stubkit Authors.
//
// Backoff waits must not follow the wall clock: a clock stepped back one
// hour must not delay a retry by one hour.
//
// A test cannot step the system clock, so this binary shifts what the
// process reads from it instead: it defines clock_gettime and gettimeofday,
// which take precedence over libc's for every library in the process
// (libstdc++'s system_clock, abseil's absl::Now() and its Mutex timeouts).
// CLOCK_MONOTONIC passes through unchanged. A wait whose deadline is read
// from the shifted wall clock but enforced by the kernel (abseil 20220623's
// Mutex waits: a futex with FUTEX_CLOCK_REALTIME) then behaves as if the
// clock had been stepped by the shift just after the deadline was taken.
// Each test below passes in milliseconds on the steady clock; on the wall
// clock it would wait an hour, or not at all.

#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "stubkit/cancellation.h"
#include "stubkit/clock.h"
#include "stubkit/internal/api/timer_queue.h"

namespace {
std::atomic<int64_t> g_wall_shift_ns{0};

void Shift(struct timespec* ts) {
  constexpr int64_t kNanosPerSecond = 1000000000;
  const int64_t shift = g_wall_shift_ns.load();
  int64_t ns = ts->tv_nsec + shift % kNanosPerSecond;
  int64_t s = ts->tv_sec + shift / kNanosPerSecond;
  if (ns < 0) {
    ns += kNanosPerSecond;
    --s;
  } else if (ns >= kNanosPerSecond) {
    ns -= kNanosPerSecond;
    ++s;
  }
  ts->tv_sec = s;
  ts->tv_nsec = ns;
}
}  // namespace

extern "C" int clock_gettime(clockid_t clock, struct timespec* ts) noexcept {
  if (syscall(SYS_clock_gettime, clock, ts) != 0) return -1;
  if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE) Shift(ts);
  return 0;
}

extern "C" int gettimeofday(struct timeval* tv, void* /*tz*/) noexcept {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

namespace stubkit {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

// Far sooner than the hour a wall-clock wait would take, and far longer than
// a 50 ms wait needs on a loaded machine.
constexpr seconds kPatience{10};

int64_t MillisSince(Steady::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Steady::now() - start)
      .count();
}

// What a timer callback saw; shared with it, as it may run after a failed
// test has returned.
struct Outcome {
  std::atomic<bool> ran{false};
  std::atomic<bool> fired{false};
};

class WallClockStepTest : public ::testing::Test {
 protected:
  // Shifts the wall clock as this process reads it; the kernel's clocks stay.
  static void ShiftWallClock(std::chrono::nanoseconds shift) {
    g_wall_shift_ns = shift.count();
  }
  void TearDown() override { ShiftWallClock(std::chrono::nanoseconds(0)); }

  // Waits (polling, on the steady clock) until `flag` is set or `patience`
  // has passed.
  static bool AwaitFlag(const std::atomic<bool>& flag, seconds patience) {
    const Steady::time_point give_up = Steady::now() + patience;
    while (!flag.load()) {
      if (Steady::now() > give_up) return false;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
  }
};

// The shim works: both of the process's wall clocks see the shift, so a test
// below cannot pass because the shift was not applied.
TEST_F(WallClockStepTest, ShiftReachesLibstdcxxAndAbseil) {
  const auto system_before = std::chrono::system_clock::now();
  const absl::Time absl_before = absl::Now();
  ShiftWallClock(hours(1));
  EXPECT_GE(std::chrono::system_clock::now() - system_before, hours(1));
  EXPECT_GE(absl::Now() - absl_before, absl::Hours(1));
  struct timeval tv;
  ASSERT_EQ(gettimeofday(&tv, nullptr), 0);
  EXPECT_GE(absl::TimeFromTimeval(tv) - absl_before, absl::Hours(1));
}

// Scheduled on the process-wide timer thread with the wall clock an hour
// ahead of the kernel's: the wall-clock queue slept the hour.
TEST_F(WallClockStepTest, TimerQueueWaitIgnoresClockSteppedBackBeforeIt) {
  ShiftWallClock(hours(1));
  auto outcome = std::make_shared<Outcome>();
  const Steady::time_point start = Steady::now();
  internal::DefaultAsyncSleeper().Schedule(milliseconds(50),
                                           [outcome](bool fired) {
                                             outcome->fired = fired;
                                             outcome->ran = true;
                                           });
  EXPECT_TRUE(AwaitFlag(outcome->ran, kPatience))
      << "a 50 ms wait had not ended after " << kPatience.count() << " s";
  EXPECT_TRUE(outcome->fired);
  EXPECT_GE(MillisSince(start), 50);
}

// The wall clock steps back an hour while the timer thread waits: the
// wall-clock queue saw its deadline an hour away again.
TEST_F(WallClockStepTest, TimerQueueWaitIgnoresClockSteppedBackDuringIt) {
  auto outcome = std::make_shared<Outcome>();
  internal::DefaultAsyncSleeper().Schedule(milliseconds(50),
                                           [outcome](bool fired) {
                                             outcome->fired = fired;
                                             outcome->ran = true;
                                           });
  ShiftWallClock(-hours(1));
  EXPECT_TRUE(AwaitFlag(outcome->ran, kPatience))
      << "a 50 ms wait had not ended after " << kPatience.count() << " s";
  EXPECT_TRUE(outcome->fired);
}

// The sync loop's cancellable sleep, with the wall clock an hour ahead of
// the kernel's: abseil's AwaitWithTimeout slept the hour.
TEST_F(WallClockStepTest, CancellableWaitIgnoresClockSteppedBack) {
  ShiftWallClock(hours(1));
  auto token = std::make_shared<CancellationToken>();
  std::atomic<bool> returned{false};
  bool completed = false;
  const Steady::time_point start = Steady::now();
  std::thread waiter([&] {
    completed = token->WaitFor(milliseconds(50));
    returned = true;
  });
  const bool in_time = AwaitFlag(returned, kPatience);
  if (!in_time) token->Cancel();  // lets the waiter go
  waiter.join();
  EXPECT_TRUE(in_time) << "WaitFor(50ms) had not returned after "
                       << kPatience.count() << " s";
  EXPECT_TRUE(completed);
  EXPECT_GE(MillisSince(start), 50);
}

// Nor is a wait cut short by a clock stepped forward: with the wall clock an
// hour behind the kernel's, abseil's deadline had passed before it began.
TEST_F(WallClockStepTest, CancellableWaitNotCutShortByClockSteppedForward) {
  ShiftWallClock(-hours(1));
  CancellationToken token;
  const Steady::time_point start = Steady::now();
  EXPECT_TRUE(token.WaitFor(milliseconds(200)));
  EXPECT_GE(MillisSince(start), 200);
}

}  // namespace
}  // namespace stubkit
