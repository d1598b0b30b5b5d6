#!/usr/bin/env bash
# The ASan+UBSan stage of the README's test command (scripts/test.sh runs it after the normal
# build and ctest; docs/fuzzing.md): configures the `asan` preset (clang, AddressSanitizer with
# LeakSanitizer, UndefinedBehaviorSanitizer, libFuzzer targets) into build-asan, builds only
# the runtime, ONNX, robustness and load suites and the fuzz targets, and runs those suites,
# every fuzz regression input and a short fixed-time fuzz of each target
# (FRAME_FUZZ_SMOKE_SECONDS, default 30). FRAME_SKIP_SANITIZERS=1 makes scripts/test.sh skip it.
# Usage: scripts/test_sanitizers.sh [build|test|labels] [ctest args]: one phase (scripts/test.sh
# times them apart), or both; `labels` prints the ctest label expression of the suites run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
SECONDS_PER_TARGET="${FRAME_FUZZ_SMOKE_SECONDS:-30}"
LABELS='^(runtime|onnx|robustness|load|fuzz_regression|fuzz_smoke)$'
phase="all"
case "${1:-}" in build | test | labels) phase="$1"; shift ;; esac
if [ "$phase" = labels ]; then
  echo "$LABELS"
  exit 0
fi
start=$(date +%s)
if [ "$phase" != test ]; then
  # The ONNX node-test data the normal stage generated seeds the ONNX fuzzers.
  cmake --preset asan -DFRAME_CONFORMANCE_DATA="$PWD/$BUILD_DIR/conformance_data" \
        -DFRAME_FUZZ_SMOKE_SECONDS="$SECONDS_PER_TARGET" >/dev/null
  cmake --build build-asan -j "$(nproc)" --target frame_runtime_tests frame_onnx_tests \
        frame_robustness_tests frame_load_tests frame_fuzz_onnx_load frame_fuzz_onnx_run \
        frame_fuzz_text_ir frame_fuzz_npy frame_fuzz_disk_cache_entry frame_fuzz_serve_request \
        frame_fuzz_serve_grpc_request
  echo "sanitizers: build $(($(date +%s) - start)) s"
fi
if [ "$phase" != build ]; then
  built=$(date +%s)
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L "$LABELS" "$@"
  echo "sanitizers: tests $(($(date +%s) - built)) s"
fi
