#!/usr/bin/env bash
# Installs dependencies (scripts/bootstrap.sh), configures and builds frame into ./build.
# Usage: scripts/build.sh [--main] [extra cmake args]. BUILD_DIR overrides the build directory;
# FRAME_BOOTSTRAPPED=1 skips the bootstrap (scripts/test.sh runs and times it as its own stage).
#   --main  the main job only: installs what it needs and builds the `frame` binary (no tests,
#           no Python package); without it, everything (library, CLI, tests, Python, examples).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
if [ "${1:-}" = "--main" ]; then
  shift
  scripts/bootstrap.sh --main
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFRAME_WERROR=ON \
    -DFRAME_BUILD_TESTS=OFF -DFRAME_BUILD_PYTHON=OFF "$@"
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target frame_cli
else
  if [ "${FRAME_BOOTSTRAPPED:-0}" != 1 ]; then scripts/bootstrap.sh; fi
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFRAME_WERROR=ON \
    -DFRAME_BUILD_TESTS=ON -DFRAME_BUILD_PYTHON=ON "$@"
  cmake --build "$BUILD_DIR" -j "$(nproc)"
fi
