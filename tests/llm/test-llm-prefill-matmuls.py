#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The LLaMA prefill program keeps its output projection on the NPU (issue 12 item 6). Its
# head merge, Transpose (0, 2, 1, 3) + Reshape [1, s, H, hd] -> [1, s, H hd], sits behind a
# CPU attention; the Reshape alone went to the NPU as a copy in its input's view, which the
# projection's MatMul (a convolution: the canonical view only) cannot read, so the lowering
# sent the MatMuls back to the CPU after the partition had priced them on the NPU: 6 of
# tinyllama-2l's 10 CPU MatMuls in its prefill, 86 of its 122 ms of CPU steps (RK3588 CPU
# model v1, one thread). Two checks:
#   - npuc on that head merge at TinyLlama's shape (32 heads x 64, 128 tokens) feeding a
#     [2048, 256] projection, default partition (by cost): the MatMul is in an NPU job, no
#     CPU MatMul step;
#   - the LLaMA test checkpoint's prefill (8 tokens) on sim with every node the NPU takes
#     on the NPU (NPU_PARTITION=supported): no MatMul stays on the CPU at lowering and none
#     is among the prefill's priced CPU steps (NPU_DEBUG=debug).
# Needs /usr/bin/python3 with torch for the checkpoint (skips otherwise).
#
#   test-llm-prefill-matmuls.py NPU_GENERATE NPUC
import os
import random
import struct
import subprocess
import sys
import tempfile

import llmtest

llmtest.need("numpy", "torch")  # gen-llm.py


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def head_merge_graph(path, K=2048, N=256):
    """[1, 32, 128, 64] -> Transpose (0, 2, 1, 3) -> Reshape [1, 128, 2048] -> MatMul."""
    rng = random.Random(1)
    w = struct.pack(f"<{K * N}f", *[rng.uniform(-0.05, 0.05) for _ in range(K * N)])
    with open(path + ".bin", "wb") as f:
        f.write(w)
    with open(path, "w") as f:
        f.write(f"""# opennpu ir v1
graph "head_merge" opset=18 {{
  input %y: f32[1,32,128,64]
  const %shape: i64[3] = [1, 128, {K}]
  const %w: f32[{K},{N}] = blob(fnv1a64=0x{fnv1a64(w):016x}, bytes={len(w)}, offset=0)
  %t: f32[1,128,32,64] = Transpose(%y) {{perm=[0,2,1,3]}} <name="merge">
  %r: f32[1,128,{K}] = Reshape(%t, %shape) <name="flat">
  %o: f32[1,128,{N}] = MatMul(%r, %w) <name="o_proj">
  output %o
}}
""")


def main():
    gen, npuc = sys.argv[1], sys.argv[2]
    fails = 0

    def check(ok, what, detail=""):
        nonlocal fails
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok and detail:
            print(detail)

    with tempfile.TemporaryDirectory(prefix="npu-llm-prefill-mm-") as tmp:
        g = os.path.join(tmp, "merge.npuir")
        head_merge_graph(g)
        env = dict(os.environ)
        env.pop("NPU_PARTITION", None)
        env.pop("NPU_HW_PROFILE", None)
        r = subprocess.run([npuc, g, "--print-program", "-t", "1", "--cpu-cost", "board"],
                           env=env, capture_output=True, text=True)
        out = r.stdout + r.stderr
        steps = [ln for ln in out.splitlines() if ln.strip().startswith("step ")]
        cpu_mm = [ln for ln in steps if " cpu MatMul " in ln]
        npu_mm = [ln for ln in steps if "npu-job" in ln and "o_proj" in ln]
        check(r.returncode == 0 and not cpu_mm and npu_mm,
              f"head merge [1, 32, 128, 64] -> [1, 128, 2048] behind a CPU Transpose: the "
              f"projection in an NPU job ({len(npu_mm)}), CPU MatMul steps {len(cpu_mm)}",
              out)

        gl = llmtest.gen_llm()
        cfg, p, _ = gl.make("llama", gl.SEEDS["llama"], gl.MODELS["llama"])
        folder = os.path.join(tmp, "llama")
        gl.save_folder("llama", folder, cfg, p)
        env = dict(os.environ, NPU_PARTITION="supported", NPU_DEBUG="debug")
        env.pop("NPU_HW_PROFILE", None)
        r = subprocess.run([gen, folder, "--backend", "sim", "--prompt-ids",
                            "5,77,130,9,44,200,3,17", "--max-new-tokens", "2", "--max-context",
                            "64", "--cpu-threads", "1", "--no-cache", "--ids"], env=env,
                           capture_output=True, text=True)
        lines = r.stderr.splitlines()
        # the decode step is compiled at load and reports first; what follows its summary
        # up to the prefill's figure is the prefill's compile and its priced CPU steps
        start = next((i for i, ln in enumerate(lines) if ln.startswith("decode program:")), None)
        end = next((i for i, ln in enumerate(lines) if ln.startswith("prompt tokens:")), None)
        if r.returncode or start is None or end is None or end < start:
            check(False, "npu-generate ran the LLaMA test checkpoint's prefill",
                  "\n".join(lines[-40:]))
        else:
            pre = lines[start + 1:end]
            stays = [ln for ln in pre if "(MatMul) stays on the CPU" in ln]
            priced = [ln for ln in pre if "modeled CPU step: MatMul" in ln]
            check(not stays and not priced,
                  f"LLaMA test checkpoint, prefill of 8 tokens, NPU_PARTITION=supported: "
                  f"{len(stays)} MatMul(s) sent back to the CPU at lowering, {len(priced)} "
                  f"CPU MatMul step(s) (want 0 and 0)", "\n".join(stays + priced))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
