"""8 Python threads on one InferenceSession: the GIL is released while a graph runs, and every
thread gets its own correct result (different shapes too, so specializations are shared)."""

from __future__ import annotations

import threading

import numpy as np

import frame
from conftest import add_relu_model


def test_eight_threads_one_session():
    sess = frame.InferenceSession(add_relu_model(), threads=1)
    failures = []
    barrier = threading.Barrier(8)

    def work(k: int) -> None:
        rng = np.random.default_rng(k)
        barrier.wait()
        for i in range(200):
            n = 1 + (k + i) % 3
            x = rng.standard_normal((n, 4), dtype=np.float32)
            y = rng.standard_normal((n, 4), dtype=np.float32)
            (r,) = sess.run(None, {"x": x, "y": y})
            if r.shape != (n, 4) or not np.array_equal(r, np.maximum(x + y, 0)):
                failures.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    stats = sess.cache_stats()
    # Each run is a hit, a miss (a compile) or interpreted (ADR 0007 stage C).
    assert stats["entries"] == 3
    assert stats["hits"] + stats["misses"] + stats["interpreted"] == 8 * 200, stats
