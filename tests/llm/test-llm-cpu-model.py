#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The per-token modeled figure of npu-generate includes the decode step's CPU steps (issue
# 12 item 6): besides the NPU's modeled time (timing model), npu-generate prints the modeled
# time of the step's CPU steps and conversions, priced by the CPU cost model the partition
# places nodes with ("RK3588 CPU model v1"), and their sum ("modeled in series"). On sim,
# with GPT-2 test checkpoints of 2, 4 and 6 layers (tiny: 64 wide, random weights, made here):
#   - the priced ops and conversions are the program's CPU steps and conversions, and the
#     printed sum is the NPU figure plus the CPU figure;
#   - NPU_PARTITION=supported (every node the NPU takes on the NPU): the CPU keeps only the
#     two embedding lookups (no decode program here is without a CPU step: the Gathers and
#     the logits' conversion stay on the host), whatever the depth, and the figure is > 0;
#   - the same with the board's compile profile (NPU_HW_PROFILE=verified) and 2, 4 and 6
#     layers: the attention of every layer runs on the CPU (as GPT-2 small's does under the
#     default partition); the CPU ops and the CPU figure grow by the same amount for each
#     2 layers (linear in the layers), and by more than without the CPU attentions;
#   - there each CPU attention (npu_cpu_attn16_decode, reading the caches where the NPU holds
#     them) is priced by the bytes it reads: K and V as fp16 (4 heads x 64 slots x 16 x 2
#     bytes each), Q, mask and Y fp32 (branch gpt2ser; before, the caches' logical fp32);
#     each conversion by its elements (a dtype and a layout pass over each: 4 ns an element
#     on the model's A76, fp16 or fp32 alike; before, an fp16 tensor's at half);
#   - each run prices that attention over the slots it read, not the compiled 64 (branch
#     gpt2ser3: npu_cpu_attn16_decode reads up to the mask's last valid slot): with a
#     3-token prompt the 3 decode steps read 4, 5 and 6 slots (npu-generate: "over 5.0 slots
#     read a step"; 0 with the attention on the NPU), their attentions are priced at those
#     slots (K and V; the mask whole), and the per-token CPU figure is the compiled price
#     less, per layer, the compiled attention's price minus the steps' mean;
#   - greedy without logits (npu-generate's default; branch gpt2argmax): each decode step reads
#     its token as the argmax over the logits as the NPU wrote them, and its CPU figure prices
#     that as one ArgMax reduction over the logits' elements (0.78 Add cycles an element at
#     2.4 GHz against their bytes in the NPU's dtype at 12 GB/s, + 1 us) in place of the
#     logits' conversions: the figure is --convert-logits's less the difference, and
#     --convert-logits prices no argmax.
# Needs /usr/bin/python3 with torch (skips otherwise).
#
#   test-llm-cpu-model.py NPU_GENERATE
import os
import re
import subprocess
import sys
import tempfile

import llmtest

llmtest.need("numpy", "torch")  # gen-llm.py

LINE = re.compile(r"decode: \d+ token\(s\), (\d+) step\(s\).*?([\d.]+) ms/token modeled NPU "
                  r"\((timing model v\d)\) \+ ([\d.]+) ms/token modeled CPU steps \((RK3588 CPU "
                  r"model v\d); (\d+) ops and (\d+) conversions at (\d+) cache slots, the CPU "
                  r"attention over ([\d.]+) slots read a step\) = ([\d.]+) ms/token modeled in "
                  r"series")
PROG = re.compile(r"decode program: \d+ NPU job\(s\), (\d+) CPU step\(s\) \(\d+ MatMul\), "
                  r"(\d+) conversion\(s\); attention on the (CPU|NPU) \((\d+) of (\d+) layers")


def checkpoint(tmp, layers):
    gl = llmtest.gen_llm()
    spec = dict(gl.MODELS["gpt2"])
    spec["cfg"] = dict(spec["cfg"], n_layer=layers)
    cfg, p, _ = gl.make("gpt2", gl.SEEDS["gpt2"], spec)
    folder = os.path.join(tmp, f"gpt2-{layers}l")
    gl.save_folder("gpt2", folder, cfg, p)
    return folder


CONV = re.compile(r"modeled CPU step: conversion \S+, (\d+) elements, ([\d.]+) us \(RK3588 CPU "
                  r"model v1\)")
STEP = re.compile(r"modeled CPU step: .*?([\d.]+) us \(RK3588 CPU model v1\)")
ATTN = re.compile(r"modeled CPU step: npu\.Attention \S+, ([\d.]+) us \(RK3588 CPU model v1\)")
ARGMAX = re.compile(r"modeled CPU argmax of the logits in the NPU layout: (\d+) (f16|f32) elements, "
                    r"([\d.]+) us in place of (\d+)-output conversions, ([\d.]+) us \(RK3588 CPU "
                    r"model v1\)")
AM_STEPS = re.compile(r"; (\d+) step\(s\) read the token as the argmax of the logits in the NPU "
                      r"layout")
RUN_ATTN = re.compile(r"modeled CPU step at run time: npu\.Attention \S+ over (\d+) slots read, "
                      r"([\d.]+) us \(RK3588 CPU model v1\)")
REPRICED = re.compile(r"modeled CPU steps at run time: (\d+) step\(s\) priced again over (\d+) "
                      r"slots")


def attn_us(heads, slots, hd, kv_bytes, mask_slots=None):
    """RK3588 CPU model v1 (npu-cpumodel.c) of one decode attention on one A76: two products
    and a softmax over heads x slots scores, against the bytes read and written (the mask
    over mask_slots, default slots)"""
    flops = 2 * heads * slots * hd * 2
    compute = flops / (16 * 0.65 * 2.4e9) + heads * slots * 6.25 / 2.4e9
    nbytes = (4 * heads * hd + 2 * kv_bytes * heads * slots * hd +
              4 * (mask_slots or slots) + 4 * heads * hd)
    return (max(compute, nbytes / 12e9) + 1e-6) * 1e6


def run(gen, folder, profile, extra=(), partition="supported"):
    env = dict(os.environ, NPU_PARTITION=partition)
    env.pop("NPU_HW_PROFILE", None)
    if profile:
        env["NPU_HW_PROFILE"] = profile
        env["NPU_DEBUG"] = "debug"  # each priced step
    r = subprocess.run([gen, folder, "--backend", "sim", "--prompt-ids", "5,77,130",
                        "--max-new-tokens", "4", "--max-context", "64", "--cpu-threads", "1",
                        "--no-cache", "--ids"] + list(extra), env=env, capture_output=True,
                       text=True)
    m, p = LINE.search(r.stderr), PROG.search(r.stderr)
    if r.returncode or not m or not p:
        print(f"FAIL {folder} ({profile or 'default'} profile): no figures\n{r.stderr}")
        return None
    load, later = r.stderr.split("decode program:", 1)
    f = {"steps": int(m[1]), "npu": float(m[2]), "cpu": float(m[4]), "model": m[5],
         "ops": int(m[6]), "conv": int(m[7]), "slots": int(m[8]), "read": float(m[9]),
         "series": float(m[10]),
         "cpu_steps": int(p[1]), "conversions": int(p[2]), "attn_cpu": int(p[4]),
         "layers": int(p[5]),
         # the decode program is priced at load, before npu-generate describes it (the
         # prefill's own attention, over host arrays, later)
         "attn_us": [float(x) for x in ATTN.findall(load)],
         # the decode program priced once at load, at its compiled shapes (ms)
         "compiled": sum(float(x) for x in STEP.findall(load)) * 1e-3,
         # then the decode program's attentions again for each new number of slots they read
         "attn_run": [(int(n), float(x)) for n, x in RUN_ATTN.findall(later)],
         # how many steps each new number of slots priced again (only the attentions)
         "repriced": [(int(n), int(k)) for n, k in REPRICED.findall(later)],
         "conv_us": [(int(e), float(t)) for e, t in CONV.findall(r.stderr)],
         "argmax": ARGMAX.findall(r.stderr),
         "am_steps": int(AM_STEPS.search(r.stderr)[1]) if AM_STEPS.search(r.stderr) else 0,
         "note": "note: the decode step has no NPU job: the cost partition (CPU priced: board)"
                 in r.stderr}
    # the argmax in place of the logits' conversions, per decode step (ms)
    f["am_delta"] = sum(float(a[2]) - float(a[4]) for a in f["argmax"]) * 1e-3
    print(f"     {os.path.basename(folder)} {profile or 'default'} profile: {f['npu']:.3f} ms NPU "
          f"+ {f['cpu']:.3f} ms CPU steps ({f['model']}; {f['ops']} ops, {f['conv']} "
          f"conversions, {f['slots']} slots) = {f['series']:.3f} ms/token; attention on the "
          f"CPU in {f['attn_cpu']} of {f['layers']} layers")
    return f


def main():
    gen = sys.argv[1]
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-llm-cpumodel-") as tmp:
        ck = {n: checkpoint(tmp, n) for n in (2, 4, 6)}
        sup = {n: run(gen, ck[n], None) for n in (2, 4)}
        ver = {n: run(gen, ck[n], "verified") for n in (2, 4, 6)}
        conv2 = run(gen, ck[2], "verified", ["--convert-logits"])
        # by cost these tiny models stay on the CPU: no NPU job, still a modeled figure
        cost2 = run(gen, ck[2], None, partition="cost")
        if not all(sup.values()) or not all(ver.values()) or not conv2 or not cost2:
            sys.exit(1)

        def check(ok, what):
            nonlocal fails
            fails += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {what}")

        # sim models every run: a program the cost partition keeps on the CPU (0 NPU jobs)
        # still gets its CPU steps priced (the line was left out: audit of 2026-12-03)
        check(cost2["npu"] == 0 and cost2["cpu"] > 0.01 and cost2["attn_cpu"] == 2,
              f"0 NPU jobs (by cost): {cost2['npu']} ms NPU + {cost2['cpu']} ms CPU steps "
              f"modeled, attention on the CPU in {cost2['attn_cpu']} of 2 layers")
        # ... and npu-generate says so (a board whose measured CPU wins every node would
        # otherwise run all on the CPU without a word); not when the NPU has jobs
        check(cost2["note"] and not any(f["note"] for f in list(sup.values()) +
                                        list(ver.values())),
              "a decode step without NPU jobs is noted on stderr, the others not")
        for f in list(sup.values()) + list(ver.values()) + [cost2]:
            check(f["model"] == "RK3588 CPU model v1" and f["steps"] == 3 and
                  abs(f["series"] - (f["npu"] + f["cpu"])) <= 0.0015,
                  f"{f['layers']} layers: the sum {f['series']} is {f['npu']} NPU + {f['cpu']} CPU "
                  f"({f['model']}, {f['steps']} steps)")
            check(f["ops"] == f["cpu_steps"] and f["conv"] == f["conversions"] and
                  f["slots"] == 64,
                  f"{f['layers']} layers: {f['ops']} ops and {f['conv']} conversions priced at "
                  f"{f['slots']} slots, the program has {f['cpu_steps']} CPU steps and "
                  f"{f['conversions']} conversions")
        # everything the NPU takes on the NPU: the CPU keeps the two embedding lookups
        # (Gather) whatever the depth; the CPU figure is > 0 (their 1 us dispatch each)
        check(sup[2]["ops"] == sup[4]["ops"] == 2 and sup[2]["attn_cpu"] == 0 and
              sup[2]["cpu"] >= 0.002,
              f"attention on the NPU: {sup[2]['ops']} / {sup[4]['ops']} CPU ops for 2 / 4 "
              f"layers, CPU figure {sup[2]['cpu']} ms (want 2 ops and >= 0.002 ms)")
        # the attention on the CPU in every layer: the CPU ops and the figure grow by the
        # same amount per layer (linear in the layers) and by more than without them
        d24, d46 = ver[4]["cpu"] - ver[2]["cpu"], ver[6]["cpu"] - ver[4]["cpu"]
        o24, o46 = ver[4]["ops"] - ver[2]["ops"], ver[6]["ops"] - ver[4]["ops"]
        check(all(ver[n]["attn_cpu"] == n for n in ver) and o24 == o46 >= 2 and
              d24 > 0 and abs(d46 - d24) <= 0.0003,
              f"attention on the CPU: {ver[2]['ops']} / {ver[4]['ops']} / {ver[6]['ops']} CPU ops "
              f"and {ver[2]['cpu']} / {ver[4]['cpu']} / {ver[6]['cpu']} ms for 2 / 4 / 6 layers: "
              f"+{d24:.4f} then +{d46:.4f} ms per 2 layers (want equal and > 0)")
        # the CPU attention priced by what it reads: K and V fp16 (the tiny GPT-2: 4 heads of
        # 16, 64 slots), not their logical fp32
        want16, want32 = attn_us(4, 64, 16, 2), attn_us(4, 64, 16, 4)
        got = [x for n in ver for x in ver[n]["attn_us"]]
        check(len(got) == 2 + 4 + 6 and all(abs(x - want16) <= 0.002 for x in got),
              f"CPU attentions priced at {sorted(set(got))} us (want {len(got)} == 12 at "
              f"{want16:.3f} us, K and V read as fp16; fp32 would be {want32:.3f})")
        # every conversion by its elements at the model's rate (max(9.6 cycles at 2.4 GHz,
        # 10 bytes at 12 GB/s) = 4 ns an element), whatever the tensor's dtype
        conv = [c for n in ver for c in ver[n]["conv_us"]]
        bad = [c for c in conv if abs(c[1] - c[0] * 4e-3) > 0.0015]
        check(len(conv) > 0 and not bad,
              f"{len(conv)} conversions priced at 4 ns an element ({len(bad)} not: {bad[:3]})")
        # each run's attention priced over the slots it read: 4, 5, 6 (the prompt's 3 and the
        # new token, then one more a step), the mask still whole (64); on the NPU, none
        run_want = [attn_us(4, s, 16, 2, 64) for s in (4, 5, 6)]
        for n in ver:
            f = ver[n]
            got = [x for _, x in f["attn_run"]]
            mean_cut = sum(want16 - w for w in run_want) / 3 * n * 1e-3
            check(f["read"] == 5.0 and len(got) == 3 * n and
                  [k for k, _ in f["attn_run"]] == [k for k in (4, 5, 6) for _ in range(n)] and
                  all(abs(g - w) <= 0.002 for g, w in zip(got, [w for w in run_want
                                                                for _ in range(n)])),
                  f"{n} layers: the CPU attention read {f['read']} slots a step (want 5.0 of 64), "
                  f"priced at {sorted(set(got))} us (want {[round(w, 3) for w in run_want]})")
            # only the n attentions priced again per slot count, not the program's other CPU
            # steps and conversions (branch review5: before, every one of them each run)
            check(f["repriced"] == [(n, k) for k in (4, 5, 6)] and f["cpu_steps"] > n,
                  f"{n} layers: steps priced again per slot count {f['repriced']} (want the "
                  f"{n} attentions at 4, 5 and 6 slots, of {f['cpu_steps']} CPU steps)")
            check(abs(f["cpu"] - (f["compiled"] - mean_cut + f["am_delta"])) <= 0.0015 and
                  f["cpu"] < f["compiled"] - 0.001,
                  f"{n} layers: {f['cpu']} ms/token CPU steps = the compiled {f['compiled']:.4f} "
                  f"less {mean_cut:.4f} ms of attention over slots not read, "
                  f"{f['am_delta']:+.4f} ms of argmax in place of the logits' conversions")
        # the argmax over the logits in the NPU layout, priced as one reduction in place of
        # the logits' conversions (4 ns an element); --convert-logits: none
        f = ver[2]
        am = f["argmax"][0] if len(f["argmax"]) == 1 else None
        if am:
            e, es = int(am[0]), 2 if am[1] == "f16" else 4
            want_am = (max(e * 0.78 / 2.4e9, (e * es + 8) / 12e9) + 1e-6) * 1e6
        check(am is not None and f["am_steps"] == 3 and abs(float(am[2]) - want_am) <= 0.002 and
              abs(float(am[4]) - e * 4e-3) <= 0.002,
              f"greedy without logits: {f['am_steps']} of 3 decode steps read the argmax in the "
              f"NPU layout, priced {am[2] if am else '?'} us over {am[0] if am else '?'} "
              f"{am[1] if am else '?'} elements in place of {am[4] if am else '?'} us of "
              f"conversions (want {want_am if am else 0:.3f} us)")
        check(not conv2["argmax"] and conv2["am_steps"] == 0 and
              abs(f["cpu"] - (conv2["cpu"] + f["am_delta"])) <= 0.0002 and f["am_delta"] < 0,
              f"--convert-logits: {conv2['cpu']} ms/token CPU steps, without it {f['cpu']} "
              f"(want the difference {f['am_delta']:+.4f} ms, no argmax)")
        check(all(f["read"] == 0 and not f["attn_run"] for f in sup.values()),
              "attention on the NPU: no CPU attention slots read, nothing priced again")
        dsup = sup[4]["cpu"] - sup[2]["cpu"]
        check(d24 > dsup + 2 * 0.001 and ver[2]["cpu"] > sup[2]["cpu"],
              f"2 more layers add {d24:.4f} ms on the CPU with the attention there, {dsup:.4f} "
              f"without (want more by at least the 2 attentions' dispatch)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
