#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The decode step's q blocks RoPE'd each on its own (llm-graph.c llm_rope_block_heads),
# on sim with each step's jobs split over three cores (NPU_SPLIT_FORCE=1, so the tiny test
# checkpoints take the split graph), for the LLaMA (GQA) and Qwen2 (q/k/v biases: the
# blocks' bias slices) test checkpoints, fp16 and w8a8:
#   - the decode graph (NPU_LLM_DUMP_IR) takes one q block's angles (`cos`, `sin`
#     [heads per block, 1, head_dim]) and joins the RoPE'd blocks' heads by a Concat on
#     axis 0, after k's and v's cache writes;
#   - in the last decode step's tasks (NPU_LLM_BREAKDOWN) every submit that holds a cache
#     write (npu.StateWrite) also runs tasks on another core, and (w8a8, whose tasks are
#     named by weight) layer 0's k write runs in the submit of its q blocks' products: k's
#     RoPE and the writes run in the three-core submit of the q, k and v chains, not after
#     it on core 0 (as they did when q was RoPE'd after its join);
#   - fp16: the 32 greedy ids are the reference's (gen-llm.py's PyTorch fp32 reference);
#     w8a8: teacher-forced logits cosine >= 0.99 (as test-llm-w8a8.py).
# Needs /usr/bin/python3 with torch and numpy (skips otherwise).
#
#   test-llm-rope-blocks.py NPU_GENERATE
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

import llmtest

np, _ = llmtest.need("numpy", "torch")  # torch: gen-llm.py
llmtest.private_compile_cache()


def check_ir(path, heads, hd):
    """Problems of the decode graph's text at PATH (empty: as wanted)."""
    text = open(path).read()
    bad = []
    for nm in ("cos", "sin"):
        m = re.search(r"input %" + nm + r": f32\[([0-9,]+)\]", text)
        if not m or m.group(1) != f"{heads},1,{hd}":
            bad.append(f"input {nm} is {m.group(1) if m else 'missing'}, want [{heads},1,{hd}]")
    lines = text.splitlines()
    cat = [i for i, ln in enumerate(lines) if "l0.q.concat" in ln and "Concat" in ln]
    if not cat or "axis=0" not in lines[cat[0]].replace(" ", ""):
        bad.append(f"no Concat l0.q.concat on axis 0: {lines[cat[0]] if cat else None}")
    writes = [i for i, ln in enumerate(lines) if "npu.StateWrite" in ln]
    if cat and (len(writes) < 2 or writes[1] > cat[0]):
        bad.append("layer 0's cache writes do not come before q's join")
    return bad


def check_split(path):
    """Problems of the last decode step's task list at PATH (empty: as wanted), and the
    number of submits."""
    rows = [r for r in csv.DictReader(ln for ln in open(path) if not ln.startswith("#"))]
    cores, writes = {}, set()
    for r in rows:
        cores.setdefault(r["submit"], set()).add(r["core"])
        if r["name"].startswith("npu.StateWrite"):
            writes.add(r["submit"])
    bad = [f"submit {s} holds a cache write on core 0 alone" for s in sorted(writes, key=int)
           if len(cores[s]) < 2]
    if not writes:
        bad.append("no cache write among the tasks")
    # w8a8 names its products' tasks by weight: layer 0's first cache write (k's) runs in
    # the submit of its q blocks' products
    first = next((r["submit"] for r in rows if r["name"].startswith("npu.StateWrite")), None)
    q0 = [r["submit"] for r in rows if r["name"] == "l0.q.0.weight.qmatmul"]
    if q0 and first != q0[0]:
        bad.append(f"layer 0's first cache write in submit {first}, its q products' in {q0[0]}")
    return bad, len(cores)


def main():
    gen = sys.argv[1]
    env = llmtest.backend_env("sim")
    extra = llmtest.split_cores(3)
    env["NPU_SPLIT_FORCE"] = "1"
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-llm-rope-") as tmp:
        for name, ref in llmtest.checkpoints(tmp, ("llama", "qwen2")):
            # the LLaMA checkpoint is laid out as the hub cache (snapshots/<rev>/config.json)
            cpath = [os.path.join(d, "config.json") for d, _, f in os.walk(ref["folder"])
                     if "config.json" in f][0]
            cfg = json.load(open(cpath))
            nh = cfg["num_attention_heads"]
            hd = cfg.get("head_dim", cfg["hidden_size"] // nh)
            # q's two column blocks (llm_weights_split: multiples of 32 columns)
            w = ((nh * hd + 1) // 2 + 31) // 32 * 32
            hb = w // hd
            if 2 * w != nh * hd or w % hd:
                sys.exit(f"{name}: q ({nh} x {hd}) is not two blocks of whole heads")
            for weights in ("fp16", "w8a8"):
                tag = f"{name} {weights}"
                dump = os.path.join(tmp, f"{name}-{weights}")
                bd = dump + ".csv"
                e = dict(env, NPU_LLM_DUMP_IR=dump, NPU_LLM_BREAKDOWN=bd)
                base = [gen, ref["folder"], "--prompt-ids", llmtest.ids_arg(ref["prompt"]),
                        "--max-new-tokens", "32", "--backend", "sim", "--weights",
                        weights] + extra
                r = subprocess.run(base + ["--greedy", "--ids"], env=e, capture_output=True,
                                   text=True)
                if r.returncode != 0:
                    print(f"FAIL {tag}: npu-generate failed\n{r.stderr}")
                    fails += 1
                    continue
                want = "ids: " + " ".join(map(str, ref["ids"])) + "\n"
                if weights == "fp16" and r.stdout != want:
                    print(f"FAIL {tag}: greedy ids differ\n  want {want!r}\n  got  {r.stdout!r}")
                    fails += 1
                elif weights == "fp16":
                    print(f"ok   {tag}: 32 greedy ids match the reference")
                bad = check_ir(dump + "-decode.npuir", hb, hd)
                sbad, nsub = check_split(bd)
                for b in bad + sbad:
                    print(f"FAIL {tag}: {b}")
                fails += len(bad) + len(sbad)
                if not bad and not sbad:
                    print(f"ok   {tag}: q's blocks RoPE'd before their join (cos, sin "
                          f"[{hb},1,{hd}]); the cache writes in multi-core submits "
                          f"({nsub} submits in the last step)")
                if weights == "w8a8":
                    fails += llmtest.check_teacher_forced(np, base, env, tmp, name, ref["ids"],
                                                          tag)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
