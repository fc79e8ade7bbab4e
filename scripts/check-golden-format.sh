#!/usr/bin/env bash
# Checks the generator's golden files (tests/generator/golden/) with
# clang-format and the repository's .clang-format: the same as
# `clang-format --dry-run -Werror` on each, counting the violations.
#
#   scripts/check-golden-format.sh [budget]    # default budget: 0
#
# Fails when there are more violations than `budget`. ctest passes 0, which
# is exactly the -Werror check. CLANG_FORMAT overrides the binary (default:
# clang-format-14, else clang-format). The golden test formats the plugin's
# output with it, so this guards goldens edited by hand or formatted by
# another version.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
budget="${1:-0}"
clang_format="${CLANG_FORMAT:-}"
if [[ -z "${clang_format}" ]]; then
  clang_format="$(command -v clang-format-14 || command -v clang-format ||
    echo clang-format)"
fi
if ! command -v "${clang_format}" >/dev/null; then
  echo "check-golden-format: ${clang_format} not found;" \
    "scripts/install-deps.sh installs it" >&2
  exit 1
fi

total=0
report=""
while IFS= read -r file; do
  # --dry-run prints one warning per change clang-format would make.
  count=$("${clang_format}" --dry-run --style="file:${root}/.clang-format" \
    "${file}" 2>&1 | grep -c "warning:" || true)
  total=$((total + count))
  report+="  ${count} ${file#"${root}"/}"$'\n'
done < <(find "${root}/tests/generator/golden" -type f | sort)

if [[ -z "${report}" ]]; then
  echo "check-golden-format: no golden files found" >&2
  exit 1
fi
if ((total > budget)); then
  echo "check-golden-format: ${total} clang-format violations in the" \
    "goldens, more than the budget of ${budget}:" >&2
  printf '%s' "${report}" >&2
  echo "See them with: clang-format --dry-run <file>" >&2
  exit 1
fi
echo "check-golden-format: ${total} violations (budget ${budget})"
if ((total < budget)); then
  echo "check-golden-format: lower the budget in" \
    "tests/generator/CMakeLists.txt to ${total}"
fi
