#!/bin/sh
# Real-model test: export MODEL with PyTorch (cached in DIR), run it with `frame run`, compare
# with the PyTorch output under the BUILD-011 deep-network tolerance.
# Usage: run_model_test.sh MODEL DIR FRAME_CLI COMPARE_NPY SOURCE_DIR [BACKEND]
# With BACKEND the model runs once on that backend alone in strict mode (no fallback).
set -eu
model=$1; dir=$2; frame=$3; compare=$4; src=$5; backend=${6:-}
mkdir -p "$dir"
if [ ! -f "$dir/$model.onnx" ] || [ ! -f "$dir/$model.expected.npy" ]; then
  /usr/bin/python3 "$src/scripts/export_models.py" --out "$dir" --only "$model"
fi
out="$dir/$model.out${backend:+.$backend}"
rm -rf "$out"
if [ -n "$backend" ]; then
  "$frame" run "$dir/$model.onnx" --input "input=$dir/$model.input.npy" --output-dir "$out" \
    --backend "$backend" --strict
else
  "$frame" run "$dir/$model.onnx" --input "input=$dir/$model.input.npy" --output-dir "$out" \
    --repeat 3
fi
exec "$compare" "$out/output.npy" "$dir/$model.expected.npy" --class deep
