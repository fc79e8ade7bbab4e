#!/usr/bin/env bash
# Builds stubkit and runs the demo. Works on a fresh clone of a fresh Debian 12
# machine. Extra arguments go to the demo program.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

build_dir="${BUILD_DIR:-build}"
cmake -S . -B "${build_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTUBKIT_BUILD_EXAMPLES=ON >/dev/null
cmake --build "${build_dir}" -j "$(nproc)" --target stubkit_demo
exec "${build_dir}/examples/stubkit_demo" "$@"
