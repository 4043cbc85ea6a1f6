#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# RoPE scaling through the prefill and the decode step (branch review6). The LLaMA / Qwen2
# prefill holds its angles as constants of the program (llm_rope_tables at build time, branch
# llamapre) while the decode step takes them as inputs each run: both must be the scaled
# angles of config.json's rope_scaling. For hfconfigs.py's llama3-rope (Llama-3.2's llama3
# scaling, bands reached within 40 positions) and linear-rope variants, on sim with
# --max-context 40 (not the default 256: the angles must not follow the cache size), under the
# default cost partition and under NPU_PARTITION=supported: teacher-forced on the reference's
# 32 ids, every step's logits (the first is the prefill's, of the 7-token prompt) must lie
# within a tenth of the distance between gen-llm.py's PyTorch fp32 reference with the scaling
# and the same model with plain RoPE (max |difference| per step; a prefill with plain angles
# would be at that distance), and the greedy ids must be the reference's. Then the example
# application (examples/generate: 16 tokens, 4 more continuing the context, 16 again after
# npu_llm_reset, whose prefill is the same program run a second time) under the cost partition
# must give the reference's first 20 ids, and the same 16 after the reset.
# Needs /usr/bin/python3 with torch and numpy (skips otherwise).
#
#   test-llm-rope-prefill.py NPU_GENERATE EXAMPLE
import copy
import os
import subprocess
import sys
import tempfile

import llmtest

np, torch = llmtest.need("numpy", "torch")
import hfconfigs  # noqa: E402 (after the skip)

llmtest.private_compile_cache()
gl = llmtest.gen_llm()
RATIO = 0.1


def main():
    gen, example = sys.argv[1], sys.argv[2]
    fails = 0
    specs = hfconfigs.specs()
    with tempfile.TemporaryDirectory(prefix="npu-llm-rope-prefill-") as tmp:
        for name in ("llama3-rope", "linear-rope"):
            spec = specs[name]
            cfg, p, fwd = gl.make(name, hfconfigs.SEEDS[name], spec)
            ids, _, ref, _ = gl.greedy(cfg, p, fwd)
            plain = copy.deepcopy(cfg)
            plain["rope_scaling"] = None
            with torch.no_grad():
                pl = np.stack([fwd(plain, p, list(gl.PROMPT) + ids[:k])[-1].numpy()
                               for k in range(len(ids))]).astype(np.float64)
            ref = ref.astype(np.float64)
            dist = np.abs(ref - pl).max(1)
            folder = os.path.join(tmp, name)
            gl.save_folder("llama", folder, cfg, p, spec["dtype"])
            base = [gen, folder, "--prompt-ids", llmtest.ids_arg(gl.PROMPT), "--max-new-tokens",
                    "32", "--backend", "sim", "--max-context", "40", "--ids"]
            for part in ("cost", "supported"):
                env = dict(os.environ)
                env.pop("NPU_PARTITION", None)
                if part == "supported":
                    env["NPU_PARTITION"] = part
                lo = os.path.join(tmp, f"{name}.{part}.npy")
                t = subprocess.run(base + ["--quiet", "--force-ids", llmtest.ids_arg(ids),
                                           "--logits-out", lo], env=env, capture_output=True,
                                   text=True)
                g = subprocess.run(base + ["--greedy"], env=env, capture_output=True, text=True)
                got = [int(x) for x in g.stdout.split()[1:]] if g.stdout.startswith("ids:") \
                    else None
                if t.returncode or g.returncode:
                    print(f"FAIL {name} {part}: npu-generate failed\n{t.stderr}{g.stderr}")
                    fails += 1
                    continue
                lg = np.load(lo).astype(np.float64)
                if lg.shape != ref.shape:
                    print(f"FAIL {name} {part}: logits shape {lg.shape}, want {ref.shape}")
                    fails += 1
                    continue
                r = np.abs(lg - ref).max(1) / dist
                ok = r.max() < RATIO and got == ids
                fails += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} {part}: logits off the scaled "
                      f"reference by {r[0]:.4f} of plain RoPE's distance at the prefill, "
                      f"{r.max():.4f} at worst (step {int(r.argmax())}; want < {RATIO}); "
                      f"greedy ids {'=' if got == ids else '!='} reference")
                if got != ids:
                    print(f"  want {ids}\n  got  {got}")
            env = dict(os.environ)
            env.pop("NPU_PARTITION", None)
            e = subprocess.run([example, "-b", "sim", folder, llmtest.ids_arg(gl.PROMPT)],
                               env=env, capture_output=True, text=True)
            lines = dict(ln.split(":", 1) for ln in e.stdout.splitlines() if ":" in ln)
            first = [int(x) for x in lines.get("first", "").split()]
            more = [int(x) for x in lines.get("more", "").split()]
            again = [int(x) for x in lines.get("again", "").split()]
            ok = e.returncode == 0 and first + more == ids[:20] and again == first
            fails += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} cost: example's first + more = the "
                  f"reference's 20 ids, again after npu_llm_reset = first")
            if not ok:
                print(e.stdout, e.stderr[-2000:])
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
