#!/usr/bin/env bash
# Builds stubkit and runs every test: the CMake build's ctest suite (unit,
# generator, integration, reliability, fuzz-corpus replay, demo and
# benchmark smoke runs), a consumer project built against the installed
# package, the Bazel rules, the ASan+UBSan and TSan passes, and each
# fuzz target for a bounded time. The main build is GCC in C++17 and the
# ASan+UBSan build is clang 14 in C++20, each running the whole ctest suite
# and compiling the public headers and the generated code in C++17 and
# C++20 (tests/compile); the fuzz targets are built with clang 14 too. Bazel
# builds its rules and runs a test of each kind (scripts/bazel-test.sh --ci;
# the whole Bazel suite is scripts/bazel-test.sh). Works on a fresh clone of
# a fresh Debian 12 machine; about 33 minutes on 2 cores from scratch
# (docs/performance.md, "CI time", says where they go).
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

# Each stage's start says how long the one before it took, so that a CI log
# cut off at its time limit still shows where the time went.
stage_start=${SECONDS}
stage() {
  [[ -n "${dry}" ]] && return 0
  echo "== $* (previous stage: $((SECONDS - stage_start)) s; total ${SECONDS} s)"
  stage_start=${SECONDS}
}
if [[ -z "${dry}" ]]; then
  trap 'echo "== test.sh: ended after ${SECONDS} s (last stage: $((SECONDS - stage_start)) s)"' EXIT
fi

if [[ -n "${dry}" ]]; then
  echo "main ${build_dir}"
else
  stage "dependencies, etcd, main build (GCC, C++17)"
  scripts/install-deps.sh
  scripts/install-etcd.sh  # tests/etcd's real server and protos (~10 s once)
  # The later stages' packages (Bazel, and clang 14 with its sanitizer
  # runtimes) install while the main tree compiles: apt waits on the disk
  # and the network, the build on the CPU (about 40 s of Bazel's install
  # hidden on a fresh machine). Nothing before the Bazel stage uses them.
  later_pid=""
  if [[ -z "${STUBKIT_FAST:-}" ]]; then
    later_log="$(mktemp "${TMPDIR:-/tmp}/stubkit-later-packages.XXXXXX")"
    STUBKIT_EXTRA_PACKAGES="bazel-bootstrap clang-14 libclang-rt-14-dev" \
      scripts/install-deps.sh >"${later_log}" 2>&1 &
    later_pid=$!
  fi
  # -Og -g1: a test tree compiles each test once and runs it once, so it is
  # built for compile time (tests/unit/hedging_test.cc: 21.5 CPU s at -O2 -g,
  # 8.8 at -Og -g1). A user's own build keeps CMake's -O2 -g.
  # One ctest entry per test executable (tests/CMakeLists.txt): 125 s of
  # ctest instead of 152 on 2 cores, the process start of ~900 cases saved.
  # A failing case is still named (--gtest_brief); a developer's own tree
  # keeps one entry per case unless asked.
  cmake -S . -B "${build_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" \
    -DSTUBKIT_BUILD_TESTS=ON -DSTUBKIT_BUILD_BENCHMARKS=ON \
    -DSTUBKIT_BUILD_EXAMPLES=ON -DSTUBKIT_CTEST_PER_EXECUTABLE=ON >/dev/null
  cmake --build "${build_dir}" -j "${jobs}"
  if [[ -n "${later_pid}" ]]; then
    if ! wait "${later_pid}"; then
      echo "test.sh: installing the later stages' packages failed:" >&2
      cat "${later_log}" >&2
      exit 1
    fi
    rm -f "${later_log}"
  fi
fi

if [[ -z "${STUBKIT_FAST:-}" ]]; then
  if [[ -z "${dry}" ]]; then
    stage "Bazel: the library, the plugin, its rule and a test of each kind"
    scripts/bazel-test.sh --ci
  fi
  stage "installed package and consumer project"
  CONSUMER_BUILD_DIR="${build_dir}" scripts/consumer-test.sh
  stage "sanitizers"
  scripts/sanitize.sh
  stage "fuzzing"
  # CI's bounded share: 10 s per target on top of the corpus replay in
  # ctest; scripts/fuzz.sh alone runs 30 s per target, longer on request.
  FUZZ_SECONDS="${FUZZ_SECONDS:-10}" scripts/fuzz.sh
fi
[[ -n "${dry}" ]] && exit 0
stage "ctest"
# --no-tests=error: a build that registered no tests must not pass.
ctest --test-dir "${build_dir}" --output-on-failure --no-tests=error \
  -j "${jobs}" --timeout 300
