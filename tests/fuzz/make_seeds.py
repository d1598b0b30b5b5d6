#!/usr/bin/python3
"""Writes the fuzzers' seed corpora into OUT (docs/fuzzing.md).

OUT/onnx: every ONNX node-test model (generated into --conformance by
tests/conformance/generate_data.sh when not there yet) and the repository's models.
OUT/npy: .npy files numpy writes for every dtype frame reads, in C and Fortran order,
format 1.0 and 2.0, scalars, empty and high-rank arrays, plus the repository's .npy files.
OUT/text_ir: the passes' golden text-IR files.
Nothing here is committed; tests/fuzz/seeds/ holds the small committed seeds.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAX_ONNX_BYTES = 64 << 10  # larger models only slow the fuzzers down


def onnx_seeds(conformance, out):
    subprocess.run([os.path.join(ROOT, "tests", "conformance", "generate_data.sh"), conformance],
                   check=True, stdout=subprocess.DEVNULL)
    paths = sorted(glob.glob(os.path.join(conformance, "node", "*", "model.onnx")))
    paths += sorted(glob.glob(os.path.join(ROOT, "models", "*.onnx")))
    n = 0
    for p in paths:
        if os.path.getsize(p) > MAX_ONNX_BYTES:
            continue
        name = os.path.basename(os.path.dirname(p)) if p.endswith("model.onnx") else \
            os.path.basename(p)[:-len(".onnx")]
        shutil.copyfile(p, os.path.join(out, name + ".onnx"))
        n += 1
    return n


def npy_seeds(out):
    n = 0
    dtypes = ["<f4", "<f8", "<f2", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"]
    shapes = [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 2, 1, 2, 1)]
    for dt in dtypes:
        for i, shape in enumerate(shapes):
            a = (numpy.arange(int(numpy.prod(shape, dtype=numpy.int64))) % 5).astype(dt)
            a = a.reshape(shape)
            numpy.save(os.path.join(out, f"{dt[1:]}_{i}.npy"), a)
            n += 1
        f = numpy.asfortranarray((numpy.arange(24) % 7).astype(dt).reshape(2, 3, 4))
        numpy.save(os.path.join(out, f"{dt[1:]}_fortran.npy"), f)
        n += 1
    with open(os.path.join(out, "v2.npy"), "wb") as f:
        numpy.lib.format.write_array(f, numpy.arange(6, dtype="<f4").reshape(2, 3),
                                     version=(2, 0))
    n += 1
    for p in sorted(glob.glob(os.path.join(ROOT, "models", "*.npy"))):
        shutil.copyfile(p, os.path.join(out, os.path.basename(p)))
        n += 1
    return n


def text_ir_seeds(out):
    n = 0
    for p in sorted(glob.glob(os.path.join(ROOT, "tests", "cpp", "passes", "golden", "*.txt"))):
        shutil.copyfile(p, os.path.join(out, os.path.basename(p)))
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--conformance", required=True, help="ONNX node-test data dir")
    args = ap.parse_args()
    counts = {}
    for kind, fn in (("onnx", lambda d: onnx_seeds(args.conformance, d)), ("npy", npy_seeds),
                     ("text_ir", text_ir_seeds)):
        d = os.path.join(args.out, kind)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        counts[kind] = fn(d)
    with open(os.path.join(args.out, "stamp"), "w") as f:
        f.write(repr(counts) + "\n")
    print("fuzz seeds:", counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
