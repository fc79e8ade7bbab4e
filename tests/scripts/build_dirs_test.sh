#!/usr/bin/env bash
# scripts/test.sh's steps each build in a tree of their own: a BUILD_DIR
# given to test.sh is the main CMake build (and the consumer test's, which
# reuses it), never the fuzz or sanitizer builds, whose compilers and flags
# differ (issue 22 item 15: fuzz.sh used to reconfigure the main tree with
# clang and its sanitizer flags). It asks for every step: a STUBKIT_FAST run
# of test.sh (which runs this test too) must not hide them.
#
#   tests/scripts/build_dirs_test.sh <source dir>
set -euo pipefail
cd "$1"

fail=0
check() {  # <BUILD_DIR value or ""> <expected main tree>
  local given="$1" want="$2" out
  if [[ -n "${given}" ]]; then
    out="$(env -u STUBKIT_FAST BUILD_DIR="${given}" STUBKIT_PRINT_BUILD_DIRS=1 \
      scripts/test.sh)"
  else
    out="$(env -u BUILD_DIR -u STUBKIT_FAST STUBKIT_PRINT_BUILD_DIRS=1 \
      scripts/test.sh)"
  fi
  echo "BUILD_DIR='${given}':"
  echo "${out}" | sed 's/^/  /'
  local main consumer
  main="$(awk '$1 == "main" {print $2}' <<<"${out}")"
  consumer="$(awk '$1 == "consumer" {print $2}' <<<"${out}")"
  if [[ "${main}" != "${want}" || "${consumer}" != "${want}" ]]; then
    echo "FAIL: the main and consumer trees should be ${want}" >&2
    fail=1
  fi
  for step in asan tsan fuzz; do
    local dir
    dir="$(awk -v s="${step}" '$1 == s {print $2}' <<<"${out}")"
    if [[ -z "${dir}" ]]; then
      echo "FAIL: no ${step} tree printed" >&2
      fail=1
    elif [[ "${dir}" == "${want}" ]]; then
      echo "FAIL: the ${step} build would use the main tree ${want}" >&2
      fail=1
    fi
  done
  # No two of main/asan/tsan/fuzz share a tree.
  local dups
  dups="$(awk '$1 != "consumer" {print $2}' <<<"${out}" | sort | uniq -d)"
  if [[ -n "${dups}" ]]; then
    echo "FAIL: shared build trees: ${dups}" >&2
    fail=1
  fi
}
check "" build
check /tmp/stubkit-build-dirs-test /tmp/stubkit-build-dirs-test
exit "${fail}"
