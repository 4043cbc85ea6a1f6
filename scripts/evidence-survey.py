#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""evidence-survey.py: what the golden streams write, per register, and the ledger drawn from it.

  evidence-survey.py --golden tests/golden/vectors --registers core/hw/registers.xml --list
      for each register: the values each golden file writes, with the first file and task
  evidence-survey.py --golden ... --registers ... --trace T1 [--trace T2 ...] --ledger OUT.xml
      writes the evidence ledger (core/hw/evidence.xml)

A trace is what the simulator writes under NPU_SIM_EVIDENCE_TRACE=FILE (or `npuc --evidence
--explain` prints as "uncovered:" lines): one register write per line, "BLOCK.REG 0xVALUE
PROGRAM". Run the whole test suite (and the models you care about) with
NPU_SIM_EVIDENCE=off NPU_SIM_EVIDENCE_TRACE=FILE to collect every pattern OpenNPU emits.

The levels are assigned mechanically: a value written by a vendor capture (`ab-*`, qwords the
capture printed; re-inserted zeros `*`, `*?` do not count) is V, by a hardware-tested open
project (`mtx-*`, `onpu-*`) O, Mesa-attributed values from the facts file M (MESA below), the
rest T citing the facts section of its block. Three kinds of register:
  geometry (addresses, sizes, strides, counts): one entry `any`, at the best level of any
    source that writes the register (the field's meaning is exercised over many values);
  operand (constants the data path applies: ALU/MUL operands, converter scales and offsets,
    compare values, pad values, LUT contents): the golden values at their level, plus a T
    entry `any` (a constant is data; its use is what the control registers say);
  control (everything else): exact value lists, golden values at their level, the values
    only OpenNPU writes at T.
"""

import argparse
import collections
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr

LEVEL_RANK = {"T": 1, "O": 2, "M": 3, "V": 4}

GEOMETRY = re.compile(
    r"ADDR|SIZE|STRIDE|WIDTH|HEIGHT|CHANNEL|CUBE|NOTCH|AMOUNT|SURFACE_ADD|ENTRIES|"
    r"^CONV_CON2$|^CBUF_CON1$|^DMA_CON1$|^DMA_CON2$|^REGISTER_AMOUNTS$|^FC_CON[0-2]$|^SURF_LEN"
)
OPERAND = re.compile(
    r"ALU_CFG$|MUL_CFG$|CVT_SCALE|CVT_OFFSET|OP_VALUE|RELUX_CMP|PADDING_VALUE|LUT_ACCESS_DATA|"
    r"^CVT_CON[1-5]$|^PAD_CON1$|^OFFSET_PEND$|^BS_OW_OP$|^WEIGHT$|^LUT_.*_SLOPE_(SCALE|SHIFT)$|"
    r"^LUT_L[EO]_(START|END)$"
)

# Fields of control registers that hold sizes, counts or addresses: left out of the compared
# bits (the entry's mask), so that the pattern is the control bits.
# The converters' shift amounts (OUT_CVT_SHIFT, the BS / BN multipliers' shifts in
# DPU.DATA_FORMAT) are free too: with the scale beside them they form the dyadic
# requantisation scale m / 2^s a quantised model's own scales decide (data, like the
# CVT_SCALE operands); the bits around them stay compared.
FREE_FIELDS = re.compile(
    r"^(DATA_BANK|WEIGHT_BANK|FC_DATA_BANK|SURF_LEN|LINE_NOTCH_ADDR|NOTCH_ADDR|INDEX_ADD|"
    r"CORE_INDEX|LUT_ADDR|OUT_CVT_SHIFT|BS_MUL_SHIFT_VALUE_NEG|BN_MUL_SHIFT_VALUE_NEG)$"
)

FACTS = {
    "PC": "facts §1.3 (task tail, PC chaining) and §1.2 (op_en)",
    "CNA": "facts §2.3 (CNA register map), §2.10, §5.2",
    "CORE": "facts §2.4 (CORE register map), §5.2",
    "DPU": "facts §2.5 (DPU register map), §5.3",
    "DPU_RDMA": "facts §2.6 (DPU_RDMA register map), §5.3",
    "PPU": "facts §2.7 (PPU register map), §5.4",
    "PPU_RDMA": "facts §2.7 (PPU_RDMA register map), §5.4",
}

# Level M: values Mesa's rocket driver (hardware-tested int8 convolution) writes, read from
# src/gallium/drivers/rocket/rkt_regcmd.c, fill_first_regcmd() (bminor/mesa-mesa @5b82965, the
# mirror the facts file cites) and the facts file's attributions; values only, no code.
_RKT = "Mesa rocket rkt_regcmd.c fill_first_regcmd (bminor/mesa-mesa @5b82965)"
MESA = {
    ("PC.OP_EN", 0x1D): "Mesa rocket rkt_regcmd.c (op_en CNA+CORE+DPU+DPU_RDMA, facts §1.2)",
    ("CNA.CONV_CON1", 0x0): _RKT + ": int8 direct conv",
    ("CNA.CONV_CON1", 0x3): _RKT + ": int8 depthwise conv",
    ("CNA.CONV_CON1", 0x60008000): _RKT + ": 1-channel uint8 input (ARGB_IN 8, non-aligned)",
    ("CNA.CVT_CON0", 0xB): _RKT + ": input converter bypassed, signed data",
    ("CNA.CVT_CON0", 0x38E38E0): _RKT + ": 1-channel input converter, truncate 14",
    ("CNA.CVT_CON0", 0x3CF3CF0): _RKT + ": 1-channel input converter with an add, truncate 15",
    ("CNA.CVT_CON5", 0x0): _RKT + ": no per-channel converter",
    ("CNA.CVT_CON5", 0xFFFF): _RKT + ": 1-channel input, per-channel converter",
    ("CNA.DMA_CON0", 0x000F000F): _RKT + ": data and weight bursts of 16",
    ("CNA.DCOMP_CTRL", 0x0): _RKT + ": weight decompression off",
    ("CNA.DCOMP_REGNUM", 0x0): _RKT + ": weight decompression off",
    ("CNA.FC_CON0", 0x0): _RKT,
    ("CNA.FC_CON1", 0x0): _RKT,
    ("CNA.FC_CON2", 0x0): _RKT,
    ("CORE.MISC_CFG", 0x1): _RKT + ": int8 conv, QD_EN (window sums for the weight zero point)",
    ("CORE.MISC_CFG", 0x3): _RKT + ": int8 depthwise, QD_EN + DW_EN",
    ("CORE.UNDOC_3030", 0x0): _RKT + " (facts §2.4)",
    ("DPU.FEATURE_MODE_CFG", 0x1E4): _RKT + ": output to memory, burst 16",
    ("DPU.FEATURE_MODE_CFG", 0x1FC): _RKT + ": depthwise, output to memory, burst 16",
    ("DPU.DATA_FORMAT", 0x0): _RKT + ": int8 pipeline",
    ("DPU.OFFSET_PEND", 0x0): _RKT,
    ("DPU.DATA_CUBE_NOTCH_ADDR", 0x0): _RKT,
    ("DPU.BS_CFG", 0x20150): _RKT + ": bias add from BRDMA (ALU_SRC 1, algo ADD), MUL and ReLU bypassed",
    ("DPU.BS_OW_CFG", 0x124): _RKT + ": SIZE_E 1 (int8 direct)",
    ("DPU.BS_OW_CFG", 0x36C): _RKT + ": SIZE_E 3 (int8 depthwise)",
    ("DPU.BN_CFG", 0x53): _RKT + ": BN stage bypassed",
    ("DPU.EW_CFG", 0x904202C0): _RKT + ": int8 residual add from ERDMA (per pixel, ADD, converter add-first)",
    ("DPU.EW_CFG", 0x383): _RKT + ": EW stage bypassed",
    ("DPU.EW_CVT_SCALE_VALUE", 0x1): _RKT + ": EW converter scale 1",
    ("DPU.EW_CVT_OFFSET_VALUE", 0x0): _RKT,
    ("DPU.EW_RELUX_CMP_VALUE", 0x0): _RKT,
    ("DPU.BS_ALU_CFG", 0x0): _RKT,
    ("DPU.BS_MUL_CFG", 0x0): _RKT,
    ("DPU.BS_RELUX_CMP_VALUE", 0x0): _RKT,
    ("DPU.BN_ALU_CFG", 0x0): _RKT,
    ("DPU.BN_MUL_CFG", 0x0): _RKT,
    ("DPU.BN_RELUX_CMP_VALUE", 0x0): _RKT,
    ("DPU.UNDOC_40C4", 0x0): _RKT + " (facts §2.5)",
    ("DPU.LUT_ACCESS_CFG", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_CFG", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_INFO", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LE_START", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LE_END", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LO_START", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LO_END", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LE_SLOPE_SCALE", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LE_SLOPE_SHIFT", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LO_SLOPE_SCALE", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU.LUT_LO_SLOPE_SHIFT", 0x0): _RKT + ": no LUT, registers written 0",
    ("DPU_RDMA.BRDMA_CFG", 0x2): _RKT + ": per-channel bias for the BS ALU",
    ("DPU_RDMA.NRDMA_CFG", 0x0): _RKT,
    ("DPU_RDMA.ERDMA_CFG", 0x1): _RKT + ": ERDMA disabled",
    ("DPU_RDMA.ERDMA_CFG", 0x40000004): _RKT + ": residual operand per pixel, 8-bit",
    ("DPU_RDMA.FEATURE_MODE_CFG", 0x7810): _RKT + ": MRDMA disabled, burst 16",
    ("DPU_RDMA.FEATURE_MODE_CFG", 0x7816): _RKT + ": depthwise, MRDMA disabled, burst 16",
    ("DPU_RDMA.FEATURE_MODE_CFG", 0x7D00): _RKT + ": residual add, COMB_USE 5, burst 16",
    ("DPU_RDMA.FEATURE_MODE_CFG", 0x7D06): _RKT + ": depthwise residual add, COMB_USE 5, burst 16",
    ("DPU_RDMA.SRC_DMA_CFG", 0x0): _RKT,
    ("DPU_RDMA.PAD_CFG", 0x0): _RKT,
    ("DPU_RDMA.WEIGHT", 0x01010101): _RKT,
}

# Purposes worth more than the generic text.
PURPOSE = {
    "PC.OP_EN": "which blocks the task starts (op_en mask, GLOBAL OPERATION_ENABLE layout)",
    "PC.BASE_ADDRESS": "next task's regcmd address (PC chain)",
    "PC.REGISTER_AMOUNTS": "next task's fetch amount and the plan's core count",
    "DPU.LUT_ACCESS_CFG": "LUT RAM upload: table select and write mode",
    "DPU.LUT_ACCESS_DATA": "LUT RAM upload: table contents",
    "DPU.LUT_CFG": "LUT use: table roles (LE/LO), hybrid and priority choice",
    "DPU.LUT_INFO": "LUT index shifts (LE/LO INDEX_SELECT) for the lookup",
    "DPU.OUT_CVT_SHIFT": "output converter shift and MINUS_EXP (fp output scaling)",
    "DPU.EW_CFG": "EW stage: operand source, ALU/MUL/LUT/ReLU bypasses and ALU algorithm",
    "DPU.BS_CFG": "BS stage: bias/scale ALU and MUL bypasses, algorithm, ReLU",
    "DPU.BN_CFG": "BN stage: MUL/ALU bypasses, algorithm, ReLU",
    "DPU.FEATURE_MODE_CFG": "DPU input (CORE or flying MRDMA), output mode, transpose, regroup",
    "DPU_RDMA.FEATURE_MODE_CFG": "DPU_RDMA feature input mode and burst",
    "CNA.CONV_CON1": "conv mode, precisions, ARGB input, group line offset",
    "CNA.CBUF_CON0": "CBUF bank split and weight/data reuse",
}


def load_regs(path):
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core", "hw")
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_regs", os.path.join(here, "gen-regs.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _, domains, _ = mod.parse(path)
    byoff, addr, doc, mask = {}, set(), {}, {}
    for d in domains:
        if not d.regcmd:
            continue
        for r in d.regs:
            name = f"{d.name}.{r.name}"
            byoff[r.offset] = name
            if r.addr:
                addr.add(name)
            doc[name] = (r.doc or "").strip(), [f.name for f in r.fields]
            m = 0xFFFFFFFF
            for f in r.fields:
                if FREE_FIELDS.match(f.name):
                    m &= ~f.mask & 0xFFFFFFFF
            mask[name] = m
    return byoff, addr, doc, mask


def golden_level(fname):
    b = os.path.basename(fname)
    if b.startswith("ab-"):
        return "V"
    if b.startswith("mtx-") or b.startswith("onpu-"):
        return "O"
    return None


def parse_golden(gdir, byoff, mask):
    """{(reg, value): {level: "file task N"}} and {reg: {level: "file task N"}}."""
    vals = collections.defaultdict(dict)
    regs = collections.defaultdict(dict)
    per_file = collections.defaultdict(lambda: collections.defaultdict(set))
    for f in sorted(glob.glob(os.path.join(gdir, "*.regcmd"))):
        lv = golden_level(f)
        if not lv:
            continue
        task = None
        for line in open(f):
            if line.startswith("task "):
                task = line.split()[1]
                continue
            p = line.split()
            if task is None or len(p) < 3 or line.startswith("#"):
                continue
            if len(p) > 3 and p[3].startswith("*"):
                continue  # zero re-inserted from a sparse print: not captured
            t, o, v = int(p[0], 16), int(p[1], 16), int(p[2], 16)
            if t == 0x0081:
                name = "PC.OP_EN"
            elif t in (0, 0x0041):
                continue
            else:
                name = byoff.get(o)
                if not name:
                    continue
            v &= mask.get(name, 0xFFFFFFFF)
            where = f"{os.path.basename(f)} task {task}"
            vals[(name, v)].setdefault(lv, where)
            regs[name].setdefault(lv, where)
            per_file[name][os.path.basename(f)].add(v)
    return vals, regs, per_file


def parse_traces(paths, mask):
    seen = collections.defaultdict(set)
    for p in paths:
        for line in open(p):
            line = line.strip()
            if line.startswith("uncovered:"):
                line = line.split(":", 1)[1].strip()
            f = line.split()
            if len(f) < 2 or "." not in f[0]:
                continue
            try:
                v = int(f[1], 16)
            except ValueError:
                continue
            seen[(f[0], v & mask.get(f[0], 0xFFFFFFFF))].add(f[2] if len(f) > 2 else "?")
    return seen


def kind_of(name, addr):
    reg = name.split(".", 1)[1]
    if name in addr or GEOMETRY.search(reg):
        return "geometry"
    if OPERAND.search(reg):
        return "operand"
    return "control"


def purpose_of(name, kind, doc):
    if name in PURPOSE:
        p = PURPOSE[name]
    else:
        text, fields = doc.get(name, ("", []))
        p = " ".join(text.split()).split(". ")[0] if text else ""
        if not p:
            p = name + ("" if not fields else " (" + ", ".join(fields[:6]) +
                        (", ..." if len(fields) > 6 else "") + ")")
    return f"{kind}: {p}"


def best(levels):
    return max(levels, key=lambda lv: LEVEL_RANK[lv])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--registers", required=True)
    ap.add_argument("--trace", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--ledger")
    a = ap.parse_args()
    byoff, addr, doc, mask = load_regs(a.registers)
    gvals, gregs, per_file = parse_golden(a.golden, byoff, mask)
    if a.list:
        for name in sorted(per_file):
            print(name)
            for f in sorted(per_file[name]):
                vs = sorted(per_file[name][f])
                shown = " ".join(f"0x{v:x}" for v in vs[:12])
                print(f"    {f}: {shown}{' ...' if len(vs) > 12 else ''}")
        return 0
    emitted = parse_traces(a.trace, mask)
    names = {n for n, _ in emitted} | set(gregs)
    known = set(byoff.values()) | {"PC.OP_EN"}
    unknown = sorted(n for n in names if n not in known)
    if unknown:
        print("evidence-survey: not regcmd registers (left out): " + ", ".join(unknown),
              file=sys.stderr)
    out = []
    for name in sorted(n for n in names if n in known):
        block, reg = name.split(".", 1)
        kind = kind_of(name, addr)
        m = mask.get(name, 0xFFFFFFFF) if kind == "control" else 0xFFFFFFFF
        purpose = purpose_of(name, kind, doc)
        if kind == "geometry":
            lv = best(gregs[name]) if name in gregs else "T"
            src = gregs[name][lv] if name in gregs else FACTS[block]
            out.append((name, lv, "any", src, purpose, m))
            continue
        bylv = collections.defaultdict(list)
        srcs = {}
        values = {v for (n, v) in gvals if n == name} | {v for (n, v) in emitted if n == name}
        values |= {v for (n, v) in MESA if n == name and kind != "geometry"}
        for v in values:
            g = dict(gvals.get((name, v), {}))
            if (name, v) in MESA:
                g["M"] = MESA[(name, v)]
            if g:
                lv = best(g)
                bylv[lv].append(v)
                srcs.setdefault(lv, {})[v] = g[lv]
            elif kind == "control":
                bylv["T"].append(v)
        for lv in ("V", "M", "O"):
            if not bylv[lv]:
                continue
            vs = sorted(bylv[lv])
            where = sorted(set(srcs[lv][v] for v in vs))
            src = "; ".join(where[:3]) + (f"; +{len(where) - 3} more" if len(where) > 3 else "")
            out.append((name, lv, " ".join(f"0x{v:x}" for v in vs), src, purpose, m))
        progs = sorted({p for (n, v), ps in emitted.items() if n == name for p in ps})
        emit = ", ".join(progs[:4]) + (" ..." if len(progs) > 4 else "")
        if kind == "operand" and any((name, v) not in gvals for v in values):
            out.append((name, "T", "any", f"{FACTS[block]}; emitted by {emit}", purpose, m))
        elif bylv["T"]:
            vs = sorted(bylv["T"])
            out.append((name, "T", " ".join(f"0x{v:x}" for v in vs),
                        f"{FACTS[block]}; emitted by {emit}", purpose, m))
    with open(a.ledger, "w") as f:
        f.write(HEADER)
        for name, lv, vals, src, purpose, m in out:
            block, reg = name.split(".", 1)
            va = 'any="1"' if vals == "any" else f"values={quoteattr(vals)}"
            if m != 0xFFFFFFFF:
                va += f' mask="0x{m:08x}"'
            f.write(f"<entry id={quoteattr(name + '.' + lv)} block={quoteattr(block)} "
                    f"reg={quoteattr(reg)} level=\"{lv}\" {va}\n"
                    f"       source={quoteattr(src)}\n"
                    f"       purpose={quoteattr(purpose)}/>\n")
        f.write("</evidence>\n")
    return 0


HEADER = """<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: MIT -->
<!--
  evidence.xml: the evidence ledger of the register patterns OpenNPU emits.

  One <entry> per register pattern: a register of one block (PC.OP_EN = the op_en entry of the
  task tail), the values it covers (a hex list, compared under `mask` when the register also
  holds sizes or addresses; or any="1"), its evidence level (V, M, O, T),
  the source that proves it (golden file and task, Mesa file and function, or the facts section
  a T pattern is inferred from, with the programs that emit it) and what it is for.
  gen-evidence.py turns it into the C table of npu-evidence.c and into docs/evidence.md.
  scripts/evidence-survey.py drew it from the golden streams (tests/golden/vectors) and from
  traces of every write the test suite makes (NPU_SIM_EVIDENCE_TRACE); rerun it after an
  emitter change, or add the entry by hand with its evidence.
-->
<evidence>
<doc>
Every register pattern OpenNPU's back end and hardware layer can emit, with how well it is
known to work on the RK3588 NPU. The simulator's strict mode is an allow-list over this ledger
(docs/simulator.md): with a threshold set (NPU_SIM_EVIDENCE=V, M, O or T, or struct
npu_device_options.evidence; the test suite sets T, a user's run has no allow-list unless asked),
a register write no entry at or above the threshold covers fails the job naming the task, the
register, the value and the nearest entry. `npuc MODEL --evidence` counts a program's tasks
by the weakest level each uses.

Levels are assigned mechanically by scripts/evidence-survey.py: a value a Rockchip vendor capture
writes (golden `ab-*` files) is V, one a hardware-tested open project writes (`mtx-*`, `onpu-*`)
is O, Mesa-attributed values (as the facts file attributes them) are M, the rest T. Geometry
registers (addresses, sizes, strides, counts) carry one entry for any value, at the best level of
a source that writes the register; operand registers (constants the data path applies) list the
golden values and add a T entry for any other constant; control registers list exact values,
compared under a mask that leaves out their size and address fields (CBUF bank split, surface
lengths, notches, PPU index addresses, the core index of S_POINTER, the LUT upload address).
Generated from core/hw/evidence.xml; regenerate with core/hw/gen-evidence.py.
</doc>
"""

if __name__ == "__main__":
    sys.exit(main())
