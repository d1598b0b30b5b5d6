"""InferenceSession.run_async (docs/python.md, "Asynchronous runs"): many runs in flight on one
session from many threads, with mixed shapes, as Futures and with ONNX Runtime's callback;
errors delivered to the Future or the callback; asyncio. Expected values from numpy. About
3 s on 2 cores."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import numpy as np
import pytest

import frame
from conftest import add_relu_model


@pytest.fixture(scope="module")
def session():
    return frame.InferenceSession(add_relu_model(("N", 4)), threads=1)


def feed(seed: int):
    rng = np.random.default_rng(seed)
    n = 1 + seed % 8
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = rng.standard_normal((n, 4)).astype(np.float32)
    return {"x": x, "y": y}, np.maximum(x + y, 0)


def test_8_threads_x_500_runs_with_mixed_shapes(session):
    lock = threading.Lock()
    done = threading.Semaphore(0)
    failures = []
    callbacks = 0

    def check(outputs, expected, err):
        if err or outputs is None or not np.array_equal(outputs[0], expected):
            failures.append((err, outputs, expected))

    def callback(outputs, expected, err):
        nonlocal callbacks
        with lock:
            callbacks += 1
            check(outputs, expected, err)
        done.release()

    def client(t: int):
        futures = []
        for k in range(500):
            inputs, expected = feed(t * 1000 + k)
            if k % 2:
                session.run_async(None, inputs, callback, expected)
            else:
                futures.append((session.run_async(["r"], inputs), expected))
        for f, expected in futures:
            outputs = f.result(timeout=120)  # not under `lock`: the callbacks take it
            with lock:
                check(outputs, expected, "")

    threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in range(8 * 250):
        assert done.acquire(timeout=120)
    assert callbacks == 8 * 250 and not failures, failures[:3]


def test_errors_reach_the_future_and_the_callback(session):
    bad = {"x": np.zeros((2, 4), np.float32), "y": np.zeros((2, 5), np.float32)}
    f = session.run_async(None, bad)
    assert isinstance(f, concurrent.futures.Future)
    with pytest.raises(ValueError, match="y"):
        f.result(timeout=60)
    got = []
    ended = threading.Event()

    def callback(outputs, user_data, err):
        got.append((outputs, user_data, err))
        ended.set()

    assert session.run_async(None, bad, callback, "tag") is None
    assert ended.wait(60)
    outputs, user_data, err = got[0]
    assert outputs is None and user_data == "tag" and err.startswith("ValueError: ")


def test_a_failing_callback_is_reported(session, capfd):
    ended = threading.Event()

    def callback(outputs, user_data, err):
        ended.set()
        raise RuntimeError("callback broke")

    inputs, _ = feed(3)
    session.run_async(None, inputs, callback, None)
    assert ended.wait(60)
    # The report is printed on the pool thread after the callback raised: wait for it.
    err = ""
    deadline = time.monotonic() + 30
    while "callback broke" not in err and time.monotonic() < deadline:
        time.sleep(0.01)
        err += capfd.readouterr().err
    assert "run_async callback" in err and "callback broke" in err


def test_asyncio(session):
    async def main():
        pending = []
        for k in range(16):
            inputs, expected = feed(k)
            pending.append((asyncio.wrap_future(session.run_async(None, inputs)), expected))
        for f, expected in pending:
            (r,) = await f
            np.testing.assert_array_equal(r, expected)

    asyncio.run(main())


def test_the_feed_dict_is_copied_at_submit(session):
    # Found by a break test: one dict reused for every submission gave most runs another
    # submission's input.
    feed_dict, pending = {}, []
    for k in range(100):
        feed_dict["x"] = np.full((2, 4), k, np.float32)
        feed_dict["y"] = np.zeros((2, 4), np.float32)
        pending.append((k, session.run_async(None, feed_dict)))
    feed_dict["bad"] = np.zeros(1, np.float32)  # a key added later reaches no run
    for k, f in pending:
        assert f.result(timeout=60)[0][0, 0] == k
