#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Where one decode token's modeled NPU time goes: reads the CSV that npu-generate writes
# with NPU_LLM_BREAKDOWN=FILE (the last decode step's NPU tasks: submit, that submit's
# modeled time, core, start, task time, DMA and weight bytes, node name; simulator, timing
# model of the run) and splits the token's modeled time along each submit's critical path
# (the core that finishes last):
#   submit overhead    each submit's time beyond its longest core's tasks (the per-submit
#                      cost: the tasks start after it)
#   LM head            lm_head.* products
#   projections        the layers' weight products (q, k, v, o, gate, up, down: by name, or
#                      any task streaming >= 256 KiB of weights), split into
#                      weight streaming (their weight bytes at the rate of the timing
#                      model's table for as many cores as the submit used) and the rest
#                      (per-task overhead, DMA latency, activations, compute beyond the DMA)
#   cache writes       npu.StateWrite copies
#   rest               everything else (attention, RoPE, Quantize, joins, adds), the largest
#                      named
#   idle               gaps on the critical core (waiting inside a submit)
# and, for reference, the weight-streaming floor: all weight bytes of the token at the
# chip's rate x the weight-DMA efficiency. Standard library only (any python3).
#
#   llm-breakdown.py FILE [--label NAME]
import argparse
import collections
import csv
import re
import sys

# timing model v2 (core/util/npu-timing.c V2_ROW, docs/timing-model-v2.md): per-core and
# chip DMA rates, weight-stream efficiency, per-task overhead
V2 = {"core": 12.0e9, "chip": 28.0e9, "eff_w": 0.92, "task": 3.0e-6}


# a product streaming at least this many weight bytes in one task is a projection (the fp16
# graph's products are named after their MatMul node, not the weight); the attention's
# tasks read the cache through the same port, far fewer bytes each at these contexts
PROJ_BYTES = 256 * 1024


def kind(r):
    name = r["name"]
    if name.startswith("lm_head"):
        return "LM head"
    if name.endswith(".qmatmul") or re.search(r"\.weight$", name) or r["wbytes"] >= PROJ_BYTES:
        return "projections"
    if "StateWrite" in name:
        return "cache writes"
    return "rest"


def load(path):
    head = ""
    rows = []
    with open(path) as f:
        first = f.readline()
        if first.startswith("#"):
            head = first[1:].strip()
        else:
            f.seek(0)
        for r in csv.DictReader(f):
            rows.append({"submit": int(r["submit"]), "submit_s": float(r["submit_s"]),
                         "core": int(r["core"]), "start_s": float(r["start_s"]),
                         "task_s": float(r["task_s"]), "dma": int(r["dma_bytes"]),
                         "wbytes": int(r["weight_bytes"]), "name": r["name"]})
    return head, rows


def breakdown(rows):
    by_sub = collections.defaultdict(list)
    for r in rows:
        by_sub[r["submit"]].append(r)
    t = collections.Counter()
    rest_names = collections.Counter()
    stream = 0.0
    crit_tasks = 0
    for _, tasks in sorted(by_sub.items()):
        cores = {r["core"] for r in tasks}
        ends = collections.defaultdict(float)
        for r in tasks:
            ends[r["core"]] = max(ends[r["core"]], r["start_s"] + r["task_s"])
        crit = max(ends, key=ends.get)
        # the tasks start after the submit's overhead; the submit ends with its last core
        first = min(r["start_s"] for r in tasks)
        span = ends[crit] - first
        t["submit overhead"] += max(tasks[0]["submit_s"] - span, 0.0)
        rate = min(len(cores) * V2["core"], V2["chip"]) / len(cores) * V2["eff_w"]
        busy = 0.0
        for r in sorted((r for r in tasks if r["core"] == crit), key=lambda r: r["start_s"]):
            k = kind(r)
            crit_tasks += 1
            busy += r["task_s"]
            if k in ("projections", "LM head"):
                s = min(r["wbytes"] / rate, r["task_s"])
                stream += s
                t[k + ": weight streaming"] += s
                t[k + ": the rest"] += r["task_s"] - s
            else:
                t[k] += r["task_s"]
                if k == "rest":
                    rest_names[re.sub(r"_\d+$", "", r["name"])] += r["task_s"]
        t["idle on the critical core"] += max(span - busy, 0.0)
    return t, rest_names, stream, crit_tasks, len(by_sub)


def report(path, label=None, out=sys.stdout):
    head, rows = load(path)
    if not rows:
        print(f"{path}: no tasks", file=out)
        return
    t, rest_names, stream, crit_tasks, submits = breakdown(rows)
    total = sum(t.values())
    wb = sum(r["wbytes"] for r in rows)
    floor = wb / (V2["chip"] * V2["eff_w"])
    print(f"per-token breakdown{' (' + label + ')' if label else ''}, modeled ({head}): "
          f"{total * 1e3:.2f} ms, {submits} submits, {len(rows)} tasks "
          f"({crit_tasks} on the critical paths)", file=out)
    order = ["submit overhead", "projections: weight streaming", "projections: the rest",
             "LM head: weight streaming", "LM head: the rest", "cache writes", "rest",
             "idle on the critical core"]
    for k in order:
        if t[k]:
            print(f"  {k:32s} {t[k] * 1e3:8.2f} ms  {100 * t[k] / total:5.1f} %", file=out)
    top = ", ".join(f"{n} {v * 1e3:.2f}" for n, v in rest_names.most_common(6))
    if top:
        print(f"  rest, largest (ms): {top}", file=out)
    print(f"  per-task overhead on the critical paths: {crit_tasks} x "
          f"{V2['task'] * 1e6:.0f} us = {crit_tasks * V2['task'] * 1e3:.2f} ms (inside the "
          f"rows above)", file=out)
    print(f"  weight bytes read: {wb / 1e6:.1f} MB; at the chip's {V2['chip'] / 1e9:.0f} GB/s x "
          f"{V2['eff_w']} weight-DMA efficiency: {floor * 1e3:.2f} ms (the floor); streamed on "
          f"the critical paths: {stream * 1e3:.2f} ms", file=out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--label")
    a = ap.parse_args()
    report(a.csv, a.label)


if __name__ == "__main__":
    main()
