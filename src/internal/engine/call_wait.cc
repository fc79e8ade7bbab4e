// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/call_wait.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>

#include "stubkit/internal/api/timer_queue.h"
#include "stubkit/internal/base/mutex.h"
#include "stubkit/internal/engine/connection_channel.h"

namespace stubkit {
namespace internal {

using std::chrono::nanoseconds;
using time_point = Clock::time_point;

void RetryDelay::Begin(time_point now, nanoseconds wait) {
  // Saturates: a wait may be nanoseconds::max() (the options fuzzer found
  // the overflow), and a sum of large waits must not wrap.
  wait = std::max(wait, nanoseconds::zero());
  total_ =
      wait > nanoseconds::max() - total_ ? nanoseconds::max() : total_ + wait;
  pending_ = wait;
  began_ = now;
}

nanoseconds RetryDelay::CutShort(time_point now) {
  const nanoseconds waited =
      std::clamp<nanoseconds>(now - began_, nanoseconds::zero(), pending_);
  total_ -= pending_ - waited;
  pending_ = nanoseconds::zero();
  return waited;
}

void ThrottleWait::Begin(const absl::Status& status, time_point now) {
  waiting_ = true;
  status_ = status;
  since_ = now;
}

time_point ThrottleWait::NoteBudgetRefusal(time_point now) {
  budget_refused_ = true;
  if (budget_held_since_ == time_point::min()) budget_held_since_ = now;
  return budget_held_since_;
}

void ThrottleWait::Leave(time_point now, bool admitted) {
  if (!waiting_) return;
  waiting_ = false;
  waited_ += now - since_;
  if (admitted) {
    admitted_once_ = true;
    budget_held_since_ = time_point::min();
  }
  status_ = absl::OkStatus();
}

namespace {

// A sync wait that may end early: woken by the channel's watch (on the
// watcher thread) or by a cancel (on the cancelling thread).
struct SyncWake {
  Mutex mu;
  CondVar cv;
  bool woken ABSL_GUARDED_BY(mu) = false;
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  void Set(bool SyncWake::*flag) {
    {
      MutexLock lock(&mu);
      this->*flag = true;
    }
    cv.NotifyAll();
  }
};

}  // namespace

bool ChannelFollow::StartAttempt() {
  // Only TRANSIENT_FAILURE: an attempt started then fails without reaching
  // a server. A fresh (IDLE) or CONNECTING channel may connect and carry
  // the attempt to a server whose own UNAVAILABLE keeps its backoff.
  down_at_attempt_start_ =
      channel_ != nullptr &&
      channel_->channel().GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE;
  return std::exchange(woke_, false);
}

bool ChannelFollow::Wait(nanoseconds wait, CancellationToken* cancel,
                         bool* woken) {
  // Shared with the callbacks: a wake may come after this wait is over.
  auto wake = std::make_shared<SyncWake>();
  const std::chrono::steady_clock::time_point until = SteadyDeadline(wait);
  uint64_t registration = 0;
  if (cancel != nullptr) {
    registration =
        cancel->AddCallback([wake] { wake->Set(&SyncWake::cancelled); });
  }
  // The watcher thread polls the channel meanwhile (see
  // connection_channel.h): this thread only waits on the steady clock.
  const uint64_t watch = channel_->Join([wake] { wake->Set(&SyncWake::woken); },
                                        down_at_attempt_start_);
  {
    MutexLock lock(&wake->mu);
    wake->cv.WaitUntil(lock, until,
                       [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(wake->mu) {
                         return wake->woken || wake->cancelled;
                       });
    *woken = wake->woken;
  }
  channel_->Leave(watch);
  if (cancel != nullptr) {
    cancel->RemoveCallback(registration);
    if (cancel->cancelled()) return false;
  }
  return true;
}

bool SleepThrough(nanoseconds wait, Sleeper* sleeper,
                  CancellationToken* cancel) {
  if (sleeper != nullptr) {
    sleeper->SleepFor(wait);
  } else if (cancel != nullptr) {
    return cancel->WaitFor(wait);
  } else {
    std::this_thread::sleep_for(wait);
  }
  return cancel == nullptr || !cancel->cancelled();
}

bool CallWait::Sleep(nanoseconds wait, Sleeper* sleeper,
                     CancellationToken* cancel, bool* woken) {
  *woken = false;
  if (sleeper == nullptr && follow_.active()) {
    return follow_.Wait(wait, cancel, woken);
  }
  return SleepThrough(wait, sleeper, cancel);
}

}  // namespace internal
}  // namespace stubkit
