// Copyright 2026 The stubkit Authors.
//
// Counts heap allocations made through the global operator new, so a
// benchmark can report allocations per call:
//
//   uint64_t before = stubkit::bench::Allocations();
//   DoCall();
//   uint64_t per_call = stubkit::bench::Allocations() - before;
//
// Linking alloc_counter.cc replaces operator new for the whole program.

#ifndef STUBKIT_BENCHMARKS_ALLOC_COUNTER_H_
#define STUBKIT_BENCHMARKS_ALLOC_COUNTER_H_

#include <cstdint>

namespace stubkit {
namespace bench {

// Allocations by any thread since the program started.
uint64_t Allocations();

}  // namespace bench
}  // namespace stubkit

#endif  // STUBKIT_BENCHMARKS_ALLOC_COUNTER_H_
