// Copyright 2026 The stubkit Authors.
//
// What the spec (README "Out of the box", DESIGN "Defaults") says the
// default policy does to a call that always fails with UNAVAILABLE, derived
// from the spec's formula rather than from the code:
//
//   - the call gives up 30 minutes after it started;
//   - the wait before the n-th retry (n from 0) is
//     min(1 s * 2^n + U[0, 1 s], 5 min);
//   - a wait that would end at or after the call's end is not started.
//
// Simulating with the jitter always 0 and always 1 s gives the extremes; when
// both give the same number of attempts, that number is exact.

#ifndef STUBKIT_TESTS_TESTING_DEFAULT_POLICY_SPEC_H_
#define STUBKIT_TESTS_TESTING_DEFAULT_POLICY_SPEC_H_

#include <algorithm>
#include <chrono>

namespace stubkit {
namespace testing {

struct DefaultPolicyOutcome {
  int attempts = 0;
  // Fake time from the call's start to its end.
  std::chrono::nanoseconds elapsed{0};
};

// `attempt_duration`: the fake time each attempt takes; `jitter_seconds`:
// the jitter drawn for every wait, in [0, 1].
inline DefaultPolicyOutcome SimulateDefaultPolicy(
    std::chrono::nanoseconds attempt_duration, double jitter_seconds) {
  constexpr double kLimitSeconds = 30 * 60;
  constexpr double kInitialSeconds = 1, kMaximumSeconds = 5 * 60;
  const double attempt_seconds =
      std::chrono::duration<double>(attempt_duration).count();
  double now = 0, base = kInitialSeconds;
  DefaultPolicyOutcome outcome;
  for (;;) {
    ++outcome.attempts;
    now += attempt_seconds;
    const double wait = std::min(base + jitter_seconds, kMaximumSeconds);
    if (now + wait >= kLimitSeconds) break;
    now += wait;
    base = std::min(base * 2, kMaximumSeconds);
  }
  outcome.elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(now));
  return outcome;
}

}  // namespace testing
}  // namespace stubkit

#endif  // STUBKIT_TESTS_TESTING_DEFAULT_POLICY_SPEC_H_
