"""Op database cases for the elementwise family (frame/ops/elementwise.h).

References are numpy (float64 math rounded to the output dtype, numpy's integer semantics) or
hand values; never frame. Every op gets: each supported dtype, a rank-0 scalar, an empty
tensor, odd sizes (7, 33), broadcasting where it applies, inf/NaN where it applies, and its
attribute variants.
"""
from __future__ import annotations

import math

import numpy as np

from op_db.common import Case, from_bf16_bits, to_bf16_bits

FLOATS = ["f32", "f64", "f16", "bf16"]
SINTS = ["i8", "i16", "i32", "i64"]
INTS = SINTS + ["u8"]
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_}
INF, NAN = float("inf"), float("nan")

_rng = np.random.default_rng(20240611)


def enc(dt, values):
    """float64 values -> (stored array, float64 of what is actually stored)."""
    v = np.asarray(values, dtype=np.float64)
    if dt == "bf16":
        bits = to_bf16_bits(v.astype(np.float32))
        return bits, from_bf16_bits(bits).astype(np.float64)
    a = v.astype(NP[dt])
    return a, a.astype(np.float64)


def out(dt, values):
    """Expected output of dtype dt from exact (float64) values: round once to dt."""
    return enc(dt, values)[0]


def rand(shape, lo, hi):
    return _rng.uniform(lo, hi, size=shape)


def rand_int(dt, shape, lo=None, hi=None):
    info = np.iinfo(NP[dt])
    lo = max(info.min, -100) if lo is None else lo
    hi = min(info.max, 100) if hi is None else hi
    return _rng.integers(lo, hi, size=shape, endpoint=True).astype(NP[dt])


def bf16_idx(dts):
    return [i for i, d in enumerate(dts) if d == "bf16"]


def fcase(op, dts_in, dt_out, inputs_f64, ref, name, attrs=None, **kw):
    """Float case: encode inputs, apply ref to the stored values in float64, round to dt_out."""
    arrs, vals = [], []
    for dt, v in zip(dts_in, inputs_f64):
        a, s = enc(dt, v)
        arrs.append(a)
        vals.append(s)
    with np.errstate(all="ignore"):
        y = ref(*vals)
    expected = out(dt_out, y) if dt_out != "bool" else np.asarray(y, dtype=np.bool_)
    return Case(op=op, inputs=arrs, outputs=[expected], attrs=attrs or {}, name=name,
                bf16_inputs=bf16_idx(dts_in), bf16_outputs=[0] if dt_out == "bf16" else [], **kw)


# ---------------------------------------------------------------- unary float ops

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _softplus(x):
    return np.logaddexp(0.0, x)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


SELU_A, SELU_G = 1.67326319217681884765625, 1.05070102214813232421875

# op -> (reference(x, **attrs), (lo, hi) sample range, attribute variants, special values)
UNARY_FLOAT = {
    "exp": (np.exp, (-5, 5), [], [INF, -INF, NAN]),
    "log": (np.log, (0.05, 10), [], [INF, 0.0, -1.0, NAN]),
    "sqrt": (np.sqrt, (0, 10), [], [INF, -1.0, NAN]),
    "reciprocal": (lambda x: 1 / x, (0.2, 5), [], [INF, 0.0, -0.0, NAN]),
    "sin": (np.sin, (-3, 3), [], [NAN]),
    "cos": (np.cos, (-3, 3), [], [NAN]),
    "tan": (np.tan, (-1.3, 1.3), [], [NAN]),
    "asin": (np.arcsin, (-0.99, 0.99), [], [2.0, NAN]),
    "acos": (np.arccos, (-0.99, 0.99), [], [2.0, NAN]),
    "atan": (np.arctan, (-5, 5), [], [INF, -INF, NAN]),
    "sinh": (np.sinh, (-4, 4), [], [INF, -INF, NAN]),
    "cosh": (np.cosh, (-4, 4), [], [INF, -INF, NAN]),
    "tanh": (np.tanh, (-4, 4), [], [INF, -INF, NAN]),
    "asinh": (np.arcsinh, (-5, 5), [], [INF, -INF, NAN]),
    "acosh": (np.arccosh, (1.05, 10), [], [INF, 0.5, NAN]),
    "atanh": (np.arctanh, (-0.95, 0.95), [], [1.0, -1.0, NAN]),
    "erf": (_erf, (-3, 3), [], [INF, -INF, NAN]),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-8, 8), [], [INF, -INF, NAN, 100.0, -100.0]),
    "leaky_relu": (lambda x, alpha=0.01: np.where(x < 0, alpha * x, x), (-4, 4),
                   [{"alpha": 0.2}], [INF, -INF, NAN]),
    "elu": (lambda x, alpha=1.0: np.where(x < 0, alpha * np.expm1(x), x), (-4, 4),
            [{"alpha": 0.5}], [INF, -INF, NAN]),
    "selu": (lambda x, alpha=SELU_A, gamma=SELU_G: gamma * np.where(x > 0, x, alpha * np.expm1(x)),
             (-4, 4), [{"alpha": 2.0, "gamma": 3.0}], [INF, -INF, NAN]),
    "celu": (lambda x, alpha=1.0: np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha)),
             (-4, 4), [{"alpha": 2.0}], [INF, -INF, NAN]),
    "softplus": (_softplus, (-10, 10), [], [INF, -INF, NAN, 50.0, -50.0]),
    "softsign": (lambda x: x / (1 + np.abs(x)), (-5, 5), [], [NAN]),
    "hard_sigmoid": (lambda x, alpha=0.2, beta=0.5: np.clip(alpha * x + beta, 0, 1), (-6, 6),
                     [{"alpha": 0.5, "beta": 0.25}], [INF, -INF, NAN]),
    "hard_swish": (lambda x: x * np.clip(x / 6 + 0.5, 0, 1), (-6, 6), [], [INF, NAN]),
    "gelu": (_gelu, (-4, 4), [{"approximate": "tanh"}, {"approximate": "none"}], [INF, NAN]),
    "mish": (lambda x: x * np.tanh(_softplus(x)), (-5, 5), [], [INF, NAN]),
    "floor": (np.floor, (-5, 5), [], [INF, -INF, NAN, -0.5, 2.5]),
    "ceil": (np.ceil, (-5, 5), [], [INF, -INF, NAN, -0.5, 2.5]),
    "round": (np.round, (-5, 5), [], [INF, NAN, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5]),
    "abs": (np.abs, (-5, 5), [], [INF, -INF, NAN, -0.0]),
    "neg": (np.negative, (-5, 5), [], [INF, -INF, NAN]),
    "sign": (np.sign, (-5, 5), [], [INF, -INF, NAN, 0.0]),
    "relu": (lambda x: np.where(x < 0, 0.0, x), (-5, 5), [], [INF, -INF, NAN]),
    "identity": (lambda x: x, (-5, 5), [], [INF, -INF, NAN]),
}


def unary_float_cases():
    cases = []
    for op, (ref, (lo, hi), variants, specials) in UNARY_FLOAT.items():
        for dt in FLOATS:
            cases.append(fcase(op, [dt], dt, [rand((33,), lo, hi)], ref, f"odd33_{dt}"))
        cases.append(fcase(op, ["f32"], "f32", [rand((2, 7), lo, hi)], ref, "shape2x7_f32"))
        cases.append(fcase(op, ["f64"], "f64", [np.float64(rand((), lo, hi))], ref, "scalar_f64"))
        cases.append(fcase(op, ["f32"], "f32", [np.zeros((0, 3))], ref, "empty_f32"))
        cases.append(fcase(op, ["f32"], "f32", [np.array(specials)], ref, "special_f32"))
        for k, attrs in enumerate(variants):
            ref_a = (lambda r, a: (lambda x: r(x, **a)))(ref, attrs)
            for dt in ["f32", "f16"]:
                cases.append(fcase(op, [dt], dt, [rand((7,), lo, hi)], ref_a, f"attrs{k}_{dt}",
                                   attrs=attrs))
    return cases


def unary_int_cases():
    cases = []
    int_ops = {
        "abs": (INTS, lambda x: np.abs(x)),
        "neg": (SINTS, lambda x: np.negative(x)),
        "sign": (INTS, lambda x: np.sign(x)),
        "relu": (SINTS, lambda x: np.maximum(x, 0).astype(x.dtype)),
        "identity": (INTS + ["bool"], lambda x: x.copy()),
    }
    for op, (dts, ref) in int_ops.items():
        for dt in dts:
            x = rand_int(dt, (7,)) if dt != "bool" else _rng.integers(0, 2, 7).astype(bool)
            cases.append(Case(op=op, inputs=[x], outputs=[ref(x)], name=f"odd7_{dt}"))
        x = np.array(-5, dtype=np.int32)
        cases.append(Case(op=op, inputs=[x], outputs=[ref(x)], name="scalar_i32"))
    # numpy wraps: abs/neg of the most negative value give it back.
    m = np.array([-128, 127, 0], dtype=np.int8)
    cases.append(Case(op="abs", inputs=[m], outputs=[np.abs(m)], name="wrap_i8"))
    cases.append(Case(op="neg", inputs=[m], outputs=[np.negative(m)], name="wrap_i8"))
    for dims, nm in [((33,), "odd33"), ((), "scalar"), ((0, 2), "empty")]:
        x = _rng.integers(0, 2, dims).astype(bool)
        cases.append(Case(op="not", inputs=[x], outputs=[np.logical_not(x)], name=f"{nm}_bool"))
    return cases


def predicate_cases():
    cases = []
    vals = [1.0, -2.5, INF, -INF, NAN, 0.0, 65504.0]
    for dt in FLOATS:
        cases.append(fcase("is_nan", [dt], "bool", [vals], np.isnan, f"special_{dt}"))
        cases.append(fcase("is_inf", [dt], "bool", [vals], np.isinf, f"special_{dt}"))
    for neg, pos in [(0, 1), (1, 0), (0, 0)]:
        ref = (lambda n, p: (lambda x: (np.isneginf(x) & bool(n)) | (np.isposinf(x) & bool(p))))(
            neg, pos)
        cases.append(fcase("is_inf", ["f32"], "bool", [vals], ref, f"neg{neg}_pos{pos}_f32",
                           attrs={"detect_negative": neg, "detect_positive": pos}))
    for op, ref in [("is_nan", np.isnan), ("is_inf", np.isinf)]:
        cases.append(fcase(op, ["f32"], "bool", [np.float64(NAN)], ref, "scalar_f32"))
        cases.append(fcase(op, ["f64"], "bool", [np.zeros((3, 0))], ref, "empty_f64"))
        cases.append(fcase(op, ["f32"], "bool", [rand((33,), -2, 2)], ref, "odd33_f32"))
    return cases


# ---------------------------------------------------------------- clip and cast

def clip_cases():
    cases = []

    def ref_of(lo, hi):
        def r(x, *b):
            bl = b[0] if lo is not None else -np.inf
            bh = b[-1] if hi is not None else np.inf
            y = np.where(x < bl, bl, x)
            return np.where(y > bh, bh, y)
        return r

    for dt in FLOATS:
        for lo, hi, nm in [(-1.0, 2.0, "both"), (-0.5, None, "min_only"), (None, 0.5, "max_only"),
                           (None, None, "none"), (1.0, -1.0, "min_gt_max")]:
            x = np.concatenate([rand((30,), -4, 4), [INF, -INF, NAN]])
            ins = [x] + [np.float64(v) for v in (lo, hi) if v is not None]
            dts = [dt] * len(ins)
            c = fcase("clip", dts, dt, ins, ref_of(lo, hi), f"{nm}_{dt}")
            # absent optional min: keep input positions (min is input 1, max input 2)
            if lo is None and hi is not None:
                c.inputs = [c.inputs[0], None, c.inputs[1]]
                c.bf16_inputs = [0, 2] if dt == "bf16" else []
            cases.append(c)
    for dt in INTS:
        x = rand_int(dt, (7,))
        lo, hi = np.array(-3 if dt != "u8" else 3, NP[dt]), np.array(20, NP[dt])
        cases.append(Case(op="clip", inputs=[x, lo, hi], outputs=[np.clip(x, lo, hi)],
                          name=f"both_{dt}", constant_inputs=[]))
    x = np.array(7.5, np.float32)
    cases.append(Case(op="clip", inputs=[x, np.array(0, np.float32), np.array(5, np.float32)],
                      outputs=[np.array(5, np.float32)], name="scalar_f32"))
    e = np.zeros((0, 4), np.float32)
    cases.append(Case(op="clip", inputs=[e, np.array(0, np.float32)], outputs=[e.copy()],
                      name="empty_f32"))
    x = rand((5,), -3, 3).astype(np.float32)
    cases.append(Case(op="clip", inputs=[x, np.array([-1], np.float32), np.array([1], np.float32)],
                      outputs=[np.clip(x, -1, 1)], name="shape1_bounds_f32"))
    return cases


ONNX_TYPE = {"f32": 1, "u8": 2, "i8": 3, "i16": 5, "i32": 6, "i64": 7, "bool": 9, "f16": 10,
             "f64": 11, "bf16": 16}


def cast_cases():
    cases = []
    all_dt = FLOATS + INTS + ["bool"]
    for src in all_dt:
        for dst in all_dt:
            # Values every pair represents sensibly: small non-negative integers and halves.
            base = np.array([0.0, 1.0, 2.5, 3.0, 7.75, 12.0, 100.0])
            if src in INTS or src == "bool":
                base = np.floor(base)
            if src == "bool" or dst == "bool":
                base = np.array([0.0, 1.0, 0.0, 2.0, 0.0])
            if src == "bool":
                x = base.astype(bool)
                xv = x.astype(np.float64)
            elif src in FLOATS:
                x, xv = enc(src, base)
            else:
                x = base.astype(NP[src])
                xv = x.astype(np.float64)
            if dst == "bool":
                y = xv != 0
            elif dst in FLOATS:
                y = out(dst, xv)
            else:
                y = np.trunc(xv).astype(NP[dst])
            cases.append(Case(op="cast", inputs=[x], outputs=[y], attrs={"to": ONNX_TYPE[dst]},
                              name=f"{src}_to_{dst}", bf16_inputs=[0] if src == "bf16" else [],
                              bf16_outputs=[0] if dst == "bf16" else []))
    neg = np.array([-2.7, -0.5, 0.5, 2.7, -100.9], np.float32)
    for dst in SINTS:
        cases.append(Case(op="cast", inputs=[neg], outputs=[np.trunc(neg).astype(NP[dst])],
                          attrs={"to": ONNX_TYPE[dst]}, name=f"trunc_f32_to_{dst}"))
    sp = np.array([NAN, INF, -INF, 0.0, -0.0], np.float32)
    cases.append(Case(op="cast", inputs=[sp], outputs=[sp != 0], attrs={"to": 9},
                      name="special_f32_to_bool"))
    cases.append(Case(op="cast", inputs=[sp], outputs=[sp.astype(np.float16)], attrs={"to": 10},
                      name="special_f32_to_f16"))
    cases.append(Case(op="cast", inputs=[sp], outputs=[to_bf16_bits(sp)], attrs={"to": 16},
                      name="special_f32_to_bf16", bf16_outputs=[0]))
    r = rand((33,), -1000, 1000).astype(np.float32)
    cases.append(Case(op="cast", inputs=[r], outputs=[r.astype(np.float16)], attrs={"to": 10},
                      name="round_odd33_f32_to_f16"))
    cases.append(Case(op="cast", inputs=[r], outputs=[to_bf16_bits(r)], attrs={"to": 16},
                      name="round_odd33_f32_to_bf16", bf16_outputs=[0]))
    w = np.array([300, -129, 255, 70000], np.int64)
    cases.append(Case(op="cast", inputs=[w], outputs=[w.astype(np.int8)], attrs={"to": 3},
                      name="wrap_i64_to_i8"))
    cases.append(Case(op="cast", inputs=[w], outputs=[w.astype(np.uint8)], attrs={"to": 2},
                      name="wrap_i64_to_u8"))
    cases.append(Case(op="cast", inputs=[np.array(3.9, np.float64)],
                      outputs=[np.array(3, np.int32)], attrs={"to": 6}, name="scalar_f64_to_i32"))
    cases.append(Case(op="cast", inputs=[np.zeros((2, 0), np.float32)],
                      outputs=[np.zeros((2, 0), np.int64)], attrs={"to": 7},
                      name="empty_f32_to_i64"))
    cases.append(Case(op="cast", inputs=[np.array([1.5], np.float32)],
                      outputs=[np.array([1.5], np.float16)], attrs={"to": 10, "saturate": 0},
                      name="saturate_ignored_f32_to_f16"))
    return cases


def cases():
    """Unary ops, clip and cast; the binary/variadic ops are in elementwise_binary.py."""
    return (unary_float_cases() + unary_int_cases() + predicate_cases() + clip_cases()
            + cast_cases())
