#!/bin/sh
# Recurrent models exported from torch (issue 11) through `frame run`, every input fed as a
# .npy file: 2-layer bidirectional LSTMs and GRUs, sequence-major and batch_first, with and
# without initial states, each at two (sequence, batch) sizes of its dynamic axes, compared with
# torch's outputs; and an LSTM whose sequence_lens is a graph input fed two different vectors,
# compared with a numpy reference (tests/onnx_models/gen_recurrent.py), BUILD-011 op tolerance.
# Usage: run_recurrent_cli_test.sh FRAME_CLI COMPARE_NPY RECURRENT_MODELS_DIR OUT_DIR
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
# Guard against a generator that stopped writing runs: 5 models x 2 runs.
[ "$runs" -ge 10 ] || { echo "only $runs recurrent runs found in $data" >&2; exit 1; }
echo "recurrent cli: $runs runs ok"
