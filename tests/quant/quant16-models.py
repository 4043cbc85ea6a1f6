#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# w16a16i on test models with large conv biases (tests/models/data: mobilenet_tiny,
# yolo_tiny): npuc --quantize w16a16i from 4 random calibration inputs must quantise
# every layer (a bias that int32 cannot hold at the int16 scales goes after the
# DequantizeLinear, docs/quantisation.md), and the program on the strict simulator must
# match the fp32 model on the CPU (cosine >= 0.9999) on another input.
#   quant16-models.py BUILD_DIR MODELS_DIR WORKDIR   (Debian's /usr/bin/python3: numpy, onnx)
import glob
import json
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
except ImportError as e:
    print(f"SKIP: {e} (use Debian's /usr/bin/python3)")
    sys.exit(77)

B, MD, W = sys.argv[1:4]
NPUC, RUN = f"{B}/tools/npuc/npuc", f"{B}/tools/npu-run/npu-run"
os.environ["NPU_SIM_EVIDENCE"] = "T"
rng = np.random.default_rng(16)
bad = 0
for m in ("mobilenet_tiny", "yolo_tiny"):
    model = f"{MD}/{m}/model.onnx"
    d = f"{W}/{m}"
    os.makedirs(d, exist_ok=True)
    g = onnx.load(model).graph
    inits = {i.name for i in g.initializer}
    inp = [i for i in g.input if i.name not in inits][0]
    # symbolic dims at the export size (meta.txt: batch=1,height=32,width=32)
    sym = dict(kv.split("=") for kv in open(f"{MD}/{m}/meta.txt").readline().strip().split(",")
               if "=" in kv) if os.path.exists(f"{MD}/{m}/meta.txt") else {}
    dims = [x.dim_value if x.dim_value > 0 else int(sym.get(x.dim_param, 1))
            for x in inp.type.tensor_type.shape.dim]
    dflag = ["-d", ",".join(f"{k}={v}" for k, v in sym.items())] if sym else []
    with open(f"{d}/calib.txt", "w") as f:
        for s in range(5):
            np.save(f"{d}/in{s}.npy", rng.normal(0, 1, dims).astype(np.float32))
            if s < 4:
                f.write(f"in{s}.npy\n")
    q = subprocess.run([NPUC, model, "--quantize", "w16a16i", "--dataset", f"{d}/calib.txt",
                        "-p", "supported", *dflag, "--accuracy", f"{d}/acc.json", "-o", f"{d}/q.npub",
                        "--emit-qdq", f"{d}/qdq.onnx"], capture_output=True, text=True)
    if q.returncode:
        print(f"FAIL {m}: npuc: {q.stderr.strip()}")
        bad += 1
        continue
    rep = json.load(open(f"{d}/acc.json"))
    qdq = onnx.load(f"{d}/qdq.onnx").graph
    after = sum(1 for i in qdq.initializer if i.name.endswith("_bias_after"))
    print(f"{m}: {rep['quantised']} of {rep['layers_total']} layers int16, {after} with the "
          f"bias after the DequantizeLinear")
    if rep["quantised"] != rep["layers_total"]:
        print(f"FAIL {m}: layers left float: "
              + "; ".join(sorted({x['why'] for x in rep['layers'] if x['why']})))
        bad += 1
    outs = {}
    for name, path, be in (("sim", f"{d}/q.npub", "sim"), ("cpu", model, "cpu")):
        od = f"{d}/out-{name}"
        r = subprocess.run([RUN, path, "--backend", be, *(dflag if be == "cpu" else []), "-i", f"{inp.name}={d}/in4.npy", "-o", od,
                            "-q"], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {m}: npu-run {name}: {r.stderr.strip()[-300:]}")
            bad += 1
        outs[name] = od
    for f in sorted(glob.glob(f"{outs['cpu']}/*.npy")):
        p = f.replace(outs["cpu"], outs["sim"])
        if not os.path.exists(p):
            continue
        a, b = np.load(f).ravel().astype(np.float64), np.load(p).ravel().astype(np.float64)
        cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
        print(f"  {os.path.basename(f)}: cosine sim (w16a16i) vs cpu (fp32) {cos:.7f}")
        if not cos >= 0.9999:
            print(f"FAIL {m}: cosine {cos:.7f} < 0.9999")
            bad += 1
sys.exit(1 if bad else 0)
