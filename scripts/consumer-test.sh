#!/usr/bin/env bash
# Installs stubkit into a temporary prefix, then builds and runs
# examples/consumer against that install, as a user's project would: through
# find_package(stubkit CONFIG) and stubkit_add_grpc_library(). Also builds a
# program with the installed pkg-config file. Works on a fresh Debian 12
# machine.
#
#   scripts/consumer-test.sh
#
# Environment:
#   CONSUMER_BUILD_DIR   where stubkit itself is built (default build-install); an
#               existing build tree of the main build may be reused
#   JOBS        parallel jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="$(pwd)"

if [[ -n "${STUBKIT_PRINT_BUILD_DIRS:-}" ]]; then
  echo "consumer ${CONSUMER_BUILD_DIR:-build-install}"
  exit 0
fi

scripts/install-deps.sh

build_dir="${CONSUMER_BUILD_DIR:-build-install}"
jobs="${JOBS:-2}"
work="$(mktemp -d "${TMPDIR:-/tmp}/stubkit-consumer.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
prefix="${work}/prefix"

echo "== consumer-test: building stubkit in ${build_dir}"
if [[ -f "${build_dir}/CMakeCache.txt" ]]; then
  # An existing tree (maybe the main build's): keep its settings.
  cmake -S . -B "${build_dir}" >/dev/null
else
  cmake -S . -B "${build_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTUBKIT_BUILD_TESTS=OFF -DSTUBKIT_BUILD_BENCHMARKS=OFF \
    -DSTUBKIT_BUILD_EXAMPLES=OFF >/dev/null
fi
# What the install rules install (stubkit-explain: the command).
targets=(stubkit stubkit_explain stubkit-explain protoc-gen-stubkit)
# The optional Prometheus export is installed when configured, so build it.
if grep -q '^STUBKIT_WITH_PROMETHEUS:BOOL=ON' "${build_dir}/CMakeCache.txt"; then
  targets+=(stubkit_prometheus)
fi
cmake --build "${build_dir}" -j "${jobs}" --target "${targets[@]}"

echo "== consumer-test: installing into ${prefix}"
cmake --install "${build_dir}" --prefix "${prefix}" >/dev/null
for file in include/stubkit/retry_loop.h \
    include/stubkit/internal/engine/retry_loop_state.h \
    include/stubkit/internal/base/mutex.h include/stubkit/explain.h \
    bin/protoc-gen-stubkit bin/stubkit-explain \
    lib/cmake/stubkit/stubkit-config.cmake lib/pkgconfig/stubkit.pc \
    lib/pkgconfig/stubkit_explain.pc; do
  if [[ ! -e "${prefix}/${file}" ]]; then
    echo "consumer-test: ${file} was not installed" >&2
    exit 1
  fi
done

echo "== consumer-test: building examples/consumer against the install"
# Only the temporary prefix: nothing may come from the source tree.
cmake -S examples/consumer -B "${work}/consumer" \
  -DCMAKE_PREFIX_PATH="${prefix}" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if grep -rq "${source_dir}/include" "${work}/consumer/CMakeCache.txt"; then
  echo "consumer-test: the consumer build refers to the source tree" >&2
  exit 1
fi
cmake --build "${work}/consumer" -j "${jobs}"
"${work}/consumer/greeter_consumer"
echo "== consumer-test: stubkit::explain from the install"
"${work}/consumer/explain_consumer" >/dev/null
passed=4
if [[ " ${targets[*]} " == *" stubkit_prometheus "* ]]; then
  echo "== consumer-test: stubkit::prometheus from the install"
  "${work}/consumer/prometheus_consumer" >/dev/null
  passed=5
fi

# A consumer without prometheus-cpp still finds the package, for the
# runtime and the explainer (a new user's trial found it required).
echo "== consumer-test: the package without prometheus-cpp"
cmake -S examples/consumer -B "${work}/consumer-no-prometheus" \
  -DCMAKE_PREFIX_PATH="${prefix}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=TRUE >/dev/null
cmake --build "${work}/consumer-no-prometheus" -j "${jobs}" \
  --target explain_consumer >/dev/null
"${work}/consumer-no-prometheus/explain_consumer" >/dev/null
passed=$((passed + 1))

echo "== consumer-test: building a program with pkg-config"
cat >"${work}/pc_main.cc" <<'EOF'
#include "stubkit/retry_policy.h"
int main() {
  auto policy = stubkit::RetryPolicy::LimitedErrorCount(2);
  (void)policy;
  return 0;
}
EOF
# shellcheck disable=SC2046
g++ -std=c++17 "${work}/pc_main.cc" -o "${work}/pc_main" \
  $(PKG_CONFIG_PATH="${prefix}/lib/pkgconfig" pkg-config --cflags --libs stubkit)
"${work}/pc_main"
# The explainer's library, through its own file.
cat >"${work}/pc_explain.cc" <<'EOF'
#include "absl/status/status.h"
#include "stubkit/explain.h"
int main() {
  return stubkit::WhyNot(absl::UnavailableError("down")).why.empty() ? 1 : 0;
}
EOF
# shellcheck disable=SC2046
g++ -std=c++17 "${work}/pc_explain.cc" -o "${work}/pc_explain" \
  $(PKG_CONFIG_PATH="${prefix}/lib/pkgconfig" pkg-config --cflags --libs \
    stubkit_explain)
"${work}/pc_explain"
# Each library once in the installed file's flags.
tests/scripts/pkg_config_test.sh "${prefix}/lib/pkgconfig"

echo "consumer-test: ${passed} passed, 0 failed"
