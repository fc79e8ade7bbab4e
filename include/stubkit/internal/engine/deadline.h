// Copyright 2026 The stubkit Authors.
//
// Deadline arithmetic, in one place: every attempt's deadline (sync, async,
// hedged, streams) is computed here from the call's end and the attempt
// timeout, and handed to gRPC here. Not API.
//
// The call's end is decided by the caller (`RetryLoopState`): for a unary
// attempt the earliest of the retry policy's time limit, `TotalTimeoutOption`
// and `DeadlineOption`; for a stream attempt the same without the policy's
// limit (a stream lives as long as it is read; the policy bounds how long
// stubkit keeps reopening it).

#ifndef STUBKIT_INTERNAL_DEADLINE_H_
#define STUBKIT_INTERNAL_DEADLINE_H_

#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>

#include "stubkit/clock.h"
#include "stubkit/options.h"

namespace stubkit {
namespace internal {

// `base + delta`, saturating at `max()`: a limit of a few centuries must not
// overflow and wrap into the past (every attempt would then fail at once).
// `delta` must not be negative.
template <typename TimePoint>
TimePoint AddSaturating(TimePoint base, std::chrono::nanoseconds delta) {
  using Duration = typename TimePoint::duration;
  const Duration step = std::chrono::duration_cast<Duration>(delta);
  if (step >= TimePoint::max() - base) return TimePoint::max();
  return base + step;
}

// The call's own end: the earliest of `start + TotalTimeoutOption` (when
// positive) and `DeadlineOption`, mapped from the wall clock (read at
// `wall_now`) onto the clock of `start` once, at the call's start; `max()`
// for none. The retry policy's time limit is not in it.
Clock::time_point CallEnd(const OptionsView& options, Clock::time_point start);

// The deadline of an attempt starting at `start`: the earlier of `end` (the
// call's end, `max()` for none) and `start + attempt_timeout` (when
// positive).
template <typename TimePoint>
TimePoint AttemptEnd(TimePoint start, TimePoint end,
                     std::chrono::nanoseconds attempt_timeout) {
  if (attempt_timeout <= std::chrono::nanoseconds::zero()) return end;
  return std::min(end, AddSaturating(start, attempt_timeout));
}

// The wall-clock value for `grpc::ClientContext::set_deadline` of a
// deadline on the steady (or injected) clock: the time remaining from
// `now`, carried over onto `wall_now`, saturating at `max()` (gRPC: none);
// the epoch when `deadline` has passed.
std::chrono::system_clock::time_point ToWallDeadline(
    Clock::time_point now, Clock::time_point deadline,
    std::chrono::system_clock::time_point wall_now);

// Sets `deadline` (on the clock `now` was read from) as `context`'s
// deadline, through `ToWallDeadline`; nothing for `max()`. Every attempt's
// deadline reaches gRPC here.
void SetAttemptDeadline(grpc::ClientContext& context, Clock::time_point now,
                        Clock::time_point deadline);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_DEADLINE_H_
