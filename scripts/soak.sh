#!/usr/bin/env bash
# A long run of the randomized simulation suite (tests/simulation): many more
# seeds than the 10,000 of the normal test run, from a fresh starting seed.
#
#   scripts/soak.sh                    # 1,000,000 scenarios or 30 minutes
#   SOAK_SCENARIOS=5000000 SOAK_SECONDS=7200 scripts/soak.sh
#   SOAK_BASE_SEED=424242 scripts/soak.sh   # a chosen starting seed
#
# A failure prints each failing seed and a one-line replay command
# (STUBKIT_SIM_SEED=<n> <binary>).
#
# Environment: SOAK_BUILD_DIR (default build-soak, RelWithDebInfo), JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${SOAK_BUILD_DIR:-build-soak}"
jobs="${JOBS:-2}"
scenarios="${SOAK_SCENARIOS:-1000000}"
seconds="${SOAK_SECONDS:-1800}"
# Default: a seed range no normal run uses, different on each soak.
base="${SOAK_BASE_SEED:-$(( ($(date +%s) % 100000) * 1000000 + 1000000000 ))}"

cmake -S . -B "${dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTUBKIT_BUILD_TESTS=ON -DSTUBKIT_BUILD_BENCHMARKS=OFF \
  -DSTUBKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "${dir}" -j "${jobs}" --target stubkit_simulation_test

echo "== soak: up to ${scenarios} scenarios or ${seconds} s from seed ${base}"
STUBKIT_SIM_SCENARIOS="${scenarios}" STUBKIT_SIM_SECONDS="${seconds}" \
STUBKIT_SIM_BASE_SEED="${base}" \
  "${dir}/tests/simulation/stubkit_simulation_test" --gtest_brief=1
