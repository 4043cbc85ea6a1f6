#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A SigLIP-style vision encoder run on OpenNPU from either front end:

    /usr/bin/python3 examples/vision_encoder.py --framework torch   # opennpu.torch.compile
    /usr/bin/python3 examples/vision_encoder.py --framework onnx    # torch.onnx.export + Model

Both build the same module with the same seeded random weights (patch conv, learned
position embeddings, pre-LN encoder layers with tanh-GELU MLPs, post-LayerNorm and
SigLIP's attention-pooling head over nn.MultiheadAttention), embed the same image
and print the L2-normalised pooled embedding, its distance to eager torch and the
run statistics; --save writes the embedding (.npy) so that the two paths can be
compared. --dims b16 gives SigLIP-B/16's dims (224 px, 12 layers, width 768);
the default is a tiny configuration that compiles in about a second.

Needs numpy and torch 1.13 (Debian's /usr/bin/python3) and the opennpu package
(`meson devenv -C build /usr/bin/python3 examples/vision_encoder.py`, or installed).
"""
import argparse
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import opennpu

DIMS = {"tiny": dict(image=32, patch=8, width=64, layers=2, heads=4, mlp=128),
        "small": dict(image=96, patch=16, width=192, layers=4, heads=3, mlp=768),
        "b16": dict(image=224, patch=16, width=768, layers=12, heads=12, mlp=3072)}


class MLP(nn.Module):
    def __init__(self, width, mlp):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, mlp), nn.Linear(mlp, width)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.head_dim = heads, width // heads
        self.q_proj, self.k_proj = nn.Linear(width, width), nn.Linear(width, width)
        self.v_proj, self.out_proj = nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = [p(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj)]
        w = torch.matmul(q, k.transpose(2, 3)) * self.head_dim ** -0.5
        o = torch.matmul(w.softmax(dim=-1), v).transpose(1, 2).reshape(B, T, C)
        return self.out_proj(o)


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d["width"], eps=1e-6), nn.LayerNorm(d["width"], eps=1e-6)
        self.attn, self.mlp = Attention(d["width"], d["heads"]), MLP(d["width"], d["mlp"])

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class PoolingHead(nn.Module):
    """SigLIP's attention pooling: a learned probe attends over the tokens."""

    def __init__(self, d):
        super().__init__()
        self.probe = nn.Parameter(torch.randn(1, 1, d["width"]))
        self.attention = nn.MultiheadAttention(d["width"], d["heads"], batch_first=True)
        self.layernorm = nn.LayerNorm(d["width"], eps=1e-6)
        self.mlp = MLP(d["width"], d["mlp"])

    def forward(self, x):
        probe = self.probe.repeat(x.shape[0], 1, 1)
        h = self.attention(probe, x, x)[0]
        h = h + self.mlp(self.layernorm(h))
        return h[:, 0]


class VisionEncoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        n = (d["image"] // d["patch"]) ** 2
        self.patch_embedding = nn.Conv2d(3, d["width"], d["patch"], stride=d["patch"])
        self.position_embedding = nn.Parameter(torch.randn(1, n, d["width"]))
        self.layers = nn.ModuleList([Layer(d) for _ in range(d["layers"])])
        self.post_layernorm = nn.LayerNorm(d["width"], eps=1e-6)
        self.head = PoolingHead(d)

    def forward(self, pixel_values):
        x = self.patch_embedding(pixel_values).flatten(2).transpose(1, 2)
        x = x + self.position_embedding
        for layer in self.layers:
            x = layer(x)
        pooled = self.head(self.post_layernorm(x))
        return F.normalize(pooled, dim=-1)


def build(dims, seed):
    torch.manual_seed(seed)
    m = VisionEncoder(DIMS[dims]).eval()
    with torch.no_grad():  # activations O(1): weights ~ N(0, 1/fan_in)
        for p in m.modules():
            if isinstance(p, (nn.Linear, nn.Conv2d)):
                p.weight.normal_(0, 1 / math.sqrt(p.weight[0].numel()))
            if isinstance(p, nn.MultiheadAttention):
                p.in_proj_weight.normal_(0, 1 / math.sqrt(p.embed_dim))
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--framework", choices=("torch", "onnx"), default="torch")
    ap.add_argument("--backend", default="auto", help="cpu, sim, rknpu, rocket, auto")
    ap.add_argument("--dims", choices=sorted(DIMS), default="tiny")
    ap.add_argument("--image", help="an image as .npy (float32 [1,3,H,W], normalised)")
    ap.add_argument("--seed", type=int, default=0, help="weights and synthetic image")
    ap.add_argument("--cache-dir", help="compile cache")
    ap.add_argument("--partition", choices=("cost", "supported", "cpu"),
                    help="NPU backends: how nodes are placed (default cost)")
    ap.add_argument("--save", help="write the embedding to this .npy file")
    ap.add_argument("--export", metavar="DIR", help="--framework onnx: keep the exported "
                    "vision_encoder.onnx and the input image (pixel_values.npy) in DIR")
    a = ap.parse_args()
    model = build(a.dims, a.seed)
    size = DIMS[a.dims]["image"]
    if a.image:
        img = torch.from_numpy(np.load(a.image).astype(np.float32))
    else:
        img = torch.from_numpy(np.random.default_rng(a.seed).uniform(
            -1, 1, (1, 3, size, size)).astype(np.float32))
    t0 = time.time()
    if a.framework == "torch":
        import importlib
        enc = importlib.import_module("opennpu.torch").compile(model, (img,), backend=a.backend, cache_dir=a.cache_dir,
                                                                 partition=a.partition)
        t1 = time.time()
        emb = enc(img).numpy()
        stats, backend = enc.stats, enc.models[0].backend
    else:
        with tempfile.TemporaryDirectory() as tmp:
            if a.export:
                os.makedirs(a.export, exist_ok=True)
                np.save(os.path.join(a.export, "pixel_values.npy"), img.numpy())
            path = os.path.join(a.export or tmp, "vision_encoder.onnx")
            torch.onnx.export(model, (img,), path, input_names=["pixel_values"],
                              output_names=["embedding"], opset_version=17)
            m = opennpu.Model(path, backend=a.backend, cache_dir=a.cache_dir,
                              partition=a.partition)
            t1 = time.time()
            emb = m.run({"pixel_values": img.numpy()})["embedding"]
            stats, backend = m.stats, m.backend
    with torch.no_grad():
        ref = model(img).numpy()
    print("framework %s, backend %s, dims %s: compile %.2f s" % (a.framework, backend, a.dims,
                                                                t1 - t0))
    print("embedding %s, first values %s" % (emb.shape, np.array2string(
        emb[0, :6], precision=4)))
    print("max |difference| to eager torch: %.2e; cosine similarity %.6f" % (
        np.abs(emb - ref).max(), float((emb * ref).sum() / np.linalg.norm(emb) /
                                       np.linalg.norm(ref))))
    print("run: " + str(stats))
    if a.save:
        np.save(a.save, emb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
