#!/usr/bin/env bash
# Regenerates the generator's golden files (tests/generator/golden/) from the
# current protoc-gen-stubkit. Review the diff before committing it.
#
#   scripts/regen-golden.sh [build-dir]     # default: build
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-${root}/build}"
# Absolute: the script changes directory before it runs the plugin.
build="$(cd "${build}" && pwd)"
cmake --build "${build}" --target protoc-gen-stubkit -j2
plugin="${build}/src/generator/protoc-gen-stubkit"
out="${root}/tests/generator/golden"

# Keep this list and the flags in sync with tests/generator/golden_test.cc.
rm -rf "${out}"
mkdir -p "${out}"
cd "${root}/protos"
protoc -Istubkit/testing/gen/third_party -Ithird_party/googleapis -I. \
  --plugin=protoc-gen-stubkit="${plugin}" --stubkit_out="${out}" \
  stubkit/testing/streams.proto \
  stubkit/testing/gen/googleapi.proto \
  stubkit/testing/gen/lro.proto \
  stubkit/testing/gen/no_package.proto \
  stubkit/testing/gen/pagination.proto \
  stubkit/testing/gen/routing.proto
echo "regenerated: $(cd "${out}" && find . -type f | sort | tr '\n' ' ')"
