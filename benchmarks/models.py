"""The benchmark model set (PyTorch modules, fixed seeds, static shapes).

Shared by compare.py (export to ONNX, reference outputs) and drivers/torch_driver.py (PyTorch
eager timing), so both build bit-identical weights: torch.manual_seed(0) before each model
is built, inputs from a separate generator seeded 1234. mlp, resnet18 and transformer come
from scripts/export_models.py (the real-model test set) unchanged.
"""

import collections
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import export_models  # noqa: E402  (scripts/ is not a package)

OPSET = export_models.DEFAULT_OPSET


class ConvBnRelu3(nn.Module):
    """3x (conv3x3 64->64, padding 1, no bias + BatchNorm + ReLU)."""

    def __init__(self):
        super().__init__()
        layers = []
        for _ in range(3):
            layers += [nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
        self.net = nn.Sequential(*layers)
        export_models.randomize_batch_norms(self)  # so folding BN changes values

    def forward(self, x):
        return self.net(x)


class GeluBiasRelu(nn.Module):
    """relu(gelu_tanh(x) + bias) on [1024, 4096]: one elementwise chain (tanh-GELU exports as
    Pow/Mul/Add/Tanh at opset 14)."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(4096) * 0.1)

    def forward(self, x):
        return torch.relu(nn.functional.gelu(x, approximate="tanh") + self.bias)


class GptBlock(nn.Module):
    """A GPT-2 decoder block: pre-LayerNorm causal self-attention and a 4x tanh-GELU MLP,
    each with a residual add. d_model 512, 8 heads, sequence 128, batch 1."""

    def __init__(self, d=512, heads=8, seq=128):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(d // heads)  # a Python constant, not traced
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def build_conv3():
    return ConvBnRelu3(), (1, 64, 56, 56)


def build_gelu():
    return GeluBiasRelu(), (1024, 4096)


def build_mobilenet_v2():
    """torchvision MobileNet-V2 (unchanged architecture, weights=None) with batch-norm running
    statistics calibrated on random inputs and the classifier re-initialised, so that in eval
    mode every block's activations and the logits are O(1). With torchvision's initialisation
    alone (running mean 0, var 1; depthwise convs drawn with kaiming fan_out = 9 * channels,
    about sqrt(channels) too small each; classifier N(0, 0.01)) the logits are ~1e-9, and an
    all-zero output would pass any absolute tolerance."""
    import torchvision
    model = torchvision.models.mobilenet_v2(weights=None)
    calib = torch.Generator().manual_seed(4321)  # calibration batch, not the benchmark input
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None  # cumulative average: running stats = the calibration batch's
        model.features.train()
        model.features(torch.randn(8, 3, 224, 224, generator=calib))
        classifier = model.classifier[1]
        nn.init.normal_(classifier.weight, std=4.0 / math.sqrt(classifier.in_features))
        nn.init.normal_(classifier.bias, std=0.1)
    return model, (1, 3, 224, 224)


def build_gpt_block():
    return GptBlock(), (1, 128, 512)


# name -> (builder, description for the results table)
MODELS = collections.OrderedDict([
    ("mlp", (export_models.build_mlp, "MLP 784-512-512-10, batch 64")),
    ("resnet18", (export_models.build_resnet18, "ResNet-18, 1x3x224x224")),
    ("transformer", (export_models.build_transformer,
                     "TransformerEncoderLayer d256 h4 ff1024, 1x128")),
    ("conv3", (build_conv3, "3x (conv3x3 64ch + BN + ReLU), 1x64x56x56")),
    ("gelu", (build_gelu, "tanh-GELU + bias + ReLU on 1024x4096")),
    ("mobilenet_v2", (build_mobilenet_v2, "MobileNet-V2, 1x3x224x224")),
    ("gpt_block", (build_gpt_block, "GPT-2 decoder block d512 h8, 1x128")),
])


def build(name):
    """(eval-mode module, input tensor) for `name`, with the fixed seeds."""
    torch.manual_seed(0)
    model, shape = MODELS[name][0]()
    model.eval()
    gen = torch.Generator().manual_seed(1234)
    return model, torch.randn(*shape, generator=gen)
