#!/usr/bin/python3
"""Exports the real-model set (PyTorch -> ONNX) used by frame's model tests and benchmarks.

Usage: export_models.py --out DIR [--only NAME[,NAME...]] [--opset N]

For each model writes DIR/<name>.onnx, DIR/<name>.input.npy (fixed-seed input)
and DIR/<name>.expected.npy (PyTorch eager output for that input), checks the
file with onnx.checker and prints the op types it contains.

Models (all eval mode, torch.manual_seed(0) before each is built):
  mlp          784-512-512-10 with ReLU, input f32[64,784]
  resnet18     torchvision resnet18(weights=None), input f32[1,3,224,224]
  transformer  nn.TransformerEncoderLayer(256, 4, 1024, dropout=0, batch_first), f32[1,128,256]
  cnn          two Conv-BatchNorm-ReLU-MaxPool blocks + linear head, input f32[2,3,64,64]
  mobilenet_v2 torchvision mobilenet_v2(weights=None), convs re-initialized fan-in (depthwise
               convs), input f32[1,3,224,224]

Eval-mode export folds BatchNormalization into the preceding Conv, so the
resnet18 and cnn graphs contain no BatchNormalization node.
"""

import argparse
import collections
import os
import sys
import time

import numpy as np
import onnx
import torch
from torch import nn

DEFAULT_OPSET = 14


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                 nn.Linear(512, 10))

    def forward(self, x):
        return self.net(x)


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                    nn.ReLU(), nn.MaxPool2d(2)]

        self.features = nn.Sequential(*block(3, 16), *block(16, 32))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.head(self.features(x))


def build_mlp():
    return Mlp(), (64, 784)


def build_resnet18():
    import torchvision
    return torchvision.models.resnet18(weights=None), (1, 3, 224, 224)


def build_mobilenet_v2():
    import torchvision
    model = torchvision.models.mobilenet_v2(weights=None)
    # torchvision's fan-out init shrinks every depthwise conv by ~sqrt(channels): the random
    # model's output would be ~1e-9, below any absolute tolerance. Fan-in keeps it ~1.
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
    return model, (1, 3, 224, 224)


def build_transformer():
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                       batch_first=True)
    return layer, (1, 128, 256)


def randomize_batch_norms(model):
    """Gives every BatchNorm2d of `model` non-trivial statistics and affine parameters, so a
    folded BatchNorm actually changes values (draws from torch's global generator)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)


def build_cnn():
    model = SmallCnn()
    randomize_batch_norms(model)
    return model, (2, 3, 64, 64)


MODELS = collections.OrderedDict([
    ("mlp", build_mlp),
    ("resnet18", build_resnet18),
    ("transformer", build_transformer),
    ("cnn", build_cnn),
    ("mobilenet_v2", build_mobilenet_v2),
])


def op_counts(model):
    """Counter of op types in the main graph (domain-qualified outside the default domain)."""
    return collections.Counter(
        n.op_type if n.domain in ("", "ai.onnx") else n.domain + "::" + n.op_type
        for n in model.graph.node)


def export_one(name, out_dir, opset):
    torch.manual_seed(0)
    model, in_shape = MODELS[name]()
    model.eval()
    # A separate generator keeps the input independent of how many weights were drawn.
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(*in_shape, generator=gen)

    with torch.no_grad():
        expected = model(x)
    if name == "transformer":
        # Under no_grad torch 1.13 runs the fused encoder kernel; export traces the composite
        # path (grad enabled), so check both agree before trusting `expected`.
        composite = model(x).detach()
        diff = float((composite - expected).abs().max())
        if diff > 1e-4:
            raise RuntimeError("transformer fast path and composite path differ by %g" % diff)

    path = os.path.join(out_dir, name + ".onnx")
    start = time.time()
    torch.onnx.export(model, (x,), path, opset_version=opset, do_constant_folding=True,
                      input_names=["input"], output_names=["output"])
    export_s = time.time() - start

    onnx_model = onnx.load(path)
    onnx.checker.check_model(onnx_model, full_check=True)
    np.save(os.path.join(out_dir, name + ".input.npy"), x.numpy())
    np.save(os.path.join(out_dir, name + ".expected.npy"), expected.numpy())

    counts = op_counts(onnx_model)
    print("%s: exported in %.1f s, %d bytes, opset %d, input %s -> output %s" %
          (name, export_s, os.path.getsize(path), opset, list(in_shape),
           list(expected.shape)))
    print("  %d nodes: %s" % (sum(counts.values()),
                              ", ".join("%s x%d" % (op, n) for op, n in sorted(counts.items()))))
    return counts


def main():
    parser = argparse.ArgumentParser(description="Export PyTorch models to ONNX for frame.")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--only", default=None,
                        help="comma-separated subset of: " + ", ".join(MODELS))
    parser.add_argument("--opset", type=int, default=DEFAULT_OPSET, choices=(13, 14))
    args = parser.parse_args()

    names = list(MODELS) if args.only is None else [n.strip() for n in args.only.split(",")]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error("unknown model(s) %s; choose from %s" % (unknown, ", ".join(MODELS)))
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(min(2, os.cpu_count() or 1))

    total = time.time()
    for name in names:
        export_one(name, args.out, args.opset)
    print("total %.1f s" % (time.time() - total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
