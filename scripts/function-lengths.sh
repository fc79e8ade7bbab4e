#!/usr/bin/env bash
# Lists the runtime's functions longer than a limit (issue 40: none over 60).
#
#   scripts/function-lengths.sh [-n LIMIT] [--allowlist FILE] [SOURCE_DIR]
#
# Scope: the runtime, i.e. src/ without src/generator (the protoc plugin),
# and include/stubkit/ (both with their internal/ folders). src/explain_tool
# is counted too. SOURCE_DIR defaults to the repository holding this script.
#
# Prints "LENGTH FILE:LINE NAME" for every function longer than LIMIT
# (default 60) lines, longest first. LENGTH counts the whole definition, from
# its first line (template, return type) through its closing brace, as issue 40
# counted DecideAfterFailure's 135 lines. Exits 1 when any is listed.
#
# With --allowlist, FILE lists known long functions, one "PATH NAME LENGTH"
# a line ('#' starts a comment); the run fails only when a function over the
# limit is not listed or is longer than listed, or when a listed function is
# no longer over the limit (remove its line). Overloads share one line.
#
# The heuristic is crude but sufficient for Google-style code: comments,
# strings and preprocessor lines are blanked, then braces are matched. At
# namespace or class scope, a "{" whose preceding text ends in ")" (plus
# const/override/noexcept/-> T, or a constructor's initializer list) opens a
# function body; lambdas and blocks inside a body count towards that body.
# Braces in a constructor's initializer list (a_{x}) do not end the signature.
set -euo pipefail
exec python3 - "$@" "$(cd "$(dirname "$0")/.." && pwd)" <<'PYTHON'
import os
import re
import sys

args = sys.argv[1:]
default_root = args.pop()  # appended by the shell wrapper
limit, allowlist, root = 60, None, default_root
while args:
    arg = args.pop(0)
    if arg == "-n" and args:
        limit = int(args.pop(0))
    elif arg == "--allowlist" and args:
        allowlist = args.pop(0)
    elif not arg.startswith("-") and not args:
        root = arg
    else:
        sys.exit("usage: function-lengths.sh [-n LIMIT] [--allowlist FILE] "
                 "[SOURCE_DIR]")


def blank(text):
    """Comments, string/char literals and preprocessor lines become spaces
    (newlines are kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'R"([^()\\ ]{0,16})\(', text[i:i + 20])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and \
                    i + 1 < n and text[i + 1].isalnum() and \
                    re.match(r"[0-9a-fA-F]", text[i - 1]):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


FUNC_TAIL = re.compile(
    r"\)\s*((const|override|final|noexcept(\s*\([^)]*\))?|mutable|volatile|"
    r"&&?|try|[A-Z][A-Z0-9_]*\s*\([^)]*\))\s*)*(->[^{;]*)?$")
CTOR_INIT = re.compile(r"\)\s*(noexcept\s*)?:(?!:)")
SCOPE_HEAD = re.compile(r"^(template\s*<.*>\s*)?(class|struct|union)\b",
                        re.S)
ACCESS = re.compile(r"^\s*(public|private|protected)\s*:(?!:)\s*")


def function_name(head):
    before = head.split("(")[0]
    while re.search(r"<[^<>]*>", before):  # template arguments
        before = re.sub(r"<[^<>]*>", "", before)
    if "operator" in head:
        m = re.search(r"([\w:~]*operator\s*(\(\)|[^\s(]+))\s*\(", head)
        if m:
            return m.group(1)
    m = re.search(r"([\w:~]+)\s*$", before)
    return m.group(1) if m else before.strip()


def scan(path, rel):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    found = []
    # Each scope is (kind, name): ns (namespace or file), class, func (a
    # function body), block (braces inside a body, or an enum or initializer
    # at namespace or class scope) and init (braces in an initializer list).
    stack = [("ns", "")]
    head, head_pos = "", None
    line = 1
    func_start, func_name = 0, ""
    for pos, c in enumerate(text):
        if c == "\n":
            line += 1
        kind = stack[-1][0]
        if kind in ("func", "block"):
            if c == "{":
                stack.append(("block", ""))
            elif c == "}":
                if stack.pop()[0] == "func":
                    found.append((line - func_start + 1, rel, func_start,
                                  func_name))
                head, head_pos = "", None
            continue
        if kind == "init":
            if c == "{":
                stack.append(("init", ""))
            elif c == "}":
                stack.pop()
                head += "}"
            continue
        if c == "{" and head.count("(") > head.count(")"):
            # A default argument's {} or a lambda in an initializer list.
            stack.append(("init", ""))
            head += "{"
            continue
        if c == "{":
            access = ACCESS.match(head)
            h = head[access.end():] if access else head
            h_flat = re.sub(r"\s+", " ", h).strip()
            if re.match(r"^(inline )?namespace\b", h_flat) or \
                    h_flat in ("extern", ""):
                stack.append(("ns", ""))
                head, head_pos = "", None
            elif SCOPE_HEAD.match(h_flat) and not FUNC_TAIL.search(h_flat):
                bare = re.sub(r"\s*(\bfinal\b\s*)?((?<!:):(?!:).*)?$", "",
                              h_flat)
                name = re.search(r"(\w+)\s*(<.*>)?$", bare)
                stack.append(("class", name.group(1) if name else ""))
                head, head_pos = "", None
            elif FUNC_TAIL.search(h_flat) or \
                    (CTOR_INIT.search(h_flat) and h_flat.endswith(("}", ")"))):
                names = [n for k, n in stack if k == "class" and n]
                func_name = "::".join(names + [function_name(h_flat)])
                first = head_pos + (access.end() if access else 0)
                while text[first].isspace():
                    first += 1
                func_start = text.count("\n", 0, first) + 1
                stack.append(("func", func_name))
            elif CTOR_INIT.search(h_flat) and re.search(r"[\w>]$", h_flat):
                # a_{x} in a constructor's initializer list.
                stack.append(("init", ""))
                head += "{"
            else:
                # An enum, an aggregate initializer, a lambda at file scope.
                stack.append(("block", ""))
            continue
        if c == "}":
            if len(stack) > 1:
                stack.pop()
            head, head_pos = "", None
            continue
        if c == ";":
            head, head_pos = "", None
            continue
        if head_pos is None:
            if c.isspace():
                continue
            head_pos = pos
        head += c
    return found


def runtime_files(root):
    for top in ("src", "include/stubkit"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == "src/generator" or rel_dir.startswith("src/generator/"):
                dirnames[:] = []
                continue
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith((".cc", ".h")):
                    yield os.path.join(dirpath, name), \
                        os.path.join(rel_dir, name)


long_ones = []
for path, rel in runtime_files(root):
    long_ones += [f for f in scan(path, rel) if f[0] > limit]
long_ones.sort(key=lambda f: (-f[0], f[1], f[2]))
for length, rel, start, name in long_ones:
    print(f"{length} {rel}:{start} {name}")

if allowlist is None:
    sys.exit(1 if long_ones else 0)

allowed = {}
with open(allowlist) as f:
    for number, entry in enumerate(f, 1):
        entry = entry.split("#")[0].split()
        if not entry:
            continue
        if len(entry) != 3 or not entry[2].isdigit():
            sys.exit(f"{allowlist}:{number}: expected PATH NAME LENGTH")
        key = (entry[0], entry[1])
        allowed[key] = max(allowed.get(key, 0), int(entry[2]))
failed = False
seen = set()
for length, rel, start, name in long_ones:
    key = (rel, name)
    seen.add(key)
    if key not in allowed:
        print(f"FAIL: {rel}:{start} {name} has {length} lines (limit "
              f"{limit}); split it", file=sys.stderr)
        failed = True
    elif length > allowed[key]:
        print(f"FAIL: {rel}:{start} {name} grew to {length} lines (allowed "
              f"{allowed[key]}); split it", file=sys.stderr)
        failed = True
for key in sorted(set(allowed) - seen):
    print(f"FAIL: {key[0]} {key[1]} is no longer over {limit} lines; remove "
          f"it from {allowlist}", file=sys.stderr)
    failed = True
sys.exit(1 if failed else 0)
PYTHON
