#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""opennpu.Model and opennpu.backends() (suite 'python', /usr/bin/python3): a small
ONNX model exported with torch at test time, run on cpu and sim with dict and list
inputs against torch; symbolic dims; run statistics and their label; views versus
copies; errors carry the library's message. Exit 77 (skip) without numpy/torch."""
import os
import sys

if os.environ.get("OPENNPU_TEST_SKIP"):
    print("SKIP: " + os.environ["OPENNPU_TEST_SKIP"])
    sys.exit(77)
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError as e:
    print("SKIP: %s (run with /usr/bin/python3, which has torch and numpy)" % e)
    sys.exit(77)

import opennpu

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    else:
        print("ok", what)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, image, bias):
        y = torch.relu(self.conv(image)).mean(dim=(2, 3))
        return self.fc(y) + bias, y


def main():
    torch.manual_seed(0)
    bk = opennpu.backends()
    names = [b.name for b in bk]
    check(names[0] == "cpu" and "sim" in names and "rknpu" in names and "rocket" in names,
          "backends() lists cpu, rknpu, rocket, sim: %s" % names)
    check(all(b.reason for b in bk), "every backend has a reason")
    check([b.available for b in bk if b.name in ("cpu", "sim")] == [True, True],
          "cpu and sim are available")

    net = Net().eval()
    tmp = tempfile.mkdtemp(prefix="opennpu-pytest-")
    path = os.path.join(tmp, "net.onnx")
    img = torch.randn(2, 3, 16, 16)
    bias = torch.randn(1, 5)
    torch.onnx.export(net, (img, bias), path, input_names=["image", "bias"],
                      output_names=["logits", "features"],
                      dynamic_axes={"image": {0: "batch"}}, opset_version=13)
    with torch.no_grad():
        ref = [t.numpy() for t in net(img, bias)]

    for be, tol in (("cpu", 1e-5), ("sim", 2e-2)):
        m = opennpu.Model(path, backend=be, dims={"batch": 2},
                          partition="supported" if be == "sim" else None)
        check(m.backend == be, "%s: model.backend = %s" % (be, m.backend))
        check([tuple(i) for i in m.inputs] ==
              [("image", np.dtype(np.float32), (2, 3, 16, 16)),
               ("bias", np.dtype(np.float32), (1, 5))], "%s: inputs %s" % (be, m.inputs))
        check([(o.name, o.shape) for o in m.outputs] == [("logits", (2, 5)),
                                                         ("features", (2, 8))],
              "%s: outputs %s" % (be, m.outputs))
        r1 = m.run({"image": img.numpy(), "bias": bias.numpy()})
        check(list(r1) == ["logits", "features"], "%s: run returns a dict in output order" % be)
        for (k, v), want in zip(r1.items(), ref):
            err = np.abs(v - want).max() / np.abs(want).max()
            check(err <= tol, "%s: %s matches torch (rel err %.2e)" % (be, k, err))
        r2 = m.run([img.numpy(), bias.numpy()])
        check(all(np.array_equal(r1[k], r2[k]) for k in r1), "%s: list inputs" % be)
        st = m.stats
        check(st.wall_s > 0, "%s: stats host time %s" % (be, st))
        if be == "sim":
            check(st.npu_time_label in ("modeled (timing model v1)",
                                        "modeled (timing model v2)") and
                  st.submits > 0 and st.npu_modeled_s > 0,
                  "sim: modeled NPU time is labelled: %s" % (st,))
        else:
            check(st.submits == 0 and st.npu_modeled_s == 0, "cpu: no NPU figures")
        v = m.run([img.numpy(), bias.numpy()], copy=False)
        c = m.run([img.numpy(), bias.numpy()])
        check(not v["logits"].flags.owndata and c["logits"].flags.owndata,
              "%s: copy=False gives views, copy=True own arrays" % be)
        # no-copy inputs: a non-contiguous or float64 input is converted, not refused
        r3 = m.run([np.asfortranarray(img.numpy()), bias.numpy().astype(np.float64)])
        check(np.allclose(r3["logits"], r1["logits"], atol=1e-6),
              "%s: non-contiguous and float64 inputs are converted" % be)
        for bad, exc, needle in (
                ({"image": img.numpy()}, ValueError, "input bias not given"),
                ({"image": img.numpy(), "bias": bias.numpy(), "x": 1}, ValueError,
                 "no input named x"),
                ([img.numpy()[:1], bias.numpy()], ValueError, "must have shape (2, 3, 16, 16)"),
                ([img.numpy().astype(np.int64), bias.numpy()], TypeError, "must be float32")):
            try:
                m.run(bad)
                check(False, "%s: bad input accepted (%s)" % (be, needle))
            except exc as e:
                check(needle in str(e), "%s: bad input refused: %s" % (be, e))
        m.close()

    m3 = opennpu.Model(path, backend="cpu", dims="batch=3")
    check(m3.inputs[0].shape == (3, 3, 16, 16), "dims as a string binds the batch")
    for p, status, needle in ((os.path.join(tmp, "missing.onnx"), "i/o error", "missing.onnx"),
                              (path, "invalid argument or input", "nosuchdim")):
        try:
            opennpu.Model(p, backend="cpu", dims={"nosuchdim": 2} if p == path else None)
            check(False, "error not raised for %s" % needle)
        except opennpu.Error as e:
            check(e.status_name == status and needle in str(e) and e.messages,
                  "library error carries its message: %r" % str(e))
    with open(os.path.join(tmp, "junk.onnx"), "wb") as f:
        f.write(b"\x08\x07garbage")
    try:
        opennpu.Model(os.path.join(tmp, "junk.onnx"), backend="cpu")
        check(False, "junk file accepted")
    except opennpu.Error as e:
        check("junk.onnx" in e.messages, "corrupt file: %s" % str(e).replace("\n", " | "))
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
