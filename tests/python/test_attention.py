"""Attention as torch exports it runs as one attention_internal node on onednn, and matches PyTorch.

Each test exports a small module the way users do (torch.onnx.export, opset 14), runs it in a
frame session with interpretation off (so the compiled, fused plan is the one measured), checks
that the session's compiled graph holds one attention_internal per attention and no Softmax, and
compares the output with PyTorch's (docs/backends/onednn.md#attention). Cost: about 3 s (torch
import and four small exports).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import frame

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def export(model, args, path, input_names, dynamic_axes=None):
    model.eval()
    torch.onnx.export(model, args, str(path), input_names=input_names, output_names=["out"],
                      dynamic_axes=dynamic_axes or {}, opset_version=14)
    return str(path)


def session(path):
    if not any(b["name"] == "onednn" and b["available"] for b in frame.backends()):
        pytest.skip("the onednn backend is not built")
    opts = frame.SessionOptions()
    opts.interpret_first_seen = False
    return frame.InferenceSession(path, sess_options=opts)


def ops_of(sess):
    return [p["op"] for p in sess.placement()]


class Heads(nn.Module):
    """Q, K, V projections split into heads, as GPT-2 and BERT blocks do."""

    def __init__(self, d=32, h=4):
        super().__init__()
        self.h, self.dh = h, d // h
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def split(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split(self.h * self.dh, dim=2)
        return [t.reshape(b, s, self.h, self.dh).transpose(1, 2) for t in (q, k, v)]

    def merge(self, y):
        b, _, s, _ = y.shape
        return self.out(y.transpose(1, 2).reshape(b, s, self.h * self.dh))


class Gpt(Heads):
    """masked_fill with a causal buffer (exported as Where(mask, -inf, scores))."""

    def __init__(self):
        super().__init__()
        self.register_buffer("causal", torch.triu(torch.ones(16, 16, dtype=torch.bool), 1))

    def forward(self, x):
        q, k, v = self.split(x)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dh))
        s = x.shape[1]
        att = att.masked_fill(self.causal[:s, :s], float("-inf"))
        return self.merge(F.softmax(att, dim=-1) @ v)


class Bert(Heads):
    """An additive padding mask built from an int attention_mask input, and F.dropout(p=0)."""

    def forward(self, x, attention_mask):
        q, k, v = self.split(x)
        add = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        att = q @ k.transpose(-2, -1) / math.sqrt(self.dh) + add
        return self.merge(F.dropout(F.softmax(att, dim=-1), p=0.0) @ v)


def check(sess, feeds, want, n_attention):
    (got,) = sess.run(None, feeds)
    ops = ops_of(sess)
    assert ops.count("attention_internal") == n_attention, ops
    # The attention kernel reorders nothing (Placement::reorders_per_run).
    assert all(p["reorders_per_run"] == 0 for p in sess.placement()
               if p["op"] == "attention_internal")
    assert "softmax" not in ops and "dropout" not in ops, ops
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_gpt_causal_attention(tmp_path):
    torch.manual_seed(0)
    m = Gpt()
    x = torch.randn(2, 16, 32)
    path = export(m, (x,), tmp_path / "gpt.onnx", ["x"])
    with torch.no_grad():
        want = m(x).numpy()
    check(session(path), {"x": x.numpy()}, want, 1)


def test_bert_padding_mask_at_two_lengths(tmp_path):
    torch.manual_seed(1)
    m = Bert()
    x = torch.randn(2, 12, 32)
    mask = torch.ones(2, 12, dtype=torch.int64)
    path = export(m, (x, mask), tmp_path / "bert.onnx", ["x", "attention_mask"],
                  {"x": {1: "s"}, "attention_mask": {1: "s"}})
    sess = session(path)
    for s in (12, 7):
        x = torch.randn(2, s, 32)
        mask = torch.ones(2, s, dtype=torch.int64)
        mask[1, s - 3:] = 0  # the second sequence is padded
        with torch.no_grad():
            want = m(x, mask).numpy()
        check(sess, {"x": x.numpy(), "attention_mask": mask.numpy()}, want, 1)


def test_multihead_attention_encoder_layers(tmp_path):
    torch.manual_seed(2)
    m = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), num_layers=2)
    x = torch.randn(1, 20, 32)
    path = export(m, (x,), tmp_path / "enc.onnx", ["x"])
    with torch.no_grad():
        want = m(x).numpy()
    check(session(path), {"x": x.numpy()}, want, 2)
