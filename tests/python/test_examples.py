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
    import importlib.util

    import numpy as np
    if importlib.util.find_spec("torch") is None:  # the examples need it; no import here
        raise ImportError("No module named 'torch'")
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
    procs = {}
    for fw in ("torch", "onnx"):  # both at once: each spends seconds importing torch
        procs[fw] = subprocess.Popen(
            [sys.executable, os.path.join(EX, "vision_encoder.py"), "--framework", fw,
             "--backend", "sim", "--partition", "supported", "--save",
             os.path.join(tmp, fw + ".npy")] + (["--export", tmp] if fw == "onnx" else []),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for fw in ("torch", "onnx"):
        f = os.path.join(tmp, fw + ".npy")
        out, err = procs[fw].communicate()
        rc = procs[fw].returncode
        if rc:
            print(out + err)
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
    # run_onnx.py on the model vision_encoder.py exported
    onnx = os.path.join(tmp, "vision_encoder.onnx")
    rc, out = run(os.path.join(EX, "run_onnx.py"), onnx, "--backend", "cpu", "--input",
                  "pixel_values=" + os.path.join(tmp, "pixel_values.npy"), "--save-dir", tmp)
    check(rc == 0 and "output embedding" in out and "run: host" in out,
          "run_onnx.py runs the exported encoder")
    if rc == 0 and "onnx" in embs:
        err = np.abs(np.load(os.path.join(tmp, "embedding.npy")) - embs["onnx"]).max()
        check(err < 2e-2, "run_onnx.py's saved output matches the example's (%.1e)" % err)
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
