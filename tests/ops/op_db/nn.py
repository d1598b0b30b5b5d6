"""Op database: conv, conv_transpose, pooling, normalisations, softmax, lrn, dropout.
References are torch 1.13 (float64, on the values rounded to the case dtype) where it has the
op, otherwise straightforward numpy loops written from the ONNX spec; they never call frame."""
from __future__ import annotations

import itertools
import math

import numpy as np
import torch
import torch.nn.functional as F

from op_db.common import Case, ints_attr
from op_db.linalg import FLOATS, typed

# float32 convolutions accumulate in float over C*k taps (see linalg.ACC_TOL).
ACC = {"rtol": 1e-4, "atol": 1e-5}
ACC_WHY = "float32 accumulation over C*k taps"


def t(x):
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))


def with_acc_tol(cs):
    for c in cs:
        if c.name.endswith("_f32"):
            c.rtol, c.atol, c.why = ACC["rtol"], ACC["atol"], ACC_WHY
    return cs


CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def same_pads(inp, k, s, d, lower):
    pb, pe = [], []
    for i, kk, ss, dd in zip(inp, k, s, d):
        out = -(-i // ss)
        total = max(0, (out - 1) * ss + (kk - 1) * dd + 1 - i)
        b = total - total // 2 if lower else total // 2
        pb.append(b)
        pe.append(total - b)
    return pb, pe


def conv_window(attrs, nd):
    """(strides, dilations, group, begin pads, end pads) of conv attrs, ONNX defaults filled."""
    pads = attrs.get("pads", [0] * 2 * nd)
    return (attrs.get("strides", [1] * nd), attrs.get("dilations", [1] * nd),
            attrs.get("group", 1), pads[:nd], pads[nd:])


def conv_ref(strides, dilations, group, pb, pe):
    def f(x, w, b=None):
        nd = x.ndim - 2
        padding = []
        for i in reversed(range(nd)):
            padding += [pb[i], pe[i]]
        xp = F.pad(t(x), padding)
        y = CONV[nd](xp, t(w), None if b is None else t(b), stride=strides, dilation=dilations,
                     groups=group)
        return y.numpy()
    return f


def conv_cases(rng):
    out = []
    variants = [
        # (x shape, w shape, bias, attrs)
        ((1, 3, 7, 7), (4, 3, 3, 3), True, {"pads": [1, 1, 1, 1]}, "2d_pad"),
        ((2, 4, 9, 8), (6, 2, 3, 2), False, {"group": 2, "strides": [2, 1]}, "2d_group_stride"),
        ((1, 2, 10, 10), (3, 2, 3, 3), True, {"dilations": [2, 2], "pads": [0, 1, 2, 1]},
         "2d_dilated_asym_pad"),
        ((1, 3, 33), (2, 3, 5), True, {"strides": [3], "pads": [2, 1]}, "1d_odd"),
        ((1, 2, 5, 6, 4), (2, 2, 3, 3, 2), True, {"pads": [1, 0, 1, 1, 2, 0]}, "3d"),
        ((1, 4, 6, 6), (4, 1, 3, 3), True, {"group": 4, "kernel_shape": [3, 3]}, "depthwise"),
        ((0, 3, 5, 5), (2, 3, 3, 3), False, {}, "empty_batch"),
        ((1, 3, 5, 5), (2, 3, 1, 1), True, {}, "pointwise"),
    ]
    for xs, ws, bias, attrs, nm in variants:
        x, w = rng.standard_normal(xs), rng.standard_normal(ws)
        f = conv_ref(*conv_window(attrs, len(xs) - 2))
        ins = [x, w] + ([rng.standard_normal(ws[0])] if bias else [])
        out += with_acc_tol(typed("conv", nm, f, ins, attrs, typed_inputs=(0, 1, 2)))
    for mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        x, w = rng.standard_normal((1, 2, 8, 7)), rng.standard_normal((3, 2, 4, 3))
        s, d = [2, 3], [1, 1]
        if mode == "VALID":
            pb, pe = [0, 0], [0, 0]
        else:
            pb, pe = same_pads([8, 7], [4, 3], s, d, mode == "SAME_LOWER")
        out += with_acc_tol(typed("conv", f"auto_{mode.lower()}", conv_ref(s, d, 1, pb, pe),
                                  [x, w], {"auto_pad": mode, "strides": s},
                                  typed_inputs=(0, 1)))
    return out


def conv_t_ref(strides, dilations, group, pb, pe, opad):
    def f(x, w, b=None):
        nd = x.ndim - 2
        y = CONV_T[nd](t(x), t(w), None if b is None else t(b), stride=strides,
                       dilation=dilations, groups=group, output_padding=opad)
        sl = [slice(None), slice(None)] + [slice(pb[i], y.shape[2 + i] - pe[i])
                                           for i in range(nd)]
        return y[tuple(sl)].numpy()
    return f


def conv_transpose_cases(rng):
    out = []
    variants = [
        ((1, 3, 4, 4), (3, 2, 3, 3), True, {"strides": [2, 2]}, "2d_stride"),
        ((1, 4, 3, 5), (4, 3, 2, 3), True, {"group": 2, "pads": [1, 0, 0, 1]}, "2d_group_pads"),
        ((2, 2, 5), (2, 3, 3), False, {"strides": [3], "output_padding": [2]}, "1d_outpad"),
        ((1, 2, 4, 4), (2, 2, 3, 3), True, {"dilations": [2, 1], "strides": [2, 2],
                                            "output_padding": [1, 1], "pads": [1, 1, 0, 2]},
         "2d_dilated"),
        ((1, 2, 3, 2, 3), (2, 1, 2, 2, 2), True, {"strides": [2, 1, 2]}, "3d"),
        ((0, 2, 3, 3), (2, 2, 2, 2), False, {}, "empty_batch"),
    ]
    for xs, ws, bias, attrs, nm in variants:
        x, w = rng.standard_normal(xs), rng.standard_normal(ws)
        nd = len(xs) - 2
        f = conv_t_ref(*conv_window(attrs, nd), attrs.get("output_padding", [0] * nd))
        ins = [x, w] + ([rng.standard_normal(ws[1] * attrs.get("group", 1))] if bias else [])
        out += with_acc_tol(typed("conv_transpose", nm, f, ins, attrs, typed_inputs=(0, 1, 2)))
    # output_shape derives pads: total = full - target, begin gets the odd pad unless
    # auto_pad is SAME_UPPER (ONNX ConvTranspose pads formula).
    x, w = rng.standard_normal((1, 2, 3, 3)), rng.standard_normal((2, 2, 3, 3))
    full = 2 * (3 - 1) + 3  # 7
    for mode, target in (("NOTSET", [6, 5]), ("SAME_UPPER", [6, 6]), ("SAME_LOWER", [6, 6])):
        tot = [full - v for v in target]
        if mode == "SAME_UPPER":
            pb, pe = [v // 2 for v in tot], [v - v // 2 for v in tot]
        else:
            pb, pe = [v - v // 2 for v in tot], [v // 2 for v in tot]
        attrs = {"strides": [2, 2], "auto_pad": mode}
        if mode == "NOTSET":
            attrs["output_shape"] = target
        out += with_acc_tol(typed("conv_transpose", f"output_shape_{mode.lower()}",
                                  conv_t_ref([2, 2], [1, 1], 1, pb, pe, [0, 0]), [x, w], attrs,
                                  typed_inputs=(0, 1)))
    return out


def pool_out(i, k, s, d, pb, pe, ceil):
    span = i + pb + pe - ((k - 1) * d + 1)
    o = (-(-span // s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= i + pb:
        o -= 1
    return o


def pool_ref(kind, k, s, d, pb, pe, ceil, include_pad=False, storage_order=0):
    """Naive ONNX pooling: max (value, flat index) or average."""
    def f(x):
        n, c = x.shape[:2]
        sp = x.shape[2:]
        outs = [pool_out(sp[i], k[i], s[i], d[i], pb[i], pe[i], ceil) for i in range(len(sp))]
        y = np.zeros((n, c, *outs))
        idx = np.zeros((n, c, *outs), np.int64)
        plane = int(np.prod(sp))
        for b, ch in itertools.product(range(n), range(c)):
            for o in itertools.product(*[range(v) for v in outs]):
                vals, flat, cnt = [], [], 0
                for kk in itertools.product(*[range(v) for v in k]):
                    co = [o[i] * s[i] - pb[i] + kk[i] * d[i] for i in range(len(sp))]
                    inside = all(0 <= co[i] < sp[i] for i in range(len(sp)))
                    padded = all(-pb[i] <= co[i] < sp[i] + pe[i] for i in range(len(sp)))
                    if inside:
                        vals.append(x[(b, ch, *co)])
                        if storage_order == 0:
                            fi = int(np.ravel_multi_index(co, sp))
                        else:
                            fi = int(np.ravel_multi_index(co, sp, order="F"))
                        flat.append((b * c + ch) * plane + fi)
                    if (padded if include_pad else inside):
                        cnt += 1
                if kind == "max":
                    j = int(np.argmax(vals))
                    y[(b, ch, *o)] = vals[j]
                    idx[(b, ch, *o)] = flat[j]
                else:
                    y[(b, ch, *o)] = sum(vals) / cnt
        return (y, idx) if kind == "max" else y
    return f


def pool_cases(rng):
    out = []
    variants = [
        ((1, 2, 6, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}, "2d_k2s2"),
        ((1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
         "2d_pad"),
        ((2, 1, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 3], "ceil_mode": 1}, "2d_ceil"),
        ((1, 1, 8, 8), {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [0, 1, 1, 0]},
         "2d_dilated_asym"),
        ((1, 3, 33), {"kernel_shape": [4], "strides": [3], "pads": [2, 1], "ceil_mode": 1},
         "1d_odd_ceil"),
        ((1, 1, 4, 5, 3), {"kernel_shape": [2, 2, 2], "strides": [1, 2, 1],
                           "pads": [1, 0, 0, 0, 1, 1]}, "3d"),
    ]
    for xs, attrs, nm in variants:
        x = rng.standard_normal(xs)
        nd = len(xs) - 2
        k = attrs["kernel_shape"]
        s, d = attrs.get("strides", [1] * nd), attrs.get("dilations", [1] * nd)
        pads = attrs.get("pads", [0] * 2 * nd)
        ceil = bool(attrs.get("ceil_mode", 0))
        fmax = pool_ref("max", k, s, d, pads[:nd], pads[nd:], ceil)
        out += typed("max_pool", nm, fmax, [x], attrs, dtypes=FLOATS + ("i8", "u8"))
        out += typed("max_pool", nm + "_indices", fmax, [x], attrs, dtypes=("f32",))
        if "dilations" not in attrs:
            for inc in (0, 1):
                a = dict(attrs, count_include_pad=inc)
                out += typed("average_pool", f"{nm}_inc{inc}",
                             pool_ref("avg", k, s, d, pads[:nd], pads[nd:], ceil, inc), [x], a)
    # Plain max_pool cases above drop the Indices output: keep only Y.
    for c in out:
        if c.op == "max_pool" and not c.name.split("_")[-2] == "indices":
            c.outputs = c.outputs[:1]
    x = rng.standard_normal((1, 2, 5, 4))
    fo = pool_ref("max", [2, 2], [1, 1], [1, 1], [0, 0], [0, 0], False, storage_order=1)
    out += typed("max_pool", "storage_order_col", fo, [x],
                 {"kernel_shape": [2, 2], "storage_order": 1}, dtypes=("f32",))
    # The torch reference agrees with the naive one on a symmetric case.
    xt = rng.standard_normal((2, 3, 9, 9))
    out += typed("max_pool", "torch_ref",
                 lambda v: F.max_pool2d(t(v), 3, 2, 1, ceil_mode=True).numpy(), [xt],
                 {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                  "ceil_mode": 1}, dtypes=("f32",))
    out += typed("average_pool", "torch_ref",
                 lambda v: F.avg_pool2d(t(v), 3, 2, 1, ceil_mode=True,
                                        count_include_pad=True).numpy(), [xt],
                 {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                  "ceil_mode": 1, "count_include_pad": 1}, dtypes=("f32",))
    for mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        x = rng.standard_normal((1, 1, 7, 6))
        k, s = [3, 2], [2, 2]
        pb, pe = ([0, 0], [0, 0]) if mode == "VALID" else same_pads([7, 6], k, s, [1, 1],
                                                                    mode == "SAME_LOWER")
        a = {"kernel_shape": k, "strides": s, "auto_pad": mode}
        fm = pool_ref("max", k, s, [1, 1], pb, pe, False)
        out += typed("max_pool", f"auto_{mode.lower()}", lambda v: fm(v)[0], [x], a,
                     dtypes=("f32",))
        out += typed("average_pool", f"auto_{mode.lower()}",
                     pool_ref("avg", k, s, [1, 1], pb, pe, False), [x], a, dtypes=("f32",))
    for op, fn in (("global_average_pool", np.mean), ("global_max_pool", np.max)):
        for xs, nm in (((2, 3, 5, 7), "2d"), ((1, 2, 33), "1d_odd"), ((1, 2, 2, 3, 2), "3d"),
                       ((0, 3, 2, 2), "empty_batch")):
            x = rng.standard_normal(xs)
            ax = tuple(range(2, len(xs)))
            out += typed(op, nm, lambda v: fn(v, axis=ax, keepdims=True), [x])
    return out


def bn_ref(eps):
    def f(x, s, b, m, v):
        sh = (1, -1) + (1,) * (x.ndim - 2)
        return (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + eps) * s.reshape(sh) + b.reshape(sh)
    return f


def norm_cases(rng):
    out = []
    for xs, nm in (((2, 3, 4, 5), "4d"), ((3, 4), "2d"), ((1, 2, 33), "odd"),
                   ((0, 3, 2), "empty")):
        c = xs[1]
        x = rng.standard_normal(xs)
        ins = [x, rng.standard_normal(c), rng.standard_normal(c), rng.standard_normal(c),
               rng.random(c) + 0.5]
        out += typed("batch_normalization", nm, bn_ref(1e-5), ins, {"epsilon": 1e-5},
                     typed_inputs=(0, 1, 2, 3, 4))
    # Training mode: batch statistics and running averages.
    x = rng.standard_normal((4, 3, 5))
    s, b, m, v = (rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3),
                  rng.random(3) + 0.5)

    def bn_train(x, s, b, m, v):
        bm, bv = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
        y = bn_ref(1e-3)(x, s, b, bm, bv)
        return y, m * 0.8 + bm * 0.2, v * 0.8 + bv * 0.2
    out += typed("batch_normalization", "training", bn_train, [x, s, b, m, v],
                 {"epsilon": 1e-3, "momentum": 0.8, "training_mode": 1}, dtypes=("f32", "f64"),
                 typed_inputs=(0, 1, 2, 3, 4), typed_outputs=(0, 1, 2))

    def inorm(eps):
        def f(x, s, b):
            ax = tuple(range(2, x.ndim))
            sh = (1, -1) + (1,) * (x.ndim - 2)
            mu, var = x.mean(axis=ax, keepdims=True), x.var(axis=ax, keepdims=True)
            return (x - mu) / np.sqrt(var + eps) * s.reshape(sh) + b.reshape(sh)
        return f
    for xs, nm in (((2, 3, 4, 5), "4d"), ((1, 2, 33), "odd"), ((1, 2, 3, 2, 2), "5d")):
        x = rng.standard_normal(xs) * 3 + 1
        out += typed("instance_normalization", nm, inorm(1e-5),
                     [x, rng.standard_normal(xs[1]), rng.standard_normal(xs[1])],
                     typed_inputs=(0, 1, 2))
    x = rng.standard_normal((2, 3, 4, 4))
    out += typed("instance_normalization", "torch_ref",
                 lambda v, s, b: F.instance_norm(t(v), weight=t(s), bias=t(b), eps=1e-2).numpy(),
                 [x, rng.standard_normal(3), rng.standard_normal(3)], {"epsilon": 1e-2},
                 typed_inputs=(0, 1, 2), dtypes=("f32",))

    def lnorm(axis, eps, with_b=True, stats=False):
        def f(x, s, b=None):
            ax = tuple(range(axis % x.ndim, x.ndim))
            mu = x.mean(axis=ax, keepdims=True)
            inv = 1.0 / np.sqrt(x.var(axis=ax, keepdims=True) + eps)
            y = (x - mu) * inv * s
            if with_b:
                y = y + b
            return (y, mu, inv) if stats else y
        return f
    x = rng.standard_normal((2, 3, 5))
    out += typed("layer_normalization", "last_axis", lnorm(-1, 1e-5),
                 [x, rng.standard_normal(5), rng.standard_normal(5)], typed_inputs=(0, 1, 2))
    out += typed("layer_normalization", "axis1_no_bias", lnorm(1, 1e-3, with_b=False),
                 [x, rng.standard_normal((3, 5))], {"axis": 1, "epsilon": 1e-3},
                 typed_inputs=(0, 1))
    out += typed("layer_normalization", "broadcast_scale", lnorm(1, 1e-5),
                 [x, rng.standard_normal((1, 5)), rng.standard_normal((5,))], {"axis": 1},
                 typed_inputs=(0, 1, 2))
    for c in typed("layer_normalization", "stats", lnorm(-1, 1e-5, stats=True),
                   [rng.standard_normal((4, 33)), rng.standard_normal(33), rng.standard_normal(33)],
                   typed_inputs=(0, 1, 2), typed_outputs=(0,), dtypes=("f32", "f16")):
        c.outputs[1] = c.outputs[1].astype(np.float32)
        c.outputs[2] = c.outputs[2].astype(np.float32)
        out.append(c)
    # Scale/B with leading 1s up to X's rank ([1, 1, H], as torch exports nn.LayerNorm's
    # parameters after a broadcasting rewrite): the same values as [H] (issue 23).
    out += typed("layer_normalization", "leading_ones_params", lnorm(-1, 1e-5),
                 [x, rng.standard_normal((1, 1, 5)), rng.standard_normal((1, 5))],
                 typed_inputs=(0, 1, 2))
    out += typed("layer_normalization", "torch_ref",
                 lambda v, s, b: F.layer_norm(t(v), (3, 5), t(s), t(b), 1e-5).numpy(),
                 [x, rng.standard_normal((3, 5)), rng.standard_normal((3, 5))], {"axis": -2},
                 typed_inputs=(0, 1, 2), dtypes=("f32",))
    return out


def softmax_ref(axis, log, legacy=False):
    def f(x):
        if legacy:
            shp = x.shape
            a = axis % x.ndim
            x2 = x.reshape(int(np.prod(shp[:a])), -1)
            return f_inner(x2, 1).reshape(shp)
        return f_inner(x, axis)

    def f_inner(x, ax):
        m = np.max(x, axis=ax, keepdims=True)
        e = np.exp(x - m)
        s = np.sum(e, axis=ax, keepdims=True)
        return (x - m - np.log(s)) if log else e / s
    return f


def softmax_cases(rng):
    out = []
    for op, log in (("softmax", False), ("log_softmax", True)):
        x = rng.standard_normal((2, 3, 4)) * 3
        out += typed(op, "default_axis", softmax_ref(-1, log), [x])
        out += typed(op, "axis0", softmax_ref(0, log), [x], {"axis": 0}, dtypes=("f32", "f64"))
        out += typed(op, "legacy_axis1", softmax_ref(1, log, True), [x],
                     {"axis": 1, "legacy_flatten": 1}, dtypes=("f32", "f64"))
        out += typed(op, "odd", softmax_ref(-1, log), [rng.standard_normal((3, 33))],
                     dtypes=("f32",))
        out += typed(op, "large_values", softmax_ref(-1, log),
                     [np.array([[1000.0, 1001.0, 999.0]])], dtypes=("f32",))
        out += typed(op, "empty", softmax_ref(1, log), [np.zeros((0, 4))], {"axis": 1},
                     dtypes=("f32",))
        out += typed(op, "torch_ref",
                     lambda v: (F.log_softmax if log else F.softmax)(t(v), dim=1).numpy(),
                     [x], {"axis": 1}, dtypes=("f32",))
    return out


def lrn_ref(size, alpha, beta, bias):
    def f(x):
        c = x.shape[1]
        lo, hi = (size - 1) // 2, math.ceil((size - 1) / 2)
        y = np.empty_like(x)
        for ch in range(c):
            a, b = max(0, ch - lo), min(c - 1, ch + hi)
            sq = np.sum(np.square(x[:, a:b + 1]), axis=1)
            y[:, ch] = x[:, ch] / np.power(bias + alpha / size * sq, beta)
        return y
    return f


def misc_cases(rng):
    out = []
    x = rng.standard_normal((2, 5, 3, 3))
    out += typed("lrn", "size3", lrn_ref(3, 1e-4, 0.75, 1.0), [x], {"size": 3})
    out += typed("lrn", "size4_attrs", lrn_ref(4, 0.02, 0.5, 2.0), [x],
                 {"size": 4, "alpha": 0.02, "beta": 0.5, "bias": 2.0}, dtypes=("f32", "f64"))
    out += typed("lrn", "torch_ref",
                 lambda v: F.local_response_norm(t(v), 5, 1e-3, 0.75, 1.0).numpy(), [x],
                 {"size": 5, "alpha": 1e-3}, dtypes=("f32",))
    x = rng.standard_normal((3, 7))
    out += typed("dropout", "inference", lambda v: (v, np.ones(v.shape, bool)), [x],
                 typed_outputs=(0,))
    out += typed("dropout", "inference_flag",
                 lambda v, r, tm: (v, np.ones(v.shape, bool)),
                 [x, np.array(0.3, np.float32), np.array(False)], typed_inputs=(0,),
                 typed_outputs=(0,), dtypes=("f32",))
    out += typed("dropout", "train_ratio0", lambda v, r, tm: v,
                 [x, np.array(0.0, np.float32), np.array(True)], typed_inputs=(0,),
                 dtypes=("f32",))
    out += typed("dropout", "train_random", lambda v, r, tm: (v, np.ones(v.shape, bool)),
                 [x, np.array(0.5, np.float32), np.array(True)], {"seed": 7},
                 typed_inputs=(0,), dtypes=("f32",), check_values=[False, False])
    return out


def cases():
    rng = np.random.default_rng(777)
    return (conv_cases(rng) + conv_transpose_cases(rng) + pool_cases(rng) + norm_cases(rng) +
            softmax_cases(rng) + misc_cases(rng))
