"""Every error type, with frame's message unchanged; none crashes the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import frame
from conftest import add_relu_model, model_bytes, vinfo


@pytest.fixture(scope="module")
def sess():
    return frame.InferenceSession(add_relu_model())


X = np.ones((2, 4), np.float32)


def test_value_errors(sess):
    with pytest.raises(ValueError, match=r"missing input 'y'"):
        sess.run(None, {"x": X})
    with pytest.raises(ValueError, match=r"input 'y' is f64, the model expects f32"):
        sess.run(None, {"x": X, "y": X.astype(np.float64)})
    with pytest.raises(ValueError, match=r"'y'"):  # rank mismatch
        sess.run(None, {"x": X, "y": np.ones((2, 4, 1), np.float32)})
    with pytest.raises(ValueError, match=r"complex64 is not supported"):
        sess.run(None, {"x": X, "y": X.astype(np.complex64)})
    with pytest.raises(ValueError, match=r"not a valid ONNX protobuf"):
        frame.InferenceSession(b"not a model")


def test_value_error_for_shapes_the_model_cannot_take():
    m = model_bytes([helper.make_node("Reshape", ["x", "s"], ["y"])],
                    [vinfo("x", TensorProto.FLOAT, [2, 6]), vinfo("s", TensorProto.INT64, [2])],
                    [vinfo("y", TensorProto.FLOAT, None)])
    s = frame.InferenceSession(m)
    with pytest.raises(ValueError, match=r"reshape"):
        s.run(None, {"x": np.ones((2, 6), np.float32), "s": np.array([5, 5], np.int64)})


def test_key_errors(sess):
    with pytest.raises(KeyError, match=r"unknown input 'nope'"):
        sess.run(None, {"x": X, "y": X, "nope": X})
    with pytest.raises(KeyError, match=r"unknown output 'q'"):
        sess.run(["q"], {"x": X, "y": X})
    g = frame.Graph()
    a = g.input("a", "f32", [2])
    with pytest.raises(KeyError, match=r"unknown op 'no_such_op'"):
        g.add_node("no_such_op", [a])
    with pytest.raises(KeyError, match=r"backend"):
        g.output(g.add_node("relu", [a]))
        frame.compile(g, backends=["no_such_backend"])


def test_type_errors(sess):
    with pytest.raises(TypeError, match=r"expected numpy.ndarray, got list"):
        sess.run(None, {"x": [[1.0] * 4] * 2, "y": X})
    with pytest.raises(TypeError, match=r"expected dict"):
        sess.run(None, [X, X])
    with pytest.raises(TypeError):
        frame.InferenceSession(42)
    with pytest.raises(TypeError, match=r"attribute 'alpha'"):
        g = frame.Graph()
        g.add_node("leaky_relu", [g.input("a", "f32", [2])], attrs={"alpha": object()})


def test_file_not_found(tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(FileNotFoundError) as e:
        frame.InferenceSession(missing)
    assert e.value.filename == missing
    with pytest.raises(FileNotFoundError):
        frame.load_onnx(missing)


def test_unsupported_op_is_runtime_error():
    m = model_bytes([helper.make_node("NoSuchOnnxOp", ["x"], ["y"], domain="")],
                    [vinfo("x", TensorProto.FLOAT, [2])], [vinfo("y", TensorProto.FLOAT, [2])])
    with pytest.raises(RuntimeError, match=r"NoSuchOnnxOp"):
        frame.InferenceSession(m)


def test_bad_attribute_is_value_error():
    g = frame.Graph()
    a = g.input("a", "f32", [2, 3])
    with pytest.raises(ValueError, match=r"axis"):
        g.add_node("softmax", [a], attrs={"axis": "one"})


def test_session_still_works_after_errors(sess):
    (r,) = sess.run(None, {"x": X, "y": -X})
    np.testing.assert_array_equal(r, np.zeros_like(X))


def test_options_and_names_are_checked_where_they_are_given(add_relu_path):
    # Unknown backends and passes, and negative thread counts, fail at session creation, not at
    # the first run; reserved and malformed names are refused.
    with pytest.raises(KeyError, match=r"no_such_backend"):
        frame.InferenceSession(add_relu_path, backends=["no_such_backend"])
    opts = frame.SessionOptions()
    opts.disabled_passes = ["no-such-pass"]
    with pytest.raises(KeyError, match=r"no-such-pass"):
        frame.InferenceSession(add_relu_path, sess_options=opts)
    with pytest.raises(ValueError, match=r"num_threads is -7"):
        frame.InferenceSession(add_relu_path, threads=-7)
    with pytest.raises(ValueError, match=r"NUL"):
        frame.InferenceSession(str(add_relu_path) + "\0junk")
    with pytest.raises(ValueError, match=r"reserved"):
        frame.register_op("pytest_x_internal", inputs=["X"], outputs=["Y"],
                          cpu_kernel=lambda i, a: i[0])
    with pytest.raises(ValueError, match=r"internal op"):
        frame.map_onnx_op("com.example", "Fused", "fused_post_ops_internal")
    with pytest.raises(ValueError, match=r"empty input name"):
        frame.Graph().input("", "float32", [2])
