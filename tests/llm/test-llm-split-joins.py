#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The decode step's joins of the layer split's chains on the CPU (llm-graph.c
# cpu_join), on sim with each step's jobs split over three cores (NPU_SPLIT_FORCE=1, so the
# tiny test checkpoints take the split graph), for the LLaMA (GQA) test checkpoint, fp16 and
# w8a8, and the GPT-2 test checkpoint in w8a8 (its q cut in column blocks; only the task
# checks below apply), under the default cost partition:
#   - in the last decode step's tasks (NPU_LLM_BREAKDOWN) no task is q's join
#     (l<i>.q.concat) or a partial sum of the MLP's chains, and no submit runs on core 0
#     alone: each layer's q / k / v chains, o's blocks and the MLP's chains are three
#     submits, the joins between them CPU steps;
#   - the priced CPU steps (NPU_DEBUG=debug, RK3588 CPU model v1) hold every layer's
#     Concat l<i>.q.concat, its RMSNorms as one RMSNormalization step each, and no
#     Identity copy of the logits; no Concat joins the LM head's three column slices: they
#     are the program's outputs logits.0 .. logits.2 (branch gpt2ser3; npu-llm.c puts them
#     side by side in its logits row), each converted where the NPU makes them (w8a8);
#     w8a8: no QuantizeLinear / DequantizeLinear CPU step (the conversions to and from the
#     NPU do them, the back end's fold_conversions) and one Reshape CPU step a layer (the
#     attention's output reshaped by its conversion);
#   - w8a8: each layer's MLP partial products and the residual stream summed by one Sum CPU
#     step (branch gpt2q05; three Adds before);
#   - fp16: the 32 greedy ids are the reference's (gen-llm.py's PyTorch fp32 reference);
#     w8a8: teacher-forced logits cosine >= 0.99 (as test-llm-w8a8.py).
# On main the joins were one-core NPU submits (two a layer; GPT-2's q join one a layer until
# branch gpt2sum, which also moved GPT-2 small's MLP partial sums to the CPU: its tiny test
# model runs its MLP on the CPU, so that is seen in bench-llm.py's submit count). Needs /usr/bin/python3 with
# torch and numpy (skips otherwise).
#
#   test-llm-split-joins.py NPU_GENERATE
import csv
import os
import re
import subprocess
import sys
import tempfile

import llmtest

np, _ = llmtest.need("numpy", "torch")  # torch: gen-llm.py
llmtest.private_compile_cache()


def check_tasks(path):
    """Problems of the last decode step's task list at PATH, and its number of submits."""
    rows = [r for r in csv.DictReader(ln for ln in open(path) if not ln.startswith("#"))]
    cores = {}
    bad = []
    for r in rows:
        cores.setdefault(r["submit"], set()).add(r["core"])
        if re.match(r"l\d+\.q\.concat", r["name"]):
            bad.append(f"task {r['name']} on the NPU (submit {r['submit']})")
    bad += [f"submit {s} runs on core 0 alone: " +
            ", ".join(sorted({r["name"] for r in rows if r["submit"] == s}))
            for s in sorted(cores, key=int) if cores[s] == {"0"}]
    if not rows:
        bad.append("no tasks recorded")
    return bad, len(cores)


def check_cpu_steps(text, layers, weights):
    """Problems of the priced CPU steps listed in the debug log TEXT (w8a8: the LM head runs
    on the NPU, its slices converted)."""
    npu = weights == "w8a8"
    steps = re.findall(r"modeled CPU step: (\S+) (\S+),", text)
    bad = []
    # w8a8: the int8 products' activations quantised by their conversions to the NPU and
    # their int8 results dequantised by those to the host (fold-conversions.c), not CPU steps
    for op in ("QuantizeLinear", "DequantizeLinear"):
        n = sum(o == op for o, _ in steps)
        if n:
            bad.append(f"{n} {op} CPU step(s) beside the conversions")
    if weights == "w8a8" and not re.search(r"modeled CPU step: conversion \S+quantize_out0", text):
        bad.append("no conversion of a quantised activation to the NPU")
    # w8a8: the attention's output reshaped to o's input row by its conversion to the NPU,
    # not by a Reshape CPU step (a copy); q's Reshape before the attention (a CPU reader) stays
    reshapes = sum(o == "Reshape" for o, _ in steps)
    if weights == "w8a8" and reshapes != layers:
        bad.append(f"{reshapes} Reshape CPU steps, want {layers} (q's, one a layer)")
    for l in range(layers):
        if ("Concat", f"l{l}.q.concat") not in steps:
            bad.append(f"layer {l}: q's join l{l}.q.concat is not a CPU step")
    norms = sum(op == "RMSNormalization" for op, _ in steps)
    if norms != 2 * layers + 1:
        bad.append(f"{norms} RMSNormalization CPU steps, want {2 * layers + 1}")
    for op in ("ReduceMean", "Sqrt", "Reciprocal"):
        if any(o == op for o, _ in steps):
            bad.append(f"a {op} CPU step (the RMSNorm in pieces)")
    if ("Identity", "logits") in steps:
        bad.append("the logits copied by an Identity CPU step")
    if any(op == "Concat" and name.startswith("lm_head") for op, name in steps):
        bad.append("the LM head's slices joined by a Concat CPU step")
    conv = set(re.findall(r"modeled CPU step: conversion (logits\.\d+)\S*,", text))
    if conv != ({"logits.0", "logits.1", "logits.2"} if npu else set()):
        bad.append(f"the logits' conversions are {sorted(conv)}, want logits.0 .. logits.2")
    return bad


def check_residual_sums(text, layers):
    """w8a8 on three cores: the MLP's down (c_proj) whole, its rows following the chains, so
    each layer's partial products and the residual stream are summed by one n-ary Sum CPU step
    (residual_sum, branch gpt2q05), not by a chain of Adds (three CPU steps a layer)."""
    steps = re.findall(r"modeled CPU step: (\S+) (\S+),", text)
    sums = sum(op == "Sum" for op, _ in steps)
    return [] if sums == layers else [f"{sums} Sum CPU steps, want {layers} (one a layer: the "
                                      f"MLP's partial products and the residual)"]


def main():
    gen = sys.argv[1]
    env = llmtest.backend_env("sim")
    env["NPU_SPLIT_FORCE"] = "1"
    env.pop("NPU_PARTITION", None)  # the default: cost
    extra = llmtest.split_cores(3)
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-llm-joins-") as tmp:
        for name, ref in llmtest.checkpoints(tmp, ("llama", "gpt2")):
            cpath = [os.path.join(d, "config.json") for d, _, f in os.walk(ref["folder"])
                     if "config.json" in f][0]
            layers = int(re.search(r'"(?:num_hidden_layers|n_layer)":\s*(\d+)', open(cpath).read()).group(1))
            for weights in ("fp16", "w8a8") if name == "llama" else ("w8a8",):
                tag = f"{name} {weights}"
                bd = os.path.join(tmp, f"{name}-{weights}.csv")
                # the structure: a one-token prompt (no prefill program, whose CPU steps
                # would be listed too), two decode steps
                e = dict(env, NPU_LLM_BREAKDOWN=bd, NPU_DEBUG="debug")
                r = subprocess.run([gen, ref["folder"], "--prompt-ids", str(ref["prompt"][0]),
                                    "--max-new-tokens", "3", "--backend", "sim", "--weights",
                                    weights, "--ids"] + extra, env=e, capture_output=True,
                                   text=True)
                if r.returncode != 0:
                    print(f"FAIL {tag}: npu-generate failed\n{r.stderr[-4000:]}")
                    fails += 1
                    continue
                # the fp16 test model runs wholly on the CPU by cost: no NPU tasks
                bad, nsub = check_tasks(bd) if weights == "w8a8" else ([], 0)
                if name == "llama":
                    bad += check_cpu_steps(r.stderr, layers, weights)
                if weights == "w8a8":
                    bad += check_residual_sums(r.stderr, layers)
                for b in bad:
                    print(f"FAIL {tag}: {b}")
                fails += len(bad)
                if not bad:
                    print(f"ok   {tag}: the joins and the RMSNorms are CPU steps" +
                          (f", every submit on several cores ({nsub} submits in the last step, "
                           f"{layers} layers)" if weights == "w8a8" else ""))
                base = [gen, ref["folder"], "--prompt-ids", llmtest.ids_arg(ref["prompt"]),
                        "--max-new-tokens", "32", "--backend", "sim", "--weights",
                        weights] + extra
                if weights == "w8a8":  # its greedy ids are not fp32's: teacher-forced
                    fails += llmtest.check_teacher_forced(np, base, env, tmp, name, ref["ids"],
                                                          tag)
                    continue
                r = subprocess.run(base + ["--greedy", "--ids"], env=env, capture_output=True,
                                   text=True)
                want = "ids: " + " ".join(map(str, ref["ids"])) + "\n"
                if r.returncode != 0:
                    print(f"FAIL {tag}: npu-generate failed\n{r.stderr[-4000:]}")
                    fails += 1
                elif r.stdout != want:
                    print(f"FAIL {tag}: greedy ids differ\n  want {want!r}\n  got  {r.stdout!r}")
                    fails += 1
                else:
                    print(f"ok   {tag}: 32 greedy ids match the reference")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
