#!/usr/bin/env bash
# The README's test command: installs, builds, and runs every test (CTest: unit tests per
# layer, op database, iron rules, format check, example, and the suites that later issues add).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR="${BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
