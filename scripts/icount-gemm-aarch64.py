#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# icount-gemm-aarch64.py: guest instructions that one single-threaded fp32 GEMM executes under
# qemu-aarch64 on each path (our NEON kernels, OpenBLAS, the portable kernel), for the table of
# docs/performance.md "NEON fp32 GEMM on aarch64". An instruction count, NOT a speed measure
# (qemu ignores issue width, latencies and caches). Counts come from `qemu-aarch64 -d
# in_asm,exec,nochain`: the instructions of every executed translation block, summed, minus
# the same run without the GEMM call. Needs the aarch64 cross build (tests/cpu/icount-gemm)
# and qemu-user; any python3.
#
#   scripts/icount-gemm-aarch64.py [-C build-aarch64] [M N K [t]]...
import os
import re
import subprocess
import sys
import tempfile


def count(probe, args):
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "q.log")
        subprocess.run(["qemu-aarch64", "-d", "in_asm,exec,nochain", "-D", log, probe] + args,
                       check=True, stdout=subprocess.DEVNULL)
        ninsn, total, cur = {}, 0, None
        with open(log, errors="replace") as f:
            for line in f:
                if line.startswith("IN:") or not line.strip():
                    cur = None
                    continue
                m = re.match(r"^0x([0-9a-f]+):\s", line)
                if m:
                    if cur is None:
                        cur = int(m.group(1), 16)
                        ninsn[cur] = 0
                    ninsn[cur] += 1
                    continue
                m = re.match(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/", line)
                if m:
                    total += ninsn.get(int(m.group(1), 16), 0)
        return total


def main():
    argv = sys.argv[1:]
    build = "build-aarch64"
    if argv[:1] == ["-C"]:
        build, argv = argv[1], argv[2:]
    probe = os.path.join(build, "tests", "cpu", "icount-gemm")
    if not os.path.exists(probe):
        sys.exit(f"icount-gemm-aarch64: {probe} not found (build the aarch64 cross build first)")
    shapes = []
    while argv:
        n = 4 if len(argv) >= 4 and argv[3] == "t" else 3
        shapes.append(argv[:n])
        argv = argv[n:]
    if not shapes:
        shapes = [["196", "256", "256"], ["196", "256", "256", "t"], ["1", "1024", "1024", "t"],
                  ["4", "1024", "1024", "t"]]
    print("guest instructions executed (qemu-aarch64; not a speed measure)")
    print("| product | own (NEON) | OpenBLAS | portable |")
    print("|---|---|---|---|")
    for s in shapes:
        mnk, tail = s[:3], s[3:]
        base = count(probe, mnk + ["none"] + tail)
        row = [f"{count(probe, mnk + [p] + tail) - base}" for p in ("own", "blas", "portable")]
        name = "x".join(mnk) + (" B^T" if tail else "")
        print(f"| {name} | " + " | ".join(row) + " |")


main()
