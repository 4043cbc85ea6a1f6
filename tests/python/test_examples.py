#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python examples (suite 'python', /usr/bin/python3): vision_encoder.py gives the
same embedding through --framework torch (opennpu.torch.compile) and --framework onnx
(torch.onnx.export + opennpu.Model) on the simulator with every supported node on the
NPU, both close to eager torch; run_onnx.py runs an exported model and saves outputs
that match torch. Exit 77 (skip) without numpy/torch."""
import os
import subprocess
import sys
import tempfile

if os.environ.get("OPENNPU_TEST_SKIP"):
    print("SKIP: " + os.environ["OPENNPU_TEST_SKIP"])
    sys.exit(77)
try:
    import numpy as np
    import torch
except ImportError as e:
    print("SKIP: %s (run with /usr/bin/python3, which has torch and numpy)" % e)
    sys.exit(77)

EX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
failures = []


def check(cond, what):
    print(("ok " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(*args):
    p = subprocess.run([sys.executable] + list(args), capture_output=True, text=True)
    out = p.stdout + p.stderr
    if p.returncode:
        print(out)
    return p.returncode, p.stdout


def main():
    tmp = tempfile.mkdtemp(prefix="opennpu-ex-")
    embs = {}
    for fw in ("torch", "onnx"):
        f = os.path.join(tmp, fw + ".npy")
        rc, out = run(os.path.join(EX, "vision_encoder.py"), "--framework", fw, "--backend",
                      "sim", "--partition", "supported", "--save", f)
        check(rc == 0 and os.path.exists(f), "vision_encoder.py --framework %s" % fw)
        if rc:
            continue
        print("  " + out.strip().replace("\n", "\n  "))
        check("modeled (timing model v" in out, "%s: the NPU time is labelled" % fw)
        dist = [ln for ln in out.split("\n") if ln.startswith("max |difference|")][0]
        check(float(dist.split(":")[1].split(";")[0]) < 2e-2,
              "%s: close to eager torch (%s)" % (fw, dist))
        embs[fw] = np.load(f)
    if len(embs) == 2:
        d = np.abs(embs["torch"] - embs["onnx"]).max()
        check(embs["torch"].shape == embs["onnx"].shape and d < 2e-2,
              "torch and onnx embeddings agree (max |diff| %.2e)" % d)
    # run_onnx.py on an exported model
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 6 * 6, 5)).eval()
    x = torch.randn(1, 3, 8, 8)
    onnx = os.path.join(tmp, "net.onnx")
    torch.onnx.export(net, (x,), onnx, input_names=["x"], output_names=["y"],
                      opset_version=13)
    np.save(os.path.join(tmp, "x.npy"), x.numpy())
    rc, out = run(os.path.join(EX, "run_onnx.py"), onnx, "--backend", "cpu", "--input",
                  "x=" + os.path.join(tmp, "x.npy"), "--save-dir", tmp)
    check(rc == 0 and "output y" in out and "run: host" in out, "run_onnx.py runs the model")
    if rc == 0:
        with torch.no_grad():
            err = np.abs(np.load(os.path.join(tmp, "y.npy")) - net(x).numpy()).max()
        check(err < 1e-5, "run_onnx.py's saved output matches torch (%.1e)" % err)
    rc, out = run(os.path.join(EX, "run_onnx.py"), onnx, "--input", "nope=x.npy")
    check(rc == 2, "run_onnx.py refuses an unknown input name")
    rc, out = run(os.path.join(EX, "run_onnx.py"), "--backends")
    check(rc == 0 and "sim" in out, "run_onnx.py --backends")
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    print("%d failure(s)" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
