// Copyright 2026 The stubkit Authors.

#include "stubkit/internal/engine/deadline.h"

#include "stubkit/retry_options.h"

namespace stubkit {
namespace internal {

Clock::time_point CallEnd(const OptionsView& options, Clock::time_point start) {
  Clock::time_point end = Clock::time_point::max();
  const std::chrono::nanoseconds total = options.get<TotalTimeoutOption>();
  if (total > std::chrono::nanoseconds::zero()) {
    end = AddSaturating(start, total);
  }
  const auto deadline = options.get<DeadlineOption>();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    // Compare before subtracting: `time_point::min() - now` overflows.
    const auto wall_now = std::chrono::system_clock::now();
    end = std::min(end, deadline <= wall_now
                            ? start
                            : AddSaturating(start, deadline - wall_now));
  }
  return end;
}

std::chrono::system_clock::time_point ToWallDeadline(
    Clock::time_point now, Clock::time_point deadline,
    std::chrono::system_clock::time_point wall_now) {
  using Wall = std::chrono::system_clock::time_point;
  if (deadline == Clock::time_point::max()) return Wall::max();
  // Expired: a time gRPC sees as past whatever its cached clock reads (a
  // "now" could still be a few microseconds ahead of it, and be sent).
  if (deadline <= now) return Wall();
  return AddSaturating(wall_now, deadline - now);
}

void SetAttemptDeadline(grpc::ClientContext& context, Clock::time_point now,
                        Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return;  // a fresh context's
  context.set_deadline(
      ToWallDeadline(now, deadline, std::chrono::system_clock::now()));
}

}  // namespace internal
}  // namespace stubkit
