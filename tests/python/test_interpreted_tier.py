"""The interpreted tier (docs/adr/0007-first-seen-shapes.md, stage C) against the compiled path:
the same accept/refuse decision under the resource limits on a key's every run, and a data
error in one run that leaves the tier on. Expected values: numpy, and the session with
interpret_first_seen=False."""

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

import frame


def model(nodes, inputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def fp16_matmul():
    # Compiled, float16 is widened to float32: values twice the size the model declares.
    ins = [helper.make_tensor_value_info("a", TP.FLOAT16, ["N", "K"]),
           helper.make_tensor_value_info("b", TP.FLOAT16, ["K", "M"])]
    m = model([helper.make_node("MatMul", ["a", "b"], ["h"]),
               helper.make_node("Cast", ["h"], ["y"], to=TP.FLOAT)], ins)
    return m, {"a": np.ones((30, 40), np.float16), "b": np.ones((40, 30), np.float16)}


def scalar_gathers():
    # 60 scalars: compiled, each takes a 64-byte arena slot.
    k = 60
    nodes = [helper.make_node("Gather", ["x", f"i{j}"], [f"g{j}"], axis=0) for j in range(k)]
    nodes.append(helper.make_node("Sum", [f"g{j}" for j in range(k)], ["y"]))
    inits = [helper.make_tensor(f"i{j}", TP.INT64, [], [j]) for j in range(k)]
    m = model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, ["N"])], inits)
    return m, {"x": np.arange(k, dtype=np.float32)}


def einsum():
    # Compiled, Einsum is decomposed into ops with intermediates of their own.
    ins = [helper.make_tensor_value_info("a", TP.FLOAT, ["I", "J"]),
           helper.make_tensor_value_info("b", TP.FLOAT, ["J", "K"])]
    m = model([helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")], ins)
    return m, {"a": np.ones((20, 30), np.float32), "b": np.ones((30, 20), np.float32)}


def outcomes(m, feeds, interpret, limit, value):
    o = frame.SessionOptions()
    o.interpret_first_seen = interpret
    setattr(o, limit, value)
    s = frame.InferenceSession(m, sess_options=o)
    got = []
    for _ in range(3):  # the key's first run, its compile, a held run
        try:
            got.append(("ok", s.run(None, feeds)[0].tolist()))
        except ValueError as e:
            got.append(("error", str(e)))
    return got


@pytest.mark.parametrize("make,limit,values", [
    (fp16_matmul, "max_tensor_bytes", [2000, 3000, 5000, 20000]),
    (fp16_matmul, "max_memory_bytes", [5000, 10000, 20000, 40000]),
    (scalar_gathers, "max_memory_bytes", [1000, 2000, 4000, 6000, 10000, 40000]),
    (einsum, "max_memory_bytes", [6000, 10000, 13000, 20000, 60000]),
])
def test_limits_decide_alike_with_and_without_the_interpreter(make, limit, values):
    m, feeds = make()
    for v in values:
        on = outcomes(m, feeds, True, limit, v)
        off = outcomes(m, feeds, False, limit, v)
        assert on == off, (limit, v)


def test_a_data_error_leaves_the_interpreter_on():
    ins = [helper.make_tensor_value_info("x", TP.FLOAT, ["N"]),
           helper.make_tensor_value_info("i", TP.INT64, ["K"])]
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], ins)
    errors = []
    for interpret in (True, False):
        o = frame.SessionOptions()
        o.interpret_first_seen = interpret
        s = frame.InferenceSession(m, sess_options=o)
        x = np.arange(5, dtype=np.float32)
        with pytest.raises(ValueError) as e:
            s.run(None, {"x": x, "i": np.array([1, 9], np.int64)})
        errors.append(str(e.value))
        for n in (3, 4, 6):  # new keys after the error
            i = np.arange(n, dtype=np.int64) % 5
            np.testing.assert_array_equal(s.run(None, {"x": x, "i": i})[0], x[i])
        assert (s.cache_stats()["interpreted"] == 3) == interpret, s.cache_stats()
    assert errors[0] == errors[1]
    assert "out of range" in errors[0] or "9" in errors[0], errors[0]
