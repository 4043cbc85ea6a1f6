#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The model of the quantised-output GStreamer test (test-npuquant.c): image_conv.onnx,
# x f32 [1,3,8,8] -> Conv 3x3 (8 kernels, pad 1, bias) -> y f32 [1,8,8,8], fixed
# weights (seed 13), and a calibration set of 6 images in [0, 1] (calib.txt, .npy files)
# for npuc --quantize. Debian's /usr/bin/python3 (numpy, onnx).
#   make-quant-models.py OUTDIR
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(13)
    w = rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    b = rng.normal(0, 0.1, (8,)).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])
    conv = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], name="conv")
    g = helper.make_graph([conv], "image_conv", [x], [y],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="opennpu-tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "image_conv.onnx"))
    with open(os.path.join(out, "image_conv_calib.txt"), "w") as f:
        for i in range(6):
            name = f"image_conv_calib{i}.npy"
            np.save(os.path.join(out, name), rng.uniform(0, 1, (1, 3, 8, 8)).astype(np.float32))
            f.write(name + "\n")


main()
