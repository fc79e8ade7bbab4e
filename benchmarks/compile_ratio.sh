#!/usr/bin/env bash
# What a generated client costs a user's compile: the CPU time to compile a
# translation unit that includes one generated stubkit client header and
# makes one call, against the same unit written with grpc_cpp_plugin's stub
# alone, compiled in the same run with the same flags. Prints both times and
# their ratio (issue 41's target: at most 1.3). docs/performance.md records
# the figures.
#
#   benchmarks/compile_ratio.sh [BUILD_DIR]     # default: build
#   CXX=clang++-14 RUNS=9 benchmarks/compile_ratio.sh
#
# The proto is the consumer example's Greeter (one unary method). The flags
# are a user's release build: -std=c++17 -O2 -g (CMake's RelWithDebInfo).
# Each unit is compiled RUNS times (default 7), in pairs run back to back,
# and the figure is the median of the pairs' ratios of user+system CPU time:
# CPU time, not wall time, and a ratio within each pair, because this VM's
# speed drifts over minutes and it has no instruction counter to use
# instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-${root}/build}" && pwd)"
cxx="${CXX:-g++}"
runs="${RUNS:-7}"
flags=(-std=c++17 -O2 -g)

cmake --build "${build}" --target protoc-gen-stubkit >/dev/null
plugin="${build}/src/generator/protoc-gen-stubkit"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

mkdir -p "${work}/gen"
protoc -I "${root}/examples/consumer/protos" --cpp_out="${work}/gen" \
  --grpc_out="${work}/gen" --stubkit_out="${work}/gen" \
  --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" \
  --plugin=protoc-gen-stubkit="${plugin}" greeter/greeter.proto

cat >"${work}/raw.cc" <<'EOF'
#include <grpcpp/create_channel.h>

#include "greeter/greeter.grpc.pb.h"

int main() {
  auto stub = greeter::Greeter::NewStub(grpc::CreateChannel(
      "127.0.0.1:1", grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  greeter::HelloRequest request;
  greeter::HelloReply reply;
  return stub->SayHello(&context, request, &reply).ok() ? 0 : 1;
}
EOF
cat >"${work}/stubkit.cc" <<'EOF'
#include <grpcpp/create_channel.h>

#include "greeter/greeter.stubkit.h"

int main() {
  greeter::GreeterClient client(grpc::CreateChannel(
      "127.0.0.1:1", grpc::InsecureChannelCredentials()));
  greeter::HelloRequest request;
  return client.SayHello(request).ok() ? 0 : 1;
}
EOF

# shellcheck disable=SC2207
includes=(-I"${work}/gen" -I"${root}/include"
  $(pkg-config --cflags grpc++ protobuf))
cpu_seconds() {  # <source>: CPU seconds (user + system) of one compile
  local out
  out=$( { /usr/bin/time -f "%U %S" "${cxx}" "${flags[@]}" "${includes[@]}" \
      -c "$1" -o /dev/null; } 2>&1 >/dev/null) ||
    { echo "compile_ratio: ${cxx} failed on $1: ${out}" >&2; exit 1; }
  awk '{printf "%.2f\n", $(NF-1) + $NF}' <<<"$(tail -1 <<<"${out}")"
}
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

raw=() wrapped=() ratios=()
for ((i = 0; i < runs; i++)); do
  raw+=("$(cpu_seconds "${work}/raw.cc")")
  wrapped+=("$(cpu_seconds "${work}/stubkit.cc")")
  ratios+=("$(awk -v a="${wrapped[i]}" -v b="${raw[i]}" \
    'BEGIN {printf "%.3f", a / b}')")
done
echo "compiler: $("${cxx}" --version | head -1); flags: ${flags[*]}; runs: ${runs}"
echo "gRPC stub alone:          median $(printf '%s\n' "${raw[@]}" | median) CPU s (${raw[*]})"
echo "generated stubkit client: median $(printf '%s\n' "${wrapped[@]}" | median) CPU s (${wrapped[*]})"
echo "ratio: $(printf '%s\n' "${ratios[@]}" | median)x (median of the pairs: ${ratios[*]})"
