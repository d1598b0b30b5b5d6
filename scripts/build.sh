#!/usr/bin/env bash
# Installs dependencies (scripts/bootstrap.sh), configures and builds frame into ./build.
# Usage: scripts/build.sh [extra cmake args]. BUILD_DIR overrides the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
BUILD_DIR="${BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFRAME_WERROR=ON "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
