#!/bin/sh
# Generates the ONNX backend node-test data into DIR (idempotent; see generate_data.py).
# Usage: tests/conformance/generate_data.sh DIR [--force] [--inventory FILE]
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [--force] [--op-type OP] [--inventory FILE]" >&2
  exit 2
fi
# Debian's python3-onnx/numpy live under /usr/bin/python3, not the first python3 on PATH.
exec /usr/bin/python3 "$(dirname "$0")/generate_data.py" "$@"
