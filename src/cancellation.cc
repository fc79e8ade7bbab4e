// Copyright 2026 The stubkit Authors.

#include "stubkit/cancellation.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "stubkit/internal/api/attempt_context.h"
#include "stubkit/internal/api/timer_queue.h"

namespace stubkit {

void CancellationToken::Cancel() {
  std::vector<grpc::ClientContext*> contexts;
  std::vector<std::pair<uint64_t, std::function<void()>>> callbacks;
  {
    internal::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    contexts = contexts_;
    callbacks.swap(callbacks_);
    cancelling_ = std::this_thread::get_id();
  }
  cancelled_cv_.NotifyAll();
  // Without the lock: TryCancel runs the channel's client interceptors
  // (user code) on this thread. `Detach` waits for this loop to end, so no
  // context is destroyed while it is being cancelled; no new context can
  // attach, since `cancelled_` is set.
  for (grpc::ClientContext* context : contexts) {
    internal::CancelAttempt(*context);
  }
  {
    internal::MutexLock lock(&mu_);
    cancelling_ = std::thread::id();
  }
  cancelled_cv_.NotifyAll();
  for (auto& [id, callback] : callbacks) callback();
}

bool CancellationToken::cancelled() const {
  internal::MutexLock lock(&mu_);
  return cancelled_;
}

bool CancellationToken::Attach(grpc::ClientContext* context) {
  internal::MutexLock lock(&mu_);
  if (cancelled_) return false;
  contexts_.push_back(context);
  return true;
}

void CancellationToken::Detach(grpc::ClientContext* context) {
  internal::MutexLock lock(&mu_);
  // The caller destroys `context` next, so wait while `Cancel` may be
  // cancelling it. Not when `Cancel` is on this very thread (an interceptor
  // it ran ended an attempt here): that would wait for ourselves.
  const std::thread::id self = std::this_thread::get_id();
  cancelled_cv_.Wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelling_ == std::thread::id() || cancelling_ == self;
  });
  contexts_.erase(std::remove(contexts_.begin(), contexts_.end(), context),
                  contexts_.end());
}

bool CancellationToken::WaitFor(std::chrono::nanoseconds duration) {
  const std::chrono::steady_clock::time_point deadline =
      internal::SteadyDeadline(duration);
  internal::MutexLock lock(&mu_);
  auto is_cancelled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_;
  };
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    cancelled_cv_.Wait(lock, is_cancelled);
    return false;
  }
  // A steady_clock time point: pthread_cond_clockwait on CLOCK_MONOTONIC.
  return !cancelled_cv_.WaitUntil(lock, deadline, is_cancelled);
}

uint64_t CancellationToken::AddCallback(std::function<void()> callback) {
  {
    internal::MutexLock lock(&mu_);
    if (!cancelled_) {
      uint64_t id = next_callback_id_++;
      callbacks_.emplace_back(id, std::move(callback));
      return id;
    }
  }
  callback();
  return 0;
}

void CancellationToken::RemoveCallback(uint64_t id) {
  internal::MutexLock lock(&mu_);
  callbacks_.erase(
      std::remove_if(callbacks_.begin(), callbacks_.end(),
                     [id](const auto& entry) { return entry.first == id; }),
      callbacks_.end());
}

}  // namespace stubkit
