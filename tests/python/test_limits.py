"""Resource limits from Python: SessionOptions.max_memory_bytes / max_tensor_bytes / load_limits
and frame.compile(..., max_memory_bytes=, max_tensor_bytes=) (runtime::CompileOptions,
onnx::LoadLimits; docs/security.md). Byte counts below are computed by hand (4 bytes per f32)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from onnx import TensorProto, helper

import frame
from conftest import add_relu_model, model_bytes, vinfo

# The C++ defaults, computed independently: 3/4 and 1/2 of physical memory (sysconf).
PHYS = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
DEFAULT_MAX_MEMORY = PHYS // 4 * 3
DEFAULT_MAX_TENSOR = PHYS // 2


def concat_graph() -> frame.Graph:
    """y = concat([x] * 64) on axis 0: x is f32[4] (16 bytes), y f32[256] (1024 bytes)."""
    g = frame.Graph("big")
    x = g.input("x", "float32", [4])
    y = g.add_node("concat", [x] * 64, attrs={"axis": 0}, name="big")
    g.output(y)
    return g


def test_defaults_are_the_cpp_defaults():
    opts = frame.SessionOptions()
    assert opts.max_memory_bytes == DEFAULT_MAX_MEMORY
    assert opts.max_tensor_bytes == DEFAULT_MAX_TENSOR
    # onnx::LoadLimits::max_initializer_bytes defaults to the compile memory limit.
    assert opts.load_limits.max_initializer_bytes == DEFAULT_MAX_MEMORY
    sig = frame.compile.__doc__.splitlines()[0]
    assert f"max_memory_bytes: int = {DEFAULT_MAX_MEMORY}" in sig
    assert f"max_tensor_bytes: int = {DEFAULT_MAX_TENSOR}" in sig


def test_values_read_back_as_set():
    opts = frame.SessionOptions()
    opts.max_memory_bytes = 12345
    opts.max_tensor_bytes = 678
    opts.max_specializations = 3
    opts.max_cache_bytes = 4096
    opts.load_limits.max_model_bytes = 1000  # in place: load_limits is not a copy
    opts.load_limits.max_tensor_bytes = 1001
    opts.load_limits.max_initializer_bytes = 1002
    opts.load_limits.max_nesting_depth = 3
    opts.load_limits.max_nodes = 1003
    opts.load_limits.max_attribute_elements = 1004
    limits = frame.LoadLimits()
    limits.max_nodes = 7
    expected = {"max_memory_bytes": 12345, "max_tensor_bytes": 678, "max_specializations": 3,
                "max_cache_bytes": 4096}
    expected_limits = {"max_model_bytes": 1000, "max_tensor_bytes": 1001,
                       "max_initializer_bytes": 1002, "max_nesting_depth": 3, "max_nodes": 1003,
                       "max_attribute_elements": 1004}
    sess = frame.InferenceSession(add_relu_model((2, 4)), sess_options=opts)
    for o in (opts, sess.get_session_options()):
        for k, v in expected.items():
            assert getattr(o, k) == v, k
        for k, v in expected_limits.items():
            assert getattr(o.load_limits, k) == v, k
    opts.load_limits = limits  # assigning a LoadLimits replaces them all
    assert opts.load_limits.max_nodes == 7
    assert opts.load_limits.max_tensor_bytes == frame.LoadLimits().max_tensor_bytes
    with pytest.raises(TypeError):
        opts.max_tensor_bytes = -1


def test_compile_tensor_limit_names_node_value_bytes_and_limit():
    g = concat_graph()
    with pytest.raises(ValueError) as e:
        frame.compile(g, max_tensor_bytes=512)
    msg = str(e.value)
    assert re.search(r"node 'big' \(concat\): output 0 'big:0' is f32\[256\]: 1024 bytes, over the "
                     r"limit of 512 bytes per tensor \(max_tensor_bytes\)", msg), msg
    # A graph input over the limit is named as such.
    with pytest.raises(ValueError, match=r"graph input 'x' is f32\[4\]: 16 bytes, over the limit "
                                         r"of 8 bytes per tensor \(max_tensor_bytes\)"):
        frame.compile(g, max_tensor_bytes=8)


def test_compile_memory_limit_names_bytes_and_limit():
    g = concat_graph()
    with pytest.raises(ValueError) as e:
        frame.compile(g, max_memory_bytes=1000)
    msg = str(e.value)
    # Inputs and outputs alone are 16 + 1024 bytes.
    m = re.search(r"a run needs (\d+) bytes \(arena peak \d+ \+ graph inputs and outputs 1040 \+ "
                  r"constants 0\), over the memory limit of 1000 bytes \(max_memory_bytes\)", msg)
    assert m, msg
    assert int(m.group(1)) >= 1040


def test_compile_defaults_and_large_enough_limits_run():
    x = np.arange(4, dtype=np.float32)
    for exe in (frame.compile(concat_graph()),
                frame.compile(concat_graph(), max_memory_bytes=1 << 20, max_tensor_bytes=1024)):
        (y,) = exe.run({"x": x}).values()
        np.testing.assert_array_equal(y, np.tile(x, 64))


def test_session_limits_apply_per_specialization():
    opts = frame.SessionOptions()
    opts.max_tensor_bytes = 512
    sess = frame.InferenceSession(add_relu_model(), sess_options=opts)  # x, y: f32[N, 4]
    small = np.ones((2, 4), np.float32)  # 32 bytes
    (r,) = sess.run(None, {"x": small, "y": small})
    np.testing.assert_array_equal(r, np.full((2, 4), 2, np.float32))
    big = np.ones((64, 4), np.float32)  # 1024 bytes
    with pytest.raises(ValueError, match=r"graph input '[xy]' is f32\[64,4\]: 1024 bytes, over the "
                                         r"limit of 512 bytes per tensor \(max_tensor_bytes\)"):
        sess.run(None, {"x": big, "y": big})
    (r,) = sess.run(None, {"x": small, "y": small})  # the session stays usable
    assert r.shape == (2, 4)
    # The default limits let the big run through.
    (r,) = frame.InferenceSession(add_relu_model()).run(None, {"x": big, "y": big})
    np.testing.assert_array_equal(r, np.full((64, 4), 2, np.float32))

    opts = frame.SessionOptions()
    opts.max_memory_bytes = 64
    sess = frame.InferenceSession(add_relu_model(), sess_options=opts)
    with pytest.raises(ValueError, match=r"graph inputs and outputs 96 \+ constants 0\), over the "
                                         r"memory limit of 64 bytes \(max_memory_bytes\)"):
        sess.run(None, {"x": small, "y": small})  # x, y and r: 3 * 32 bytes


def weight_model(tmp_path) -> str:
    """y = x + w with an initializer w: f32[256] (1024 bytes)."""
    w = np.arange(256, dtype=np.float32)
    data = model_bytes([helper.make_node("Add", ["x", "w"], ["y"])],
                       [vinfo("x", TensorProto.FLOAT, [256])],
                       [vinfo("y", TensorProto.FLOAT, [256])], initializers=[("w", w)])
    p = tmp_path / "weight.onnx"
    p.write_bytes(data)
    return str(p)


def test_load_limits_refuse_a_large_initializer(tmp_path):
    path = weight_model(tmp_path)
    x = np.ones(256, np.float32)
    expected = np.arange(256, dtype=np.float32) + 1
    # Defaults: loads and runs.
    (y,) = frame.InferenceSession(path).run(None, {"x": x})
    np.testing.assert_array_equal(y, expected)
    (y,) = frame.compile(frame.load_onnx(path)).run({"x": x}).values()
    np.testing.assert_array_equal(y, expected)

    opts = frame.SessionOptions()
    opts.load_limits.max_tensor_bytes = 512
    for model in (path, open(path, "rb").read()):
        with pytest.raises(ValueError, match=r"tensor 'w': 1024 bytes exceeds the limit of 512"):
            frame.InferenceSession(model, sess_options=opts)
    limits = frame.LoadLimits()
    limits.max_tensor_bytes = 512
    with pytest.raises(ValueError, match=r"tensor 'w': 1024 bytes exceeds the limit of 512"):
        frame.load_onnx(path, limits=limits)

    limits = frame.LoadLimits()
    limits.max_initializer_bytes = 1000
    with pytest.raises(ValueError, match=r"1024 bytes.*over the limit of 1000 "
                                         r"\(max_initializer_bytes\)"):
        frame.load_onnx(path, limits=limits)
    opts = frame.SessionOptions()
    opts.load_limits.max_initializer_bytes = 1000
    with pytest.raises(ValueError, match=r"over the limit of 1000 \(max_initializer_bytes\)"):
        frame.InferenceSession(path, sess_options=opts)
