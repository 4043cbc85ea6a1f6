#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs `npu-selftest -b auto info chain dma lut --lut-quick --report FILE` and checks the report it writes
(format: docs/hardware.md, "The bring-up report"): it parses, has every field, its figures are
positive, its counts add up. Where the figures are modeled (the simulator, normal build),
the fit must recover the timing table's submit and task overheads and DMA rate, which the
report also carries (v2, the default: the task cost is the overhead plus one DRAM round trip
and the DMA rate is the line rate; v1: the overheads and the rate themselves): that is what
makes this test able to fail. Then the report is loaded back as a timing model
(NPU_TIMING=REPORT_FILE) and an eltwise run must be labelled "timing model report:FILE" and,
on the simulator under v2, give the same job times as v2 to within 1 %.
Otherwise only the form and signs are checked. The test sets NPU_RKNPU_FENCE=0, so that
under the kernel double's rknpu the driver reports each job's time ("measured"); rocket reports
none, so there the figures are host wall times ("host"), whose fitted submit overhead may come
out of any sign.

    check-report.py NPU_SELFTEST REPORT_FILE
"""
import json
import re
import math
import os
import shlex
import subprocess
import sys


def fail(msg):
    print("FAIL  report: " + msg)
    sys.exit(1)


def positive(x, what):
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        fail(f"{what} is {x!r}, not a positive number")


def near(got, want, lo, hi, what):
    if not (want * lo <= got <= want * hi):
        fail(f"{what} {got:.6e} is not within [{lo}, {hi}] x the table's {want:.6e}")
    print(f"PASS  {what} {got:.6e} within [{lo}, {hi}] x the table's {want:.6e}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, path = sys.argv[1], sys.argv[2]
    # a cross build's binary runs under the emulator meson names (qemu-aarch64)
    wrapper = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
    run = subprocess.run(wrapper + [exe, "-b", "auto", "info", "chain", "dma", "lut",
                                    "--lut-quick", "--report", path])
    if run.returncode != 0:
        fail(f"npu-selftest exited with {run.returncode}")
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")

    if rep.get("format") != "opennpu-bringup-report" or rep.get("version") != 1:
        fail("format/version is not opennpu-bringup-report 1")
    for key in ("backend", "backend_requested", "device", "steps", "pass", "fail", "figures",
                "timing_model", "confirmed"):
        if key not in rep:
            fail(f"no '{key}'")
    dev = rep["device"]
    positive(dev.get("n_cores"), "device.n_cores")
    steps = rep["steps"]
    if sorted(steps) != ["chain", "dma", "info", "lut"]:
        fail(f"steps are {sorted(steps)}, not info, chain, dma, lut")
    # the LUT sweep (--lut-quick: three configurations) matched the simulator; a device
    # other than the simulator itself (a board, the kernel double) confirms them
    conf = rep["confirmed"]
    if not isinstance(conf, list) or not all(isinstance(c, str) for c in conf):
        fail(f"confirmed is {conf!r}, not a list of pattern names")
    quick = {"lut:sigmoid", "lut:exp_neg_coarse", "lut:rsqrt_band_-6"}
    if rep["backend"] == "sim" and conf:
        fail(f"the simulator confirmed {conf}: it can only check itself")
    if rep["backend"] != "sim" and set(conf) != quick:
        fail(f"confirmed {sorted(conf)}, not the three LUT configurations of --lut-quick")
    print(f"PASS  confirmed: {conf}")
    if sum(s["pass"] for s in steps.values()) != rep["pass"] or rep["fail"] != 0:
        fail("step counts do not add up to pass, or something failed")

    fig = rep["figures"]
    sources = set()
    for key in ("task_overhead_s", "submit_overhead_s"):
        if key not in fig:
            fail(f"no figures.{key}")
        v, src = fig[key]["value"], fig[key]["source"]
        if key == "submit_overhead_s" and src == "host":
            # a wall-clock intercept: the host's submit path and noise, any sign
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                fail(f"figures.{key} is {v!r}, not a number")
        else:
            positive(v, f"figures.{key}")
        sources.add(src)
    dma = fig.get("dma_bytes_per_s_core")
    if not isinstance(dma, list) or len(dma) != dev["n_cores"]:
        fail(f"dma_bytes_per_s_core has no entry per core ({dev['n_cores']})")
    for i, d in enumerate(dma):
        if d.get("core") != i:
            fail(f"dma_bytes_per_s_core[{i}] is for core {d.get('core')}")
        positive(d["value"], f"dma_bytes_per_s_core[{i}]")
        sources.add(d["source"])
    if not sources <= {"measured", "modeled", "host"}:
        fail(f"sources {sorted(sources)}: not measured/modeled/host")
    print(f"PASS  report {path}: backend {rep['backend']}, {rep['pass']} checks passed, "
          f"figures {', '.join(sorted(sources))}")

    tm = rep["timing_model"]
    if sources == {"modeled"} and tm.get("name") == "v1":
        # v1: job = submit + n x (max(compute, dma) + task overhead). The chain's tasks move
        # a few hundred bytes (tens of ns at 10 GB/s), so their cost sits just above the
        # overhead; the DMA task moves 12.6 MB, so its rate is the table's.
        near(fig["submit_overhead_s"]["value"], tm["submit_overhead_s"], 0.99, 1.01,
             "submit_overhead_s")
        near(fig["task_overhead_s"]["value"], tm["task_overhead_s"], 1.0, 1.06,
             "task_overhead_s")
        for i, d in enumerate(dma):
            near(d["value"], tm["dma_bytes_per_s_core"], 0.99, 1.01,
                 f"dma_bytes_per_s_core[{i}]")
    elif sources == {"modeled"} and tm.get("per_mechanism") == 1:
        # v2: a chain task costs its overhead, one DRAM round trip and its few hundred bytes
        # at the line rate (dma_eff_line of the core's rate); the DMA task's 12.6 MB of
        # NC1HWC2 lines move at that line rate.
        line = tm["dma_bytes_per_s_core"] * tm["dma_eff_line"]
        near(fig["submit_overhead_s"]["value"], tm["submit_overhead_s"], 0.99, 1.01,
             "submit_overhead_s")
        positive(fig.get("chain_task_bytes"), "figures.chain_task_bytes")
        near(fig["task_overhead_s"]["value"],
             tm["task_overhead_s"] + tm["dma_task_latency_s"] + fig["chain_task_bytes"] / line,
             0.99, 1.01, "task_overhead_s (overhead + round trip + bytes)")
        for i, d in enumerate(dma):
            near(d["value"], line, 0.99, 1.01, f"dma_bytes_per_s_core[{i}] (line rate)")

    # the report as a timing model: NPU_TIMING=FILE (a path: it contains a '/')
    rpath = os.path.abspath(path)
    env = dict(os.environ, NPU_TIMING=rpath)
    out = subprocess.run(wrapper + [exe, "-b", "sim", "eltwise"], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"NPU_TIMING={rpath} npu-selftest -b sim eltwise exited with {out.returncode}: "
             f"{out.stderr.strip()}")
    label = f"modeled (timing model report:{rpath})"
    if label not in out.stdout:
        fail(f"NPU_TIMING={rpath}: no '{label}' in the eltwise step's output")
    print(f"PASS  NPU_TIMING={rpath}: figures labelled '{label}'")
    if sources == {"modeled"} and tm.get("name") == "v2":
        base = subprocess.run(wrapper + [exe, "-b", "sim", "eltwise"],
                              env=dict(os.environ, NPU_TIMING="v2"), capture_output=True,
                              text=True)
        got = [float(x) for x in re.findall(r"([0-9.]+) us modeled \(timing model report",
                                            out.stdout)]
        want = [float(x) for x in re.findall(r"([0-9.]+) us modeled \(timing model v2\)",
                                             base.stdout)]
        if not got or len(got) != len(want):
            fail(f"eltwise job times: {len(got)} under the report, {len(want)} under v2")
        for g, w in zip(got, want):
            near(g, w, 0.99, 1.01, "eltwise job time under the report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
