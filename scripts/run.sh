#!/usr/bin/env bash
# The README's main-job command: installs, builds and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR="${BUILD_DIR:-build}"
if [ -d src/onnx ] && [ -x "$BUILD_DIR/frame" ] && "$BUILD_DIR/frame" run --help >/dev/null 2>&1; then
  exec "$BUILD_DIR/frame" run "$@"
fi
exec "$BUILD_DIR/example_03_custom_op"
