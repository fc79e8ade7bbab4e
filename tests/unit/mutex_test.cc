// Copyright 2026 The stubkit Authors.
//
// internal::Mutex, MutexLock and CondVar: mutual exclusion, a timed wait
// that times out, a notified wait. Timings are loose: a wait that must time
// out is short, one that must be notified has ten seconds.

#include "stubkit/internal/base/mutex.h"

#include <chrono>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "gtest/gtest.h"

namespace stubkit {
namespace internal {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

// Far longer than anything here needs on a loaded machine.
constexpr std::chrono::seconds kPatience{10};

class Shared {
 public:
  // A read, a yield and a write: lost updates without the lock.
  void Increment() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    const int read = count_;
    std::this_thread::yield();
    count_ = read + 1;
  }
  int count() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return count_;
  }
  void Set() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      set_ = true;
    }
    cv_.NotifyAll();
  }
  // False when `deadline` passed before Set().
  bool WaitUntilSet(Steady::time_point deadline) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return cv_.WaitUntil(
        lock, deadline,
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return set_; });
  }
  void WaitForSet() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    cv_.Wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return set_; });
  }
  // The forms without a predicate, looping as their callers do.
  bool WaitUntilSetLoop(Steady::time_point deadline) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    while (!set_) {
      if (!cv_.WaitUntil(lock, deadline)) return set_;
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
  bool set_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(MutexTest, TwoThreadsExcludeEachOther) {
  constexpr int kEach = 20000;
  Shared shared;
  auto work = [&] {
    for (int i = 0; i < kEach; ++i) shared.Increment();
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(shared.count(), 2 * kEach);
}

TEST(MutexTest, TimedWaitTimesOut) {
  Shared shared;
  const Steady::time_point start = Steady::now();
  EXPECT_FALSE(shared.WaitUntilSet(start + milliseconds(20)));
  EXPECT_GE(Steady::now() - start, milliseconds(20));
  EXPECT_FALSE(shared.WaitUntilSetLoop(Steady::now() + milliseconds(5)));
  // A deadline already past returns at once.
  EXPECT_FALSE(shared.WaitUntilSet(Steady::now() - milliseconds(1)));
}

TEST(MutexTest, NotifiedWaitReturns) {
  Shared shared;
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(10));
    shared.Set();
  });
  EXPECT_TRUE(shared.WaitUntilSet(Steady::now() + kPatience));
  setter.join();
  // Already set: no wait at all.
  EXPECT_TRUE(shared.WaitUntilSetLoop(Steady::now()));
}

TEST(MutexTest, UntimedWaitReturnsOnceNotified) {
  Shared shared;
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(10));
    shared.Set();
  });
  shared.WaitForSet();
  setter.join();
  EXPECT_TRUE(shared.WaitUntilSet(Steady::now()));
}

}  // namespace
}  // namespace internal
}  // namespace stubkit
