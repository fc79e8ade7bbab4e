#!/usr/bin/env bash
# Fails on a broken relative link in README.md, ARCHITECTURE.md and
# docs/*.md: a missing file or directory, or a "#fragment" naming no
# heading of the target Markdown page (GitHub's anchors: lowercase, spaces
# to '-', punctuation other than '-' and '_' dropped). Absolute URLs are
# not checked (CI runs offline).
# Usage: scripts/check-doc-links.sh [repository root]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

# The anchors of one Markdown file, one per line (fenced code skipped).
anchors() {
  awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ /, ""); print }' "$1" |
    tr '[:upper:]' '[:lower:]' |
    sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}

status=0
pages=(README.md)
[[ -f ARCHITECTURE.md ]] && pages+=(ARCHITECTURE.md)
pages+=(docs/*.md)
for page in "${pages[@]}"; do
  dir="$(dirname "$page")"
  # Inline links and images outside fenced code: ](target) or ](target "title").
  while IFS= read -r target; do
    target="${target%% *}"
    case "$target" in
      http://* | https://* | mailto:*) continue ;;
    esac
    path="${target%%#*}"
    fragment=""
    [[ "$target" == *"#"* ]] && fragment="${target#*#}"
    if [[ -z "$path" ]]; then
      file="$page"
    else
      file="$dir/$path"
    fi
    if [[ ! -e "$file" ]]; then
      echo "$page: broken link '$target': no $file" >&2
      status=1
      continue
    fi
    if [[ -n "$fragment" && "$file" == *.md ]] &&
       ! anchors "$file" | grep -qxF -- "$fragment"; then
      echo "$page: broken link '$target': no heading '#$fragment' in $file" >&2
      status=1
    fi
  done < <(awk '/^```/ { code = !code; next } !code' "$page" |
             grep -o '\]([^)]*)' | sed -e 's/^](//' -e 's/)$//' || true)
done
if [[ $status -eq 0 ]]; then echo "doc links: ${#pages[@]} pages, all relative links resolve"; fi
exit $status
