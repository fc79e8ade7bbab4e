#!/usr/bin/env bash
# The runtime's floors (issue 41, item 1; ARCHITECTURE.md, "Floors"): no
# file includes a header of a higher floor. Every file of the runtime
# (include/stubkit/, src/ but the plugin in src/generator/) is on a floor by
# its folder; a file on no floor fails too, so a new folder has to be placed.
# And ARCHITECTURE.md's map lists each internal header under its floor.
#
#   0 base      internal/base/: utilities with no stubkit concept
#   1 api       include/stubkit/*.h and src/*.cc; internal/api/: what they
#               need and users do not touch
#   2 engine    internal/engine/: decide, wait, report, drive
#   3 entry     where a call enters the engine: retry_loop.h,
#               async_retry_loop.h, the umbrella stubkit.h; internal/entry/:
#               what generated code calls
#   4 explainer explain.h, src/explain*, src/explain_tool/ (stubkit::explain)
#
#   tests/scripts/floors_test.sh <source dir>
set -euo pipefail
cd "$1"

# API sources that define or call a piece of a higher floor, each with why.
# Keep it short: prefer moving the piece to the floor that uses it.
allowed=(
  # CreateChannel marks the channels it made, for a connection's wait.
  "src/channel.cc stubkit/internal/engine/connection_channel.h"
  # Defines the non-template pieces of AwaitM's poller (WithOperationName,
  # the poller's errors), declared beside the templates.
  "src/long_running_operation.cc stubkit/internal/entry/operation_poller.h"
)

names=(base api engine entry explainer)

# The floor (0-4) of a runtime file, by its path; empty when on none.
floor_of() {
  case "$1" in
    include/stubkit/internal/base/* | src/internal/base/*) echo 0 ;;
    include/stubkit/internal/api/* | src/internal/api/*) echo 1 ;;
    include/stubkit/internal/engine/* | src/internal/engine/*) echo 2 ;;
    include/stubkit/internal/entry/*) echo 3 ;;
    include/stubkit/internal/* | src/internal/*) ;;
    include/stubkit/retry_loop.h | include/stubkit/async_retry_loop.h) echo 3 ;;
    include/stubkit/stubkit.h) echo 3 ;;
    include/stubkit/explain.h | src/explain*) echo 4 ;;
    include/stubkit/*/* | src/*/*) ;;
    include/stubkit/*.h | src/*.cc) echo 1 ;;
  esac
}

status=0
files="$(find include/stubkit src -type f \( -name '*.h' -o -name '*.cc' \) \
           -not -path 'src/generator/*' | sort)"
for file in ${files}; do
  floor="$(floor_of "${file}")"
  if [[ -z "${floor}" ]]; then
    echo "FAIL: ${file} is on no floor (see tests/scripts/floors_test.sh)" >&2
    status=1
    continue
  fi
  includes="$(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"((stubkit|src)\/[^"]+)".*/\1/p' \
                "${file}")"
  for include in ${includes}; do
    case "${include}" in
      stubkit/*) target="include/${include}" ;;
      *) target="${include}" ;;
    esac
    to="$(floor_of "${target}")"
    if [[ -z "${to}" ]]; then
      echo "FAIL: ${file} includes ${include}, which is on no floor" >&2
      status=1
    elif (( to > floor )); then
      for entry in "${allowed[@]}"; do
        [[ "${entry}" == "${file} ${include}" ]] && continue 2
      done
      echo "FAIL: ${file} (${names[floor]}) includes ${include}" \
           "(${names[to]}), a higher floor" >&2
      status=1
    fi
  done
done

# ARCHITECTURE.md's map draws the folders: each internal header is a row of
# its floor's part of the map ("├─ engine: internal/engine/ ..."), and each
# row there is a header of that folder.
mapped="$(python3 - <<'EOF' | sort -u
import re
floor = None
for line in open("ARCHITECTURE.md", encoding="utf-8"):
    if re.match(r" [├┌└]─", line):
        m = re.match(r" [├┌]─ (base|api|engine|entry): internal/", line)
        floor = m.group(1) if m else None
    elif floor:
        m = re.match(r" │ ([a-z_]+\.h) ", line)
        if m:
            print(floor + "/" + m.group(1))
EOF
)"
on_disk="$( (cd include/stubkit/internal && ls -- */*.h
             cd ../../../src/internal && ls -- */*.h) | sort -u)"
while read -r header; do
  [[ -n "${header}" ]] || continue
  echo "FAIL: ${header} is in internal/ but not in ARCHITECTURE.md's map" \
       "under its floor" >&2
  status=1
done < <(comm -23 <(echo "${on_disk}") <(echo "${mapped}"))
while read -r header; do
  [[ -n "${header}" ]] || continue
  echo "FAIL: ARCHITECTURE.md's map lists ${header}, which is not there" >&2
  status=1
done < <(comm -13 <(echo "${on_disk}") <(echo "${mapped}"))
exit "${status}"
