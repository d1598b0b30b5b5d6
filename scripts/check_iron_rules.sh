#!/usr/bin/env bash
# Checks frame's iron rules that a grep can decide. Usage: scripts/check_iron_rules.sh [ROOT]
#  ARCH-043: enum class OpTrait has exactly {kElementwise, kFusable, kHasSideEffect, kCommutative}.
#  ARCH-042: no runtime dtype/device branch inside kernel sources (src/backends/*/kernels/);
#            dtype is expanded once with dispatch_dtype.
#  ARCH-001: layer includes point downward only (core < ir < ops < backends < passes < runtime
#  < onnx < serve).
set -u
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
fail=0
err() { echo "iron-rules: $*" >&2; fail=1; }

# ARCH-043
hdr="$root/include/frame/ops/op_schema.h"
if [ ! -f "$hdr" ]; then
  err "ARCH-043: $hdr not found"
else
  members=$(awk '/enum class OpTrait/{f=1;next} f&&/};/{f=0} f' "$hdr" \
    | sed 's,//.*,,' | tr -d ' \t' | tr ',' '\n' | sed '/^$/d' | sort | tr '\n' ' ')
  expected=$(printf '%s\n' kElementwise kFusable kHasSideEffect kCommutative | sort | tr '\n' ' ')
  if [ "$members" != "$expected" ]; then
    err "ARCH-043: OpTrait members are '$members', expected exactly '$expected'"
  fi
fi

# ARCH-042
if compgen -G "$root/src/backends/*/kernels" >/dev/null; then
  hits=$(grep -rnE \
    'switch *\([^)]*(dtype|device)|(==|!=) *DTypeCode::|DTypeCode::k[A-Za-z0-9]+ *(==|!=)|if *\([^)]*\b(dtype|device)\(\) *(==|!=)' \
    "$root"/src/backends/*/kernels/ 2>/dev/null | grep -v 'iron-rules: allow' || true)
  if [ -n "$hits" ]; then
    err "ARCH-042: runtime dtype/device branch in kernel code (use dispatch_dtype):"
    echo "$hits" >&2
  fi
fi

# ARCH-001 layering: a lower layer must not include a higher one.
check_layer() {  # dir forbidden-regex
  local dir="$1" pat="$2"
  [ -d "$root/$dir" ] || return 0
  local hits
  hits=$(grep -rnE "#include *\"frame/($pat)/" "$root/$dir" 2>/dev/null || true)
  if [ -n "$hits" ]; then
    err "ARCH-001: $dir includes a higher layer:"
    echo "$hits" >&2
  fi
}
check_layer src/core 'ir|ops|passes|runtime|onnx|serve'
check_layer include/frame/core 'ir|ops|passes|runtime|onnx|serve'
check_layer src/ir 'ops|passes|runtime|onnx|serve'
check_layer include/frame/ir 'ops|passes|runtime|onnx|serve'
check_layer src/ops 'passes|runtime|onnx|serve'
check_layer include/frame/ops 'passes|runtime|onnx|serve'
check_layer src/backends 'passes|runtime|onnx|serve'
check_layer src/passes 'runtime|onnx|serve'
check_layer include/frame/passes 'runtime|onnx|serve'
check_layer src/runtime 'onnx|serve'
check_layer include/frame/runtime 'onnx|serve'
check_layer src/onnx 'serve'
check_layer include/frame/onnx 'serve'

if [ "$fail" -eq 0 ]; then echo "iron-rules: OK (ARCH-001, ARCH-042, ARCH-043)"; fi
exit "$fail"
