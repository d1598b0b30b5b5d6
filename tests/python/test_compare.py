"""frame.compare and `frame compare` (docs/debugging.md): a deliberately wrong kernel (softmax
scaled by 1.01, from the test plugin wrong_kernel_plugin under the backend name "wrong_test") is
found at its node with the error numpy predicts; real models report nothing; the CLI exits 1
on a divergence. About 3 s."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import frame
from conftest import SOURCE_DIR

PLUGIN_DIR = os.environ.get("FRAME_TEST_PLUGIN_DIR",
                            os.path.join(SOURCE_DIR, "build", "test_plugins"))
PLUGIN = os.path.join(PLUGIN_DIR, "libframe_test_wrong_kernel_plugin.so")
CLI = os.environ.get("FRAME_CLI", os.path.join(SOURCE_DIR, "build", "frame"))
SMALL_CNN = os.path.join(SOURCE_DIR, "models", "small_cnn.onnx")

RNG = np.random.default_rng(5)
W1 = RNG.standard_normal((8, 8)).astype(np.float32)
B1 = RNG.standard_normal(8).astype(np.float32)
W2 = RNG.standard_normal((8, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def wrong_backend():
    if not os.path.exists(PLUGIN):
        pytest.skip(f"{PLUGIN} is not built (ctest sets FRAME_TEST_PLUGIN_DIR)")
    frame.load_plugin(PLUGIN)
    return PLUGIN


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
         helper.make_node("Add", ["h", "B1"], ["z"], name="add"),
         helper.make_node("Softmax", ["z"], ["p"], name="softmax", axis=-1),
         helper.make_node("MatMul", ["p", "W2"], ["y"], name="mm2")],
        "softmax_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(B1, "B1"),
                     numpy_helper.from_array(W2, "W2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path_factory.mktemp("compare") / "softmax_mlp.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_finds_the_wrong_kernel_at_its_node(wrong_backend, model_path):
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    r = frame.compare(model_path, {"x": x}, backends="wrong_test,cpu")
    assert not r["ok"]
    first = r["values"][r["first_divergence"]]
    assert (first["value"], first["node"], first["backend"]) == ("p", "softmax", "wrong_test")
    assert first["type"] == first["reference_type"] == "f32[2,8]"
    # numpy: the kernel returns 1.01 * softmax, so the error is 0.01 * p.
    p = softmax(x.astype(np.float64) @ W1 + B1)
    assert first["max_abs_error"] == pytest.approx(0.01 * p.max(), rel=1e-3)
    assert first["max_rel_error"] == pytest.approx(0.01, rel=1e-3)
    assert first["mismatches"] == int(np.sum(0.01 * p > 1e-4 + 1e-3 * p))
    # Every value computed before it agrees; the one after (y) diverges too.
    assert r["first_divergence"] >= 1
    assert all(v["ok"] for v in r["values"][:r["first_divergence"]])
    assert not [v for v in r["values"] if v["value"] == "y"][0]["ok"]


def test_agrees_with_itself_and_on_real_models(model_path):
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    r = frame.compare(model_path, {"x": x}, backends="cpu")
    assert r["ok"] and r["first_divergence"] is None
    assert [v["value"] for v in r["values"]][-1] == "y"
    # The bundled CNN on the default chain: oneDNN keeps activations nhwc between its convs and
    # pools; the observer hands them over plain, so they agree with the reference.
    cnn_input = np.load(os.path.join(SOURCE_DIR, "models", "small_cnn.input.npy"))
    r = frame.compare(SMALL_CNN, {"input": cnn_input})
    assert r["ok"], r["values"][r["first_divergence"]]
    assert any(v["op"] == "laid_out_internal" for v in r["values"])
    assert any(v["fused_ops"] for v in r["values"])
    assert r["values"][-1]["value"] == "probs" and r["values"][-1]["numel"] == 10


def test_bad_arguments_are_named(model_path):
    with pytest.raises(ValueError, match="backends"):
        frame.compare(model_path, {}, backends="")
    with pytest.raises(ValueError, match="missing input 'x'"):
        frame.compare(model_path, {})


@pytest.mark.skipif(not os.path.exists(CLI), reason="the frame CLI is not built")
def test_cli_reports_the_first_divergence(wrong_backend, model_path, tmp_path):
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    args = [CLI, "compare", model_path, "--input", f"x={tmp_path / 'x.npy'}", "--plugin",
            wrong_backend]
    bad = subprocess.run(args + ["--backend", "wrong_test,cpu"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 1, bad.stderr
    assert "FIRST DIVERGENCE: value 'p' of node 'softmax' (op softmax, backend wrong_test" in bad.stdout
    good = subprocess.run(args + ["--backend", "cpu", "--json"], capture_output=True, text=True,
                          timeout=120)
    assert good.returncode == 0, good.stderr
    report = json.loads(good.stdout)
    assert report["ok"] and len(report["values"]) >= 3
    usage = subprocess.run([CLI, "compare", model_path, "--reference", "no_such_backend"],
                           capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "--reference" in usage.stderr


def test_tolerance_ratio_and_bad_arguments(wrong_backend, model_path):
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    r = frame.compare(model_path, {"x": x}, backends=["wrong_test", "cpu"])
    first = r["values"][r["first_divergence"]]
    # Values <= 1: the class's atol (1e-4) is not scaled; the error is 0.01 * p (numpy).
    p = softmax(x.astype(np.float64) @ W1 + B1)
    assert first["atol"] == pytest.approx(1e-4)
    assert first["worst_ratio"] == pytest.approx(np.max(0.01 * p / (1e-4 + 1e-3 * p)), rel=1e-3)
    # A tolerance given replaces the class's: 2% relative accepts the 1% error.
    assert frame.compare(model_path, {"x": x}, backends="wrong_test,cpu", rtol=0.02)["ok"]
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="rtol is"):
            frame.compare(model_path, {"x": x}, rtol=bad)
    with pytest.raises(TypeError, match="feeds"):
        frame.compare(model_path, None)
    with pytest.raises(TypeError, match="backends"):
        frame.compare(model_path, {"x": x}, backends=5)
    with pytest.raises(Exception, match=r"reference: .*unknown backend .{0,2}nosuch"):
        frame.compare(model_path, {"x": x}, reference="nosuch")


def test_scaled_absolute_tolerance(model_path, tmp_path):
    # y = 1000 * x: the reported atol is the class's 1e-4 times the largest |reference| value.
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["y"], name="scale")], "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        initializer=[numpy_helper.from_array(np.array(1000.0, np.float32), "k")])
    path = tmp_path / "scale.onnx"
    path.write_bytes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    x = np.array([0.5, -2.0, 0.25, 1.0], np.float32)
    r = frame.compare(path, {"x": x}, backends="cpu")
    assert r["ok"] and r["model"] == str(path)
    assert r["values"][0]["atol"] == pytest.approx(1e-4 * 2000.0)
    assert frame.compare(path, {"x": x}, backends="cpu", atol=0.5)["values"][0]["atol"] == 0.5
