"""Op database: quantize_linear, dequantize_linear, dynamic_quantize_linear, matmul_integer,
qlinear_matmul, conv_integer, qlinear_conv. References are numpy written from the ONNX operator
spec formulas (round half to even is numpy.rint, saturation is numpy.clip; integer products in
int64, convolutions via torch in float64 on integer values, which is exact); they never call
frame. Requantization factors follow the ONNX reference: in_scale * w_scale / y_scale in
float32, multiplied with the int32 accumulator in float64.
"""
from __future__ import annotations

import numpy as np

from op_db.common import Case
from op_db.nn import conv_ref, same_pads

F32 = np.float32
QRANGE = {np.uint8: (0, 255), np.int8: (-128, 127)}


def sat(v, qt):
    lo, hi = QRANGE[qt]
    return np.clip(v, lo, hi).astype(qt)


def param_shape(x, scale, axis):
    """Reshape of a 1-D per-axis parameter so it broadcasts along `axis` of x."""
    s = np.asarray(scale)
    if s.size == 1:
        return s.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = s.size
    return s.reshape(shape)


def quantize_ref(x, scale, zp, axis=1, qt=np.uint8):
    s = param_shape(x, scale, axis).astype(F32)
    z = 0 if zp is None else param_shape(x, zp, axis).astype(np.int64)
    q = np.rint(x.astype(F32) / s)
    return sat(q + z, qt)


def dequantize_ref(x, scale, zp, axis=1):
    z = 0 if zp is None else param_shape(x, zp, axis).astype(np.int64)
    s = param_shape(x, scale, axis)
    return (x.astype(np.int64) - z).astype(F32) * s.astype(F32)


def quantize_cases(rng):
    out = []
    x = rng.uniform(-40, 40, (3, 4)).astype(F32)
    s, z = np.array(0.25, F32), np.array(128, np.uint8)
    out.append(Case("quantize_linear", [x, s, z], [quantize_ref(x, s, z)], name="tensor_u8"))
    z8 = np.array(-3, np.int8)
    out.append(Case("quantize_linear", [x, s, z8], [quantize_ref(x, s, z8, qt=np.int8)],
                    name="tensor_i8_saturate"))
    # Ties round half to even: x / 1 = +-0.5, 1.5, 2.5, 3.5.
    t = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5], F32)
    one, z0 = np.array(1.0, F32), np.array(0, np.int8)
    out.append(Case("quantize_linear", [t, one, z0],
                    [np.array([0, 2, 2, 4, 0, -2, -2, -4], np.int8)], name="ties_even"))
    out.append(Case("quantize_linear", [x, np.array([0.5], F32)],
                    [quantize_ref(x, 0.5, None)], name="no_zero_point"))
    xa = rng.uniform(-20, 20, (2, 3, 4)).astype(F32)
    sa = np.array([0.5, 0.25, 0.125], F32)
    za = np.array([-10, 0, 20], np.int8)
    out.append(Case("quantize_linear", [xa, sa, za], [quantize_ref(xa, sa, za, 1, np.int8)],
                    name="axis1_i8"))
    sl = np.array([0.5, 1.0, 0.25, 2.0], F32)
    zl = np.array([0, 10, 128, 255], np.uint8)
    out.append(Case("quantize_linear", [xa, sl, zl], [quantize_ref(xa, sl, zl, -1)],
                    {"axis": -1}, name="axis_last_u8"))
    # float16 x and scale: multiples of 1/8 over a power-of-two scale divide exactly.
    xh = (rng.integers(-64, 64, (5,)) / 8.0).astype(np.float16)
    sh = np.array(0.25, np.float16)
    out.append(Case("quantize_linear", [xh, sh, z], [quantize_ref(xh, sh, z)], name="f16"))
    # Long runs (whole vectors of the onednn loops plus tails): per tensor with exact ties
    # (multiples of 1/2 over scale 0.5 -> k / 4 ... and saturation both ends), per axis with
    # channel runs of 37 elements.
    xl = np.concatenate([rng.integers(-800, 800, 1000) / 4.0,
                         rng.uniform(-90, 90, 203)]).astype(F32)
    sl5, zl5 = np.array(0.5, F32), np.array(100, np.uint8)
    out.append(Case("quantize_linear", [xl, sl5, zl5], [quantize_ref(xl, sl5, zl5)],
                    name="long_tensor_u8_ties"))
    xr = rng.uniform(-60, 60, (2, 5, 37)).astype(F32)
    sr = np.array([0.5, 0.25, 1.0, 0.3, 0.75], F32)
    zr = np.array([-10, 0, 20, 5, -128], np.int8)
    out.append(Case("quantize_linear", [xr, sr, zr], [quantize_ref(xr, sr, zr, 1, np.int8)],
                    name="long_axis1_i8"))
    return out


def dequantize_cases(rng):
    out = []
    xu = rng.integers(0, 256, (3, 4)).astype(np.uint8)
    s, z = np.array(0.1, F32), np.array(120, np.uint8)
    out.append(Case("dequantize_linear", [xu, s, z], [dequantize_ref(xu, s, z)], name="u8"))
    out.append(Case("dequantize_linear", [xu, s], [dequantize_ref(xu, s, None)],
                    name="no_zero_point"))
    xi = rng.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    sa, za = np.array([0.5, 0.02, 3.0], F32), np.array([-5, 0, 7], np.int8)
    out.append(Case("dequantize_linear", [xi, sa, za], [dequantize_ref(xi, sa, za)],
                    name="axis1_i8"))
    sl, zl = np.array([1.0, 0.5, 0.25, 2.0], F32), np.array([1, 2, 3, 4], np.int8)
    out.append(Case("dequantize_linear", [xi, sl, zl], [dequantize_ref(xi, sl, zl, 2)],
                    {"axis": 2}, name="axis2_i8"))
    xr = rng.integers(-128, 128, (2, 5, 37)).astype(np.int8)
    sr = np.array([0.5, 0.02, 3.0, 0.125, 1.5], F32)
    zr = np.array([-5, 0, 7, 127, -128], np.int8)
    out.append(Case("dequantize_linear", [xr, sr, zr], [dequantize_ref(xr, sr, zr)],
                    name="long_axis1_i8"))
    xl = rng.integers(0, 256, (1203,)).astype(np.uint8)
    out.append(Case("dequantize_linear", [xl, s, z], [dequantize_ref(xl, s, z)],
                    name="long_tensor_u8"))
    x32 = rng.integers(-100000, 100000, (6,)).astype(np.int32)
    out.append(Case("dequantize_linear", [x32, np.array(0.001, F32), np.array(0, np.int32)],
                    [dequantize_ref(x32, 0.001, 0)], name="i32"))
    sh = np.array(0.125, np.float16)
    out.append(Case("dequantize_linear", [xu, sh, z],
                    [dequantize_ref(xu, sh, z).astype(np.float16)], name="f16_scale"))
    return out


def dynamic_ref(x):
    lo = min(F32(0), x.min())
    hi = max(F32(0), x.max())
    scale = F32((F32(hi) - F32(lo)) / F32(255))
    zp = np.rint(np.clip(F32(0) - F32(lo) / scale, 0, 255)).astype(np.uint8)
    y = sat(np.rint(x / scale) + zp.astype(np.int64), np.uint8)
    return y, np.array(scale, F32), np.array(zp, np.uint8)


def dynamic_cases(rng):
    out = []
    for nm, x in [("mixed", np.array([0, 2, -3, -2.5, 1.34, 0.5], F32)),
                  ("negative", np.array([-1.0, -2.1, -1.3, -2.5, -3.34, -4.0], F32)),
                  ("positive_2d", rng.uniform(0.5, 4, (3, 4)).astype(F32)),
                  ("random_3d", rng.uniform(-7, 3, (2, 3, 5)).astype(F32))]:
        out.append(Case("dynamic_quantize_linear", [x], list(dynamic_ref(x)), name=nm))
    # All zeros: scale 0; the schema documents y = 0 and zero point 0 (hand values).
    zeros = np.zeros((4,), F32)
    out.append(Case("dynamic_quantize_linear", [zeros],
                    [np.zeros((4,), np.uint8), np.array(0, F32), np.array(0, np.uint8)],
                    name="all_zero"))
    return out


def mm_operand(x, zp, rows):
    """x as int64 minus its zero point (per tensor, per row [M] or per column [N])."""
    v = x.astype(np.int64)
    if zp is None:
        return v
    z = np.asarray(zp).astype(np.int64)
    if z.size == 1:
        return v - z.reshape(())
    return v - (z.reshape(-1, 1) if rows else z.reshape(1, -1))


def matmul_integer_ref(a, b, azp=None, bzp=None):
    return np.matmul(mm_operand(a, azp, True), mm_operand(b, bzp, False)).astype(np.int32)


def qlinear_matmul_ref(a, a_s, azp, b, b_s, bzp, y_s, yzp):
    acc = matmul_integer_ref(a, b, azp, bzp)
    a_s, b_s = np.asarray(a_s, F32), np.asarray(b_s, F32)
    fa = a_s.reshape(-1, 1) if a_s.size > 1 else a_s.reshape(())
    fb = b_s.reshape(1, -1) if b_s.size > 1 else b_s.reshape(())
    factor = (fa * fb / np.asarray(y_s, F32).reshape(())).astype(F32)
    d = acc.astype(np.float64) * factor.astype(np.float64)
    return sat(np.rint(d) + np.int64(np.asarray(yzp).reshape(())), np.asarray(yzp).dtype.type)


def rand_q(rng, shape, qt):
    lo, hi = QRANGE[qt]
    return rng.integers(lo, hi + 1, shape).astype(qt)


def matmul_integer_cases(rng):
    out = []
    u8, i8 = np.uint8, np.int8
    a, b = rand_q(rng, (4, 3), u8), rand_q(rng, (3, 2), u8)
    za, zb = np.array(12, u8), np.array(0, u8)
    out.append(Case("matmul_integer", [a, b, za, zb], [matmul_integer_ref(a, b, za, zb)],
                    name="2d_u8"))
    bi = rand_q(rng, (3, 5), i8)
    out.append(Case("matmul_integer", [a, bi], [matmul_integer_ref(a, bi)],
                    name="u8_i8_no_zero_point"))
    zr, zc = rand_q(rng, (4,), u8), rand_q(rng, (5,), i8)
    out.append(Case("matmul_integer", [a, bi, zr, zc], [matmul_integer_ref(a, bi, zr, zc)],
                    name="per_row_per_column"))
    a3, b3 = rand_q(rng, (2, 1, 3, 7), i8), rand_q(rng, (4, 7, 5), u8)
    z3 = np.array([-3], i8)
    out.append(Case("matmul_integer", [a3, b3, z3, np.array([100], u8)],
                    [matmul_integer_ref(a3, b3, z3, np.array([100], u8))],
                    name="broadcast_batch"))
    av, bm = rand_q(rng, (7,), u8), rand_q(rng, (7, 3), u8)
    out.append(Case("matmul_integer", [av, bm, np.array(5, u8)],
                    [matmul_integer_ref(av, bm, np.array(5, u8))], name="vec_mat"))
    # s8 B with per-tensor zero points (the form oneDNN's int8 matmul takes).
    for nm, sa, sb, at in [("u8_s8_zp", (5, 16), (16, 7), u8), ("s8_s8_zp", (3, 9), (9, 4), i8),
                           ("u8_s8_batch", (2, 3, 6, 8), (2, 1, 8, 5), u8),
                           ("u8_s8_fold_batch", (2, 3, 32), (32, 17), u8)]:
        a, b = rand_q(rng, sa, at), rand_q(rng, sb, i8)
        za, zb = rand_q(rng, (), at), rand_q(rng, (1,), i8)
        out.append(Case("matmul_integer", [a, b, za, zb], [matmul_integer_ref(a, b, za, zb)],
                        name=nm, constant_inputs=[1, 2, 3]))
        out.append(Case("matmul_integer", [a, b, za, zb], [matmul_integer_ref(a, b, za, zb)],
                        name=nm + "_runtime", constant_inputs=[]))
    return out


def qlinear_matmul_cases(rng):
    out = []
    u8, i8 = np.uint8, np.int8
    # The ONNX operator spec's example (node test test_qlinearmatmul_2D).
    a = np.array([[208, 236, 0, 238], [3, 214, 255, 29]], u8)
    b = np.array([[152, 51, 244], [60, 26, 255], [0, 127, 246], [127, 254, 247]], u8)
    ins = [a, np.array([0.0066], F32), np.array([113], u8), b, np.array([0.00705], F32),
           np.array([114], u8), np.array([0.0107], F32), np.array([118], u8)]
    out.append(Case("qlinear_matmul", ins, [np.array([[168, 115, 255], [1, 66, 151]], u8)],
                    name="spec_example"))
    out.append(Case("qlinear_matmul", ins, [qlinear_matmul_ref(*ins)], name="spec_reference"))
    a, b = rand_q(rng, (3, 2, 6), i8), rand_q(rng, (6, 4), u8)
    ins = [a, np.array(0.05, F32), np.array(2, i8), b, np.array([0.01, 0.02, 0.03, 0.04], F32),
           np.array([128, 120, 130, 127], u8), np.array(0.08, F32), np.array(-5, i8)]
    out.append(Case("qlinear_matmul", ins, [qlinear_matmul_ref(*ins)],
                    name="i8_per_column_out_i8"))
    a, b = rand_q(rng, (5, 8), u8), rand_q(rng, (8, 3), i8)
    ins = [a, np.array([0.01, 0.02, 0.03, 0.04, 0.05], F32), np.array([1, 2, 3, 4, 5], u8), b,
           np.array(0.1, F32), np.array(0, i8), np.array(0.02, F32), np.array(128, u8)]
    out.append(Case("qlinear_matmul", ins, [qlinear_matmul_ref(*ins)],
                    name="per_row_saturating"))
    # s8 B (the form oneDNN's int8 matmul takes): per tensor and per column of B.
    for nm, sa, sb, per_col, yt in [("u8_s8", (4, 24), (24, 6), False, u8),
                                    ("u8_s8_per_column_i8", (2, 3, 16), (16, 5), True, i8),
                                    ("s8_s8_batch", (2, 4, 8), (2, 8, 3), False, u8)]:
        at = u8 if nm.startswith("u8") else i8
        a, b = rand_q(rng, sa, at), rand_q(rng, sb, i8)
        bsc = rng.uniform(0.002, 0.02, (sb[-1],)).astype(F32) if per_col else np.array(0.01, F32)
        ins = [a, np.array(0.03, F32), rand_q(rng, (), at), b, bsc, np.array(-2, i8),
               np.array(0.1, F32), np.array(10 if yt == u8 else -7, yt)]
        out.append(Case("qlinear_matmul", ins, [qlinear_matmul_ref(*ins)], name=nm,
                        constant_inputs=list(range(1, 8))))
        # Every input a run-time value (B not pre-packed, scales computed per run).
        out.append(Case("qlinear_matmul", ins, [qlinear_matmul_ref(*ins)], name=nm + "_runtime",
                        constant_inputs=[]))
    return out


def conv_int_acc(x, w, xzp, wzp, attrs):
    """int64 conv of (x - xzp) and (w - wzp[m]) (zero padding), exact through float64."""
    nd = x.ndim - 2
    xs = x.astype(np.int64) - (0 if xzp is None else np.int64(np.asarray(xzp).reshape(())))
    wz = 0 if wzp is None else np.asarray(wzp).astype(np.int64)
    if np.size(wz) > 1:
        wz = wz.reshape((-1,) + (1,) * (nd + 1))
    ws = w.astype(np.int64) - wz
    strides = attrs.get("strides", [1] * nd)
    dil = attrs.get("dilations", [1] * nd)
    group = attrs.get("group", 1)
    if attrs.get("auto_pad") in ("SAME_UPPER", "SAME_LOWER"):
        pb, pe = same_pads(x.shape[2:], w.shape[2:], strides, dil,
                           attrs["auto_pad"] == "SAME_LOWER")
    else:
        p = attrs.get("pads", [0] * (2 * nd))
        pb, pe = p[:nd], p[nd:]
    y = conv_ref(strides, dil, group, pb, pe)(xs.astype(np.float64), ws.astype(np.float64))
    return np.rint(y).astype(np.int64)


CONV_VARIANTS = [
    # (x shape, w shape, attrs, per-channel weights, name)
    ((1, 1, 3, 3), (1, 1, 2, 2), {"pads": [1, 1, 1, 1]}, False, "pads"),
    ((2, 4, 5, 6), (6, 2, 3, 3), {"group": 2, "strides": [2, 1]}, True, "group_stride"),
    ((1, 3, 7), (2, 3, 3), {"dilations": [2], "pads": [2, 1]}, True, "1d_dilated"),
    ((1, 2, 5, 5), (3, 2, 2, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, False,
     "same_upper"),
]


def conv_integer_cases(rng):
    out = []
    for xs, wsh, attrs, per_ch, nm in CONV_VARIANTS:
        x, w = rand_q(rng, xs, np.uint8), rand_q(rng, wsh, np.int8)
        xzp = np.array(rng.integers(0, 256), np.uint8)
        wzp = rand_q(rng, (wsh[0],), np.int8) if per_ch else np.array(3, np.int8)
        ref = conv_int_acc(x, w, xzp, wzp, attrs).astype(np.int32)
        out.append(Case("conv_integer", [x, w, xzp, wzp], [ref], dict(attrs), name=nm,
                        constant_inputs=[1, 2, 3]))
    x, w = rand_q(rng, (1, 2, 4, 4), np.int8), rand_q(rng, (2, 2, 3, 3), np.uint8)
    out.append(Case("conv_integer", [x, w], [conv_int_acc(x, w, None, None, {}).astype(np.int32)],
                    name="i8_u8_no_zero_point"))
    # s8 w without a weight zero point (the form oneDNN's int8 convolution takes).
    for xs, wsh, attrs, _, nm in CONV_VARIANTS:
        x, w = rand_q(rng, xs, np.uint8), rand_q(rng, wsh, np.int8)
        xzp = np.array(rng.integers(0, 256), np.uint8)
        out.append(Case("conv_integer", [x, w, xzp],
                        [conv_int_acc(x, w, xzp, None, attrs).astype(np.int32)], dict(attrs),
                        name=nm + "_s8w", constant_inputs=[1, 2]))
    x, w = rand_q(rng, (2, 16, 9, 9), np.int8), rand_q(rng, (32, 16, 3, 3), np.int8)
    zx, zw = np.array(-4, np.int8), np.array(0, np.int8)
    out.append(Case("conv_integer", [x, w, zx, zw],
                    [conv_int_acc(x, w, zx, zw, {"pads": [1, 1, 1, 1]}).astype(np.int32)],
                    {"pads": [1, 1, 1, 1]}, name="s8_s8_16ch", constant_inputs=[1, 2, 3]))
    return out


def qlinear_conv_ref(x, xs, xzp, w, ws, wzp, ys, yzp, b, attrs):
    acc = conv_int_acc(x, w, xzp, wzp, attrs)
    nd = x.ndim - 2
    if b is not None:
        acc = acc + b.astype(np.int64).reshape((-1,) + (1,) * nd)
    ws = np.asarray(ws, F32)
    wsb = ws.reshape((-1,) + (1,) * nd) if ws.size > 1 else ws.reshape(())
    factor = (np.asarray(xs, F32).reshape(()) * wsb / np.asarray(ys, F32).reshape(())).astype(F32)
    d = acc.astype(np.int32).astype(np.float64) * factor.astype(np.float64)
    return sat(np.rint(d) + np.int64(np.asarray(yzp).reshape(())), np.asarray(yzp).dtype.type)


def qlinear_conv_cases(rng):
    out = []
    for i, (xsh, wsh, attrs, per_ch, nm) in enumerate(CONV_VARIANTS):
        x, w = rand_q(rng, xsh, np.uint8), rand_q(rng, wsh, np.int8)
        m = wsh[0]
        xs, xzp = np.array(0.02, F32), np.array(rng.integers(0, 256), np.uint8)
        ws = rng.uniform(0.001, 0.01, (m,)).astype(F32) if per_ch else np.array(0.004, F32)
        wzp = np.zeros((m,), np.int8) if per_ch else np.array(0, np.int8)
        yqt = np.int8 if i % 2 else np.uint8
        ys, yzp = np.array(0.05, F32), np.array(3 if i % 2 else 128, yqt)
        b = rng.integers(-2000, 2000, (m,)).astype(np.int32) if i % 2 == 0 else None
        ins = [x, xs, xzp, w, ws, wzp, ys, yzp] + ([b] if b is not None else [])
        out.append(Case("qlinear_conv", ins,
                        [qlinear_conv_ref(x, xs, xzp, w, ws, wzp, ys, yzp, b, attrs)],
                        dict(attrs), name=nm, constant_inputs=list(range(1, len(ins)))))
    # 16 channels (a blocked oneDNN layout), and w as a run-time value (scales constant).
    x, w = rand_q(rng, (2, 16, 8, 8), np.uint8), rand_q(rng, (32, 16, 3, 3), np.int8)
    ins = [x, np.array(0.02, F32), np.array(100, np.uint8), w,
           rng.uniform(0.001, 0.004, (32,)).astype(F32), np.zeros((32,), np.int8),
           np.array(0.1, F32), np.array(120, np.uint8),
           rng.integers(-5000, 5000, (32,)).astype(np.int32)]
    at = {"pads": [1, 1, 1, 1], "strides": [1, 1]}
    ref = [qlinear_conv_ref(*ins[:8], ins[8], at)]
    out.append(Case("qlinear_conv", ins, ref, dict(at), name="16ch_per_channel",
                    constant_inputs=list(range(1, 9))))
    out.append(Case("qlinear_conv", ins, ref, dict(at), name="16ch_runtime_w",
                    constant_inputs=[1, 2, 4, 5, 6, 7, 8]))
    # The node test's data (ONNX QLinearConv example), reference computed here.
    x = rng.integers(0, 256, (1, 1, 7, 7)).astype(np.uint8)
    ins = [x, np.array(0.00369204697, F32), np.array(132, np.uint8),
           np.array([0], np.uint8).reshape(1, 1, 1, 1), np.array([0.00172794575], F32),
           np.array([255], np.uint8), np.array(0.00162681262, F32), np.array(123, np.uint8)]
    out.append(Case("qlinear_conv", ins, [qlinear_conv_ref(*ins, None, {})], name="1x1"))
    return out


def cases():
    rng = np.random.default_rng(4321)
    return (quantize_cases(rng) + dequantize_cases(rng) + dynamic_cases(rng) +
            matmul_integer_cases(rng) + qlinear_matmul_cases(rng) + conv_integer_cases(rng) +
            qlinear_conv_cases(rng))
