#!/bin/sh
# The command line's first contact (docs/cli.md): --version, unknown verbs and bad values get
# messages naming what was wrong (exit 2), `frame backends` agrees with the kernel registry,
# --output-dir says which files it wrote (distinct names, write errors reported), and `frame
# inspect` says what import changed.
# Usage: run_cli_usage_test.sh FRAME_CLI PROJECT_VERSION OUT_DIR
set -eu
frame=$1; version=$2; out=$3
rm -rf "$out"; mkdir -p "$out"
fail() { echo "cli_usage: $*" >&2; exit 1; }
expect_usage_error() {  # expect_usage_error PATTERN ARGS...: exit 2 and PATTERN on stderr
  pattern=$1; shift
  rc=0; "$frame" "$@" > "$out/stdout.txt" 2> "$out/stderr.txt" || rc=$?
  [ "$rc" -eq 2 ] || fail "'frame $*' exited $rc, expected 2"
  grep -q -- "$pattern" "$out/stderr.txt" || { cat "$out/stderr.txt" >&2; fail "'frame $*': no '$pattern'"; }
}

"$frame" --version > "$out/version.txt"
grep -Eq "^frame $version \(git ([0-9a-f]+(-dirty)?|unknown)\)" "$out/version.txt" ||
  { cat "$out/version.txt" >&2; fail "--version: no 'frame $version (git REV)' line"; }
grep -q "^backends: .*cpu" "$out/version.txt" || fail "--version does not list cpu"

expect_usage_error "unknown command 'frobnicate' (commands: " frobnicate
expect_usage_error "Subcommands:" 
expect_usage_error "^frame run: --threads: expected an integer from 0 to 4096, got 'abc'" run --threads abc
# CLI11's own parse errors carry the "frame VERB: " prefix of every other error.
expect_usage_error "^frame run: The following argument was not expected: --bogus" run --bogus
expect_usage_error "^frame inspect: model is required" inspect
expect_usage_error "^frame backends: --opencl-device: expected a non-empty device name" backends --opencl-device ""
expect_usage_error "expected an integer from 1 to 1000000, got '0'" run --repeat 0
# Bad option values exit 2 naming the option, for every verb that takes them.
expect_usage_error "\-\-max-memory: byte size '' is not a number" run --max-memory ""
expect_usage_error "\-\-max-memory: byte size '1.5G'" inspect models/none.onnx --max-memory 1.5G
expect_usage_error "\-\-backend: unknown backend 'nope'" run --backend nope
expect_usage_error "\-\-shape 'x=-1,3': dim '-1'" run --shape x=-1,3
expect_usage_error "\-\-input 'x': expected NAME=FILE.npy" run --input x
expect_usage_error "\-\-shape 'x=a': dim 'a'" viz none.onnx -o "$out/x.svg" --shape x=a
# A size limit not given is not blamed on --max-memory ("raise it with", not "(--max-memory)").
"$frame" ops --plugin "$out/none.so" > /dev/null 2> "$out/stderr.txt" && fail "ops --plugin none.so"
grep -q "plugin '$out/none.so': no such file" "$out/stderr.txt" || fail "ops --plugin: no message"

# Kernel counts per backend, counted independently from the registry JSON of `frame ops`.
"$frame" backends --json > "$out/backends.json"
"$frame" ops --json > "$out/ops.json"
/usr/bin/python3 - "$out/backends.json" "$out/ops.json" <<'PY' || fail "frame backends disagrees with frame ops --json"
import collections, json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))}
kernels = json.load(open(sys.argv[2]))["kernels"]
counts = collections.Counter(k["backend"] for k in kernels)
assert rows["cpu"]["status"] == "available" and rows["cpu"]["kind"] == "per-kernel", rows["cpu"]
for name, n in counts.items():
    assert rows[name]["kernels"] == n, (name, rows[name], n)
for name in ("cuda", "intel_gpu", "intel_npu"):
    assert name in rows, name
print("backends:", {k: (v["kernels"], v["status"]) for k, v in rows.items()})
PY

"$frame" run --output-dir "$out/o" > "$out/run.txt"
for f in "$out"/o/*.npy; do
  grep -q "^wrote $f$" "$out/run.txt" || { cat "$out/run.txt" >&2; fail "no 'wrote $f' line"; }
done
[ "$(grep -c '^wrote ' "$out/run.txt")" -eq "$(ls "$out"/o/*.npy | wc -l)" ] ||
  fail "wrote lines and files differ"
# Outputs 'a/b' and 'a_b' sanitize to the same stem: distinct files, each mapping printed;
# the values by construction (Identity of x, Neg of x).
/usr/bin/python3 - "$out/collide.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("a/b", "a_b")]
nodes = [helper.make_node("Relu", ["x"], ["a/b"]), helper.make_node("Neg", ["x"], ["a_b"])]
save(helper.make_model(helper.make_graph(nodes, "g", [x], outs),
                       opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
/usr/bin/python3 -c "import numpy as np; np.save('$out/x.npy', np.array([-1, 2, -3], np.float32))"
"$frame" run "$out/collide.onnx" --input x="$out/x.npy" --output-dir "$out/c" > "$out/collide.txt"
grep -q "^wrote $out/c/a_b.npy (output 'a/b')$" "$out/collide.txt" || { cat "$out/collide.txt" >&2; fail "collide: a/b"; }
grep -q "^wrote $out/c/a_b_2.npy (output 'a_b')$" "$out/collide.txt" || fail "collide: a_b"
/usr/bin/python3 -c "
import numpy as np
assert np.array_equal(np.load('$out/c/a_b.npy'), [0, 2, 0]), 'a/b'
assert np.array_equal(np.load('$out/c/a_b_2.npy'), [1, -2, 3]), 'a_b'" || fail "collide: values"
# A write that fails only when the file is closed (/dev/full) is an error naming the file.
mkdir -p "$out/full"; ln -sf /dev/full "$out/full/probs.npy"
rc=0; "$frame" run --output-dir "$out/full" > /dev/null 2> "$out/stderr.txt" || rc=$?
[ "$rc" -eq 1 ] || fail "--output-dir on /dev/full exited $rc, expected 1"
grep -Eq "(writing|write to) '$out/full/probs.npy' failed" "$out/stderr.txt" || { cat "$out/stderr.txt" >&2; fail "/dev/full: no message"; }
ln -sf /dev/full "$out/prof.json"
rc=0; "$frame" run --profile-json "$out/prof.json" > /dev/null 2> "$out/stderr.txt" || rc=$?
[ "$rc" -eq 1 ] || fail "--profile-json on /dev/full exited $rc, expected 1"
# A Loop body that does not compile is named once ("body 'body': body 'body'" said it twice).
/usr/bin/python3 - "$out/loop_body.onnx" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
shape = numpy_helper.from_array(np.array([2147483648, 4], np.int64), "shape")
body = helper.make_graph(
    [helper.make_node("Identity", ["c"], ["c_out"]),
     helper.make_node("Constant", [], ["s"], value=shape),
     helper.make_node("ConstantOfShape", ["s"], ["big"], name="constant_of_shape"),
     helper.make_node("ReduceSum", ["big"], ["sum"], keepdims=0)],
    "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("sum", TensorProto.FLOAT, [])])
m = numpy_helper.from_array(np.array(2, np.int64), "m")
c = numpy_helper.from_array(np.array(True), "cond")
g = helper.make_graph([helper.make_node("Loop", ["m", "cond"], ["y"], name="loop", body=body)], "g",
                      [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [m, c])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
rc=0; "$frame" run "$out/loop_body.onnx" > /dev/null 2> "$out/stderr.txt" || rc=$?
[ "$rc" -eq 1 ] || fail "loop_body.onnx exited $rc, expected 1"
grep -q "node 'loop' (loop) body 'body': pass 'shape-inference': node 'constant_of_shape'" \
  "$out/stderr.txt" || { cat "$out/stderr.txt" >&2; fail "loop body error"; }
# frame inspect says what import did: Identity of an initializer becomes an alias (no node),
# Identity of an activation stays a node (counts known by construction).
/usr/bin/python3 - "$out/ident.onnx" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
nodes = [helper.make_node("Identity", ["w"], ["w2"]), helper.make_node("Add", ["x", "w2"], ["b"]),
         helper.make_node("Identity", ["b"], ["y"])]
save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]),
                       opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
"$frame" inspect "$out/ident.onnx" > "$out/inspect.txt"
grep -q "^import: 3 ONNX nodes -> 2 frame nodes; 1 Identity nodes of constants became aliases" \
  "$out/inspect.txt" ||
  { cat "$out/inspect.txt" >&2; fail "frame inspect does not report the Identity nodes import dropped"; }
echo "cli_usage: ok"
