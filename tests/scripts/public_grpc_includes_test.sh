#!/usr/bin/env bash
# The public headers (include/stubkit/*.h) include only gRPC's public
# headers: nothing under grpc/impl/ or grpcpp/impl/ (gRPC moves those
# between releases) and nothing from gRPC's sources (src/core).
#
#   tests/scripts/public_grpc_includes_test.sh <source dir>
set -euo pipefail
cd "$1/include"
if grep -nE '^\s*#\s*include\s*[<"](grpc|grpcpp)/impl/|^\s*#\s*include\s*[<"]src/core/' \
    stubkit/*.h; then
  echo "FAIL: a public header includes a non-public gRPC header (above);" \
       "include the public header that declares the name instead" >&2
  exit 1
fi
