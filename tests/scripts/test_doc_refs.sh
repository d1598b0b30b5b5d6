#!/usr/bin/env bash
# scripts/check_doc_refs.sh must fail on an undefined rule ID and on a citation of a document
# outside the repository, and pass on a clean tree.
set -u
here="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs/standards" "$tmp/src"
cp "$here/docs/standards/rules.md" "$tmp/docs/standards/"
echo "// Enforces ARCH-040." > "$tmp/src/a.cpp"
"$here/scripts/check_doc_refs.sh" "$tmp" >/dev/null 2>&1 || { echo "clean tree rejected"; exit 1; }
bad_id="ARCH-""999"   # split so this file does not cite it
echo "// Enforces $bad_id." > "$tmp/src/b.cpp"
out=$("$here/scripts/check_doc_refs.sh" "$tmp" 2>&1) && { echo "undefined $bad_id accepted"; exit 1; }
echo "$out" | grep -q "$bad_id" || { echo "message does not name $bad_id: $out"; exit 1; }
rm "$tmp/src/b.cpp"
outside_doc="STY""LE.md"
echo "// See $outside_doc." > "$tmp/src/c.cpp"
out=$("$here/scripts/check_doc_refs.sh" "$tmp" 2>&1) && { echo "$outside_doc citation accepted"; exit 1; }
echo "$out" | grep -q "src/c.cpp" || { echo "message does not name the file: $out"; exit 1; }
echo "check_doc_refs catches both violations"
