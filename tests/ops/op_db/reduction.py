"""Op database: reduce_*, arg_max/arg_min, cumsum, top_k. References are numpy (float64 on
the values rounded to the case dtype, exact int64 for integers); they never call frame."""
from __future__ import annotations

import numpy as np

from op_db.common import Case, ints_attr
from op_db.linalg import FLOATS, NP, i64, quantize, store, typed

ARITH = FLOATS + ("i32", "i64")
MINMAX = ARITH + ("i8", "u8")
INDEXABLE = FLOATS + ("i8", "i16", "i32", "i64", "u8")


def _identity_fill(fn_name, dtype_is_int):
    return {"reduce_max": -np.inf, "reduce_min": np.inf, "reduce_log_sum": -np.inf,
            "reduce_log_sum_exp": -np.inf, "reduce_prod": 1.0,
            "reduce_mean": 0.0 if dtype_is_int else np.nan}.get(fn_name, 0.0)


def reducer(op):
    """numpy reference of a ReduceXxx op: f(x, axes tuple or None, keepdims)."""
    def lse(x, axis, keepdims):
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        s = np.sum(np.exp(x - m), axis=axis, keepdims=True)
        r = np.log(s) + m
        return r if keepdims else np.squeeze(r, axis=axis)
    table = {
        "reduce_sum": lambda x, a, k: np.sum(x, axis=a, keepdims=k),
        "reduce_mean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
        "reduce_prod": lambda x, a, k: np.prod(x, axis=a, keepdims=k),
        "reduce_max": lambda x, a, k: np.max(x, axis=a, keepdims=k),
        "reduce_min": lambda x, a, k: np.min(x, axis=a, keepdims=k),
        "reduce_l1": lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k),
        "reduce_l2": lambda x, a, k: np.sqrt(np.sum(np.square(x), axis=a, keepdims=k)),
        "reduce_sum_square": lambda x, a, k: np.sum(np.square(x), axis=a, keepdims=k),
        "reduce_log_sum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
        "reduce_log_sum_exp": lse,
    }
    f = table[op]

    def ref(x, axes, keepdims):
        shape = x.shape
        a = tuple(range(x.ndim)) if axes is None else tuple(int(v) % max(x.ndim, 1) for v in axes)
        if any(shape[i] == 0 for i in a):
            out_shape = tuple(1 if i in a else d for i, d in enumerate(shape) if keepdims or
                              i not in a)
            is_int = np.issubdtype(x.dtype, np.integer)
            fill = _identity_fill(op, is_int)
            if is_int and op == "reduce_max":
                fill = np.iinfo(x.dtype).min
            if is_int and op == "reduce_min":
                fill = np.iinfo(x.dtype).max
            return np.full(out_shape, fill)
        if np.issubdtype(x.dtype, np.integer):
            r = f(x.astype(np.int64), a, keepdims)
            if op in ("reduce_mean", "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp"):
                r = np.trunc(r)
            return r
        return f(x, a, keepdims)
    return ref


REDUCE_OPS = ["reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min",
              "reduce_l1", "reduce_l2", "reduce_sum_square", "reduce_log_sum",
              "reduce_log_sum_exp"]


def reduce_cases(rng):
    out = []
    for op in REDUCE_OPS:
        ref = reducer(op)
        positive = op == "reduce_log_sum"
        base = rng.standard_normal((3, 4, 5))
        if positive:
            base = np.abs(base) + 0.1
        if op == "reduce_prod":
            base = 0.5 + rng.random((3, 4, 5))
        dts = MINMAX if op in ("reduce_max", "reduce_min") else ARITH
        int_base = rng.integers(1 if positive else -5, 6, size=(3, 4, 5)).astype(np.float64)
        if op == "reduce_prod":
            int_base = rng.integers(1, 3, size=(3, 4, 5)).astype(np.float64)
        for dt in dts:
            x = base if dt in FLOATS else (np.abs(int_base) if dt == "u8" else int_base)
            out += typed(op, "all", lambda v: ref(v, None, True), [x], dtypes=(dt,))
            out += typed(op, "axes_input", lambda v, a: ref(v, a, True), [x, i64([0, -1])],
                         dtypes=(dt,))
            out += typed(op, "axes_attr_nokeep", lambda v: ref(v, [1], False), [x],
                         {"axes": [1], "keepdims": 0}, dtypes=(dt,))
        x = base[:, :, :3] if positive else rng.standard_normal((7, 33))
        out += typed(op, "odd_nokeep", lambda v, a: ref(v, [-1], False), [x, i64([-1])],
                     {"keepdims": 0}, dtypes=("f32",))
        out += typed(op, "scalar", lambda v: ref(v, None, True), [np.array(2.5)],
                     dtypes=("f32",))
        out += typed(op, "empty_axis", lambda v, a: ref(v, [1], True),
                     [np.zeros((2, 0, 3)), i64([1])], dtypes=("f32",))
        out += typed(op, "empty_kept", lambda v, a: ref(v, [2], False),
                     [np.zeros((2, 0, 3)), i64([2])], {"keepdims": 0}, dtypes=("f32",))
    # noop_with_empty_axes: nothing is reduced.
    x = rng.standard_normal((2, 3))
    out += typed("reduce_sum", "noop_empty_axes", lambda v, a: v,
                 [x, np.zeros((0,), np.int64)], {"noop_with_empty_axes": 1})
    out += typed("reduce_sum_square", "noop_empty_axes", lambda v, a: v * v,
                 [x, np.zeros((0,), np.int64)], {"noop_with_empty_axes": 1}, dtypes=("f32",))
    out += typed("reduce_sum", "empty_axes_all", lambda v, a: np.sum(v, keepdims=True),
                 [x, np.zeros((0,), np.int64)], dtypes=("f32",))
    # NaN propagates through max/min, inf through sum.
    xn = np.array([[1.0, np.nan, 3.0], [2.0, -np.inf, 0.5]], np.float32)
    out.append(Case("reduce_max", [xn, i64([1])], [np.array([[np.nan], [2.0]], np.float32)],
                    name="nan_inf"))
    out.append(Case("reduce_min", [xn, i64([1])], [np.array([[np.nan], [-np.inf]], np.float32)],
                    name="nan_inf"))
    out.append(Case("reduce_log_sum_exp", [np.full((2, 3), -np.inf, np.float32)],
                    [np.full((1, 1), -np.inf, np.float32)], name="all_neg_inf"))
    out.append(Case("reduce_log_sum_exp", [np.array([1000.0, 1000.0], np.float32)],
                    [np.array([1000.0 + np.log(2.0)], np.float32)], name="large_stable"))
    b = np.array([[True, False], [False, False]])
    out.append(Case("reduce_max", [b, i64([1])], [np.array([[True], [False]])], name="bool"))
    out.append(Case("reduce_min", [b], [np.array([[False]])], name="bool_all"))
    out.append(Case("reduce_max", [np.zeros((0, 2), np.int8), i64([0])],
                    [np.full((1, 2), -128, np.int8)], name="empty_i8_lowest"))
    out.append(Case("reduce_mean", [np.array([[1, 2], [3, 5]], np.int32), i64([1])],
                    [np.array([[1], [4]], np.int32)], name="int_truncates"))
    return out


def arg_ref(is_max, axis, keepdims, last):
    def f(x):
        v = np.flip(x, axis=axis) if last else x
        r = np.argmax(v, axis=axis) if is_max else np.argmin(v, axis=axis)
        if last:
            r = x.shape[axis] - 1 - r
        r = r.astype(np.int64)
        return np.expand_dims(r, axis) if keepdims else r
    return f


def arg_cases(rng):
    out = []
    for op, is_max in (("arg_max", True), ("arg_min", False)):
        # Few distinct values so ties occur in every dtype.
        x = rng.integers(0, 4, size=(3, 4, 5)).astype(np.float64)
        for dt in INDEXABLE:
            out += typed(op, "axis1", arg_ref(is_max, 1, True, False), [x], {"axis": 1},
                         dtypes=(dt,), typed_outputs=())
            out += typed(op, "last_nokeep", arg_ref(is_max, 2, False, True), [x],
                         {"axis": -1, "keepdims": 0, "select_last_index": 1}, dtypes=(dt,),
                         typed_outputs=())
        x = rng.standard_normal((33,))
        out += typed(op, "vec_default_axis", arg_ref(is_max, 0, True, False), [x],
                     dtypes=("f32",), typed_outputs=())
        out += typed(op, "empty_outer", arg_ref(is_max, 1, True, False), [np.zeros((0, 3))],
                     {"axis": 1}, dtypes=("f32",), typed_outputs=())
    return out


def cumsum_ref(axis, exclusive, reverse):
    def f(x, _a):
        v = np.flip(x, axis) if reverse else x
        acc = x.dtype if not np.issubdtype(x.dtype, np.integer) else np.int64
        c = np.cumsum(v, axis=axis, dtype=acc)
        if exclusive:
            c = c - v
        return np.flip(c, axis) if reverse else c
    return f


def cumsum_cases(rng):
    out = []
    x = rng.standard_normal((3, 5))
    xi = rng.integers(-9, 10, size=(3, 5)).astype(np.float64)
    for ex in (0, 1):
        for rev in (0, 1):
            attrs = {"exclusive": ex, "reverse": rev}
            nm = f"ex{ex}_rev{rev}"
            for dt in ARITH:
                out += typed("cumsum", f"{nm}", cumsum_ref(1, ex, rev),
                             [x if dt in FLOATS else xi, i64(1)], attrs, dtypes=(dt,))
    out += typed("cumsum", "axis0_i32", cumsum_ref(0, 0, 0),
                 [x, np.array([0], np.int32)], dtypes=("f32",))
    out += typed("cumsum", "neg_axis_odd", cumsum_ref(0, 0, 0), [rng.standard_normal((33,)),
                                                                  i64(-1)], dtypes=("f32",))
    out += typed("cumsum", "empty", cumsum_ref(1, 0, 0), [np.zeros((2, 0)), i64(1)],
                 dtypes=("f32",))
    # The axis need not be a constant for shape inference.
    for c in typed("cumsum", "runtime_axis", cumsum_ref(0, 0, 1), [x, i64(0)], {"reverse": 1},
                   dtypes=("f32",)):
        c.constant_inputs = []
        out.append(c)
    return out


def topk_ref(k, axis, largest):
    def f(x, _k):
        key = x.astype(np.float64)
        order = np.argsort(-key if largest else key, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis)
        return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)
    return f


def topk_cases(rng):
    out = []
    x = rng.integers(0, 5, size=(3, 7)).astype(np.float64)  # ties everywhere
    for dt in INDEXABLE:
        out += typed("top_k", "ties_largest", topk_ref(3, 1, True), [x, i64([3])], dtypes=(dt,))
        out += typed("top_k", "ties_smallest_axis0", topk_ref(2, 0, False), [x, i64([2])],
                     {"axis": 0, "largest": 0}, dtypes=(dt,))
    xs = rng.standard_normal((2, 33, 3))
    out += typed("top_k", "odd_mid_axis", topk_ref(5, 1, True), [xs, i64([5])], {"axis": 1},
                 dtypes=("f32",))
    out += typed("top_k", "k_all_unsorted", topk_ref(7, 1, False), [x, i64([7])],
                 {"largest": 0, "sorted": 0}, dtypes=("f32",))
    out += typed("top_k", "k0", topk_ref(0, 1, True), [x, i64([0])], dtypes=("f32",))
    out += typed("top_k", "empty_outer", topk_ref(1, 1, True), [np.zeros((0, 4)), i64([1])],
                 dtypes=("f32",))
    return out


def cases():
    rng = np.random.default_rng(4321)
    return reduce_cases(rng) + arg_cases(rng) + cumsum_cases(rng) + topk_cases(rng)
