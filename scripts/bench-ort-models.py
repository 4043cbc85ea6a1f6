#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The networks of issue 16's CPU comparison that tests/models/make-models.py does not
make: ResNet-18, MobileNetV3-Large, GPT-2 small (128 tokens and 1 token), random
weights, batch 1, in make-models.py's folder layout (model.onnx, in.*.npy, out.*.npy,
meta.txt), built on demand for scripts/bench-ort.sh (--make-models). Needs Debian's
/usr/bin/python3 (torch 1.13, onnx 1.12); make-models.py's helpers (export, randomise,
set_bn_stats, bn_act, the GPT-2 modules) are imported from it, so the graphs are what
torch.onnx.export emits for the same module style.

    /usr/bin/python3 scripts/bench-ort-models.py --out DIR [resnet18 mobilenet_v3
                                                           gpt2_small gpt2_small_1tok]
"""
import argparse
import importlib.util
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "make_models", os.path.join(HERE, "..", "tests", "models", "make-models.py"))
mm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mm)


class Basic18(nn.Module):
    """ResNet-18's basic block: 3x3, 3x3 (+ 1x1/2 projection when the shape changes),
    ReLU after the sum."""

    def __init__(self, c, cout, stride):
        super().__init__()
        self.body = nn.Sequential(mm.bn_act(c, cout, 3, stride), mm.bn_act(cout, cout, 3, act=None))
        self.proj = mm.bn_act(c, cout, 1, stride, act=None, pad=0) \
            if stride != 1 or c != cout else None

    def forward(self, x):
        return F.relu(self.body(x) + (self.proj(x) if self.proj is not None else x))


class ResNet18(nn.Module):
    """ResNet-18 at 224 px (torchvision's layer shapes, written here): 7x7/2 conv to 64,
    3x3/2 max pool, 4 stages of 2 basic blocks (64, 128, 256, 512), pool, Linear 1000."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(mm.bn_act(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        blocks, c = [], 64
        for cout, s in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            blocks += [Basic18(c, cout, s), Basic18(cout, cout, 1)]
            c = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SqueezeExcite(nn.Module):
    """MobileNetV3's squeeze-and-excitation: pool, 1x1 (ReLU), 1x1, hard sigmoid, scale."""

    def __init__(self, c, mid):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, mid, 1), nn.Conv2d(mid, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


def hs_act(cin, cout, k, stride=1, groups=1, act="hs"):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act == "hs":
        layers.append(nn.Hardswish())
    elif act == "relu":
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class MobileNetV3(nn.Module):
    """MobileNetV3-Large (Howard et al. 2019) at 224 px, torchvision's configuration
    (written here): 3x3/2 stem to 16 (hard swish), 15 inverted residuals (expansion,
    3x3 or 5x5 depthwise, optional SE, projection), 1x1 to 960, pool, 1280 (hard swish),
    Linear 1000."""

    CFG = [  # k, exp, out, se, act, stride
        (3, 16, 16, False, "relu", 1), (3, 64, 24, False, "relu", 2),
        (3, 72, 24, False, "relu", 1), (5, 72, 40, True, "relu", 2),
        (5, 120, 40, True, "relu", 1), (5, 120, 40, True, "relu", 1),
        (3, 240, 80, False, "hs", 2), (3, 200, 80, False, "hs", 1),
        (3, 184, 80, False, "hs", 1), (3, 184, 80, False, "hs", 1),
        (3, 480, 112, True, "hs", 1), (3, 672, 112, True, "hs", 1),
        (5, 672, 160, True, "hs", 2), (5, 960, 160, True, "hs", 1),
        (5, 960, 160, True, "hs", 1)]

    def __init__(self):
        super().__init__()
        self.stem, c = hs_act(3, 16, 3, 2), 16
        self.blocks = nn.ModuleList()
        for k, e, cout, se, act, s in self.CFG:
            layers = [hs_act(c, e, 1, act=act)] if e != c else []
            layers.append(hs_act(e, e, k, s, groups=e, act=act))
            if se:
                layers.append(SqueezeExcite(e, ((e // 4 + 7) // 8) * 8))
            layers.append(hs_act(e, cout, 1, act=None))
            blk = nn.Sequential(*layers)
            blk.residual = s == 1 and c == cout
            self.blocks.append(blk)
            c = cout
        self.head = hs_act(c, 960, 1)
        self.fc1, self.fc2 = nn.Linear(960, 1280), nn.Linear(1280, 1000)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = x + b(x) if b.residual else b(x)
        x = torch.flatten(F.adaptive_avg_pool2d(self.head(x), 1), 1)
        return self.fc2(F.hardswish(self.fc1(x)))


def make_cnn(outdir, name):
    torch.manual_seed(mm.SEED)
    m = ResNet18() if name == "resnet18" else MobileNetV3()
    mm.randomise(m)
    mm.set_bn_stats(m)
    x = torch.rand(1, 3, 224, 224, generator=torch.Generator().manual_seed(mm.SEED))
    mm.export(name, m, [x], ["pixel_values"], ["output"], outdir, 13)


def make_gpt2_small(outdir, name):
    """GPT-2 small (124M: vocab 50257, 1024 positions, width 768, 12 layers, 12 heads)
    over 128 tokens, or 1 token (gpt2_small_1tok: every matmul M=1), tied LM head."""
    torch.manual_seed(mm.SEED)
    seq = 1 if name.endswith("1tok") else 128
    c = mm.GPT2Cfg(vocab=50257, positions=1024, seq=seq, width=768, layers=12, heads=12)
    m = mm.GPT2LM(c)
    mm.randomise(m)
    m.tie()
    g = torch.Generator().manual_seed(mm.SEED + 3)
    ids = torch.randint(0, c.vocab, (1, seq), generator=g, dtype=torch.int64)
    mask = torch.ones(1, seq, dtype=torch.int64)
    mm.export(name, m, [ids, mask], ["input_ids", "attention_mask"], ["logits"], outdir, 14)


MODELS = ["resnet18", "mobilenet_v3", "gpt2_small", "gpt2_small_1tok"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("models", nargs="*", default=MODELS)
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in a.models:
        if name in ("resnet18", "mobilenet_v3"):
            make_cnn(a.out, name)
        elif name.startswith("gpt2_small"):
            make_gpt2_small(a.out, name)
        else:
            raise SystemExit("unknown model " + name)


if __name__ == "__main__":
    sys.exit(main())
