"""15,000 runs of a tiny model do not grow the process's resident memory."""

from __future__ import annotations

import os

import numpy as np

import frame
from conftest import add_relu_model

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def test_many_runs_keep_rss_flat():
    sess = frame.InferenceSession(add_relu_model((4, 4)), threads=1)
    x = np.ones((4, 4), np.float32)
    for _ in range(500):  # warm up allocators and the specialization cache
        sess.run(None, {"x": x, "y": x})
    # Three windows of 5,000 runs: a leak grows RSS in every window, a one-off allocation of the
    # process (a Python or allocator arena, pages another thread touches) in one. A leak of one
    # 64-byte output per run alone would be 320 KB per window.
    grown = []
    for _ in range(3):
        before = rss_bytes()
        for _ in range(5_000):
            (r,) = sess.run(None, {"x": x, "y": x})
        grown.append(rss_bytes() - before)
    assert min(grown) < 256 * 1024, f"RSS grew by {grown} bytes over three windows of 5,000 runs"
    assert r[0, 0] == 2
