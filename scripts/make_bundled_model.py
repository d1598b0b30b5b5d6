#!/usr/bin/python3
"""Builds the small CNN bundled with frame (`frame run` with no model) and its test data.

Writes, under --out (default: models/ at the repository root):
  small_cnn.onnx           opset 13, IR version 7, fixed-seed weights (about 8 KB)
  small_cnn.input.npy      fixed-seed input, f32[1,3,32,32]
  small_cnn.expected.npy   expected `probs`, f32[1,10], from a numpy reference of the same net

Graph: input f32[1,3,32,32] -> Conv(8,3x3,pad 1) -> BatchNormalization -> Relu
  -> MaxPool 2x2 -> Conv(16,3x3,pad 1) -> Relu -> GlobalAveragePool -> Flatten
  -> Gemm(16->10) -> Softmax(axis=1) -> probs f32[1,10].

The expected output is computed by a plain numpy implementation written from the
ONNX operator spec (not by an ONNX runtime); when torch is importable the same
network is also run in torch and both references must agree.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240611
OPSET = 13
IR_VERSION = 7  # IR 7 is the oldest that carries opset 13; onnx 1.12 accepts it.
BN_EPS = 1e-5
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_weights(rng):
    """Returns the fixed-seed parameters, He-scaled so activations stay O(1)."""
    f32 = np.float32
    w = {}
    w["conv1.w"] = (rng.standard_normal((8, 3, 3, 3)) * np.sqrt(2.0 / 27)).astype(f32)
    w["conv1.b"] = (rng.standard_normal(8) * 0.1).astype(f32)
    w["bn.scale"] = rng.uniform(0.5, 1.5, 8).astype(f32)
    w["bn.bias"] = (rng.standard_normal(8) * 0.1).astype(f32)
    w["bn.mean"] = (rng.standard_normal(8) * 0.1).astype(f32)
    w["bn.var"] = rng.uniform(0.5, 2.0, 8).astype(f32)
    w["conv2.w"] = (rng.standard_normal((16, 8, 3, 3)) * np.sqrt(2.0 / 72)).astype(f32)
    w["conv2.b"] = (rng.standard_normal(16) * 0.1).astype(f32)
    w["fc.w"] = (rng.standard_normal((10, 16)) * np.sqrt(1.0 / 16)).astype(f32)  # [out, in]
    w["fc.b"] = (rng.standard_normal(10) * 0.1).astype(f32)
    return w


def build_model(w):
    """Returns the ONNX ModelProto for the small CNN with weights w as initializers."""
    nodes = [
        helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                         ["b1"], name="bn1", epsilon=BN_EPS),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        inputs=[helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        outputs=[helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array(v, k) for k, v in w.items()])
    model = helper.make_model(graph, producer_name="frame-bundled",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    model.doc_string = "Small CNN bundled with frame; see scripts/make_bundled_model.py."
    return model


def conv2d_ref(x, wt, b, pad):
    """NCHW conv, stride 1, symmetric zero pad, computed in float64 (ONNX Conv)."""
    n, c, h, wd = x.shape
    m, _, kh, kw = wt.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, m, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + oh, j:j + ow]  # [n, c, oh, ow]
            y += np.einsum("nchw,mc->nmhw", patch, wt[:, :, i, j].astype(np.float64))
    return y + b.astype(np.float64)[None, :, None, None]


def numpy_reference(x, w):
    """The network evaluated op by op from the ONNX spec formulas, in float64."""
    ch = (None, slice(None), None, None)
    y = conv2d_ref(x, w["conv1.w"], w["conv1.b"], 1)
    y = (w["bn.scale"][ch] * (y - w["bn.mean"][ch]) / np.sqrt(w["bn.var"][ch].astype(np.float64)
                                                                + BN_EPS) + w["bn.bias"][ch])
    y = np.maximum(y, 0)
    n, c, h, wd = y.shape
    y = y.reshape(n, c, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    y = np.maximum(conv2d_ref(y, w["conv2.w"], w["conv2.b"], 1), 0)
    y = y.mean(axis=(2, 3))  # GlobalAveragePool + Flatten
    logits = y @ w["fc.w"].astype(np.float64).T + w["fc.b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def torch_reference(x, w):
    """The same network in torch eager; returns None when torch is unavailable."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    t = {k: torch.from_numpy(v) for k, v in w.items()}
    with torch.no_grad():
        y = F.conv2d(torch.from_numpy(x), t["conv1.w"], t["conv1.b"], padding=1)
        y = F.batch_norm(y, t["bn.mean"], t["bn.var"], t["bn.scale"], t["bn.bias"],
                         training=False, eps=BN_EPS)
        y = F.max_pool2d(F.relu(y), 2)
        y = F.relu(F.conv2d(y, t["conv2.w"], t["conv2.b"], padding=1))
        y = torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)
        y = F.softmax(F.linear(y, t["fc.w"], t["fc.b"]), dim=1)
    return y.numpy()


def main():
    parser = argparse.ArgumentParser(description="Build models/small_cnn.onnx and its test data.")
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "models"),
                        help="output directory (default: %(default)s)")
    args = parser.parse_args()

    rng = np.random.default_rng(SEED)
    weights = make_weights(rng)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)

    model = build_model(weights)
    onnx.checker.check_model(model, full_check=True)
    expected = numpy_reference(x, weights)
    assert expected.shape == (1, 10) and abs(float(expected.sum()) - 1.0) < 1e-5
    via_torch = torch_reference(x, weights)
    if via_torch is not None:
        err = float(np.abs(via_torch - expected).max())
        if err > 1e-5:
            print("numpy and torch references disagree: max abs diff %g" % err, file=sys.stderr)
            return 1
        print("numpy vs torch reference: max abs diff %.3g" % err)

    os.makedirs(args.out, exist_ok=True)
    model_path = os.path.join(args.out, "small_cnn.onnx")
    onnx.save(model, model_path)
    np.save(os.path.join(args.out, "small_cnn.input.npy"), x)
    np.save(os.path.join(args.out, "small_cnn.expected.npy"), expected)
    print("wrote %s (%d bytes), input %s, probs %s" % (model_path, os.path.getsize(model_path),
                                                       x.shape, np.array2string(expected[0],
                                                                                precision=4)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
