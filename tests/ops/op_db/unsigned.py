"""Op database cases for the unsigned integer dtypes uint16/uint32/uint64 (u8 is covered by the
other families): arithmetic with wrap-around, Div/Mod, Max/Min, Pow exponents, BitShift,
comparisons, Where, Cast and data movement. References: numpy's own unsigned arithmetic (which
wraps modulo 2^bits like ONNX), never the kernel under test."""
from __future__ import annotations

import numpy as np

from op_db.common import Case

UINTS = {"u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
ONNX_TYPE = {"u16": 4, "u32": 12, "u64": 13}

_rng = np.random.default_rng(20261130)


def _rand(t, shape, lo=0, hi=None):
    hi = np.iinfo(t).max if hi is None else hi
    return _rng.integers(lo, hi, size=shape, endpoint=True, dtype=t)


def _arith(dt, t):
    out = []
    a = _rand(t, (2, 3, 4))
    b = _rand(t, (3, 1))
    nz = _rand(t, (4,), 1, 1000)
    with np.errstate(over="ignore"):
        out += [
            Case("add", [a, b], [a + b], name=f"wrap_bcast_{dt}"),
            Case("sub", [b, a], [b - a], name=f"wrap_bcast_{dt}"),
            Case("mul", [a, b], [a * b], name=f"wrap_bcast_{dt}"),
        ]
    out += [
        Case("div", [a, nz], [a // nz], name=f"bcast_{dt}"),
        Case("mod", [a, nz], [np.mod(a, nz)], {"fmod": 0}, name=f"bcast_{dt}"),
        Case("mod", [a, nz], [np.fmod(a, nz)], {"fmod": 1}, name=f"fmod_bcast_{dt}"),
        Case("max", [a, b], [np.maximum(a, b)], name=f"bcast_{dt}"),
        Case("min", [a, b, nz], [np.minimum(np.minimum(a, b), nz)], name=f"three_{dt}"),
        Case("sum", [a, b], [a + b], name=f"bcast_{dt}"),
        Case("abs", [a], [a], name=f"{dt}"),
        Case("sign", [np.array([0, 1, 7], t)], [np.array([0, 1, 1], t)], name=f"{dt}"),
    ]
    # The largest values: comparisons and max/min must not go through a signed type.
    big = np.array([np.iinfo(t).max, 0, np.iinfo(t).max - 1, 1], t)
    one = np.array([1, np.iinfo(t).max, np.iinfo(t).max, 0], t)
    out += [
        Case("max", [big, one], [np.maximum(big, one)], name=f"extremes_{dt}"),
        Case("min", [big, one], [np.minimum(big, one)], name=f"extremes_{dt}"),
        Case("less", [big, one], [big < one], name=f"extremes_{dt}"),
        Case("greater", [big, one], [big > one], name=f"extremes_{dt}"),
        Case("less_equal", [big, one], [big <= one], name=f"extremes_{dt}"),
        Case("greater_equal", [big, one], [big >= one], name=f"extremes_{dt}"),
        Case("equal", [big, one], [big == one], name=f"extremes_{dt}"),
        Case("mod", [big, np.array([7, 3, 5, 2], t)], [np.mod(big, np.array([7, 3, 5, 2], t))],
             {"fmod": 0}, name=f"extremes_{dt}"),
        Case("div", [big, np.array([7, 3, 5, 2], t)], [big // np.array([7, 3, 5, 2], t)],
             name=f"extremes_{dt}"),
    ]
    return out


def _bit_shift(dt, t):
    out = []
    bits = np.iinfo(t).bits
    a = _rand(t, (11,))
    s = _rand(t, (11,), 0, bits - 1)
    with np.errstate(over="ignore"):
        out.append(Case("bit_shift", [a, s], [np.left_shift(a, s)], {"direction": "LEFT"},
                        name=f"left_{dt}"))
    out.append(Case("bit_shift", [a, s], [np.right_shift(a, s)], {"direction": "RIGHT"},
                    name=f"right_{dt}"))
    # Shifts by the bit width or more give 0 (numpy's result for these dtypes).
    wide = np.array([bits, bits + 1, 200], t)
    ones = np.array([1, np.iinfo(t).max, 3], t)
    for d in ("LEFT", "RIGHT"):
        out.append(Case("bit_shift", [ones, wide], [np.zeros(3, t)], {"direction": d},
                        name=f"{d.lower()}_wide_{dt}"))
    return out


def _pow(dt, t):
    e = np.array([0, 1, 2, 3, 5], t)
    x = np.array([1.5, -2.0, 3.0, 0.5, 2.0], np.float32)
    xi = np.array([3, -2, 7, 1, -1], np.int64)
    return [
        Case("pow", [x, e], [np.power(x.astype(np.float64), e.astype(np.float64))
                             .astype(np.float32)], name=f"f32_base_{dt}_exp"),
        Case("pow", [xi, e], [np.power(xi, e.astype(np.int64))], name=f"i64_base_{dt}_exp"),
    ]


def _cast(dt, t):
    out = []
    v = np.array([0, 1, 255, 65535, 123456789, 2**40 + 3], np.int64)
    out.append(Case("cast", [v], [v.astype(t)], {"to": ONNX_TYPE[dt]}, name=f"wrap_i64_to_{dt}"))
    u = np.array([0, 7, np.iinfo(t).max], t)
    out.append(Case("cast", [u], [u.astype(np.int64)], {"to": 7}, name=f"{dt}_to_i64"))
    out.append(Case("cast", [u], [u.astype(np.float64)], {"to": 11}, name=f"{dt}_to_f64"))
    f = np.array([0.0, 1.9, 300.5, 65535.0], np.float32)
    out.append(Case("cast", [f], [np.trunc(f).astype(t)], {"to": ONNX_TYPE[dt]},
                    name=f"f32_to_{dt}"))
    out.append(Case("cast", [u], [u != 0], {"to": 9}, name=f"{dt}_to_bool"))
    return out


def _movement(dt, t):
    x = _rand(t, (2, 3, 4))
    c = np.array([[True, False, True, False]] * 3)
    y = _rand(t, (3, 4))
    idx = np.array([2, 0, 2], np.int64)
    return [
        Case("reshape", [x, np.array([4, -1], np.int64)], [x.reshape(4, 6)], name=f"{dt}"),
        Case("transpose", [x], [x.transpose(2, 0, 1)], {"perm": [2, 0, 1]}, name=f"{dt}"),
        Case("concat", [x, x[:, :1]], [np.concatenate([x, x[:, :1]], 1)], {"axis": 1},
             name=f"{dt}"),
        Case("gather", [x, idx], [np.take(x, idx, axis=1)], {"axis": 1}, name=f"{dt}"),
        Case("where", [c, x, y], [np.where(c, x, y)], name=f"bcast_{dt}"),
        Case("identity", [x], [x], name=f"{dt}"),
    ]


def _reduce_linalg(dt, t):
    """Reductions, CumSum, MatMul, Gemm and PRelu: ONNX defines them for uint32/uint64 (not uint16)."""
    x = _rand(t, (3, 4), 0, 1000)
    y = _rand(t, (4, 2), 0, 1000)
    ax = np.array([1], np.int64)
    return [
        Case("reduce_sum", [x, ax], [np.sum(x, axis=1, keepdims=True, dtype=t)],
             name=f"axis1_{dt}"),
        Case("reduce_max", [x], [np.max(x, keepdims=True)], name=f"all_{dt}"),
        Case("reduce_min", [x, ax], [np.min(x, axis=1, keepdims=True)], name=f"axis1_{dt}"),
        Case("cumsum", [x, ax], [np.cumsum(x, axis=1, dtype=t)], name=f"axis1_{dt}"),
        Case("matmul", [x, y], [np.matmul(x, y)], name=f"{dt}"),
        Case("gemm", [x, y], [np.matmul(x, y)], name=f"{dt}"),
        Case("prelu", [x, y[:, 0]], [x], name=f"{dt}"),
    ]


def cases():
    out = []
    for dt, t in UINTS.items():
        out += _arith(dt, t) + _bit_shift(dt, t) + _pow(dt, t) + _cast(dt, t) + _movement(dt, t)
        if dt != "u16":
            out += _reduce_linalg(dt, t)
    return out
