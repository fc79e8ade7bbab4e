// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/api/attempt_context.h"

#include <atomic>

namespace stubkit {
namespace internal {
namespace {

// Acquire/release: a tap is fully built before a driver on another thread
// calls it.
std::atomic<AttemptTap*> g_tap{nullptr};

}  // namespace

void SetAttemptTap(AttemptTap* tap) {
  g_tap.store(tap, std::memory_order_release);
}

const ServerTrailerMap* ServerTrailers(const grpc::ClientContext& context) {
  AttemptTap* tap = g_tap.load(std::memory_order_acquire);
  if (tap != nullptr) {
    if (const ServerTrailerMap* trailers = tap->Trailers(context)) {
      return trailers;
    }
  }
  return &context.GetServerTrailingMetadata();
}

void CancelAttempt(grpc::ClientContext& context) {
  context.TryCancel();
  AttemptTap* tap = g_tap.load(std::memory_order_acquire);
  if (tap != nullptr) tap->Cancelled(context);
}

}  // namespace internal
}  // namespace stubkit
