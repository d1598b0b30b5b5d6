#!/usr/bin/env bash
# Proves scripts/check_iron_rules.sh catches each planted violation (and passes the clean tree).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
script="$here/scripts/check_iron_rules.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fresh() {
  rm -rf "$tmp/t"; mkdir -p "$tmp/t"
  cp -r "$here/include" "$here/src" "$tmp/t/"
  mkdir -p "$tmp/t/src/backends/cpu/kernels"
}
expect() {  # name expected-rc
  "$script" "$tmp/t" >/dev/null 2>"$tmp/err"; rc=$?
  if [ "$rc" != "$2" ]; then echo "FAIL: $1: rc=$rc, expected $2"; cat "$tmp/err"; exit 1; fi
  echo "ok: $1"
}
fresh; expect "clean tree passes" 0
fresh; sed -i 's/  kCommutative,/  kCommutative,\n  kInPlace,/' "$tmp/t/include/frame/ops/op_schema.h"
expect "ARCH-043 fifth trait" 1
fresh; sed -i '/  kFusable,/d' "$tmp/t/include/frame/ops/op_schema.h"
expect "ARCH-043 missing trait" 1
fresh; printf 'void k(){ for(;;){ switch (t.dtype()) { default: break; } } }\n' \
  > "$tmp/t/src/backends/cpu/kernels/planted.cpp"
expect "ARCH-042 switch on dtype" 1
fresh; printf 'void k(){ for(;;){ if (x.dtype() == DTypeCode::kFloat32) {} } }\n' \
  > "$tmp/t/src/backends/cpu/kernels/planted.cpp"
expect "ARCH-042 if on dtype" 1
fresh; printf '#include "frame/ops/op_registry.h"\n' > "$tmp/t/src/ir/planted.cpp"
expect "ARCH-001 ir includes ops" 1
echo "all planted violations caught"
