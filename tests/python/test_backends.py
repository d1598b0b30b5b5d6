"""frame.backends() and the device groups of the compile report (CompileReport::device_groups:
runs of nodes intel_gpu keeps in device memory, copies only at their boundary)."""

from __future__ import annotations

import numpy as np
import pytest

import frame


def backend(name: str):
    return {b["name"]: b for b in frame.backends()}.get(name)


def require_intel_gpu() -> None:
    # As the C++ tests decide (find_backend, then unavailable_reason).
    b = backend("intel_gpu")
    if b is None:
        pytest.skip("intel_gpu is not in this build (no OpenCL headers)")
    if not b["available"]:
        pytest.skip(b["reason"])


def test_backends_lists_name_kind_and_availability():
    rows = frame.backends()
    names = [b["name"] for b in rows]
    assert names == sorted(set(names))
    cpu = backend("cpu")
    assert cpu == {"name": "cpu", "kind": "per-kernel", "available": True, "reason": ""}
    for b in rows:
        assert set(b) == {"name", "kind", "available", "reason"}
        assert b["kind"] in ("per-kernel", "device-groups", "whole-graph")
        assert b["available"] == (b["reason"] == "")
    # Every backend with a kernel is listed.
    assert {k["backend"] for k in frame.kernels()} <= set(names)


def relu_exp_graph():
    g = frame.Graph("relu_exp")
    x = g.input("x", "float32", [2, 4])
    r = g.add_node("relu", [x], name="r")
    e = g.add_node("exp", [r], name="e")
    g.output(e)
    return g, e.name


X = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
EXPECTED = np.exp(np.maximum(X.astype(np.float64), 0))


def check_group(group, out_name):
    assert group["backend"] == "intel_gpu"
    assert group["copies_in"] == ["x"]
    assert group["copies_out"] == [out_name]
    assert group["bytes_in"] == 2 * 4 * 4 and group["bytes_out"] == 2 * 4 * 4
    assert group["constants"] == 0 and group["constant_bytes"] == 0
    assert group["device_bytes"] >= 2 * 4 * 4


def test_relu_exp_on_intel_gpu_is_one_device_group():
    require_intel_gpu()
    g, out = relu_exp_graph()
    exe = frame.compile(g, backends=["intel_gpu", "cpu"])
    groups = exe.report()["device_groups"]
    assert len(groups) == 1, groups
    check_group(groups[0], out)
    (y,) = exe.run({"x": X}).values()
    np.testing.assert_allclose(y, EXPECTED, rtol=1e-5)
    # On cpu alone there is none.
    assert frame.compile(g, backends=["cpu"]).report()["device_groups"] == []


def test_session_report_has_the_device_group_of_both_nodes():
    require_intel_gpu()
    g, out = relu_exp_graph()
    opts = frame.SessionOptions()
    opts.backends = ["intel_gpu", "cpu"]
    opts.disabled_passes = ["operator-fusion"]  # relu and exp stay two nodes
    sess = frame.InferenceSession(g, sess_options=opts)
    assert sess.report() is None  # nothing compiled yet
    (y,) = sess.run(None, {"x": X})
    np.testing.assert_allclose(y, EXPECTED, rtol=1e-5)
    report = sess.report()
    assert [(p["node"], p["backend"]) for p in report["placements"]] == [("r", "intel_gpu"),
                                                                          ("e", "intel_gpu")]
    groups = report["device_groups"]
    assert len(groups) == 1, groups
    assert groups[0]["nodes"] == ["r", "e"]  # the relu output stays on the device
    check_group(groups[0], out)
