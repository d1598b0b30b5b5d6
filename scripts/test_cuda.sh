#!/usr/bin/env bash
# The cuda backend on a GPU machine (docs/backends/cuda.md, "Tests"). Two steps:
#
#   scripts/test_cuda.sh pack [--models mlp,transformer,cnn,mobilenet_v2]   # here, after a build
#   scripts/test_cuda.sh run                                                # on the GPU machine
#
# `pack` writes build/cuda_bundle.tar.xz (well under the 64 MiB a device call carries): the
# frame CLI, libframe, the cuda and op-database test binaries, every shared library they load
# (the C library and its loader included: the GPU machine's image is not Debian, so the
# binaries run through the bundled loader), the op-database cases of ops with a cuda kernel,
# and the chosen models from scripts/export_models.py with PyTorch's outputs computed here.
# ResNet-18 (46 MB of weights) does not fit next to the rest: `pack --models-only resnet18`
# writes build/cuda_models.tar.xz for a second call on the still-warm machine, whose `run`
# finds the bundle unpacked by the first.
#
# `run` (from the repository root of the carried tree, `$OUT` the folder whose files come back)
# unpacks the bundle, checks that the binaries start, and then, each step timed and logged to
# $OUT/cuda_report.md:
#   1. `frame backends` (the probe's answer: device, compute capability, or why not);
#   2. frame_cuda_tests (the generated-source compile test for the device, the CudaDevice.*
#      tests against values computed in double);
#   3. the op database's cases on cuda (OpDb.*@cuda against the numpy references, inside and
#      outside device groups);
#   4. each model with `--backend cuda,cpu --kernels` against PyTorch's output (which nodes
#      fell back is in the log), and its median latency over 20 runs.
# Nothing here needs the network. The whole run is bounded by `timeout` per step.
set -uo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUNDLE=$BUILD_DIR/cuda_bundle
MODELS=mlp,transformer,cnn,mobilenet_v2

die() { echo "test_cuda.sh: $*" >&2; exit 2; }

pack() {
  local models_only=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --models) [ $# -ge 2 ] || die "--models needs a comma-separated list"; MODELS="$2"; shift 2 ;;
      --models-only) [ $# -ge 2 ] || die "--models-only needs a comma-separated list"
        MODELS="$2"; models_only=1; shift 2 ;;
      *) die "unknown pack option '$1'" ;;
    esac
  done
  if [ "$models_only" = 1 ]; then
    rm -rf "$BUNDLE/models" && mkdir -p "$BUNDLE/models"
    /usr/bin/python3 scripts/export_models.py --out "$BUNDLE/models" --only "$MODELS" \
      > "$BUNDLE/models/export.log" 2>&1 || die "export_models.py failed"
    model_names
    tar -C "$BUILD_DIR" -cJf "$BUILD_DIR/cuda_models.tar.xz" cuda_bundle/models
    check_size "$BUILD_DIR/cuda_models.tar.xz"
    return
  fi
  for f in "$BUILD_DIR/frame" "$BUILD_DIR/libframe.so" "$BUILD_DIR/tests/frame_cuda_tests" \
           "$BUILD_DIR/tests/frame_ops_tests" "$BUILD_DIR/tests/models/frame_compare_npy" \
           "$BUILD_DIR/frame_cuda_bench"; do
    [ -x "$f" ] || die "$f is missing: build first (scripts/build.sh)"
  done
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/models" "$BUNDLE/op_db"
  cp "$BUILD_DIR/frame" "$BUILD_DIR/tests/frame_cuda_tests" "$BUILD_DIR/tests/frame_ops_tests" \
     "$BUILD_DIR/tests/models/frame_compare_npy" "$BUILD_DIR/frame_cuda_bench" "$BUNDLE/bin/"
  # Every library the binaries load, the C library and the loader included.
  for bin in "$BUNDLE"/bin/*; do
    ldd "$bin" | awk '/=>/ {print $3} /ld-linux/ {print $1}' | grep '^/' || true
  done | sort -u | while read -r lib; do cp -L "$lib" "$BUNDLE/lib/"; done
  cp -L "$BUILD_DIR/libframe.so" "$BUNDLE/lib/"
  # The op-database cases of ops with a cuda kernel, and their arrays.
  /usr/bin/python3 - "$BUILD_DIR/op_db" "$BUNDLE/op_db" "$BUNDLE/bin/frame" "$BUNDLE/lib" <<'EOF'
import json, os, shutil, subprocess, sys
src, dst, frame, lib = sys.argv[1:5]
env = dict(os.environ, LD_LIBRARY_PATH=lib)
ops = json.loads(subprocess.run([frame, "ops", "--json"], env=env, capture_output=True,
                                check=True, text=True).stdout)
cuda_ops = {o["name"] for o in ops["ops"] if "cuda" in o.get("kernels", [])}
m = json.load(open(os.path.join(src, "manifest.json")))
keep = [c for c in m["cases"] if c["op"] in cuda_ops]
files = set()
for c in keep:
    for f in list(c["inputs"]) + list(c["outputs"]):
        if f:
            files.add(f)
    for a in c["attrs"].values():
        if a["type"] == "tensor":
            files.add(a["value"])
for f in files:
    os.makedirs(os.path.dirname(os.path.join(dst, f)) or dst, exist_ok=True)
    shutil.copy(os.path.join(src, f), os.path.join(dst, f))
m["cases"] = keep
json.dump(m, open(os.path.join(dst, "manifest.json"), "w"))
print(f"op database: {len(keep)} cases of {len(cuda_ops)} ops with a cuda kernel")
EOF
  [ $? -eq 0 ] || die "op-database subset failed"
  cp models/small_cnn.onnx "$BUNDLE/models/small_cnn.onnx"
  cp models/small_cnn.input.npy "$BUNDLE/models/small_cnn.input.npy"
  cp models/small_cnn.expected.npy "$BUNDLE/models/small_cnn.expected.npy"
  if [ -n "$MODELS" ]; then
    /usr/bin/python3 scripts/export_models.py --out "$BUNDLE/models" --only "$MODELS" \
      > "$BUNDLE/models/export.log" 2>&1 || die "export_models.py failed (see $BUNDLE/models/export.log)"
  fi
  model_names
  cp scripts/cuda_torch_baseline.py "$BUNDLE/bin/"
  tar -C "$BUILD_DIR" -cJf "$BUILD_DIR/cuda_bundle.tar.xz" cuda_bundle
  check_size "$BUILD_DIR/cuda_bundle.tar.xz"
}

# Each model's first graph input's name (the GPU machine has no onnx package); ResNet-18's
# batch dim made symbolic, so `run` can time it at batch 32 too.
model_names() {
  /usr/bin/python3 -c '
import onnx, sys
for path in sys.argv[1:]:
    m = onnx.load(path)
    inits = {i.name for i in m.graph.initializer}
    name = [i.name for i in m.graph.input if i.name not in inits][0]
    open(path[:-len(".onnx")] + ".input_name", "w").write(name)
    if path.endswith("/resnet18.onnx"):
        for v in list(m.graph.input) + list(m.graph.output):
            if v.name not in inits:
                v.type.tensor_type.shape.dim[0].dim_param = "batch"
        onnx.save(m, path)
' "$BUNDLE"/models/*.onnx || die "cannot read the models' input names"
}

check_size() {
  local bytes; bytes=$(stat -c %s "$1")
  echo "wrote $1 ($((bytes / 1048576)) MiB; a device call carries at most 64 with everything else)"
  # The carry limit covers the whole tree: leave 8 MiB for the sources beside it.
  [ "$bytes" -lt $((56 * 1048576)) ] || die "$1 is too large to carry: pack fewer models"
}

run() {
  if [ -f "$BUILD_DIR/cuda_bundle.tar.xz" ]; then
    tar -C "$BUILD_DIR" -xJf "$BUILD_DIR/cuda_bundle.tar.xz" || die "cannot unpack the bundle"
  elif [ ! -x "$BUNDLE/bin/frame" ]; then
    die "$BUILD_DIR/cuda_bundle.tar.xz is missing (and no bundle is unpacked): pack it here first"
  fi
  if [ -f "$BUILD_DIR/cuda_models.tar.xz" ]; then
    tar -C "$BUILD_DIR" -xJf "$BUILD_DIR/cuda_models.tar.xz" || die "cannot unpack the models"
  fi
  local out=${OUT:-$PWD/$BUILD_DIR/cuda_out}
  mkdir -p "$out"
  local report=$out/cuda_report.md
  local failed=0
  local lib; lib=$(cd "$BUNDLE/lib" && pwd)
  local loader; loader=$(ls "$lib"/ld-linux-x86-64.so.* 2>/dev/null | head -1)
  # The driver and the toolkit's NVRTC come from the machine.
  local sys_dirs=""
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 /usr/local/nvidia/lib64 \
           /usr/lib/wsl/lib; do
    [ -d "$d" ] && sys_dirs="$sys_dirs:$d"
  done
  export FRAME_CUDA_LIB_DIR=${FRAME_CUDA_LIB_DIR:-/usr/local/cuda/lib64}
  # The CLI re-executes itself through /proc/self/exe to set its OpenMP wait policy unless the
  # variables are set; under the bundled loader that would run the loader again, so set them
  # (to the values it would choose, include/frame/runtime/threads.h).
  export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-30000}
  # Binaries run through the bundled loader with the bundled libraries first.
  local x=("$loader" --library-path "$lib$sys_dirs")
  {
    echo "# cuda backend on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo '```'
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 | head -3
    echo '```'
  } > "$report"
  step() {  # step NAME TIMEOUT_S CMD...: runs, logs, appends the tail to the report
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    { echo; echo "## $name (rc $rc, $((SECONDS - t0)) s)"; echo; echo '```'; tail -25 "$out/$name.log"; echo '```'; } >> "$report"
    [ $rc -eq 0 ] || failed=$((failed + 1))
    return $rc
  }
  step start 30 "${x[@]}" "$BUNDLE/bin/frame" --version || { echo "the bundled binaries do not start"; cat "$report"; exit 1; }
  step backends 60 "${x[@]}" "$BUNDLE/bin/frame" backends
  step cuda_tests 180 "${x[@]}" "$BUNDLE/bin/frame_cuda_tests"
  FRAME_OP_DB_DIR="$BUNDLE/op_db" FRAME_OP_DB_BACKENDS=cuda \
    step op_db 240 "${x[@]}" "$BUNDLE/bin/frame_ops_tests" --gtest_filter='OpDb.*@cuda:OpDbDtypeCoverage.cuda' --gtest_brief=1
  for onnx in "$BUNDLE"/models/*.onnx; do
    local name; name=$(basename "$onnx" .onnx)
    local in="$BUNDLE/models/$name.input.npy" want="$BUNDLE/models/$name.expected.npy"
    [ -f "$in" ] && [ -f "$want" ] || continue
    local input_name; input_name=$(cat "$BUNDLE/models/$name.input_name")
    rm -rf "$out/$name" && mkdir -p "$out/$name"
    step "model_$name" 120 "${x[@]}" "$BUNDLE/bin/frame" run "$onnx" --backend cuda,cpu --kernels \
      --input "$input_name=$in" --output-dir "$out/$name" --repeat 20
    # Nodes placed on cuda (a run where every node fell back would still match PyTorch).
    local on_cuda; on_cuda=$(grep -cE '^  [^ ].* cuda +(kernel|decomposition)' "$out/model_$name.log" || true)
    echo "nodes on cuda in $name: $on_cuda" >> "$report"
    [ "$on_cuda" -gt 0 ] || { echo "no node of $name ran on cuda" >> "$report"; failed=$((failed + 1)); }
    # export_models.py's models have one output, saved as the single .npy frame writes.
    local got; got=$(ls "$out/$name"/*.npy 2>/dev/null | head -1)
    if [ -n "$got" ]; then
      step "compare_$name" 30 "${x[@]}" "$BUNDLE/bin/frame_compare_npy" "$got" "$want" --class deep
    fi
  done
  step bench_fused_chain 120 "${x[@]}" "$BUNDLE/bin/frame_cuda_bench"
  # ResNet-18 (when packed) at batch 1 and 32, next to PyTorch eager on the same GPU (the
  # machine's python3 and torch; skipped without them).
  if [ -f "$BUNDLE/models/resnet18.onnx" ]; then
    local rin; rin=$(cat "$BUNDLE/models/resnet18.input_name")
    for b in 1 32; do
      step "bench_resnet18_b$b" 180 "${x[@]}" "$BUNDLE/bin/frame" run "$BUNDLE/models/resnet18.onnx" \
        --backend cuda,cpu --shape "$rin=$b,3,224,224" --repeat 20
    done
    if command -v python3 > /dev/null && python3 -c "import torch" 2> /dev/null; then
      step bench_resnet18_torch 300 python3 "$BUNDLE/bin/cuda_torch_baseline.py" --batches 1,32
    fi
  fi
  echo "failed steps: $failed" >> "$report"
  cat "$report"
  [ "$failed" -eq 0 ]
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) die "usage: scripts/test_cuda.sh pack [--models a,b | --models-only a,b] | run" ;;
esac
