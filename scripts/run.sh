#!/usr/bin/env bash
# The README's main-job command: installs what the main job needs, builds the `frame` binary
# only, and runs `frame run` (arguments are passed on; without a model it runs the bundled
# models/small_cnn.onnx and checks it against its expected output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --main
BUILD_DIR="${BUILD_DIR:-build}"
if [ ! -x "$BUILD_DIR/frame" ]; then
  echo "run.sh: $BUILD_DIR/frame was not built; see the build output above" >&2
  exit 1
fi
exec "$BUILD_DIR/frame" run "$@"
