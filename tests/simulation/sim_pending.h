// Copyright 2026 The stubkit Authors.
//
// Scenario dimensions whose invariants state the behaviour of a fix that is
// not on this branch yet. Each is off until its fix is merged; then flip
// the constant (or run with STUBKIT_SIM_PENDING=1 to try them all now).
//
// - kRepeatedPageTokensEnd (issue 22, item 2): page ranges draw list
//   servers that repeat a page token (the next page's own token, or an
//   earlier one: a cycle). Fixed: the range ends with an error after the
//   items of the page that carried it, and sends no token twice.
// - kImportedUnknownMethodsIgnored (issue 22, item 1): service configs draw
//   entries for methods the client lacks (sim.Sim.Unknown, and
//   google.longrunning.Operations.ListOperations, which the awaiters'
//   operations client lacks). Fixed: such an entry makes no call or poll
//   fail.

#ifndef STUBKIT_TESTS_SIMULATION_SIM_PENDING_H_
#define STUBKIT_TESTS_SIMULATION_SIM_PENDING_H_

#include <cstdlib>
#include <cstring>

namespace stubkit {
namespace sim {

constexpr bool kRepeatedPageTokensEnd = true;
constexpr bool kImportedUnknownMethodsIgnored = true;

inline bool PendingForced() {
  const char* v = std::getenv("STUBKIT_SIM_PENDING");
  return v != nullptr && std::strcmp(v, "1") == 0;
}
inline bool RepeatedPageTokensOn() {
  return kRepeatedPageTokensEnd || PendingForced();
}
inline bool ImportedUnknownMethodsOn() {
  return kImportedUnknownMethodsIgnored || PendingForced();
}

}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_PENDING_H_
