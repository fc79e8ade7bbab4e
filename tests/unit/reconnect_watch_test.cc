// Copyright 2026 The stubkit Authors.
//
// The decisions of a connection's reconnect watch (ReconnectWatchLogic):
// whom it wakes, when it resets the channel's reconnect backoff, when it
// watches again. Driven with a FakeClock's times; no gRPC.

#include <chrono>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stubkit/clock.h"
#include "stubkit/internal/engine/connection_channel.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::milliseconds;

constexpr auto kIdle = GRPC_CHANNEL_IDLE;
constexpr auto kConnecting = GRPC_CHANNEL_CONNECTING;
constexpr auto kReady = GRPC_CHANNEL_READY;
constexpr auto kFailure = GRPC_CHANNEL_TRANSIENT_FAILURE;
constexpr auto kShutdown = GRPC_CHANNEL_SHUTDOWN;

class ReconnectWatchTest : public ::testing::Test {
 protected:
  std::function<void()> Counter(int id) {
    return [this, id] { woken.push_back(id); };
  }
  void Run(ReconnectWatchLogic::Step& step) {
    for (auto& wake : step.wake) wake();
  }

  FakeClock clock;
  ReconnectWatchLogic logic{milliseconds(250)};
  std::vector<int> woken;
};

TEST(FollowsChannelTest, OnlyUnavailableWithABackoffWait) {
  EXPECT_TRUE(
      FollowsChannel(absl::UnavailableError("down"), WaitReason::kBackoff));
  // The server said when to come back, or the backend is overloaded.
  EXPECT_FALSE(
      FollowsChannel(absl::UnavailableError("down"), WaitReason::kPushback));
  EXPECT_FALSE(
      FollowsChannel(absl::UnavailableError("down"), WaitReason::kRetryInfo));
  EXPECT_FALSE(
      FollowsChannel(absl::UnavailableError("down"), WaitReason::kThrottle));
  // Another retryable code is not a connection failure.
  EXPECT_FALSE(FollowsChannel(absl::DeadlineExceededError("slow"),
                              WaitReason::kBackoff));
  EXPECT_FALSE(FollowsChannel(absl::ResourceExhaustedError("busy"),
                              WaitReason::kBackoff));
}

TEST_F(ReconnectWatchTest, WakesAWaiterWhenTheChannelIsReadyAgain) {
  auto step = logic.Join(1, Counter(1), kConnecting, clock.Now());
  EXPECT_TRUE(step.arm);
  EXPECT_FALSE(step.reset_backoff);  // connecting: nothing to hurry
  EXPECT_TRUE(step.wake.empty());
  clock.Advance(milliseconds(100));
  step = logic.OnWatchEnded(kReady, clock.Now());
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(1));
  EXPECT_FALSE(step.arm);  // nobody left to watch for
  EXPECT_EQ(logic.waiters(), 0u);
  EXPECT_FALSE(logic.armed());
}

TEST_F(ReconnectWatchTest, OneWatchForManyWaiters) {
  auto first = logic.Join(1, Counter(1), kIdle, clock.Now());
  auto second = logic.Join(2, Counter(2), kConnecting, clock.Now());
  EXPECT_TRUE(first.arm);
  EXPECT_FALSE(second.arm);  // the first one's watch serves both
  auto step = logic.OnWatchEnded(kReady, clock.Now());
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(1, 2));
}

TEST_F(ReconnectWatchTest, AFailureOnAReadyChannelKeepsItsBackoff) {
  // The server itself answered UNAVAILABLE: the channel never went down,
  // and the wait is not cut short while it stays ready.
  auto step = logic.Join(1, Counter(1), kReady, clock.Now());
  EXPECT_TRUE(step.arm);
  for (int i = 0; i < 4; ++i) {
    clock.Advance(milliseconds(250));
    step = logic.OnWatchEnded(kReady, clock.Now());
    Run(step);
    EXPECT_TRUE(step.arm);
    EXPECT_FALSE(step.reset_backoff);
  }
  EXPECT_TRUE(woken.empty());
  // Once the connection drops and comes back, it is woken.
  step = logic.OnWatchEnded(kIdle, clock.Now());
  step = logic.OnWatchEnded(kReady, clock.Now());
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(1));
}

TEST_F(ReconnectWatchTest, OnlyWaitersThatSawTheChannelDownAreWoken) {
  logic.Join(1, Counter(1), kConnecting, clock.Now());
  // Joins while the channel is ready (its attempt failed on the server).
  auto step = logic.OnWatchEnded(kReady, clock.Now());
  logic.Join(2, Counter(2), kReady, clock.Now());
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(1));
  clock.Advance(milliseconds(250));
  step = logic.OnWatchEnded(kReady, clock.Now());  // deadline, still ready
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(1));
  EXPECT_TRUE(step.arm);  // waiter 2 still waits
  EXPECT_EQ(logic.waiters(), 1u);
}

// Issue 39, item 11: the attempt failed because the channel was down (it
// was not READY when the attempt started), and the channel is READY again
// before the wait joins: the wait ends at once instead of being taken for
// a failure on a ready channel and running out its backoff.
TEST_F(ReconnectWatchTest, ADownChannelReadyBeforeTheJoinWakesAtOnce) {
  auto step = logic.Join(1, Counter(1), kReady, clock.Now(),
                         /*down_at_attempt_start=*/true);
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(1));
  EXPECT_EQ(logic.waiters(), 0u);
  EXPECT_FALSE(step.arm);  // nobody left to watch for
  // An attempt that started on a ready channel keeps its backoff.
  step = logic.Join(2, Counter(2), kReady, clock.Now(),
                    /*down_at_attempt_start=*/false);
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(1));
  EXPECT_EQ(logic.waiters(), 1u);
}

TEST_F(ReconnectWatchTest, ResetsTheReconnectBackoffAtMostOncePerInterval) {
  // In TRANSIENT_FAILURE the channel would wait out gRPC's reconnect
  // backoff: the watch asks it to try now, at most every 250 ms, however
  // many calls wait and however often the state changes.
  auto step = logic.Join(1, Counter(1), kFailure, clock.Now());
  EXPECT_TRUE(step.reset_backoff);
  step = logic.Join(2, Counter(2), kFailure, clock.Now());
  EXPECT_FALSE(step.reset_backoff);
  int resets = 1;
  for (int i = 0; i < 40; ++i) {  // 1 s, state changes every 25 ms
    clock.Advance(milliseconds(25));
    step = logic.OnWatchEnded(i % 2 == 0 ? kConnecting : kFailure, clock.Now());
    if (step.reset_backoff) ++resets;
    EXPECT_TRUE(step.arm);
  }
  EXPECT_EQ(resets, 5);  // at 0, 250, 500, 750 and 1000 ms
  EXPECT_TRUE(woken.empty());
}

TEST_F(ReconnectWatchTest, NoResetWithoutWaiters) {
  auto id = 7u;
  logic.Join(id, Counter(7), kConnecting, clock.Now());
  EXPECT_NE(logic.Leave(id), nullptr);
  EXPECT_EQ(logic.Leave(id), nullptr);  // unknown now
  clock.Advance(milliseconds(300));
  auto step = logic.OnWatchEnded(kFailure, clock.Now());
  EXPECT_FALSE(step.reset_backoff);
  EXPECT_FALSE(step.arm);  // the watch stops with the last waiter
  EXPECT_FALSE(logic.armed());
  // A new waiter arms it again.
  step = logic.Join(8, Counter(8), kFailure, clock.Now());
  EXPECT_TRUE(step.arm);
  EXPECT_TRUE(step.reset_backoff);
}

TEST_F(ReconnectWatchTest, ALeftWaiterIsNotWoken) {
  logic.Join(1, Counter(1), kIdle, clock.Now());
  logic.Join(2, Counter(2), kIdle, clock.Now());
  logic.Leave(1);  // its backoff ended first, or it was cancelled
  auto step = logic.OnWatchEnded(kReady, clock.Now());
  Run(step);
  EXPECT_THAT(woken, ::testing::ElementsAre(2));
}

TEST_F(ReconnectWatchTest, AShutDownChannelIsNotWatched) {
  auto step = logic.Join(1, Counter(1), kShutdown, clock.Now());
  EXPECT_FALSE(step.arm);
  EXPECT_FALSE(step.reset_backoff);
  logic.Join(2, Counter(2), kIdle, clock.Now());
  step = logic.OnWatchEnded(kShutdown, clock.Now());
  EXPECT_FALSE(step.arm);
  EXPECT_TRUE(step.wake.empty());  // the waits run out their backoff
}

}  // namespace
}  // namespace internal
}  // namespace stubkit
