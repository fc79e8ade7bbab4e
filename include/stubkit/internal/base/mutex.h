// Copyright 2026 The stubkit Authors.
//
// Mutex: stubkit's one kind of lock, a std::mutex that clang's
// -Wthread-safety understands. Members it protects say so with
// ABSL_GUARDED_BY, functions that need it held or not held with
// ABSL_EXCLUSIVE_LOCKS_REQUIRED / ABSL_LOCKS_EXCLUDED, and the compiler
// checks every access. `MutexLock` holds it for a scope, as absl::MutexLock
// does; `CondVar` waits with a `MutexLock` held, on the steady clock.
//
//   class Counter {
//    public:
//     void Add() ABSL_LOCKS_EXCLUDED(mu_) {
//       internal::MutexLock lock(&mu_);
//       ++count_;
//       changed_.NotifyAll();
//     }
//     // False when `deadline` passed first.
//     bool WaitForPositive(std::chrono::steady_clock::time_point deadline) {
//       internal::MutexLock lock(&mu_);
//       return changed_.WaitUntil(
//           lock, deadline,
//           [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ > 0; });
//     }
//
//    private:
//     internal::Mutex mu_;
//     internal::CondVar changed_;
//     int count_ ABSL_GUARDED_BY(mu_) = 0;
//   };
//
// Not absl::Mutex: Debian's abseil (20220623) has deadlock detection on,
// which costs every Mutex a graph node (about 4% of an async call's
// instructions for one Mutex per call) and aborts on lock-order inversions,
// and its timed waits sleep on the wall clock (FUTEX_CLOCK_REALTIME; see
// stubkit/internal/api/timer_queue.h). These are a std::mutex and a
// std::condition_variable and cost what they cost: no allocation, no
// virtual call. libstdc++ (GCC 12) waits on a steady_clock time point with
// pthread_cond_clockwait(CLOCK_MONOTONIC).
//
// Not public API.

#ifndef STUBKIT_INTERNAL_MUTEX_H_
#define STUBKIT_INTERNAL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace stubkit {
namespace internal {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `*mu` from construction to destruction.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  friend class CondVar;
  Mutex* const mu_;
};

// A std::condition_variable for a `Mutex`. Each wait releases the lock's
// mutex while it sleeps and holds it again on return; a wake-up may be
// spurious, so a wait without a predicate is in a loop that checks the
// condition. A predicate is called with the mutex held: declare it
// `[&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { ... }` so that the analysis
// checks its body.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(MutexLock& lock) {
    Adopted adopted(lock);
    cv_.wait(adopted.lock);
  }

  // Until `done()` holds.
  template <typename Predicate>
  void Wait(MutexLock& lock, Predicate done) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    while (!done()) Wait(lock);
  }

  // False when `deadline` passed (true after a notification or a spurious
  // wake-up). Steady clock only.
  bool WaitUntil(MutexLock& lock,
                 std::chrono::steady_clock::time_point deadline) {
    Adopted adopted(lock);
    return cv_.wait_until(adopted.lock, deadline) == std::cv_status::no_timeout;
  }

  // Until `done()` holds or `deadline` passes; returns `done()` (as
  // std::condition_variable::wait_until does).
  template <typename Predicate>
  bool WaitUntil(MutexLock& lock,
                 std::chrono::steady_clock::time_point deadline,
                 Predicate done) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    while (!done()) {
      if (!WaitUntil(lock, deadline)) return done();
    }
    return true;
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  // The lock's std::mutex as std::condition_variable wants it, without
  // taking or releasing it: the MutexLock owns it before and after, also
  // when a wait throws (the standard has it hold the mutex again first).
  struct Adopted {
    explicit Adopted(MutexLock& held) : lock(held.mu_->mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_MUTEX_H_
