#!/usr/bin/env python3
"""PyTorch-eager ResNet-18 latency on the GPU, the baseline scripts/test_cuda.sh reports next
to frame's `--backend cuda,cpu` numbers (docs/backends/cuda.md, "Measured").

Usage: cuda_torch_baseline.py [--batches 1,32] [--runs 20]

Builds torchvision's resnet18(weights=None) when torchvision is importable, else the same
architecture written out here (BasicBlock x [2, 2, 2, 2]); eval mode, f32, no autocast, TF32
off (as frame's default). For each batch size: 5 warm-up runs, then the median of `runs`
timed runs, each ended by torch.cuda.synchronize(). Prints one line per batch size:
`torch_eager resnet18 batch B: M ms (median of R)`. Exits 2 without a CUDA device.
"""

import argparse
import statistics
import sys
import time

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for cout, stride in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                             (512, 1)]:
            blocks.append(BasicBlock(cin, cout, stride))
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def build():
    try:
        import torchvision
        return torchvision.models.resnet18(weights=None)
    except ImportError:
        return ResNet18()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", default="1,32")
    p.add_argument("--runs", type=int, default=20)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device for PyTorch")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    model = build().eval().cuda()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    with torch.no_grad():
        for b in [int(x) for x in a.batches.split(",")]:
            x = torch.randn(b, 3, 224, 224, device="cuda")
            for _ in range(5):
                model(x)
            torch.cuda.synchronize()
            times = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                model(x)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            print(f"torch_eager resnet18 batch {b}: {statistics.median(times) * 1e3:.3f} ms "
                  f"(median of {a.runs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
