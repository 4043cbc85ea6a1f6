#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-npu-dis.py: runs npu-dis over the golden vectors and checks its exit status.

  check-npu-dis.py NPU_DIS GOLDEN_DIR

1. Every *.regcmd file and the partial table decode with --strict (nothing unknown).
2. Binary input: for each vector whose tasks carry segment addresses, the segments are
   written into a raw little-endian regcmd image at those addresses, with a file of 40-byte
   task descriptors packed here with the struct module (independently of npu-abi.h); npu-dis
   must decode both the descriptor route (--tasks) and the PC-chain walk from the first
   segment, with the same task count as the file.
3. Malformed inputs exit with status 2 and a message naming the line (text) or the byte
   offset (binary).
"""

import os
import re
import struct
import subprocess
import sys
import tempfile

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def run(args, want_rc, what, want_err=None):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != want_rc:
        fail(f"{what}: exit {p.returncode}, want {want_rc}\n{p.stderr}{p.stdout[-2000:]}")
    elif want_err and not re.search(want_err, p.stderr):
        fail(f"{what}: stderr {p.stderr!r} does not match {want_err!r}")
    return p


def parse_golden(path):
    """Minimal reader (independent of npu-golden.c): tasks as (keys, [qwords])."""
    tasks = []
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("#") or not line:
            continue
        if line.startswith("task "):
            parts = line.split()
            keys = dict(kv.split("=", 1) for kv in parts[2:])
            tasks.append((keys, []))
            continue
        t, o, v = line.split()[:3]
        tasks[-1][1].append(int(t, 16) << 48 | int(v, 16) << 16 | int(o, 16))
    return tasks


def num(s):
    return int(s.split("(")[0], 0)


def binary_case(npu_dis, path, tmp):
    tasks = parse_golden(path)
    segs = [(num(k["addr"]), q, k) for k, q in tasks if "addr" in k and "dup_of" not in k]
    if not segs or any(len(q) != num(k["amount"]) + 4 for _, q, k in segs):
        return False
    # ONPU's relative chain addresses and the cnamatmul submits (same addr) do not form one
    # image: keep files whose segments have distinct addresses and whose tails point at them.
    addrs = [a for a, _, _ in segs]
    if len(set(addrs)) != len(addrs):
        return False
    for a, q, _ in segs:
        nxt = (q[-4] >> 16) & 0xFFFFFFFF if q[-4] else 0
        if nxt and nxt not in addrs:
            return False
    base = min(addrs)
    end = max(a + 8 * len(q) for a, q, _ in segs)
    image = bytearray(end - base)
    for a, q, _ in segs:
        image[a - base:a - base + 8 * len(q)] = struct.pack("<%dQ" % len(q), *q)
    desc = b""
    for a, q, k in segs:
        enable = num(k.get("enable", "0"))
        int_mask = num(k.get("int_mask", "0x300"))
        # rknpu_task: flags, op_idx, enable_mask, int_mask, int_clear, int_status,
        # regcfg_amount, regcfg_offset (u32 each), regcmd_addr (u64), packed: 40 bytes.
        desc += struct.pack("<8IQ", 0, 0, enable, int_mask, 0x1FFFF, 0, len(q) - 4, 0, a)
    assert len(desc) == 40 * len(segs)
    img = os.path.join(tmp, "image.bin")
    dsc = os.path.join(tmp, "tasks.bin")
    open(img, "wb").write(image)
    open(dsc, "wb").write(desc)
    name = os.path.basename(path)
    p = run([npu_dis, "-q", "--strict", "--base", hex(base), "--tasks", dsc, img], 0,
            name + " (binary, --tasks)")
    m = re.search(r"# (\d+) tasks", p.stdout)
    if not m or int(m.group(1)) != len(segs):
        fail(f"{name}: --tasks decoded {m.group(1) if m else '?'} tasks, want {len(segs)}")
    # Chain walk from the first segment of the file: reaches every task of its chain.
    first = segs[0]
    chain = 1
    cur = first
    bya = {a: (a, q, k) for a, q, k in segs}
    while cur[1][-4]:
        cur = bya[(cur[1][-4] >> 16) & 0xFFFFFFFF]
        chain += 1
    p = run([npu_dis, "-q", "--strict", "--base", hex(base), "--start", hex(first[0] - base),
             img], 0, name + " (binary, chain walk)")
    m = re.search(r"# (\d+) tasks", p.stdout)
    if not m or int(m.group(1)) != chain:
        fail(f"{name}: chain walk decoded {m.group(1) if m else '?'} tasks, want {chain}")
    return True


def malformed(npu_dis, golden_dir, tmp):
    src = os.path.join(golden_dir, "mtx-matmul-fp16-fp32-m1k32n16.regcmd")
    lines = open(src).read().split("\n")
    # A bad hex digit on some qword line: the message names that line.
    i = next(n for n, l in enumerate(lines) if l.startswith("0201 1014"))
    bad = list(lines)
    bad[i] = "0201 1014 0000000g"
    f = os.path.join(tmp, "bad.regcmd")
    open(f, "w").write("\n".join(bad))
    run([npu_dis, f], 2, "bad qword line", rf"bad\.regcmd:{i + 1}: ")
    # A missing tail qword: the task line is named.
    bad = [l for n, l in enumerate(lines) if n != len(lines) - 2]
    open(f, "w").write("\n".join(bad))
    tl = next(n for n, l in enumerate(lines) if l.startswith("task "))
    run([npu_dis, f], 2, "short task", rf"bad\.regcmd:{tl + 1}: task 0: amount=104 needs 108")
    # Binary of 12 bytes.
    b = os.path.join(tmp, "bad.bin")
    open(b, "wb").write(b"\0" * 12)
    run([npu_dis, "-f", "bin", b], 2, "odd binary", "not a whole number")
    # Binary without an op_en.
    open(b, "wb").write(struct.pack("<2Q", 0x0201000000091014, 0))
    run([npu_dis, "-f", "bin", b], 2, "no op_en", "no op_en")
    # A chain pointing outside the image.
    q = [0x10010000000E4004, 0x0101000100000010, 0x0101000000050014,
         0x0041000000000000, 0x0081000000080008]
    open(b, "wb").write(struct.pack("<5Q", *q))
    run([npu_dis, "-f", "bin", b], 2, "chain outside", "outside the file")
    # Unknown register / target under --strict: exit 1, decoded anyway.
    q = [0x0201000000001018, 0x3001000000004004, 0, 0x0101000000000014, 0x0041000000000000,
         0x0081000000080008]
    open(b, "wb").write(struct.pack("<6Q", *q))
    p = run([npu_dis, "--strict", "-f", "bin", b], 1, "unknown register")
    if "unknown register" not in p.stdout or "unknown target" not in p.stdout:
        fail("unknown register/target not flagged:\n" + p.stdout)
    run([npu_dis, "-f", "bin", b], 0, "unknown register without --strict")
    # Descriptor file of the wrong size; missing file; bad option.
    d = os.path.join(tmp, "bad.tasks")
    open(d, "wb").write(b"\0" * 41)
    run([npu_dis, "--tasks", d, "-f", "bin", b], 2, "bad descriptors", "40-byte")
    run([npu_dis, os.path.join(tmp, "missing")], 2, "missing file", "missing")
    run([npu_dis, "--base", "zz", b], 2, "bad number", "not a number")
    # TSV with a broken value names the line.
    tsv = open(os.path.join(golden_dir, "ab-rknn-conv-partial.tsv")).read().split("\n")
    j = next(n for n, l in enumerate(tsv) if l and not l.startswith("#") and "\t" in l
             and not l.startswith("slug"))
    cols = tsv[j].split("\t")
    cols[8] = "xyz"
    tsv[j] = "\t".join(cols)
    t = os.path.join(tmp, "bad.tsv")
    open(t, "w").write("\n".join(tsv))
    run([npu_dis, t], 2, "bad tsv value", rf"bad\.tsv:{j + 1}: column 9")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    npu_dis, golden_dir = sys.argv[1], sys.argv[2]
    files = sorted(f for f in os.listdir(golden_dir)
                   if f.endswith(".regcmd") or f.endswith(".tsv"))
    bins = 0
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            path = os.path.join(golden_dir, f)
            p = run([npu_dis, "-q", "--strict", path], 0, f)
            if " 0 unknown" not in p.stdout:
                fail(f"{f}: summary does not say 0 unknown")
            if f.endswith(".regcmd") and binary_case(npu_dis, path, tmp):
                bins += 1
        malformed(npu_dis, golden_dir, tmp)
    print(f"npu-dis: {len(files)} golden files decoded, {bins} also as binary images")
    if len(files) < 41:
        fail("fewer golden files than expected")
    if bins < 20:
        fail(f"only {bins} files exercised the binary route")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
