#!/bin/sh
# examples/01_run_model on the bundled model: the printed output (name, shape, first values)
# must match models/small_cnn.expected.npy (BUILD-011 deep tolerance, checked with numpy).
# Usage: run_example_01_test.sh EXAMPLE_BINARY MODELS_DIR
set -eu
exe=$1; models=$2
out=$("$exe" "$models/small_cnn.onnx" "$models/small_cnn.input.npy")
echo "$out"
/usr/bin/python3 - "$models/small_cnn.expected.npy" "$out" <<'PY'
import sys
import numpy as np
expected = np.load(sys.argv[1]).ravel()
line = sys.argv[2].strip().splitlines()[0]
head, values = line.split(":", 1)
got = np.array([float(v) for v in values.split()])
assert len(got) == min(5, expected.size), line
assert np.allclose(got, expected[:len(got)], rtol=1e-4, atol=1e-5), (got, expected[:len(got)])
print("example_01_run_model: %s matches small_cnn.expected.npy" % head)
PY
