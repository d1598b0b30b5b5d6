#!/usr/bin/python3
"""Checks the claim behind the conformance failures that docs/onnx.md attributes to the onnx 1.12
reference data, so the claim stays verifiable instead of a skip:

- the 12 window cases: the shipped expected output equals the window formula evaluated with
  3.1415 for pi in float32 (within 1e-6) and differs from the exact formula (np.pi) by more than
  the BUILD-011 op tolerance;
- test_gridsample_bicubic: the shipped output equals torch.nn.functional.grid_sample's exact
  result rounded to 4 decimals, and differs from the unrounded result by more than rtol 1e-5.

Independent of frame: only the suite's files, numpy and torch. Usage:
  check_reference_defects.py DATA_DIR   (DATA_DIR/node/<case>/test_data_set_0/*.pb)
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

WINDOWS = {  # a0, a1, a2 of a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N)
    "hann": (0.5, 0.5, 0.0),
    "hamming": (25.0 / 46.0, 1.0 - 25.0 / 46.0, 0.0),
    "blackman": (0.42, 0.5, 0.08),
}


def read(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def window(kind, size, periodic, pi):
    a0, a1, a2 = WINDOWS[kind]
    n = size if periodic else size - 1
    k = np.arange(size, dtype=np.float32)  # the generator's float32 chain
    y = a0 - a1 * np.cos(2 * pi * k / n) + a2 * np.cos(4 * pi * k / n)
    return y.astype(np.float64)


def main():
    node = os.path.join(sys.argv[1], "node")
    failures = 0
    checked = 0
    for kind in WINDOWS:
        for variant in ("", "_symmetric"):
            for expanded in ("", "_expanded"):
                case = "test_%swindow%s%s" % (kind, variant, expanded)
                d = os.path.join(node, case, "test_data_set_0")
                size = int(read(os.path.join(d, "input_0.pb")))
                shipped = read(os.path.join(d, "output_0.pb")).astype(np.float64)
                periodic = variant == ""
                bad_pi = window(kind, size, periodic, 3.1415)
                exact = window(kind, size, periodic, np.pi)
                ok_bad = np.allclose(shipped, bad_pi, rtol=0, atol=1e-6)
                off = np.max(np.abs(shipped - exact))
                ok_off = off > 5e-5  # far outside float32 rounding of the exact formula
                checked += 1
                if not (ok_bad and ok_off):
                    failures += 1
                print("%-40s pi=3.1415 formula: %s; off from exact by %.2g" %
                      (case, "matches" if ok_bad else "DIFFERS", off))
    import torch

    d = os.path.join(node, "test_gridsample_bicubic", "test_data_set_0")
    x, grid = read(os.path.join(d, "input_0.pb")), read(os.path.join(d, "input_1.pb"))
    shipped = read(os.path.join(d, "output_0.pb"))
    exact = torch.nn.functional.grid_sample(torch.from_numpy(x.copy()), torch.from_numpy(grid.copy()),
                                            mode="bicubic", padding_mode="zeros",
                                            align_corners=False).numpy()
    ok_round = np.allclose(shipped, np.round(exact, 4), rtol=0, atol=1e-6)
    off = np.max(np.abs(shipped - exact))
    checked += 1
    if not (ok_round and off > 1e-5):
        failures += 1
    print("%-40s torch rounded to 4 decimals: %s; off from torch by %.2g" %
          ("test_gridsample_bicubic", "matches" if ok_round else "DIFFERS", off))
    print("%d cases checked, %d do not show the documented defect" % (checked, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
