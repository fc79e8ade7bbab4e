// Copyright 2026 The stubkit Authors.
//
// The process-wide random source of jitter. Not API.

#ifndef STUBKIT_INTERNAL_PROCESS_RANDOM_H_
#define STUBKIT_INTERNAL_PROCESS_RANDOM_H_

#include <cstdint>

namespace stubkit {
namespace internal {

// A uniform double in [0, 1) from the process-wide generator. Lock-free and
// thread-safe; seeded once per process.
double ProcessUniform01();

// Test only: restarts the process-wide generator at `seed`, so that a
// simulation's scenario, replayed alone by its seed, draws the jitter it
// drew in the whole run (tests/simulation). Draws of calls running side by
// side still interleave as their threads do.
void SeedProcessRandomForTesting(uint64_t seed);

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_PROCESS_RANDOM_H_
