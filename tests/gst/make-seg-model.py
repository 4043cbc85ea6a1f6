#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A YOLOv8-seg layout test model for npuinfer -> npudetect -> npuoverlay.

Needs /usr/bin/python3 (numpy, onnx). detector_seg.onnx: x f32 [1,3,32,32] ->
output0 [1, 4+1+2, 2] and output1 (the mask prototypes) [1, 2, 8, 8], both
constants (+ 0 * mean(x)) so the test knows what the element must attach:

  anchor 0: box cx 16, cy 16, w 16, h 8 (model (8,12)-(24,20)), class 0 at
            0.9, coefficients (1, 0)
  anchor 1: score 0.1 (below the threshold)
  prototype 0: +8 on proto columns 0..3 (model x < 16), -8 on 4..7;
  prototype 1: +8 everywhere
so anchor 0's mask is the left half of its box (model x < 16).

Usage: make-seg-model.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out):
    o0 = np.zeros((1, 7, 2), np.float32)
    o0[0, :, 0] = [16, 16, 16, 8, 0.9, 1, 0]
    o0[0, :, 1] = [8, 8, 4, 4, 0.1, 0, 0]
    pr = np.zeros((1, 2, 8, 8), np.float32)
    pr[0, 0, :, :4] = 8
    pr[0, 0, :, 4:] = -8
    pr[0, 1] = 8
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
        helper.make_node("Mul", ["m", "zero"], ["z"]),
        helper.make_node("Add", ["o0", "z"], ["output0"]),
        helper.make_node("Add", ["pr", "z"], ["output1"]),
    ]
    g = helper.make_graph(
        nodes, "detector_seg",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 7, 2]),
         helper.make_tensor_value_info("output1", TensorProto.FLOAT, [1, 2, 8, 8])],
        [numpy_helper.from_array(o0, "o0"), numpy_helper.from_array(pr, "pr"),
         numpy_helper.from_array(np.array(0, np.float32), "zero")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "detector_seg.onnx"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
