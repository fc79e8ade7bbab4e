#!/usr/bin/env bash
# Headers say what, docs say why (issue 41, item 5): each public header's
# overview (the `//` block right after its first line) is at most 30 lines
# and points to the docs/ page that holds the rest.
#
#   tests/scripts/header_overview_test.sh <source dir>
set -euo pipefail
cd "$1"
max=30
status=0
for header in include/stubkit/*.h; do
  overview="$(awk 'NR==1{next} /^\/\//{print; next} {exit}' "${header}")"
  lines="$(printf '%s' "${overview}" | grep -c '' || true)"
  if (( lines > max )); then
    echo "FAIL: ${header}: overview is ${lines} lines (at most ${max});" \
         "move the rest to its docs/ page" >&2
    status=1
  fi
  pages="$(grep -o 'docs/[a-z0-9_-]*\.md' <<<"${overview}" | sort -u || true)"
  if [[ -z "${pages}" ]]; then
    echo "FAIL: ${header}: overview names no docs/*.md page" >&2
    status=1
  fi
  for page in ${pages}; do
    if [[ ! -f "${page}" ]]; then
      echo "FAIL: ${header}: overview names ${page}, which does not exist" >&2
      status=1
    fi
  done
done
exit "${status}"
