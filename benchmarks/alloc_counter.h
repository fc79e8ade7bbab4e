// Copyright 2026 The stubkit Authors.
//
// Counts heap allocations made through the global operator new, so a
// benchmark can report allocations per call and bytes held:
//
//   uint64_t before = stubkit::bench::Allocations();
//   DoCall();
//   uint64_t per_call = stubkit::bench::Allocations() - before;
//
//   int64_t live = stubkit::bench::LiveBytes();   // held right now
//
// Linking alloc_counter.cc replaces operator new for the whole program.
// gRPC core allocates with malloc directly (gpr_malloc), which is not
// counted here; use mallinfo2() for the whole heap.

#ifndef STUBKIT_BENCHMARKS_ALLOC_COUNTER_H_
#define STUBKIT_BENCHMARKS_ALLOC_COUNTER_H_

#include <cstdint>

namespace stubkit {
namespace bench {

// Allocations by any thread since the program started.
uint64_t Allocations();
// Bytes (as malloc_usable_size reports them) allocated through operator new
// and not yet deleted, by any thread.
int64_t LiveBytes();

}  // namespace bench
}  // namespace stubkit

#endif  // STUBKIT_BENCHMARKS_ALLOC_COUNTER_H_
