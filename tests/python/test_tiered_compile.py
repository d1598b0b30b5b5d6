"""Tiered compiles (docs/adr/0007-first-seen-shapes.md): where the first-seen tier cannot serve
a key (a memory limit its unfused graph exceeds, strict mode without the fusion that gives a
node a kernel, an entry too large to keep), the key is compiled in full instead; a tier-up that
races an eviction, and a compile that runs another session on the same thread, leave the cache
consistent. Expected values are numpy's. About 2 s in all."""

import os
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper as nh

import frame


def model(nodes, inputs, initializers=(), extra_opsets=()):
    g = oh.make_graph(nodes, "g", inputs, [oh.make_tensor_value_info("y", TP.FLOAT, None)],
                      initializer=list(initializers))
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 14)] +
                      [oh.make_opsetid(d, 1) for d in extra_opsets])
    m.ir_version = 8
    return m.SerializeToString()


def dynamic(name):
    return oh.make_tensor_value_info(name, TP.FLOAT, ["N"])


def doubled_constant_plus_x(op, domain, kernel):
    """y = x + kernel(c) with c = [1]: `kernel` registered as frame op `op`, mapped from
    ONNX `domain`::Double; the session folds it at compile time, once per compile because c is
    computed from x's shape (ConstantOfShape(Shape(Shape(x))) = [1.0]): a fold of weights alone
    is done once per model (ADR 0007 stage B), a shape-derived one again at every compile."""
    frame.register_op(op, inputs=["X"], outputs=["Y"], cpu_kernel=kernel)
    frame.map_onnx_op(domain, "Double", op)
    one = nh.from_array(np.array([1], np.float32), "one")
    nodes = [oh.make_node("Shape", ["x"], ["s"]), oh.make_node("Shape", ["s"], ["ss"]),
             oh.make_node("ConstantOfShape", ["ss"], ["c"], value=one),
             oh.make_node("Double", ["c"], ["d"], domain=domain),
             oh.make_node("Add", ["x", "d"], ["y"])]
    return model(nodes, [dynamic("x")], [], [domain])


# y = sigmoid(x) * tanh(x) + x: one fused node in the full compile, four buffers unfused.
CHAIN = [oh.make_node("Sigmoid", ["x"], ["a"]), oh.make_node("Tanh", ["x"], ["b"]),
         oh.make_node("Mul", ["a", "b"], ["c"]), oh.make_node("Add", ["c", "x"], ["y"])]


def chain_expected(x):
    x64 = x.astype(np.float64)
    return 1 / (1 + np.exp(-x64)) * np.tanh(x64) + x64


def options(**kw):
    o = frame.SessionOptions()
    for k, v in kw.items():
        setattr(o, k, v)
    return o


@pytest.mark.parametrize("limit", ["max_memory_bytes", "max_cache_bytes"])
def test_a_first_seen_tier_that_does_not_fit_gives_way_to_the_full_compile(limit):
    # 256 KiB of input: the fused arena (~512 KiB) fits 600-700 KB, the unfused one does not.
    x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    bound = 600000 if limit == "max_memory_bytes" else 700000
    for tiered in (False, True):
        s = frame.InferenceSession(model(CHAIN, [dynamic("x")]),
                                   sess_options=options(tiered_compile=tiered, threads=1,
                                                        interpret_first_seen=False,
                                                        **{limit: bound}))
        for _ in range(5):
            np.testing.assert_allclose(s.run(None, {"x": x})[0], chain_expected(x), rtol=1e-5,
                                       atol=1e-6)
        st = s.cache_stats()
        assert (st["misses"], st["hits"], st["entries"]) == (1, 4, 1), (tiered, st)


def test_strict_mode_takes_the_full_compile_where_only_fusion_gives_a_kernel():
    d = nh.from_array(np.array(0.7, np.float32), "d")
    nodes = [oh.make_node("Mod", ["x", "d"], ["a"], fmod=1), oh.make_node("Relu", ["a"], ["b"]),
             oh.make_node("Add", ["b", "x"], ["y"])]
    x = np.linspace(-3, 3, 10).astype(np.float32)
    expected = np.maximum(np.fmod(x, np.float32(0.7)), 0) + x
    for tiered in (False, True):
        s = frame.InferenceSession(model(nodes, [dynamic("x")], [d]),
                                   sess_options=options(tiered_compile=tiered, strict=True,
                                                        backends=["onednn"]))
        for _ in range(2):
            np.testing.assert_allclose(s.run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)


def test_a_tier_up_racing_an_eviction_leaves_one_entry_per_key():
    # max_specializations = 1: while T1 compiles key K in full (a folded custom op sleeps in
    # it), T2 runs L (evicting K) and K again (a new first-seen entry). K must then hit.
    sleeping = threading.Event()

    def kernel(inputs, attrs):
        if threading.current_thread().name == "T1" and not sleeping.is_set():
            sleeping.set()
            time.sleep(0.5)
        return (inputs[0] * 2).astype(np.float32)

    s = frame.InferenceSession(doubled_constant_plus_x("test_tier_slow_fold", "test.tier", kernel),
                               sess_options=options(max_specializations=1))
    k, l = np.zeros(3, np.float32), np.zeros(5, np.float32)
    s.run(None, {"x": k})

    def t1():
        for _ in range(100000):  # until K's runs earn its full compile (which then sleeps)
            if sleeping.is_set():
                return
            s.run(None, {"x": k})

    def t2():
        assert sleeping.wait(30)
        s.run(None, {"x": l})
        s.run(None, {"x": k})

    threads = [threading.Thread(target=t1, name="T1"), threading.Thread(target=t2, name="T2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sleeping.is_set()
    before = s.cache_stats()["misses"]
    for _ in range(20):
        np.testing.assert_array_equal(s.run(None, {"x": k})[0], np.full(3, 2, np.float32))
    assert s.cache_stats()["misses"] - before <= 1
    assert s.cache_stats()["entries"] == 1


@pytest.mark.parametrize("interpret", [False, True])
def test_a_compile_that_runs_another_session_keeps_its_own_key(interpret):
    # The outer session's compile folds a custom op whose kernel runs another session on the
    # same thread (other key, other inputs): the outer entry is still filed under its own key.
    # Interpreted, the specialization that folds it runs the inner session the same way.
    inner = frame.InferenceSession(model([oh.make_node("Relu", ["u"], ["y"])], [dynamic("u")]))

    def kernel(inputs, attrs):
        inner.run(None, {"u": np.ones(7, np.float32)})
        return (inputs[0] * 2).astype(np.float32)

    outer = frame.InferenceSession(
        doubled_constant_plus_x(f"test_tier_reenter_{int(interpret)}",
                                f"test.reenter{int(interpret)}", kernel),
        sess_options=options(interpret_first_seen=interpret, background_compile=False))
    # Interpreted: the first run of 3; its second compiles (no compile timed yet, so the
    # estimate of one is 0) and its third hits; 7, never seen, is interpreted.
    for n in (3, 3, 3, 7) if interpret else (3, 7, 3, 7, 3, 7):
        np.testing.assert_array_equal(outer.run(None, {"x": np.zeros(n, np.float32)})[0],
                                      np.full(n, 2, np.float32))
    st = outer.cache_stats()
    expect = (1, 1, 1, 2) if interpret else (2, 4, 2, 0)
    assert (st["misses"], st["hits"], st["entries"], st["interpreted"]) == expect, st


def test_a_python_op_compiles_on_the_runs_path_not_in_the_background():
    # With one thread and a spare core the session compiles a recurring key on a background
    # thread (docs/adr/0007-first-seen-shapes.md), but a Python op's kernel refuses to run
    # there (it would take the GIL from a thread Python does not know): the background compile
    # fails and the key's next run compiles it on its own path, folding the op with the GIL.
    # Every output is x + 2 (the kernel doubles c = [1]). About 0.1 s.
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: no background compile")
    def kernel(inputs, attrs):
        return (inputs[0] * 2).astype(np.float32)

    sess = frame.InferenceSession(
        doubled_constant_plus_x("test_bg_python_op", "test.bgpy", kernel),
        sess_options=options(threads=1, background_compile=True))
    x = np.arange(5, dtype=np.float32)
    deadline = time.monotonic() + 20
    while sess.cache_stats()["misses"] == 0 and time.monotonic() < deadline:
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x + 2)
    st = sess.cache_stats()
    assert st["misses"] == 1 and st["background_compiles"] == 0, st
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x + 2)
