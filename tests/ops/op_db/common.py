"""Shared pieces of the op test database (one harness for every op and backend).

A family module `tests/ops/op_db/<family>.py` defines `cases() -> list[Case]`. Expected
outputs are computed independently of frame (numpy, torch or hand values), never by the
kernel under test. `tests/ops/gen_op_db.py` writes every case to a manifest + .npy files
that `tests/cpp/ops/op_db_test.cpp` runs against the `cpu` kernels.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

BF16 = "bf16"


@dataclasses.dataclass
class TensorAttr:
    """Marks a numpy array as a tensor-valued attribute (ONNX AttributeProto.TENSOR)."""
    value: np.ndarray


@dataclasses.dataclass
class Case:
    """One sample: op + inputs + attrs -> expected outputs.

    inputs:  numpy arrays; None marks an absent optional input.
    outputs: expected arrays (independent reference). Shape and dtype are checked exactly.
    attrs:   python int -> int, float -> float, str -> string, list[int] -> ints,
             list[float] -> floats, list[str] -> strings, TensorAttr -> tensor.
             Use `floats_attr`/`ints_attr` for empty lists (type would be ambiguous).
    name:    short suffix, unique per op (the id is "<op>/<name>").
    rtol/atol: override the BUILD-011 default for the output dtype; give a reason in `why`.
    bf16_inputs/bf16_outputs: indices of arrays holding bfloat16 bit patterns (uint16).
    constant_inputs: input indices visible to shape inference as constants. None = every
             integer-typed input (shape-like operands: reshape shape, slice starts, ...).
    check_values: per output, False to check only shape/dtype (random ops, masks).
    """
    op: str
    inputs: list
    outputs: list
    attrs: dict = dataclasses.field(default_factory=dict)
    name: str = ""
    rtol: Optional[float] = None
    atol: Optional[float] = None
    why: str = ""
    bf16_inputs: list = dataclasses.field(default_factory=list)
    bf16_outputs: list = dataclasses.field(default_factory=list)
    constant_inputs: Optional[list] = None
    check_values: Optional[list] = None


@dataclasses.dataclass
class TypedList:
    """An explicitly typed list attribute ("ints", "floats" or "strings")."""
    type: str
    value: list


def ints_attr(v):
    return TypedList("ints", [int(x) for x in v])


def floats_attr(v):
    return TypedList("floats", [float(x) for x in v])


def to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    rounded[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> float32."""
    return (b.astype(np.uint32) << 16).view(np.float32)


def attr_to_json(v: Any) -> dict:
    if isinstance(v, TypedList):
        return {"type": v.type, "value": v.value}
    if isinstance(v, TensorAttr):
        return {"type": "tensor", "value": None}  # filled by the generator (file name)
    if isinstance(v, bool):
        return {"type": "int", "value": int(v)}
    if isinstance(v, (int, np.integer)):
        return {"type": "int", "value": int(v)}
    if isinstance(v, (float, np.floating)):
        return {"type": "float", "value": float(v)}
    if isinstance(v, str):
        return {"type": "string", "value": v}
    if isinstance(v, (list, tuple)):
        if len(v) == 0:
            raise ValueError("empty list attribute: use ints_attr([]) or floats_attr([])")
        if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
            return {"type": "ints", "value": [int(x) for x in v]}
        if all(isinstance(x, (int, float, np.integer, np.floating)) for x in v):
            return {"type": "floats", "value": [float(x) for x in v]}
        if all(isinstance(x, str) for x in v):
            return {"type": "strings", "value": list(v)}
    raise ValueError(f"unsupported attribute value {v!r}")
