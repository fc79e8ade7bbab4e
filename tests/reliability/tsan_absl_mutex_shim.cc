// Copyright 2026 The stubkit Authors.
//
// Makes Debian's uninstrumented absl::Mutex visible to ThreadSanitizer.
//
// TSan learns about synchronisation from instrumented code and from the libc
// functions it intercepts. absl::Mutex is neither here: libabsl is built
// without TSan and blocks on futexes. Every access guarded by an absl::Mutex
// would then be reported as a race. This file, linked only into the TSan
// build of runtime_concurrency_test, interposes the absl::Mutex member
// functions stubkit calls: each forwards to the real one in
// libabsl_synchronization.so (dlsym RTLD_NEXT) and tells TSan about the
// happens-before edge (release before an unlock, acquire after a lock).
// Await* and LockWhen* release and re-acquire inside, so they get both, and
// their condition is wrapped (EvalGuarded below): absl evaluates it with the
// mutex held, in the waiting thread or in an unlocking one, at points no
// wrapper sees. Calls inside libabsl go through these wrappers too (they
// are resolved through the PLT), which only adds edges that hold anyway.

// CMake compiles it with STUBKIT_TSAN_SHIM only when STUBKIT_SANITIZE
// holds "thread".
#ifdef STUBKIT_TSAN_SHIM

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"

extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);

namespace {

template <typename F>
F Real(const char* mangled) {
  void* symbol = dlsym(RTLD_NEXT, mangled);
  if (symbol == nullptr) {
    std::fprintf(stderr, "tsan_absl_mutex_shim: %s not found\n", mangled);
    std::abort();
  }
  return reinterpret_cast<F>(symbol);
}

#define STUBKIT_REAL(type, mangled)             \
  static const auto real = Real<type>(mangled); \
  (void)0

using absl::Condition;
using absl::Mutex;

// A condition evaluated under `mu`: acquire, then the caller's condition.
struct Guarded {
  Mutex* mu;
  const Condition* cond;
};
// Acquire before: the evaluating thread holds `mu`, perhaps re-locked
// inside absl. Release after: an unlocking thread evaluates waiters'
// conditions after its own release, and the waiter must see that read
// finish before it reuses the condition's memory.
bool EvalGuarded(Guarded* g) {
  __tsan_acquire(g->mu);
  bool result = g->cond->Eval();
  __tsan_release(g->mu);
  return result;
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  STUBKIT_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() {
  STUBKIT_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  STUBKIT_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex7TryLockEv");
  bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  STUBKIT_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  STUBKIT_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::Await(const Condition& cond) {
  STUBKIT_REAL(void (*)(Mutex*, const Condition&),
               "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
  Guarded g{this, &cond};
  const Condition guarded(&EvalGuarded, &g);  // before the release: an
  __tsan_release(this);                       // unlocking thread reads it
  real(this, guarded);
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  STUBKIT_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
               "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_"
               "9ConditionENS0_8DurationE");
  Guarded g{this, &cond};
  const Condition guarded(&EvalGuarded, &g);
  __tsan_release(this);
  bool result = real(this, guarded, timeout);
  __tsan_acquire(this);
  return result;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  STUBKIT_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
               "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_"
               "9ConditionENS0_4TimeE");
  Guarded g{this, &cond};
  const Condition guarded(&EvalGuarded, &g);
  __tsan_release(this);
  bool result = real(this, guarded, deadline);
  __tsan_acquire(this);
  return result;
}

void Mutex::LockWhen(const Condition& cond) {
  STUBKIT_REAL(void (*)(Mutex*, const Condition&),
               "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
  Guarded g{this, &cond};
  const Condition guarded(&EvalGuarded, &g);
  real(this, guarded);
  __tsan_acquire(this);
}

ABSL_NAMESPACE_END
}  // namespace absl

#endif  // STUBKIT_TSAN_SHIM
