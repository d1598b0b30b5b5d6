"""The torchvision detection models as test subjects: deterministic weights, ONNX exports and
PyTorch references, and a matcher of frame's detections against PyTorch's (test_detectors.py).

Random weights give degenerate detectors: the randomly initialised backbones shrink their
activations to ~1e-8 (every score then equals 1/num_classes or sigmoid(bias), all tied), and
the thresholds meant for trained models keep none or thousands of boxes. So `build`
(deterministic: torch.manual_seed(0) before construction, fixed calibration images):

1. sets every BatchNorm's running statistics to those of four synthetic scenes (one batch),
   so that features have unit scale;
2. remaps the last layer of the classification head, logits' = k * (logits - c) + prior
   (weight times k, bias k * (bias - c) + prior): c is the blank image's highest logit of
   each class (its lowest for the background class), so `blank()` scores at most the prior,
   and k makes the per-channel std of the scenes' logits `Spec.logit_std`;
3. sets the score threshold and the detection cap (detections_per_img) of `Spec`.

Nothing else changes (NMS thresholds, candidate counts, box coding, the other layers).

Zero detections: `blank()`, the model's normalisation mean in every pixel, which normalises to
an all-zero tensor; step 2 puts its best score at sigmoid(prior) (<= 0.011 here) or, for
softmax heads, below 1 / (1 + e^prior) (<= 0.05), far below the thresholds (0.2 to 0.5).

Detections: scenes vary a lot (some give none, some saturate at 1.0), so `Spec.scenes` names
seeds of `image()` found to give 3..20 detections each, with no score within 1e-3 of the
threshold or of the cap's cut, no two kept scores closer than 1e-4 and none above 0.9995.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import torch
import torchvision
from torchvision.models import detection

OPSET = 11


@dataclass(frozen=True)
class Spec:
    kwargs: Dict[str, object]
    sizes: Tuple[Tuple[int, int], Tuple[int, int]]  # (H, W): the export size, then another one
    logit_std: float  # std of the classification logits on the scenes (see _calibrate)
    prior: float  # the logit of the background class (softmax) or of every class (sigmoid)
    score_thresh: float
    detections: int  # detections_per_img
    outputs: Tuple[str, ...]  # the ONNX outputs in graph order (dict order of the model's result)
    scenes: Tuple[int, int, int]  # image() seeds: at sizes[0] (also the export), sizes[1], sizes[0]


_RCNN = ("boxes", "labels", "scores")
_ONE_STAGE = ("boxes", "scores", "labels")
# The ResNet-50 models resize every image to min_size 800 by default; 256 keeps CPU time low
# and is still a valid input (FPN strides up to 64 and the anchors fit). Fewer RPN proposals
# too: the box head is a 12544x1024 matmul per proposal (1000 by default).
_R50 = dict(min_size=256, max_size=320)
_R50_RPN = dict(rpn_pre_nms_top_n_test=500, rpn_post_nms_top_n_test=100, **_R50)

MODELS: Dict[str, Spec] = {
    "fasterrcnn_mobilenet_v3_large_320_fpn": Spec(
        dict(num_classes=5), ((320, 320), (256, 320)), 1.5, 3.0, 0.5, 20, _RCNN, (5, 2, 10)),
    "ssdlite320_mobilenet_v3_large": Spec(
        dict(num_classes=5), ((320, 320), (256, 320)), 1.0, 4.5, 0.5, 20, _ONE_STAGE,
        (7, 6, 5)),
    "retinanet_resnet50_fpn": Spec(
        dict(num_classes=5, **_R50), ((256, 256), (224, 288)), 1.5, -4.6, 0.5, 20, _ONE_STAGE,
        (9, 5, 11)),
    "fcos_resnet50_fpn": Spec(  # score sqrt(sigmoid(cls) * sigmoid(centerness)): lower
        dict(num_classes=5, **_R50), ((256, 256), (224, 288)), 3.5, -4.6, 0.4, 20, _ONE_STAGE,
        (2, 1, 3)),
    "ssd300_vgg16": Spec(
        dict(num_classes=5), ((300, 300), (256, 320)), 0.7, 4.5, 0.5, 20, _ONE_STAGE,
        (2, 3, 7)),
    "fasterrcnn_resnet50_fpn": Spec(
        dict(num_classes=5, **_R50_RPN), ((256, 256), (224, 288)), 2.0, 3.0, 0.5, 20, _RCNN,
        (8, 1, 11)),
    "maskrcnn_resnet50_fpn": Spec(
        dict(num_classes=5, **_R50_RPN), ((256, 256), (224, 288)), 3.0, 3.0, 0.5, 20,
        _RCNN + ("masks",), (3, 9, 5)),
    "keypointrcnn_resnet50_fpn": Spec(
        dict(num_classes=2, num_keypoints=5, **_R50_RPN), ((256, 256), (224, 288)), 4.0, 3.0,
        0.2, 20, _RCNN + ("keypoints", "keypoints_scores"), (7, 6, 5)),
}


def image(seed: int, h: int, w: int) -> np.ndarray:
    """A synthetic scene, 3xHxW float32 in [0, 1]: a blocky background and six flat
    rectangles, so that the detectors see edges and regions rather than white noise, under
    noise everywhere (flat regions give equal features, and equal scores at several boxes)."""
    rng = np.random.default_rng(seed)
    low = rng.random((3, h // 16 + 1, w // 16 + 1), dtype=np.float32)
    img = np.repeat(np.repeat(low, 16, 1), 16, 2)[:, :h, :w] * 0.5 + 0.25
    for _ in range(6):
        y0, x0 = rng.integers(0, h - 16), rng.integers(0, w - 16)
        y1, x1 = y0 + rng.integers(16, h // 2), x0 + rng.integers(16, w // 2)
        img[:, y0:y1, x0:x1] = rng.random((3, 1, 1), dtype=np.float32)
    img += rng.standard_normal((3, h, w), dtype=np.float32) * 0.05
    return np.clip(img, 0, 1).astype(np.float32)


def blank(name: str, h: int, w: int) -> np.ndarray:
    """The zero-detection input: the model's normalisation mean in every pixel."""
    return blank_image(build(name), h, w)


def blank_image(model: torch.nn.Module, h: int, w: int) -> np.ndarray:
    mean = np.array(model.transform.image_mean, np.float32)
    return np.ascontiguousarray(np.broadcast_to(mean[:, None, None], (3, h, w)))


def _cls_layers(model: torch.nn.Module) -> List[torch.nn.Module]:
    """The last layer of the classification head (one per feature level for SSD)."""
    if hasattr(model, "roi_heads"):
        return [model.roi_heads.box_predictor.cls_score]
    head = model.head.classification_head
    if hasattr(head, "cls_logits"):  # RetinaNet, FCOS
        return [head.cls_logits]
    return [b[-1] if isinstance(b, torch.nn.Sequential) else b for b in head.module_list]


def _postprocessor(model: torch.nn.Module) -> torch.nn.Module:
    return model.roi_heads if hasattr(model, "roi_heads") else model


@torch.no_grad()
def _calibrate(model: torch.nn.Module, spec: Spec) -> None:
    scenes = [torch.from_numpy(image(100 + i, *spec.sizes[0])) for i in range(4)]
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in norms:  # momentum None: the running stats become this batch's statistics
        m.reset_running_stats()
        m.momentum = None
        m.train()
    batch, _ = model.transform(scenes)
    features = model.backbone(batch.tensors)
    if isinstance(model, detection.ssd.SSD):  # SSDlite's head has BatchNorms too
        model.head(list(features.values()))
    model.eval()

    # The last classification layer, remapped: logits' = k * (logits - c) + prior, where c is
    # the blank image's highest logit of each class (lowest for the background): the blank
    # then scores at most the prior (the background's probability at least that of the prior),
    # and k makes the mean per-channel std of the scenes' logits logit_std.
    layers = _cls_layers(model)
    blank_logits = _logits(model, layers, [torch.from_numpy(blank_image(model, *spec.sizes[0]))])
    scene_logits = _logits(model, layers, scenes)
    softmax = hasattr(model, "roi_heads") or isinstance(model, detection.ssd.SSD)
    for layer, b, s in zip(layers, blank_logits, scene_logits):
        prior = torch.full((b.shape[0],), spec.prior)
        center = b.max(dim=1).values
        if softmax:  # channels: anchor-major blocks of num_classes, class 0 the background
            background = torch.arange(b.shape[0]) % _num_classes(model) == 0
            center = torch.where(background, b.min(dim=1).values, center)
            prior = torch.where(background, prior, torch.zeros_like(prior))
        k = spec.logit_std / float(s.std(dim=1).mean())
        layer.weight.mul_(k)
        layer.bias.copy_(k * (layer.bias - center) + prior)


def _num_classes(model: torch.nn.Module) -> int:
    if hasattr(model, "roi_heads"):
        return model.roi_heads.box_predictor.cls_score.out_features
    return model.head.classification_head.num_columns


def _logits(model, layers, images) -> List[torch.Tensor]:
    """The outputs of `layers` when `model` runs on `images`: per layer, [channels, values]
    (a layer may run once per feature level)."""
    out: List[List[torch.Tensor]] = [[] for _ in layers]
    hooks = [layer.register_forward_hook(lambda mod, inp, o, i=i: out[i].append(o.detach()))
             for i, layer in enumerate(layers)]
    post = _postprocessor(model)
    saved, post.score_thresh = post.score_thresh, 1.0  # no detections: only the logits matter
    try:
        with torch.no_grad(), _fast_linear():
            model(images)
    finally:
        post.score_thresh = saved
        for h in hooks:
            h.remove()
    return [torch.cat([o.transpose(0, 1).reshape(o.shape[1], -1) for o in outs], 1)
            for outs in out]


@functools.lru_cache(maxsize=None)
def build(name: str) -> torch.nn.Module:
    spec = MODELS[name]
    torch.manual_seed(0)
    model = getattr(detection, name)(weights=None, weights_backbone=None, **spec.kwargs)
    if isinstance(model, detection.FCOS):
        # A box side lies relu(regression) anchor sizes from the anchor's centre: zero-mean
        # outputs make many boxes zero-width or zero-height. A bias of 1: about twice the anchor.
        with torch.no_grad():
            model.head.regression_head.bbox_reg.bias.fill_(1.0)
    _calibrate(model.eval(), spec)
    post = _postprocessor(model)
    post.score_thresh = spec.score_thresh
    post.detections_per_img = spec.detections
    return model.eval()


# Debian's torch uses the reference BLAS: a Linear layer runs at ~1 GFLOP/s (2 s per Faster
# R-CNN box head). The same product as a 1x1 convolution goes through oneDNN, ~20x faster.
# Used for the eager references only, never while exporting (the graph keeps its Gemm).
_linear = torch.nn.functional.linear


def _linear_as_conv(x, weight, bias=None):
    if x.dim() != 2:
        return _linear(x, weight, bias)
    return torch.nn.functional.conv2d(x[:, :, None, None], weight[:, :, None, None],
                                      bias)[:, :, 0, 0]


@contextlib.contextmanager
def _fast_linear():
    torch.nn.functional.linear = _linear_as_conv
    try:
        yield
    finally:
        torch.nn.functional.linear = _linear


def reference(name: str, img: np.ndarray) -> Dict[str, np.ndarray]:
    """PyTorch eager detections for a 3xHxW float32 image, in the model's dict order."""
    with torch.no_grad(), _fast_linear():
        (out,) = build(name)([torch.from_numpy(np.ascontiguousarray(img, np.float32))])
    return {k: v.numpy() for k, v in out.items()}


def export(name: str, path: str, opset: int = OPSET) -> str:
    """Exports `name` with a dynamic image size (input 'image', 3xHxW); skipped when `path`
    exists."""
    if os.path.exists(path):
        return path
    model = build(name)
    spec = MODELS[name]
    img = torch.from_numpy(image(spec.scenes[0], *spec.sizes[0]))  # traced with detections
    tmp = f"{path}.{os.getpid()}.tmp"
    with torch.no_grad():
        torch.onnx.export(model, ([img],), tmp, opset_version=opset, input_names=["image"],
                          dynamic_axes={"image": [1, 2]})
    os.replace(tmp, path)  # a killed export leaves no file that looks complete
    return path


def cached_export(name: str, cache_dir: str, opset: int = OPSET) -> str:
    """`export` into `cache_dir`, under a name that changes with this file, the opset and the
    torch and torchvision versions."""
    with open(__file__, "rb") as f:
        source = f.read()
    key = repr((name, opset, torch.__version__, torchvision.__version__, source))
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, f"{name}-{digest}.onnx")
    if not os.path.exists(path):  # drop stale exports of the model (up to 240 MB each)
        stale = re.compile(re.escape(name) + r"-[0-9a-f]{10}\.onnx")
        for f in os.listdir(cache_dir):
            if stale.fullmatch(f):
                os.remove(os.path.join(cache_dir, f))
    return export(name, path, opset)


_ONNX_KIND = {  # (elem type, rank) of each output torchvision returns
    (1, 2): "boxes", (7, 1): "labels", (1, 1): "scores", (1, 4): "masks", (1, 3): "keypoints",
}


def onnx_output_names(path: str) -> List[str]:
    """The outputs of an exported detector named from their types (torch names them by
    number): boxes float [N,4], labels int64 [N], scores float [N], masks float [N,1,H,W],
    keypoints float [N,K,3], keypoints_scores float [N,K] (after keypoints)."""
    import onnx

    names: List[str] = []
    for out in onnx.load(path, load_external_data=False).graph.output:
        t = out.type.tensor_type
        rank = len(t.shape.dim)
        if t.elem_type == 1 and rank == 2 and "keypoints" in names:
            names.append("keypoints_scores")
        else:
            names.append(_ONNX_KIND.get((t.elem_type, rank), f"?{t.elem_type}/{rank}"))
    return names


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of a [N,4] against every box of b [M,4] (x1, y1, x2, y2)."""
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    def area(x):
        return np.prod(np.clip(x[:, 2:] - x[:, :2], 0, None), axis=1)

    union = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def match(expected: Dict[str, np.ndarray], actual_list: Sequence[np.ndarray],
          output_names: Sequence[str], iou_min: float = 0.99, score_rtol: float = 1e-3,
          score_atol: float = 1e-4, box_rtol: float = 1e-3, box_atol: float = 1e-2,
          mask_agree: float = 0.999) -> Tuple[str, bool]:
    """frame's outputs (`actual_list`, in graph order, named by `output_names`) against
    PyTorch's: the same number of detections, each PyTorch detection paired with an unpaired
    one of the same label at IoU >= iou_min, scores, boxes and keypoints within tolerance,
    masks (thresholded at 0.5) equal in mask_agree of the pixels. Scores use BUILD-011's
    deep-network class for f32 (|a - e| <= 1e-4 + 1e-3 |e|). Returns (report, ok)."""
    if len(actual_list) != len(output_names):
        return f"{len(actual_list)} outputs, expected {len(output_names)}", False
    actual = {k: np.asarray(v) for k, v in zip(output_names, actual_list)}
    lines: List[str] = []
    for k, v in actual.items():
        e = expected.get(k)
        if e is None:
            lines.append(f"output {k}: not in the reference")
        elif v.dtype != e.dtype or v.ndim != e.ndim or v.shape[1:] != e.shape[1:]:
            lines.append(f"output {k}: {v.dtype}{list(v.shape)}, expected {e.dtype}{list(e.shape)}")
    n_exp, n_act = len(expected["scores"]), len(actual.get("scores", ()))
    if n_exp != n_act:
        lines.append(f"{n_act} detections, expected {n_exp}")
    if lines:
        lines.append(f"expected scores {np.round(expected['scores'], 5).tolist()}, "
                     f"actual {np.round(actual.get('scores', np.zeros(0)), 5).tolist()}")
        return "\n".join(lines), False
    iou = _iou(expected["boxes"], actual["boxes"]) if n_exp else np.zeros((0, 0))
    free = np.ones(n_act, bool)
    worst = dict(score=0.0, box=0.0, iou=1.0, mask=1.0, kp=0.0)
    for i in range(n_exp):
        same = free & (actual["labels"] == expected["labels"][i])
        cand = np.where(same, iou[i], -1.0)
        # A zero-area box has IoU 0 with itself: such a pair matches by coordinates.
        close = same & np.all(np.isclose(actual["boxes"], expected["boxes"][i], rtol=box_rtol,
                                         atol=box_atol), axis=1)
        cand = np.where(close, np.maximum(cand, 1.0), cand)
        j = int(np.argmax(cand)) if n_act else -1
        if j < 0 or cand[j] < iou_min:
            lines.append(f"detection {i} (label {expected['labels'][i]}, score "
                         f"{expected['scores'][i]:.5f}, box {np.round(expected['boxes'][i], 2)})"
                         f": no match (best IoU {max(cand.max(initial=-1), 0):.4f})")
            continue
        free[j] = False
        worst["iou"] = min(worst["iou"], float(cand[j]))
        es, as_ = float(expected["scores"][i]), float(actual["scores"][j])
        rel = abs(es - as_) / max(abs(es), 1e-12)
        worst["score"] = max(worst["score"], rel)
        if abs(es - as_) > score_atol + score_rtol * abs(es):
            lines.append(f"detection {i}: score {as_:.6f}, expected {es:.6f}")
        eb, ab = expected["boxes"][i], actual["boxes"][j]
        worst["box"] = max(worst["box"], float(np.abs(eb - ab).max()))
        if not np.allclose(ab, eb, rtol=box_rtol, atol=box_atol):
            lines.append(f"detection {i}: box {np.round(ab, 3)}, expected {np.round(eb, 3)}")
        if "keypoints" in expected:
            ek, ak = expected["keypoints"][i], actual["keypoints"][j]
            worst["kp"] = max(worst["kp"], float(np.abs(ek - ak).max()))
            if not np.allclose(ak, ek, rtol=box_rtol, atol=box_atol):
                lines.append(f"detection {i}: keypoints {np.round(ak, 2).tolist()}, expected "
                             f"{np.round(ek, 2).tolist()}")
            es_k, as_k = expected["keypoints_scores"][i], actual["keypoints_scores"][j]
            if not np.allclose(as_k, es_k, rtol=score_rtol,
                               atol=score_rtol * max(1.0, float(np.abs(es_k).max()))):
                lines.append(f"detection {i}: keypoint scores {np.round(as_k, 4).tolist()}, "
                             f"expected {np.round(es_k, 4).tolist()}")
        if "masks" in expected:
            em, am = expected["masks"][i] > 0.5, actual["masks"][j] > 0.5
            if em.shape != am.shape:
                lines.append(f"detection {i}: mask {am.shape}, expected {em.shape}")
                continue
            agree = float((em == am).mean())
            worst["mask"] = min(worst["mask"], agree)
            if agree < mask_agree:
                lines.append(f"detection {i}: mask agrees in {agree:.5f} of the pixels")
    ok = not lines
    summary = (f"{n_exp} detections; worst IoU {worst['iou']:.5f}, score rel {worst['score']:.2e}"
               f", box abs {worst['box']:.2e}")
    if "keypoints" in expected:
        summary += f", keypoint abs {worst['kp']:.2e}"
    if "masks" in expected:
        summary += f", mask agreement {worst['mask']:.5f}"
    return "\n".join([summary] + lines), ok


# A YOLO-style detector whose NMS is in the exported graph.
YOLO_OUTPUTS = ("boxes", "scores", "labels")


class TinyYolo(torch.nn.Module):
    """Three stride-2 convs, a 1x1 head of 3 anchors x (4 box + 1 objectness + 3 classes),
    YOLOv3 decoding, a score threshold and class-aware NMS (batched_nms), at most 20 boxes.
    Input 'images' 1x3xHxW (H, W multiples of 8). The convs have no bias, so an all-zero image
    gives the head its bias alone, objectness sigmoid(-6): no detections."""

    anchors = ((16.0, 16.0), (32.0, 24.0), (24.0, 40.0))
    num_classes = 3
    stride = 8

    def __init__(self, score_thresh: float = 0.5, iou_thresh: float = 0.45,
                 max_det: int = 20, logit_std: float = 2.0):
        super().__init__()
        torch.manual_seed(0)
        c = torch.nn.Conv2d
        self.backbone = torch.nn.Sequential(
            c(3, 16, 3, 2, 1, bias=False), torch.nn.ReLU(),
            c(16, 32, 3, 2, 1, bias=False), torch.nn.ReLU(),
            c(32, 32, 3, 2, 1, bias=False), torch.nn.ReLU())
        per = 5 + self.num_classes
        self.head = c(32, len(self.anchors) * per, 1)
        with torch.no_grad():
            for m in self.backbone:
                if isinstance(m, c):
                    torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            self.head.bias.zero_()
            self.head.bias.view(len(self.anchors), per)[:, 4] = -6.0  # objectness prior
            # Logits of std logit_std on a scene (see detectors.py's docstring for why).
            x = self.backbone(torch.from_numpy(image(100, 64, 64))[None])
            self.head.weight.mul_(logit_std / float(torch.nn.functional.conv2d(
                x, self.head.weight).std()))
        self.score_thresh, self.iou_thresh, self.max_det = score_thresh, iou_thresh, max_det

    def forward(self, images: torch.Tensor):
        p = self.head(self.backbone(images))  # 1, A*(5+C), h, w
        a, per = len(self.anchors), 5 + self.num_classes
        h, w = p.shape[2], p.shape[3]
        p = p.reshape(a, per, h, w).permute(0, 2, 3, 1)  # A, h, w, 5+C
        gy, gx = torch.meshgrid(torch.arange(h, dtype=torch.float32),
                                torch.arange(w, dtype=torch.float32), indexing="ij")
        anchor = torch.tensor(self.anchors).reshape(a, 1, 1, 2)
        xy = (torch.sigmoid(p[..., :2]) + torch.stack([gx, gy], -1)) * self.stride
        wh = torch.exp(p[..., 2:4].clamp(max=4.0)) * anchor
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], -1).reshape(-1, 4)
        cls = torch.sigmoid(p[..., 5:]).reshape(-1, self.num_classes)
        best, labels = cls.max(1)
        scores = torch.sigmoid(p[..., 4]).reshape(-1) * best
        keep = torch.where(scores > self.score_thresh)[0]
        boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
        keep = torchvision.ops.batched_nms(boxes, scores, labels, self.iou_thresh)
        keep = keep[: self.max_det]
        return boxes[keep], scores[keep], labels[keep]


def yolo_like(path: str) -> Callable[[np.ndarray], Dict[str, np.ndarray]]:
    """Exports TinyYolo to `path` (input 'images' 1x3xHxW, H and W dynamic; outputs boxes,
    scores, labels; skipped when `path` exists) and returns its PyTorch reference, a function
    of a 1x3xHxW image giving {'boxes', 'scores', 'labels'}."""
    model = TinyYolo().eval()
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with torch.no_grad():
            torch.onnx.export(model, (torch.from_numpy(image(0, 128, 160))[None],), tmp,
                              opset_version=OPSET, input_names=["images"],
                              output_names=list(YOLO_OUTPUTS),
                              dynamic_axes={"images": [2, 3]})
        os.replace(tmp, path)

    def ref(img: np.ndarray) -> Dict[str, np.ndarray]:
        with torch.no_grad():
            out = model(torch.from_numpy(np.ascontiguousarray(img, np.float32)))
        return {k: v.numpy() for k, v in zip(YOLO_OUTPUTS, out)}

    return ref
