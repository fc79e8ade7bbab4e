// Copyright 2026 The stubkit Authors.
//
// The deadline helper every attempt's deadline goes through.

#include "stubkit/internal/engine/deadline.h"

#include <chrono>

#include "gtest/gtest.h"
#include "stubkit/clock.h"
#include "stubkit/options.h"
#include "stubkit/retry_options.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::hours;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using Steady = Clock::time_point;
using Wall = std::chrono::system_clock::time_point;

TEST(DeadlineTest, AddSaturatingStopsAtMax) {
  const Steady start{hours(1)};
  EXPECT_EQ(AddSaturating(start, seconds(2)), start + seconds(2));
  EXPECT_EQ(AddSaturating(start, nanoseconds::max()), Steady::max());
  EXPECT_EQ(AddSaturating(Wall{hours(1)}, nanoseconds::max()), Wall::max());
}

// Issue 39, item 5: the fake clock saturates instead of wrapping into the
// past (signed overflow) when waits of nanoseconds::max() add up.
// It stops a tick before max(), which means "never" (no deadline).
TEST(FakeClockTest, AdvanceSaturatesAtTheEndsOfTime) {
  const Steady latest = Steady::max() - nanoseconds(1);
  FakeClock clock;
  clock.Advance(nanoseconds::max());
  EXPECT_EQ(clock.Now(), latest);
  clock.SleepFor(seconds(1));
  EXPECT_EQ(clock.Now(), latest);
  bool ran = false;
  clock.Schedule(nanoseconds::max(), [&](bool fired) { ran = fired; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(clock.Now(), latest);
  EXPECT_LT(clock.Now(), Steady::max());
  FakeClock back(Steady{hours(1)});
  back.Advance(nanoseconds::min());
  back.Advance(nanoseconds::min());
  EXPECT_EQ(back.Now(), Steady::min());
  back.Advance(seconds(2));
  EXPECT_EQ(back.Now(), Steady::min() + seconds(2));
}

TEST(DeadlineTest, AttemptEndIsTheEarlierOfTheCallsEndAndTheAttemptTimeout) {
  const Steady start{hours(1)};
  EXPECT_EQ(AttemptEnd(start, start + seconds(10), seconds(3)),
            start + seconds(3));
  EXPECT_EQ(AttemptEnd(start, start + seconds(2), seconds(3)),
            start + seconds(2));
  EXPECT_EQ(AttemptEnd(start, Steady::max(), nanoseconds::zero()),
            Steady::max());
}

TEST(DeadlineTest, ToWallDeadlineCarriesTheRemainingTimeOver) {
  const Steady now{hours(1)};
  const Wall wall_now{hours(500000)};
  EXPECT_EQ(ToWallDeadline(now, now + seconds(5), wall_now),
            wall_now + seconds(5));
  EXPECT_EQ(ToWallDeadline(now, Steady::max(), wall_now), Wall::max());
  // A remaining time past the wall clock's range saturates: no wrap.
  EXPECT_EQ(ToWallDeadline(now, Steady::max() - seconds(1), wall_now),
            Wall::max());
  // Expired: the epoch, past on any clock gRPC may read.
  EXPECT_EQ(ToWallDeadline(now, now, wall_now), Wall());
  EXPECT_EQ(ToWallDeadline(now, now - seconds(1), wall_now), Wall());
}

TEST(DeadlineTest, CallEndIsTheEarlierOfTotalTimeoutAndDeadline) {
  const Steady start = std::chrono::steady_clock::now();
  Options total = Options{}.set<TotalTimeoutOption>(seconds(30));
  EXPECT_EQ(CallEnd(OptionsView(total, Options{}), start), start + seconds(30));
  Options past = Options{}.set<DeadlineOption>(
      std::chrono::system_clock::now() - seconds(1));
  EXPECT_EQ(CallEnd(OptionsView(past, total), start), start);
  Options none;
  EXPECT_EQ(CallEnd(OptionsView(none, Options{}), start), Steady::max());
  Options later = Options{}.set<DeadlineOption>(
      std::chrono::system_clock::now() + hours(1));
  const Steady end = CallEnd(OptionsView(later, total), start);
  EXPECT_EQ(end, start + seconds(30));  // the total timeout comes first
}

}  // namespace
}  // namespace internal
}  // namespace stubkit
