#!/usr/bin/env bash
# include/stubkit/stubkit.h includes every public header of the runtime
# (include/stubkit/*.h), except explain.h and prometheus.h (each the header
# of a library of its own: stubkit::explain, the optional
# stubkit::prometheus), the deprecated forwarding headers
# client_support.h and operation.h, and itself: a new header must join it.
#
#   tests/scripts/umbrella_test.sh <source dir>
set -euo pipefail
cd "$1/include"
missing=0
for header in stubkit/*.h; do
  case "${header}" in
    stubkit/stubkit.h | stubkit/explain.h | stubkit/prometheus.h) continue ;;
    # Deprecated forwarders (2026-11-27, removed before 1.0).
    stubkit/client_support.h | stubkit/operation.h) continue ;;
  esac
  if ! grep -q "^#include \"${header}\"" stubkit/stubkit.h; then
    echo "FAIL: stubkit/stubkit.h does not include ${header}" >&2
    missing=1
  fi
done
exit "${missing}"
