#!/usr/bin/env bash
# Regenerates the generator's golden files (tests/generator/golden/) from the
# current protoc-gen-stubkit, then formats them with clang-format 14 and the
# repository's .clang-format, as tests/generator/golden_test.cc does: the
# generator prints plain templates, clang-format lays them out. Review the
# diff before committing it.
#
#   scripts/regen-golden.sh [build-dir]     # default: build
#
# CLANG_FORMAT overrides the binary (default: clang-format-14, else
# clang-format; scripts/install-deps.sh installs it).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
clang_format="${CLANG_FORMAT:-}"
if [[ -z "${clang_format}" ]]; then
  clang_format="$(command -v clang-format-14 || command -v clang-format || true)"
fi
if [[ -z "${clang_format}" ]] || ! command -v "${clang_format}" >/dev/null; then
  echo "regen-golden: clang-format 14 not found;" \
    "scripts/install-deps.sh installs it" >&2
  exit 1
fi
if ! "${clang_format}" --version | grep -q "version 14\."; then
  echo "regen-golden: warning: $("${clang_format}" --version) is not" \
    "clang-format 14, which the golden test expects" >&2
fi
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
cd "${out}"
while IFS= read -r file; do
  # stdin, so that --assume-filename alone picks the language (.h is C++).
  "${clang_format}" --style="file:${root}/.clang-format" \
    --assume-filename="${file}" <"${file}" >"${file}.formatted"
  mv "${file}.formatted" "${file}"
done < <(find . -type f | sort)
echo "regenerated: $(find . -type f | sort | tr '\n' ' ')"
