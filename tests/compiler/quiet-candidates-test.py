#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# quiet-candidates-test.py NPUC NPU_RUN WORKDIR  (needs /usr/bin/python3: numpy, onnx)
"""A success prints no errors; a failure still names its problem.

The partitioner asks each node's lowering whether the NPU can take it (a dry run); a
refusal there leaves the node on the CPU and is no error of the compile. EfficientNet's
squeeze-excite GlobalAveragePool over [1, 144, 28, 28] is one such node: its depthwise
conv form does not fit the CBUF. The synthetic model here has that node between two
convs. Checked:
  - npuc compiles it with exit status 0 and no "error" on stderr, and the artifact runs
    on the simulator with no "error" on stderr either;
  - the refusal's reason is still there for who asks: npuc --explain gives it on the
    node's row, NPU_DEBUG=debug logs it as a "(probe)" debug line;
  - a genuinely bad model (a Conv whose weights have the wrong channel count) fails with
    a non-zero status and an error line naming the problem.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NPUC, RUN, WORK = sys.argv[1], sys.argv[2], os.path.join(sys.argv[3], "quiet-candidates")
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
rng = np.random.default_rng(7)
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def model(path, c_in=16, c_mid=144, w_in=None):
    """x [1, c_in, 28, 28] -> Conv 1x1 (c_mid) -> GlobalAveragePool -> Conv 1x1 (16) -> y."""
    w1 = (rng.standard_normal((c_mid, w_in or c_in, 1, 1)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, c_mid, 1, 1)) * 0.1).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["a"], name="expand"),
         helper.make_node("GlobalAveragePool", ["a"], ["p"], name="squeeze"),
         helper.make_node("Conv", ["p", "w2"], ["y"], name="excite")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, 28, 28])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def run(args, env=None):
    e = dict(os.environ)
    e.pop("NPU_DEBUG", None)
    e.update(env or {})
    # a cross build's tools run under meson's exe wrapper (qemu-aarch64 in scripts/test.sh)
    wrap = os.environ.get("MESON_EXE_WRAPPER", "").split()
    p = subprocess.run(wrap + args, capture_output=True, text=True, env=e, timeout=300)
    return p.returncode, p.stdout, p.stderr


def error_lines(text):
    return [l for l in text.splitlines() if "error" in l.lower()]


good = os.path.join(WORK, "se.onnx")
model(good)
npub = os.path.join(WORK, "se.npub")
rc, out, err = run([NPUC, good, "-o", npub])
check(rc == 0, "npuc compiles the model (status %d: %s)" % (rc, err.strip()))
check(not error_lines(err), "npuc success with no error lines, got: %s" % error_lines(err))

x = rng.standard_normal((1, 16, 28, 28)).astype(np.float32)
np.save(os.path.join(WORK, "x.npy"), x)
rc, out, err = run([RUN, npub, "--backend", "sim", "--input", "x=" + os.path.join(WORK, "x.npy"),
                    "--output-dir", os.path.join(WORK, "out"), "-q"])
check(rc == 0, "npu-run runs the artifact (status %d: %s)" % (rc, err.strip()))
check(not error_lines(err), "npu-run success with no error lines, got: %s" % error_lines(err))

# the reason is kept: --explain shows it on the node, the debug log as a probe line
rc, out, err = run([NPUC, good, "--explain"])
row = [l for l in out.splitlines() if "GlobalAveragePool" in l]
check(rc == 0 and row and "CBUF" in row[0], "--explain gives the CBUF reason: %s" % row)
check(not error_lines(err), "npuc --explain with no error lines, got: %s" % error_lines(err))
rc, out, err = run([NPUC, good], {"NPU_DEBUG": "debug"})
probe = [l for l in err.splitlines() if "(probe)" in l and "CBUF" in l]
check(rc == 0 and probe and all("debug" in l for l in probe),
      "NPU_DEBUG=debug logs the refusal as a debug probe line")

# a genuinely bad model still fails loudly, with the reason
bad = os.path.join(WORK, "bad.onnx")
model(bad, w_in=15)
rc, out, err = run([NPUC, bad, "-o", os.path.join(WORK, "bad.npub")])
check(rc != 0, "npuc refuses the bad model (status %d)" % rc)
check(any("error" in l and "channel" in l.lower() for l in err.splitlines()),
      "the bad model's error names the channels: %s" % err.strip())

print("%d failure(s)" % len(fails) if fails else "ok")
sys.exit(1 if fails else 0)
