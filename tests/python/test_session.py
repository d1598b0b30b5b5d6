"""InferenceSession: ONNX models against numpy / torch / onnx reference results."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import frame
from conftest import SOURCE_DIR, add_relu_model, model_bytes, vinfo


def test_version_and_package():
    assert frame.__version__.count(".") == 2
    assert os.path.basename(os.path.dirname(frame._frame.__file__)) == "frame"


def test_ort_call_sequence(add_relu_path):
    # The sequence an ONNX Runtime user writes, unchanged but for the module name.
    opts = frame.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = frame.InferenceSession(add_relu_path, sess_options=opts)
    names = [i.name for i in sess.get_inputs()]
    assert names == ["x", "y"]
    assert sess.get_inputs()[0].shape == ["N", 4]
    assert sess.get_inputs()[0].type == "tensor(float)"
    assert sess.get_inputs()[0].dtype == np.float32
    assert [o.name for o in sess.get_outputs()] == ["r"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4), dtype=np.float32)
    y = rng.standard_normal((3, 4), dtype=np.float32)
    (r,) = sess.run([sess.get_outputs()[0].name], {"x": x, "y": y})
    np.testing.assert_allclose(r, np.maximum(x + y, 0), rtol=0, atol=0)
    assert sess.get_session_options().threads == 1


def test_bundled_cnn_matches_expected():
    sess = frame.InferenceSession(os.path.join(SOURCE_DIR, "models", "small_cnn.onnx"))
    x = np.load(os.path.join(SOURCE_DIR, "models", "small_cnn.input.npy"))
    expected = np.load(os.path.join(SOURCE_DIR, "models", "small_cnn.expected.npy"))
    (out,) = sess.run(None, {"input": x})
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    placement = sess.placement()
    assert placement and {"node", "op", "backend", "path", "rejected"} <= set(placement[0])


def test_torch_exported_model(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5),
                              torch.nn.Softmax(dim=1)).eval()
    x = torch.randn(2, 3, 6, 6)
    path = str(tmp_path / "net.onnx")
    torch.onnx.export(net, x, path, input_names=["x"], output_names=["y"], opset_version=13)
    with torch.no_grad():
        ref = net(x).numpy()
    (y,) = frame.InferenceSession(path).run(None, {"x": x.numpy()})
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-6)


def test_dim_param_two_sizes_compiles_two_specializations():
    opts = frame.SessionOptions()
    opts.interpret_first_seen = False  # each size compiled at its first run
    sess = frame.InferenceSession(add_relu_model(), sess_options=opts)
    for n in (2, 7, 2):
        x = np.arange(4 * n, dtype=np.float32).reshape(n, 4) - 5
        (r,) = sess.run(None, {"x": x, "y": x})
        np.testing.assert_array_equal(r, np.maximum(2 * x, 0))
    stats = sess.cache_stats()
    assert stats["misses"] == 2 and stats["hits"] == 1 and stats["interpreted"] == 0


def test_dim_param_sizes_are_interpreted_then_compiled():
    # ADR 0007 stage C: a size the session holds no specialization for runs interpreted until
    # its runs have cost one compile (none timed yet: the estimate is 0, so the second run of
    # 2 compiles and the third hits); a size never seen runs interpreted. Compiles on the runs'
    # path (no background compile), so the counts do not depend on timing.
    opts = frame.SessionOptions()
    opts.background_compile = False
    sess = frame.InferenceSession(add_relu_model(), sess_options=opts)
    for n in (2, 2, 2, 7):
        x = np.arange(4 * n, dtype=np.float32).reshape(n, 4) - 5
        (r,) = sess.run(None, {"x": x, "y": x})
        np.testing.assert_array_equal(r, np.maximum(2 * x, 0))
    stats = sess.cache_stats()
    assert (stats["interpreted"], stats["misses"], stats["hits"]) == (2, 1, 1), stats


def test_reshape_shape_from_input():
    m = model_bytes([helper.make_node("Reshape", ["x", "s"], ["y"])],
                    [vinfo("x", TensorProto.FLOAT, [2, 6]), vinfo("s", TensorProto.INT64, [2])],
                    [vinfo("y", TensorProto.FLOAT, None)])
    sess = frame.InferenceSession(m)
    assert sess.shape_determining_inputs() == ["s"]
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ([3, 4], [4, -1], [12, 1]):
        (y,) = sess.run(None, {"x": x, "s": np.array(shape, np.int64)})
        np.testing.assert_array_equal(y, x.reshape(shape))


def test_float16_in_and_out():
    sess = frame.InferenceSession(add_relu_model((2, 3), TensorProto.FLOAT16))
    assert sess.get_inputs()[0].dtype == np.float16
    assert sess.get_inputs()[0].type == "tensor(float16)"
    x = np.array([[1.5, -2, 3], [0.1, 0.2, -0.3]], np.float16)
    (r,) = sess.run(None, {"x": x, "y": x})
    assert r.dtype == np.float16
    np.testing.assert_array_equal(r, np.maximum(x + x, np.float16(0)))


def test_bfloat16_crosses_as_uint16_bits():
    sess = frame.InferenceSession(add_relu_model((4,), TensorProto.BFLOAT16))
    assert sess.get_inputs()[0].type == "tensor(bfloat16)"
    assert sess.get_inputs()[0].dtype == np.uint16
    vals = np.array([1.0, -2.0, 3.5, 0.25], np.float32)
    bits = (vals.view(np.uint32) >> 16).astype(np.uint16)  # exact in bfloat16
    (r,) = sess.run(None, {"x": bits, "y": bits})
    assert r.dtype == np.uint16
    back = (r.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(back, np.maximum(vals + vals, 0))


def test_run_selects_and_orders_outputs():
    m = model_bytes([helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Abs", ["x"], ["b"])],
                    [vinfo("x", TensorProto.FLOAT, [3])],
                    [vinfo("a", TensorProto.FLOAT, [3]), vinfo("b", TensorProto.FLOAT, [3])])
    sess = frame.InferenceSession(m)
    x = np.array([1, -2, 3], np.float32)
    b, a = sess.run(["b", "a"], {"x": x})
    np.testing.assert_array_equal(a, -x)
    np.testing.assert_array_equal(b, np.abs(x))


def test_profiling():
    opts = frame.SessionOptions()
    opts.enable_profiling = True
    sess = frame.InferenceSession(add_relu_model((2, 2)), opts)
    x = np.ones((2, 2), np.float32)
    for _ in range(3):
        sess.run(None, {"x": x, "y": x})
    prof = sess.profile()
    assert prof["runs"] == 3
    assert sum(n["calls"] for n in prof["nodes"]) >= 3
    assert "traceEvents" in prof


def test_profiling_counts_every_specialization_of_a_session():
    # Two shapes: two executables; each node's row counts the calls of both (not only the
    # first specialization's).
    opts = frame.SessionOptions()
    opts.enable_profiling = True
    opts.backends = ["cpu"]
    sess = frame.InferenceSession(add_relu_model(("N",)), opts)
    for n in (2, 3, 2, 5):
        v = np.ones((n,), np.float32)
        sess.run(None, {"x": v, "y": v})
    prof = sess.profile()
    assert prof["runs"] == 4
    calls = {}
    for n in prof["nodes"]:
        calls[(n["node"], n["op"])] = calls.get((n["node"], n["op"]), 0) + n["calls"]
    assert calls and all(c == 4 for c in calls.values()), prof["nodes"]
    assert len(prof["traceEvents"]) == 4 * len(calls)


def test_backend_choice_and_strict():
    sess = frame.InferenceSession(add_relu_model((2, 2)), backends=["cpu"], threads=1)
    x = np.ones((2, 2), np.float32)
    sess.run(None, {"x": x, "y": x})
    assert {p["backend"] for p in sess.placement()} == {"cpu"}
    opts = frame.SessionOptions()
    opts.backends = ["cpu"]
    opts.strict = True
    opts.max_specializations = 1
    sess = frame.InferenceSession(add_relu_model(("N",)), opts)
    for n in (1, 2, 3):
        v = np.full((n,), -1, np.float32)
        np.testing.assert_array_equal(sess.run(None, {"x": v, "y": v})[0], np.zeros(n, np.float32))
    assert sess.cache_stats()["entries"] == 1


def test_session_over_a_built_graph_binds_shape_inputs_per_run():
    g = frame.Graph()
    x = g.input("x", "float32", [2, 6])
    s = g.input("s", "int64", [2])
    g.output(g.add_node("reshape", [x, s]))
    sess = frame.InferenceSession(g, threads=1)
    assert sess.shape_determining_inputs() == ["s"]
    xv = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ([3, 4], [6, 2]):
        (y,) = sess.run(None, {"x": xv, "s": np.array(shape, np.int64)})
        np.testing.assert_array_equal(y, xv.reshape(shape))


def test_session_option_lists_are_tuples_assigned_whole():
    # An in-place edit of a returned list would be lost; tuples make that an AttributeError.
    opts = frame.SessionOptions()
    assert isinstance(opts.disabled_passes, tuple)
    with pytest.raises(AttributeError):
        opts.disabled_passes.append("operator-fusion")
    opts.disabled_passes = ["operator-fusion"]
    assert opts.disabled_passes == ("operator-fusion",)
    opts.backends = ("cpu",)
    assert opts.backends == ("cpu",)
