#!/usr/bin/env bash
# Builds stubkit and runs every test: the CMake build's ctest suite (unit,
# generator, integration, reliability, fuzz-corpus replay, demo and
# benchmark smoke runs), a consumer project built against the installed
# package, the Bazel build's tests, the ASan+UBSan and TSan passes, and each
# fuzz target for a bounded time. Works on a fresh clone of a fresh Debian 12
# machine; about 30 minutes on 2 cores from scratch.
#
#   scripts/test.sh                # everything
#   STUBKIT_FAST=1 scripts/test.sh # only the CMake build and ctest
#   BUILD_DIR=/tmp/b scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/install-etcd.sh  # tests/etcd's real server (+80 s once, ~20 s of tests)

build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
cmake -S . -B "${build_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTUBKIT_BUILD_TESTS=ON -DSTUBKIT_BUILD_BENCHMARKS=ON \
  -DSTUBKIT_BUILD_EXAMPLES=ON >/dev/null
cmake --build "${build_dir}" -j "${jobs}"

if [[ -z "${STUBKIT_FAST:-}" ]]; then
  echo "== Bazel build and tests"
  scripts/bazel-test.sh
  echo "== installed package and consumer project"
  BUILD_DIR="${build_dir}" scripts/consumer-test.sh
  echo "== sanitizers"
  scripts/sanitize.sh
  echo "== fuzzing"
  FUZZ_SECONDS="${FUZZ_SECONDS:-20}" scripts/fuzz.sh
fi
echo "== ctest"
# --no-tests=error: a build that registered no tests must not pass.
ctest --test-dir "${build_dir}" --output-on-failure --no-tests=error \
  -j "${jobs}" --timeout 300
