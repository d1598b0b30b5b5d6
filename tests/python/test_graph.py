"""Graph building, compile, Executable.run, load_onnx and the registries."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import frame
from conftest import model_bytes, vinfo


def test_build_compile_run_matches_numpy():
    g = frame.Graph("mlp")
    x = g.input("x", np.float32, [2, 3])
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    b = g.constant(np.array([0.5, -1, 0, 1], np.float32), name="bias")
    h = g.add_node("matmul", [x, w])
    h = g.add_node("add", [h, b])
    y = g.add_node("leaky_relu", [h], attrs={"alpha": 0.25}, name="act")
    g.output(y)
    assert [v.name for v in g.inputs] == ["x"] and g.num_nodes == 3
    exe = frame.compile(g, backends=["auto"], strict=False, threads=1)
    xv = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    out = exe.run({"x": xv})
    ref = xv @ w + np.array([0.5, -1, 0, 1], np.float32)
    ref = np.where(ref > 0, ref, 0.25 * ref)
    assert list(out) == [y.name]
    np.testing.assert_allclose(out[y.name], ref, rtol=1e-6, atol=1e-6)
    assert exe.input_signature == [("x", np.dtype(np.float32), [2, 3])]
    assert exe.placement() and "op_counts_before" in exe.report()


def test_multiple_outputs_and_int_attrs():
    g = frame.Graph()
    x = g.input("x", "int64", [6])
    parts = g.add_node("split", [x, np.array([2, 4], np.int64)], attrs={"axis": 0}, num_outputs=2)
    assert isinstance(parts, list) and len(parts) == 2
    g.output(parts)
    out = frame.compile(g).run({"x": np.arange(6, dtype=np.int64)})
    a, b = (out[p.name] for p in parts)
    np.testing.assert_array_equal(a, [0, 1])
    np.testing.assert_array_equal(b, [2, 3, 4, 5])


def test_executable_threads_release_gil_and_agree():
    import threading
    g = frame.Graph()
    x = g.input("x", "f64", [64])
    g.output(g.add_node("exp", [x]))
    exe = frame.compile(g, threads=1)
    errors = []

    def work(k):
        v = np.linspace(-1, 1, 64) * k
        for _ in range(50):
            got = next(iter(exe.run({"x": v}).values()))
            if not np.allclose(got, np.exp(v), rtol=1e-12):
                errors.append(k)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors


def test_load_onnx(tmp_path):
    m = model_bytes([helper.make_node("Sigmoid", ["x"], ["y"])],
                    [vinfo("x", TensorProto.FLOAT, ["N", 2])], [vinfo("y", TensorProto.FLOAT, ["N", 2])])
    p = tmp_path / "sig.onnx"
    p.write_bytes(m)
    with pytest.raises(ValueError, match=r"'x'"):
        frame.load_onnx(str(p))  # symbolic dim without input_shapes (ARCH-044)
    g = frame.load_onnx(p, input_shapes={"x": [3, 2]})
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(3, 2)
    (y,) = frame.compile(g).run({"x": x}).values()
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-x)), rtol=1e-6)


def test_registries_hide_internal_ops():
    names = {o["name"] for o in frame.ops()}
    assert {"add", "conv", "relu"} <= names
    assert not any(n.endswith("_internal") for n in names)
    raw = {o["name"] for o in __import__("json").loads(frame._frame._ops_json())}
    assert any(n.endswith("_internal") for n in raw)  # hidden, not absent
    kernels = frame.kernels()
    assert any(k["op"] == "relu" and k["backend"] == "cpu" for k in kernels)
    assert not any(k["op"].endswith("_internal") for k in kernels)


def test_internal_ops_cannot_be_added():
    g = frame.Graph()
    with pytest.raises(KeyError, match=r"PY-021"):
        g.add_node("fused_elementwise_internal", [g.input("a", "f32", [1])])


def test_values_from_other_graphs_are_rejected():
    g1, g2 = frame.Graph(), frame.Graph()
    a = g1.input("a", "f32", [1])
    with pytest.raises(ValueError, match=r"another graph"):
        g2.add_node("relu", [a])


def test_output_types_known_when_added_and_bad_nodes_leave_the_graph_unchanged():
    g = frame.Graph()
    x = g.input("x", "float32", [2, 3])
    y = g.add_node("transpose", [x], attrs={"perm": [1, 0]})
    assert y.dtype == np.float32 and y.shape == [3, 2]
    with pytest.raises(ValueError, match=r"transpose"):
        g.add_node("transpose", [x, x])  # one input too many
    assert g.num_nodes == 1
    g.output(y)
    (out,) = frame.compile(g).run({"x": np.arange(6, dtype=np.float32).reshape(2, 3)}).values()
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(2, 3).T)
