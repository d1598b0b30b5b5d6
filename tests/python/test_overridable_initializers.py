"""Overridable initializers (ONNX IR spec, "Graphs": an initializer also named among the graph
inputs is only that input's default; ONNX Runtime lets a feed override it). The model is
y = reshape(x @ W + B, shape) with W, B and shape such initializers; expected values come from
numpy. About 1 s."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import frame
import frame.onnxruntime as onnxruntime

RNG = np.random.default_rng(11)
W0 = RNG.standard_normal((4, 6)).astype(np.float32)
B0 = RNG.standard_normal(6).astype(np.float32)
SHAPE0 = np.array([-1, 3], dtype=np.int64)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
         helper.make_node("Add", ["h", "B"], ["z"], name="add"),
         helper.make_node("Reshape", ["z", "shape"], ["y"], name="reshape")],
        "overridable",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 6]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(W0, "W"), numpy_helper.from_array(B0, "B"),
                     numpy_helper.from_array(SHAPE0, "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path_factory.mktemp("overridable") / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


def reference(x, w=W0, b=B0, shape=SHAPE0):
    return (x @ w + b).reshape(shape)


def test_listed_apart_from_inputs_and_classified(model_path):
    sess = frame.InferenceSession(model_path)
    assert [a.name for a in sess.get_inputs()] == ["x"]
    assert [(a.name, a.shape) for a in sess.get_overridable_initializers()] == [
        ("W", [4, 6]), ("B", [6]), ("shape", [2])]
    # The Reshape target decides the output's shape: bound by value when fed (ADR 0006).
    assert sess.shape_determining_inputs() == ["shape"]


def test_a_feed_overrides_for_that_run_only(model_path):
    opts = frame.SessionOptions()
    opts.interpret_first_seen = False  # counts compiles
    sess = frame.InferenceSession(model_path, sess_options=opts)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    w1 = RNG.standard_normal((4, 6)).astype(np.float32)
    b1 = RNG.standard_normal(6).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], reference(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sess.run(None, {"x": x, "W": w1})[0], reference(x, w=w1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sess.run(None, {"x": x, "W": w1, "B": b1})[0],
                               reference(x, w=w1, b=b1), rtol=1e-5, atol=1e-5)
    # Another value of an overridden (not shape-determining) initializer reuses the plan.
    w2 = RNG.standard_normal((4, 6)).astype(np.float32)
    misses = sess.cache_stats()["misses"]
    np.testing.assert_allclose(sess.run(None, {"x": x, "W": w2})[0], reference(x, w=w2),
                               rtol=1e-5, atol=1e-5)
    assert sess.cache_stats()["misses"] == misses
    # Not fed again: the stored initializer.
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], reference(x), rtol=1e-5, atol=1e-5)


def test_a_shape_determining_initializer_is_bound_by_value(model_path):
    sess = frame.InferenceSession(model_path)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    for shape in ([4, 3], [12, 1], [2, 2, 3]):
        target = np.array(shape, dtype=np.int64)
        if target.size != 2:
            # The declared shape of 'shape' is [2]: a feed of another length is refused.
            with pytest.raises(ValueError, match="'shape'"):
                sess.run(None, {"x": x, "shape": target})
            continue
        y = sess.run(None, {"x": x, "shape": target})[0]
        assert y.shape == tuple(shape)
        np.testing.assert_allclose(y, reference(x, shape=target), rtol=1e-5, atol=1e-5)


def test_bad_feeds_name_the_initializer(model_path):
    sess = frame.InferenceSession(model_path)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="'W'.*5, 6|'W'.*dim 0"):
        sess.run(None, {"x": x, "W": np.zeros((5, 6), np.float32)})
    listed = r"unknown input 'V' \(inputs: x; overridable initializers: W, B, shape\)"
    with pytest.raises(KeyError, match=listed):
        sess.run(None, {"x": x, "V": np.zeros((4, 6), np.float32)})


def test_onnx_runtime_api(model_path):
    sess = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    assert [a.name for a in sess.get_overridable_initializers()] == ["W", "B", "shape"]
    assert [a.type for a in sess.get_overridable_initializers()] == [
        "tensor(float)", "tensor(float)", "tensor(int64)"]
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    b1 = np.full(6, 2.5, np.float32)
    (y,) = sess.run(["y"], {"x": x, "B": b1})
    np.testing.assert_allclose(y, reference(x, b=b1), rtol=1e-5, atol=1e-5)


def test_compile_cache_on_disk_keys_the_fed_initializers(model_path, tmp_path):
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    w1 = RNG.standard_normal((4, 6)).astype(np.float32)
    for round_ in range(2):  # the second session reads what the first wrote
        opts = frame.SessionOptions()
        opts.cache_dir = str(tmp_path / "cache")
        sess = frame.InferenceSession(model_path, sess_options=opts)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], reference(x), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(sess.run(None, {"x": x, "W": w1})[0], reference(x, w=w1),
                                   rtol=1e-5, atol=1e-5)
        assert sess.cache_stats()["disk_hits"] == (2 if round_ else 0)


def test_a_declared_type_the_initializer_lacks_keeps_it_constant(tmp_path):
    # Graph input W declared f64 over an f32 initializer: no feed could match both, so W stays
    # a constant and the model runs with the stored value.
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"], name="add")], "mismatch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("W", TensorProto.DOUBLE, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        initializer=[numpy_helper.from_array(np.array([1, 2, 3], np.float32), "W")])
    path = tmp_path / "mismatch.onnx"
    path.write_bytes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    sess = frame.InferenceSession(str(path))
    assert sess.get_overridable_initializers() == []
    x = np.array([10, 20, 30], np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x + [1, 2, 3])


def test_the_command_line_feeds_an_overridable_initializer(model_path, tmp_path):
    import os
    import subprocess
    from conftest import SOURCE_DIR
    cli = os.environ.get("FRAME_CLI", os.path.join(SOURCE_DIR, "build", "frame"))
    if not os.path.exists(cli):
        pytest.skip("the frame CLI is not built")
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    w1 = RNG.standard_normal((4, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w1)
    out = tmp_path / "out"
    done = subprocess.run([cli, "run", model_path, "--input", f"x={tmp_path / 'x.npy'}",
                           "--input", f"W={tmp_path / 'w.npy'}", "--output-dir", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(out / "y.npy"), reference(x, w=w1), rtol=1e-5, atol=1e-5)
    usage = subprocess.run([cli, "run", model_path, "--input", f"x={tmp_path / 'x.npy'}",
                            "--shape", "W=4,6"], capture_output=True, text=True, timeout=60)
    assert usage.returncode != 0 and "--input W=FILE.npy" in usage.stderr
