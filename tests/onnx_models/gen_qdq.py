#!/usr/bin/python3
"""QDQ-quantized ResNets and a numpy reference of their QDQ arithmetic (issue 11).

  gen_qdq.py --out DIR [--resnet18 MODELS_DIR]
                          writes DIR/model.onnx (the QDQ model), DIR/in_input.npy (its test
                          input), DIR/ref_output.npy (the numpy reference of the QDQ graph),
                          DIR/fp32_output.npy (the fp32 graph's) and DIR/meta.json (names,
                          conv count, output tolerance)
  gen_qdq.py --check DIR --frame FRAME --out-dir OUT
                          runs DIR/model.onnx through `FRAME run` on the default backend chain
                          and on cpu, compares (both options together: generate, then check)

Two models, quantized alike by scripts/qdq_quantize.py (insert_qdq): u8 per-tensor activations
on every Conv X and Add input, calibrated on fixed inputs by the fp32 numpy reference below;
int8 per-output-channel symmetric weights (axis 0). Every u8 tensor produced by a
QuantizeLinear is also a graph output, so the integer side is checked tensor by tensor; the
model's first output is the float output.
- The toy (qdq_cli, generated at build time): a small ResNet with the layers of ResNet-18
  (conv3x3+relu, maxpool, a basic block with an identity residual add, a strided block with a
  1x1 downsample conv, global average pool, flatten, gemm), batch 2 at 32x32, 6 convs,
  calibrated on three inputs; its test input is wider than the calibrated range, so
  saturation is exercised.
- --resnet18 (qdq_resnet18_cli, generated at test time in a few seconds): the torchvision
  ResNet-18 export of scripts/export_models.py (MODELS_DIR/resnet18.onnx, exported there when
  missing; batch 1, 224x224, 20 convs with strides 1/2, pads 0/1/3, 7x7/3x3/1x1 kernels, bias
  Identity nodes), calibrated on RESNET_CALIB fixed N(0, 1) inputs and fed the export's own
  test input.

The reference runs the QDQ graph with ONNX semantics (operator spec sections QuantizeLinear,
DequantizeLinear, Conv, ...): DequantizeLinear (q - zp) * scale in float32; Conv (im2col and
one float64 matmul per group, any stride, pad, dilation and group) and Gemm in float64 on the
dequantized values, rounded once to float32 (their exact values up to one float32 rounding);
QuantizeLinear saturate(rint(x / scale) + zp), rint = round half to even; Relu, Add, MaxPool,
GlobalAveragePool, Flatten and Identity as specified. Attribute values it does not implement
(auto_pad, ceil_mode, MaxPool dilations, other ranks) stop it with an error.

Tolerances, checked by --check:
- u8 tensors: every element within 1 quantization step of the reference, and at most 1 % of
  the elements of any tensor off by that step. A step can differ where the exact pre-quantize
  value lies within float rounding of a .5 boundary: the cpu backend's float conv sums in
  another order than the reference, and the onednn qlinear_conv accumulates in int32 exactly
  but requantizes acc * (xs * ws / ys) + bias / ys in float32, whose rounding moves a value
  sitting on a boundary by one step (docs/backends/onednn.md#quantized-inference).
  Each quantized tensor is compared with the reference computed from the checked run's own
  quantized inputs, so a step that differs upstream does not count again downstream.
- float output, from the run's own quantized tensors (the float tail: dequantize, add, relu,
  pool, gemm): within 1e-5 * max(1, max |output|), float32 rounding only.
- float output end to end (upstream steps included): |frame - ref| <= 0.03 * (s_a + s_b) *
  max_k sum_c |W_gemm[k, c]|, the change of the output when 3 % of the elements of each of the
  last Add's two u8 inputs (scales s_a, s_b) move by one step, carried through average pool and
  gemm. It is well below the QDQ-vs-fp32 difference, which --check prints.
- On onednn (when built) every conv must run as qlinear_conv (the int8 path under test; the
  stem conv's QuantizeLinear sits after the maxpool and moves before it, which is exact since
  quantization is monotonic).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
from qdq_quantize import insert_qdq, quantized_inputs  # noqa: E402

BATCH, SIZE, CLASSES = 2, 32, 10
RESNET_CALIB = 2  # calibration inputs of the ResNet-18 model


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def conv(x, w, b, strides, pads, dilations, group):
    """2-d NCHW Conv (any group, stride, pad, dilation) in float64: im2col + one matmul per
    group, rounded once to float32."""
    n, c, _, _ = x.shape
    m, cg, kh, kw = w.shape
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    eh, ew = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    oh = (x.shape[2] - eh) // strides[0] + 1
    ow = (x.shape[3] - ew) // strides[1] + 1
    cols = np.empty((n, c, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            r, s = i * dilations[0], j * dilations[1]
            cols[:, :, i, j] = x[:, :, r:r + strides[0] * (oh - 1) + 1:strides[0],
                                 s:s + strides[1] * (ow - 1) + 1:strides[1]]
    cols = cols.reshape(n, group, cg * kh * kw, oh * ow)
    wg = w.astype(np.float64).reshape(1, group, m // group, cg * kh * kw)
    y = np.matmul(wg, cols).reshape(n, m, oh, ow)
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
            y = np.maximum(y, x[:, :, i:i + strides[0] * (oh - 1) + 1:strides[0],
                                j:j + strides[1] * (ow - 1) + 1:strides[1]])
    return y


def per_axis(p, x, axis):
    """A scale / zero point broadcast against x along `axis` (per-tensor when one element)."""
    if p.size == 1:
        return p.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return p.reshape(shape)


def run_reference(model, feeds, seen=None):
    """Every value of `model` (Conv, Relu, Add, MaxPool, GlobalAveragePool, Flatten, Gemm,
    Identity, QuantizeLinear, DequantizeLinear; an attribute value outside what is implemented
    here is an error, never ignored). With `seen` (name -> array): each QuantizeLinear output
    named there is compared by seen_check(name, reference) and then replaced by seen[name], so
    every quantized tensor is checked against the reference computed from the checked run's own
    quantized inputs."""
    env = dict(feeds)
    env.update({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    for n in model.graph.node:
        x = [env[t] if t else None for t in n.input]
        op = n.op_type
        if op in ("Conv", "MaxPool"):
            rank = x[0].ndim - 2
            if rank != 2 or attr(n, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                raise SystemExit(f"reference: {n.name} ({op}): only 2-d, explicit pads")
            strides = attr(n, "strides", [1, 1])
            pads = attr(n, "pads", [0, 0, 0, 0])
            dilations = attr(n, "dilations", [1, 1])
        if op == "Conv":
            y = conv(x[0], x[1], x[2] if len(x) > 2 else None, strides, pads, dilations,
                     attr(n, "group", 1))
        elif op == "MaxPool":
            if list(dilations) != [1, 1] or attr(n, "ceil_mode", 0) != 0 or len(n.output) > 1:
                raise SystemExit(f"reference: {n.name} (MaxPool): dilations, ceil_mode or "
                                 "Indices not implemented")
            y = maxpool(x[0], attr(n, "kernel_shape", None), strides, pads)
        elif op == "Relu":
            y = np.maximum(x[0], np.float32(0))
        elif op == "Identity":
            y = x[0]
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "GlobalAveragePool":
            axes = tuple(range(2, x[0].ndim))
            y = x[0].astype(np.float64).mean(axis=axes, keepdims=True).astype(np.float32)
        elif op == "Flatten":
            axis = attr(n, "axis", 1) % max(x[0].ndim, 1)
            y = x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)
        elif op == "Gemm":
            a = x[0].astype(np.float64)
            w = x[1].astype(np.float64)
            a = a.T if attr(n, "transA", 0) else a
            w = w.T if attr(n, "transB", 0) else w
            y = attr(n, "alpha", 1.0) * (a @ w)
            if len(x) > 2 and x[2] is not None:
                y = y + attr(n, "beta", 1.0) * x[2].astype(np.float64)
            y = y.astype(np.float32)
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
            raise SystemExit(f"reference: unsupported op {op} ({n.name})")
        if seen is not None and op == "QuantizeLinear" and n.output[0] in seen:
            seen_check(n.output[0], seen[n.output[0]], y)
            y = seen[n.output[0]]
        env[n.output[0]] = y
    return env


CHECKS = []


def seen_check(name, got, ref):
    """Records whether `got` is within the integer tolerance of `ref` (module docstring)."""
    if got.dtype != ref.dtype or got.shape != ref.shape:
        CHECKS.append((name, False, f"{got.dtype}{got.shape} vs {ref.dtype}{ref.shape}", 1.0))
        return
    diff = np.abs(got.astype(np.int32) - ref.astype(np.int32))
    off = int((diff != 0).sum())
    ok = diff.max() <= 1 and off <= 0.01 * diff.size
    CHECKS.append((name, ok, f"{off}/{diff.size} elements off, max {diff.max()} step(s)",
                   off / diff.size))


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


def graph_input(model):
    inits = {i.name for i in model.graph.initializer}
    return next(i.name for i in model.graph.input if i.name not in inits)


def export_resnet18(models_dir):
    """DIR/resnet18.onnx and its test input, exported by scripts/export_models.py when missing
    (the model_resnet18 test shares the directory)."""
    path = os.path.join(models_dir, "resnet18.onnx")
    x = os.path.join(models_dir, "resnet18.input.npy")
    if not (os.path.exists(path) and os.path.exists(x)):
        subprocess.run([sys.executable, os.path.join(SCRIPTS, "export_models.py"), "--out",
                        models_dir, "--only", "resnet18"], check=True)
    return path, x


def generate(out, fp32_path=None, input_path=None):
    """Writes the QDQ model, its test input and the references into `out` (module docstring):
    the toy model, or the fp32 model at `fp32_path` fed `input_path`."""
    rng = np.random.default_rng(11)
    if fp32_path is None:
        model = build_fp32(rng)
        calib = [rng.standard_normal((BATCH, 3, SIZE, SIZE)).astype(np.float32)
                 for _ in range(3)]
        # The test input is not a calibration input: its range exceeds the calibrated one in
        # places, so saturation is exercised too.
        x = (rng.standard_normal((BATCH, 3, SIZE, SIZE)) * 1.2).astype(np.float32)
    else:
        model = onnx.load(fp32_path)
        x = np.load(input_path).astype(np.float32)
        # Fixed N(0, 1) calibration inputs, the distribution of the export's own test input
        # (torch.randn), which is not one of them.
        calib = [rng.standard_normal(x.shape).astype(np.float32) for _ in range(RESNET_CALIB)]
    in_name, out_name = graph_input(model), model.graph.output[0].name
    tensors = quantized_inputs(model)
    lo = np.full(len(tensors), np.inf)
    hi = np.full(len(tensors), -np.inf)
    for c in calib:
        env = run_reference(model, {in_name: c})
        for i, t in enumerate(tensors):
            lo[i] = min(lo[i], float(env[t].min()))
            hi[i] = max(hi[i], float(env[t].max()))
    fp32_out = run_reference(model, {in_name: x})[out_name]
    insert_qdq(model, tensors, lo, hi)
    q_outputs = [n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"]
    env = run_reference(model, {in_name: x})
    for name in q_outputs:
        model.graph.output.append(
            helper.make_tensor_value_info(name, TensorProto.UINT8, env[name].shape))
    onnx.checker.check_model(model)
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "in_input.npy"), x)
    np.save(os.path.join(out, "ref_output.npy"), env[out_name])
    if len({safe(n) for n in q_outputs + [out_name]}) != len(q_outputs) + 1:
        raise SystemExit("two tensors map to the same output file name")
    np.save(os.path.join(out, "fp32_output.npy"), fp32_out)
    # The output bound: 3 % of each input of the last Add one step off, through the average
    # pool and the gemm (its largest row sum of |W|).
    add = [n for n in model.graph.node if n.op_type == "Add"][-1]
    gemm = [n for n in model.graph.node if n.op_type == "Gemm"][-1]
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    steps = sum(float(inits[f"{t[:-3]}_scale"]) for t in add.input)
    w = np.abs(inits[gemm.input[1]]).astype(np.float64)
    row = w.sum(axis=1 if attr(gemm, "transB", 0) else 0).max()
    meta = {"input": in_name, "output": out_name, "quantized": q_outputs,
            "convs": sum(1 for n in model.graph.node if n.op_type == "Conv"),
            "output_atol": 0.03 * steps * float(row)}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(out, "stamp"), "w") as f:
        f.write(f"{len(q_outputs)} quantized tensors\n")


def safe(name):
    """A file name for a tensor name (exports name values like /layer1/Relu_output_0)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def run_frame(frame, model, args):
    return subprocess.run([frame, "run", model] + args, check=True, capture_output=True,
                          text=True).stdout


def cpu_has_vnni():
    """AVX512_VNNI or AVX_VNNI in /proc/cpuinfo: only then does onednn run int8 convolutions
    (without VNNI oneDNN's int8 sums saturate; docs/backends/onednn.md, "int8 without VNNI")."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def check(data, frame, out_dir):
    failures = 0
    with open(os.path.join(data, "meta.json")) as f:
        meta = json.load(f)
    q_names = meta["quantized"]
    atol = meta["output_atol"]
    ref_out = np.load(os.path.join(data, "ref_output.npy"))
    fp32 = np.load(os.path.join(data, "fp32_output.npy"))
    scale = float(np.abs(fp32).max())
    print(f"reference QDQ output vs fp32 output: max abs {np.abs(ref_out - fp32).max():.4g} "
          f"(largest |fp32| {scale:.4g}), top-1 "
          f"{'same' if (ref_out.argmax(-1) == fp32.argmax(-1)).all() else 'differs'}")
    model_path = os.path.join(data, "model.onnx")
    model = onnx.load(model_path)
    x = np.load(os.path.join(data, "in_input.npy"))
    feed = ["--input", f"{meta['input']}={os.path.join(data, 'in_input.npy')}"]
    for backend in ("auto", "cpu"):
        dest = os.path.join(out_dir, backend)
        listing = run_frame(frame, model_path,
                            feed + ["--backend", backend, "--output-dir", dest, "--kernels"])
        if backend == "auto" and "onednn" in listing.split("backends:")[1].splitlines()[0]:
            n_int8 = sum(1 for line in listing.splitlines()
                         if line.split()[1:3] == ["qlinear_conv", "onednn"])
            want = meta["convs"] if cpu_has_vnni() else 0
            print(f"[{backend}] {n_int8} qlinear_conv nodes on onednn ({want} expected"
                  f"{'' if want else ': no VNNI on this CPU'})")
            failures += n_int8 != want
        seen = {name: np.load(os.path.join(dest, f"{safe(name)}.npy")) for name in q_names}
        CHECKS.clear()
        env = run_reference(model, {meta["input"]: x}, seen)
        bad = [c for c in CHECKS if not c[1]]
        worst = max((c[3] for c in CHECKS), default=0)
        # Large models: only the tensors with an element off.
        shown = CHECKS if len(CHECKS) <= 16 else [c for c in CHECKS if c[3] > 0 or not c[1]]
        for name, ok, what, _ in shown:
            print(f"[{backend}] {name}: {what}: {'ok' if ok else 'MISMATCH'}")
        print(f"[{backend}] {len(CHECKS) - len(bad)} of {len(q_names)} quantized tensors "
              f"within tolerance (largest share of a tensor off: {worst:.3%})")
        failures += len(bad)
        if len(CHECKS) != len(q_names):
            print(f"[{backend}] only {len(CHECKS)} of {len(q_names)} quantized tensors checked")
            failures += 1
        got = np.load(os.path.join(dest, f"{safe(meta['output'])}.npy"))
        # The float tail after the last quantized tensors, from the run's own tensors: only
        # float32 rounding separates frame from the float64 reference there.
        tail = env[meta["output"]]
        tail_tol = 1e-5 * max(1.0, float(np.abs(tail).max()))
        err = float(np.abs(got - tail).max())
        ok = err <= tail_tol
        failures += not ok
        print(f"[{backend}] output vs the reference from the run's quantized tensors: max abs "
              f"{err:.4g} (atol {tail_tol:.4g}): {'ok' if ok else 'MISMATCH'}")
        err = float(np.abs(got - ref_out).max())
        ok = err <= atol
        failures += not ok
        print(f"[{backend}] output end to end: max abs error {err:.4g} (atol {atol:.4g}): "
              f"{'ok' if ok else 'MISMATCH'}")
    if len(q_names) < 5:
        print(f"only {len(q_names)} quantized tensors in {data}")
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write the model and reference here")
    ap.add_argument("--resnet18", metavar="MODELS_DIR",
                    help="with --out: quantize MODELS_DIR/resnet18.onnx (exported by "
                    "scripts/export_models.py when missing) instead of the toy model")
    ap.add_argument("--check", help="a directory written by --out to run and compare")
    ap.add_argument("--frame", help="the frame CLI (with --check)")
    ap.add_argument("--out-dir", help="where frame's outputs go (with --check)")
    args = ap.parse_args()
    if args.out:
        if args.resnet18:
            generate(args.out, *export_resnet18(args.resnet18))
        else:
            generate(args.out)
    if args.check:
        failures = check(args.check, args.frame, args.out_dir)
        print("qdq cli:", "ok" if failures == 0 else f"{failures} failure(s)")
        sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
