#!/usr/bin/python3
"""A QDQ-quantized residual CNN and a numpy reference of its QDQ arithmetic (issue 11).

  gen_qdq.py --out DIR                       writes DIR/model.onnx, DIR/in_input.npy and
                                             DIR/ref_<output>.npy (the numpy reference)
  gen_qdq.py --check DIR --frame FRAME --out-dir OUT
                                             runs DIR/model.onnx through `FRAME run` on the
                                             default backend chain and on cpu, compares

The model is a small ResNet (the layers of ResNet-18 at toy size, generated in well under a
second instead of a torch export): conv3x3+relu, maxpool, a basic block with an identity
residual add, a strided block with a 1x1 downsample conv, global average pool, flatten, gemm.
scripts/qdq_quantize.py (insert_qdq) quantizes it exactly as it quantizes the ResNet-18 export:
u8 per-tensor activations on every Conv X and Add input, calibrated here on three fixed inputs
by the fp32 numpy reference; int8 per-output-channel symmetric weights (axis 0). Every u8
tensor produced by a QuantizeLinear is also a graph output, so the integer side is checked
tensor by tensor; `logits` is the float output.

The reference runs the QDQ graph with ONNX semantics (operator spec sections QuantizeLinear,
DequantizeLinear, Conv): DequantizeLinear (q - zp) * scale in float32; Conv in float64 on the
dequantized values, rounded once to float32 (its exact value up to one float32 rounding);
QuantizeLinear saturate(rint(x / scale) + zp), rint = round half to even.

Tolerances, checked by --check:
- u8 tensors: every element within 1 quantization step of the reference, and at most 1 % of
  the elements of any tensor off by that step. A step can differ where the exact pre-quantize
  value lies within float rounding of a .5 boundary: the cpu backend's float conv sums in
  another order than the reference, and the onednn qlinear_conv accumulates in int32 exactly
  but requantizes acc * (xs * ws / ys) + bias / ys in float32, whose rounding moves a value
  sitting on a boundary by one step (docs/backends/onednn.md#quantized-inference).
  Each quantized tensor is compared with the reference computed from the checked run's own
  quantized inputs, so a step that differs upstream does not count again downstream.
- logits (end to end, upstream steps included): |frame - ref| <= 0.03 * (s_a + s_b) *
  max_k sum_c |W_gemm[k, c]|, the change of the output when 3 % of the elements of each of the
  last Add's two u8 inputs (scales s_a, s_b) move by one step, carried through average pool and
  gemm. It is well below the QDQ-vs-fp32 difference, which --check prints.
- On onednn (when built) all six convs must run as qlinear_conv (the int8 path under test; the
  stem conv's QuantizeLinear sits after the maxpool and moves before it, which is exact since
  quantization is monotonic).
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
from qdq_quantize import insert_qdq, quantized_inputs  # noqa: E402

BATCH, SIZE, CLASSES = 2, 32, 10


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def conv(x, w, b, strides, pads):
    """NCHW conv, group 1, dilation 1, in float64 (im2col)."""
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (x.shape[2] - kh) // strides[0] + 1
    ow = (x.shape[3] - kw) // strides[1] + 1
    cols = np.empty((n, c, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = x[:, :, i:i + strides[0] * oh:strides[0],
                                 j:j + strides[1] * ow:strides[1]]
    y = np.einsum("nckhij,mckh->nmij", cols.reshape(n, c, kh, kw, oh, ow),
                  w.astype(np.float64))
    if b is not None:
        y += b.astype(np.float64).reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def maxpool(x, k, strides, pads):
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
               constant_values=-np.inf)
    oh = (x.shape[2] - k[0]) // strides[0] + 1
    ow = (x.shape[3] - k[1]) // strides[1] + 1
    y = np.full(x.shape[:2] + (oh, ow), -np.inf, np.float32)
    for i in range(k[0]):
        for j in range(k[1]):
            y = np.maximum(y, x[:, :, i:i + strides[0] * oh:strides[0],
                                j:j + strides[1] * ow:strides[1]])
    return y


def per_axis(p, x, axis):
    """A scale / zero point broadcast against x along `axis` (per-tensor when one element)."""
    if p.size == 1:
        return p.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return p.reshape(shape)


def run_reference(model, feeds, seen=None):
    """Every value of `model` (Conv/Relu/Add/MaxPool/GlobalAveragePool/Flatten/Gemm/QDQ).
    With `seen` (name -> array): each QuantizeLinear output named there is compared by
    seen_check(name, reference) and then replaced by seen[name], so every quantized tensor is
    checked against the reference computed from the checked run's own quantized inputs."""
    env = dict(feeds)
    env.update({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    for n in model.graph.node:
        x = [env[t] if t else None for t in n.input]
        op = n.op_type
        if op == "Conv":
            y = conv(x[0], x[1], x[2] if len(x) > 2 else None, attr(n, "strides", [1, 1]),
                     attr(n, "pads", [0, 0, 0, 0]))
        elif op == "Relu":
            y = np.maximum(x[0], np.float32(0))
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "MaxPool":
            y = maxpool(x[0], attr(n, "kernel_shape", None), attr(n, "strides", [1, 1]),
                        attr(n, "pads", [0, 0, 0, 0]))
        elif op == "GlobalAveragePool":
            y = x[0].astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32)
        elif op == "Flatten":
            y = x[0].reshape(x[0].shape[0], -1)
        elif op == "Gemm":
            y = (x[0].astype(np.float64) @ x[1].astype(np.float64).T + x[2]).astype(np.float32)
        elif op == "QuantizeLinear":
            s = per_axis(x[1], x[0], attr(n, "axis", 1))
            z = per_axis(x[2], x[0], attr(n, "axis", 1)).astype(np.float32)
            info = np.iinfo(x[2].dtype)
            y = np.clip(np.rint(x[0] / s) + z, info.min, info.max).astype(x[2].dtype)
        elif op == "DequantizeLinear":
            s = per_axis(x[1], x[0], attr(n, "axis", 1))
            z = per_axis(x[2], x[0], attr(n, "axis", 1)).astype(np.int32)
            y = ((x[0].astype(np.int32) - z).astype(np.float32) * s).astype(np.float32)
        else:
            raise SystemExit(f"reference: unsupported op {op}")
        if seen is not None and op == "QuantizeLinear" and n.output[0] in seen:
            seen_check(n.output[0], seen[n.output[0]], y)
            y = seen[n.output[0]]
        env[n.output[0]] = y
    return env


CHECKS = []


def seen_check(name, got, ref):
    """Records whether `got` is within the integer tolerance of `ref` (module docstring)."""
    if got.dtype != ref.dtype or got.shape != ref.shape:
        CHECKS.append((name, False, f"{got.dtype}{got.shape} vs {ref.dtype}{ref.shape}"))
        return
    diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
    off = int((diff != 0).sum())
    ok = diff.max() <= 1 and off <= 0.01 * diff.size
    CHECKS.append((name, ok, f"{off}/{diff.size} elements one step off, max {diff.max()} "
                             "step(s)"))


def build_fp32(rng):
    inits, nodes = [], []

    def conv_node(name, x, cin, cout, k, stride):
        fan_in = cin * k * k
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, f"{name}.weight"),
                      numpy_helper.from_array(b, f"{name}.bias")])
        p = k // 2
        nodes.append(helper.make_node("Conv", [x, f"{name}.weight", f"{name}.bias"], [name],
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[p, p, p, p]))
        return name

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [f"{x}_relu"]))
        return f"{x}_relu"

    t = relu(conv_node("stem", "input", 3, 16, 3, 1))
    nodes.append(helper.make_node("MaxPool", [t], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    t = relu(conv_node("b1c1", "pool", 16, 16, 3, 1))
    t = conv_node("b1c2", t, 16, 16, 3, 1)
    nodes.append(helper.make_node("Add", [t, "pool"], ["b1add"]))
    b1 = relu("b1add")
    t = relu(conv_node("b2c1", b1, 16, 32, 3, 2))
    t = conv_node("b2c2", t, 32, 32, 3, 1)
    d = conv_node("b2down", b1, 16, 32, 1, 2)
    nodes.append(helper.make_node("Add", [t, d], ["b2add"]))
    t = relu("b2add")
    nodes.append(helper.make_node("GlobalAveragePool", [t], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    fw = (rng.standard_normal((CLASSES, 32)) * 0.2).astype(np.float32)
    fb = (rng.standard_normal(CLASSES) * 0.1).astype(np.float32)
    inits += [numpy_helper.from_array(fw, "fc.weight"), numpy_helper.from_array(fb, "fc.bias")]
    nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"],
                                  transB=1))
    graph = helper.make_graph(
        nodes, "qdq_resnet_toy",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [BATCH, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [BATCH, CLASSES])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def generate(out):
    rng = np.random.default_rng(11)
    model = build_fp32(rng)
    calib = [rng.standard_normal((BATCH, 3, SIZE, SIZE)).astype(np.float32) for _ in range(3)]
    # The test input is not a calibration input: its range exceeds the calibrated one in
    # places, so saturation is exercised too.
    x = (rng.standard_normal((BATCH, 3, SIZE, SIZE)) * 1.2).astype(np.float32)
    tensors = quantized_inputs(model)
    envs = [run_reference(model, {"input": c}) for c in calib]
    lo = np.array([min(float(e[t].min()) for e in envs) for t in tensors])
    hi = np.array([max(float(e[t].max()) for e in envs) for t in tensors])
    fp32_logits = run_reference(model, {"input": x})["logits"]
    insert_qdq(model, tensors, lo, hi)
    q_outputs = [n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"]
    env = run_reference(model, {"input": x})
    for name in q_outputs:
        model.graph.output.append(
            helper.make_tensor_value_info(name, TensorProto.UINT8, env[name].shape))
    onnx.checker.check_model(model)
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "in_input.npy"), x)
    for name in ["logits"] + q_outputs:
        np.save(os.path.join(out, f"ref_{name}.npy"), env[name])
    np.save(os.path.join(out, "fp32_logits.npy"), fp32_logits)
    # The logits bound: one step on each input of the last Add through pool and gemm.
    add = [n for n in model.graph.node if n.op_type == "Add"][-1]
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    steps = sum(float(inits[f"{t[:-3]}_scale"]) for t in add.input)
    bound = 0.03 * steps * float(np.abs(inits["fc.weight"]).sum(axis=1).max())
    np.save(os.path.join(out, "logits_atol.npy"), np.array(bound, np.float64))
    with open(os.path.join(out, "stamp"), "w") as f:
        f.write(f"{len(q_outputs)} quantized tensors\n")


def check(data, frame, out_dir):
    failures, runs = 0, 0
    q_names = sorted(f[4:-4] for f in os.listdir(data) if f.startswith("ref_") and
                     f != "ref_logits.npy")
    atol = float(np.load(os.path.join(data, "logits_atol.npy")))
    ref_logits = np.load(os.path.join(data, "ref_logits.npy"))
    fp32 = np.load(os.path.join(data, "fp32_logits.npy"))
    print(f"reference QDQ logits vs fp32 logits: max abs {np.abs(ref_logits - fp32).max():.4g}")
    for backend in ("auto", "cpu"):
        dest = os.path.join(out_dir, backend)
        subprocess.run([frame, "run", os.path.join(data, "model.onnx"), "--backend", backend,
                        "--input", f"input={os.path.join(data, 'in_input.npy')}",
                        "--output-dir", dest], check=True, stdout=subprocess.DEVNULL)
        runs += 1
        if backend == "auto":
            listing = subprocess.run(
                [frame, "run", os.path.join(data, "model.onnx"), "--kernels", "--input",
                 f"input={os.path.join(data, 'in_input.npy')}"], check=True,
                capture_output=True, text=True).stdout
            if "onednn" in listing.split("backends:")[1].splitlines()[0]:
                n_int8 = sum(1 for line in listing.splitlines()
                             if line.split()[1:3] == ["qlinear_conv", "onednn"])
                print(f"[{backend}] {n_int8} qlinear_conv nodes on onednn (6 expected)")
                failures += n_int8 != 6
        seen = {name: np.load(os.path.join(dest, f"{name}.npy")) for name in q_names}
        CHECKS.clear()
        run_reference(onnx.load(os.path.join(data, "model.onnx")),
                      {"input": np.load(os.path.join(data, "in_input.npy"))}, seen)
        for name, ok, what in CHECKS:
            failures += not ok
            print(f"[{backend}] {name}: {what}: {'ok' if ok else 'MISMATCH'}")
        if len(CHECKS) != len(q_names):
            print(f"[{backend}] only {len(CHECKS)} of {len(q_names)} quantized tensors checked")
            failures += 1
        got = np.load(os.path.join(dest, "logits.npy"))
        err = float(np.abs(got - ref_logits).max())
        ok = err <= atol
        failures += not ok
        print(f"[{backend}] logits: max abs error {err:.4g} (atol {atol:.4g}): "
              f"{'ok' if ok else 'MISMATCH'}")
    if len(q_names) < 5 or runs != 2:
        print(f"only {len(q_names)} quantized tensors in {data}")
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write the model and reference here")
    ap.add_argument("--check", help="a directory written by --out to run and compare")
    ap.add_argument("--frame", help="the frame CLI (with --check)")
    ap.add_argument("--out-dir", help="where frame's outputs go (with --check)")
    args = ap.parse_args()
    if args.out:
        generate(args.out)
    if args.check:
        failures = check(args.check, args.frame, args.out_dir)
        print("qdq cli:", "ok" if failures == 0 else f"{failures} failure(s)")
        sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
