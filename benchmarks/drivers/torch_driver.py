#!/usr/bin/python3
"""PyTorch eager benchmark driver: the same command line and RESULT line as the C++ drivers
(drivers/driver_common.h), for a model of benchmarks/models.py.

Usage: torch_driver.py --model NAME --input [NAME=]FILE.npy [--input ...] [--threads N]
                       [--warmup W] [--warmup-ms T] [--runs R] [--save-dir DIR]
One --input per graph input, in the module's argument order (they are passed positionally;
the NAME= part, as the C++ drivers take it, is accepted and ignored). load_ms is the time to
build the module (PyTorch has no load step comparable to an ONNX session); compile_ms is 0.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import models  # noqa: E402


def max_rss_kib():
    """Peak RSS of this process (VmHWM; ru_maxrss would include the parent's peak, which
    Linux carries across fork + exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--input", required=True, action="append")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--warmup-ms", type=float, default=0.0,
                   help="keep warming up until this many ms have passed too")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--save-dir", default="")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    t0 = time.perf_counter()
    model, _ = models.build(a.model)
    load_ms = (time.perf_counter() - t0) * 1e3
    x = [torch.from_numpy(np.load(i.split("=", 1)[-1])) for i in a.input]
    with torch.no_grad():
        w0 = time.perf_counter()
        i = 0
        while i < a.warmup or (time.perf_counter() - w0) * 1e3 < a.warmup_ms:
            y = model(*x)
            i += 1
        run_ms = []
        for _ in range(a.runs):
            t = time.perf_counter()
            y = model(*x)
            run_ms.append((time.perf_counter() - t) * 1e3)
    if a.save_dir:
        np.save(os.path.join(a.save_dir, "output.npy"), y.numpy())
    print("RESULT " + json.dumps({
        "engine": "torch", "version": torch.__version__, "load_ms": load_ms, "compile_ms": 0.0,
        "run_ms": run_ms, "max_rss_kib": max_rss_kib()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
