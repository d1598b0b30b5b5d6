"""Convolutions of a first-seen input size (docs/adr/0007-first-seen-shapes.md; the interpreted
tier runs them without a oneDNN primitive: docs/backends/onednn.md, "A first-seen shape's conv
without a primitive") against PyTorch's conv1d / conv2d on a stream of sizes, each fed once and
some fed again (those run compiled): pointwise, depthwise with strides 1 and 2 and a channel
multiplier, grouped, dilated past the map (ASPP-style), SAME_UPPER auto_pad and asymmetric
pads, with and without bias. Expected values: torch.nn.functional, computed here. About 2 s."""

import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import frame

RNG = np.random.default_rng(7)


def weights(shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


# (name, C in, W shape, attributes, bias): each conv reads the model input x [1, 6, H, W].
CONVS = [
    ("pointwise", (10, 6, 1, 1), {}, True),
    ("depthwise", (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}, True),
    ("depthwise_s2", (6, 1, 5, 5), {"group": 6, "strides": [2, 2], "pads": [2, 2, 2, 2]}, False),
    ("depthwise_x2", (12, 1, 3, 3), {"group": 6, "strides": [2, 1], "pads": [1, 0, 1, 2]}, True),
    ("grouped", (8, 3, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, True),
    ("aspp", (5, 6, 3, 3), {"dilations": [6, 6], "pads": [6, 6, 6, 6]}, True),
    ("dilated", (4, 6, 3, 3), {"dilations": [3, 3], "pads": [3, 3, 3, 3], "strides": [2, 2]}, False),
    ("same_upper", (7, 6, 4, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, True),
    ("asymmetric", (3, 6, 3, 3), {"pads": [2, 0, 0, 3]}, True),
]


def conv_model():
    nodes, inits, outs = [], [], []
    for name, wshape, attrs, bias in CONVS:
        w = weights(wshape)
        inits.append(numpy_helper.from_array(w, name + "_w"))
        ins = ["x", name + "_w"]
        if bias:
            inits.append(numpy_helper.from_array(weights((wshape[0],)), name + "_b"))
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [name], **attrs))
        outs.append(helper.make_tensor_value_info(name, TP.FLOAT, None))
    # A 1-d conv over the rows of x flattened: [1, 6, H * W], kernel 5, stride 3, dilation 2.
    inits.append(numpy_helper.from_array(np.array([1, 6, -1], np.int64), "flat_shape"))
    inits.append(numpy_helper.from_array(weights((4, 6, 5)), "c1_w"))
    nodes.append(helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]))
    nodes.append(helper.make_node("Conv", ["flat", "c1_w"], ["conv1d"], strides=[3],
                                  dilations=[2], pads=[4, 1]))
    outs.append(helper.make_tensor_value_info("conv1d", TP.FLOAT, None))
    g = helper.make_graph(nodes, "convs",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [1, 6, "H", "W"])],
                          outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, {i.name: numpy_helper.to_array(i) for i in inits}


def reference(x, inits):
    xt = torch.from_numpy(x)
    want = {}
    for name, wshape, attrs, bias in CONVS:
        w = torch.from_numpy(inits[name + "_w"].copy())
        b = torch.from_numpy(inits[name + "_b"].copy()) if bias else None
        strides = attrs.get("strides", [1, 1])
        dil = attrs.get("dilations", [1, 1])
        if attrs.get("auto_pad") == "SAME_UPPER":
            pads = []
            for d in range(2):
                size = x.shape[2 + d]
                out = -(-size // strides[d])
                total = max((out - 1) * strides[d] + (wshape[2 + d] - 1) * dil[d] + 1 - size, 0)
                pads.append((total // 2, total - total // 2))
            (top, bottom), (left, right) = pads
        else:
            top, left, bottom, right = attrs.get("pads", [0, 0, 0, 0])
        xp = F.pad(xt, (left, right, top, bottom))
        want[name] = F.conv2d(xp, w, b, stride=strides, dilation=dil,
                              groups=attrs.get("group", 1)).numpy()
    flat = xt.reshape(1, 6, -1)
    want["conv1d"] = F.conv1d(F.pad(flat, (4, 1)), torch.from_numpy(inits["c1_w"].copy()), stride=3,
                              dilation=2).numpy()
    return want


def test_first_seen_convs_match_torch_on_a_stream_of_sizes():
    m, inits = conv_model()
    sess = frame.InferenceSession(m.SerializeToString())
    sizes = [(7, 9), (16, 12), (5, 5), (13, 31), (16, 12), (8, 40), (7, 9), (20, 6), (3, 4)]
    names = [c[0] for c in CONVS] + ["conv1d"]
    for h, w in sizes:
        x = RNG.standard_normal((1, 6, h, w)).astype(np.float32)
        got = sess.run(names, {"x": x})
        want = reference(x, inits)
        for name, g in zip(names, got):
            r = want[name]
            assert g.shape == r.shape, (name, h, w)
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(r).max()),
                                       err_msg=f"{name} at {h}x{w}")
    stats = sess.cache_stats()
    assert stats["interpreted"] >= 3  # first-seen sizes went through the interpreted tier
