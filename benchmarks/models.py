"""The benchmark model set (PyTorch modules, fixed seeds, static shapes).

Shared by compare.py (export to ONNX, reference outputs) and drivers/torch_driver.py (PyTorch
eager timing), so both build bit-identical weights: torch.manual_seed(0) before each model
is built, inputs from a separate generator seeded 1234. mlp, resnet18 and transformer come
from scripts/export_models.py (the real-model test set) unchanged.

Two sets (SETS): "curated", the seven models issue 8's targets are about, and "broad" (issue
23), real architectures as users export them: torchvision's classification, segmentation and
video families, ViT/Swin/MaxViT, a U-Net, an nn.Transformer encoder-decoder, BERT-base- and
GPT-2-like stacks, LSTM and GRU language models and a float16 ResNet-18. Every weight is
random (weights=None, nothing is downloaded); calibrate() gives each model the batch-norm
statistics and output head that make its activations and its output O(1), so that the output
check of compare.py can tell a right answer from a wrong one.

A builder returns (module, inputs): inputs is either a shape (one float32 input named
"input", drawn N(0, 1)) or an ordered dict of input name -> maker(generator) -> tensor, for
models with several inputs or int64 token ids. Every model has one output, "output".
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


# ---------------------------------------------------------------------------------------------
# The broad set (issue 23). Helpers first, then the builders, grouped by family.

BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
CALIBRATION_SEED = 4321  # the calibration batch, never the benchmark input (seeded 1234)
OUTPUT_MAX = 4.0  # largest |output| calibrate() gives the calibration batch


def calibration_images(shape, batch=2):
    """A fixed-seed N(0, 1) batch of `batch` inputs of `shape` (its batch dimension replaced):
    two samples, so that a batch norm after global pooling still sees two values per channel."""
    gen = torch.Generator().manual_seed(CALIBRATION_SEED)
    return torch.randn((batch,) + tuple(shape[1:]), generator=gen)


def calibration_inputs(spec):
    """The calibration counterpart of a builder's input dict (see build()): each maker called
    with a generator seeded CALIBRATION_SEED, as a tuple of positional arguments."""
    gen = torch.Generator().manual_seed(CALIBRATION_SEED)
    return tuple(make(gen) for make in spec.values())


def calibrate(model, calib, heads=(), target=OUTPUT_MAX):
    """Makes a randomly initialised model's activations and output O(1); returns `model`.

    The recipe of build_mobilenet_v2, for any model:
    1. Batch norms: running statistics reset, momentum None (a cumulative average, so after one
       batch the statistics are that batch's), and one forward of `calib` (a tensor or a tuple
       of inputs) with only the batch norms in training mode (dropout and stochastic depth stay
       in eval mode). torchvision's initialisation leaves mean 0 and variance 1, while the real
       activations' variance shrinks or grows by a factor per block: without this, the logits
       of the benchmark input reach 5e-14 (EfficientNet-B0), 8e-10 (MobileNet-V3-large) or 110
       (ResNet-50), and a segmentation model returns little more than its class biases.
    2. Each layer of `heads` (the last Linear or Conv of the output head; several when their
       results are added, as in LRASPP) is re-drawn, weight N(0, 1/sqrt(fan in)) and bias
       N(0, 0.1): torchvision draws classifiers N(0, 0.01) and ViT's is all zero.
    3. The heads are scaled together so that the calibration batch's largest |output| is
       `target`: whatever follows a head (ReLU, pooling, upsampling) is positively
       homogeneous, so the scale carries through, and the benchmark input, drawn from the same
       distribution, gets an output of the same size.
    """
    args = calib if isinstance(calib, tuple) else (calib,)
    norms = [m for m in model.modules() if isinstance(m, BATCH_NORMS)]
    with torch.no_grad():
        model.eval()
        for m in norms:
            m.reset_running_stats()
            m.momentum = None
            m.train()
        if norms:
            model(*args)
        model.eval()
        for head in heads:
            nn.init.normal_(head.weight, std=1.0 / math.sqrt(head.weight[0].numel()))
            if head.bias is not None:
                nn.init.normal_(head.bias, std=0.1)
        if heads:
            scale = target / float(model(*args).abs().max())
            for head in heads:
                head.weight.mul_(scale)
                if head.bias is not None:
                    head.bias.mul_(scale)
    return model


def token_ids(shape, vocab, pad=0):
    """Input maker: int64 token ids of `shape`, uniform in [1, vocab), the last `pad` positions
    of every row 0 (padding, which a model's attention mask hides)."""
    def make(gen):
        ids = torch.randint(1, vocab, shape, generator=gen)
        if pad:
            ids[..., -pad:] = 0
        return ids
    return make


def torchvision_classifier(factory, shape, head, calibration_batch=2, **kwargs):
    """torchvision classification model `factory` (weights=None, so nothing is downloaded),
    calibrated on `calibration_batch` images; `head(model)` is its last Linear/Conv."""
    model = factory(weights=None, **kwargs)
    calib = calibration_images(shape, calibration_batch)
    return calibrate(model, calib, [head(model)]), shape


class MainOutput(nn.Module):
    """A torchvision segmentation model returning only its "out" tensor (they return a dict;
    the benchmark compares one output)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def torchvision_segmenter(factory, shape, heads, **kwargs):
    """torchvision segmentation model `factory`, 21 classes, random backbone
    (weights_backbone=None), calibrated; `heads(model)` lists its final convs."""
    model = MainOutput(factory(weights=None, weights_backbone=None, num_classes=21, **kwargs))
    return calibrate(model, calibration_images(shape), heads(model.model)), shape


def tv():
    """torchvision.models, imported when a builder runs rather than with this module."""
    import torchvision
    return torchvision.models


# --- torchvision classification ---------------------------------------------------------------

def build_resnet50():
    return torchvision_classifier(tv().resnet50, (1, 3, 224, 224), lambda m: m.fc)


def build_resnet18_fp16():
    """ResNet-18 calibrated like the others; compare.py exports it in float32 and converts the
    ONNX model to float16 (to_float16), so frame and ORT run it in half precision while
    PyTorch eager (no CPU float16 convolution in torch 1.13) runs this float32 module."""
    return torchvision_classifier(tv().resnet18, (1, 3, 224, 224), lambda m: m.fc)


def build_resnext50():
    return torchvision_classifier(tv().resnext50_32x4d, (1, 3, 224, 224), lambda m: m.fc)


def build_wide_resnet50():
    return torchvision_classifier(tv().wide_resnet50_2, (1, 3, 224, 224), lambda m: m.fc)


def build_densenet121():
    return torchvision_classifier(tv().densenet121, (1, 3, 224, 224), lambda m: m.classifier)


def build_inception_v3():
    # init_weights=True: torchvision's truncated-normal init (its default changes to False
    # with a warning); transform_input stays False (it is only set for pretrained weights).
    return torchvision_classifier(tv().inception_v3, (1, 3, 299, 299), lambda m: m.fc,
                                  aux_logits=False, init_weights=True)


def build_googlenet():
    return torchvision_classifier(tv().googlenet, (1, 3, 224, 224), lambda m: m.fc,
                                  aux_logits=False, init_weights=True)


def build_squeezenet1_0():
    return torchvision_classifier(tv().squeezenet1_0, (1, 3, 224, 224),
                                  lambda m: m.classifier[1])


def build_squeezenet1_1():
    return torchvision_classifier(tv().squeezenet1_1, (1, 3, 224, 224),
                                  lambda m: m.classifier[1])


def build_mobilenet_v3_small():
    return torchvision_classifier(tv().mobilenet_v3_small, (1, 3, 224, 224),
                                  lambda m: m.classifier[3])


def build_mobilenet_v3_large():
    return torchvision_classifier(tv().mobilenet_v3_large, (1, 3, 224, 224),
                                  lambda m: m.classifier[3])


# EfficientNets' random-weight activations vary much more from input to input than the other
# models' (squeeze-excitation gates over long residual stages): calibrated on 2 images, the
# benchmark input's logits reach 11 (B0) and 70 (V2-S at 224x224). 4 calibration images, and
# V2-S at 288x288 (between its 300 training and 384 evaluation sizes; at 224 its 7x7 last
# stage stays erratic), bring them to 4.7 and 7.6.
def build_efficientnet_b0():
    return torchvision_classifier(tv().efficientnet_b0, (1, 3, 224, 224),
                                  lambda m: m.classifier[1], calibration_batch=4)


def build_efficientnet_v2_s():
    return torchvision_classifier(tv().efficientnet_v2_s, (1, 3, 288, 288),
                                  lambda m: m.classifier[1], calibration_batch=4)


def build_shufflenet_v2():
    return torchvision_classifier(tv().shufflenet_v2_x1_0, (1, 3, 224, 224), lambda m: m.fc)


def build_mnasnet1_0():
    return torchvision_classifier(tv().mnasnet1_0, (1, 3, 224, 224), lambda m: m.classifier[1])


def build_regnet_y_400mf():
    return torchvision_classifier(tv().regnet_y_400mf, (1, 3, 224, 224), lambda m: m.fc)


def build_vgg11_bn():
    return torchvision_classifier(tv().vgg11_bn, (1, 3, 224, 224), lambda m: m.classifier[6])


def build_alexnet():
    return torchvision_classifier(tv().alexnet, (1, 3, 224, 224), lambda m: m.classifier[6])


def build_convnext_tiny():
    return torchvision_classifier(tv().convnext_tiny, (1, 3, 224, 224),
                                  lambda m: m.classifier[2])


# --- vision transformers ----------------------------------------------------------------------

def build_vit_small():
    """A ViT-S/16 (DeiT-S sizes) from torchvision's VisionTransformer: 12 layers, 6 heads,
    hidden 384, MLP 1536, 224x224 in 16x16 patches (ViT-B/16 is 4x the work)."""
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=6,
                              hidden_dim=384, mlp_dim=1536)
    shape = (1, 3, 224, 224)
    return calibrate(model, calibration_images(shape), [model.heads.head]), shape


def build_swin_t():
    return torchvision_classifier(tv().swin_t, (1, 3, 224, 224), lambda m: m.head)


def build_maxvit_t():
    # MaxViT's block and grid partitions need the side to be a multiple of 224 / 7 * 7.
    return torchvision_classifier(tv().maxvit_t, (1, 3, 224, 224), lambda m: m.classifier[5])


# --- segmentation -----------------------------------------------------------------------------

def build_deeplabv3_mobilenet():
    from torchvision.models import segmentation
    return torchvision_segmenter(segmentation.deeplabv3_mobilenet_v3_large, (1, 3, 256, 256),
                                 lambda m: [m.classifier[4]], aux_loss=False)


def build_fcn_resnet50():
    # Dilated ResNet-50 (output stride 8): ~28 GFLOPs at 224x224, 150 at its 520 default.
    from torchvision.models import segmentation
    return torchvision_segmenter(segmentation.fcn_resnet50, (1, 3, 224, 224),
                                 lambda m: [m.classifier[4]], aux_loss=False)


def build_lraspp_mobilenet():
    from torchvision.models import segmentation
    return torchvision_segmenter(
        segmentation.lraspp_mobilenet_v3_large, (1, 3, 256, 256),
        lambda m: [m.classifier.low_classifier, m.classifier.high_classifier])


class DoubleConv(nn.Sequential):
    """U-Net's block: 2x (conv3x3, padding 1, no bias + BatchNorm + ReLU)."""

    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """U-Net (Ronneberger et al. 2015, same-padded): `levels` encoder blocks of widths base,
    2 base, ... each followed by a 2x2 max pool, a bottleneck block of twice the last width,
    then per level a 2x2 stride-2 transposed conv, concatenation with the encoder block's
    output and a block; a 1x1 conv to `classes` channels at full resolution."""

    def __init__(self, in_channels=3, classes=2, base=32, levels=4):
        super().__init__()
        widths = [base * 2 ** i for i in range(levels)]
        self.down = nn.ModuleList()
        c = in_channels
        for w in widths:
            self.down.append(DoubleConv(c, w))
            c = w
        self.bottom = DoubleConv(c, 2 * c)
        c *= 2
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        for w in reversed(widths):
            self.up.append(nn.ConvTranspose2d(c, w, 2, stride=2))
            self.dec.append(DoubleConv(2 * w, w))
            c = w
        self.head = nn.Conv2d(base, classes, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = nn.functional.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def build_unet():
    model = UNet()
    shape = (1, 3, 256, 256)
    return calibrate(model, calibration_images(shape), [model.head]), shape


# --- video ------------------------------------------------------------------------------------

def build_r3d_18():
    from torchvision.models import video
    return torchvision_classifier(video.r3d_18, (1, 3, 8, 112, 112), lambda m: m.fc)


def build_mc3_18():
    from torchvision.models import video
    return torchvision_classifier(video.mc3_18, (1, 3, 8, 112, 112), lambda m: m.fc)


def build_r2plus1d_18():
    from torchvision.models import video
    return torchvision_classifier(video.r2plus1d_18, (1, 3, 8, 112, 112), lambda m: m.fc)


# --- text -------------------------------------------------------------------------------------

class Seq2SeqTransformer(nn.Module):
    """nn.Transformer encoder-decoder as a translation model: source and target token
    embeddings (vocab 1000) plus a learned position embedding, nn.Transformer (d 256, 8 heads,
    3 encoder and 3 decoder layers, feed-forward 1024, no dropout, batch_first) with a causal
    target mask (a buffer, so the export holds it as a constant), a linear layer to the
    vocabulary: per target position logits [1, tgt, 1000]."""

    def __init__(self, vocab=1000, d=256, heads=8, layers=3, ff=1024, src_len=64, tgt_len=32):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d)
        self.tgt_embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(0.1 * torch.randn(1, max(src_len, tgt_len), d))
        self.transformer = nn.Transformer(d, heads, layers, layers, ff, dropout=0.0,
                                          batch_first=True)
        self.register_buffer("tgt_mask", torch.triu(
            torch.full((tgt_len, tgt_len), float("-inf")), diagonal=1))
        self.out = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        s = self.src_embed(src) + self.pos[:, :src.shape[1]]
        t = self.tgt_embed(tgt) + self.pos[:, :tgt.shape[1]]
        return self.out(self.transformer(s, t, tgt_mask=self.tgt_mask))


def build_seq2seq_transformer():
    model = Seq2SeqTransformer()
    spec = collections.OrderedDict([("src", token_ids((1, 64), 1000)),
                                    ("tgt", token_ids((1, 32), 1000))])
    return calibrate(model, calibration_inputs(spec), [model.out]), spec


class BertLayer(nn.Module):
    """A BERT encoder layer as Hugging Face's BertLayer computes it: self-attention with
    separate query/key/value projections and an additive mask, post-LayerNorm residuals
    (eps 1e-12), an erf-GELU feed-forward."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(d // heads)  # a Python constant, not traced
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.inter = nn.Linear(d, ff)
        self.out = nn.Linear(ff, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.heads

        def split(y):
            return y.view(b, t, h, d // h).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        att = torch.softmax((q @ k.transpose(-1, -2)) * self.scale + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.attn_out(y))
        return self.ln2(x + self.out(nn.functional.gelu(self.inter(x))))


class BertEncoder(nn.Module):
    """A BERT-base-like encoder: word (vocab 30522), position and token-type embeddings,
    LayerNorm, `layers` BertLayers (d 768, 12 heads, 3072); the additive attention mask is
    built inside from the ids (0 = padding -> -10000), as Hugging Face does. Weights
    N(0, 0.02), biases 0 (BERT's initialisation). Output: the last hidden state."""

    def __init__(self, vocab=30522, d=768, heads=12, ff=3072, layers=12, max_pos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        mask = (1.0 - (input_ids != 0).float())[:, None, None, :] * -10000.0
        x = self.word(input_ids) + self.position(self.position_ids[:, :t]) + \
            self.token_type.weight[0]  # token type 0 everywhere
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x, mask)
        return x


def build_bert_base():
    # 1x128 ids, the last 16 padding (id 0), so the mask changes the result.
    return BertEncoder(), collections.OrderedDict(
        [("input_ids", token_ids((1, 128), 30522, pad=16))])


class Gpt2(nn.Module):
    """A GPT-2-small-like decoder: token (vocab 50257) and learned position embeddings,
    `layers` GptBlocks (pre-LN causal self-attention + 4x tanh-GELU MLP, d 768, 12 heads),
    final LayerNorm, next-token logits of the last position through the tied token
    embedding: [1, 50257] (what a generation step needs). Token embedding N(0, 0.02),
    positions N(0, 0.01) (GPT-2's initialisation); the blocks keep PyTorch's defaults, like
    gpt_block."""

    def __init__(self, vocab=50257, d=768, heads=12, layers=12, seq=128, max_pos=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        self.blocks = nn.ModuleList(GptBlock(d, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("positions", torch.arange(seq).unsqueeze(0))

    def forward(self, input_ids):
        x = self.wte(input_ids) + self.wpe(self.positions[:, :input_ids.shape[1]])
        for block in self.blocks:
            x = block(x)
        # The tied LM head, as GPT-2's lm_head: torch's export folds the weight's transpose
        # into a second initializer, so the file holds the embedding twice (the Gather's table
        # and the MatMul's transposed copy, 154 MB each).
        return nn.functional.linear(self.ln_f(x[:, -1]), self.wte.weight)


def build_gpt2():
    return Gpt2(), collections.OrderedDict([("input_ids", token_ids((1, 128), 50257))])


class RnnLm(nn.Module):
    """A word-level language model (the PyTorch word_language_model example's shape):
    embedding (vocab 10000, 256), a 2-layer LSTM or GRU (hidden 256, batch_first, initial
    state zero), a linear layer to the vocabulary at every step: [1, seq, 10000]."""

    def __init__(self, cell, vocab=10000, d=256, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell](d, d, num_layers=layers,
                                                          batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, input_ids):
        y, _ = self.rnn(self.embed(input_ids))
        return self.out(y)


def build_rnn_lm(cell):
    model = RnnLm(cell)
    spec = collections.OrderedDict([("input_ids", token_ids((1, 64), 10000))])
    return calibrate(model, calibration_inputs(spec), [model.out]), spec


def build_lstm_lm():
    return build_rnn_lm("lstm")


def build_gru_lm():
    return build_rnn_lm("gru")


# Left out: torchvision's RAFT (raft_small): its correlation lookup uses grid_sample, which
# torch 1.13 exports only at opset 16 ("Exporting the operator 'aten::grid_sampler' to ONNX
# opset version 14 is not supported"); the model set is exported at opset 14.

# --- float16 ----------------------------------------------------------------------------------

# Ops whose every float input and output may become float16 together (no float32-only input
# such as Resize's scales): to_float16 refuses a graph with any other op rather than guess.
FLOAT16_OPS = frozenset(("Add", "AveragePool", "Concat", "Conv", "Flatten", "Gemm",
                         "GlobalAveragePool", "MatMul", "MaxPool", "Mul", "Relu", "Reshape"))


def to_float16(path):
    """Rewrites the float32 ONNX model at `path` in place to compute in float16: float
    initializers and Constant values become float16, Casts to float become Casts to float16,
    and the graph's float inputs and outputs stay float32 with a Cast after each input and
    before each output. The I/O stays float32 because the benchmark drivers exchange .npy
    files of <f4/<f8/<i4/<i8 only (the ORT driver also binds float32 output buffers); all
    compute between the two Casts is float16. Checked with onnx.checker and strict shape
    inference (every type must agree)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(path)
    g = model.graph
    unknown = sorted({n.op_type for n in g.node} - FLOAT16_OPS - {"Cast", "Constant"})
    if unknown:
        raise ValueError("to_float16: ops %s are not known to take float16 on every float "
                         "input; extend FLOAT16_OPS only after checking their schemas" % unknown)

    def half(tensor):
        return numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float16),
                                       tensor.name)

    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(half(init))
    for node in g.node:
        for attr in node.attribute:
            if node.op_type == "Constant" and attr.name == "value" and \
                    attr.t.data_type == TensorProto.FLOAT:
                attr.t.CopyFrom(half(attr.t))
            if node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.FLOAT16

    def rename_uses(old, new):
        for node in g.node:
            for i, name in enumerate(node.input):
                if name == old:
                    node.input[i] = new

    initializers = {i.name for i in g.initializer}
    casts_in = []
    for inp in g.input:
        if inp.name not in initializers and \
                inp.type.tensor_type.elem_type == TensorProto.FLOAT:
            rename_uses(inp.name, inp.name + "_fp16")
            casts_in.append(helper.make_node("Cast", [inp.name], [inp.name + "_fp16"],
                                             to=TensorProto.FLOAT16))
    for out in g.output:
        if out.type.tensor_type.elem_type == TensorProto.FLOAT:
            for node in g.node:
                for i, name in enumerate(node.output):
                    if name == out.name:
                        node.output[i] = out.name + "_fp16"
            rename_uses(out.name, out.name + "_fp16")
            g.node.append(helper.make_node("Cast", [out.name + "_fp16"], [out.name],
                                           to=TensorProto.FLOAT))
    for i, node in enumerate(casts_in):
        g.node.insert(i, node)
    del g.value_info[:]
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


# --- the table --------------------------------------------------------------------------------

# name -> (builder, description for the results table). The curated seven come first.
MODELS = collections.OrderedDict([
    ("mlp", (export_models.build_mlp, "MLP 784-512-512-10, batch 64")),
    ("resnet18", (export_models.build_resnet18, "ResNet-18, 1x3x224x224")),
    ("transformer", (export_models.build_transformer,
                     "TransformerEncoderLayer d256 h4 ff1024, 1x128")),
    ("conv3", (build_conv3, "3x (conv3x3 64ch + BN + ReLU), 1x64x56x56")),
    ("gelu", (build_gelu, "tanh-GELU + bias + ReLU on 1024x4096")),
    ("mobilenet_v2", (build_mobilenet_v2, "MobileNet-V2, 1x3x224x224")),
    ("gpt_block", (build_gpt_block, "GPT-2 decoder block d512 h8, 1x128")),
    # broad: classification
    ("resnet50", (build_resnet50, "ResNet-50, 1x3x224x224")),
    ("resnet18_fp16", (build_resnet18_fp16,
                       "ResNet-18 in float16 (f32 I/O; torch runs it in f32), 1x3x224x224")),
    ("resnext50_32x4d", (build_resnext50, "ResNeXt-50 32x4d, 1x3x224x224")),
    ("wide_resnet50_2", (build_wide_resnet50, "Wide ResNet-50-2, 1x3x224x224")),
    ("densenet121", (build_densenet121, "DenseNet-121, 1x3x224x224")),
    ("inception_v3", (build_inception_v3, "Inception-V3 (no aux head), 1x3x299x299")),
    ("googlenet", (build_googlenet, "GoogLeNet (no aux heads), 1x3x224x224")),
    ("squeezenet1_0", (build_squeezenet1_0, "SqueezeNet 1.0, 1x3x224x224")),
    ("squeezenet1_1", (build_squeezenet1_1, "SqueezeNet 1.1, 1x3x224x224")),
    ("mobilenet_v3_small", (build_mobilenet_v3_small, "MobileNet-V3 small, 1x3x224x224")),
    ("mobilenet_v3_large", (build_mobilenet_v3_large, "MobileNet-V3 large, 1x3x224x224")),
    ("efficientnet_b0", (build_efficientnet_b0, "EfficientNet-B0, 1x3x224x224")),
    ("efficientnet_v2_s", (build_efficientnet_v2_s, "EfficientNetV2-S, 1x3x288x288")),
    ("shufflenet_v2", (build_shufflenet_v2, "ShuffleNet-V2 x1.0, 1x3x224x224")),
    ("mnasnet1_0", (build_mnasnet1_0, "MNASNet 1.0, 1x3x224x224")),
    ("regnet_y_400mf", (build_regnet_y_400mf, "RegNetY-400MF, 1x3x224x224")),
    ("vgg11_bn", (build_vgg11_bn, "VGG-11 with BN, 1x3x224x224")),
    ("alexnet", (build_alexnet, "AlexNet, 1x3x224x224")),
    ("convnext_tiny", (build_convnext_tiny, "ConvNeXt-T, 1x3x224x224")),
    # broad: vision transformers
    ("vit_small", (build_vit_small, "ViT-S/16 (12 layers, d384 h6), 1x3x224x224")),
    ("swin_t", (build_swin_t, "Swin-T, 1x3x224x224")),
    ("maxvit_t", (build_maxvit_t, "MaxViT-T, 1x3x224x224")),
    # broad: segmentation
    ("deeplabv3_mobilenet", (build_deeplabv3_mobilenet,
                             "DeepLabV3 MobileNet-V3-large, 21 classes, 1x3x256x256")),
    ("fcn_resnet50", (build_fcn_resnet50, "FCN ResNet-50, 21 classes, 1x3x224x224")),
    ("lraspp_mobilenet", (build_lraspp_mobilenet,
                          "LR-ASPP MobileNet-V3-large, 21 classes, 1x3x256x256")),
    ("unet", (build_unet, "U-Net, 4 levels, base 32, 2 classes, 1x3x256x256")),
    # broad: video
    ("r3d_18", (build_r3d_18, "R3D-18 (video), 1x3x8x112x112")),
    ("mc3_18", (build_mc3_18, "MC3-18 (video), 1x3x8x112x112")),
    ("r2plus1d_18", (build_r2plus1d_18, "R(2+1)D-18 (video), 1x3x8x112x112")),
    # broad: text
    ("seq2seq_transformer", (build_seq2seq_transformer,
                             "nn.Transformer enc-dec 3+3 layers d256 h8, ids src 1x64 tgt 1x32")),
    ("bert_base", (build_bert_base, "BERT-base-like encoder, 12 layers d768 h12, ids 1x128")),
    ("gpt2", (build_gpt2, "GPT-2-small-like decoder, 12 layers d768 h12, ids 1x128")),
    ("lstm_lm", (build_lstm_lm, "LSTM language model, 2 layers h256, vocab 10k, ids 1x64")),
    ("gru_lm", (build_gru_lm, "GRU language model, 2 layers h256, vocab 10k, ids 1x64")),
])

CURATED = ("mlp", "resnet18", "transformer", "conv3", "gelu", "mobilenet_v2", "gpt_block")
# compare.py --set: "all" (the default) is every model, curated first.
SETS = collections.OrderedDict([
    ("curated", list(CURATED)),
    ("broad", [n for n in MODELS if n not in CURATED]),
    ("all", list(MODELS)),
])
# Exported in float32, then converted by to_float16; compare.py checks them with its looser
# float16 tolerance.
FLOAT16 = frozenset(("resnet18_fp16",))


def build(name):
    """(eval-mode module, inputs) for `name`, with the fixed seeds: inputs is an ordered dict
    of ONNX input name -> tensor, in the module's argument order ("input" for a builder that
    returns a shape, drawn exactly as before builders could name their inputs)."""
    torch.manual_seed(0)
    model, spec = MODELS[name][0]()
    model.eval()
    gen = torch.Generator().manual_seed(1234)
    if isinstance(spec, dict):
        inputs = collections.OrderedDict((k, make(gen)) for k, make in spec.items())
    else:
        inputs = collections.OrderedDict([("input", torch.randn(*spec, generator=gen))])
    return model, inputs


def source_digest(name):
    """A hash of the source code that builds `name`: its builder, every function, class and
    module-level constant of this file or scripts/export_models.py that the builder names,
    transitively (methods and base classes of classes included), build(), and to_float16 for
    float16 models. compare.py keys each model's export cache on it, so editing one builder
    or a helper re-exports only the models that use it. A name is resolved in both files
    (attribute names such as export_models.build_mlp too): a spurious match only re-exports
    more. torchvision's own code is covered by its version, which compare.py adds."""
    import hashlib
    import inspect
    import types

    own = {__name__, export_models.__name__}
    namespaces = (globals(), vars(export_models))
    digest = hashlib.sha256()
    seen = set()

    def names_in(code):
        out = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                out |= names_in(const)
        return out

    def visit(obj):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        digest.update(inspect.getsource(obj).encode())
        if isinstance(obj, type):
            codes = [f.__code__ for f in vars(obj).values() if isinstance(f, types.FunctionType)]
            for base in obj.__bases__:
                if getattr(base, "__module__", None) in own:
                    visit(base)
        else:
            codes = [obj.__code__]
        for n in sorted(set().union(*(names_in(c) for c in codes))):
            for ns in namespaces:
                v = ns.get(n)
                if isinstance(v, (types.FunctionType, type)) and v.__module__ in own:
                    visit(v)
                elif isinstance(v, (int, float, str, tuple, frozenset)) and not n.startswith("__"):
                    digest.update(("%s=%r;" % (n, sorted(v, key=repr) if isinstance(v, frozenset)
                                                else v)).encode())

    visit(MODELS[name][0])
    visit(build)
    if name in FLOAT16:
        visit(to_float16)
    return digest.hexdigest()
