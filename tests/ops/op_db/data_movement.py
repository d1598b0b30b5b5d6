"""Op database: data-movement ops (reshape ... trilu, resize) and the data-dependent non_zero,
unique and non_max_suppression. References are numpy (or torch for the resize modes it implements); they never call
frame.

bfloat16 data is passed as uint16 bit patterns; for pure data movement, applying the numpy op
to those bits is the reference (bits move unchanged).
"""
from __future__ import annotations

import numpy as np

from op_db.common import Case, to_bf16_bits, from_bf16_bits

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min
DTYPES = ["f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "bool"]
# The pure copies run for every dtype (a device backend copies them by element size), so
# their cases cover every dtype a kernel may declare.
MOVE_DTYPES = DTYPES + ["u16", "u32", "u64"]
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_, "u16": np.uint16,
      "u32": np.uint32, "u64": np.uint64}


def i64(v):
    return np.array(v, dtype=np.int64)


def rand(rng, shape, dt):
    """Random array of frame dtype `dt` (bf16 as bit patterns)."""
    if dt == "bool":
        return rng.random(shape) > 0.5
    if dt == "bf16":
        return to_bf16_bits(rng.standard_normal(shape).astype(np.float32))
    if dt in ("f32", "f64", "f16"):
        return rng.standard_normal(shape).astype(NP[dt])
    lo, hi = (0, 200) if dt.startswith("u") else (-100, 100)
    return rng.integers(lo, hi, size=shape).astype(NP[dt])


def case(op, inputs, outputs, attrs=None, name="", dt=None, data_inputs=(0,), **kw):
    """Case with bf16 bookkeeping: data_inputs/outputs hold bits when dt == 'bf16'."""
    bf = dt == "bf16"
    return Case(op=op, inputs=inputs, outputs=outputs, attrs=attrs or {}, name=name,
                bf16_inputs=list(data_inputs) if bf else [],
                bf16_outputs=list(range(len(outputs))) if bf else [], **kw)


def reshape_cases(rng):
    out = []
    for dt in DTYPES:
        x = rand(rng, (2, 3, 4), dt)
        out.append(case("reshape", [x, i64([4, -1])], [x.reshape(4, 6)], name=f"infer_{dt}", dt=dt))
    x = rand(rng, (2, 3, 4), "f32")
    out += [
        Case("reshape", [x, i64([0, 0, -1, 2])], [x.reshape(2, 3, 2, 2)], name="copy_dims"),
        Case("reshape", [x, i64([24])], [x.reshape(24)], name="flat"),
        Case("reshape", [np.float32(3.5), i64([1, 1])], [np.full((1, 1), 3.5, np.float32)],
             name="scalar_in"),
        Case("reshape", [np.ones((1,), np.float32), np.zeros((0,), np.int64)],
             [np.array(1.0, np.float32)], name="to_scalar"),
        Case("reshape", [np.zeros((0, 3), np.float32), i64([3, 0])], [np.zeros((3, 0), np.float32)],
             attrs={"allowzero": 1}, name="allowzero_empty"),
        Case("reshape", [np.zeros((0, 3), np.float32), i64([-1, 3])],
             [np.zeros((0, 3), np.float32)], name="empty_infer"),
    ]
    return out


def transpose_cases(rng):
    out = []
    for dt in DTYPES:
        x = rand(rng, (2, 3, 5), dt)
        out.append(case("transpose", [x], [x.transpose()], name=f"default_{dt}", dt=dt))
    x = rand(rng, (3, 4, 7), "f32")
    out.append(Case("transpose", [x], [x.transpose(1, 0, 2)], {"perm": [1, 0, 2]}, "keep_last"))
    y = rand(rng, (2, 3, 1, 5, 4), "i64")
    out.append(Case("transpose", [y], [y.transpose(4, 0, 3, 2, 1)], {"perm": [4, 0, 3, 2, 1]},
                    "rank5"))
    z = rand(rng, (37, 129, 9), "f32")
    out.append(Case("transpose", [z], [z.transpose(2, 0, 1)], {"perm": [2, 0, 1]}, "large"))
    e = np.zeros((0, 3, 2), np.float32)
    out.append(Case("transpose", [e], [e.transpose(2, 0, 1)], {"perm": [2, 0, 1]}, "empty"))
    out.append(Case("transpose", [np.float32(2.0)], [np.float32(2.0)], name="scalar"))
    out.append(Case("transpose", [x], [x.transpose(2, 0, 1)], {"perm": [-1, 0, 1]},
                    "negative_perm"))
    return out


def concat_cases(rng):
    out = []
    for dt in DTYPES:
        a, b, c = rand(rng, (2, 3), dt), rand(rng, (2, 1), dt), rand(rng, (2, 4), dt)
        out.append(case("concat", [a, b, c], [np.concatenate([a, b, c], 1)], {"axis": 1},
                        f"axis1_{dt}", dt, data_inputs=(0, 1, 2)))
    a, b = rand(rng, (2, 3, 5), "f32"), rand(rng, (1, 3, 5), "f32")
    e = np.zeros((0, 3, 5), np.float32)
    out += [
        Case("concat", [a, e, b], [np.concatenate([a, e, b], 0)], {"axis": 0}, "with_empty"),
        Case("concat", [a], [a], {"axis": -1}, "single"),
        Case("concat", [a, a], [np.concatenate([a, a], -1)], {"axis": -1}, "negative_axis"),
        Case("concat", [e, e], [np.zeros((0, 3, 5), np.float32)], {"axis": 0}, "all_empty"),
        Case("concat", [i64([1, 2]), i64([3])], [i64([1, 2, 3])], {"axis": 0}, "shape_vectors",
             constant_inputs=[]),
    ]
    return out


def split_cases(rng):
    out = []
    for dt in DTYPES:
        x = rand(rng, (2, 7), dt)
        parts = [x[:, :2], x[:, 2:5], x[:, 5:]]
        out.append(case("split", [x, i64([2, 3, 2])], parts, {"axis": 1}, f"sizes_{dt}", dt))
    x = rand(rng, (7, 3), "f32")
    out += [
        Case("split", [x], [x[:3], x[3:6], x[6:]], {"num_outputs": 3}, "num_outputs_uneven"),
        Case("split", [x], [x[:, 0:1], x[:, 1:2], x[:, 2:3]], {"axis": -1}, "equal_by_outputs"),
        Case("split", [x, i64([0, 7])], [x[:0], x], {"axis": 0}, "zero_part"),
        Case("split", [x], [x], {"num_outputs": 1}, "one"),
    ]
    return out


def np_slice(x, starts, ends, axes=None, steps=None):
    """Independent reference: Python slice objects (same clamping rules as ONNX)."""
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        s = max(min(int(s), 2**62), -2**62)
        e = max(min(int(e), 2**62), -2**62)
        if st < 0 and e < -x.shape[a]:
            e = None  # ONNX clamps to -1 == "before the first element"
        idx[a] = slice(s, e, max(min(int(st), 2**62), -2**62))
    return x[tuple(idx)]


def slice_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (4, 6), dt)
        out.append(case("slice", [x, i64([1, 1]), i64([3, 5])], [x[1:3, 1:5]], name=f"basic_{dt}",
                        dt=dt))
    x = rand(rng, (5, 7, 3), "f32")
    specs = [
        ("neg_step", [4, -1], [0, I64_MIN], [0, 1], [-1, -2]),
        ("int64_extremes", [0, I64_MIN], [I64_MAX, I64_MAX], [-1, 1], [1, 1]),
        ("reverse_all", [-1], [I64_MIN], [1], [-1]),
        ("clamp", [-100, 2], [100, 1000], [0, 1], [2, 3]),
        ("empty_result", [3], [1], [0], [1]),
        ("neg_axes", [1], [3], [-1], [1]),
        ("huge_step", [0], [7], [1], [I64_MAX]),
        ("min_step", [6], [I64_MIN], [1], [I64_MIN]),
        ("neg_start_end", [-3], [-1], [1], [1]),
    ]
    for name, s, e, a, st in specs:
        out.append(Case("slice", [x, i64(s), i64(e), i64(a), i64(st)],
                        [np_slice(x, s, e, a, st)], name=name))
    out.append(Case("slice", [x, np.array([1], np.int32), np.array([4], np.int32)], [x[1:4]],
                    name="int32_no_axes"))
    e = np.zeros((0, 4), np.float32)
    out.append(Case("slice", [e, i64([0, 1]), i64([5, 3])], [e[:, 1:3]], name="empty_in"))
    big = rand(rng, (64, 80, 9), "f32")
    out.append(Case("slice", [big, i64([1, 70]), i64([63, 2]), i64([0, 1]), i64([2, -3])],
                    [big[1:63:2, 70:2:-3]], name="large"))
    return out


def gather_cases(rng):
    out = []
    for dt in DTYPES:
        x = rand(rng, (5, 3), dt)
        idx = i64([[0, -1], [4, 2]])
        out.append(case("gather", [x, idx], [np.take(x, idx % 5, axis=0)], name=f"axis0_{dt}",
                        dt=dt))
    x = rand(rng, (3, 7, 2), "f32")
    idx32 = np.array([6, 0, -7, 3], np.int32)
    out += [
        Case("gather", [x, idx32], [np.take(x, idx32 % 7, axis=1)], {"axis": 1}, "axis1_i32"),
        Case("gather", [x, i64(1)], [x[:, :, 1]], {"axis": -1}, "scalar_index"),
        Case("gather", [x, np.zeros((0,), np.int64)], [np.zeros((3, 0, 2), np.float32)],
             {"axis": 1}, "empty_indices"),
        Case("gather", [i64([4, 5, 6]), i64(-1)], [i64(6)], name="shape_like", constant_inputs=[1]),
    ]
    return out


def gather_elements_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (3, 4), dt)
        idx = rng.integers(-3, 3, size=(2, 4)).astype(np.int64)
        out.append(case("gather_elements", [x, idx], [np.take_along_axis(x, idx % 3, 0)],
                        name=f"axis0_{dt}", dt=dt))
    x = rand(rng, (2, 3, 5), "f16")
    idx = rng.integers(0, 5, size=(2, 3, 7)).astype(np.int32)
    out.append(Case("gather_elements", [x, idx], [np.take_along_axis(x, idx, -1)], {"axis": -1},
                    "last_axis_i32"))
    return out


def gather_nd_ref(data, idx, b):
    bshape = data.shape[:b]
    nb = int(np.prod(bshape)) if b else 1
    d2 = data.reshape((nb,) + data.shape[b:])
    i2 = idx.reshape((nb, -1, idx.shape[-1]))
    res = []
    for n in range(nb):
        for t in i2[n]:
            res.append(d2[n][tuple(t)])
    return np.array(res, dtype=data.dtype).reshape(idx.shape[:-1] + data.shape[b + idx.shape[-1]:])


def gather_nd_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (3, 4, 2), dt)
        idx = i64([[0, 1], [2, -1], [1, 3]])
        out.append(case("gather_nd", [x, idx], [gather_nd_ref(x, idx, 0)], name=f"partial_{dt}",
                        dt=dt))
    x = rand(rng, (2, 3, 4), "f32")
    idx = i64([[[1, 2]], [[0, 3]]])
    out.append(Case("gather_nd", [x, idx], [gather_nd_ref(x, idx, 1)], {"batch_dims": 1}, "batch1"))
    idx = i64([[0, 1, 2], [1, 2, 3]])
    out.append(Case("gather_nd", [x, idx], [gather_nd_ref(x, idx, 0)], name="full_index"))
    return out


def scatter_elements_ref(data, idx, upd, axis, red):
    out = data.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[axis] = idx[pos] % data.shape[axis]
        tgt = tuple(tgt)
        if red == "none":
            out[tgt] = upd[pos]
        elif red == "add":
            out[tgt] = out[tgt] + upd[pos]
        elif red == "mul":
            out[tgt] = out[tgt] * upd[pos]
        elif red == "max":
            out[tgt] = max(out[tgt], upd[pos])
        else:
            out[tgt] = min(out[tgt], upd[pos])
    return out


def scatter_cases(rng):
    out = []
    for dt in ["f32", "f64", "f16", "i8", "i32", "i64", "u8"]:
        for red in ["none", "add", "mul", "max", "min"]:
            x = rand(rng, (3, 4), dt)
            # Duplicate targets only where the reduction makes the order irrelevant.
            idx = (i64([[1, 0, 2, -1], [0, 2, 1, 0]]) if red != "none"
                   else i64([[1, 0, 2, -1], [0, 2, 1, 0]])[:1])
            u = rand(rng, idx.shape, dt)
            if red == "mul" and dt in ("i8", "u8"):
                u = (np.abs(u.astype(np.int64)) % 3).astype(NP[dt])
                x = (np.abs(x.astype(np.int64)) % 5).astype(NP[dt])
            with np.errstate(over="ignore"):
                ref = scatter_elements_ref(x, idx, u, 0, red)
            out.append(Case("scatter_elements", [x, idx, u], [ref], {"reduction": red},
                            f"{red}_{dt}"))
    x = rand(rng, (2, 5), "bf16")
    u = rand(rng, (2, 2), "bf16")
    idx = np.array([[4, -5], [1, 2]], np.int32)
    out.append(Case("scatter_elements", [x, idx, u], [scatter_elements_ref(x, idx, u, 1, "none")],
                    {"axis": -1}, "axis1_bf16", bf16_inputs=[0, 2], bf16_outputs=[0]))
    xb = rand(rng, (4,), "bool")
    out.append(Case("scatter_elements", [xb, i64([3, 0]), np.array([True, False])],
                    [scatter_elements_ref(xb, i64([3, 0]), np.array([True, False]), 0, "none")],
                    name="bool"))
    # scatter_nd
    for dt in ["f32", "i64", "bool", "f16"]:
        x = rand(rng, (4, 3), dt)
        idx = i64([[2], [0]])
        u = rand(rng, (2, 3), dt)
        ref = x.copy()
        ref[2], ref[0] = u[0], u[1]
        out.append(Case("scatter_nd", [x, idx, u], [ref], name=f"rows_{dt}"))
    x = rand(rng, (2, 3, 4), "f32")
    idx = i64([[0, 1, 2], [1, 2, 3], [0, 1, 2]])
    u = rand(rng, (3,), "f32")
    ref = x.copy()
    ref[0, 1, 2] += u[0] + u[2]
    ref[1, 2, 3] += u[1]
    out.append(Case("scatter_nd", [x, idx, u], [ref], {"reduction": "add"}, "add_duplicates"))
    for red, fn in [("mul", np.multiply), ("max", np.maximum), ("min", np.minimum)]:
        ref = x.copy()
        idx2 = i64([[1, -1], [0, 0]])
        u2 = rand(rng, (2, 4), "f32")
        ref[1, 2] = fn(ref[1, 2], u2[0])
        ref[0, 0] = fn(ref[0, 0], u2[1])
        out.append(Case("scatter_nd", [x, idx2, u2], [ref], {"reduction": red}, f"{red}_slices"))
    return out


def expand_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (3, 1), dt)
        out.append(case("expand", [x, i64([2, 1, 4])], [np.broadcast_to(x, (2, 3, 4)).copy()],
                        name=f"bcast_{dt}", dt=dt))
    x = rand(rng, (2, 3), "f32")
    out += [
        Case("expand", [x, i64([3])], [x], name="smaller_shape"),
        Case("expand", [np.float32(1.5), i64([2, 2])], [np.full((2, 2), 1.5, np.float32)],
             name="scalar"),
        Case("expand", [x[:, :1], i64([0, 1, 1])], [np.zeros((0, 2, 1), np.float32)], name="empty"),
    ]
    return out


def squeeze_unsqueeze_flatten_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (1, 3, 1, 2), dt)
        out.append(case("squeeze", [x, i64([0, -2])], [x.reshape(3, 2)], name=f"axes_{dt}", dt=dt))
        out.append(case("unsqueeze", [x, i64([0, -1])], [x.reshape(1, 1, 3, 1, 2, 1)],
                        name=f"axes_{dt}", dt=dt))
        out.append(case("flatten", [x], [x.reshape(1, 6)], name=f"default_{dt}", dt=dt))
    x = rand(rng, (1, 3, 1, 2), "f32")
    out += [
        Case("squeeze", [x], [x.reshape(3, 2)], name="all_ones"),
        Case("squeeze", [np.ones((1,), np.float32)], [np.float32(1.0)], name="to_scalar"),
        Case("squeeze", [np.zeros((0, 1), np.float32), i64([1])], [np.zeros((0,), np.float32)],
             name="empty"),
        Case("unsqueeze", [np.float32(4.0), i64([0])], [np.full((1,), 4.0, np.float32)],
             name="scalar"),
        Case("unsqueeze", [x, i64([5, 1])], [x.reshape(1, 1, 3, 1, 2, 1)], name="unsorted_axes"),
        Case("flatten", [x], [x.reshape(1, 6)], {"axis": 0}, "axis0"),
        Case("flatten", [x], [x.reshape(3, 2)], {"axis": -1}, "axis_neg"),
        Case("flatten", [x], [x.reshape(6, 1)], {"axis": 4}, "axis_rank"),
        Case("flatten", [np.float32(2)], [np.full((1, 1), 2, np.float32)], {"axis": 0}, "scalar"),
        Case("flatten", [np.zeros((2, 0, 3), np.float32)], [np.zeros((2, 0), np.float32)],
             {"axis": 1}, "empty"),
    ]
    return out


def np_pad(x, pads, mode, value=0, axes=None):
    """numpy reference; negative pads crop first."""
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    n = len(axes)
    width = [(0, 0)] * x.ndim
    crop = [slice(None)] * x.ndim
    for k, a in enumerate(axes):
        b, e = pads[k], pads[k + n]
        crop[a] = slice(max(-b, 0), x.shape[a] - max(-e, 0))
        width[a] = (max(b, 0), max(e, 0))
    y = x[tuple(crop)]
    if mode == "constant":
        return np.pad(y, width, mode="constant", constant_values=value)
    return np.pad(y, width, mode=mode)


def pad_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (2, 3), dt)
        v = rand(rng, (), dt)
        out.append(case("pad", [x, i64([1, 0, 0, 2]), np.asarray(v)],
                        [np_pad(x, [1, 0, 0, 2], "constant", v)], name=f"constant_{dt}", dt=dt,
                        data_inputs=(0, 2)))
    x = rand(rng, (3, 4, 5), "f32")
    for mode in ["reflect", "edge", "wrap"]:
        out.append(Case("pad", [x, i64([2, 1, 0, 1, 3, 4])], [np_pad(x, [2, 1, 0, 1, 3, 4], mode)],
                        {"mode": mode}, mode))
    out += [
        Case("pad", [x, i64([-1, 2, 1, -2]), None, i64([0, 2])],
             [np_pad(x, [-1, 2, 1, -2], "constant", 0, axes=[0, 2])], name="crop_with_axes"),
        Case("pad", [x, i64([1, 2]), None, i64([-1])], [np_pad(x, [1, 2], "edge", axes=[-1])],
             {"mode": "edge"}, "edge_neg_axis"),
        Case("pad", [x, i64([0, 7, 0, 0, 9, 0])], [np_pad(x, [0, 7, 0, 0, 9, 0], "wrap")],
             {"mode": "wrap"}, "wrap_multi_period"),
        Case("pad", [np.zeros((0, 2), np.float32), i64([1, 0, 1, 0])],
             [np.zeros((2, 2), np.float32)], name="empty_in"),
        Case("pad", [np.float32(3), np.zeros((0,), np.int64)], [np.float32(3)], name="scalar"),
    ]
    return out


def tile_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (2, 3), dt)
        out.append(case("tile", [x, i64([2, 3])], [np.tile(x, (2, 3))], name=f"basic_{dt}", dt=dt))
    x = rand(rng, (2, 1, 3), "f32")
    out += [
        Case("tile", [x, i64([1, 4, 1])], [np.tile(x, (1, 4, 1))], name="middle"),
        Case("tile", [x, i64([1, 0, 2])], [np.tile(x, (1, 0, 2))], name="zero_repeat"),
        Case("tile", [np.float32(2), np.zeros((0,), np.int64)], [np.float32(2)], name="scalar"),
    ]
    return out


def one_hot_cases(rng):
    out = []
    idx = i64([[0, 2], [-1, 5]])
    for dt in ["f32", "i64", "bool", "f16"]:
        vals = np.array([0, 1], NP[dt]) if dt != "bool" else np.array([False, True])
        if dt == "f32":
            vals = np.array([-2.5, 7.0], np.float32)
        ref = np.full((2, 2, 4), vals[0], vals.dtype)
        for p in np.ndindex(2, 2):
            v = idx[p] + 4 if idx[p] < 0 else idx[p]
            if 0 <= v < 4:
                ref[p + (v,)] = vals[1]
        out.append(Case("one_hot", [idx, i64(4), vals], [ref], name=f"last_{dt}"))
    idxf = np.array([1.7, -1.0, 3.0], np.float32)
    vals = np.array([0, 9], np.int32)
    ref = np.zeros((3, 3), np.int32)
    ref[1, 0] = 9  # 1.7 -> 1 (cast), -1 -> 2, 3 out of range
    ref[2, 1] = 9
    out.append(Case("one_hot", [idxf, np.array([3.0], np.float32), vals], [ref], {"axis": 0},
                    "axis0_float_index", constant_inputs=[1]))
    return out


def d2s_ref(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def block_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (2, 8, 3, 2), dt)
        for mode in ["DCR", "CRD"]:
            out.append(case("depth_to_space", [x], [d2s_ref(x, 2, mode)],
                            {"blocksize": 2, "mode": mode}, f"{mode}_{dt}", dt))
        y = rand(rng, (1, 3, 4, 6), dt)
        n, c, h, w = y.shape
        ref = y.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(
            n, c * 4, h // 2, w // 2)
        out.append(case("space_to_depth", [y], [ref], {"blocksize": 2}, f"b2_{dt}", dt))
    return out


def trilu_cases(rng):
    out = []
    for dt in MOVE_DTYPES:
        x = rand(rng, (2, 3, 5), dt)
        out.append(case("trilu", [x], [np.triu(x)], name=f"upper_{dt}", dt=dt))
        out.append(case("trilu", [x, i64(1)], [np.tril(x, 1)], {"upper": 0}, f"lower_k1_{dt}", dt))
    x = rand(rng, (5, 3), "f32")
    for k in [-2, 3, -7, 100]:
        out.append(Case("trilu", [x, i64(k)], [np.triu(x, k)], name=f"upper_k{k}"))
        out.append(Case("trilu", [x, i64(k)], [np.tril(x, k)], {"upper": 0}, f"lower_k{k}"))
    out.append(Case("trilu", [x, i64(I64_MIN)], [np.tril(x, -100)], {"upper": 0}, "k_min"))
    out.append(Case("trilu", [np.zeros((0, 3), np.float32)], [np.zeros((0, 3), np.float32)],
                    name="empty"))
    return out


def non_zero_unique_cases(rng):
    out = []
    for dt in ["f32", "i32", "bool", "u8", "f16"]:
        x = rand(rng, (3, 4), dt)
        if dt != "bool":
            x[rng.random((3, 4)) < 0.5] = 0
        out.append(Case("non_zero", [x], [np.array(np.nonzero(x), np.int64)], name=f"2d_{dt}",
                        constant_inputs=[0]))
    out.append(Case("non_zero", [np.zeros((2, 0), np.float32)], [np.zeros((2, 0), np.int64)],
                    name="empty", constant_inputs=[0]))
    z = np.array([0, 3, 0, -1], np.int64)
    out.append(Case("non_zero", [z], [np.array(np.nonzero(z), np.int64)], name="i64_1d",
                    constant_inputs=[0]))

    x = np.array([2, 1, 1, 3, 4, 3], np.float32)
    y, ind, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    out.append(Case("unique", [x], [y, ind, inv, cnt], name="sorted", constant_inputs=[0]))
    out.append(Case("unique", [x], [y], name="y_only", constant_inputs=[0]))
    # sorted=0: first-occurrence order (ONNX example).
    order = np.argsort(ind, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    out.append(Case("unique", [x], [y[order], ind[order], rank[inv], cnt[order]],
                    {"sorted": 0}, "unsorted", constant_inputs=[0]))
    m = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.int64)
    y, ind, inv, cnt = np.unique(m, axis=0, return_index=True, return_inverse=True,
                                 return_counts=True)
    out.append(Case("unique", [m], [y, ind, inv.reshape(-1), cnt], {"axis": 0}, "axis0",
                    constant_inputs=[0]))
    m3 = rng.integers(0, 2, size=(2, 5, 2)).astype(np.int32)
    y, ind, inv, cnt = np.unique(m3, axis=-2, return_index=True, return_inverse=True,
                                 return_counts=True)
    out.append(Case("unique", [m3], [y, ind, inv.reshape(-1), cnt], {"axis": -2}, "axis_mid",
                    constant_inputs=[0]))
    e = np.zeros((0,), np.float32)
    out.append(Case("unique", [e], [e, np.zeros(0, np.int64), np.zeros(0, np.int64),
                                    np.zeros(0, np.int64)], name="empty", constant_inputs=[0]))
    return out


def _nms_reference(boxes, scores, max_per_class, iou_threshold, score_threshold, center):
    """Greedy NMS as the ONNX spec describes it, written from the spec with numpy: per batch and
    class, candidates above the score threshold by descending score (ties: lower index first),
    each kept unless its IoU with a kept box exceeds the threshold."""
    rows = []
    b = boxes.astype(np.float64)
    if center:
        x1, x2 = b[..., 0] - b[..., 2] / 2, b[..., 0] + b[..., 2] / 2
        y1, y2 = b[..., 1] - b[..., 3] / 2, b[..., 1] + b[..., 3] / 2
    else:
        y1, y2 = np.minimum(b[..., 0], b[..., 2]), np.maximum(b[..., 0], b[..., 2])
        x1, x2 = np.minimum(b[..., 1], b[..., 3]), np.maximum(b[..., 1], b[..., 3])
    for bi in range(boxes.shape[0]):
        for ci in range(scores.shape[1]):
            sc = scores[bi, ci]
            cand = [i for i in range(len(sc)) if score_threshold is None or sc[i] > score_threshold]
            cand.sort(key=lambda i: (-sc[i], i))
            kept = []
            for i in cand:
                if len(kept) >= max_per_class:
                    break
                ok = True
                for k in kept:
                    ih = min(y2[bi, i], y2[bi, k]) - max(y1[bi, i], y1[bi, k])
                    iw = min(x2[bi, i], x2[bi, k]) - max(x1[bi, i], x1[bi, k])
                    if ih <= 0 or iw <= 0:
                        continue
                    inter = ih * iw
                    a1 = (y2[bi, i] - y1[bi, i]) * (x2[bi, i] - x1[bi, i])
                    a2 = (y2[bi, k] - y1[bi, k]) * (x2[bi, k] - x1[bi, k])
                    if inter / (a1 + a2 - inter) > iou_threshold:
                        ok = False
                        break
                if ok:
                    kept.append(i)
                    rows.append([bi, ci, i])
    return np.array(rows, np.int64).reshape(-1, 3)


def non_max_suppression_cases(rng):
    out = []
    for name, nb, nc, n, center, mx, iou, thr in [
            ("corners", 1, 1, 40, 0, 1000, 0.5, None),
            ("two_batches_classes", 2, 3, 25, 0, 5, 0.4, 0.3),
            ("center_point", 1, 2, 30, 1, 10, 0.5, 0.2),
            ("none_kept", 1, 1, 10, 0, 10, 0.5, 2.0),
            ("max_zero", 1, 1, 10, 0, 0, 0.5, None)]:
        xy = rng.random((nb, n, 2)).astype(np.float32) * 50
        wh = rng.random((nb, n, 2)).astype(np.float32) * 20 + 1
        boxes = np.concatenate([xy, wh], -1) if center else np.concatenate([xy, xy + wh], -1)
        if name == "corners":
            boxes[0, ::3] = boxes[0, ::3][:, [2, 3, 0, 1]]  # flipped corners
        scores = rng.permutation(nb * nc * n).reshape(nb, nc, n).astype(np.float32) / (nb * nc * n)
        ins = [boxes, scores, np.array([mx], np.int64), np.array([iou], np.float32),
               None if thr is None else np.array([thr], np.float32)]
        expected = _nms_reference(boxes, scores, mx, iou, thr, center)
        out.append(Case("non_max_suppression", ins, [expected], {"center_point_box": center},
                        name, constant_inputs=[0, 1, 2, 3, 4]))
    return out


# ---- resize -------------------------------------------------------------------------------
# Reference: each resized axis becomes a dense [out, in] weight matrix built from the ONNX
# Resize formulas (opset 19), applied with tensordot in float64. torch.nn.functional.interpolate
# cross-checks the modes it implements (asserted while generating): nearest = ONNX
# asymmetric + floor; bilinear align_corners=False = linear + half_pixel; bilinear
# align_corners=True = linear + align_corners; bicubic align_corners=False = cubic + half_pixel
# with cubic_coeff_a = -0.75.

def _coords(o, n_in, n_out, scale, ctm, roi):
    o = o.astype(np.float64)
    if ctm == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        adj = n_out / (scale * n_in)
        return n_in / 2.0 * (1 - adj) + (o + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(o)
    if ctm == "align_corners":
        return o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(o)
    if ctm == "asymmetric":
        return o / scale
    s, e = roi
    if n_out > 1:
        return s * (n_in - 1) + o * (e - s) * (n_in - 1) / (n_out - 1)
    return np.full_like(o, 0.5 * (s + e) * (n_in - 1))


def _weights(n_in, n_out, scale, roi, mode, ctm, nearest, a, exclude):
    x = _coords(np.arange(n_out), n_in, n_out, scale, ctm, roi)
    w = np.zeros((n_out, n_in))
    outside = (ctm == "tf_crop_and_resize") & ((x < 0) | (x > n_in - 1))
    for o, xo in enumerate(x):
        if mode == "nearest":
            f = np.floor(xo)
            if nearest == "floor":
                i = f
            elif nearest == "ceil":
                i = np.ceil(xo)
            elif xo - f == 0.5:
                i = f if nearest == "round_prefer_floor" else f + 1
            else:
                i = np.floor(xo + 0.5)
            w[o, int(np.clip(i, 0, n_in - 1))] = 1.0
        elif mode == "linear":
            xc = min(max(xo, 0.0), n_in - 1.0)
            x0 = int(np.floor(xc))
            r = xc - x0
            w[o, x0] += 1 - r
            w[o, min(x0 + 1, n_in - 1)] += r
        else:
            x0 = int(np.floor(xo))
            t = xo - x0
            dist = np.array([1 + t, t, 1 - t, 2 - t])
            c = np.where(dist <= 1, ((a + 2) * dist - (a + 3)) * dist * dist + 1,
                         ((a * dist - 5 * a) * dist + 8 * a) * dist - 4 * a)
            idx = np.arange(x0 - 1, x0 + 3)
            if exclude:
                c = c * ((idx >= 0) & (idx < n_in))
                c = c / c.sum()
            for k in range(4):
                w[o, int(np.clip(idx[k], 0, n_in - 1))] += c[k]
    return w, outside


def resize_ref(x, out_shape, scales, mode="nearest", ctm="half_pixel",
               nearest="round_prefer_floor", a=-0.75, exclude=0, extrap=0.0, rois=None):
    y = x.astype(np.float64)
    mask = np.zeros(out_shape, bool)
    for ax in range(x.ndim):
        roi = rois[ax] if rois else (0.0, 1.0)
        w, outside = _weights(x.shape[ax], out_shape[ax], scales[ax], roi, mode, ctm, nearest, a,
                              exclude)
        y = np.moveaxis(np.tensordot(w, y, axes=([1], [ax])), 0, ax)
        shp = [1] * x.ndim
        shp[ax] = out_shape[ax]
        mask = mask | outside.reshape(shp)
    return np.where(mask, extrap, y)


def _torch_check(x, ref, size, mode, align):
    import torch
    import torch.nn.functional as F
    kw = {} if mode == "nearest" else {"align_corners": align}
    t = F.interpolate(torch.from_numpy(x.astype(np.float32)), size=size, mode=mode, **kw).numpy()
    assert np.allclose(t, ref, rtol=1e-5, atol=1e-5), f"numpy resize reference != torch {mode}"


def resize_cases(rng):
    out = []
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    sc = np.array([1, 1, 2, 1.5], np.float32)
    osz = (1, 2, 8, 7)
    # torch cross-checks of the reference (see the comment above).
    _torch_check(x, resize_ref(x, osz, [1, 1, 2, 7 / 5], "nearest", "asymmetric", "floor"),
                 osz[2:], "nearest", None)
    _torch_check(x, resize_ref(x, osz, [1, 1, 2, 7 / 5], "linear", "half_pixel"), osz[2:],
                 "bilinear", False)
    _torch_check(x, resize_ref(x, osz, [1, 1, 2, 7 / 5], "linear", "align_corners"), osz[2:],
                 "bilinear", True)
    _torch_check(x, resize_ref(x, osz, [1, 1, 2, 7 / 5], "cubic", "half_pixel"), osz[2:],
                 "bicubic", False)
    scales = [1, 1, 2, 1.5]
    for dt in ["f32", "f64", "f16", "bf16"]:
        xd = rand(rng, (1, 2, 4, 5), dt)
        xf = from_bf16_bits(xd) if dt == "bf16" else xd
        for mode in ["linear", "cubic"]:
            ref = resize_ref(xf, osz, scales, mode)
            ref = to_bf16_bits(ref.astype(np.float32)) if dt == "bf16" else ref.astype(xd.dtype)
            out.append(case("resize", [xd, None, sc], [ref], {"mode": mode}, f"{mode}_{dt}", dt,
                            constant_inputs=[2]))
    for dt in MOVE_DTYPES:
        xd = rand(rng, (1, 1, 3, 4), dt)
        src = xd.astype(np.float64) if dt not in ("bf16",) else xd.astype(np.float64)
        ref = resize_ref(src, (1, 1, 6, 8), [1, 1, 2, 2], "nearest").astype(xd.dtype)
        out.append(case("resize", [xd, None, np.array([1, 1, 2, 2], np.float32)], [ref], {},
                        f"nearest_{dt}", dt, constant_inputs=[2]))
    ctms = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
            "asymmetric"]
    for ctm in ctms:
        for mode in ["nearest", "linear", "cubic"]:
            for tag, sizes in [("up", (1, 1, 7, 9)), ("down", (1, 1, 3, 2))]:
                xs = rng.standard_normal((1, 1, 4, 5)).astype(np.float32)
                s = [1, 1, sizes[2] / 4, sizes[3] / 5]
                ref = resize_ref(xs, sizes, s, mode, ctm).astype(np.float32)
                out.append(Case("resize", [xs, None, None, i64(sizes)], [ref],
                                {"mode": mode, "coordinate_transformation_mode": ctm},
                                f"{mode}_{ctm}_{tag}", rtol=1e-5, atol=1e-5,
                                why="float64 reference vs float32 coordinates"))
    xs = rng.standard_normal((2, 6)).astype(np.float32)
    for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        for tag, s in [("up", [1, 2.5]), ("down", [1, 0.5])]:
            osz2 = (2, int(np.floor(6 * s[1])))
            ref = resize_ref(xs, osz2, s, "nearest", "asymmetric", nm).astype(np.float32)
            out.append(Case("resize", [xs, None, np.array(s, np.float32)], [ref],
                            {"nearest_mode": nm, "coordinate_transformation_mode": "asymmetric"},
                            f"nearest_{nm}_{tag}", constant_inputs=[2]))
    xs = rng.standard_normal((1, 1, 5, 6)).astype(np.float32)
    ref = resize_ref(xs, (1, 1, 9, 4), [1, 1, 9 / 5, 4 / 6], "cubic", a=-0.5, exclude=1)
    out.append(Case("resize", [xs, None, None, i64([1, 1, 9, 4])], [ref.astype(np.float32)],
                    {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
                    "cubic_exclude_outside", rtol=1e-5, atol=1e-5, why="float64 reference"))
    roi = np.array([0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3], np.float32)
    rois = [(0.0, 1.0), (0.0, 1.0), (0.2, 0.9), (-0.1, 1.3)]
    rois = [(float(np.float32(a)), float(np.float32(b))) for a, b in rois]
    for mode in ["nearest", "linear"]:
        ref = resize_ref(xs, (1, 1, 4, 7), [1, 1, 4 / 5, 7 / 6], mode, "tf_crop_and_resize",
                         extrap=10.0, rois=rois)
        out.append(Case("resize", [xs, roi, None, i64([1, 1, 4, 7])], [ref.astype(np.float32)],
                        {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
                         "extrapolation_value": 10.0}, f"tf_crop_{mode}", rtol=1e-5, atol=1e-5,
                        why="float64 reference", constant_inputs=[1, 3]))
    for pol, scale in [("not_larger", min(9 / 5, 12 / 6)), ("not_smaller", max(9 / 5, 12 / 6))]:
        o = (1, 1, int(np.round(5 * scale)), int(np.round(6 * scale)))
        ref = resize_ref(xs, o, [1, 1, scale, scale], "linear").astype(np.float32)
        out.append(Case("resize", [xs, None, None, i64([9, 12])], [ref],
                        {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": pol},
                        f"keep_ratio_{pol}", rtol=1e-5, atol=1e-5, why="float64 reference"))
    ref = resize_ref(xs, (1, 1, 5, 9), [1, 1, 1, 1.5], "linear").astype(np.float32)
    out.append(Case("resize", [xs, None, np.array([1.5], np.float32)], [ref],
                    {"mode": "linear", "axes": [-1]}, "axes_subset", constant_inputs=[2]))
    e = np.zeros((0, 1, 2, 2), np.float32)
    out.append(Case("resize", [e, None, np.array([1, 1, 2, 2], np.float32)],
                    [np.zeros((0, 1, 4, 4), np.float32)], {"mode": "linear"}, "empty",
                    constant_inputs=[2]))
    return out


def cases():
    rng = np.random.default_rng(20240601)
    out = []
    for fn in [reshape_cases, transpose_cases, concat_cases, split_cases, slice_cases,
               gather_cases, gather_elements_cases, gather_nd_cases, scatter_cases, expand_cases,
               squeeze_unsqueeze_flatten_cases, pad_cases, tile_cases, one_hot_cases, block_cases,
               trilu_cases, non_zero_unique_cases, non_max_suppression_cases, resize_cases]:
        out += fn(rng)
    return out
