#!/usr/bin/env bash
# Builds stubkit and runs every test: the CMake build's ctest suite (unit,
# generator, integration, reliability, fuzz-corpus replay, demo and
# benchmark smoke runs), a consumer project built against the installed
# package, the Bazel build's tests, the ASan+UBSan and TSan passes, and each
# fuzz target for a bounded time. The main build is GCC in C++17, and
# compiles the public headers and the generated code in C++17 and C++20
# (tests/compile); the fuzz targets are built with clang 14.
# (STUBKIT_ASAN_CLANG=1 scripts/sanitize.sh asan: the ASan+UBSan pass with
# clang 14 in C++20, not yet in this script.) Works on a fresh clone of a
# fresh Debian 12 machine; about 45 minutes on 2 cores from scratch.
#
#   scripts/test.sh                # everything
#   STUBKIT_FAST=1 scripts/test.sh # only the CMake build and ctest
#   BUILD_DIR=/tmp/b scripts/test.sh
#   STUBKIT_PRINT_BUILD_DIRS=1 scripts/test.sh   # print each step's build
#                                  # tree and build nothing
set -euo pipefail
cd "$(dirname "$0")/.."

# BUILD_DIR is this script's main tree only: each step below gets its tree
# explicitly, and no step inherits BUILD_DIR (fuzz.sh used to, and then
# reconfigured the main tree with clang and its sanitizer flags).
build_dir="${BUILD_DIR:-build}"
unset BUILD_DIR
jobs="${JOBS:-$(nproc)}"
# With STUBKIT_PRINT_BUILD_DIRS set, the steps below only print their trees
# (tests/scripts/build_dirs_test.sh checks them); each sub-script does the same.
dry="${STUBKIT_PRINT_BUILD_DIRS:-}"

if [[ -n "${dry}" ]]; then
  echo "main ${build_dir}"
else
  scripts/install-deps.sh
  scripts/install-etcd.sh  # tests/etcd's real server (+80 s once, ~20 s of tests)
  cmake -S . -B "${build_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTUBKIT_BUILD_TESTS=ON -DSTUBKIT_BUILD_BENCHMARKS=ON \
    -DSTUBKIT_BUILD_EXAMPLES=ON >/dev/null
  cmake --build "${build_dir}" -j "${jobs}"
fi

if [[ -z "${STUBKIT_FAST:-}" ]]; then
  if [[ -z "${dry}" ]]; then
    echo "== Bazel build and tests"
    scripts/bazel-test.sh
  fi
  echo "== installed package and consumer project"
  CONSUMER_BUILD_DIR="${build_dir}" scripts/consumer-test.sh
  echo "== sanitizers"
  scripts/sanitize.sh
  echo "== fuzzing"
  FUZZ_SECONDS="${FUZZ_SECONDS:-20}" scripts/fuzz.sh
fi
[[ -n "${dry}" ]] && exit 0
echo "== ctest"
# --no-tests=error: a build that registered no tests must not pass.
ctest --test-dir "${build_dir}" --output-on-failure --no-tests=error \
  -j "${jobs}" --timeout 300
