#!/usr/bin/env bash
# Installs the Debian packages frame needs. Usage: scripts/bootstrap.sh [--main]
#   --main  only what the main job needs (build the `frame` binary and run a model;
#           scripts/run.sh); without it, everything the tests, Python package and tools need.
# Idempotent: installs only what is missing; runs `apt-get update` at most once.
set -euo pipefail

MAIN_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libprotobuf-dev protobuf-compiler libonnx-dev
  libdnnl-dev libhwy-dev opencl-headers ocl-icd-opencl-dev  # dnnl-config.cmake requires OpenCL
  nlohmann-json3-dev libcli11-dev libfmt-dev libxxhash-dev  # xxhash: content digests (caches)
  libgraphviz-dev  # `frame viz` draws through the Graphviz libraries (libgvc, libcgraph)
  # `frame serve` (docs/serving.md): REST, gRPC and Prometheus metrics
  libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc prometheus-cpp-dev libsimdjson-dev
)

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format
  libprotobuf-dev protobuf-compiler libonnx-dev
  libdnnl-dev libhwy-dev opencl-headers ocl-icd-opencl-dev  # dnnl-config.cmake requires OpenCL
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libgraphviz-dev libxxhash-dev
  libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc prometheus-cpp-dev libsimdjson-dev  # serve
  python3-grpcio python3-grpc-tools  # the serve tests' gRPC client (stubs generated at test time)
  python3-dev pybind11-dev python3-pybind11 python3-venv python3-pip python3-setuptools
  python3-numpy python3-pytest python3-onnx python3-torch python3-torchvision
  graphviz
  pocl-opencl-icd clinfo  # an OpenCL device on the CPU: the intel_gpu backend's tests run on it
  clang libclang-rt-14-dev libomp-14-dev  # the ASan+UBSan/libFuzzer and TSan builds (docs/fuzzing.md)
)
if [ "${1:-}" = "--main" ]; then PACKAGES=("${MAIN_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
