#!/usr/bin/env bash
# The README's test command: installs, builds, and runs every test (CTest: unit tests per
# layer in grouped entries, op database per family and backend, iron rules, format check,
# examples, conformance, real models, Python), then the ASan+UBSan stage
# (scripts/test_sanitizers.sh: runtime, ONNX, robustness and load suites plus the fuzz
# regressions and a short fuzz of each target; docs/fuzzing.md). Prints the gtest case counts
# and, at the end (also on failure), the time of every stage.
# FRAME_SKIP_SANITIZERS=1 skips the sanitizer stage (local use; CI runs it). Extra arguments go
# to the normal stage's ctest (e.g. `-L ops`).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
start=$(date +%s)
stages=()
report() {
  echo
  echo "test.sh: stage times"
  for s in "${stages[@]}"; do echo "  $s"; done
  echo "  total $(($(date +%s) - start)) s"
}
trap report EXIT
# stage NAME COMMAND...: runs COMMAND and records how long it took; fails when it fails.
stage() {
  local name="$1" t rc=0
  shift
  t=$(date +%s)
  "$@" || rc=$?
  stages+=("$(printf '%-16s %5d s' "$name" $(($(date +%s) - t)))")
  return "$rc"
}
# gtest case counts over the grouped entries of a build dir (tests/scripts/gtest_group.py).
cases() {
  /usr/bin/python3 tests/scripts/gtest_group.py summary --results "$1/test_results" \
    --entries "$(ctest --test-dir "$1" -N "${@:2}" | sed -n 's/^Total Tests: //p')"
}

stage bootstrap scripts/bootstrap.sh
stage build env FRAME_BOOTSTRAPPED=1 scripts/build.sh
rm -rf "$BUILD_DIR/test_results"
rc=0
stage "normal tests" ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@" || rc=$?
cases "$BUILD_DIR" "$@"
[ "$rc" -eq 0 ] || exit "$rc"
if [ "${FRAME_SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "sanitizer build" scripts/test_sanitizers.sh build
  rm -rf build-asan/test_results
  stage "sanitizer tests" scripts/test_sanitizers.sh test || rc=$?
  cases build-asan -L "$(scripts/test_sanitizers.sh labels)"
  exit "$rc"
fi
