// Copyright 2026 The stubkit Authors.
//
// CancellationToken on its own: the cancellable sleep of the sync loop and
// the callbacks of the async one. Waits that must end early are ten minutes
// long, so no assertion depends on a tight timing.

#include "stubkit/cancellation.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace stubkit {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using Steady = std::chrono::steady_clock;

TEST(CancellationTokenWaitTest, WaitsItsDurationOnTheSteadyClock) {
  CancellationToken token;
  const Steady::time_point start = Steady::now();
  EXPECT_TRUE(token.WaitFor(milliseconds(30)));
  EXPECT_GE(Steady::now() - start, milliseconds(30));
  EXPECT_TRUE(token.WaitFor(nanoseconds(0)));
  EXPECT_TRUE(token.WaitFor(-minutes(1)));
}

TEST(CancellationTokenWaitTest, CancelEndsAWaitFarSooner) {
  for (nanoseconds wait : {nanoseconds(minutes(10)), nanoseconds::max()}) {
    CancellationToken token;
    std::atomic<bool> waiting{false};
    std::thread canceller([&] {
      while (!waiting) std::this_thread::sleep_for(milliseconds(1));
      std::this_thread::sleep_for(milliseconds(20));
      token.Cancel();
    });
    const Steady::time_point start = Steady::now();
    waiting = true;
    // nanoseconds::max() saturates: no overflow into the past.
    EXPECT_FALSE(token.WaitFor(wait));
    EXPECT_LT(Steady::now() - start, minutes(1));
    canceller.join();
    EXPECT_FALSE(token.WaitFor(minutes(10)));  // already cancelled
  }
}

// Callbacks run on the thread calling Cancel, before it returns, with the
// token's lock free: they may use the token.
TEST(CancellationTokenCallbackTest, RunOnTheCancellingThreadWithoutTheLock) {
  CancellationToken token;
  std::thread::id ran_on;
  int runs = 0;
  token.AddCallback([&] {
    ran_on = std::this_thread::get_id();
    ++runs;
    EXPECT_TRUE(token.cancelled());
    EXPECT_FALSE(token.WaitFor(minutes(10)));
  });
  const uint64_t removed = token.AddCallback([&] { ++runs; });
  token.RemoveCallback(removed);
  std::thread::id canceller;
  std::thread([&] {
    canceller = std::this_thread::get_id();
    token.Cancel();
    EXPECT_EQ(runs, 1);
    token.Cancel();
  }).join();
  EXPECT_EQ(ran_on, canceller);
  EXPECT_EQ(runs, 1);
  // Added after Cancel: runs at once, here.
  token.AddCallback([&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(runs, 2);
}

}  // namespace
}  // namespace stubkit
