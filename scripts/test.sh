#!/usr/bin/env bash
# Builds stubkit and runs every test: the CMake build's ctest suite (unit,
# generator, integration, demo and benchmark smoke runs), a consumer project
# built against the installed package, and the Bazel build's tests. Works on
# a fresh clone of a fresh Debian 12 machine.
#
#   scripts/test.sh                # build in ./build and run all tests
#   BUILD_DIR=/tmp/b scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
cmake -S . -B "${build_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTUBKIT_BUILD_TESTS=ON -DSTUBKIT_BUILD_BENCHMARKS=ON \
  -DSTUBKIT_BUILD_EXAMPLES=ON >/dev/null
cmake --build "${build_dir}" -j "${jobs}"

echo "== Bazel build and tests"
scripts/bazel-test.sh
echo "== installed package and consumer project"
BUILD_DIR="${build_dir}" scripts/consumer-test.sh
echo "== ctest"
ctest --test-dir "${build_dir}" --output-on-failure -j "${jobs}" --timeout 300
