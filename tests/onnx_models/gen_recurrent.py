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
"""

import argparse
import os

import numpy as np
import torch
from torch import nn

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for seed, (name, spec) in enumerate(sorted(MODELS.items())):
        write(args.out, name, spec, seed)
    with open(os.path.join(args.out, "stamp"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
