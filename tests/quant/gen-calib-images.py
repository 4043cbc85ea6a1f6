#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Calibration and held-out images for the quantiser's benchmarks (SigLIP-B/16
# and the bench networks, which have random weights): synthetic scenes (shapes
# and stripes over noise, as gen-quant-models.py draws them) at the model's
# input size, normalised to about [-1, 1], as .npy files with a LIST file.
#   gen-calib-images.py MODEL.onnx OUTDIR NCALIB NHELD [--seed S]
import argparse
import os

import numpy as np
import onnx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("ncalib", type=int)
    ap.add_argument("nheld", type=int)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    m = onnx.load(a.model, load_external_data=False)
    inp = m.graph.input[0]
    dims = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(a.seed)
    h, w = dims[2], dims[3]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    os.makedirs(a.out, exist_ok=True)
    for kind, n in (("calib", a.ncalib), ("heldout", a.nheld)):
        with open(os.path.join(a.out, kind + ".txt"), "w") as f:
            for i in range(n):
                x = rng.normal(0, 0.25, dims).astype(np.float32)
                for _ in range(3):
                    cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(h / 16, h / 4)
                    col = rng.uniform(-1, 1, (dims[1], 1, 1)).astype(np.float32)
                    mask = ((xx - cx) ** 2 + (yy - cy) ** 2) < r * r
                    x[0] += mask[None] * col
                fn = f"{kind}_{i:02d}.npy"
                np.save(os.path.join(a.out, fn), np.clip(x, -1.5, 1.5).astype(np.float32))
                f.write(fn + "\n")
    print(f"{a.out}: {a.ncalib} calibration and {a.nheld} held-out inputs '{inp.name}' {dims}")


if __name__ == "__main__":
    main()
