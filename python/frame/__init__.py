"""frame: a C++20 graph engine, from Python (docs/python.md).

Quick start::

    import frame, numpy as np
    sess = frame.InferenceSession("model.onnx")
    print(sess.run(None, {"x": np.ones((1, 4), np.float32)}))

The compiled part lives in ``frame._frame`` (linked to the shared libframe); this module
re-exports it and adds the registry dumps, with internal ops hidden (PY-021).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

from ._frame import (
    Executable,
    Graph,
    InferenceSession,
    LoadLimits,
    NodeArg,
    RunOptions,
    SessionOptions,
    Value,
    __version__,
    backends,
    compile,
    load_onnx,
    load_plugin,
    map_onnx_op,
    register_op,
)
from . import _frame
from ._compare import compare

__all__ = [
    "Executable",
    "Graph",
    "InferenceSession",
    "LoadLimits",
    "NodeArg",
    "RunOptions",
    "SessionOptions",
    "Value",
    "__version__",
    "backends",
    "compare",
    "compile",
    "kernels",
    "load_onnx",
    "load_plugin",
    "map_onnx_op",
    "ops",
    "register_op",
]


def _is_internal(op_name: str) -> bool:
    # Ops a pass introduces (fused groups, backend patterns) are not user-facing (PY-021).
    return op_name.endswith("_internal")


def ops() -> List[Dict[str, Any]]:
    """The op registry: one dict per user-facing op (name, doc, inputs, outputs, attrs,
    traits, kernels, ...), sorted by name, as ``frame ops --json`` prints it."""
    return [o for o in json.loads(_frame._ops_json()) if not _is_internal(o["name"])]


def kernels() -> List[Dict[str, Any]]:
    """The kernel registry: one dict per kernel (op, backend, dtypes, ...) of a user-facing op."""
    return [k for k in json.loads(_frame._kernels_json()) if not _is_internal(k["op"])]
