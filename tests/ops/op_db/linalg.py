"""Op database: matmul, gemm, einsum. References are numpy in float64 (or exact integer
arithmetic), computed on the values after rounding to the case dtype; they never call frame.

The `typed` helper (also used by reduction.py and nn.py) builds one case per dtype from float64
base data: typed inputs are rounded to the dtype, the reference runs on the rounded values in
float64, and typed outputs are rounded once (bf16 as uint16 bit patterns).
"""
from __future__ import annotations

import numpy as np

from op_db.common import Case, from_bf16_bits, to_bf16_bits

FLOATS = ("f32", "f64", "f16", "bf16")
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_}


def quantize(x, dt):
    """(stored array, value seen by the reference) of base data `x` in dtype `dt`."""
    x = np.asarray(x)
    if dt == "bf16":
        bits = to_bf16_bits(x.astype(np.float32)).reshape(x.shape)  # keeps rank 0
        return bits, from_bf16_bits(bits.reshape(-1)).reshape(x.shape).astype(np.float64)
    a = x.astype(NP[dt])
    return a, (a.astype(np.float64) if dt in FLOATS else a)


def store(y, dt):
    """Reference result `y` rounded to dtype `dt` (bf16 as bit patterns)."""
    y = np.asarray(y)
    if dt == "bf16":
        return to_bf16_bits(y.astype(np.float32)).reshape(y.shape)
    return y.astype(NP[dt])


def typed(op, name, fn, inputs, attrs=None, dtypes=FLOATS, typed_inputs=(0,),
          typed_outputs=(0,), **kw):
    """One Case per dtype; `fn(*values)` returns an array or a tuple of arrays."""
    out = []
    for dt in dtypes:
        ins, vals = [], []
        for i, x in enumerate(inputs):
            if x is None or i not in typed_inputs:
                ins.append(x)
                vals.append(x)
            else:
                s, v = quantize(x, dt)
                ins.append(s)
                vals.append(v)
        with np.errstate(all="ignore"):
            res = fn(*vals)
        res = list(res) if isinstance(res, tuple) else [res]
        outs = [store(r, dt) if j in typed_outputs else np.asarray(r) for j, r in enumerate(res)]
        bf = dt == "bf16"
        out.append(Case(op=op, inputs=ins, outputs=outs, attrs=dict(attrs or {}),
                        name=f"{name}_{dt}",
                        bf16_inputs=[i for i in typed_inputs
                                     if bf and i < len(inputs) and inputs[i] is not None],
                        bf16_outputs=[j for j in typed_outputs if bf], **kw))
    return out


def i64(v):
    return np.array(v, dtype=np.int64)


MAT = FLOATS + ("i32", "i64")
# float32 products accumulate in float; over K terms the rounding differs from a float64
# reference by up to ~K ulps of the largest partial sum.
ACC_TOL = {"rtol": 1e-4, "atol": 1e-5, "why": "float32 accumulation over K terms"}


def ints(rng, shape):
    return rng.integers(-9, 10, size=shape).astype(np.float64)


def matmul_cases(rng):
    out = []
    shapes = [((3, 4), (4, 5), "2d"), ((7,), (7,), "vec_vec"), ((7,), (7, 3), "vec_mat"),
              ((2, 3, 7), (7,), "batch_vec"), ((2, 1, 3, 4), (5, 4, 2), "broadcast_batch"),
              ((1, 33), (33, 17), "odd"), ((0, 4), (4, 3), "empty_m"), ((3, 0), (0, 2), "k0"),
              ((2, 3, 4), (4, 6), "batch_mat")]
    for sa, sb, nm in shapes:
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        for c in typed("matmul", nm, np.matmul, [a, b], typed_inputs=(0, 1)):
            if c.name.endswith("f32"):
                c.rtol, c.atol, c.why = ACC_TOL["rtol"], ACC_TOL["atol"], ACC_TOL["why"]
            out.append(c)
    a, b = ints(rng, (2, 3, 5)), ints(rng, (5, 4))
    out += typed("matmul", "ints", np.matmul, [a, b], dtypes=("i32", "i64"), typed_inputs=(0, 1))
    # int32 products wrap like numpy's int32 matmul.
    big = np.full((1, 2), 2 ** 30, np.int32)
    out.append(Case("matmul", [big, np.full((2, 1), 2, np.int32)], [np.zeros((1, 1), np.int32)],
                    name="i32_wrap"))
    out.append(Case("matmul", [np.array([[np.inf, 1]], np.float32), np.array([[0], [1]],
                                                                             np.float32)],
                    [np.array([[np.nan]], np.float32)], name="inf_times_zero"))
    return out


def gemm_ref(alpha, beta, ta, tb):
    def f(a, b, c=None):
        aa = a.T if ta else a
        bb = b.T if tb else b
        y = alpha * (aa @ bb)
        if c is not None:
            y = y + beta * c
        return y
    return f


def gemm_int_ref(alpha, beta, ta, tb):
    def f(a, b, c=None):
        y = gemm_ref(alpha, beta, ta, tb)(a.astype(np.float64), b.astype(np.float64),
                                          None if c is None else c.astype(np.float64))
        return np.trunc(y).astype(a.dtype)
    return f


def gemm_cases(rng):
    out = []
    variants = [
        ((3, 4), (4, 5), None, {}, "plain"),
        ((4, 3), (4, 5), (3, 5), {"transA": 1}, "transA_full_c"),
        ((3, 4), (5, 4), (5,), {"transB": 1, "alpha": 0.5, "beta": 2.0}, "transB_row_c"),
        ((4, 3), (5, 4), (3, 1), {"transA": 1, "transB": 1}, "both_col_c"),
        ((3, 4), (4, 5), (), {"beta": -1.0}, "scalar_c"),
        ((7, 33), (33, 9), (1, 9), {"alpha": 1.5}, "odd"),
        ((0, 4), (4, 5), (5,), {}, "empty"),
    ]
    for sa, sb, sc, attrs, nm in variants:
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        c = None if sc is None else rng.standard_normal(sc)
        f = gemm_ref(attrs.get("alpha", 1.0), attrs.get("beta", 1.0), attrs.get("transA", 0),
                     attrs.get("transB", 0))
        ins = [a, b] if c is None else [a, b, c]
        for case in typed("gemm", nm, f, ins, attrs, typed_inputs=(0, 1, 2)):
            if case.name.endswith("f32"):
                case.rtol, case.atol, case.why = ACC_TOL["rtol"], ACC_TOL["atol"], ACC_TOL["why"]
            out.append(case)
    a, b, c = ints(rng, (3, 4)), ints(rng, (4, 2)), ints(rng, (2,))
    out += typed("gemm", "ints", gemm_int_ref(2.0, 1.0, 0, 0), [a, b, c], {"alpha": 2.0},
                 dtypes=("i32", "i64"), typed_inputs=(0, 1, 2))
    return out


def einsum_cases(rng):
    out = []
    eqs = [
        ("ij,jk->ik", [(3, 4), (4, 5)], "matmul"),
        ("ij,jk", [(3, 4), (4, 5)], "implicit"),
        ("ii->i", [(4, 4)], "diag"),
        ("ii", [(5, 5)], "trace"),
        ("ij->ji", [(3, 7)], "transpose"),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], "batch"),
        ("...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 2)], "ellipsis_broadcast"),
        ("i,i->", [(33,), (33,)], "dot"),
        ("i,j->ij", [(3,), (4,)], "outer"),
        ("ij->", [(3, 5)], "sum_all"),
        ("bIj,Jj->bIJ", [(2, 3, 4), (5, 4)], "uppercase"),
        ("iij->j", [(3, 3, 2)], "partial_diag"),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], "three_inputs"),
        ("...i->...", [(2, 3, 4)], "ellipsis_sum"),
        ("ab,ab->a", [(0, 3), (0, 3)], "empty"),
    ]
    for eq, shapes, nm in eqs:
        ins = [rng.standard_normal(s) for s in shapes]
        f = (lambda e: lambda *xs: np.einsum(e, *xs))(eq)
        out += typed("einsum", nm, f, ins, {"equation": eq},
                     typed_inputs=tuple(range(len(ins))))
    a, b = ints(rng, (2, 3)), ints(rng, (3, 4))
    for dt in ("i8", "i16", "i32", "i64", "u8"):
        qa, qb = np.abs(a).astype(NP[dt]), np.abs(b).astype(NP[dt])
        ref = np.einsum("ij,jk->ik", qa.astype(np.int64), qb.astype(np.int64)).astype(NP[dt])
        out.append(Case("einsum", [qa, qb], [ref], {"equation": "ij,jk->ik"}, name=f"ints_{dt}"))
    return out


def cases():
    rng = np.random.default_rng(1234)
    return matmul_cases(rng) + gemm_cases(rng) + einsum_cases(rng)
