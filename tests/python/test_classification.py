"""Which inputs a session binds per run (ADR 0006), on torch exports with dynamic axes.

A data input must never be taken for a shape-determining one: the session would bind its
values as constants and compile the model again for every new tensor. Each test exports a
small model the way users do (torch.onnx.export, opset 14, dynamic_axes), asserts the list
the session reports, that runs with new values of one shape compile once, and that the
outputs match PyTorch. Cost: about 5 s in all (torch import and four small exports).
"""

from __future__ import annotations

import numpy as np
import pytest

import frame

torch = pytest.importorskip("torch")
nn = torch.nn


def export(model, args, path, input_names, dynamic_axes):
    torch.manual_seed(0)
    model.eval()
    torch.onnx.export(model, args, str(path), input_names=input_names, output_names=["out"],
                      dynamic_axes=dynamic_axes, opset_version=14)
    return str(path)


def one_thread():
    opts = frame.SessionOptions()
    opts.intra_op_num_threads = 1
    # These tests count specializations (one per key); the interpreted tier would serve a
    # key's first runs without one.
    opts.interpret_first_seen = False
    return opts


class Audio(nn.Module):
    """A wav2vec-style front end: conv + GroupNorm (exported as InstanceNormalization between
    Reshapes of Shape(x)) over a dynamic time axis, then an encoder layer."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 16, 10, 5)
        self.norm = nn.GroupNorm(16, 16)
        self.conv2 = nn.Conv1d(16, 16, 3, 2)
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)

    def forward(self, waveform):
        x = nn.functional.gelu(self.norm(self.conv(waveform[:, None])))
        x = nn.functional.gelu(self.conv2(x))
        return self.enc(x.transpose(1, 2))


class Vision(nn.Module):
    """Conv, pooling and an upsampling back to the input size (Resize sized by Shape(x))."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, 2, 1)
        self.c2 = nn.Conv2d(8, 4, 1)

    def forward(self, image):
        y = self.c2(torch.relu(self.c1(image)))
        return nn.functional.interpolate(y, size=image.shape[-2:], mode="bilinear",
                                         align_corners=False)


class Text(nn.Module):
    """Token + position embeddings and an encoder layer over dynamic batch and sequence."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(50, 16)
        self.pos = nn.Embedding(64, 16)
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.enc(self.tok(ids) + self.pos(pos))


def check_stream(path, model, feeds_list, expect_compiles):
    sess = frame.InferenceSession(path, sess_options=one_thread())
    for feeds in feeds_list:
        (out,) = sess.run(None, {k: v for k, v in feeds.items()})
        with torch.no_grad():
            ref = model(*[torch.from_numpy(v) for v in feeds.values()]).numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(ref).max()))
    assert sess.cache_stats()["misses"] == expect_compiles
    return sess


def test_audio_waveform_is_data(tmp_path):
    model = Audio()
    path = export(model, (torch.randn(1, 400),), tmp_path / "audio.onnx", ["waveform"],
                  {"waveform": {0: "batch", 1: "samples"}, "out": {0: "batch", 1: "frames"}})
    assert frame.InferenceSession(path).shape_determining_inputs() == []
    rng = np.random.default_rng(0)
    waves = [{"waveform": rng.standard_normal((1, 400), dtype=np.float32)} for _ in range(3)]
    # Three waveforms of one shape: one specialization, not one per waveform.
    check_stream(path, model, waves, expect_compiles=1)


def test_vision_image_with_dynamic_size_is_data(tmp_path):
    model = Vision()
    path = export(model, (torch.randn(1, 3, 32, 32),), tmp_path / "vision.onnx", ["image"],
                  {"image": {2: "h", 3: "w"}, "out": {2: "h", 3: "w"}})
    assert frame.InferenceSession(path).shape_determining_inputs() == []
    rng = np.random.default_rng(1)
    images = [{"image": rng.standard_normal((1, 3, h, w), dtype=np.float32)}
              for h, w in ((32, 32), (24, 40), (32, 32))]
    check_stream(path, model, images, expect_compiles=2)


def test_text_ids_are_data(tmp_path):
    model = Text()
    path = export(model, (torch.zeros(2, 8, dtype=torch.int64),), tmp_path / "text.onnx",
                  ["ids"], {"ids": {0: "batch", 1: "seq"}, "out": {0: "batch", 1: "seq"}})
    assert frame.InferenceSession(path).shape_determining_inputs() == []
    rng = np.random.default_rng(2)
    ids = [{"ids": rng.integers(0, 50, (b, s), dtype=np.int64)} for b, s in ((2, 8), (2, 8), (1, 5))]
    check_stream(path, model, ids, expect_compiles=2)


def test_reshape_target_and_resize_sizes_are_marked(tmp_path):
    # Values that are shapes: a Reshape target and a Resize `sizes` fed as graph inputs.
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
        helper.make_node("Resize", ["img", "", "", "sizes"], ["z"], name="resize", mode="nearest"),
    ]
    graph = helper.make_graph(
        nodes, "shapes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("target", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 1, 2, 2]),
         helper.make_tensor_value_info("sizes", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    path = tmp_path / "shapes.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
                     .SerializeToString())
    sess = frame.InferenceSession(str(path), sess_options=one_thread())
    assert sess.shape_determining_inputs() == ["target", "sizes"]
    x = np.arange(6, dtype=np.float32)
    img = np.array([[[[1, 2], [3, 4]]]], dtype=np.float32)
    r, z = sess.run(None, {"x": x, "target": np.array([2, 3], dtype=np.int64), "img": img,
                           "sizes": np.array([1, 1, 4, 4], dtype=np.int64)})
    np.testing.assert_array_equal(r, x.reshape(2, 3))
    np.testing.assert_array_equal(z, img.repeat(2, axis=2).repeat(2, axis=3))
