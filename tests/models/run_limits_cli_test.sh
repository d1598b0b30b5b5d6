#!/bin/sh
# `frame run --max-memory` and `frame inspect --max-memory` (docs/security.md): the fuzzed Pad
# of the hardening issue (pads of 2,046,820,354 on both ends of axis 1: f32[1,4093640712],
# 16,374,562,848 bytes) is refused at compile time naming the node, the value and the bytes;
# a Pad beyond any machine's memory is refused under the default limits; a random input of a
# huge declared shape is refused before it is made; the bundled model
# runs under a 1G limit and is refused under 1K (its weights alone are larger); a malformed
# size is a usage error.
# Usage: run_limits_cli_test.sh FRAME_CLI PYTHON OUT_DIR
set -eu
frame=$1; python=$2; out=$3
rm -rf "$out"
mkdir -p "$out"
"$python" - "$out" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper

def pad_model(path, pads):
    g = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")], "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("pads", TensorProto.INT64, [4], pads)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)

pad_model(sys.argv[1] + "/pad.onnx", [0, 2046820354, 0, 2046820354])
pad_model(sys.argv[1] + "/pad_huge.onnx", [0, 0, 0, 1 << 40])
# An input declared f32[100000,100000] (40 GB): frame run's random input is refused unmade.
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"], name="relu")], "big_input",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100000, 100000])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
          sys.argv[1] + "/big_input.onnx")
PY
expect_fail() {  # expect_fail NAME PATTERN COMMAND...: the command fails, stderr has PATTERN
  name=$1; pattern=$2; shift 2
  if "$@" > "$out/$name.out" 2> "$out/$name.err"; then
    echo "$name: '$*' succeeded" >&2
    exit 1
  fi
  grep -q -- "$pattern" "$out/$name.err" || { echo "$name:" >&2; cat "$out/$name.err" >&2; exit 1; }
}
msg="node 'pad' (pad): output 0 'y' is f32\[1,4093640712\]: 16374562848 bytes, over the limit of 1073741824 bytes per tensor"
expect_fail run_pad "$msg" "$frame" run "$out/pad.onnx" --max-memory 1G
expect_fail inspect_pad "$msg" "$frame" inspect "$out/pad.onnx" --max-memory 1G
expect_fail run_pad_huge "node 'pad' (pad): output 0 'y' is f32\[1,1099511627780\]" \
  "$frame" run "$out/pad_huge.onnx"
expect_fail big_input "input 'x' is f32\[100000,100000\]: 40000000000 bytes, over the limit of 1073741824" \
  "$frame" run "$out/big_input.onnx" --max-memory 1G
expect_fail bad_size "byte size '12X' is not a number" \
  "$frame" run "$out/pad.onnx" --max-memory 12X
expect_fail bundled_1k "max_initializer_bytes" "$frame" run --max-memory 1K
"$frame" run --max-memory 1G > "$out/bundled.txt"
grep -q "bundled model: max abs error vs expected .* (ok)" "$out/bundled.txt" || { cat "$out/bundled.txt" >&2; exit 1; }
echo "limits cli: ok"
