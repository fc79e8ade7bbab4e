#!/usr/bin/env bash
# Runs protoc-gen-stubkit over every service proto of a googleapis checkout,
# then compiles the generated code of a sample of them with each compiler.
# Not part of CI or scripts/test.sh: it takes minutes.
#
#   scripts/googleapis-check.sh --googleapis DIR --plugin PATH [--out DIR]
#       [--sample N] [--compilers "g++ clang++-14"] [--clang-format PATH]
#       [--jobs N]
#
# 1. Generation. Every .proto under DIR with a line `service Name` (a grep
#    only selects the candidates) is first parsed alone (protoc
#    --descriptor_set_out=/dev/null): a proto protoc cannot parse, e.g. for an
#    import that is not in googleapis, is a parse failure, not the plugin's.
#    Each proto that parses then goes through one protoc of its own,
#    `protoc -I DIR -I PROTOBUF_INCLUDE --stubkit_out=OUT/gen`, so that a
#    failure names its file (batching per directory would save little: protoc
#    takes ~0.1 s per file). --jobs protocs run at once (xargs -P).
#    A plugin failure is a proto that parses but whose --stubkit_out fails
#    (or that generates no .stubkit.h); each is printed with protoc's error.
# 2. Sample compile. N of the protos that generated (default 8): a fixed list
#    covering long-running operations, pagination and google.api.routing
#    (pubsub, bigtable, speech, spanner database admin, tasks), then protos at
#    even steps through the sorted list; a kind still missing gets the first
#    proto that has it. The .pb.h and .grpc.pb.h of each and of its transitive
#    googleapis imports (protoc --dependency_out) are made with
#    grpc_cpp_plugin in OUT/sample/pb; google/protobuf/*.proto are the
#    installed ones (PROTOBUF_INCLUDE). Then, for each compiler, C++17,
#    -fsyntax-only: the .stubkit.cc of step 1, and a TU that includes its
#    .stubkit_mock.h. The generated .pb.h are -isystem, so the warnings
#    counted are those of stubkit's code (-Wall -Wextra
#    -Wno-deprecated-declarations).
# 3. With --clang-format PATH: `PATH --dry-run --style=file:.clang-format` of
#    this repository over the sample's generated files; the violations are
#    counted, they do not fail the run.
#
# Options:
#   --googleapis DIR    the googleapis checkout (a directory with google/...)
#   --plugin PATH       protoc-gen-stubkit, e.g. build/src/generator/protoc-gen-stubkit
#   --out DIR           where everything is written (default: a new
#                       ${TMPDIR:-/tmp}/googleapis-check.XXXXXX, kept). An
#                       existing DIR must be empty or an earlier run's output,
#                       which is deleted first.
#   --sample N          how many protos to compile (default 8; 0: none)
#   --compilers "A B"   compilers for step 2 (default "g++ clang++")
#   --clang-format PATH run step 3 with this clang-format
#   --jobs N            parallel protoc/compiler processes (default: nproc)
# Environment: PROTOC (default protoc), GRPC_CPP_PLUGIN (default: the one on
# PATH), PROTOBUF_INCLUDE (default /usr/include), STUBKIT_INCLUDE (default
# this repository's include/).
#
# Exit status: 0 everything generated and the sample compiled; 1 the plugin
# failed on at least one proto that parses; 4 a sample compile failed (or
# the .pb.h generation it needs); 5 both; 2 usage error; 3 setup error (a
# tool or directory missing, no service proto found, nothing generated).
# Parse failures and clang-format violations are reported, never fatal.
set -euo pipefail

self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
root="$(cd "$(dirname "$0")/.." && pwd)"
protoc="${PROTOC:-protoc}"
protobuf_include="${PROTOBUF_INCLUDE:-/usr/include}"
stubkit_include="${STUBKIT_INCLUDE:-${root}/include}"

# A `protoc` with a time limit, in case the plugin hangs.
run_protoc() {
  if command -v timeout >/dev/null; then
    timeout 300 "${protoc}" "$@"
  else
    "${protoc}" "$@"
  fi
}

# ---- internal worker modes (run through xargs) ------------------------------

# __generate GOOGLEAPIS PLUGIN OUT PROTO...: step 1 for each PROTO (relative
# to GOOGLEAPIS); prints "OK|PARSE|PLUGIN|NOOUT proto" per proto.
if [[ "${1:-}" == "__generate" ]]; then
  ga="$2" plugin="$3" out="$4"
  shift 4
  for rel in "$@"; do
    key="${rel//\//__}"
    if ! run_protoc -I "${ga}" -I "${protobuf_include}" \
        --descriptor_set_out=/dev/null "${ga}/${rel}" \
        >"${out}/logs/${key}.parse" 2>&1; then
      echo "PARSE ${rel}"
      continue
    fi
    rm -f "${out}/logs/${key}.parse"
    rc=0
    run_protoc -I "${ga}" -I "${protobuf_include}" \
      --plugin=protoc-gen-stubkit="${plugin}" --stubkit_out="${out}/gen" \
      "${ga}/${rel}" >"${out}/logs/${key}.plugin" 2>&1 || rc=$?
    if ((rc != 0)); then
      ((rc == 124)) && echo "(timed out after 300 s)" >>"${out}/logs/${key}.plugin"
      echo "PLUGIN ${rel}"
    elif [[ ! -f "${out}/gen/${rel%.proto}.stubkit.h" ]]; then
      echo "NOOUT ${rel}"
    else
      [[ -s "${out}/logs/${key}.plugin" ]] || rm -f "${out}/logs/${key}.plugin"
      echo "OK ${rel}"
    fi
  done
  exit 0
fi

# __compile OUT FLAGS JOB...: a JOB is "compiler|proto|cc" or
# "compiler|proto|mock"; prints "OK|FAIL compiler proto kind warnings".
if [[ "${1:-}" == "__compile" ]]; then
  out="$2" flags="$3"
  shift 3
  for job in "$@"; do
    IFS='|' read -r cxx rel kind <<<"${job}"
    stem="${rel%.proto}"
    key="${cxx//\//_}__${rel//\//__}.${kind}"
    if [[ "${kind}" == cc ]]; then
      src="${out}/gen/${stem}.stubkit.cc"
    else
      src="${out}/sample/tu/${rel//\//__}.mock.cc"
    fi
    log="${out}/sample/logs/${key}.log"
    # shellcheck disable=SC2086  # flags are words
    if "${cxx}" ${flags} -isystem "${out}/sample/pb" -I "${out}/gen" \
        -I "${stubkit_include}" "${src}" >"${log}" 2>&1; then
      status=OK
    else
      status=FAIL
    fi
    warnings=$(grep -c "warning:" "${log}" || true)
    echo "${status} ${cxx} ${rel} ${kind} ${warnings}"
  done
  exit 0
fi

# ---- options ----------------------------------------------------------------

usage() {
  sed -n '2,/^set -euo/p' "${self}" | sed '$d' | sed 's/^# \{0,1\}//'
}
die() { echo "googleapis-check: $*" >&2; exit 3; }
usage_error() {
  echo "googleapis-check: $*" >&2
  echo "Run with --help for the options." >&2
  exit 2
}

googleapis="" plugin="" out="" sample=8 compilers="g++ clang++"
clang_format="" jobs="$(nproc 2>/dev/null || echo 2)"
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --googleapis|--plugin|--out|--sample|--compilers|--clang-format|--jobs)
      (($# >= 2)) || usage_error "$1 needs a value"
      case "$1" in
        --googleapis) googleapis="$2" ;;
        --plugin) plugin="$2" ;;
        --out) out="$2" ;;
        --sample) sample="$2" ;;
        --compilers) compilers="$2" ;;
        --clang-format) clang_format="$2" ;;
        --jobs) jobs="$2" ;;
      esac
      shift 2 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ -n "${googleapis}" ]] || usage_error "--googleapis DIR is required"
[[ -n "${plugin}" ]] || usage_error "--plugin PATH is required"
[[ "${sample}" =~ ^[0-9]+$ ]] || usage_error "--sample must be a number"
[[ "${jobs}" =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs must be a positive number"

[[ -d "${googleapis}/google" ]] ||
  die "${googleapis} is not a googleapis checkout (no google/ in it)"
googleapis="$(cd "${googleapis}" && pwd)"
[[ -x "${plugin}" && -f "${plugin}" ]] || die "plugin ${plugin} is not an executable file"
plugin="$(cd "$(dirname "${plugin}")" && pwd)/$(basename "${plugin}")"
command -v "${protoc}" >/dev/null || die "${protoc} not found (PROTOC)"
[[ -f "${protobuf_include}/google/protobuf/descriptor.proto" ]] ||
  die "no google/protobuf/descriptor.proto in ${protobuf_include} (PROTOBUF_INCLUDE)"
if ((sample > 0)); then
  grpc_plugin="${GRPC_CPP_PLUGIN:-$(command -v grpc_cpp_plugin || true)}"
  [[ -n "${grpc_plugin}" && -x "${grpc_plugin}" ]] ||
    die "grpc_cpp_plugin not found (GRPC_CPP_PLUGIN); needed by --sample"
  [[ -d "${stubkit_include}/stubkit" ]] ||
    die "no stubkit headers in ${stubkit_include} (STUBKIT_INCLUDE)"
  read -r -a compiler_list <<<"${compilers}"
  ((${#compiler_list[@]})) || usage_error "--compilers is empty"
  for cxx in "${compiler_list[@]}"; do
    command -v "${cxx}" >/dev/null || die "compiler ${cxx} not found"
  done
fi
if [[ -n "${clang_format}" ]]; then
  command -v "${clang_format}" >/dev/null || die "clang-format ${clang_format} not found"
fi

marker=".googleapis-check"
if [[ -z "${out}" ]]; then
  out="$(mktemp -d "${TMPDIR:-/tmp}/googleapis-check.XXXXXX")"
elif [[ -e "${out}" ]]; then
  [[ -d "${out}" ]] || die "--out ${out} is not a directory"
  if [[ -n "$(ls -A "${out}")" ]]; then
    [[ -f "${out}/${marker}" ]] ||
      die "--out ${out} is not empty and not an earlier run's output; not deleting it"
    find "${out:?}" -mindepth 1 -delete
  fi
fi
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
touch "${out}/${marker}"
mkdir -p "${out}/gen" "${out}/logs"

started=${SECONDS}
elapsed() { local s=$((SECONDS - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
echo "googleapis-check: googleapis ${googleapis}, plugin ${plugin}, output ${out}"

# ---- 1. generation ----------------------------------------------------------

(cd "${googleapis}" &&
  grep -rlE --include='*.proto' '^[[:space:]]*service[[:space:]]+[A-Za-z_][A-Za-z0-9_]*' . |
  sed 's|^\./||' | LC_ALL=C sort) >"${out}/protos.txt"
tried=$(wc -l <"${out}/protos.txt")
((tried > 0)) || die "no .proto declaring a service under ${googleapis}"
echo "step 1: ${tried} service protos, ${jobs} protoc at a time..."

gen_started=${SECONDS}
tr '\n' '\0' <"${out}/protos.txt" |
  xargs -0 -n 16 -P "${jobs}" "${self}" __generate "${googleapis}" "${plugin}" "${out}" \
  >"${out}/status.txt"
gen_time=$(elapsed "${gen_started}")
LC_ALL=C sort -k2 -o "${out}/status.txt" "${out}/status.txt"

count_status() { grep -c "^$1 " "${out}/status.txt" || true; }
ok=$(count_status OK)
parse_failures=$(count_status PARSE)
plugin_failures=$(count_status PLUGIN)
no_output=$(count_status NOOUT)
((ok + parse_failures + plugin_failures + no_output == tried)) ||
  die "internal: $((ok + parse_failures + plugin_failures + no_output)) results for ${tried} protos"

# Sums the lines of the files under OUT/gen whose names end with $1.
lines_of() {
  find "${out}/gen" -type f -name "*$1" -print0 | xargs -0 -r cat | wc -l
}
files_of() { find "${out}/gen" -type f -name "*$1" | wc -l; }
files_h=$(files_of .stubkit.h)
files_mock=$(files_of .stubkit_mock.h)
files_cc=$(files_of .stubkit.cc)
files_all=$(find "${out}/gen" -type f | wc -l)
lines_h=$(lines_of .stubkit.h)
lines_mock=$(lines_of .stubkit_mock.h)
lines_cc=$(lines_of .stubkit.cc)

if ((parse_failures > 0)); then
  echo
  echo "protoc cannot parse ${parse_failures} of them (not the plugin's fault):"
  grep '^PARSE ' "${out}/status.txt" | while read -r _ rel; do
    echo "  ${rel}: $(grep -v -m 1 'warning:' "${out}/logs/${rel//\//__}.parse" || true)"
  done
fi
if ((plugin_failures + no_output > 0)); then
  echo
  echo "PLUGIN FAILURES (${plugin_failures} failed, ${no_output} generated no .stubkit.h):"
  grep -E '^(PLUGIN|NOOUT) ' "${out}/status.txt" | while read -r kind rel; do
    echo "  ${rel}:"
    if [[ "${kind}" == NOOUT ]]; then
      echo "    protoc succeeded but wrote no ${rel%.proto}.stubkit.h"
    else
      sed 's/^/    /' "${out}/logs/${rel//\//__}.plugin"
    fi
  done
fi
((files_all > 0)) || die "the plugin generated nothing; see ${out}/logs"

# ---- 2. sample compile ------------------------------------------------------

compile_failures=0 sample_list=()
declare -A compile_ok compile_total compile_warnings
if ((sample > 0)); then
  sample_started=${SECONDS}
  grep '^OK ' "${out}/status.txt" | cut -d' ' -f2 >"${out}/generated.txt"
  mapfile -t generated <"${out}/generated.txt"
  declare -A picked=()
  pick() { [[ -z "${picked[$1]:-}" ]] && { picked[$1]=1; sample_list+=("$1"); }; true; }
  is_generated() { grep -qxF "$1" "${out}/generated.txt"; }
  for rel in google/pubsub/v1/pubsub.proto \
      google/bigtable/v2/bigtable.proto \
      google/cloud/speech/v1/cloud_speech.proto \
      google/spanner/admin/database/v1/spanner_database_admin.proto \
      google/cloud/tasks/v2/cloudtasks.proto; do
    ((${#sample_list[@]} < sample)) || break
    is_generated "${rel}" && pick "${rel}"
  done
  # The rest at even steps through the sorted list.
  remaining=$((sample - ${#sample_list[@]}))
  if ((remaining > 0 && ${#generated[@]} > 0)); then
    for ((i = 0; i < remaining; i++)); do
      idx=$(((2 * i + 1) * ${#generated[@]} / (2 * remaining)))
      # Step past protos already picked.
      while [[ -n "${picked[${generated[idx]}]:-}" ]] && ((idx + 1 < ${#generated[@]})); do
        idx=$((idx + 1))
      done
      pick "${generated[idx]}"
    done
  fi
  has_lro() { grep -q 'import "google/longrunning/operations.proto"' "${googleapis}/$1"; }
  has_paging() { grep -q 'rpc List' "${googleapis}/$1" && grep -q 'page_token' "${googleapis}/$1"; }
  has_routing() { grep -q 'google.api.routing' "${googleapis}/$1"; }
  for kind in lro paging routing; do
    covered=""
    for rel in "${sample_list[@]}"; do has_"${kind}" "${rel}" && covered=1 && break; done
    if [[ -z "${covered}" ]]; then
      for rel in "${generated[@]}"; do
        if has_"${kind}" "${rel}"; then pick "${rel}"; break; fi
      done
    fi
  done
  # LRO headers include google/longrunning/operations.stubkit.h.
  lro_needed=""
  for rel in "${sample_list[@]}"; do has_lro "${rel}" && lro_needed=1; done
  if [[ -n "${lro_needed}" ]] && ! is_generated google/longrunning/operations.proto; then
    echo "googleapis-check: google/longrunning/operations.proto did not generate;" \
      "the LRO samples will not compile" >&2
  fi

  echo
  echo "step 2: compiling ${#sample_list[@]} samples with ${compilers}:"
  mkdir -p "${out}/sample/pb" "${out}/sample/tu" "${out}/sample/logs"
  jobs_file="${out}/sample/jobs.txt"
  : >"${jobs_file}"
  prep_failed=()
  for rel in "${sample_list[@]}"; do
    tags=""
    has_lro "${rel}" && tags+=" LRO"
    has_paging "${rel}" && tags+=" paging"
    has_routing "${rel}" && tags+=" routing"
    echo "  ${rel}${tags:+ (${tags# })}"
    key="${rel//\//__}"
    # The proto and its transitive googleapis imports; google/protobuf/*
    # come with the installed protobuf.
    deps=()
    if run_protoc -I "${googleapis}" -I "${protobuf_include}" \
        --dependency_out="${out}/sample/logs/${key}.d" \
        --descriptor_set_out="${out}/sample/logs/${key}.pb" "${googleapis}/${rel}" \
        >"${out}/sample/logs/${key}.prep" 2>&1; then
      # The .d file: "target: dep\ dep\ ..." with disk paths.
      while read -r dep; do
        [[ "${dep}" == "${googleapis}/"* ]] && deps+=("${dep}")
      done < <(sed -e 's/^[^:]*://' -e 's/\\$//' "${out}/sample/logs/${key}.d" | tr ' ' '\n' | grep -v '^$')
    fi
    if ((${#deps[@]} == 0)) || ! run_protoc -I "${googleapis}" -I "${protobuf_include}" \
        --cpp_out="${out}/sample/pb" --grpc_out="${out}/sample/pb" \
        --plugin=protoc-gen-grpc="${grpc_plugin}" "${deps[@]}" \
        >>"${out}/sample/logs/${key}.prep" 2>&1; then
      echo "    cannot make its .pb.h (see ${out}/sample/logs/${key}.prep):"
      sed 's/^/      /' "${out}/sample/logs/${key}.prep" | head -n 20
      prep_failed+=("${rel}")
      continue
    fi
    printf '#include "%s.stubkit_mock.h"\n' "${rel%.proto}" >"${out}/sample/tu/${key}.mock.cc"
    for cxx in "${compiler_list[@]}"; do
      printf '%s|%s|cc\n%s|%s|mock\n' "${cxx}" "${rel}" "${cxx}" "${rel}" >>"${jobs_file}"
    done
  done

  flags="-std=c++17 -fsyntax-only -Wall -Wextra -Wno-deprecated-declarations"
  tr '\n' '\0' <"${jobs_file}" |
    xargs -0 -r -n 1 -P "${jobs}" "${self}" __compile "${out}" "${flags}" |
    tee "${out}/sample/status.txt" |
    while read -r status cxx rel kind _; do echo "    ${status} ${cxx} ${rel} (${kind})"; done
  for cxx in "${compiler_list[@]}"; do
    # A sample whose .pb.h could not be made counts as two failed TUs.
    compile_ok[${cxx}]=0 compile_warnings[${cxx}]=0
    compile_total[${cxx}]=$((2 * ${#prep_failed[@]}))
  done
  compile_failures=$((${#prep_failed[@]} * ${#compiler_list[@]} * 2))
  while read -r status cxx rel kind warnings; do
    compile_total[${cxx}]=$((compile_total[${cxx}] + 1))
    compile_warnings[${cxx}]=$((compile_warnings[${cxx}] + warnings))
    if [[ "${status}" == OK ]]; then
      compile_ok[${cxx}]=$((compile_ok[${cxx}] + 1))
    else
      compile_failures=$((compile_failures + 1))
      log="${out}/sample/logs/${cxx//\//_}__${rel//\//__}.${kind}.log"
      echo
      echo "COMPILE FAILURE: ${cxx}, ${rel} (${kind}); first errors (all in ${log}):"
      grep -m 10 'error' "${log}" | sed 's/^/    /' || true
    fi
    if ((warnings > 0)); then
      echo "  ${cxx}, ${rel} (${kind}): ${warnings} warnings (${out}/sample/logs/)"
    fi
  done < <(LC_ALL=C sort -k2,2 -k3,3 -k4,4 "${out}/sample/status.txt")
  sample_time=$(elapsed "${sample_started}")
fi

# ---- 3. clang-format --------------------------------------------------------

format_violations="" format_files=0 format_dirty=0
if [[ -n "${clang_format}" && ${#sample_list[@]} -gt 0 ]]; then
  format_violations=0
  echo
  echo "step 3: ${clang_format} --dry-run over the sample's generated files:"
  for rel in "${sample_list[@]}"; do
    for suffix in .stubkit.h .stubkit.cc .stubkit_mock.h; do
      file="${out}/gen/${rel%.proto}${suffix}"
      [[ -f "${file}" ]] || continue
      count=$("${clang_format}" --dry-run --style="file:${root}/.clang-format" \
        "${file}" 2>&1 | grep -c "warning:" || true)
      format_files=$((format_files + 1))
      format_violations=$((format_violations + count))
      if ((count > 0)); then
        format_dirty=$((format_dirty + 1))
        echo "  ${count} ${rel%.proto}${suffix}"
      fi
    done
  done
  ((format_dirty > 0)) || echo "  none"
fi

# ---- summary ----------------------------------------------------------------

row() { printf '  %-34s %s\n' "$1" "$2"; }
echo
echo "googleapis-check summary ($(elapsed "${started}") in all; output in ${out})"
row "service protos tried" "${tried}"
row "protoc parse failures (not plugin)" "${parse_failures}"
row "plugin failures" "$((plugin_failures + no_output))"
row "generated" "${ok} protos, ${files_all} files (${files_h} .stubkit.h, ${files_cc} .stubkit.cc, ${files_mock} .stubkit_mock.h)"
row "generated lines, .h" "$((lines_h + lines_mock)) (${lines_h} .stubkit.h + ${lines_mock} .stubkit_mock.h)"
row "generated lines, .cc" "${lines_cc}"
row "generation time" "${gen_time} (${jobs} jobs)"
if ((sample > 0)); then
  for cxx in "${compiler_list[@]}"; do
    row "sample compile, ${cxx}" "${compile_ok[${cxx}]}/${compile_total[${cxx}]} TUs OK (.stubkit.cc + mock TU per proto), ${compile_warnings[${cxx}]} warnings"
  done
  row "sample time" "${sample_time}"
fi
if [[ -n "${format_violations}" ]]; then
  row "clang-format (informational)" "${format_violations} violations in ${format_dirty} of ${format_files} files"
fi

status=0
((plugin_failures + no_output == 0)) || status=$((status | 1))
((compile_failures == 0)) || status=$((status | 4))
exit "${status}"
