#!/usr/bin/env bash
# Sanitizer runs of stubkit's tests.
#
#   scripts/sanitize.sh            # both passes below
#   scripts/sanitize.sh asan       # AddressSanitizer + UndefinedBehaviorSanitizer:
#                                  # the whole ctest suite (unit, generator,
#                                  # integration, reliability, fuzz corpus
#                                  # replay, demo, snippets, strict-warning
#                                  # compile of headers and generated code;
#                                  # not the checks labelled `source`, which
#                                  # read only the source tree and run in the
#                                  # main build's ctest)
#                                  # in build-asan/, with clang 14 in C++20
#                                  # (the main build is GCC in C++17, so CI
#                                  # runs the suite with both compilers and
#                                  # both standards); STUBKIT_ASAN_GCC=1
#                                  # builds it with GCC in C++17 instead
#   scripts/sanitize.sh tsan       # ThreadSanitizer: the runtime's concurrent
#                                  # parts over a fake transport
#                                  # (stubkit_runtime_concurrency_test) and
#                                  # the randomized simulation suite
#                                  # (stubkit_simulation_test, fewer
#                                  # scenarios) in build-tsan/
#
# Debian's gRPC and abseil are not instrumented. ASan and UBSan still check
# all of stubkit's code and the tests through real gRPC. TSan cannot follow
# gRPC core's synchronisation, so its binary makes no gRPC call; absl::Mutex
# is made visible to it by tests/reliability/tsan_absl_mutex_shim.cc, and
# ignore_noninstrumented_modules=1 ignores the libc calls (memmove, ...) made
# from inside those libraries, which TSan would otherwise check half-blind.
#
# Environment: JOBS (default 2), ASAN_BUILD_DIR, TSAN_BUILD_DIR,
# TSAN_REPEAT (default 20), TSAN_SIM_SCENARIOS (default 2000).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${STUBKIT_PRINT_BUILD_DIRS:-}" ]]; then
  echo "asan ${ASAN_BUILD_DIR:-build-asan}"
  echo "tsan ${TSAN_BUILD_DIR:-build-tsan}"
  exit 0
fi

# clang 14 and its sanitizer runtimes, for the ASan pass.
STUBKIT_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev ${STUBKIT_EXTRA_PACKAGES:-}" \
  scripts/install-deps.sh

jobs="${JOBS:-2}"
passes=("$@")
[[ ${#passes[@]} -eq 0 ]] && passes=(asan tsan)
status=0

# These trees are built for compile time, not speed: a test tree compiles
# every test once and runs it once. tests/unit/hedging_test.cc, CPU seconds:
# clang 14 + ASan+UBSan at -O2 -g 27.4, at -O0 -gline-tables-only 10.9; GCC
# at -O2 -g 21.5, at -Og -g1 8.8. Line tables keep file:line in reports.
CLANG_TEST_FLAGS="-O0 -gline-tables-only -DNDEBUG"
GCC_TEST_FLAGS="-Og -g1 -DNDEBUG"

configure() {  # <build dir> <sanitizers> <flags> [cmake args...]
  local dir="$1" sanitizers="$2" flags="$3"
  shift 3
  # A tree configured with another compiler cannot switch: start afresh.
  if [[ -f "${dir}/CMakeCache.txt" ]] &&
     ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$(command -v "${CXX:-c++}")" "${dir}/CMakeCache.txt"; then
    rm -rf "${dir}"
  fi
  cmake -S . -B "${dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${flags}" \
    -DSTUBKIT_SANITIZE="${sanitizers}" -DSTUBKIT_BUILD_TESTS=ON \
    -DSTUBKIT_BUILD_BENCHMARKS=OFF "$@" >/dev/null
}

for pass in "${passes[@]}"; do
  start=$(date +%s)
  case "${pass}" in
    asan)
      dir="${ASAN_BUILD_DIR:-build-asan}"
      echo "== sanitize: ASan+UBSan build in ${dir}"
      if [[ -n "${STUBKIT_ASAN_GCC:-}" ]]; then
        configure "${dir}" address,undefined "${GCC_TEST_FLAGS}" \
          -DSTUBKIT_BUILD_EXAMPLES=ON
      else
        CXX=clang++-14 CC=clang-14 configure "${dir}" address,undefined \
          "${CLANG_TEST_FLAGS}" -DSTUBKIT_BUILD_EXAMPLES=ON \
          -DCMAKE_CXX_STANDARD=20
      fi
      cmake --build "${dir}" -j "${jobs}"
      built=$(date +%s)
      echo "== sanitize: ASan+UBSan ctest (built in $((built - start)) s)"
      # LeakSanitizer is on, with no suppressions.
      if ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
         UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
         STUBKIT_RELIABILITY_SLOWDOWN=4 \
         ctest --test-dir "${dir}" --output-on-failure --no-tests=error -LE source \
           -j "${jobs}" --timeout 600; then
        echo "== sanitize: ASan+UBSan passed (ctest $(( $(date +%s) - built )) s, total $(( $(date +%s) - start )) s)"
      else
        status=1
        echo "== sanitize: ASan+UBSan FAILED" >&2
      fi
      ;;
    tsan)
      dir="${TSAN_BUILD_DIR:-build-tsan}"
      echo "== sanitize: TSan build in ${dir}"
      # -O1 -g1: optimized, as TSan's checks are slow, and line tables for
      # its reports. The same runs as at -O2 -g (26 s), and the build of
      # its two tests about 30 s shorter.
      configure "${dir}" thread "-O1 -g1 -DNDEBUG" -DSTUBKIT_BUILD_EXAMPLES=OFF
      cmake --build "${dir}" -j "${jobs}" \
        --target stubkit_runtime_concurrency_test stubkit_simulation_test
      built=$(date +%s)
      # The shim's self-check: no report for guarded accesses, one for a
      # real race.
      check="${dir}/tsan_shim_check"
      g++ -std=c++17 -O1 -g -fsanitize=thread -DSTUBKIT_TSAN_SHIM -I. \
        tests/reliability/tsan_shim_check.cc \
        tests/reliability/tsan_absl_mutex_shim.cc \
        -labsl_synchronization -ldl -pthread -o "${check}"
      # Only TSan's own exit code (set here, so no other failure, e.g. a
      # crash or a wrong result, can pass for it) and its report count as
      # "caught".
      export TSAN_OPTIONS="ignore_noninstrumented_modules=1:exitcode=66"
      clean_rc=0
      "${check}" 2>/dev/null || clean_rc=$?
      race_rc=0
      "${check}" race 2>"${check}.race.log" || race_rc=$?
      if [[ ${clean_rc} -ne 0 ]]; then
        echo "== sanitize: TSan shim self-check: the clean run exited ${clean_rc} (a false report?)" >&2
        status=1
      elif [[ ${race_rc} -ne 66 ]] ||
           ! grep -q "WARNING: ThreadSanitizer: data race" "${check}.race.log"; then
        echo "== sanitize: TSan shim self-check: a real race went unreported (exit ${race_rc}, not TSan's 66)" >&2
        status=1
      else
        echo "== sanitize: TSan shim self-check passed (no false report; real race caught)"
      fi
      unset TSAN_OPTIONS
      # Repeated: races are timing-dependent.
      if TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1" \
         "${dir}/tests/reliability/stubkit_runtime_concurrency_test" \
           --gtest_repeat="${TSAN_REPEAT:-20}" --gtest_brief=1; then
        echo "== sanitize: TSan passed (run $(( $(date +%s) - built )) s, total $(( $(date +%s) - start )) s)"
      else
        status=1
        echo "== sanitize: TSan FAILED" >&2
      fi
      # The simulation suite: a hedged sync call's caller thread, the
      # default timer thread releasing operations, callbacks re-entering
      # calls. Fewer scenarios than the normal run: TSan is ~10x slower.
      sim_start=$(date +%s)
      if TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1" \
         STUBKIT_SIM_SCENARIOS="${TSAN_SIM_SCENARIOS:-2000}" \
         "${dir}/tests/simulation/stubkit_simulation_test" --gtest_brief=1; then
        echo "== sanitize: TSan simulation passed ($(( $(date +%s) - sim_start )) s)"
      else
        status=1
        echo "== sanitize: TSan simulation FAILED" >&2
      fi
      ;;
    *)
      echo "sanitize.sh: unknown pass '${pass}' (asan or tsan)" >&2
      exit 2
      ;;
  esac
done
exit "${status}"
