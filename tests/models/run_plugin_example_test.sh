#!/bin/sh
# examples/04_plugin as a user builds it: install frame (cmake --install), build the plugin out
# of tree with find_package(frame), run a model that uses its op through the installed
# `frame run --plugin`, and compare with numpy's expected output (make_model.py).
# Usage: run_plugin_example_test.sh BUILD_DIR SOURCE_DIR COMPARE_NPY OUT_DIR
set -eu
build=$1; src=$2; compare=$3; out=$4
rm -rf "$out"; mkdir -p "$out"
cmake --install "$build" --prefix "$out/prefix" > "$out/install.log"
cmake -S "$src/examples/04_plugin" -B "$out/myops" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$out/prefix" > "$out/configure.log"
cmake --build "$out/myops" > "$out/build.log"
/usr/bin/python3 "$src/examples/04_plugin/make_model.py" "$out/data"
"$out/prefix/bin/frame" run "$out/data/swish.onnx" --plugin "$out/myops/libmyops.so" \
  --input x="$out/data/x.npy" --output-dir "$out/run"
"$compare" "$out/run/y.npy" "$out/data/expected.npy"
echo "plugin example: ok"
