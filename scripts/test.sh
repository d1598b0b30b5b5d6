#!/usr/bin/env bash
# The README's test command: installs, builds, and runs every test (CTest: unit tests per
# layer, op database, iron rules, format check, example, and the suites that later issues add),
# then the ASan+UBSan stage (scripts/test_sanitizers.sh: runtime, ONNX, robustness and load
# suites plus the fuzz regressions and a short fuzz of each target; docs/fuzzing.md).
# FRAME_SKIP_SANITIZERS=1 skips that stage (local use; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR="${BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
if [ "${FRAME_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/test_sanitizers.sh
fi
