"""Op database: negative_log_likelihood_loss, softmax_cross_entropy_loss.

References are numpy loops in float64 written from the ONNX operator spec
(NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), on the values after rounding to the case
dtype; they never call frame.
"""
from __future__ import annotations

import numpy as np

from op_db.linalg import FLOATS, typed


def nll_ref(reduction, ignore_index=None):
    """NegativeLogLikelihoodLoss on log-probabilities x [N, C, d...], target [N, d...]."""
    def f(x, target, weight=None):
        n, c = x.shape[0], x.shape[1]
        xs = x.reshape(n, c, -1)
        ts = target.reshape(n, -1)
        loss = np.zeros(ts.shape)
        wsum = 0.0
        for i in range(n):
            for d in range(ts.shape[1]):
                t = int(ts[i, d])
                if ignore_index is not None and t == ignore_index:
                    continue
                w = 1.0 if weight is None else float(weight[t])
                loss[i, d] = -xs[i, t, d] * w
                wsum += w
        if reduction == "none":
            return loss.reshape(target.shape)
        if reduction == "sum":
            return np.array(loss.sum())
        return np.array(loss.sum() / wsum)
    return f


def log_softmax1(x):
    m = np.max(x, axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def sce_ref(reduction, ignore_index=None, log_prob=False):
    nll = nll_ref(reduction, ignore_index)

    def f(x, target, weight=None):
        lp = log_softmax1(x)
        loss = nll(lp, target, weight)
        return (loss, lp) if log_prob else loss
    return f


# (name, input shape, ignore_index or None); targets include the ignore_index value when set.
LOSS_SHAPES = [
    ("NC", (3, 5), None),
    ("NCd1", (2, 4, 3), None),
    ("NCd1d2", (2, 3, 2, 2), None),
    ("NCd1_ii_neg", (2, 4, 3), -1),
    ("NCd1_ii_in_range", (3, 5), 1),
    ("NCd1d2_ii_high", (2, 3, 2, 2), 10),
]


def targets_for(rng, shape, ignore_index, idx_dtype):
    n, c = shape[0], shape[1]
    t = rng.integers(0, c, size=(n,) + shape[2:])
    if ignore_index is not None:
        t.reshape(-1)[::3] = ignore_index
    return t.astype(idx_dtype)


def loss_cases(rng):
    out = []
    for name, shape, ii in LOSS_SHAPES:
        x = rng.standard_normal(shape) * 2
        c = shape[1]
        w = rng.uniform(0.2, 2.0, size=(c,))
        for idx_dtype in (np.int64, np.int32):
            tgt = targets_for(rng, shape, ii, idx_dtype)
            tag = "i64" if idx_dtype == np.int64 else "i32"
            for reduction in ("none", "sum", "mean"):
                attrs = {"reduction": reduction}
                if ii is not None:
                    attrs["ignore_index"] = ii
                dts = FLOATS if (reduction == "mean" and tag == "i64") else ("f32", "f64")
                for weighted in (False, True):
                    ins = [x, tgt, w if weighted else None]
                    wtag = "_weight" if weighted else ""
                    base = f"{name}_{reduction}{wtag}_{tag}"
                    out += typed("negative_log_likelihood_loss", base, nll_ref(reduction, ii),
                                 ins, attrs, dtypes=dts, typed_inputs=(0, 2))
                    out += typed("softmax_cross_entropy_loss", base, sce_ref(reduction, ii),
                                 ins, attrs, dtypes=dts, typed_inputs=(0, 2))
                    out += typed("softmax_cross_entropy_loss", base + "_log_prob",
                                 sce_ref(reduction, ii, True), ins, attrs, dtypes=("f32", "f64"),
                                 typed_inputs=(0, 2), typed_outputs=(0, 1))
    # Default reduction (mean) with no attributes at all.
    x = rng.standard_normal((4, 3))
    tgt = np.array([0, 2, 1, 2], dtype=np.int64)
    out += typed("negative_log_likelihood_loss", "default_mean", nll_ref("mean"), [x, tgt],
                 dtypes=("f32",), typed_inputs=(0,))
    out += typed("softmax_cross_entropy_loss", "default_mean", sce_ref("mean"), [x, tgt],
                 dtypes=("f32",), typed_inputs=(0,))
    return out


def cases():
    rng = np.random.default_rng(11)
    return loss_cases(rng)
