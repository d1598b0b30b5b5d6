#!/usr/bin/env bash
# Checks that a clone is self-contained in what its code cites (docs/standards/rules.md):
#  - every rule ID cited in sources and docs (ARCH-NNN, BUILD-NNN, PY-NNN, REUSE-NNN) has a row
#    in docs/standards/rules.md;
#  - nothing cites a document that lives outside the repository (STYLE.md, DESIGN.md, the seed).
# Usage: scripts/check_doc_refs.sh [ROOT]
set -u
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
rules="$root/docs/standards/rules.md"
fail=0
dirs=()
for d in src include tools python tests docs examples benchmarks scripts README.md CMakeLists.txt; do
  [ -e "$root/$d" ] && dirs+=("$root/$d")
done
files() {
  grep -rlE "$1" "${dirs[@]}" --include='*.cpp' --include='*.h' --include='*.md' \
    --include='*.py' --include='*.pyi' --include='*.sh' --include='*.cmake' \
    --include='CMakeLists.txt' 2>/dev/null | grep -v "/scripts/check_doc_refs.sh$"
}
if [ ! -f "$rules" ]; then
  echo "doc-refs: $rules not found" >&2
  exit 1
fi
ids=$(files '\b(ARCH|BUILD|PY|REUSE)-[0-9]{3}\b' | xargs -r grep -ohE '\b(ARCH|BUILD|PY|REUSE)-[0-9]{3}\b' \
  | sort -u)
for id in $ids; do
  if ! grep -qE "^\| $id \|" "$rules"; then
    echo "doc-refs: $id is cited in $(files "\\b$id\\b" | head -3 | tr '\n' ' ')but has no row in docs/standards/rules.md" >&2
    fail=1
  fi
done
outside='STYLE\.md|DESIGN\.md|seed spec|seed chapter|\.\./shared/'
hits=$(files "$outside" | xargs -r grep -HnE "$outside" | grep -v "^$rules:" || true)
if [ -n "$hits" ]; then
  echo "doc-refs: citations of documents outside the repository (cite docs/standards/ instead):" >&2
  echo "$hits" >&2
  fail=1
fi
[ $fail -eq 0 ] && echo "doc-refs: $(echo "$ids" | wc -w) rule IDs cited, all defined; no outside citations"
exit $fail
