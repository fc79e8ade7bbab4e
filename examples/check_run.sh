#!/bin/sh
# Runs a command and checks both its exit code and its output (stdout and
# stderr together); ctest's PASS_REGULAR_EXPRESSION alone would ignore the
# exit code.
#
#   check_run.sh <expected exit code> <fixed string>... -- <command> [args...]
#
# Each fixed string must appear in the output.
expected="$1"
shift
n=0
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  n=$((n + 1))
  eval "pattern_${n}=\$1"
  shift
done
if [ "$#" -eq 0 ]; then
  echo "check_run.sh: missing -- <command>" >&2
  exit 2
fi
shift
output="$("$@" 2>&1)"
rc=$?
printf '%s\n' "${output}"
status=0
if [ "${rc}" -ne "${expected}" ]; then
  echo "check_run.sh: exit code ${rc}, expected ${expected}" >&2
  status=1
fi
i=1
while [ "${i}" -le "${n}" ]; do
  eval "pattern=\${pattern_${i}}"
  if ! printf '%s\n' "${output}" | grep -qF -- "${pattern}"; then
    echo "check_run.sh: output lacks: ${pattern}" >&2
    status=1
  fi
  i=$((i + 1))
done
exit "${status}"
