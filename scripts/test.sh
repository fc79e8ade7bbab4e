#!/usr/bin/env bash
# Builds stubkit and runs every test (unit, generator, integration, benchmark
# smoke runs). Works on a fresh clone of a fresh Debian 12 machine.
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
ctest --test-dir "${build_dir}" --output-on-failure -j "${jobs}" --timeout 300
