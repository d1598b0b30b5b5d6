#!/bin/sh
# Regenerates (or with --check, verifies) the op table of docs/onnx.md between the
# `<!-- onnx-op-table:begin -->` and `<!-- onnx-op-table:end -->` markers from
# `frame ops --onnx-table` (the ONNX table and the kernel registry). CTest onnx_op_table_doc
# runs --check, so the page cannot go stale.
# Usage: scripts/update_onnx_table_doc.sh [--check] [FRAME_BINARY] (default build/frame)
set -eu
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
root="$(cd "$(dirname "$0")/.." && pwd)"
frame="${1:-$root/build/frame}"
doc="$root/docs/onnx.md"
tmp="$(mktemp)"; gen="$(mktemp)"
trap 'rm -f "$tmp" "$gen"' EXIT
"$frame" ops --onnx-table > "$gen"
awk -v gen="$gen" '
  /<!-- onnx-op-table:begin -->/ { print; while ((getline line < gen) > 0) print line; skip = 1; next }
  /<!-- onnx-op-table:end -->/ { skip = 0 }
  !skip { print }' "$doc" > "$tmp"
grep -q "<!-- onnx-op-table:begin -->" "$doc" || { echo "$doc: no onnx-op-table markers" >&2; exit 1; }
if [ $check -eq 1 ]; then
  if ! cmp -s "$doc" "$tmp"; then
    echo "docs/onnx.md's op table is stale; regenerate it with scripts/update_onnx_table_doc.sh:" >&2
    diff "$doc" "$tmp" | head -20 >&2
    exit 1
  fi
  echo "docs/onnx.md op table matches frame ops --onnx-table ($(grep -c '^| ' "$gen") lines)"
else
  cp "$tmp" "$doc"
  echo "updated $doc"
fi
