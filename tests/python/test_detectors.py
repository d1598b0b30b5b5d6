"""The torchvision detectors and a YOLO-style model with NMS in its graph (detectors.py),
exported with a dynamic image size and run by one InferenceSession each against PyTorch eager.

Per model one session runs, in order: a scene at the export size, a scene at another size, the
blank image (no detections) and a third scene at the export size; each result is matched
against PyTorch's by detectors.match. Exports (1.1 GB in all) are cached in
$FRAME_DETECTOR_CACHE, else build/detector_models. Cost on 2 shared cores: about 230 s with an
empty cache (exports about 85 s of it), 10-40 s per model, the ResNet-50 ones the most; slow,
so its own ctest entry with the `slow` label.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

import frame  # noqa: E402
import detectors  # noqa: E402
from conftest import SOURCE_DIR  # noqa: E402


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    env = os.environ.get("FRAME_DETECTOR_CACHE")
    if env:
        return env
    build = os.path.join(SOURCE_DIR, "build")
    if os.path.isdir(build):
        return os.path.join(build, "detector_models")
    return str(tmp_path_factory.mktemp("detector_models"))


def run_and_match(sess, feed_name, inputs, refs, output_names) -> None:
    failures = []
    for (label, img), ref in zip(inputs, refs):
        outs = sess.run(None, {feed_name: img})
        report, ok = detectors.match(ref, outs, output_names)
        if not ok:
            failures.append(f"{label}: {report}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", list(detectors.MODELS))
def test_detector_matches_pytorch(name, cache_dir):
    spec = detectors.MODELS[name]
    path = detectors.cached_export(name, cache_dir)
    assert detectors.onnx_output_names(path) == list(spec.outputs)
    (ha, wa), (hb, wb) = spec.sizes
    a, b, c = spec.scenes
    inputs = [(f"scene {a} {ha}x{wa}", detectors.image(a, ha, wa)),
              (f"scene {b} {hb}x{wb}", detectors.image(b, hb, wb)),
              (f"blank {ha}x{wa}", detectors.blank(name, ha, wa)),
              (f"scene {c} {ha}x{wa}", detectors.image(c, ha, wa))]
    refs = [detectors.reference(name, img) for _, img in inputs]
    # The premise: scenes give a handful of detections, the blank image none.
    counts = [len(r["scores"]) for r in refs]
    assert counts[2] == 0 and all(n >= 3 for n in counts[:2] + counts[3:]), counts

    sess = frame.InferenceSession(path)
    assert [i.name for i in sess.get_inputs()] == ["image"]
    run_and_match(sess, "image", inputs, refs, spec.outputs)


def test_yolo_like_nms_in_graph(tmp_path):
    path = str(tmp_path / "tiny_yolo.onnx")
    ref = detectors.yolo_like(path)
    inputs = [("scene 3 128x160", detectors.image(3, 128, 160)[None]),
              ("scene 2 96x128", detectors.image(2, 96, 128)[None]),
              ("zeros 128x160", np.zeros((1, 3, 128, 160), np.float32)),
              ("scene 4 128x160", detectors.image(4, 128, 160)[None])]
    refs = [ref(img) for _, img in inputs]
    counts = [len(r["scores"]) for r in refs]
    assert counts[2] == 0 and all(n >= 3 for n in counts[:2] + counts[3:]), counts

    sess = frame.InferenceSession(path)
    assert [o.name for o in sess.get_outputs()] == list(detectors.YOLO_OUTPUTS)
    run_and_match(sess, "images", inputs, refs, detectors.YOLO_OUTPUTS)
