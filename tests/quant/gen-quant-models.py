#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Makes the quantiser's test models (tests/quant/data/): a small CNN and a
# small ViT trained here with torch on synthetic images, so that their
# activations have the statistics of trained networks (outlier channels,
# skewed ranges) that random weights do not give. Also their calibration set
# and held-out inputs as .npy files with LIST files in the layout
# npuc --dataset reads. Needs Debian's /usr/bin/python3 (torch 1.13, numpy,
# onnx 1.12). Deterministic for a given seed on one machine; the outputs are
# checked in (each model < 1 MB), so the tests never need torch.
#
#   /usr/bin/python3 tests/quant/gen-quant-models.py [--seed 13] [--seconds 60]
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES = 4
SIZE = 32


def synth(n, rng):
    """Images of four classes: a disc, a square, horizontal and vertical
    stripes, at random places, sizes, colours and contrast, over noise."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    x = np.empty((n, 3, SIZE, SIZE), np.float32)
    y = rng.integers(0, CLASSES, n)
    for i in range(n):
        bg = rng.normal(0, 0.3, (3, SIZE, SIZE)).astype(np.float32)
        col = rng.uniform(-1.5, 2.5, 3).astype(np.float32)
        cx, cy = rng.uniform(8, 24, 2)
        r = rng.uniform(4, 10)
        c = y[i]
        if c == 0:
            m = ((xx - cx) ** 2 + (yy - cy) ** 2) < r * r
        elif c == 1:
            m = (abs(xx - cx) < r) & (abs(yy - cy) < r)
        elif c == 2:
            m = (np.sin(yy * rng.uniform(0.5, 1.2)) > 0.3) & (abs(xx - cx) < r + 4)
        else:
            m = (np.sin(xx * rng.uniform(0.5, 1.2)) > 0.3) & (abs(yy - cy) < r + 4)
        x[i] = bg + m[None].astype(np.float32) * col[:, None, None]
    return x, y


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.b1 = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.pw = nn.Conv2d(32, 32, 1)
        self.c3 = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.fc = nn.Linear(64, CLASSES)

    def forward(self, x):
        x = F.relu(self.b1(self.c1(x)))
        x = F.relu(self.c2(x))
        x = x + F.relu(self.pw(F.relu(self.dw(x))))  # residual
        x = F.relu6(self.c3(x))
        x = x.mean(dim=(2, 3))
        return self.fc(x)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.h = heads

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.h) ** 0.5, dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class SmallViT(nn.Module):
    def __init__(self, d=64, patch=8, depth=2, heads=2):
        super().__init__()
        self.embed = nn.Conv2d(3, d, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(1, (SIZE // patch) ** 2, d) * 0.02)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(depth)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, CLASSES)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x).mean(dim=1))


def train(model, seconds, rng, seed):
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    xs, ys = synth(2048, rng)
    xs, ys = torch.from_numpy(xs), torch.from_numpy(ys)
    t0, step = time.time(), 0
    while time.time() - t0 < seconds:
        i = torch.from_numpy(rng.integers(0, len(ys), 32))
        loss = F.cross_entropy(model(xs[i]), ys[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
    model.eval()
    x, y = synth(256, rng)
    with torch.no_grad():
        acc = (model(torch.from_numpy(x)).argmax(1).numpy() == y).mean()
    print(f"{type(model).__name__}: {step} steps, loss {loss.item():.3f}, accuracy {acc:.3f}")


def export(model, name, rng, ncalib, nheld):
    out = os.path.join(HERE, "data", name)
    os.makedirs(out, exist_ok=True)
    torch.onnx.export(model, torch.zeros(1, 3, SIZE, SIZE), os.path.join(out, "model.onnx"),
                      input_names=["image"], output_names=["logits"], opset_version=13)
    for kind, n in (("calib", ncalib), ("heldout", nheld)):
        x, _ = synth(n, rng)
        with open(os.path.join(out, kind + ".txt"), "w") as f:
            for i in range(n):
                fn = f"{kind}_{i:02d}.npy"
                np.save(os.path.join(out, fn), x[i:i + 1])
                f.write(fn + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(2)
    rng = np.random.default_rng(a.seed)
    cnn = SmallCNN()
    train(cnn, a.seconds, rng, a.seed)
    export(cnn, "cnn_trained", rng, 16, 8)
    vit = SmallViT()
    train(vit, a.seconds, rng, a.seed)
    export(vit, "vit_trained", rng, 16, 8)


if __name__ == "__main__":
    main()
