// Copyright 2026 The stubkit Authors.

#include "stubkit/cancellation.h"

#include <algorithm>
#include <utility>

#include "absl/time/time.h"

namespace stubkit {

void CancellationToken::Cancel() {
  std::vector<std::pair<uint64_t, std::function<void()>>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    // Under the lock, so no context is destroyed while it is cancelled: the
    // loops detach before they destroy a context.
    for (grpc::ClientContext* context : contexts_) context->TryCancel();
    callbacks.swap(callbacks_);
  }
  for (auto& [id, callback] : callbacks) callback();
}

bool CancellationToken::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool CancellationToken::Attach(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  contexts_.push_back(context);
  return true;
}

void CancellationToken::Detach(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  contexts_.erase(std::remove(contexts_.begin(), contexts_.end(), context),
                  contexts_.end());
}

bool CancellationToken::WaitFor(std::chrono::nanoseconds duration) {
  absl::MutexLock lock(&mu_);
  return !mu_.AwaitWithTimeout(absl::Condition(&cancelled_),
                               absl::FromChrono(duration));
}

uint64_t CancellationToken::AddCallback(std::function<void()> callback) {
  {
    absl::MutexLock lock(&mu_);
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
  absl::MutexLock lock(&mu_);
  callbacks_.erase(
      std::remove_if(callbacks_.begin(), callbacks_.end(),
                     [id](const auto& entry) { return entry.first == id; }),
      callbacks_.end());
}

}  // namespace stubkit
