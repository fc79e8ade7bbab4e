#!/usr/bin/env bash
# Checks every C++ code block in README.md, docs/*.md and the header
# comments of include/stubkit/ (the rule is in docs/contributing-docs.md):
#
#   ```cpp                   compiled as it stands, as one file (-fsyntax-only,
#                            with the flags of the build: stubkit's headers and
#                            the generated code of protos/ and the test protos)
#   ```cpp fragment          not compiled: a piece of a larger program, which
#                            the text around it must say
#   <!-- snippet: path -->   the block that follows must be exactly the file
#   ```cpp                   at `path`, which the build compiles (and may run)
#
# In a header, a block is written in the comment (`// ```cpp` ... `// ````)
# and a line's leading "// " is not part of the code. Any other info string
# for C++ (c++, cc, cxx, C++) is an error, so that no block escapes the check.
#
#   scripts/check-snippets.sh <source dir> <flags file> [<compiler>]
#
# <flags file>: one compiler argument per line (the ctest test
# docs_snippets_test passes the one CMake writes). Environment: JOBS
# (default 2), SNIPPETS_KEEP=1 keeps the extracted files.
set -euo pipefail

src="$(cd "$1" && pwd)"
flags_file="$2"
compiler="${3:-${CXX:-c++}}"
jobs="${JOBS:-2}"
work="$(mktemp -d "${TMPDIR:-/tmp}/stubkit-snippets.XXXXXX")"
[[ -z "${SNIPPETS_KEEP:-}" ]] && trap 'rm -rf "${work}"' EXIT

cd "${src}"
files=(README.md docs/*.md)
while IFS= read -r header; do files+=("${header}"); done \
  < <(find include/stubkit -name '*.h' | sort)

# Extract: <work>/<n>.cc and a line "<n> <kind> <file>:<line> [<ref>]" in
# <work>/index for each block.
for file in "${files[@]}"; do
  awk -v file="${file}" -v work="${work}" '
    BEGIN { header = (file ~ /\.h$/) }
    function strip(line) {
      if (!header) return line
      if (line ~ /^\/\/ /) return substr(line, 4)
      if (line ~ /^\/\/$/) return ""
      return line
    }
    {
      line = $0
      if (header && line !~ /^\/\//) next
      text = strip(line)
      if (!inblock) {
        if (ref != "" && NR > refline && text !~ /^[ \t]*```/) {
          printf "%s_%d %s:%d dangling\n", counter, refline, file, refline >> (work "/index")
          ref = ""
        }
        if (text ~ /^<!-- snippet: [^ ]+ -->[ \t]*$/) {
          ref = text; sub(/^<!-- snippet: /, "", ref); sub(/ -->.*$/, "", ref)
          refline = NR; next
        }
        if (text ~ /^[ \t]*```/) {
          info = text; sub(/^[ \t]*```[ \t]*/, "", info); sub(/[ \t]*$/, "", info)
          if (skipping) { if (info == "") skipping = 0; ref = ""; next }
          indent = text; sub(/```.*$/, "", indent)
          n = counter "_" NR
          if (info ~ /^(c\+\+|C\+\+|cc|cxx)( |$)/) {
            printf "%s %s:%d bad-info %s\n", n, file, NR, info >> (work "/index")
            skipping = 1
          } else if (info ~ /^cpp( |$)/) {
            kind = "compile"
            if (info == "cpp fragment") kind = "fragment"
            else if (info != "cpp") kind = "bad-info " info
            if (ref != "" && refline == NR - 1) kind = "snippet " ref
            inblock = 1; start = NR; out = work "/" n ".cc"
            printf "" > out
            printf "%s %s:%d %s\n", n, file, NR, kind >> (work "/index")
          } else {
            skipping = 1
          }
          ref = ""
          next
        }
        next
      }
      if (text ~ /^[ \t]*```[ \t]*$/) { inblock = 0; close(out); next }
      # The fence'"'"'s indentation is not part of the code (list items).
      if (indent != "" && index(text, indent) == 1) text = substr(text, length(indent) + 1)
      print text >> out
    }
    END { if (inblock) printf "%s_%d %s:%d unterminated\n", counter, start, file, start >> (work "/index") }
  ' counter="$(echo "${file}" | tr -c 'A-Za-z0-9\n' '_')" "${file}"
done
touch "${work}/index"

compiled=0 fragments=0 snippets=0 failed=0
compile_list=()
while read -r n where kind ref; do
  case "${kind}" in
    fragment) fragments=$((fragments + 1)) ;;
    compile) compile_list+=("${n}|${where}") ;;
    snippet)
      snippets=$((snippets + 1))
      if [[ ! -f "${ref}" ]]; then
        echo "FAIL ${where}: snippet file ${ref} does not exist" >&2
        failed=$((failed + 1))
      elif ! diff -u "${ref}" "${work}/${n}.cc" >"${work}/${n}.diff"; then
        echo "FAIL ${where}: the block differs from ${ref} (the build compiles the file; copy it into the block):" >&2
        cat "${work}/${n}.diff" >&2
        failed=$((failed + 1))
      fi
      ;;
    *)
      echo "FAIL ${where}: ${kind} ${ref}: C++ blocks are \`\`\`cpp or \`\`\`cpp fragment, a snippet marker comes right before its block, a block ends with \`\`\`" >&2
      failed=$((failed + 1))
      ;;
  esac
done < "${work}/index"

# Compile the plain blocks, JOBS at a time.
compile_one() {  # <n>|<where>
  local n="${1%%|*}" where="${1#*|}"
  if ! "${compiler}" @"${flags_file}" -fsyntax-only -x c++ "${work}/${n}.cc" \
      >"${work}/${n}.log" 2>&1; then
    echo "FAIL ${where}: does not compile (mark it \`\`\`cpp fragment if it is one):" >&2
    sed "s|${work}/${n}.cc|${where}+|" "${work}/${n}.log" | head -30 >&2
    return 1
  fi
}
export -f compile_one
export work flags_file compiler
if [[ ${#compile_list[@]} -gt 0 ]]; then
  compiled=${#compile_list[@]}
  if ! printf '%s\n' "${compile_list[@]}" |
       xargs -P "${jobs}" -I{} bash -c 'compile_one "$@"' _ {}; then
    failed=$((failed + 1))
  fi
fi

echo "snippets: ${compiled} compiled, ${snippets} checked against their file, ${fragments} fragments"
if [[ ${failed} -gt 0 ]]; then
  echo "snippets: FAILED" >&2
  exit 1
fi
