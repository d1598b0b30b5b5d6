"""Op database cases for the broadcasting binary / variadic elementwise ops, pow, prelu and
where (frame/ops/elementwise.h). References: numpy integer semantics, float64 math rounded once
to the output dtype, or numpy's own per-op float16 arithmetic for chains (sum/mean)."""
from __future__ import annotations

import numpy as np

from op_db.common import Case, to_bf16_bits
from op_db.elementwise import FLOATS, INF, INTS, NAN, NP, SINTS, _rng, enc, fcase, rand, rand_int

# (name, shape A, shape B): same shape, odd sizes, broadcasting, scalars, empty.
SHAPES = [("same7", (7,), (7,)), ("odd33", (33,), (33,)), ("bcast", (2, 3, 1), (1, 4)),
          ("bcast_rank", (4,), (2, 3, 4)), ("scalar_lhs", (), (5,)), ("scalar", (), ()),
          ("empty", (0, 3), (1, 3))]


def _int_pair(dt, sa, sb, lo=None, hi=None, nonzero_b=False):
    a = rand_int(dt, sa, lo, hi)
    b = rand_int(dt, sb, lo, hi)
    if nonzero_b:
        b = np.where(b == 0, np.array(1, NP[dt]), b).astype(NP[dt])
    return a, b


def _with_int(a, b, f):
    """f over int64 copies, wrapped back to a's dtype (numpy's integer semantics)."""
    return f(a.astype(np.int64), b.astype(np.int64)).astype(a.dtype)


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


ARITH = {  # op -> (float ref, int ref, float range, nonzero divisor)
    "add": (np.add, np.add, (-10, 10), False),
    "sub": (np.subtract, np.subtract, (-10, 10), False),
    "mul": (np.multiply, np.multiply, (-10, 10), False),
    "div": (np.divide, _trunc_div, (0.5, 10), True),
}


def arith_cases():
    cases = []
    for op, (fref, iref, (lo, hi), nonzero) in ARITH.items():
        for nm, sa, sb in SHAPES:
            for dt in (FLOATS if nm in ("odd33", "bcast") else ["f32"]):
                a = rand(sa, lo, hi) * _rng.choice([-1, 1], size=sa)
                b = rand(sb, lo, hi) * _rng.choice([-1, 1], size=sb)
                cases.append(fcase(op, [dt, dt], dt, [a, b], fref, f"{nm}_{dt}"))
        for dt in ["f64"]:
            cases.append(fcase(op, [dt, dt], dt, [rand((2, 7), 1, 5), rand((7,), 1, 5)], fref,
                               f"bcast2d_{dt}"))
        sp = [INF, -INF, NAN, 0.0, 1.0, -0.0]
        a = np.array([x for x in sp for _ in sp])
        b = np.array([y for _ in sp for y in sp])
        cases.append(fcase(op, ["f32", "f32"], "f32", [a, b], fref, "special_f32"))
        for dt in INTS:
            for nm, sa, sb in SHAPES[:4]:
                a, b = _int_pair(dt, sa, sb, nonzero_b=nonzero)
                if dt == "u8" and op == "sub":
                    y = (a.astype(np.int64) - b.astype(np.int64)).astype(np.uint8)
                else:
                    y = _with_int(a, b, iref)
                cases.append(Case(op=op, inputs=[a, b], outputs=[y], name=f"{nm}_{dt}"))
    big = np.array([2**31 - 1, -2**31, 7], np.int32)
    cases.append(Case(op="add", inputs=[big, np.array(1, np.int32)],
                      outputs=[(big.astype(np.int64) + 1).astype(np.int32)], name="wrap_i32"))
    cases.append(Case(op="mul", inputs=[big, np.array(2, np.int32)],
                      outputs=[(big.astype(np.int64) * 2).astype(np.int32)], name="wrap_i32"))
    m = np.array([-128, 7, -7], np.int8)
    cases.append(Case(op="div", inputs=[m, np.array([-1, -2, 2], np.int8)],
                      outputs=[np.array([-128, -3, -3], np.int8)], name="trunc_wrap_i8"))
    return cases


def mod_cases():
    cases = []
    for fmod in (0, 1):
        ref = np.fmod if fmod else np.mod
        for dt in INTS:
            lo = 0 if dt == "u8" else None
            a, b = _int_pair(dt, (33,), (33,), lo=lo, nonzero_b=True)
            cases.append(Case(op="mod", inputs=[a, b], outputs=[_with_int(a, b, ref)],
                              attrs={"fmod": fmod}, name=f"fmod{fmod}_odd33_{dt}"))
        a, b = _int_pair("i32", (2, 3, 1), (1, 4), nonzero_b=True)
        cases.append(Case(op="mod", inputs=[a, b], outputs=[_with_int(a, b, ref)],
                          attrs={"fmod": fmod}, name=f"fmod{fmod}_bcast_i32"))
        for dt in FLOATS:
            a = rand((33,), -10, 10)
            b = rand((33,), 0.5, 4) * _rng.choice([-1, 1], size=33)
            cases.append(fcase("mod", [dt, dt], dt, [a, b], ref, f"fmod{fmod}_odd33_{dt}",
                               attrs={"fmod": fmod}))
        cases.append(fcase("mod", ["f32", "f32"], "f32", [np.float64(-7.5), np.float64(2.0)], ref,
                           f"fmod{fmod}_scalar_f32", attrs={"fmod": fmod}))
        cases.append(fcase("mod", ["f32", "f32"], "f32", [np.zeros((0,)), np.ones((1,))], ref,
                           f"fmod{fmod}_empty_f32", attrs={"fmod": fmod}))
    cases.append(fcase("mod", ["f64", "f64"], "f64", [[INF, 1.0, NAN, 3.0], [2.0, 0.0, 1.0, INF]],
                       np.fmod, "fmod1_special_f64", attrs={"fmod": 1}))
    # The sign rules by hand: Python % follows the divisor, C fmod the dividend.
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([3, 3, -3, -3], np.int32)
    cases.append(Case(op="mod", inputs=[a, b], outputs=[np.array([1, 2, -2, -1], np.int32)],
                      name="signs_hand_i32"))
    cases.append(Case(op="mod", inputs=[a, b], outputs=[np.array([1, -1, 1, -1], np.int32)],
                      attrs={"fmod": 1}, name="signs_hand_fmod_i32"))
    return cases


def pow_cases():
    cases = []
    for dt in FLOATS:
        cases.append(fcase("pow", [dt, dt], dt, [rand((33,), 0.1, 3), rand((33,), -2, 2)],
                           np.power, f"odd33_{dt}"))
    cases.append(fcase("pow", ["f32", "f32"], "f32", [rand((2, 3, 1), 0.5, 2), rand((1, 4), -2, 2)],
                       np.power, "bcast_f32"))
    for edt in ["f64", "f16"]:
        cases.append(fcase("pow", ["f32", edt], "f32", [rand((7,), 0.5, 2), rand((7,), -2, 2)],
                           np.power, f"mixed_f32_{edt}"))
    for edt in INTS:
        base = rand((7,), -3, 3)
        e = rand_int(edt, (7,), 0, 4)
        x, xv = enc("f32", base)
        cases.append(Case(op="pow", inputs=[x, e], outputs=[np.power(xv, e).astype(np.float32)],
                          name=f"int_exp_f32_{edt}", constant_inputs=[]))
    for dt in ["i32", "i64"]:
        b = rand_int(dt, (7,), -5, 5)
        e = rand_int(dt, (7,), 0, 5)
        cases.append(Case(op="pow", inputs=[b, e], outputs=[np.power(b, e)], name=f"int_{dt}",
                          constant_inputs=[]))
    b = np.array([2, 3, 9], np.int64)
    e = np.array([0.5, 2.0, 0.5], np.float32)
    cases.append(Case(op="pow", inputs=[b, e], outputs=[np.array([1, 9, 3], np.int64)],
                      name="i64_float_exp_trunc", constant_inputs=[]))
    cases.append(fcase("pow", ["f32", "f32"], "f32", [np.float64(2.0), np.float64(10.0)],
                       np.power, "scalar_f32"))
    cases.append(fcase("pow", ["f32", "f32"], "f32", [np.zeros((0, 2)), np.ones((2,))], np.power,
                       "empty_f32"))
    cases.append(fcase("pow", ["f32", "f32"], "f32", [[-2.0, 0.0, INF, NAN, 1.0, -8.0],
                                                       [0.5, -1.0, -1.0, 0.0, NAN, 3.0]],
                       np.power, "special_f32"))
    return cases


CMP = {"equal": np.equal, "less": np.less, "less_equal": np.less_equal,
       "greater": np.greater, "greater_equal": np.greater_equal}


def compare_cases():
    cases = []
    pool = np.array([-1.5, 0.0, 1.0, 2.5, INF, -INF, NAN])
    for op, ref in CMP.items():
        for dt in FLOATS:
            a = _rng.choice(pool, size=33)
            b = _rng.choice(pool, size=33)
            cases.append(fcase(op, [dt, dt], "bool", [a, b], ref, f"odd33_{dt}"))
        for nm, sa, sb in SHAPES:
            if nm == "odd33":
                continue
            a = _rng.integers(-2, 3, size=sa).astype(np.float64)
            b = _rng.integers(-2, 3, size=sb).astype(np.float64)
            cases.append(fcase(op, ["f32", "f32"], "bool", [a, b], ref, f"{nm}_f32"))
        for dt in INTS:
            a, b = _int_pair(dt, (2, 3, 1), (1, 4), lo=0, hi=3)
            cases.append(Case(op=op, inputs=[a, b], outputs=[ref(a, b)], name=f"bcast_{dt}"))
    a = _rng.integers(0, 2, (2, 3)).astype(bool)
    b = _rng.integers(0, 2, (3,)).astype(bool)
    cases.append(Case(op="equal", inputs=[a, b], outputs=[a == b], name="bcast_bool"))
    return cases


def logic_cases():
    cases = []
    for op, ref in [("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)]:
        for nm, sa, sb in SHAPES:
            a = _rng.integers(0, 2, sa).astype(bool)
            b = _rng.integers(0, 2, sb).astype(bool)
            cases.append(Case(op=op, inputs=[a, b], outputs=[ref(a, b)], name=f"{nm}_bool"))
    for direction, ref in [("LEFT", np.left_shift), ("RIGHT", np.right_shift)]:
        for nm, sa, sb in SHAPES:
            a = rand_int("u8", sa, 0, 255)
            b = rand_int("u8", sb, 0, 7)
            cases.append(Case(op="bit_shift", inputs=[a, b], outputs=[ref(a, b)],
                              attrs={"direction": direction}, name=f"{direction.lower()}_{nm}_u8"))
        a = np.array([1, 255, 128], np.uint8)
        b = np.array([8, 9, 200], np.uint8)
        cases.append(Case(op="bit_shift", inputs=[a, b], outputs=[np.zeros(3, np.uint8)],
                          attrs={"direction": direction}, name=f"{direction.lower()}_wide_u8"))
    return cases


def prelu_cases():
    cases = []

    def ref(x, s):
        return np.where(x < 0, s * x, x)

    for nm, sx, ss in [("channel", (2, 3, 4), (3, 1)), ("last", (2, 3, 4), (4,)),
                       ("scalar_slope", (2, 5), ()), ("one", (33,), (1,)),
                       ("same", (7,), (7,)), ("empty", (0, 3), (3,)), ("scalar", (), ())]:
        for dt in (FLOATS if nm == "channel" else ["f32"]):
            cases.append(fcase("prelu", [dt, dt], dt, [rand(sx, -3, 3), rand(ss, 0.05, 0.5)], ref,
                               f"{nm}_{dt}"))
    cases.append(fcase("prelu", ["f32", "f32"], "f32", [[INF, -INF, NAN, -1.0], [0.1]], ref,
                       "special_f32"))
    for dt in ["i32", "i64"]:
        x = rand_int(dt, (2, 3))
        s = rand_int(dt, (3,), 1, 4)
        cases.append(Case(op="prelu", inputs=[x, s], outputs=[np.where(x < 0, s * x, x)],
                          name=f"channel_{dt}", constant_inputs=[]))
    return cases


def where_cases():
    cases = []
    for nm, sc, sx, sy in [("same", (7,), (7,), (7,)), ("bcast", (2, 1, 4), (3, 1), ()),
                           ("odd33", (33,), (33,), (1,)), ("scalar", (), (), ()),
                           ("empty", (0, 2), (2,), (1, 2))]:
        dts = FLOATS + INTS + ["bool"] if nm == "bcast" else ["f32"]
        for dt in dts:
            c = _rng.integers(0, 2, sc).astype(bool)
            if dt in FLOATS:
                x, xv = enc(dt, rand(sx, -5, 5))
                y, yv = enc(dt, rand(sy, -5, 5))
                res = enc(dt, np.where(c, xv, yv))[0]
            elif dt == "bool":
                x = _rng.integers(0, 2, sx).astype(bool)
                y = _rng.integers(0, 2, sy).astype(bool)
                res = np.where(c, x, y)
            else:
                x, y = rand_int(dt, sx), rand_int(dt, sy)
                res = np.where(c, x, y)
            bf = [1, 2] if dt == "bf16" else []
            cases.append(Case(op="where", inputs=[c, x, y], outputs=[res], name=f"{nm}_{dt}",
                              bf16_inputs=bf, bf16_outputs=[0] if dt == "bf16" else [],
                              constant_inputs=[]))
    c = np.array([True, False])
    x = np.array([NAN, 1.0], np.float32)
    y = np.array([2.0, INF], np.float32)
    cases.append(Case(op="where", inputs=[c, x, y], outputs=[np.array([NAN, INF], np.float32)],
                      name="special_f32"))
    return cases


VARIADIC = {"sum": (np.add, INTS + FLOATS), "max": (np.maximum, INTS + FLOATS),
            "min": (np.minimum, INTS + FLOATS), "mean": (np.add, FLOATS)}


def variadic_cases():
    cases = []
    shapes = [("one", [(7,)]), ("two_bcast", [(2, 3, 1), (1, 4)]),
              ("three_bcast", [(3, 1), (4,), ()]), ("odd33", [(33,), (33,), (33,)]),
              ("scalar", [(), ()]), ("empty", [(0, 3), (3,)])]
    for op, (ref, dts) in VARIADIC.items():
        for nm, shs in shapes:
            for dt in (dts if nm == "three_bcast" else ["f32"]):
                if dt in FLOATS:
                    ins = [rand(s, -5, 5) for s in shs]
                    if op == "mean":
                        def r(*v, n=len(shs)):
                            acc = v[0]
                            for t in v[1:]:
                                acc = acc + t
                            return acc / n
                    else:
                        def r(*v, f=ref):
                            acc = v[0]
                            for t in v[1:]:
                                acc = f(acc, t)
                            return acc
                    cases.append(fcase(op, [dt] * len(ins), dt, ins, r, f"{nm}_{dt}"))
                else:
                    ins = [rand_int(dt, s, 0 if dt == "u8" else -20, 20) for s in shs]
                    acc = ins[0]
                    for t in ins[1:]:
                        acc = ref(acc, t).astype(NP[dt])
                    cases.append(Case(op=op, inputs=ins, outputs=[np.broadcast_to(acc, acc.shape)],
                                      name=f"{nm}_{dt}", constant_inputs=[]))
    # float16 chains round after every step, exactly like numpy's per-op float16 arithmetic.
    a = np.full((4,), 1.0, np.float16)
    h = np.full((4,), 2.0 ** -11, np.float16)  # half an ulp of 1.0
    cases.append(Case(op="sum", inputs=[a, h, h], outputs=[(a + h) + h], name="fp16_per_op_round"))
    xs = [rand((33,), -100, 100).astype(np.float16) for _ in range(3)]
    cases.append(Case(op="sum", inputs=xs, outputs=[(xs[0] + xs[1]) + xs[2]],
                      name="fp16_chain_odd33"))
    cases.append(Case(op="mean", inputs=xs, outputs=[((xs[0] + xs[1]) + xs[2]) / np.float16(3)],
                      name="fp16_chain_odd33"))
    nan = [np.array([NAN, 1.0, 2.0], np.float32), np.array([0.0, NAN, 3.0], np.float32)]
    for op, f in [("max", np.maximum), ("min", np.minimum)]:
        cases.append(Case(op=op, inputs=nan, outputs=[f(nan[0], nan[1])], name="nan_f32"))
    cases.append(Case(op="sum", inputs=[np.array([INF, 1.0], np.float32),
                                        np.array([-INF, NAN], np.float32)],
                      outputs=[np.array([NAN, NAN], np.float32)], name="special_f32"))
    return cases


def cases():
    return (arith_cases() + mod_cases() + pow_cases() + compare_cases() + logic_cases()
            + prelu_cases() + where_cases() + variadic_cases())
