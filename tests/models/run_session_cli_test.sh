#!/bin/sh
# `frame run` over a runtime::Session (ADR 0006): a Reshape whose target is a graph input, fed
# as a .npy file with two different targets, and the BERT-style encoder with dynamic axes at
# one sequence length; outputs compared with the generator's reference values
# (tests/session/gen_session_models.py). A shape-determining input without a file is an error
# naming it. `frame inspect --input` shows the specialization for a given value.
# Usage: run_session_cli_test.sh FRAME_CLI COMPARE_NPY SESSION_MODELS_DIR OUT_DIR
set -eu
frame=$1; compare=$2; data=$3; out=$4
rm -rf "$out"
for k in a b; do
  "$frame" run "$data/reshape.onnx" --input x="$data/reshape.x.npy" \
    --input shape="$data/reshape.shape_$k.npy" --output-dir "$out/$k"
  "$compare" "$out/$k/y.npy" "$data/reshape.expected_$k.npy"
done
"$frame" run "$data/bert.onnx" --input ids="$data/bert.ids_8.npy" --output-dir "$out/bert"
"$compare" "$out/bert/hidden.npy" "$data/bert.expected_8.npy" --class deep
# --json and --profile break the specialization's compile down by stage, the session's
# import (specialize) first.
"$frame" run "$data/bert.onnx" --shape ids=1,6 --json > "$out/stages.json"
/usr/bin/python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))["compile_stages_ms"]
assert list(st) == ["specialize", "verify", "passes", "check", "prepare"], st
assert all(v >= 0 for v in st.values()), st
' "$out/stages.json"
"$frame" run "$data/bert.onnx" --shape ids=1,6 --profile > "$out/stages.txt"
grep -q "compile stages (ms): specialize " "$out/stages.txt" || { cat "$out/stages.txt" >&2; exit 1; }
# --shape gives random values of a concrete shape to an input with symbolic dims.
"$frame" run "$data/bert.onnx" --shape ids=1,6 > "$out/random.txt"
grep -q "output hidden: f32\[1,6,32\]" "$out/random.txt" || { cat "$out/random.txt" >&2; exit 1; }
if "$frame" run "$data/reshape.onnx" --input x="$data/reshape.x.npy" 2> "$out/err.txt"; then
  echo "frame run without a value for 'shape' succeeded" >&2
  exit 1
fi
grep -q "input 'shape' (i64\[2\]) decides output shapes (ADR 0006): its value is needed" \
  "$out/err.txt" || { cat "$out/err.txt" >&2; exit 1; }
# `frame inspect --input` reports the specialization for the given value; without it, the
# error lists the shape-determining input and says how to pass its value.
"$frame" inspect "$data/reshape.onnx" --input x="$data/reshape.x.npy" \
  --input shape="$data/reshape.shape_a.npy" \
  > "$out/inspect.txt"
grep -q "shape -> " "$out/inspect.txt" && grep -q "peak arena" "$out/inspect.txt" ||
  { cat "$out/inspect.txt" >&2; exit 1; }
if "$frame" inspect "$data/reshape.onnx" --shape x=6 > /dev/null 2> "$out/inspect_err.txt"; then
  echo "frame inspect without a value for 'shape' succeeded" >&2
  exit 1
fi
grep -q "pass their values with --input NAME=FILE.npy" "$out/inspect_err.txt" ||
  { cat "$out/inspect_err.txt" >&2; exit 1; }
# An input given twice is an error naming it.
if "$frame" run "$data/reshape.onnx" --input x="$data/reshape.x.npy" \
  --input x="$data/reshape.x.npy" 2> "$out/dup.txt"; then
  echo "frame run with --input x twice succeeded" >&2
  exit 1
fi
grep -q "input x: given twice" "$out/dup.txt" || { cat "$out/dup.txt" >&2; exit 1; }
echo "session cli: ok"
