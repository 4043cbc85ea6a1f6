#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# q's column blocks balanced against k and v on three cores (llm-graph.c q_balanced_heads):
# a LLaMA checkpoint shaped as TinyLlama in head counts (16 heads, 2 key/value heads,
# head_dim 32, random weights, made here with gen-llm.py's PyTorch reference), on sim with
# each step's jobs split over three cores (NPU_SPLIT_FORCE=1), fp16 and w8a8:
#   - the decode graph (NPU_LLM_DUMP_IR) takes one big block's angles (`cos`, `sin`
#     [7, 1, 32]: q in blocks of 7, 7 and 2 heads; the last, of k's head count, reads k's
#     `cos_k` / `sin_k` [2, 1, 32]) and joins the three RoPE'd blocks by l0.q.concat;
#   - w8a8 (its tasks are named by weight; NPU_LLM_BREAKDOWN): layer 0's q / k / v
#     products (q's three blocks, k, v) run in one submit over three cores, q's blocks
#     streaming 7, 7 and 2 heads' rows of int8 weights (k and v 2 each); the step keeps 3
#     submits a layer and one for the head (the cost partition, as the bench; which core
#     takes which chain is the planner's, by modeled time, and not checked at this size);
#   - in the decode step's graph the new k / v rows are not copied to a second shape for
#     the outputs: no Reshape to [1, 2, 1, 32] of either;
#   - fp16: the 32 greedy ids are the reference's; w8a8: teacher-forced logits cosine
#     >= 0.99 (as test-llm-w8a8.py).
# The test checkpoints of gen-llm.py (4 heads, 2 kv) keep q's two halves: test-llm-rope-blocks.
# Needs /usr/bin/python3 with torch and numpy (skips otherwise).
#
#   test-llm-q-balance.py NPU_GENERATE
import copy
import csv
import os
import re
import subprocess
import sys
import tempfile

import llmtest

np, _ = llmtest.need("numpy", "torch")
llmtest.private_compile_cache()
gl = llmtest.gen_llm()

H, KVH, HD, D = 16, 2, 32, 64
HB = (H - KVH) // 2  # the big blocks' heads


def spec():
    s = copy.deepcopy(gl.MODELS["llama"])
    s["cfg"].update({"num_attention_heads": H, "num_key_value_heads": KVH, "head_dim": HD,
                     "hidden_size": D})
    return s


def make(tmp):
    """The checkpoint folder and its reference (ids, logits) for the first usable seed."""
    sp = spec()
    for seed in range(40):
        cfg, p, fwd = gl.make("llama", seed, sp)
        ids, margin, logits, eos = gl.greedy(cfg, p, fwd)
        if len(set(ids)) >= 10 and margin >= 0.025 and not eos:
            folder = os.path.join(tmp, "llama-q16")
            gl.save_folder("llama", folder, cfg, p, sp["dtype"])
            np.save(os.path.join(tmp, "llama-q16.logits.npy"), logits.astype(np.float32))
            return folder, ids
    sys.exit("no usable seed for the 16-head checkpoint")


def check_ir(path):
    text = open(path).read()
    bad = []
    for nm, want in (("cos", f"{HB},1,{HD}"), ("sin", f"{HB},1,{HD}"),
                     ("cos_k", f"{KVH},1,{HD}"), ("sin_k", f"{KVH},1,{HD}")):
        m = re.search(r"input %" + nm + r": f32\[([0-9,]+)\]", text)
        if not m or m.group(1) != want:
            bad.append(f"input {nm} is {m.group(1) if m else 'missing'}, want [{want}]")
    if not re.search(r"l0\.q\.concat\b.*Concat|Concat.*l0\.q\.concat", text):
        bad.append("no Concat l0.q.concat")
    # q's three blocks' products (fp16: their weights l0.q.<k>.weight)
    for k in range(3):
        if f"l0.q.{k}." not in text:
            bad.append(f"no block l0.q.{k}")
    if "l0.q.3." in text:
        bad.append("q in more than three blocks")
    if re.search(r"f32\[1,2,1,32\] = Reshape\(", text):
        bad.append("a Reshape of a new k / v row to [1, 2, 1, 32]")
    return bad


def check_split(path):
    """Problems of the last decode step's tasks at PATH (w8a8, cost partition), and the number
    of submits."""
    rows = [r for r in csv.DictReader(ln for ln in open(path) if not ln.startswith("#"))]
    bad = []
    prod = {}  # layer 0's q / k / v products: name -> (submit, core, weight bytes)
    for r in rows:
        m = re.match(r"l0\.(q\.\d|k|v)\.weight\.qmatmul$", r["name"])
        if m and int(r["weight_bytes"]) > 0:
            prod[m.group(1)] = (r["submit"], r["core"], int(r["weight_bytes"]))
    want = {"q.0", "q.1", "q.2", "k", "v"}
    if set(prod) != want:
        return [f"layer 0's q / k / v products are {sorted(prod)}, want {sorted(want)}"], 0
    if len({s for s, _, _ in prod.values()}) != 1:
        bad.append(f"layer 0's q / k / v products in several submits: {prod}")
    if len({c for _, c, _ in prod.values()}) != 3:
        bad.append(f"layer 0's q / k / v products not over three cores: {prod}")
    # the heads of each block, from its int8 weight bytes (D x heads x head_dim)
    heads = {n: w // (D * HD) for n, (_, _, w) in prod.items()}
    if heads != {"q.0": HB, "q.1": HB, "q.2": KVH, "k": KVH, "v": KVH}:
        bad.append(f"heads per product {heads}, want q {HB} / {HB} / {KVH}, k and v {KVH}")
    nsub = len({r["submit"] for r in rows})
    if nsub != 3 * 2 + 1:
        bad.append(f"{nsub} submits in the step, want 3 a layer and the head's (7)")
    return bad, nsub


def main():
    gen = sys.argv[1]
    env = llmtest.backend_env("sim")
    extra = llmtest.split_cores(3)
    env["NPU_SPLIT_FORCE"] = "1"
    env.pop("NPU_PARTITION", None)  # the default, cost: the decode step as the bench runs it
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-llm-qbal-") as tmp:
        folder, ref = make(tmp)
        for weights in ("fp16", "w8a8"):
            dump = os.path.join(tmp, weights)
            bd = dump + ".csv"
            e = dict(env, NPU_LLM_DUMP_IR=dump, NPU_LLM_BREAKDOWN=bd)
            base = [gen, folder, "--prompt-ids", llmtest.ids_arg(gl.PROMPT),
                    "--max-new-tokens", "32", "--backend", "sim", "--weights", weights] + extra
            r = subprocess.run(base + ["--greedy", "--ids"], env=e, capture_output=True,
                               text=True)
            if r.returncode != 0:
                print(f"FAIL {weights}: npu-generate failed\n{r.stderr}")
                fails += 1
                continue
            want = "ids: " + " ".join(map(str, ref)) + "\n"
            if weights == "fp16" and r.stdout != want:
                print(f"FAIL {weights}: greedy ids differ\n  want {want!r}\n  got  {r.stdout!r}")
                fails += 1
            elif weights == "fp16":
                print(f"ok   {weights}: 32 greedy ids match the reference")
            bad = check_ir(dump + "-decode.npuir")
            nsub = 0
            if weights == "w8a8":
                sbad, nsub = check_split(bd)
                bad += sbad
            for b in bad:
                print(f"FAIL {weights}: {b}")
            fails += len(bad)
            if not bad:
                print(f"ok   {weights}: q in blocks of {HB}, {HB} and {KVH} heads (cos, sin "
                      f"[{HB},1,{HD}], the last block on k's angles)"
                      + (f"; balanced over three cores, {nsub} submits" if nsub else ""))
            if weights == "w8a8":
                fails += llmtest.check_teacher_forced(np, base, env, tmp, "llama-q16", ref,
                                                      weights)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
