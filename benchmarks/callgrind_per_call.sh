#!/usr/bin/env bash
# Turns the callgrind dumps of `success_path_benchmark --instructions N`
# into instructions per call (the median over the runs given), with each
# stubkit variant's ratio to the raw stub doing the same gRPC work.
#
#   benchmarks/callgrind_per_call.sh N RUN_DIR...
#
# Each RUN_DIR holds the callgrind.out.* files of one run.
set -euo pipefail
calls="$1"
shift
for dir in "$@"; do
  # One dump per variant, numbered in the order they ran.
  for f in $(ls -v "${dir}"/callgrind.out.*.*); do
    name="$(sed -n 's/^desc: Trigger: Client Request: //p' "${f}")"
    total="$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "${f}")"
    if [[ -n "${name}" && -n "${total}" ]]; then echo "${name} ${total}"; fi
  done
done | awk -v calls="${calls}" '
  function median(name,   k, i, j, t, v) {
    k = count[name]
    for (i = 1; i <= k; i++) v[i] = runs[name, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
      if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  {
    if (!($1 in count)) order[n++] = $1
    runs[$1, ++count[$1]] = $2 / calls
  }
  END {
    base["raw"] = "raw"; base["raw_deadline"] = "raw"; base["grpc_retries"] = "raw"
    base["stubkit_default"] = "raw_deadline"
    base["stubkit_call_options"] = "raw_deadline"
    base["stubkit_decorated"] = "raw_deadline"
    base["stubkit_no_deadline"] = "raw"
    base["stubkit_throttle"] = "raw_deadline"
    base["stubkit_budget"] = "raw_deadline"
    base["stubkit_hedge"] = "raw_deadline"
    base["stubkit_adaptive_hedge"] = "stubkit_hedge"
    base["async_raw_deadline"] = "async_raw_deadline"
    base["async_stubkit_future"] = "async_raw_deadline"
    base["async_stubkit_callback"] = "async_raw_deadline"
    base["throughput_async_raw_deadline"] = "throughput_async_raw_deadline"
    base["throughput_async_stubkit_callback"] = "throughput_async_raw_deadline"
    for (i = 0; i < n; i++) ir[order[i]] = median(order[i])
    printf "| %-30s | %11s | %-18s | %7s | %10s | %10s |\n", "variant", "instr/call", "baseline", "ratio", "added/call", "runs min-max"
    printf "| %-30s | %11s | %-18s | %7s | %10s | %10s |\n", "---", "---:", "---", "---:", "---:", "---:"
    for (i = 0; i < n; i++) {
      v = order[i]; split(v, p, "/"); b = p[1] "/" base[p[2]]
      if (!(b in ir)) continue
      lo = hi = runs[v, 1]
      for (j = 2; j <= count[v]; j++) { if (runs[v, j] < lo) lo = runs[v, j]; if (runs[v, j] > hi) hi = runs[v, j] }
      printf "| %-30s | %11.0f | %-18s | %6.3fx | %+10.0f | %.0f-%.0f |\n", v, ir[v], base[p[2]], ir[v] / ir[b], ir[v] - ir[b], lo, hi
    }
  }'
