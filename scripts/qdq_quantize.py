#!/usr/bin/env python3
"""Inserts QuantizeLinear/DequantizeLinear pairs into an fp32 ONNX model (the QDQ format of a
statically quantized model; run with /usr/bin/python3, which has numpy and onnx).

Activations: every input of Conv and Add nodes gets Q -> DQ with a u8 per-tensor scale and zero
point calibrated on the given inputs (min/max over all of them, the range widened to hold 0:
scale = (max - min) / 255, zero point = round(-min / scale)). Weights: each Conv's W becomes an
int8 initializer with a per-output-channel symmetric scale max|W[m]| / 127 and a DequantizeLinear
(axis 0); biases stay float. Calibration runs the model with frame's cpu backend (the `frame`
binary given by --frame), so no other runtime is needed.

  scripts/qdq_quantize.py --model resnet18.onnx --out resnet18_qdq.onnx \\
      --calib a.npy b.npy --frame build/frame
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper


def quantized_inputs(model):
    """Activation tensors to quantize: inputs of Conv (X only) and Add, in first-use order."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for n in model.graph.node:
        names = n.input[:1] if n.op_type == "Conv" else n.input if n.op_type == "Add" else []
        for t in names:
            if t and t not in inits and t not in out:
                out.append(t)
    return out


def calibrate(model, tensors, calib, frame):
    """Per tensor (min, max) over the calibration inputs, read through `frame run`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i, t in enumerate(tensors):
        m.graph.node.append(helper.make_node("Identity", [t], [f"calib_{i}"]))
        m.graph.output.append(helper.make_empty_tensor_value_info(f"calib_{i}"))
    lo = np.full(len(tensors), np.inf)
    hi = np.full(len(tensors), -np.inf)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "calib.onnx")
        onnx.save(m, path)
        name = model.graph.input[0].name
        for k, f in enumerate(calib):
            od = os.path.join(d, f"out{k}")
            subprocess.run([frame, "run", path, "--backend", "cpu", "--input", f"{name}={f}",
                            "--output-dir", od], check=True, stdout=subprocess.DEVNULL)
            for i in range(len(tensors)):
                v = np.load(os.path.join(od, f"calib_{i}.npy"))
                lo[i] = min(lo[i], float(v.min()))
                hi[i] = max(hi[i], float(v.max()))
    return lo, hi


def u8_params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    return scale, zp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--calib", nargs="+", required=True, help=".npy inputs for calibration")
    ap.add_argument("--frame", required=True, help="path of the frame CLI binary")
    args = ap.parse_args()

    model = onnx.load(args.model)
    tensors = quantized_inputs(model)
    lo, hi = calibrate(model, tensors, args.calib, args.frame)
    insert_qdq(model, tensors, lo, hi)
    onnx.save(model, args.out)
    print(f"{args.out}: {len(tensors)} activations quantized")


def insert_qdq(model, tensors, lo, hi):
    """Rewrites `model` in place: Q -> DQ on each of `tensors` (calibrated range lo[i]..hi[i]),
    int8 per-channel weights behind a DequantizeLinear for every Conv with a constant W."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    new_inits, nodes, renamed = [], [], {}
    for i, t in enumerate(tensors):
        s, z = u8_params(lo[i], hi[i])
        new_inits += [numpy_helper.from_array(np.array(s, np.float32), f"{t}_scale"),
                      numpy_helper.from_array(np.array(z, np.uint8), f"{t}_zp")]
        nodes += [helper.make_node("QuantizeLinear", [t, f"{t}_scale", f"{t}_zp"], [f"{t}_q"]),
                  helper.make_node("DequantizeLinear", [f"{t}_q", f"{t}_scale", f"{t}_zp"],
                                   [f"{t}_dq"])]
        renamed[t] = f"{t}_dq"
    weights = {}
    for n in g.node:
        if n.op_type == "Conv" and len(n.input) > 1 and n.input[1] in inits:
            weights[n.input[1]] = True
    for w in weights:
        wf = numpy_helper.to_array(inits[w]).astype(np.float32)
        amax = np.abs(wf.reshape(wf.shape[0], -1)).max(axis=1)
        ws = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        wq = np.clip(np.rint(wf / ws.reshape((-1,) + (1,) * (wf.ndim - 1))), -127, 127)
        new_inits += [numpy_helper.from_array(wq.astype(np.int8), f"{w}_int8"),
                      numpy_helper.from_array(ws, f"{w}_scale"),
                      numpy_helper.from_array(np.zeros(wf.shape[0], np.int8), f"{w}_zp")]
        nodes.append(helper.make_node("DequantizeLinear",
                                      [f"{w}_int8", f"{w}_scale", f"{w}_zp"], [f"{w}_dq"], axis=0))
    # Rewire the quantized ops to the dequantized values, then order: each Q/DQ right after
    # its producer (a topological order: the originals are already topologically sorted).
    for n in g.node:
        if n.op_type in ("Conv", "Add"):
            for k, t in enumerate(n.input):
                if n.op_type == "Conv" and k == 1 and t in weights:
                    n.input[k] = f"{t}_dq"
                elif (n.op_type == "Add" or k == 0) and t in renamed:
                    n.input[k] = renamed[t]
    by_src = {}
    for q in nodes:
        by_src.setdefault(q.input[0], []).append(q)
    ordered = []

    def emit(node):
        ordered.append(node)
        for o in node.output:
            for q in by_src.pop(o, []):
                emit(q)

    sources = set(inits) | {i.name for i in new_inits} | {i.name for i in g.input}
    for src in list(by_src):
        if src in sources:
            for q in by_src.pop(src, []):
                emit(q)
    for n in list(g.node):
        emit(n)
    del g.node[:]
    g.node.extend(ordered)
    weight_names = set(weights)
    kept = [i for i in g.initializer if i.name not in weight_names]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    if max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) < 13:
        raise SystemExit("per-channel DequantizeLinear (axis) needs opset >= 13")
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    main()
