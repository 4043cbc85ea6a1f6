#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Qwen2-0.5B's shape at a small scale on three cores (bench-llm.py qwen2-0.5b at full size):
# a Qwen2 checkpoint with its head counts (14 query heads over 2 key/value heads: 7 a KV
# head), q/k/v biases, a tied LM head of an odd vocabulary (30,001 rows: the head's column
# slices are not equal; at this size the w8a8 head's results stay int8 on the NPU, dequantised
# by their conversions, as Qwen2-0.5B's; at 1,001 rows the NPU dequantised them) and
# rope_theta 1e6, random weights, made here with gen-llm.py's
# PyTorch fp32 reference; on sim with each step's jobs split over three cores
# (NPU_SPLIT_FORCE=1, so that this size takes the split graph) under the cost partition:
#   - fp16 (NPU_PARTITION=supported: by cost this size would run on the CPU): the 32 greedy
#     ids are the reference's, read as the argmax over the head's
#     slices where the NPU left them (npu-generate: "read the token as the argmax of the
#     logits in the NPU layout" for every step), the head cut in column slices
#     (logits.0 .. logits.N-1, N >= 3);
#   - w8a8: teacher-forced logits cosine >= 0.99 against the reference (as test-llm-w8a8.py);
#     greedy, every step's token read as the argmax of the head's int8 slices in the NPU
#     layout, dequantised (branch gpt2q05), with the ids of a --convert-logits run.
# Needs /usr/bin/python3 with torch and numpy (skips otherwise).
#
#   test-llm-qwen-shape.py NPU_GENERATE
import copy
import os
import re
import subprocess
import sys
import tempfile

import llmtest

np, _ = llmtest.need("numpy", "torch")
llmtest.private_compile_cache()
gl = llmtest.gen_llm()

H, KVH, HD, VOCAB = 14, 2, 16, 30001


def spec():
    s = copy.deepcopy(gl.MODELS["qwen2"])
    s["cfg"].update({"num_attention_heads": H, "num_key_value_heads": KVH,
                     "hidden_size": H * HD, "intermediate_size": 384, "vocab_size": VOCAB,
                     "bos_token_id": VOCAB - 2, "eos_token_id": VOCAB - 1})
    return s


def make(tmp):
    """The checkpoint folder and its reference ids for the first usable seed."""
    sp = spec()
    for seed in range(40):
        cfg, p, fwd = gl.make("qwen2", seed, sp)
        ids, margin, logits, eos = gl.greedy(cfg, p, fwd)
        if len(set(ids)) >= 10 and margin >= 0.025 and not eos:
            folder = os.path.join(tmp, "qwen-shape")
            gl.save_folder("qwen2", folder, cfg, p, sp["dtype"])
            np.save(os.path.join(tmp, "qwen-shape.logits.npy"), logits.astype(np.float32))
            return folder, ids
    sys.exit("no usable seed for the Qwen-shaped checkpoint")


def check_w8a8_argmax(base, env):
    """w8a8 greedy: the token read as the argmax of the head's int8 slices where the NPU left
    them, dequantised as their conversion would (branch gpt2q05; before, the 30,001 logits were
    converted every step), gives the ids of the run that converts them (--convert-logits)."""
    runs = {}
    for tag, extra in (("argmax", []), ("converted", ["--convert-logits"])):
        r = subprocess.run(base + ["--greedy", "--ids"] + extra, env=env, capture_output=True,
                           text=True)
        if r.returncode != 0:
            print(f"FAIL w8a8 {tag}: npu-generate failed\n{r.stderr[-4000:]}")
            return 1
        m = re.search(r"(\d+) step\(s\) read the token as the argmax of the logits in the "
                      r"NPU layout", r.stderr)
        runs[tag] = (r.stdout, int(m.group(1)) if m else 0)
    bad = []
    if runs["argmax"][1] != 31:
        bad.append(f"{runs['argmax'][1]} step(s) took the argmax of the int8 logits in the NPU "
                   f"layout, want 31")
    if runs["converted"][1] != 0:
        bad.append("--convert-logits still took the argmax in the NPU layout")
    if runs["argmax"][0] != runs["converted"][0]:
        bad.append(f"greedy ids differ from the converted logits' run\n  converted "
                   f"{runs['converted'][0]!r}\n  argmax    {runs['argmax'][0]!r}")
    for b in bad:
        print(f"FAIL w8a8: {b}")
    if not bad:
        print("ok   w8a8: 32 greedy ids read as the argmax of the int8 logits in the NPU layout, "
              "as the converted logits' run")
    return len(bad)


def main():
    gen = sys.argv[1]
    env = llmtest.backend_env("sim")
    env["NPU_SPLIT_FORCE"] = "1"
    env.pop("NPU_PARTITION", None)  # the default, cost: the decode step as the bench runs it
    extra = llmtest.split_cores(3)
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-llm-qwen-") as tmp:
        folder, ref = make(tmp)
        for weights in ("fp16", "w8a8"):
            base = [gen, folder, "--prompt-ids", llmtest.ids_arg(gl.PROMPT),
                    "--max-new-tokens", "32", "--backend", "sim", "--weights", weights] + extra
            if weights == "w8a8":
                fails += llmtest.check_teacher_forced(np, base, env, tmp, "qwen-shape", ref,
                                                      weights)
                fails += check_w8a8_argmax(base, env)
                continue
            # NPU_PARTITION=supported: at this size the cost partition runs the fp16 step on
            # the CPU (its products are too small to pay); supported puts them on the NPU
            r = subprocess.run(base + ["--greedy", "--ids"],
                               env=dict(env, NPU_DEBUG="debug", NPU_PARTITION="supported"),
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {weights}: npu-generate failed\n{r.stderr[-4000:]}")
                fails += 1
                continue
            bad = []
            want = "ids: " + " ".join(map(str, ref)) + "\n"
            if r.stdout != want:
                bad.append(f"greedy ids differ\n  want {want!r}\n  got  {r.stdout!r}")
            m = re.search(r"(\d+) step\(s\) read the token as the argmax of the logits in the "
                          r"NPU layout", r.stderr)
            if not m or int(m.group(1)) != 31:
                bad.append(f"{m.group(1) if m else 'no'} step(s) took the argmax in the NPU "
                           f"layout, want 31")
            slices = set(re.findall(r"conversion (logits\.\d+)\S*,", r.stderr))
            if len(slices) < 3 or slices != {f"logits.{k}" for k in range(len(slices))}:
                bad.append(f"the head's slices are {sorted(slices)}, want logits.0 .. logits.N-1, "
                           f"N >= 3")
            for b in bad:
                print(f"FAIL {weights}: {b}")
            fails += len(bad)
            if not bad:
                print(f"ok   {weights}: 32 greedy ids match the reference (14 heads over 2 KV "
                      f"heads, the tied head in {len(slices)} slices, argmax in the NPU layout)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
