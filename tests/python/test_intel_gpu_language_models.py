"""Language models on intel_gpu with nothing left to cpu (docs/backends/intel-gpu.md, "Gather
with run-time indices"): a GPT-2-style decoder and a BERT-style encoder (benchmarks/models.py's
Gpt2 and BertEncoder, made small) exported by torch.onnx.export, run with backends
["intel_gpu"] and strict on (any fallback is an error), against PyTorch. Their embedding
lookups are Gathers whose indices are the token ids, a graph input, so they run on the device
with the indices checked there; an out-of-range token id fails the run with the cpu kernel's
message, and the next run with good ids succeeds. Runs on PoCL where there is no GPU. Cost:
about 10 s (two exports, PoCL builds).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import frame

torch = pytest.importorskip("torch")

_BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")


def models():
    sys.path.insert(0, os.path.abspath(_BENCHMARKS))
    try:
        import models as m  # benchmarks/models.py
    finally:
        sys.path.pop(0)
    return m


def require_intel_gpu():
    b = {b["name"]: b for b in frame.backends()}.get("intel_gpu")
    if b is None:
        pytest.skip("intel_gpu is not in this build (no OpenCL headers)")
    if not b["available"]:
        pytest.skip(b["reason"])


def export(model, ids, path):
    model.eval()
    torch.onnx.export(model, (torch.from_numpy(ids),), str(path), input_names=["input_ids"],
                      output_names=["out"], opset_version=14)
    with torch.no_grad():
        return model(torch.from_numpy(ids)).numpy()


def strict_session(path):
    opts = frame.SessionOptions()
    opts.backends = ["intel_gpu"]
    opts.strict = True
    opts.interpret_first_seen = False
    return frame.InferenceSession(str(path), sess_options=opts)


def token_ids(vocab, seq, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(1, seq), dtype=np.int64)
    ids[0, -3:] = 0  # padding: the BERT-style mask then changes the result
    return ids


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_language_model_runs_wholly_on_intel_gpu(tmp_path, name):
    require_intel_gpu()
    m = models()
    torch.manual_seed(0)
    vocab, seq = 500, 16
    if name == "gpt2":
        model = m.Gpt2(vocab=vocab, d=64, heads=4, layers=2, seq=seq, max_pos=32)
    else:
        model = m.BertEncoder(vocab=vocab, d=64, heads=4, ff=128, layers=2, max_pos=32)
    ids = token_ids(vocab, seq, 1)
    want = export(model, ids, tmp_path / f"{name}.onnx")
    sess = strict_session(tmp_path / f"{name}.onnx")
    (got,) = sess.run(None, {"input_ids": ids})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    placements = sess.placement()
    assert placements and all(p["backend"] == "intel_gpu" for p in placements)
    assert any(p["op"] == "gather" for p in placements)

    # A token id outside the vocabulary: the cpu kernel's error, naming the node and the
    # first bad position; the run after it (good ids again) is right.
    bad = ids.copy()
    bad[0, 5] = vocab + 7
    bad[0, 9] = -vocab - 1
    with pytest.raises(Exception) as e:
        sess.run(None, {"input_ids": bad})
    msg = str(e.value)
    assert f"input 1 (indices) value {vocab + 7} at 5 out of range [{-vocab}, {vocab - 1}]" in msg
    assert "(gather)" in msg
    (again,) = sess.run(None, {"input_ids": ids})
    np.testing.assert_allclose(again, want, rtol=1e-3, atol=1e-4)
