#!/usr/bin/env bash
# Builds stubkit's libFuzzer targets (tests/fuzz/) with Debian's clang,
# ASan and UBSan, and runs each for a bounded time from the checked-in seed
# corpus. A crash stops the script with the target's output and the input
# (saved under the work directory); add that input to
# tests/fuzz/regressions/<target>/ once fixed: ctest replays it in every build.
#
#   scripts/fuzz.sh                      # every target, 30 s each
#   FUZZ_SECONDS=10 scripts/fuzz.sh      # what scripts/test.sh (CI) runs
#   FUZZ_SECONDS=600 scripts/fuzz.sh     # the longer run, 10 min each
#   scripts/fuzz.sh options pushback     # only these targets
#   FUZZ_JOBS=2 FUZZ_SECONDS=3600 scripts/fuzz.sh options   # an hour, 2 cores
#
# Environment:
#   FUZZ_BUILD_DIR build tree (default build-fuzz; its own, as its
#                  compiler and flags are not the main build's)
#   FUZZ_SECONDS   time per target (default 30)
#   FUZZ_JOBS      parallel fuzzing processes per target (default 1)
#   FUZZ_AT_ONCE   targets fuzzed side by side when FUZZ_JOBS is 1 (default:
#                  the number of cores)
#   FUZZ_WORK      where the growing corpus and crash inputs go
#                  (default $FUZZ_BUILD_DIR/fuzz-work; the seeds are never modified)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${STUBKIT_PRINT_BUILD_DIRS:-}" ]]; then
  echo "fuzz ${FUZZ_BUILD_DIR:-build-fuzz}"
  exit 0
fi

STUBKIT_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev ${STUBKIT_EXTRA_PACKAGES:-}" \
  scripts/install-deps.sh

build_dir="$(realpath -m "${FUZZ_BUILD_DIR:-build-fuzz}")"
seconds="${FUZZ_SECONDS:-30}"
fuzz_jobs="${FUZZ_JOBS:-1}"
work="$(realpath -m "${FUZZ_WORK:-${build_dir}/fuzz-work}")"
all_targets=(pushback status_details retry_summary options service_config)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all_targets[@]}")

root="${PWD}"
start=$(date +%s)
# -O1 -gline-tables-only: what libFuzzer's docs build with; stack traces keep
# their lines, and the tree builds in less time than at -O2 -g.
CC=clang-14 CXX=clang++-14 cmake -S . -B "${build_dir}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTUBKIT_FUZZ=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DSTUBKIT_SANITIZE=address,undefined \
  -DSTUBKIT_BUILD_TESTS=ON -DSTUBKIT_BUILD_BENCHMARKS=OFF \
  -DSTUBKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "${build_dir}" -j "${JOBS:-2}" \
  --target "${targets[@]/%/_fuzzer}"
echo "== fuzz: built in $(( $(date +%s) - start )) s"

# Fuzzes one target; prints its summary, returns non-zero on a crash.
fuzz_one() {
  local target="$1"
  local binary="${build_dir}/tests/fuzz/${target}_fuzzer"
  local corpus="${work}/corpus/${target}"
  local artifacts="${work}/artifacts/${target}/"
  rm -rf "${artifacts}"
  mkdir -p "${corpus}" "${artifacts}"
  local seeds=(tests/fuzz/corpus/"${target}")
  [[ -d tests/fuzz/regressions/${target} ]] &&
    seeds+=(tests/fuzz/regressions/"${target}")
  echo "== fuzz: ${target} for ${seconds} s"
  local log="${work}/${target}.log"
  local parallel=()
  # With -jobs, libFuzzer writes fuzz-<n>.log into the current directory:
  # run from the work directory.
  [[ ${fuzz_jobs} -gt 1 ]] && parallel=(-jobs="${fuzz_jobs}" -workers="${fuzz_jobs}")
  if (cd "${work}" &&
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "${binary}" -max_total_time="${seconds}" -timeout=10 \
      -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 "${parallel[@]}" \
      -artifact_prefix="${artifacts}" "${corpus}" \
      "${seeds[@]/#/${root}/}") >"${log}" 2>&1; then
    local runs cov
    runs=$(grep -h 'stat::number_of_executed_units' "${log}" | awk '{s+=$2} END {print s+0}')
    cov=$(grep -ho 'cov: [0-9]*' "${log}" | tail -1)
    echo "   ok: ${runs} runs, ${cov}, corpus $(ls "${corpus}" | wc -l) files"
  else
    echo "   CRASH in ${target}; input(s) in ${artifacts}:"
    ls "${artifacts}"
    grep -A30 -m1 'ERROR\|FUZZ_CHECK\|runtime error' "${log}" || tail -40 "${log}"
    return 1
  fi
}

# A libFuzzer process uses one core: with FUZZ_JOBS=1, as many targets run
# at once as there are cores, each for its full time (CI: 5 targets of 10 s
# in 30 s of wall time instead of 50).
at_once=1
[[ ${fuzz_jobs} -le 1 ]] && at_once="${FUZZ_AT_ONCE:-$(nproc)}"
status=0
mkdir -p "${work}"
for (( i = 0; i < ${#targets[@]}; i += at_once )); do
  batch=("${targets[@]:i:at_once}")
  pids=()
  for target in "${batch[@]}"; do
    fuzz_one "${target}" >"${work}/${target}.summary" 2>&1 &
    pids+=($!)
  done
  for j in "${!batch[@]}"; do
    if wait "${pids[j]}"; then
      cat "${work}/${batch[j]}.summary"
    else
      status=1
      cat "${work}/${batch[j]}.summary" >&2
    fi
  done
done
echo "== fuzz: done in $(( $(date +%s) - start )) s"
exit "${status}"
