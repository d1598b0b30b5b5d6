"""Op database: value-producing ops (constant, constant_of_shape, range, shape, size), the random
ops and print. References are numpy or hand values. Random outputs are checked for shape and
dtype only (check_values False), except where the value is forced (bernoulli with p in {0, 1});
their statistics are tested in tests/cpp/ops/random_ops_test.cpp.
"""
from __future__ import annotations

import numpy as np

from op_db.common import Case, TensorAttr, floats_attr, ints_attr, to_bf16_bits

ONNX_DTYPE = {"f32": 1, "u8": 2, "i8": 3, "i16": 5, "i32": 6, "i64": 7, "bool": 9, "f16": 10,
              "f64": 11, "bf16": 16}
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_}


def constant_cases():
    out = []
    for dt, v in [("f32", [[1.5, -2.0, 3.25]]), ("f64", [1e300, -0.5]), ("f16", [0.5, 65504]),
                  ("i8", [-128, 127]), ("i16", [300]), ("i32", [[1], [2]]),
                  ("i64", [2**62, -3]), ("u8", [255, 0]), ("bool", [True, False, True])]:
        a = np.array(v, NP[dt])
        out.append(Case("constant", [], [a], {"value": TensorAttr(a)}, f"tensor_{dt}"))
    out += [
        Case("constant", [], [np.array(np.float32(0.1))], {"value_float": 0.1}, "value_float"),
        Case("constant", [], [np.array([1.0, -2.5], np.float32)],
             {"value_floats": floats_attr([1.0, -2.5])}, "value_floats"),
        Case("constant", [], [np.array(7, np.int64)], {"value_int": 7}, "value_int"),
        Case("constant", [], [np.array([3, -1, 0], np.int64)], {"value_ints": ints_attr([3, -1, 0])},
             "value_ints"),
        Case("constant", [], [np.zeros((0,), np.int64)], {"value_ints": ints_attr([])},
             "empty_ints"),
        Case("constant", [], [np.array(2.5, np.float32)],
             {"value": TensorAttr(np.array(2.5, np.float32))}, "scalar_tensor"),
    ]
    return out


def constant_of_shape_cases():
    out = [
        Case("constant_of_shape", [np.array([2, 3], np.int64)], [np.zeros((2, 3), np.float32)],
             name="default"),
        Case("constant_of_shape", [np.zeros((0,), np.int64)], [np.array(0, np.float32)],
             name="scalar_default"),
        Case("constant_of_shape", [np.array([4, 0], np.int64)], [np.zeros((4, 0), np.float32)],
             name="empty"),
    ]
    for dt, v in [("f32", 1.25), ("f64", -3.5), ("f16", 2.0), ("i8", -5), ("i16", 7),
                  ("i32", -1), ("i64", 2**40), ("u8", 200), ("bool", True)]:
        val = np.array([v], NP[dt])
        out.append(Case("constant_of_shape", [np.array([3, 1, 2], np.int64)],
                        [np.full((3, 1, 2), v, NP[dt])], {"value": TensorAttr(val)},
                        f"value_{dt}"))
    return out


def range_cases():
    out = []
    specs = [("f32", 0.0, 1.0, 0.25), ("f64", 10.0, -2.0, -1.5), ("i16", 1, 20, 3),
             ("i32", 5, -6, -2), ("i64", -3, 9, 4), ("f32", 3.0, 3.0, 1.0), ("i32", 0, 10, -1),
             ("i64", 2**40, 2**40 + 5, 2), ("f32", -1.0, 1.0, 0.3)]
    for k, (dt, s, l, d) in enumerate(specs):
        t = NP[dt]
        ref = np.arange(t(s), t(l), t(d), dtype=t)
        out.append(Case("range", [np.array(s, t), np.array(l, t), np.array(d, t)], [ref],
                        name=f"{dt}_{k}", constant_inputs=[0, 1, 2]))
    return out


def shape_size_cases():
    x = np.zeros((2, 3, 0, 5), np.float32)
    out = [
        Case("shape", [x], [np.array([2, 3, 0, 5], np.int64)], name="full"),
        Case("shape", [x], [np.array([3, 0], np.int64)], {"start": 1, "end": -1}, "start_end"),
        Case("shape", [x], [np.array([0, 5], np.int64)], {"start": -2}, "neg_start"),
        Case("shape", [x], [np.zeros((0,), np.int64)], {"start": 3, "end": 1}, "empty_range"),
        Case("shape", [x], [np.array([2, 3, 0, 5], np.int64)], {"start": -10, "end": 10},
             "clamped"),
        Case("shape", [np.float32(1)], [np.zeros((0,), np.int64)], name="scalar"),
        Case("size", [x], [np.array(0, np.int64)], name="empty"),
        Case("size", [np.float32(1)], [np.array(1, np.int64)], name="scalar"),
        Case("size", [np.ones((3, 7), np.bool_)], [np.array(21, np.int64)], name="bool"),
    ]
    for dt in ["f64", "f16", "i8", "i32", "u8"]:
        out.append(Case("shape", [np.zeros((4, 1), NP[dt])], [np.array([4, 1], np.int64)],
                        name=f"dtype_{dt}", constant_inputs=[]))
    return out


def random_cases():
    out = []
    for dt in ["f32", "f64", "f16", "bf16"]:
        shp = (3, 7)
        ph = np.zeros(shp, np.uint16 if dt == "bf16" else NP[dt])
        bf = [0] if dt == "bf16" else []
        out.append(Case("random_uniform", [], [ph], {"dtype": ONNX_DTYPE[dt], "shape": [3, 7]},
                        f"uniform_{dt}", check_values=[False], bf16_outputs=bf))
        out.append(Case("random_normal", [], [ph], {"dtype": ONNX_DTYPE[dt], "shape": [3, 7],
                                                     "seed": 1.0},
                        f"normal_{dt}", check_values=[False], bf16_outputs=bf))
        out.append(Case("random_uniform_like", [np.zeros(shp, np.int32)], [ph],
                        {"dtype": ONNX_DTYPE[dt]}, f"uniform_like_{dt}", check_values=[False],
                        bf16_outputs=bf, constant_inputs=[]))
        out.append(Case("random_normal_like", [ph], [ph], {}, f"normal_like_{dt}",
                        check_values=[False], bf16_inputs=bf, bf16_outputs=bf,
                        constant_inputs=[]))
    out.append(Case("random_uniform", [], [np.zeros((0, 4), np.float32)], {"shape": [0, 4]},
                    "empty", check_values=[False]))
    out.append(Case("random_normal", [], [np.zeros((), np.float32)], {"shape": ints_attr([])},
                    "scalar", check_values=[False]))
    # Bernoulli with p in {0, 1} is deterministic: values are checked.
    p = np.array([[0, 1, 1], [0, 0, 1]], np.float32)
    for dt in ["f32", "f64", "i32", "i64", "u8", "bool", "f16"]:
        out.append(Case("bernoulli", [p], [p.astype(NP[dt])], {"dtype": ONNX_DTYPE[dt]},
                        f"forced_{dt}"))
    pd = np.array([0.0, 1.0], np.float64)
    out.append(Case("bernoulli", [pd], [pd], {"seed": 3.0}, "default_dtype"))
    pb = to_bf16_bits(np.array([1.0, 0.0, 1.0], np.float32))
    out.append(Case("bernoulli", [pb], [pb], {}, "bf16", bf16_inputs=[0], bf16_outputs=[0]))
    out.append(Case("bernoulli", [np.full((4, 5), 0.5, np.float32)], [np.zeros((4, 5), np.bool_)],
                    {"dtype": 9, "seed": 7.0}, "half", check_values=[False]))
    return out


def print_cases():
    rng = np.random.default_rng(7)
    out = []
    for dt in ["f32", "f64", "f16", "i8", "i16", "i32", "i64", "u8", "bool"]:
        x = (rng.standard_normal((2, 3)) * 10).astype(NP[dt])
        out.append(Case("print", [x], [x], name=f"pass_{dt}", constant_inputs=[]))
    b = to_bf16_bits(np.array([1.5, -2.0], np.float32))
    out.append(Case("print", [b], [b], name="pass_bf16", bf16_inputs=[0], bf16_outputs=[0]))
    out.append(Case("print", [np.zeros((0, 2), np.float32)], [np.zeros((0, 2), np.float32)],
                    name="empty"))
    out.append(Case("print", [np.float32(np.nan)], [np.float32(np.nan)], name="nan_scalar"))
    return out


def cases():
    return (constant_cases() + constant_of_shape_cases() + range_cases() + shape_size_cases() +
            random_cases() + print_cases())
