#!/usr/bin/env bash
# Installs the package into a fresh offline venv from an existing build directory
# (FRAME_BUILD_DIR=$1, so nothing is recompiled), then imports it away from the source and
# build trees and checks the bundled CNN against its expected output. Usage: pip_install.sh BUILD
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "$1" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
# A copy of the source keeps the install's setuptools/egg-info files out of the checkout.
mkdir "$tmp/src"
cp -r "$src/pyproject.toml" "$src/setup.py" "$src/python" "$tmp/src/"
FRAME_BUILD_DIR="$build" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$tmp/venv/bin/pip" install -q --no-build-isolation "$tmp/src"
cd "$tmp"
"$tmp/venv/bin/python" - "$src" <<'PY'
import os, sys
import numpy as np
import frame
src = sys.argv[1]
assert frame.__file__.startswith(sys.prefix), frame.__file__
sess = frame.InferenceSession(os.path.join(src, "models", "small_cnn.onnx"))
x = np.load(os.path.join(src, "models", "small_cnn.input.npy"))
(y,) = sess.run(None, {"input": x})
np.testing.assert_allclose(y, np.load(os.path.join(src, "models", "small_cnn.expected.npy")),
                           rtol=1e-4, atol=1e-5)
import frame.onnxruntime as ort  # the subpackages are in the wheel too
(y2,) = ort.InferenceSession(os.path.join(src, "models", "small_cnn.onnx")).run(None, {"input": x})
np.testing.assert_array_equal(y2, y)
assert ort.__file__.startswith(sys.prefix), ort.__file__
print("pip install: OK", frame.__version__, frame.__file__)
PY
