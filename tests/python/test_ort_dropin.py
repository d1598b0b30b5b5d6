"""frame.onnxruntime (docs/python.md, "Drop-in for ONNX Runtime"): typical ONNX Runtime scripts,
written against ONNX Runtime's API, run with only the import changed. Expected values come
from numpy (the model is y = relu(x @ W + b)) and from frame.InferenceSession. About 1 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import frame
import frame.onnxruntime as onnxruntime
from conftest import SOURCE_DIR
from frame.onnxruntime.capi.onnxruntime_pybind11_state import (
    Fail,
    InvalidArgument,
    InvalidProtobuf,
    NoSuchFile,
)

RNG = np.random.default_rng(7)
W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ W + B, 0)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
         helper.make_node("Add", ["h", "B"], ["z"], name="add"),
         helper.make_node("Relu", ["z"], ["y"], name="relu")],
        "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        initializer=[numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")],
        doc_string="one dense layer")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="ort-dropin-test", producer_version="1.2",
                              domain="ai.test", model_version=3, doc_string="a test model")
    helper.set_model_props(model, {"author": "tests", "license": "none"})
    path = tmp_path_factory.mktemp("ort") / "dense.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


def test_quick_start_as_documented_by_onnx_runtime(model_path):
    # ONNX Runtime's documented quick start, with the import changed.
    sess = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    input_name = sess.get_inputs()[0].name
    output_name = sess.get_outputs()[0].name
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    pred = sess.run([output_name], {input_name: x})[0]
    np.testing.assert_allclose(pred, expected(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(pred, frame.InferenceSession(model_path).run(None, {"x": x})[0])
    assert sess.get_inputs()[0].shape == ["N", 4] and sess.get_inputs()[0].type == "tensor(float)"
    assert sess.run(None, {"x": x})[0].shape == (5, 3)


def test_providers_listing_and_selection(model_path):
    available = onnxruntime.get_available_providers()
    assert available[-1] == "CPUExecutionProvider"
    assert set(available) <= set(onnxruntime.get_all_providers())
    assert onnxruntime.get_device() == "CPU"
    assert onnxruntime.__version__ == frame.__version__
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        sess = onnxruntime.InferenceSession(
            model_path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    if "DnnlExecutionProvider" in available:
        sess = onnxruntime.InferenceSession(
            model_path, providers=[("DnnlExecutionProvider", {"arena": 1}), "CPUExecutionProvider"])
        assert sess.get_providers() == ["DnnlExecutionProvider", "CPUExecutionProvider"]
        assert sess.get_provider_options()["DnnlExecutionProvider"] == {"arena": "1"}
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], expected(x), rtol=1e-5,
                                   atol=1e-6)
    sess.set_providers(["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    with pytest.raises(ValueError, match="same length"):
        onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"],
                                     provider_options=[{}, {}])


def test_model_metadata(model_path):
    meta = onnxruntime.InferenceSession(model_path).get_modelmeta()
    assert meta.custom_metadata_map == {"author": "tests", "license": "none"}
    assert (meta.producer_name, meta.domain, meta.version) == ("ort-dropin-test", "ai.test", 3)
    assert (meta.description, meta.graph_name, meta.graph_description) == (
        "a test model", "dense", "one dense layer")
    with open(model_path, "rb") as f:
        assert onnxruntime.InferenceSession(f.read()).get_modelmeta().graph_name == "dense"


def test_errors_are_onnx_runtime_classes_and_frame_ones(model_path, tmp_path):
    sess = onnxruntime.InferenceSession(model_path)
    with pytest.raises(InvalidArgument, match="x") as wrong_shape:
        sess.run(None, {"x": np.zeros((2, 5), np.float32)})
    assert isinstance(wrong_shape.value, ValueError)
    with pytest.raises(InvalidArgument) as wrong_dtype:
        sess.run(None, {"x": np.zeros((2, 4), np.float64)})
    assert isinstance(wrong_dtype.value, ValueError)
    with pytest.raises(KeyError, match="nope"):  # an unknown input name: ORT's InvalidArgument
        sess.run(None, {"nope": np.zeros((2, 4), np.float32)})
    with pytest.raises(InvalidArgument, match="zz"):
        sess.run(["zz"], {"x": np.zeros((2, 4), np.float32)})
    with pytest.raises(NoSuchFile) as missing:
        onnxruntime.InferenceSession(str(tmp_path / "missing.onnx"))
    assert isinstance(missing.value, FileNotFoundError)
    assert "missing.onnx" in str(missing.value)
    with pytest.raises(InvalidProtobuf):
        onnxruntime.InferenceSession(b"not a model")
    # The messages are frame's, unquoted (KeyError would quote them).
    try:
        sess.run(None, {"nope": np.zeros((2, 4), np.float32)})
    except InvalidArgument as e:
        assert not str(e).startswith('"') and "nope" in str(e)


def test_io_binding_with_preallocated_outputs(model_path):
    sess = onnxruntime.InferenceSession(model_path)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = np.zeros((3, 3), np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y", "cpu", 0, np.float32, list(y.shape), y.ctypes.data)
    sess.run_with_iobinding(binding)
    np.testing.assert_allclose(y, expected(x), rtol=1e-5, atol=1e-6)  # written in place
    # A second run with new input values reuses the bindings.
    x[:] = RNG.standard_normal((3, 4)).astype(np.float32)
    binding.synchronize_inputs()
    sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    np.testing.assert_allclose(y, expected(x), rtol=1e-5, atol=1e-6)
    # OrtValue bindings, and an output left for the run to allocate.
    out = onnxruntime.OrtValue.ortvalue_from_shape_and_type([3, 3], np.float32, "cpu", 0)
    binding.clear_binding_outputs()
    binding.bind_ortvalue_output("y", out)
    binding.clear_binding_inputs()
    binding.bind_ortvalue_input("x", onnxruntime.OrtValue.ortvalue_from_numpy(x))
    sess.run_with_iobinding(binding)
    np.testing.assert_allclose(out.numpy(), expected(x), rtol=1e-5, atol=1e-6)
    binding.clear_binding_outputs()
    binding.bind_output("y")
    sess.run_with_iobinding(binding)
    np.testing.assert_allclose(binding.copy_outputs_to_cpu()[0], expected(x), rtol=1e-5,
                               atol=1e-6)
    assert binding.get_outputs()[0].shape() == [3, 3]
    binding.clear_binding_outputs()
    binding.bind_output("y", "cpu", 0, np.float32, [2, 3], np.zeros((2, 3), np.float32).ctypes.data)
    with pytest.raises(InvalidArgument, match=r"output 'y': the run produces f32\[3,3\], the "
                                              r"tensor given to write it into is f32\[2,3\]"):
        sess.run_with_iobinding(binding)
    with pytest.raises(Fail, match="CPU only"):
        binding.bind_output("y", "cuda", 0)


def test_ort_values(model_path):
    sess = onnxruntime.InferenceSession(model_path)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    v = onnxruntime.OrtValue.ortvalue_from_numpy(x)
    assert v.shape() == [2, 4] and v.data_type() == "tensor(float)"
    assert v.element_type() == TensorProto.FLOAT and v.device_name() == "cpu"
    assert v.is_tensor() and v.data_ptr() == x.ctypes.data  # borrowed, not copied
    out = sess.run_with_ort_values(["y"], {"x": v})
    np.testing.assert_allclose(out[0].numpy(), expected(x), rtol=1e-5, atol=1e-6)
    i64 = onnxruntime.OrtValue.ortvalue_from_shape_and_type([2], np.int64)
    assert i64.element_type() == TensorProto.INT64 and i64.data_type() == "tensor(int64)"


def test_run_async_with_callbacks_and_mixed_shapes(model_path):
    sess = onnxruntime.InferenceSession(model_path)
    n = 64
    done = threading.Semaphore(0)
    results = {}

    def callback(outputs, user_data, err):
        results[user_data[0]] = (outputs, user_data[1], err)
        done.release()

    for k in range(n):
        x = RNG.standard_normal((1 + k % 5, 4)).astype(np.float32)
        sess.run_async(None, {"x": x}, callback, (k, x))
    bad = threading.Event()
    errors = []

    def bad_callback(outputs, user_data, err):
        errors.append((outputs, user_data, err))
        bad.set()

    sess.run_async(None, {"x": np.zeros((1, 7), np.float32)}, bad_callback, "mine")
    for _ in range(n):
        assert done.acquire(timeout=60)
    assert bad.wait(60)
    for k in range(n):
        outputs, x, err = results[k]
        assert err == ""
        np.testing.assert_allclose(outputs[0], expected(x), rtol=1e-5, atol=1e-6)
    assert errors[0][0] is None and errors[0][1] == "mine" and "InvalidArgument" in errors[0][2]


def test_run_options_and_session_options(model_path, tmp_path, monkeypatch):
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    opts.enable_mem_pattern = False
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(Fail):
        opts.get_session_config_entry("never.set")
    opts.add_free_dimension_override_by_name("N", 2)
    opts.enable_profiling = True
    opts.profile_file_prefix = "dense_profile"
    sess = onnxruntime.InferenceSession(model_path, sess_options=opts)
    assert sess.get_inputs()[0].shape == [2, 4]  # the override
    assert sess.get_session_options() is opts
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], expected(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidArgument, match="index: 0 Got: 3 Expected: 2"):
        sess.run(None, {"x": np.zeros((3, 4), np.float32)})
    ro = onnxruntime.RunOptions()
    ro.logid = "r1"
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    assert len(sess.run(None, {"x": x}, ro)) == 1
    ro.terminate = True
    with pytest.raises(Fail, match="terminate"):
        sess.run(None, {"x": x}, ro)
    # end_profiling writes a Chrome trace of the runs in the working directory.
    monkeypatch.chdir(tmp_path)
    assert sess.get_profiling_start_time_ns() > 0
    name = sess.end_profiling()
    assert name.startswith("dense_profile_") and name.endswith(".json")
    events = json.load(open(tmp_path / name))
    assert events and all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    # ORT_DISABLE_ALL: no operator-fusion group (the backends' lowering patterns stay on,
    # docs/python.md), and every node ran once per successful run (two).
    ops = [e["args"]["op"] for e in events]
    assert "fused_elementwise_internal" not in ops, ops
    assert ops and len(ops) % 2 == 0 and ops[:len(ops) // 2] == ops[len(ops) // 2:], ops
    assert onnxruntime.InferenceSession(model_path).end_profiling() == ""
    with pytest.warns(UserWarning, match="optimized_model_filepath"):
        o2 = onnxruntime.SessionOptions()
        o2.optimized_model_filepath = str(tmp_path / "opt.onnx")
        onnxruntime.InferenceSession(model_path, o2)
    assert not os.path.exists(tmp_path / "opt.onnx")
    with pytest.raises(NoSuchFile):
        onnxruntime.SessionOptions().register_custom_ops_library(str(tmp_path / "none.so"))


def test_optimization_levels_agree(model_path):
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    outs = []
    for level in onnxruntime.GraphOptimizationLevel:
        opts = onnxruntime.SessionOptions()
        opts.graph_optimization_level = level
        outs.append(onnxruntime.InferenceSession(model_path, opts).run(None, {"x": x})[0])
    for o in outs:
        np.testing.assert_allclose(o, expected(x), rtol=1e-5, atol=1e-6)


def test_repeated_output_names_are_distinct_arrays(model_path):
    sess = onnxruntime.InferenceSession(model_path)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    a, b = sess.run(["y", "y"], {"x": x})
    np.testing.assert_array_equal(a, b)
    a[0, 0] = 123.0
    assert b[0, 0] != 123.0


def test_public_names_documented():
    # Stub check of the pure-Python module: every exported name exists, every public class
    # and function (and their public methods) carries a docstring.
    for name in onnxruntime.__all__:
        obj = getattr(onnxruntime, name)
        if name == "__version__":
            assert isinstance(obj, str)
            continue
        assert obj.__doc__, name
        if isinstance(obj, type):
            for attr, member in vars(obj).items():
                if callable(member) and not attr.startswith("_"):
                    assert member.__doc__, "%s.%s" % (name, attr)
                if isinstance(member, staticmethod):
                    assert member.__func__.__doc__, "%s.%s" % (name, attr)


def test_register_custom_ops_library_loads_a_frame_plugin(tmp_path):
    # In a child process: loading a plugin lasts for the process (test_plugins.py checks the
    # registry before loading the same plugins).
    plugins = os.environ.get("FRAME_TEST_PLUGIN_DIR",
                             os.path.join(SOURCE_DIR, "build", "test_plugins"))
    good = os.path.join(plugins, "libframe_test_good_plugin.so")
    if "FRAME_TEST_PLUGIN_DIR" not in os.environ and not os.path.exists(good):
        pytest.skip(f"{good} is not built (ctest sets FRAME_TEST_PLUGIN_DIR)")
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from onnx import TensorProto, helper
        import frame.onnxruntime as ort
        good, dup = sys.argv[1], sys.argv[2]
        graph = helper.make_graph(
            [helper.make_node("Swish", ["x"], ["y"], domain="com.frame.test")], "swish",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.frame.test", 1)])
        opts = ort.SessionOptions()
        opts.register_custom_ops_library(good)
        x = np.linspace(-4, 4, 12, dtype=np.float32).reshape(3, 4)
        (y,) = ort.InferenceSession(m.SerializeToString(), opts).run(None, {"x": x})
        np.testing.assert_allclose(y, x / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6,
                                   atol=1e-7)
        try:
            ort.SessionOptions().register_custom_ops_library(dup)
        except ort.Fail as e:
            assert "duplicate" in str(e), e
        else:
            raise AssertionError("a refused plugin did not raise Fail")
        print("plugin ok")
    """)
    p = subprocess.run([sys.executable, "-c", script, good,
                        os.path.join(plugins, "libframe_test_dup_plugin.so")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "plugin ok" in p.stdout, p.stdout + p.stderr


def test_run_options_terminate_from_another_thread(tmp_path):
    # A chain of 40 512x512 matmuls (about 5 ms each on one thread); another thread sets
    # terminate a tenth into the run: the run stops between nodes with Fail, long before it
    # would have ended.
    import time
    w = (np.eye(512, dtype=np.float32) * 0.5 + 0.5 / 512).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x" if k == 0 else "h%d" % (k - 1), "W"],
                              ["h%d" % k if k < 39 else "y"], name="mm%d" % k) for k in range(40)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512, 512])],
        initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = onnxruntime.InferenceSession(model.SerializeToString(), opts)
    x = np.ones((512, 512), np.float32)
    sess.run(None, {"x": x})  # compiles
    t0 = time.perf_counter()
    sess.run(None, {"x": x})
    full = time.perf_counter() - t0
    ro = onnxruntime.RunOptions()
    timer = threading.Timer(full / 10, lambda: setattr(ro, "terminate", True))
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(Fail, match="terminated") as stopped:
        sess.run(None, {"x": x}, ro)
    elapsed = time.perf_counter() - t0
    timer.join()
    assert isinstance(stopped.value, RuntimeError)
    assert elapsed < 0.8 * full, (elapsed, full)
    assert "mm" in str(stopped.value)  # names the node it did not start
    ro.terminate = False
    np.testing.assert_allclose(sess.run(None, {"x": x}, ro)[0], sess.run(None, {"x": x})[0])


# ONNX Runtime's Python signatures (onnxruntime_inference_collection.py, 1.16-1.20) of what
# scripts call with keywords: parameter names in order, and which have defaults.
ORT_SIGNATURES = {
    "InferenceSession.__init__": [("path_or_bytes", False), ("sess_options", True),
                                  ("providers", True), ("provider_options", True)],
    "InferenceSession.run": [("output_names", False), ("input_feed", False),
                             ("run_options", True)],
    "InferenceSession.run_async": [("output_names", False), ("input_feed", False),
                                   ("callback", False), ("user_data", False),
                                   ("run_options", True)],
    "InferenceSession.run_with_ort_values": [("output_names", False),
                                             ("input_dict_ort_values", False),
                                             ("run_options", True)],
    "InferenceSession.run_with_iobinding": [("iobinding", False), ("run_options", True)],
    "InferenceSession.set_providers": [("providers", True), ("provider_options", True)],
    "IOBinding.bind_cpu_input": [("name", False), ("arr_on_cpu", False)],
    "IOBinding.bind_input": [("name", False), ("device_type", False), ("device_id", False),
                             ("element_type", False), ("shape", False), ("buffer_ptr", False)],
    "IOBinding.bind_output": [("name", False), ("device_type", True), ("device_id", True),
                              ("element_type", True), ("shape", True), ("buffer_ptr", True)],
    "IOBinding.bind_ortvalue_input": [("name", False), ("ortvalue", False)],
    "IOBinding.bind_ortvalue_output": [("name", False), ("ortvalue", False)],
    "OrtValue.ortvalue_from_numpy": [("numpy_obj", False), ("device_type", True),
                                     ("device_id", True)],
    "OrtValue.ortvalue_from_shape_and_type": [("shape", True), ("element_type", True),
                                              ("device_type", True), ("device_id", True)],
}


@pytest.mark.parametrize("name", sorted(ORT_SIGNATURES))
def test_signatures_match_onnx_runtime(name):
    import inspect
    cls, meth = name.split(".")
    signature = inspect.signature(getattr(getattr(onnxruntime, cls), meth))
    params = [(p.name, p.default is not inspect.Parameter.empty)
              for p in signature.parameters.values()
              if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    assert params == ORT_SIGNATURES[name]


def test_break_test_findings(tmp_path):
    # A scalar input through OrtValue and IOBinding keeps its shape [] (np.ascontiguousarray
    # made it [1]); provider lists given as a bare string or with a repeated entry; an ONNX type
    # code as element_type; a bad optimization level; a frame.RunOptions passed to this module.
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "scalar",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = onnxruntime.InferenceSession(model.SerializeToString(), providers="CPUExecutionProvider")
    assert sess.get_providers() == ["CPUExecutionProvider"]
    x = np.array(2.0, np.float32)
    v = onnxruntime.OrtValue.ortvalue_from_numpy(x)
    assert v.shape() == []
    assert sess.run_with_ort_values(None, {"x": v})[0].numpy() == 4.0
    b = sess.io_binding()
    b.bind_cpu_input("x", x)
    b.bind_output("y")
    sess.run_with_iobinding(b)
    assert b.copy_outputs_to_cpu()[0] == 4.0
    twice = onnxruntime.InferenceSession(model.SerializeToString(),
                                         providers=["CPUExecutionProvider"] * 2)
    assert twice.get_providers() == ["CPUExecutionProvider"]
    assert onnxruntime.OrtValue.ortvalue_from_shape_and_type([2], TensorProto.INT64).numpy(
        ).dtype == np.int64
    opts = onnxruntime.SessionOptions()
    opts.graph_optimization_level = 5
    with pytest.raises(InvalidArgument, match="graph_optimization_level"):
        onnxruntime.InferenceSession(model.SerializeToString(), opts)
    ro = frame.RunOptions()
    assert sess.run(None, {"x": x}, ro)[0] == 4.0
    ro.terminate = True
    with pytest.raises(Fail, match="terminate"):
        sess.run(None, {"x": x}, ro)


def test_io_binding_with_every_output_bound_runs_into_the_callers_memory(model_path):
    # Every output bound to caller memory: one caller-buffer run (Session::run writing into the
    # given tensors, whose zero-allocation steady state the C++ IoBinding tests check), never
    # run() plus a copy. A spy on the native session records which entry point is called.
    sess = onnxruntime.InferenceSession(model_path)

    class Spy:
        def __init__(self, inner):
            self.inner, self.calls = inner, []

        def __getattr__(self, name):
            self.calls.append(name)
            return getattr(self.inner, name)

    sess._sess = spy = Spy(sess._sess)
    x = RNG.standard_normal((64, 4)).astype(np.float32)
    y = np.empty((64, 3), np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_ortvalue_output("y", onnxruntime.OrtValue.ortvalue_from_numpy(y))
    for _ in range(3):
        sess.run_with_iobinding(binding)
    np.testing.assert_allclose(y, expected(x), rtol=1e-5, atol=1e-6)
    assert spy.calls == ["_run_into"] * 3
    assert binding.get_outputs()[0].data_ptr() == y.ctypes.data
    x[:] = -x
    sess.run_with_iobinding(binding)
    np.testing.assert_allclose(y, expected(x), rtol=1e-5, atol=1e-6)
    # A read-only or non-contiguous buffer is refused, naming the output.
    binding.clear_binding_outputs()
    ro = np.empty((64, 3), np.float32)
    ro.flags.writeable = False
    binding.bind_ortvalue_output("y", onnxruntime.OrtValue(ro))
    with pytest.raises(InvalidArgument, match="output 'y'.*writable"):
        sess.run_with_iobinding(binding)


def test_io_binding_with_some_outputs_bound_allocates_the_others(tmp_path):
    # y1 = x @ W bound to caller memory, y2 = relu(y1) bound by name only: one caller-buffer
    # run writes y1 into the buffer and y2 into an array allocated for it; run() is not called
    # and nothing is copied. Expected values from numpy.
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y1"], name="mm"),
         helper.make_node("Relu", ["y1"], ["y2"], name="relu")],
        "two_outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["N", 3])],
        initializer=[numpy_helper.from_array(W, "W")])
    path = tmp_path / "two_outputs.onnx"
    path.write_bytes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    sess = onnxruntime.InferenceSession(str(path))
    calls = []
    native = sess._sess

    class Spy:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(native, name)

    sess._sess = Spy()
    binding = sess.io_binding()
    for n in (5, 7, 5):
        x = RNG.standard_normal((n, 4)).astype(np.float32)
        y1 = np.empty((n, 3), np.float32)
        binding.bind_cpu_input("x", x)
        binding.clear_binding_outputs()
        binding.bind_ortvalue_output("y1", onnxruntime.OrtValue.ortvalue_from_numpy(y1))
        binding.bind_output("y2")
        sess.run_with_iobinding(binding)
        got1, got2 = binding.copy_outputs_to_cpu()
        np.testing.assert_allclose(y1, x @ W, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got2, np.maximum(x @ W, 0), rtol=1e-5, atol=1e-6)
        assert binding.get_outputs()[0].data_ptr() == y1.ctypes.data
    assert calls == ["_run_into"] * 3
    # A null address is refused, naming it.
    binding.clear_binding_outputs()
    with pytest.raises(InvalidArgument, match="buffer_ptr is null"):
        binding.bind_output("y1", "cpu", 0, np.float32, [5, 3], 0)
