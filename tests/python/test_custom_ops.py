"""frame.register_op: ops with Python kernels, in graphs, through every pass (fusion on) and the
fallback chain; the FRAME_REGISTER_OP name rules and duplicate checks as ValueError."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import frame


def _scale_add(inputs, attrs):
    (x,) = inputs
    return (x * attrs["scale"] + attrs["offset"]).astype(x.dtype)


frame.register_op("pytest_scale_add", inputs=["X"], outputs=["Y"],
                  attrs={"scale": 2.0, "offset": 1.0}, traits=["elementwise", "fusable"],
                  cpu_kernel=_scale_add, doc="Y = X * scale + offset")


def _tile_twice_shape(types, attrs):
    (dtype, shape), = types
    return [(dtype, [2 * shape[0]] + shape[1:]), (np.dtype(np.int64), [])]


def _tile_twice(inputs, attrs):
    (x,) = inputs
    return [np.concatenate([x, x]), np.array(x.shape[0], np.int64)]


frame.register_op("pytest_tile_twice", inputs=["X"], outputs=["Y", "N"],
                  shape_fn=_tile_twice_shape, cpu_kernel=_tile_twice)


def _graph_with_fusable_python_op():
    g = frame.Graph()
    x = g.input("x", "float32", [3, 4])
    a = g.add_node("relu", [x])
    b = g.add_node("pytest_scale_add", [a], attrs={"scale": 3})  # int widened to the float attr
    g.output(g.add_node("neg", [b]))
    return g


def test_python_kernel_inside_a_fused_graph():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    ref = -(np.maximum(x, 0) * 3 + 1)
    for backends in (["auto"], ["cpu"]):
        exe = frame.compile(_graph_with_fusable_python_op(), backends=backends)
        # operator-fusion merged the three elementwise nodes, Python op included.
        assert [p["op"] for p in exe.placement()] == ["fused_elementwise_internal"]
        (y,) = exe.run({"x": x}).values()
        np.testing.assert_allclose(y, ref, rtol=1e-6)


def test_python_op_listed_with_its_cpu_kernel():
    op = next(o for o in frame.ops() if o["name"] == "pytest_scale_add")
    assert op["doc"] == "Y = X * scale + offset"
    assert {a["name"] for a in op["attrs"]} == {"scale", "offset"}
    assert sorted(op["traits"]) == ["elementwise", "fusable"]
    assert any(k["op"] == "pytest_scale_add" and k["backend"] == "cpu" for k in frame.kernels())


def test_shape_fn_and_several_outputs():
    g = frame.Graph()
    x = g.input("x", "int32", [2, 3])
    y, n = g.add_node("pytest_tile_twice", [x])
    g.output([y, n])
    xv = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = frame.compile(g).run({"x": xv})
    np.testing.assert_array_equal(out[y.name], np.concatenate([xv, xv]))
    assert out[n.name] == 2 and out[n.name].dtype == np.int64


def test_python_kernel_from_threads():
    exe = frame.compile(_graph_with_fusable_python_op(), threads=1)
    bad = []

    def work(k):
        x = np.full((3, 4), k, np.float32)
        for _ in range(20):
            (y,) = exe.run({"x": x}).values()
            if not np.array_equal(y, np.full((3, 4), -(3 * k + 1), np.float32)):
                bad.append(k)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert bad == []


def test_registration_errors_are_value_errors():
    with pytest.raises(ValueError, match=r"op 'pytest_scale_add': duplicate name \(ARCH-040"):
        frame.register_op("pytest_scale_add", inputs=["X"], outputs=["Y"], cpu_kernel=_scale_add)
    with pytest.raises(ValueError, match=r"op 'relu': duplicate name"):
        frame.register_op("relu", inputs=["X"], outputs=["Y"], cpu_kernel=_scale_add)
    with pytest.raises(ValueError, match=r"illegal name \(ARCH-040"):
        frame.register_op("Not-Legal", inputs=["X"], outputs=["Y"], cpu_kernel=_scale_add)
    with pytest.raises(ValueError, match=r"reserved name"):
        frame.register_op("graph_input", inputs=["X"], outputs=["Y"], cpu_kernel=_scale_add)
    with pytest.raises(ValueError, match=r"unknown trait 'fast'"):
        frame.register_op("pytest_t", inputs=["X"], outputs=["Y"], traits=["fast"],
                          cpu_kernel=_scale_add)
    with pytest.raises(TypeError, match=r"cpu_kernel"):
        frame.register_op("pytest_t", inputs=["X"], outputs=["Y"], cpu_kernel=42)
    # None of the failed names was registered.
    names = {o["name"] for o in frame.ops()}
    assert "pytest_t" not in names and "Not-Legal" not in names


def test_kernel_errors_and_bad_results_raise_not_crash():
    def boom(inputs, attrs):
        raise ZeroDivisionError("no")

    def wrong_dtype(inputs, attrs):
        return inputs[0].astype(np.float64)

    frame.register_op("pytest_boom", inputs=["X"], outputs=["Y"], cpu_kernel=boom)
    frame.register_op("pytest_wrong", inputs=["X"], outputs=["Y"], cpu_kernel=wrong_dtype)
    for op, msg in (("pytest_boom", r"Python kernel raised ZeroDivisionError: no"),
                    ("pytest_wrong", r"output 0 is float64\[2\], expected f32\[2\]")):
        g = frame.Graph()
        g.output(g.add_node(op, [g.input("x", "f32", [2])]))
        exe = frame.compile(g, backends=["cpu"])
        with pytest.raises(ValueError, match=msg):
            exe.run({"x": np.ones(2, np.float32)})


def test_bad_shape_fn_results_raise_at_compile():
    frame.register_op("pytest_bad_shape", inputs=["X"], outputs=["Y"],
                      shape_fn=lambda types, attrs: [("float32", "not a shape")],
                      cpu_kernel=_scale_add)
    frame.register_op("pytest_bad_shape2", inputs=["X"], outputs=["Y"],
                      shape_fn=lambda types, attrs: 7, cpu_kernel=_scale_add)
    for op in ("pytest_bad_shape", "pytest_bad_shape2"):
        g = frame.Graph()
        g.output(g.add_node(op, [g.input("x", "f32", [2])]))
        with pytest.raises(ValueError, match=rf"\({op}\): shape_fn"):
            frame.compile(g)


def test_onnx_node_of_a_custom_domain_runs_the_python_op(tmp_path):
    # An ONNX model with a com.example::PyScaleAdd node, mapped to the Python op above; the
    # attributes pass through by name. Expected: x * 3 + 0.5 computed with numpy.
    import onnx
    from onnx import TensorProto, helper

    frame.map_onnx_op("com.example", "PyScaleAdd", "pytest_scale_add")
    node = helper.make_node("PyScaleAdd", ["x"], ["y"], domain="com.example", scale=3.0,
                            offset=0.5)
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    (y,) = frame.InferenceSession(str(path)).run(None, {"x": x})
    np.testing.assert_allclose(y, x * 3.0 + 0.5, rtol=1e-6)


def test_onnx_mapping_errors():
    with pytest.raises(ValueError, match="default ONNX domain"):
        frame.map_onnx_op("", "Relu", "pytest_scale_add")
    with pytest.raises(KeyError, match="no frame op named 'no_such_op'"):
        frame.map_onnx_op("com.example", "Missing", "no_such_op")
    frame.map_onnx_op("com.example", "Twice", "pytest_scale_add")
    with pytest.raises(ValueError, match="already mapped"):
        frame.map_onnx_op("com.example", "Twice", "pytest_scale_add")


def _to_big_endian(inputs, attrs):
    (x,) = inputs
    return (x * 2).astype(">f4")  # byte-swapped result: frame must convert, not copy bytes


frame.register_op("pytest_big_endian_double", inputs=["X"], outputs=["Y"],
                  cpu_kernel=_to_big_endian)


def test_byte_swapped_kernel_output_is_converted():
    g = frame.Graph()
    x = g.input("x", "float32", [4])
    g.output(g.add_node("pytest_big_endian_double", [x]))
    xs = np.array([1, 2, 3, -4], np.float32)
    (y,) = frame.compile(g, backends=["cpu"]).run({"x": xs}).values()
    np.testing.assert_array_equal(y, xs * 2)


def _raise_kernel(exc):
    def kernel(inputs, attrs):
        raise exc
    return kernel


def _one_node_executable(op):
    g = frame.Graph()
    g.output(g.add_node(op, [g.input("x", "f32", [2])]))
    return frame.compile(g, backends=["cpu"])


def test_kernel_exceptions_reach_the_caller():
    # The kernel's own exception is the ValueError's __cause__ (with its traceback), and
    # KeyboardInterrupt / SystemExit come back as themselves, so Ctrl-C is not swallowed.
    frame.register_op("pytest_raise_key", inputs=["X"], outputs=["Y"],
                      cpu_kernel=_raise_kernel(LookupError("inner detail")))
    frame.register_op("pytest_raise_interrupt", inputs=["X"], outputs=["Y"],
                      cpu_kernel=_raise_kernel(KeyboardInterrupt()))
    frame.register_op("pytest_raise_exit", inputs=["X"], outputs=["Y"],
                      cpu_kernel=_raise_kernel(SystemExit(3)))
    x = {"x": np.ones(2, np.float32)}
    with pytest.raises(ValueError, match=r"Python kernel raised LookupError") as info:
        _one_node_executable("pytest_raise_key").run(x)
    assert isinstance(info.value.__cause__, LookupError)
    assert info.value.__cause__.__traceback__ is not None
    with pytest.raises(KeyboardInterrupt):
        _one_node_executable("pytest_raise_interrupt").run(x)
    with pytest.raises(SystemExit):
        _one_node_executable("pytest_raise_exit").run(x)
    # The session path too, and a later good run is unaffected.
    g = frame.Graph()
    g.output(g.add_node("pytest_raise_interrupt", [g.input("x", "f32", [2])]))
    sess = frame.InferenceSession(g, backends=["cpu"])
    with pytest.raises(KeyboardInterrupt):
        sess.run(None, x)
    g2 = frame.Graph()
    g2.output(g2.add_node("relu", [g2.input("x", "f32", [2])]))
    (y,) = frame.compile(g2, backends=["cpu"]).run(x).values()
    np.testing.assert_array_equal(y, np.ones(2, np.float32))
