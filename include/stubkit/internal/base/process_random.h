// Copyright 2026 The stubkit Authors.
//
// The process-wide random source of jitter. Not API.

#ifndef STUBKIT_INTERNAL_PROCESS_RANDOM_H_
#define STUBKIT_INTERNAL_PROCESS_RANDOM_H_

namespace stubkit {
namespace internal {

// A uniform double in [0, 1) from the process-wide generator. Lock-free and
// thread-safe; seeded once per process.
double ProcessUniform01();

}  // namespace internal
}  // namespace stubkit

#endif  // STUBKIT_INTERNAL_PROCESS_RANDOM_H_
