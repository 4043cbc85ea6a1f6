#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs an ONNX model (or a compiled .npub, or IR text .npuir) with opennpu.Model:

    /usr/bin/python3 examples/run_onnx.py model.onnx [--backend sim] [--dims batch=1]
        [--input NAME=FILE.npy ...] [--repeat N] [--save-dir DIR]

Prints the model's inputs and outputs (names, dtypes, shapes), runs it on the given
inputs (random ones, seeded, for those not given), prints each output's summary and
the run statistics (host time; on an NPU backend the modeled NPU time with its timing
model label, submits and tasks). --save-dir writes each output as NAME.npy.
Needs numpy and the opennpu package (`meson devenv -C build /usr/bin/python3 ...`).
"""
import argparse
import os
import sys

import numpy as np

import opennpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--dims", help='symbolic dims, "batch=1,seq=64"')
    ap.add_argument("--cache-dir")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--save-dir")
    ap.add_argument("--backends", action="store_true", help="list the backends and exit")
    a = ap.parse_args()
    if a.backends:
        for b in opennpu.backends():
            print("%-7s %-13s %s" % (b.name, "available" if b.available else "unavailable",
                                     b.reason))
        return 0
    if not a.model:
        ap.error("a model is needed")
    try:
        m = opennpu.Model(a.model, backend=a.backend, dims=a.dims, cache_dir=a.cache_dir)
    except opennpu.Error as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    print("model %s on %s" % (a.model, m.backend))
    for i in m.inputs:
        print("  input  %-20s %-8s %s" % (i.name, i.dtype, list(i.shape)))
    for o in m.outputs:
        print("  output %-20s %-8s %s" % (o.name, o.dtype, list(o.shape)))
    given = dict(s.split("=", 1) for s in a.input)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in m.inputs:
        if i.name in given:
            feeds[i.name] = np.load(given.pop(i.name))
        elif i.dtype.kind == "f":
            feeds[i.name] = rng.standard_normal(i.shape).astype(i.dtype)
        elif i.dtype.kind == "b":
            feeds[i.name] = np.ones(i.shape, i.dtype)
        else:
            feeds[i.name] = rng.integers(0, 2, i.shape).astype(i.dtype)
    if given:
        print("error: the model has no input %s" % ", ".join(given), file=sys.stderr)
        return 2
    for _ in range(max(1, a.repeat)):
        try:
            out = m.run(feeds)
        except (opennpu.Error, ValueError, TypeError) as e:
            print("error: %s" % e, file=sys.stderr)
            return 1
    for k, v in out.items():
        f = v.astype(np.float64)
        print("%s %s %s: min %.4g max %.4g mean %.4g" % (k, v.dtype, list(v.shape), f.min(),
                                                         f.max(), f.mean()))
        if a.save_dir:
            os.makedirs(a.save_dir, exist_ok=True)
            np.save(os.path.join(a.save_dir, k.replace("/", "_") + ".npy"), v)
    print("run: " + str(m.stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
