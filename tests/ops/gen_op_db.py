#!/usr/bin/env python3
"""Writes the op test database: OUT/manifest.json + OUT/*.npy (run with /usr/bin/python3).

manifest.json = {"cases": [{"id", "op", "attrs": {name: {"type", "value"}}, "inputs": [file|null],
"outputs": [file], "input_dtypes": [..], "output_dtypes": [..], "rtol", "atol",
"constant_inputs": [idx], "check_values": [bool]}]}. dtypes are frame names (f32, bf16, ...).
"""
import argparse
import importlib
import json
import math
import os
import pkgutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from op_db.common import TensorAttr, attr_to_json  # noqa: E402

NP_TO_FRAME = {
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.float16): "f16",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8", np.dtype(np.bool_): "bool",
    np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
}


def frame_dtype(arr, is_bf16):
    if is_bf16:
        assert arr.dtype == np.uint16, "bf16 arrays must hold uint16 bit patterns"
        return "bf16"
    if arr.dtype not in NP_TO_FRAME:
        raise ValueError(f"dtype {arr.dtype} has no frame equivalent")
    return NP_TO_FRAME[arr.dtype]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None, help="comma-separated family modules")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    families = sorted(m.name for m in pkgutil.iter_modules([os.path.join(HERE, "op_db")])
                      if m.name != "common")
    if args.only:
        families = [f for f in families if f in args.only.split(",")]
    manifest, seen = [], set()
    for fam in families:
        mod = importlib.import_module(f"op_db.{fam}")
        for i, c in enumerate(mod.cases()):
            cid = f"{c.op}/{c.name or i}"
            if cid in seen:
                raise ValueError(f"duplicate case id {cid}")
            seen.add(cid)
            stem = f"{fam}_{len(manifest):05d}"
            entry = {"id": cid, "family": fam, "op": c.op, "attrs": {}, "inputs": [],
                     "outputs": [], "input_dtypes": [], "output_dtypes": [],
                     "constant_inputs": [], "check_values": []}
            for k, v in c.attrs.items():
                j = attr_to_json(v)
                if isinstance(v, TensorAttr):
                    fn = f"{stem}_attr_{k}.npy"
                    np.save(os.path.join(args.out, fn), np.array(v.value, order="C"))
                    j["value"] = fn
                    j["dtype"] = frame_dtype(v.value, False)
                entry["attrs"][k] = j
            for j, a in enumerate(c.inputs):
                if a is None:
                    entry["inputs"].append(None)
                    entry["input_dtypes"].append(None)
                    continue
                a = np.asarray(a)
                fn = f"{stem}_in{j}.npy"
                np.save(os.path.join(args.out, fn), np.array(a, order="C"))
                entry["inputs"].append(fn)
                entry["input_dtypes"].append(frame_dtype(a, j in c.bf16_inputs))
            for j, a in enumerate(c.outputs):
                a = np.asarray(a)
                fn = f"{stem}_out{j}.npy"
                np.save(os.path.join(args.out, fn), np.array(a, order="C"))
                entry["outputs"].append(fn)
                entry["output_dtypes"].append(frame_dtype(a, j in c.bf16_outputs))
            if c.constant_inputs is None:
                entry["constant_inputs"] = [
                    j for j, d in enumerate(entry["input_dtypes"]) if d in ("i32", "i64")]
            else:
                entry["constant_inputs"] = list(c.constant_inputs)
            entry["check_values"] = (list(c.check_values) if c.check_values is not None
                                     else [True] * len(c.outputs))
            for key in ("rtol", "atol"):
                val = getattr(c, key)
                if val is not None:
                    assert math.isfinite(val)
                    entry[key] = val
            manifest.append(entry)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"cases": manifest}, f, indent=0)
    print(f"op db: {len(manifest)} cases from {len(families)} families -> {args.out}")


if __name__ == "__main__":
    main()
