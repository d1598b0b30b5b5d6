#!/bin/sh
# Control flow through `frame run` with every input fed as a .npy file, as a user runs it
# (issue: run-time specialization and control flow, ADR 0006): If with a run-time condition,
# If whose branches have different shapes (the session binds the condition), Loop with a
# run-time trip count and scan outputs, a Loop whose body decides when to stop, nested Loop
# inside If inside Loop, Scan in its opset 8, 9 and 11 forms. Every case directory of
# tests/onnx_models/gen_control_flow.py with run directories (RUN/in_NAME.npy inputs,
# RUN/out_NAME.npy expected outputs computed with numpy) is run and compared.
# Usage: run_control_flow_cli_test.sh FRAME_CLI COMPARE_NPY CONTROL_FLOW_MODELS_DIR OUT_DIR
set -eu
frame=$1; compare=$2; data=$3; out=$4
rm -rf "$out"
runs=0
for model in "$data"/*/model.onnx; do
  case_dir=$(dirname "$model")
  case_name=$(basename "$case_dir")
  for run_dir in "$case_dir"/*/; do
    [ -d "$run_dir" ] || continue
    run=$(basename "$run_dir")
    set --
    for f in "$run_dir"in_*.npy; do
      [ -e "$f" ] || continue
      name=$(basename "$f" .npy)
      set -- "$@" --input "${name#in_}=$f"
    done
    dest="$out/$case_name/$run"
    "$frame" run "$model" "$@" --output-dir "$dest" > /dev/null
    for e in "$run_dir"out_*.npy; do
      name=$(basename "$e" .npy)
      "$compare" "$dest/${name#out_}.npy" "$e"
    done
    runs=$((runs + 1))
  done
done
# Guard against a generator that stopped writing runs: the cases above hold 15 runs.
[ "$runs" -ge 15 ] || { echo "only $runs control-flow runs found in $data" >&2; exit 1; }
echo "control flow cli: $runs runs ok"
