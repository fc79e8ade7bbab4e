#!/usr/bin/env bash
# Turns the callgrind dumps of `success_path_benchmark --instructions N`
# into instructions per call, with each stubkit variant's ratio to the raw
# stub doing the same gRPC work.
#
#   benchmarks/callgrind_per_call.sh N callgrind.out.<pid>.*
set -euo pipefail
calls="$1"
shift
for f in "$@"; do
  name="$(sed -n 's/^desc: Trigger: Client Request: //p' "${f}")"
  total="$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "${f}")"
  [[ -n "${name}" && -n "${total}" ]] && echo "${name} ${total}"
done | awk -v calls="${calls}" '
  { ir[$1] = $2 / calls; order[n++] = $1 }
  END {
    base["raw"] = "raw"; base["raw_deadline"] = "raw"; base["grpc_retries"] = "raw"
    base["stubkit_default"] = "raw_deadline"
    base["stubkit_call_options"] = "raw_deadline"
    base["stubkit_decorated"] = "raw_deadline"
    base["async_raw_deadline"] = "async_raw_deadline"
    base["async_stubkit_callback"] = "async_raw_deadline"
    printf "| %-30s | %14s | %-20s | %8s | %12s |\n", "variant", "instr/call", "baseline", "ratio", "added/call"
    printf "| %-30s | %14s | %-20s | %8s | %12s |\n", "---", "---:", "---", "---:", "---:"
    for (i = 0; i < n; i++) {
      v = order[i]; split(v, p, "/"); b = p[1] "/" base[p[2]]
      if (!(b in ir)) continue
      printf "| %-30s | %14.0f | %-20s | %7.3fx | %+12.0f |\n", v, ir[v], base[p[2]], ir[v] / ir[b], ir[v] - ir[b]
    }
  }'
