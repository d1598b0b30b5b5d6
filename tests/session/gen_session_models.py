#!/usr/bin/python3
"""Writes the ONNX models and reference data of the session tests (ADR 0006).

  gen_session_models.py --out DIR

bert.onnx: token embedding + one nn.TransformerEncoderLayer (d_model 32, 4 heads, batch_first),
exported by torch.onnx.export with dynamic batch and sequence axes (dim_param), so the export
computes its attention reshapes from Shape/Gather/Concat at run time. For each sequence length
L in SEQ_LENS: bert.ids_L.npy (int64 [2, L]) and bert.expected_L.npy (torch's output).

reshape.onnx: y = Reshape(x, shape) * 2 with x: f32["n"] and the target `shape` a graph input;
reshape.x.npy (12 values), reshape.shape_K.npy and reshape.expected_K.npy for K in a, b (two
targets), the expected values from numpy (the onnx here predates onnx.reference).
"""

import argparse
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper
from torch import nn

SEQ_LENS = (5, 8, 13)


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 32)
        self.layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                                dropout=0.0, batch_first=True)

    def forward(self, ids):
        return self.layer(self.embed(ids))


def write_reshape(out):
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
         helper.make_node("Mul", ["r", "two"], ["y"], name="mul")],
        "reshape_by_input",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["r0", "r1"])], [two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = os.path.join(out, "reshape.onnx")
    onnx.save(model, path)
    x = np.arange(12, dtype=np.float32) - 3.5
    np.save(os.path.join(out, "reshape.x.npy"), x)
    for key, target in (("a", [3, 4]), ("b", [2, 6])):
        shape = np.array(target, dtype=np.int64)
        np.save(os.path.join(out, "reshape.shape_%s.npy" % key), shape)
        y = np.reshape(x, target) * np.float32(2.0)
        np.save(os.path.join(out, "reshape.expected_%s.npy" % key), y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    write_reshape(args.out)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Bert().eval()
    gen = torch.Generator().manual_seed(1234)
    path = os.path.join(args.out, "bert.onnx")
    example = torch.randint(0, 50, (2, 4), generator=gen)
    torch.onnx.export(model, (example,), path, opset_version=14, do_constant_folding=True,
                      input_names=["ids"], output_names=["hidden"],
                      dynamic_axes={"ids": {0: "batch", 1: "seq"},
                                    "hidden": {0: "batch", 1: "seq"}})
    onnx.checker.check_model(onnx.load(path))
    for n in SEQ_LENS:
        ids = torch.randint(0, 50, (2, n), generator=gen)
        # Grad enabled: the composite path the export traced (no_grad takes torch's fused
        # encoder kernel).
        expected = model(ids).detach()
        np.save(os.path.join(args.out, "bert.ids_%d.npy" % n), ids.numpy())
        np.save(os.path.join(args.out, "bert.expected_%d.npy" % n), expected.numpy())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
