"""Shared helpers of the Python suite: small ONNX models built with onnx.helper."""

from __future__ import annotations

import os
import sys
from typing import Sequence

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

# The build tree's package when run by hand from the source root (ctest sets PYTHONPATH).
_BUILD = os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")
if "PYTHONPATH" not in os.environ and os.path.isdir(_BUILD):
    sys.path.insert(0, os.path.abspath(_BUILD))

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def vinfo(name: str, elem: int, dims: Sequence[object] | None) -> object:
    return helper.make_tensor_value_info(name, elem, dims)


def model_bytes(nodes, inputs, outputs, initializers=(), opset: int = 17) -> bytes:
    graph = helper.make_graph(list(nodes), "test", list(inputs), list(outputs),
                              initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


def add_relu_model(dims: Sequence[object] = ("N", 4), elem: int = TensorProto.FLOAT) -> bytes:
    """r = relu(x + y)."""
    return model_bytes(
        [helper.make_node("Add", ["x", "y"], ["z"]), helper.make_node("Relu", ["z"], ["r"])],
        [vinfo("x", elem, dims), vinfo("y", elem, dims)], [vinfo("r", elem, dims)])


@pytest.fixture
def add_relu_path(tmp_path) -> str:
    p = tmp_path / "add_relu.onnx"
    p.write_bytes(add_relu_model())
    return str(p)
