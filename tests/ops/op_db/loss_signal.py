"""Op database: negative_log_likelihood_loss, softmax_cross_entropy_loss, hann_window,
hamming_window, blackman_window, mel_weight_matrix, det, dft, stft.

References are numpy in float64 written from the ONNX operator spec (NegativeLogLikelihoodLoss,
SoftmaxCrossEntropyLoss, the window formulas with numpy's pi, MelWeightMatrix, numpy.linalg.det for Det, numpy.fft for DFT/STFT), on the
values
after rounding to the case dtype; they never call frame.
"""
from __future__ import annotations

import numpy as np

from op_db.common import Case
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


WINDOWS = {
    "hann_window": (0.5, 0.5, 0.0),
    "hamming_window": (25 / 46, 21 / 46, 0.0),
    "blackman_window": (0.42, 0.5, 0.08),
}
# ONNX TensorProto codes -> numpy dtypes of the window/mel outputs.
ONNX_NP = {1: np.float32, 11: np.float64, 10: np.float16, 6: np.int32, 7: np.int64}


def window_ref(op, size, periodic):
    a0, a1, a2 = WINDOWS[op]
    n = size if periodic else size - 1
    if n <= 0:
        return np.ones(size)
    k = np.arange(size, dtype=np.float64)
    return a0 - a1 * np.cos(2 * np.pi * k / n) + a2 * np.cos(4 * np.pi * k / n)


def window_cases():
    out = []
    for op in WINDOWS:
        for size, periodic, code, idx in [(10, 1, 1, np.int32), (10, 0, 1, np.int64),
                                          (1, 0, 1, np.int64), (1, 1, 1, np.int64),
                                          (0, 1, 1, np.int64), (1000, 1, 1, np.int64),
                                          (33, 0, 11, np.int64), (16, 1, 10, np.int32),
                                          (12, 0, 7, np.int64)]:
            attrs = {"periodic": periodic}
            if code != 1:
                attrs["output_datatype"] = code
            y = window_ref(op, size, periodic)
            y = np.trunc(y).astype(ONNX_NP[code]) if code in (6, 7) else y.astype(ONNX_NP[code])
            out.append(Case(op=op, inputs=[np.array(size, dtype=idx)], outputs=[y], attrs=attrs,
                            name=f"n{size}_{'periodic' if periodic else 'symmetric'}_t{code}"))
    return out


def mel_ref(bins, dft, rate, lower, upper):
    """MelWeightMatrix as the ONNX spec's reference computes it (float64)."""
    def mel(f):
        return 2595 * np.log10(1 + f / 700)
    step = (mel(upper) - mel(lower)) / (bins + 2)
    f = np.arange(bins + 2) * step + mel(lower)
    f = 700 * (np.power(10, f / 2595) - 1)
    b = np.floor((dft + 1) * f / rate).astype(int)
    out = np.zeros((dft // 2 + 1, bins))
    for i in range(bins):
        lo, c, hi = b[i], b[i + 1], b[i + 2]
        if c == lo:
            out[c, i] = 1
        else:
            for j in range(lo, c + 1):
                out[j, i] = (j - lo) / (c - lo)
        for j in range(c, hi):
            out[j, i] = (hi - j) / (hi - c)
    return out


def mel_cases():
    out = []
    for bins, dft, rate, lower, upper, code in [(8, 16, 8192, 0.0, 4096.0, 1),
                                                (10, 64, 16000, 20.0, 8000.0, 1),
                                                (5, 31, 8000, 100.0, 3000.0, 11)]:
        ins = [np.array(bins, dtype=np.int64), np.array(dft, dtype=np.int64),
               np.array(rate, dtype=np.int64), np.array(lower, dtype=np.float32),
               np.array(upper, dtype=np.float32)]
        attrs = {} if code == 1 else {"output_datatype": code}
        out.append(Case(op="mel_weight_matrix", inputs=ins, attrs=attrs,
                        outputs=[mel_ref(bins, dft, rate, lower, upper).astype(ONNX_NP[code])],
                        name=f"b{bins}_dft{dft}_sr{rate}"))
    return out


# LU in float over M steps: the f32 result differs from the f64 reference by a few ulps
# times the matrix's condition.
DET_TOL = {"rtol": 1e-4, "atol": 1e-5, "why": "float32 LU elimination over M steps"}


def det_cases(rng):
    out = []
    mats = [
        ("2x2", rng.standard_normal((2, 2))),
        ("3x3", rng.standard_normal((3, 3))),
        ("5x5", rng.standard_normal((5, 5))),
        ("batch_2x3x3x3", rng.standard_normal((2, 3, 3, 3))),
        ("pivot_needed", np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [4.0, -3.0, 8.0]])),
        ("singular", np.array([[1.0, 2.0], [2.0, 4.0]])),
        ("permutation", np.array([[0.0, 1.0], [1.0, 0.0]])),
        ("1x1", np.array([[-2.5]])),
    ]
    for name, x in mats:
        for c in typed("det", name, lambda a: np.linalg.det(a), [x]):
            if c.name.endswith("_f32"):
                c.rtol, c.atol, c.why = DET_TOL["rtol"], DET_TOL["atol"], DET_TOL["why"]
            out.append(c)
    return out


def as_complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(complex)


def as_pairs(z):
    return np.stack([z.real, z.imag], axis=-1)


def dft_ref(axis, inverse=False, onesided=False):
    def f(x, n=None):
        z = as_complex(x)
        a = axis % x.ndim
        length = None if n is None else int(n)
        y = np.fft.ifft(z, n=length, axis=a) if inverse else np.fft.fft(z, n=length, axis=a)
        if onesided:
            m = y.shape[a] // 2 + 1
            y = np.take(y, np.arange(m), axis=a)
        return as_pairs(y)
    return f


def stft_ref(step, length, onesided=True):
    def f(signal, window=None):
        z = as_complex(signal)
        w = np.ones(length) if window is None else window
        frames = (z.shape[1] - length) // step + 1
        out = np.stack([np.fft.fft(z[:, i * step:i * step + length] * w, axis=1)
                        for i in range(frames)], axis=1)
        if onesided:
            out = out[:, :, :length // 2 + 1]
        return as_pairs(out)
    return f


def dft_cases(rng):
    out = []
    i64s = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    for name, x, attrs, n in [
        ("real_axis1", rng.standard_normal((2, 8, 1)), {"axis": 1}, None),
        ("complex_axis2", rng.standard_normal((2, 3, 6, 2)), {"axis": 2}, None),
        ("complex_inverse", rng.standard_normal((2, 6, 3, 2)), {"axis": 1, "inverse": 1}, None),
        ("real_onesided", rng.standard_normal((1, 10, 1)), {"onesided": 1}, None),
        ("real_onesided_odd", rng.standard_normal((3, 7, 1)), {"onesided": 1}, None),
        ("pad_to_12", rng.standard_normal((1, 8, 1)), {}, 12),
        ("truncate_to_5", rng.standard_normal((1, 8, 2)), {}, 5),
        ("axis_negative", rng.standard_normal((2, 3, 5, 1)), {"axis": -2}, None),
        ("batch_axis0", rng.standard_normal((4, 3, 2)), {"axis": 0}, None),
    ]:
        a = attrs.get("axis", 1)
        fn = dft_ref(a, bool(attrs.get("inverse", 0)), bool(attrs.get("onesided", 0)))
        ins = [x] if n is None else [x, i64s(n)]
        out += typed("dft", name, fn, ins, attrs, dtypes=("f32", "f64"))
    sig = np.arange(64, dtype=np.float64).reshape(1, 64, 1) / 8
    out += typed("stft", "length16_step8", lambda s, st, w, fl: stft_ref(8, 16)(s),
                 [sig, i64s(8), None, i64s(16)], dtypes=("f32", "f64"))
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(10) / 10)
    csig = rng.standard_normal((2, 40, 2))
    out += typed("stft", "complex_window_twosided",
                 lambda s, st, w: stft_ref(5, 10, onesided=False)(s, w),
                 [csig, i64s(5), hann], {"onesided": 0}, dtypes=("f32", "f64"),
                 typed_inputs=(0, 2))
    out += typed("stft", "window_and_length", lambda s, st, w, fl: stft_ref(4, 10)(s, w),
                 [rng.standard_normal((1, 30, 1)), i64s(4), hann, i64s(10)],
                 dtypes=("f32", "f64"), typed_inputs=(0, 2))
    return out


def cases():
    rng = np.random.default_rng(11)
    return (loss_cases(rng) + window_cases() + mel_cases() + det_cases(rng) + dft_cases(rng))
