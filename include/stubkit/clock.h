// Copyright 2026 The stubkit Authors.
//
// Clock and Sleeper: the retry loop's view of time, replaceable in tests.
//
// The retry loop reads a steady clock and waits through a sleeper. Both are
// options, so a test can run a 30-minute policy in microseconds:
//
//   auto clock = std::make_shared<stubkit::FakeClock>();
//   auto options = stubkit::Options{}
//       .set<stubkit::ClockOption>(clock)
//       .set<stubkit::SleeperOption>(clock);  // sleeping advances the clock
//
// When neither is set the loop uses `std::chrono::steady_clock` and really
// sleeps, with no allocation. Async calls wait through an `AsyncSleeper`
// (by default one process-wide timer thread); `FakeClock` is one too.
// Tests with a fake clock: docs/testing.md.

#ifndef STUBKIT_CLOCK_H_
#define STUBKIT_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace stubkit {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual time_point Now() const = 0;
};

class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void SleepFor(std::chrono::nanoseconds duration) = 0;
};

// Waits without blocking a thread: async calls schedule their backoff here.
//
// A sleeper runs each `done` exactly once, never while holding a lock of its
// own, nor destroys what `done` captured under one. Threads:
// - The default (one process-wide timer thread) hands every `done(true)`, in
//   deadline order, to a pool of stubkit threads that grows while every one
//   is busy, up to 64: a callback that blocks delays no other wait until 64
//   block at once (the 65th waits for one of them). When no thread can be
//   made (a pids cgroup, RLIMIT_NPROC), callbacks wait for a pool thread, or
//   with none left run on the timer thread. `done(false)` runs on the
//   thread calling `Cancel`, before `Cancel` returns.
// - `FakeClock` runs `done(true)` inline, in `Schedule`.
// Another sleeper may run `done` on any thread, or inline in `Schedule`.
class AsyncSleeper {
 public:
  virtual ~AsyncSleeper() = default;
  // Calls `done(true)` once `duration` has passed (on the steady clock, for
  // the default). Returns an id for `Cancel`.
  virtual uint64_t Schedule(std::chrono::nanoseconds duration,
                            std::function<void(bool)> done) = 0;
  // Calls `done(false)` promptly unless it already ran or is running (it
  // does not wait for a `done(true)` that is running).
  virtual void Cancel(uint64_t id) = 0;
};

// A clock that moves only when told, and sleepers that move it. An async
// wait advances the clock and completes inline, in `Schedule`; `Cancel` has
// nothing left to do. Thread-safe.
class FakeClock : public Clock, public Sleeper, public AsyncSleeper {
 public:
  FakeClock() = default;
  explicit FakeClock(time_point start) : now_(start.time_since_epoch()) {}

  time_point Now() const override { return time_point(now_.load()); }
  void SleepFor(std::chrono::nanoseconds duration) override {
    Advance(duration);
  }
  uint64_t Schedule(std::chrono::nanoseconds duration,
                    std::function<void(bool)> done) override {
    Advance(duration);
    done(true);
    return 0;
  }
  void Cancel(uint64_t) override {}
  // Saturates instead of wrapping into the past (waits of
  // `nanoseconds::max()`, an uncapped backoff's, add past int64): at
  // `time_point::max() - 1ns`, since `max()` means "never" to stubkit (no
  // deadline, no end), which no clock reading may reach; and at `min()`.
  void Advance(std::chrono::nanoseconds duration) {
    const Duration step = std::chrono::duration_cast<Duration>(duration);
    Duration current = now_.load();
    while (!now_.compare_exchange_weak(current, Add(current, step))) {
    }
  }

 private:
  using Duration = std::chrono::steady_clock::duration;
  static Duration Add(Duration now, Duration step) {
    constexpr Duration kLatest = Duration::max() - Duration(1);
    if (step > Duration::zero() && now > kLatest - step) return kLatest;
    if (step < Duration::zero() && now < Duration::min() - step) {
      return Duration::min();
    }
    return now + step;
  }

  std::atomic<std::chrono::steady_clock::duration> now_{std::chrono::hours(1)};
};

// The option tags. Unset (null) means the real steady clock and real sleep.
struct ClockOption {
  using Type = std::shared_ptr<Clock>;
  static Type Default() { return nullptr; }
};
struct SleeperOption {
  using Type = std::shared_ptr<Sleeper>;
  static Type Default() { return nullptr; }
};
// Unset (null) means the process-wide timer thread.
struct AsyncSleeperOption {
  using Type = std::shared_ptr<AsyncSleeper>;
  static Type Default() { return nullptr; }
};

}  // namespace stubkit

#endif  // STUBKIT_CLOCK_H_
