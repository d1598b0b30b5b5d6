#!/bin/sh
# The bundled model: `frame run` with no model compares with models/small_cnn.expected.npy
# itself (exit 1 on mismatch); the written output is also checked independently.
# Usage: run_bundled_test.sh FRAME_CLI COMPARE_NPY MODELS_DIR OUT_DIR [RUN_OPTION ...]
set -eu
frame=$1; compare=$2; models=$3; out=$4
shift 4
rm -rf "$out"
"$frame" run --output-dir "$out" "$@"
exec "$compare" "$out/probs.npy" "$models/small_cnn.expected.npy" --class deep
