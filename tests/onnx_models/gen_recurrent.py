#!/usr/bin/python3
"""Writes recurrent models exported by torch.onnx.export with torch's outputs (issue 11).

  gen_recurrent.py --out DIR

One directory per model: DIR/<model>/model.onnx and, per run, DIR/<model>/<run>/in_<input>.npy
(the inputs) and out_<output>.npy (torch's outputs for them). Batch and sequence axes are
dynamic, so each model runs at two (sequence, batch) sizes through one session:

  lstm2_bidir:            2-layer bidirectional nn.LSTM, sequence-major, no initial states
  lstm2_bidir_bf_init:    the same with batch_first=True and initial (h0, c0) inputs
  gru2_init:              2-layer nn.GRU, sequence-major, initial h0 input
  gru_bidir_bf:           1-layer bidirectional nn.GRU, batch_first=True, no initial state

The exporter emits ONNX LSTM / GRU nodes (layout 0, with Transposes for batch_first) in opset 14.

lstm_seq_lens (built with onnx.helper, not torch, which never exports sequence_lens): one
bidirectional ONNX LSTM whose sequence_lens is a graph input, run with two different length
vectors at the same shapes; expected values from the float64 numpy transcription of the ONNX
equations in tests/ops/op_db/recurrent.py. sequence_lens never decides a shape, so it is fed as
a plain run-time value.
"""

import argparse
import os

import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from op_db.recurrent import reference  # noqa: E402

INPUT, HIDDEN = 6, 8
SIZES = ((5, 2), (9, 3))  # (sequence length, batch) of the two runs


class Rec(nn.Module):
    def __init__(self, kind, layers, bidir, batch_first, with_state):
        super().__init__()
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cls(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir,
                       batch_first=batch_first)
        self.kind, self.with_state = kind, with_state

    def forward(self, x, *state):
        if self.kind == "lstm":
            y, (h, c) = self.rnn(x, (state[0], state[1]) if self.with_state else None)
            return y, h, c
        y, h = self.rnn(x, state[0] if self.with_state else None)
        return y, h


MODELS = {
    "lstm2_bidir": ("lstm", 2, True, False, False),
    "lstm2_bidir_bf_init": ("lstm", 2, True, True, True),
    "gru2_init": ("gru", 2, False, False, True),
    "gru_bidir_bf": ("gru", 1, True, True, False),
}


def write(out, name, spec, seed):
    kind, layers, bidir, batch_first, with_state = spec
    torch.manual_seed(seed)
    m = Rec(kind, layers, bidir, batch_first, with_state).eval()
    dirs = 2 if bidir else 1
    in_names = ["x"] + (["h0", "c0"][: 2 if kind == "lstm" else 1] if with_state else [])
    out_names = ["y", "hn", "cn"][: 3 if kind == "lstm" else 2]
    dyn = {"x": {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"},
           "y": {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}}
    for n in in_names[1:] + out_names[1:]:
        dyn[n] = {1: "batch"}
    rng = np.random.default_rng(seed)

    def inputs(seq, batch):
        x = rng.uniform(-1, 1, (batch, seq, INPUT) if batch_first else (seq, batch, INPUT))
        st = [rng.uniform(-1, 1, (layers * dirs, batch, HIDDEN)) for _ in in_names[1:]]
        return [a.astype(np.float32) for a in [x] + st]

    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    example = tuple(torch.from_numpy(a) for a in inputs(*SIZES[0]))
    torch.onnx.export(m, example, os.path.join(d, "model.onnx"), input_names=in_names,
                      output_names=out_names, dynamic_axes=dyn, opset_version=14)
    for seq, batch in SIZES:
        run = os.path.join(d, "s%d_b%d" % (seq, batch))
        os.makedirs(run, exist_ok=True)
        arrays = inputs(seq, batch)
        with torch.no_grad():
            res = m(*(torch.from_numpy(a) for a in arrays))
        for n, a in zip(in_names, arrays):
            np.save(os.path.join(run, "in_%s.npy" % n), a)
        for n, t in zip(out_names, res):
            np.save(os.path.join(run, "out_%s.npy" % n), t.numpy())


def write_seq_lens(out):
    seq, batch, hid = 6, 3, 4
    rng = np.random.default_rng(7)
    u = lambda *s: rng.uniform(-0.8, 0.8, s).astype(np.float32)  # noqa: E731
    W, R, B = u(2, 4 * hid, INPUT), u(2, 4 * hid, hid), u(2, 8 * hid)
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "lens"], ["y", "hn", "cn"],
                            direction="bidirectional", hidden_size=hid, name="lstm")
    graph = helper.make_graph(
        [node], "lstm_seq_lens",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, INPUT]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [batch])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, 2, batch, hid]),
         helper.make_tensor_value_info("hn", TensorProto.FLOAT, [2, batch, hid]),
         helper.make_tensor_value_info("cn", TensorProto.FLOAT, [2, batch, hid])],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
         numpy_helper.from_array(B, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    d = os.path.join(out, "lstm_seq_lens")
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    x = u(seq, batch, INPUT)
    for key, lens in (("a", [6, 2, 4]), ("b", [1, 6, 3])):
        run = os.path.join(d, key)
        os.makedirs(run, exist_ok=True)
        lens = np.array(lens, np.int32)
        np.save(os.path.join(run, "in_x.npy"), x)
        np.save(os.path.join(run, "in_lens.npy"), lens)
        outs = reference("lstm", x, W, R, B, lens, direction="bidirectional")
        for n, a in zip(("y", "hn", "cn"), outs):
            np.save(os.path.join(run, "out_%s.npy" % n), a.astype(np.float32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for seed, (name, spec) in enumerate(sorted(MODELS.items())):
        write(args.out, name, spec, seed)
    write_seq_lens(args.out)
    with open(os.path.join(args.out, "stamp"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
