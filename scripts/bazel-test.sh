#!/usr/bin/env bash
# Builds stubkit with Bazel and runs every Bazel test, offline, against the
# system's gRPC, protobuf and abseil. Works on a fresh Debian 12 machine:
# installs Debian's bazel-bootstrap (Bazel 4.2.3) when it is missing.
#
#   scripts/bazel-test.sh                  # bazel test //..., then the
#                                          # consumer workspace's tests
#   scripts/bazel-test.sh //tests:all      # only these targets (or flags)
#   scripts/bazel-test.sh --ci             # what scripts/test.sh runs: the
#                                          # library, the plugin, the rule
#                                          # that generates clients, and a
#                                          # test of each kind (below), then
#                                          # the consumer workspace
#
# examples/consumer is also a Bazel workspace that uses stubkit as an
# external repository (as a user's project would); its test runs after
# stubkit's own unless targets are given.
#
# Environment:
#   JOBS                    parallel actions and tests (default 2)
#   STUBKIT_BAZEL_ROOT      Bazel's output root (default /tmp/stubkit-bazel-$UID);
#                           one output base per checkout lives under it
set -euo pipefail
cd "$(dirname "$0")/.."

STUBKIT_EXTRA_PACKAGES="bazel-bootstrap ${STUBKIT_EXTRA_PACKAGES:-}" \
  scripts/install-deps.sh

jobs="${JOBS:-2}"
output_root="${STUBKIT_BAZEL_ROOT:-/tmp/stubkit-bazel-$(id -u)}"

# --batch: no Bazel server is left running after the script.
# --symlink_prefix=/: no bazel-* links in the checkout (test logs are under
# the output root).
# The JVM warning about -Xverify is Debian's OpenJDK 17 talking to Bazel 4.2.
bazel_test() {
  bazel --batch --output_user_root="${output_root}" \
    test --jobs="${jobs}" --local_test_jobs="${jobs}" \
    --curses=no --show_progress_rate_limit=30 --symlink_prefix=/ "$@"
}

# The --ci subset. Every target of //... is built by the CMake build too and
# its test runs there (twice: GCC, and clang under ASan); what only Bazel can
# break is its own rules, so CI builds the library, the plugin and the
# generation rule, and runs one test of each kind through them. The whole
# //... stays one command away, above (about 12 minutes on 2 cores).
ci_targets=(
  //:stubkit
  //src/generator:protoc-gen-stubkit
  //tests:json_test                   # a unit test on the library
  //tests:generator_golden_test       # protoc + the plugin, from runfiles
  //tests:generated_unary_test        # a generated client, a real server
)

targets=(//...)
if [[ "${1:-}" == "--ci" ]]; then
  shift
  targets=("${ci_targets[@]}")
elif [[ $# -gt 0 ]]; then
  bazel_test "$@"
  exit
fi

status=0
echo "== bazel-test: stubkit ${targets[*]}"
bazel_test "${targets[@]}" || status=1
echo "== bazel-test: examples/consumer (stubkit as an external repository)"
(cd examples/consumer && bazel_test //...) || status=1
exit "${status}"
