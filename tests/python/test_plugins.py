"""frame.load_plugin (runtime::load_plugin) with the test plugins of tests/plugins, whose
directory ctest passes as FRAME_TEST_PLUGIN_DIR (by hand: build/test_plugins)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import frame
from conftest import SOURCE_DIR, vinfo

PLUGIN_DIR = os.environ.get("FRAME_TEST_PLUGIN_DIR",
                            os.path.join(SOURCE_DIR, "build", "test_plugins"))


def plugin(name: str) -> str:
    path = os.path.join(PLUGIN_DIR, f"libframe_test_{name}.so")
    if "FRAME_TEST_PLUGIN_DIR" not in os.environ and not os.path.exists(path):
        pytest.skip(f"{path} is not built (ctest sets FRAME_TEST_PLUGIN_DIR)")
    assert os.path.exists(path), path
    return path


def registry() -> tuple:
    return ([o["name"] for o in frame.ops()], [(k["op"], k["backend"]) for k in frame.kernels()])


def test_good_plugin_adds_an_op_that_runs():
    path = plugin("good_plugin")
    assert "plugin_swish" not in registry()[0]
    info = frame.load_plugin(path)
    assert info == {"path": path, "ops": ["plugin_swish"], "kernels": ["plugin_swish@cpu"],
                    "patterns": 0}
    ops, kernels = registry()
    assert "plugin_swish" in ops and ("plugin_swish", "cpu") in kernels
    assert frame.load_plugin(path)["ops"] == []  # loaded already: adds nothing, succeeds

    x = np.linspace(-4, 4, 12, dtype=np.float32).reshape(3, 4)
    expected = x / (1 + np.exp(-x.astype(np.float64)))
    g = frame.Graph("swish")
    v = g.input("x", "float32", [3, 4])
    g.output(g.add_node("plugin_swish", [v]))
    (y,) = frame.compile(g, backends=["cpu"]).run({"x": x}).values()
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)
    # The plugin's ONNX mapping: com.frame.test::Swish.
    graph = helper.make_graph([helper.make_node("Swish", ["x"], ["y"], domain="com.frame.test")],
                              "swish", [vinfo("x", TensorProto.FLOAT, [3, 4])],
                              [vinfo("y", TensorProto.FLOAT, [3, 4])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.frame.test", 1)])
    (y,) = frame.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,exc,message", [
    ("dup_plugin", ValueError, "op 'relu': duplicate name"),
    ("bad_name_plugin", ValueError, "op 'PluginBadName': illegal name (ARCH-040"),
])
def test_refused_plugin_raises_and_leaves_the_registry_unchanged(name, exc, message):
    path = plugin(name)
    before = registry()
    with pytest.raises(exc) as e:
        frame.load_plugin(path)
    assert path in str(e.value) and message in str(e.value), str(e.value)
    assert registry() == before
    assert "plugin_dup_first" not in before[0]


def test_missing_or_unloadable_plugin(tmp_path):
    missing = str(tmp_path / "libnothing.so")
    with pytest.raises(FileNotFoundError, match=f"plugin '{missing}': no such file"):
        frame.load_plugin(missing)
    junk = tmp_path / "junk.so"
    junk.write_text("not an ELF file")
    with pytest.raises(ValueError, match="cannot load"):
        frame.load_plugin(str(junk))
    with pytest.raises(ValueError):
        frame.load_plugin(str(tmp_path))  # a directory
