#!/usr/bin/env bash
# The generated stubkit.pc and stubkit_explain.pc: `pkg-config --libs` and
# `--cflags` name each library and directory once (the Abseil .pc files
# require each other, and pkg-config repeats what they share once per
# requirement), and keep -lstubkit (after -lstubkit_explain, which needs it).
#
#   tests/scripts/pkg_config_test.sh <directory holding the .pc files>
set -uo pipefail
if ! command -v pkg-config >/dev/null; then
  echo "pkg_config_test: no pkg-config; skipped"
  exit 0
fi
export PKG_CONFIG_PATH="$1${PKG_CONFIG_PATH:+:${PKG_CONFIG_PATH}}"
failures=0
for package in stubkit stubkit_explain; do
  for what in --libs --cflags; do
    if ! flags="$(pkg-config "${what}" "${package}")"; then
      echo "FAIL: pkg-config ${what} ${package} failed" >&2
      failures=$((failures + 1))
      continue
    fi
    repeated="$(tr ' ' '\n' <<<"${flags}" | grep -v '^$' | sort | uniq -c |
      awk '$1 > 1 { print $2 " (" $1 " times)" }')"
    if [[ -n "${repeated}" ]]; then
      echo "FAIL: pkg-config ${what} ${package} repeats:" ${repeated} >&2
      failures=$((failures + 1))
    fi
  done
done
if ! pkg-config --libs stubkit | grep -qw -- -lstubkit; then
  echo "FAIL: pkg-config --libs stubkit lacks -lstubkit" >&2
  failures=$((failures + 1))
fi
if ! pkg-config --libs stubkit_explain |
    grep -q -- '-lstubkit_explain .*-lstubkit '; then
  echo "FAIL: pkg-config --libs stubkit_explain lacks -lstubkit_explain" \
       "before -lstubkit" >&2
  failures=$((failures + 1))
fi
if [[ "${failures}" -ne 0 ]]; then exit 1; fi
echo "pkg_config_test: each flag once ($(pkg-config --libs stubkit | wc -w) in --libs)"
