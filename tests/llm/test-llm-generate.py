#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# npu-generate against the PyTorch fp32 reference of gen-llm.py, on one
# backend: for the GPT-2 (F16, bare names with attn.bias buffers), LLaMA (GQA,
# BF16, untied, hub cache layout) and Qwen2 (biases, tied, F32, sharded) test
# checkpoints, `--prompt-ids ... --max-new-tokens 32 --greedy --ids` must give
# the reference's 32 ids exactly, and with the reference ids forced
# (--force-ids) every step's logits must agree with the reference's
# teacher-forced logits to cosine >= 0.999. On sim the partition puts every
# node the NPU takes on the NPU (NPU_PARTITION=supported), so the NPU
# really computes. Needs /usr/bin/python3 with torch and numpy (skips
# otherwise).
#
#   test-llm-generate.py NPU_GENERATE BACKEND [--cores N] [--npu-attention] [--wrapper W]
#
# BACKEND auto: the simulator, or in scripts/test.sh's kernel-double stages the rknpu and
# rocket devices the double provides (test llm-generate-auto), so that --backend rknpu |
# rocket is exercised end to end; the backend that ran is printed.
# --wrapper W (e.g. qemu-aarch64) runs a cross-built npu-generate.
# --cores N: each step's NPU jobs split over N cores (npu-generate --cores; sim):
# the ids and logits must not change, and the split must be reported.
# --npu-attention: every model's decode step's attention must run on the NPU (its mask a
# run-time input; LLaMA's and Qwen2's grouped-query attention reads the RoPE'd query as
# rows, docs/llm.md), as npu-generate's "decode program" line says.
# On sim, LLaMA's and Qwen2's decode step leaves no product on the CPU ("(0 MatMul)" in that
# line): the output projection behind the NPU attention's one-token head merge included
# (dpu-move.c lower_row_merge; before it, those products stayed on the CPU).
# Greedy without --logits-out reads each decode step's token as the argmax over the logits as
# the NPU wrote them (fp16 or fp32), nothing converted (npu_llm_sampling.no_logits, branch
# gpt2argmax): on the NPU backends every decode step must say so (31 of 32 tokens; none on
# cpu), and
# --convert-logits (the fp32 logits converted, the argmax taken there) must give the same ids;
# a sampled run (--temperature) converts them (no argmax steps).
import os
import re
import subprocess
import sys
import tempfile

import llmtest

np, _ = llmtest.need("numpy", "torch")  # torch: gen-llm.py
llmtest.private_compile_cache()


def main():
    gen, backend = sys.argv[1], sys.argv[2]
    extra, want_npu_attn, wrap = [], False, []
    rest = sys.argv[3:]
    while rest:
        if rest[0] == "--cores":
            extra += llmtest.split_cores(rest[1])
            rest = rest[2:]
        elif rest[0] == "--wrapper":
            wrap = [rest[1]]
            rest = rest[2:]
        elif rest[0] == "--npu-attention":
            want_npu_attn = True
            rest = rest[1:]
        else:
            sys.exit(f"unknown argument {rest[0]}")
    env = llmtest.backend_env(backend)
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-llm-") as tmp:
        for name, ref in llmtest.checkpoints(tmp):
            prompt = llmtest.ids_arg(ref["prompt"])
            base = wrap + [gen, ref["folder"], "--prompt-ids", prompt, "--max-new-tokens", "32",
                           "--backend", backend] + extra
            r = subprocess.run(base + ["--greedy", "--ids"], env=env, capture_output=True,
                               text=True)
            want = "ids: " + " ".join(map(str, ref["ids"])) + "\n"
            if r.returncode != 0 or r.stdout != want:
                print(f"FAIL {name} {backend}: greedy ids differ\n  want {want!r}\n  got  "
                      f"{r.stdout!r}\n{r.stderr}")
                fails += 1
            else:
                print(f"ok   {name} {backend}: 32 greedy ids match the reference")
            am = re.search(r"; (\d+) step\(s\) read the token as the argmax of the logits in the NPU "
                           r"layout",
                           r.stderr)
            want_am = 0 if backend == "cpu" else 31
            if (int(am[1]) if am else 0) != want_am:
                print(f"FAIL {name} {backend}: {am[1] if am else 0} decode step(s) took the "
                      f"argmax over the logits in the NPU layout, want {want_am}")
                fails += 1
            rc = subprocess.run(base + ["--greedy", "--ids", "--convert-logits"], env=env,
                                capture_output=True, text=True)
            if rc.returncode != 0 or rc.stdout != r.stdout or "argmax" in rc.stderr:
                print(f"FAIL {name} {backend}: --convert-logits gives {rc.stdout!r}, without "
                      f"{r.stdout!r}\n{rc.stderr}")
                fails += 1
            else:
                print(f"ok   {name} {backend}: the same ids with the logits converted")
            rt = subprocess.run(base + ["--temperature", "0.8", "--top-k", "5", "--ids"], env=env,
                                capture_output=True, text=True)
            if rt.returncode != 0 or not rt.stdout.startswith("ids: ") or "argmax" in rt.stderr:
                print(f"FAIL {name} {backend}: sampled run\n{rt.stdout}{rt.stderr}")
                fails += 1
            info = [ln for ln in r.stderr.splitlines()
                    if ln.startswith(("decode program", "decode split"))]
            ran = re.search(r"; backend (\w+)$", r.stderr.splitlines()[0] if r.stderr else "")
            print(f"     backend {ran[1] if ran else '?'}")
            for ln in info:
                print("     " + ln)
            on_npu = any("attention on the NPU (0 of" in ln for ln in info)
            if backend == "sim" and name in ("llama", "qwen2"):
                dec = [ln for ln in info if ln.startswith("decode program")]
                if not dec or not on_npu or "(0 MatMul)" not in dec[0]:
                    print(f"FAIL {name} {backend}: products of the decode step on the CPU "
                          f"(want attention on the NPU and 0 MatMul): {dec}")
                    fails += 1
            if want_npu_attn and not on_npu:
                print(f"FAIL {name} {backend}: the decode step's attention is not on the NPU")
                fails += 1
            split = [ln for ln in info if ln.startswith("decode split over")]
            if extra and (not split or " in 0 multi-core" in split[0]):
                print(f"FAIL {name} {backend}: no multi-core submits reported")
                fails += 1
            lo = os.path.join(tmp, name + "." + backend + ".npy")
            r = subprocess.run(base + ["--ids", "--quiet", "--force-ids",
                                       llmtest.ids_arg(ref["ids"]), "--logits-out", lo],
                               env=env, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name} {backend}: teacher-forced run failed\n{r.stderr}")
                fails += 1
                continue
            cos, _, why = llmtest.logits_against_reference(np, lo, tmp, name)
            if why:
                print(f"FAIL {name} {backend}: {why}")
                fails += 1
                continue
            worst = int(np.argmin(cos))
            verdict = "ok  " if cos.min() >= 0.999 else "FAIL"
            fails += verdict == "FAIL"
            print(f"{verdict} {name} {backend}: teacher-forced logits cosine min {cos.min():.6f} "
                  f"(step {worst}), mean {cos.mean():.6f}")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
