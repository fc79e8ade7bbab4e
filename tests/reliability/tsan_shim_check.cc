// Copyright 2026 The stubkit Authors.
//
// Self-check of tsan_absl_mutex_shim.cc, run by scripts/sanitize.sh tsan:
// with the shim, accesses guarded by absl::Mutex (Lock, Await) are clean
// and exit 0; with an argument it adds a real race, which TSan must report
// (exit 66). Without the shim the clean run is reported too, which is why
// the shim exists.
#include <thread>
#include "absl/synchronization/mutex.h"
absl::Mutex mu; int guarded = 0; int racy = 0; bool flag = false;
int main(int argc, char**) {
  std::thread a([] { for (int i = 0; i < 1000; ++i) { absl::MutexLock l(&mu); ++guarded; } });
  std::thread b([] { for (int i = 0; i < 1000; ++i) { absl::MutexLock l(&mu); ++guarded; } });
  std::thread c([] { absl::MutexLock l(&mu); mu.Await(absl::Condition(&flag)); ++guarded; });
  { absl::MutexLock l(&mu); flag = true; }
  a.join(); b.join(); c.join();
  if (argc > 1) {  // a real race: one side without the lock
    std::thread d([] { absl::MutexLock l(&mu); ++racy; });
    ++racy;
    d.join();
  }
  return guarded == 2001 ? 0 : 1;
}
