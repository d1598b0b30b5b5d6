#!/bin/sh
# Runs generated model cases through `frame run` with every input fed as a .npy file, as a user
# runs them, and compares every output with its expected file (BUILD-011 op tolerance).
# Layout of DATA (written by a generator under tests/onnx_models/): CASE/model.onnx and run
# directories CASE/RUN/in_NAME.npy (inputs) and CASE/RUN/out_NAME.npy (expected outputs,
# computed by numpy or torch, never by frame). Used by the control-flow cases
# (gen_control_flow.py: If with a run-time condition and with branches of different shapes,
# Loop with a run-time trip count and scan outputs, a Loop that decides when to stop, Loop
# inside If inside Loop, Scan 8/9/11) and the recurrent models (gen_recurrent.py: torch-exported
# LSTMs and GRUs at two sizes of their dynamic axes, an LSTM with sequence_lens as an input).
# Usage: run_npy_cases_test.sh FRAME_CLI COMPARE_NPY DATA_DIR OUT_DIR MIN_RUNS
set -eu
frame=$1; compare=$2; data=$3; out=$4; min_runs=$5
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
# Guard against a generator that stopped writing runs.
[ "$runs" -ge "$min_runs" ] || { echo "only $runs runs found in $data (expected $min_runs)" >&2; exit 1; }
echo "$data: $runs runs ok"
