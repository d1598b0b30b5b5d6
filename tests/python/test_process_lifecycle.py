"""frame in a Python process's life (docs/python.md, "Threads and the GIL"): interpreter exit
with runs in flight, fork() after frame has run with several threads, and distinct arrays for
an output asked twice. Each case runs a child interpreter with a time limit, so a hang fails
the test instead of stalling the suite. About 3 s."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

import frame
from conftest import SOURCE_DIR

MODEL = os.path.join(SOURCE_DIR, "models", "small_cnn.onnx")


def run_child(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), MODEL],
                          capture_output=True, text=True, timeout=timeout)


def test_exit_with_runs_in_flight_on_daemon_threads():
    # Four daemon threads loop on run() while the main thread returns: Python exits with
    # runs in flight. This used to abort the process ("terminate called without an active
    # exception", exit status 134).
    script = """
        import sys, threading
        import numpy as np
        import frame
        sess = frame.InferenceSession(sys.argv[1], threads=2)
        x = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
        started = threading.Semaphore(0)
        def loop():
            started.release()
            while True:
                sess.run(None, {"input": x})
        for _ in range(4):
            threading.Thread(target=loop, daemon=True).start()
        for _ in range(4):
            started.acquire()
        print("exiting", flush=True)
    """
    for _ in range(3):
        p = run_child(script)
        assert p.returncode == 0 and "exiting" in p.stdout, (p.returncode, p.stderr[-2000:])


def test_fork_after_use_runs_with_one_thread_in_the_child():
    # The parent runs with two threads (libgomp's workers exist), then forks. In the child a
    # new session and the parent's session compile again with one thread and give the
    # parent's results; an executable compiled before the fork for two threads refuses to run
    # with an error saying why. This used to hang in the OpenMP runtime.
    script = """
        import os, sys
        import numpy as np
        import frame
        sess = frame.InferenceSession(sys.argv[1], threads=2)
        x = np.random.default_rng(1).random((1, 3, 32, 32), dtype=np.float32)
        (y,) = sess.run(None, {"input": x})
        g = frame.Graph("relu")
        v = g.input("v", "float32", [64, 64])
        g.output(g.add_node("relu", [v]))
        exe = frame.compile(g, threads=2)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                (y_new,) = frame.InferenceSession(sys.argv[1], threads=2).run(None, {"input": x})
                (y_old,) = sess.run(None, {"input": x})
                np.testing.assert_allclose(y_new, y, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(y_old, y, rtol=1e-5, atol=1e-6)
                try:
                    exe.run({"v": np.ones((64, 64), np.float32)})
                    code = 4
                except RuntimeError as e:
                    assert "forked" in str(e) and "spawn" in str(e), e
                print("child ok", flush=True)
            except BaseException as e:
                print("child failed:", type(e).__name__, e, flush=True)
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        (y_after,) = sess.run(None, {"input": x})  # the parent still runs with two threads
        np.testing.assert_array_equal(y_after, y)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
    """
    p = run_child(script)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "child ok" in p.stdout and "child exit 0" in p.stdout, p.stdout + p.stderr[-2000:]


def test_an_output_asked_twice_gives_two_arrays():
    sess = frame.InferenceSession(MODEL)
    x = np.random.default_rng(2).random((1, 3, 32, 32), dtype=np.float32)
    a, b = sess.run(["probs", "probs"], {"input": x})
    np.testing.assert_array_equal(a, b)
    assert not np.shares_memory(a, b)


def test_exit_with_asynchronous_runs_queued():
    # 200 run_async calls, then the interpreter exits at once: the queued runs finish (their
    # callbacks are called) and the process exits normally.
    script = """
        import sys
        import numpy as np
        import frame
        sess = frame.InferenceSession(sys.argv[1], threads=1)
        x = np.random.default_rng(3).random((1, 3, 32, 32), dtype=np.float32)
        done = []
        for k in range(200):
            sess.run_async(None, {"input": x}, lambda out, k, err: done.append(err == ""), k)
        sess.run_async(None, {"input": x}, lambda out, d, err: print("last", err == "",
                                                                     flush=True), None)
    """
    p = run_child(script)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "last True" in p.stdout, p.stdout + p.stderr[-2000:]


def test_run_async_in_a_child_forked_after_the_parent_used_it():
    # Found by a break test: the child inherited the pool object without its threads, and its
    # first run_async never completed.
    script = """
        import os, sys
        import numpy as np
        import frame
        sess = frame.InferenceSession(sys.argv[1], threads=1)
        x = np.random.default_rng(4).random((1, 3, 32, 32), dtype=np.float32)
        (y,) = sess.run_async(None, {"input": x}).result(timeout=30)
        pid = os.fork()
        if pid == 0:
            (y2,) = sess.run_async(None, {"input": x}).result(timeout=30)
            os._exit(0 if np.array_equal(y, y2) else 5)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
    """
    p = run_child(script)
    assert p.returncode == 0 and "child exit 0" in p.stdout, p.stdout + p.stderr[-2000:]


def test_exit_while_a_python_kernel_runs_a_nested_session():
    # Found by a break test: at exit the nested run inside a Python kernel of a run in flight
    # was parked, so the outer run never ended and the exit waited forever.
    script = """
        import sys, threading, time
        import numpy as np
        from onnx import TensorProto as T, helper as h
        import frame
        def model(op, domain=""):
            return h.make_model(h.make_graph(
                [h.make_node(op, ["x"], ["y"], domain=domain)], "g",
                [h.make_tensor_value_info("x", T.FLOAT, ["N"])],
                [h.make_tensor_value_info("y", T.FLOAT, ["N"])]),
                opset_imports=[h.make_opsetid("", 17),
                               h.make_opsetid("com.example", 1)]).SerializeToString()
        inner = frame.InferenceSession(model("Relu"))
        entered = threading.Event()
        def kernel(inputs, attrs):
            entered.set()
            time.sleep(0.2)
            return inner.run(None, {"x": inputs[0]})[0]
        frame.register_op("nested_relu", inputs=["X"], outputs=["Y"], cpu_kernel=kernel,
                          doc="relu through a nested run")
        frame.map_onnx_op("com.example", "NestedRelu", "nested_relu")
        outer = frame.InferenceSession(model("NestedRelu", "com.example"))
        x = np.linspace(-1, 1, 8).astype(np.float32)
        def loop():
            while True:
                outer.run(None, {"x": x})
        threading.Thread(target=loop, daemon=True).start()
        entered.wait(30)
        print("exiting", flush=True)
    """
    p = run_child(script, timeout=60)
    assert p.returncode == 0 and "exiting" in p.stdout, p.stdout + p.stderr[-2000:]
