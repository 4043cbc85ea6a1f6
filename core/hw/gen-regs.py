#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen-regs.py: turn core/hw/registers.xml into the generated register API.

  gen-regs.py registers.xml --header npu-rk3588-regs.h --table npu-rk3588-regs-table.c

The header holds offsets (REG_<BLOCK>_<REG>), field masks/shifts/maxima, inline packers and
extractors, the enumerations, the regcmd target codes and op_en bits. The table file holds the
names, fields and flags of every register for decoders (types in core/hw/npu-regdb.h).
The XML is validated on the way: overlapping fields, fields outside 0..31, offsets outside
their block, duplicate names and unknown enum types are errors. Only the stdlib is used.
"""

import argparse
import os
import sys
import xml.etree.ElementTree as ET


class GenError(Exception):
    pass


def num(s, what):
    try:
        return int(s, 0)
    except (TypeError, ValueError):
        raise GenError(f"{what}: bad number {s!r}")


def cstr(s):
    if s is None:
        return "NULL"
    s = " ".join(s.split())
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Field:
    def __init__(self, el, where):
        self.name = el.get("name")
        if not self.name or not self.name.replace("_", "").isalnum():
            raise GenError(f"{where}: bad field name {self.name!r}")
        if el.get("pos") is not None:
            self.low = self.high = num(el.get("pos"), where)
        else:
            self.low = num(el.get("low"), where)
            self.high = num(el.get("high"), where)
        if not (0 <= self.low <= self.high <= 31):
            raise GenError(f"{where}.{self.name}: bit range {self.high}:{self.low} invalid")
        self.type = el.get("type")
        self.minus_one = el.get("minus_one") == "1"
        self.signed = el.get("signed") == "1"
        self.doc = el.get("doc")
        self.unverified = el.get("unverified")

    @property
    def mask(self):
        return ((1 << (self.high - self.low + 1)) - 1) << self.low

    @property
    def maxval(self):
        return (1 << (self.high - self.low + 1)) - 1


class Reg:
    def __init__(self, dom, offset, name, base_name, el, fields):
        self.dom = dom
        self.offset = offset
        self.name = name
        self.base_name = base_name  # array base name for field macros
        self.addr = el.get("addr") == "1"
        self.access = el.get("access", "rw")
        self.undocumented = el.get("undocumented") == "1"
        self.regcmd = el.get("regcmd", "yes") != "no" and dom.regcmd
        self.unverified = el.get("unverified")
        d = el.find("doc")
        self.doc = d.text if d is not None else None
        self.fields = fields
        self.array = None  # (count, stride, index) for expanded registers

    @property
    def full(self):
        return f"{self.dom.name}_{self.name}"


class Domain:
    def __init__(self, el):
        self.name = el.get("name")
        self.base = num(el.get("base"), self.name)
        self.size = num(el.get("size"), self.name)
        self.target = num(el.get("target"), self.name) if el.get("target") else 0
        self.op_en_bit = num(el.get("op_en_bit"), self.name) if el.get("op_en_bit") else -1
        self.regcmd = el.get("regcmd", "yes") != "no"
        self.same_as = el.get("same_as")
        self.el = el
        self.regs = []


def parse(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise GenError(f"{path}: {e}")
    enums = {}
    for e in root.findall("enum"):
        vals = []
        seen = set()
        for v in e.findall("value"):
            n, val = v.get("name"), num(v.get("value"), e.get("name"))
            if n in seen:
                raise GenError(f"enum {e.get('name')}: duplicate value name {n}")
            seen.add(n)
            vals.append((n, val, v.get("doc")))
        enums[e.get("name")] = (e.get("doc"), vals)

    domains = [Domain(d) for d in root.findall("domain")]
    byname = {d.name: d for d in domains}
    raw = {}  # "DOM.REG" -> element, for same_fields

    def fields_of(dom, rel):
        fl = []
        for b in rel.findall("bitfield"):
            fl.append(Field(b, f"{dom.name}.{rel.get('name')}"))
        return fl

    for d in domains:
        if d.same_as:
            continue
        for r in d.el.findall("reg32"):
            raw[f"{d.name}.{r.get('name')}"] = r

    for d in domains:
        src = d
        delta = 0
        if d.same_as:
            if d.same_as not in byname:
                raise GenError(f"domain {d.name}: same_as unknown domain {d.same_as}")
            src = byname[d.same_as]
            delta = d.base - src.base
        for r in src.el.findall("reg32"):
            name = r.get("name")
            off = num(r.get("offset"), f"{d.name}.{name}") + delta
            sf = r.get("same_fields")
            if sf:
                key = sf if "." in sf else f"{src.name}.{sf}"
                if key not in raw:
                    raise GenError(f"{d.name}.{name}: same_fields {sf} not found")
                fields = fields_of(d, raw[key])
            else:
                fields = fields_of(d, r)
            count = num(r.get("count"), name) if r.get("count") else 1
            stride = num(r.get("stride"), name) if r.get("stride") else 4
            if "%d" in name:
                base_name = name.replace("%d", "").rstrip("_")
                for i in range(count):
                    reg = Reg(d, off + i * stride, name.replace("%d", str(i)), base_name, r, fields)
                    reg.array = (count, stride, i, off)
                    d.regs.append(reg)
            else:
                if count != 1:
                    raise GenError(f"{d.name}.{name}: count without %d in the name")
                d.regs.append(Reg(d, off, name, name, r, fields))

    specials = []
    for s in root.findall("special"):
        specials.append((s.get("name"), num(s.get("target"), "special"),
                         num(s.get("offset"), "special"), s.get("doc")))
    return enums, domains, specials


def validate(enums, domains):
    names = set()
    offsets = {}
    for d in domains:
        if d.base & 0xFFF or d.size != 0x1000:
            raise GenError(f"domain {d.name}: base must be 4 KiB aligned, size 0x1000")
        for r in d.regs:
            where = f"{d.name}.{r.name}"
            if r.offset % 4:
                raise GenError(f"{where}: offset 0x{r.offset:x} not 4-byte aligned")
            if not (d.base <= r.offset < d.base + d.size):
                raise GenError(f"{where}: offset 0x{r.offset:04x} outside its block")
            if r.offset in offsets:
                raise GenError(f"{where}: offset 0x{r.offset:04x} already used by {offsets[r.offset]}")
            offsets[r.offset] = where
            if r.full in names:
                raise GenError(f"{where}: duplicate register name")
            names.add(r.full)
            if not r.fields:
                raise GenError(f"{where}: no fields")
            used = 0
            fnames = set()
            for f in r.fields:
                if f.mask & used:
                    raise GenError(f"{where}.{f.name}: overlaps another field")
                used |= f.mask
                if f.name in fnames:
                    raise GenError(f"{where}.{f.name}: duplicate field")
                fnames.add(f.name)
                if f.type and f.type not in enums:
                    raise GenError(f"{where}.{f.name}: unknown enum type {f.type}")
                if f.type:
                    for (vn, vv, _) in enums[f.type][1]:
                        if vv > f.maxval:
                            raise GenError(f"{where}.{f.name}: enum {f.type}.{vn} does not fit")
            if r.addr and r.access != "rw":
                raise GenError(f"{where}: an address register must be writable")


def emit_header(enums, domains, specials, xml_path, xml_size):
    o = []
    w = o.append
    w("/* SPDX-License-Identifier: MIT */")
    w("/*")
    w(" * npu-rk3588-regs.h: RK3588 NPU register offsets, fields, enumerations and regcmd targets.")
    w(f" * Generated by core/hw/gen-regs.py from {os.path.basename(xml_path)} ({xml_size} bytes):")
    w(" * do not edit. Emit code reads like")
    w(" *   emit(b, REG_CNA_CONV_CON3, CNA_CONV_CON3_CONV_X_STRIDE(1) | CNA_CONV_CON3_CONV_Y_STRIDE(1));")
    w(" * Packers mask their argument (check ranges against <FIELD>__MAX first); fields marked")
    w(" * <FIELD>__MINUS_ONE hold the real value minus one and the packer does NOT subtract it.")
    w(" */")
    w("#ifndef NPU_RK3588_REGS_H")
    w("#define NPU_RK3588_REGS_H")
    w("")
    w("#include <stdint.h>")
    w("")
    w("/* Hardware blocks of one core's 64 KiB register window (facts 2.1). */")
    w("enum npu_block {")
    for i, d in enumerate(domains):
        w(f"    NPU_BLOCK_{d.name} = {i},")
    w(f"    NPU_BLOCK_COUNT = {len(domains)},")
    w("};")
    w("")
    for d in domains:
        w(f"#define NPU_BLOCK_BASE_{d.name} 0x{d.base:04x}")
    w("")
    w("/* regcmd target field (bits 63..48) per block and for the special entries (facts 1.2). */")
    for d in domains:
        if d.target:
            w(f"#define NPU_TARGET_{d.name} 0x{d.target:04x}")
    for (n, t, off, doc) in specials:
        w(f"#define NPU_TARGET_{n} 0x{t:04x} /* {' '.join(doc.split())} */")
    for (n, t, off, doc) in specials:
        w(f"#define NPU_{n}_OFFSET 0x{off:04x}")
    w("")
    w("/* op_en mask bits (value of the 0x0081 entry = GLOBAL OPERATION_ENABLE layout). */")
    allmask = 0
    for d in domains:
        if d.op_en_bit >= 0:
            w(f"#define NPU_OP_EN_{d.name} 0x{1 << d.op_en_bit:02x}u")
            allmask |= 1 << d.op_en_bit
    w(f"#define NPU_OP_EN_ALL 0x{allmask:02x}u")
    w("")
    w("/* Enumerations of field values (facts 2.2-2.9). */")
    for en, (doc, vals) in enums.items():
        w(f"/* {' '.join(doc.split())} */" if doc else f"/* {en} */")
        w(f"enum npu_{en} {{")
        for (vn, vv, vdoc) in vals:
            c = f" /* {' '.join(vdoc.split())} */" if vdoc else ""
            w(f"    NPU_{en.upper()}_{vn} = {vv},{c}")
        w("};")
    w("")
    for d in domains:
        w(f"/* ---- {d.name} (0x{d.base:04x}) ---- */")
        done_arrays = set()
        for r in d.regs:
            flags = []
            if r.addr:
                flags.append("DMA address (relocated)")
            if r.access != "rw":
                flags.append(r.access)
            if r.undocumented:
                flags.append("undocumented")
            if not r.regcmd:
                flags.append("not written by regcmd")
            if r.unverified:
                flags.append("unverified: " + " ".join(r.unverified.split()))
            c = f" /* {'; '.join(flags)} */" if flags else ""
            w(f"#define REG_{r.full} 0x{r.offset:04x}{c}")
            if r.array:
                if r.base_name in done_arrays:
                    continue
                done_arrays.add(r.base_name)
                count, stride, _, off0 = r.array
                w(f"#define REG_{d.name}_{r.base_name}(i) (0x{off0:04x} + {stride} * (i))"
                  f" /* i < {count} */")
                w(f"#define REG_{d.name}_{r.base_name}__COUNT {count}")
            prefix = f"{d.name}_{r.base_name}"
            for f in r.fields:
                fn = f"{prefix}_{f.name}"
                w(f"#define {fn}__MASK 0x{f.mask:08x}u")
                w(f"#define {fn}__SHIFT {f.low}")
                w(f"#define {fn}__MAX 0x{f.maxval:x}u")
                if f.minus_one:
                    w(f"#define {fn}__MINUS_ONE 1")
                w(f"static inline uint32_t {fn}(uint32_t v)")
                w(f"{{ return (v << {f.low}) & 0x{f.mask:08x}u; }}")
                w(f"static inline uint32_t {fn}__GET(uint32_t r)")
                w(f"{{ return (r & 0x{f.mask:08x}u) >> {f.low}; }}")
                if f.signed:
                    bits = f.high - f.low + 1
                    w(f"static inline int32_t {fn}__GET_SIGNED(uint32_t r)")
                    if bits == 32:
                        w("{ return (int32_t)r; }")
                    else:
                        w(f"{{ uint32_t v = {fn}__GET(r);"
                          f" return (int32_t)(v ^ 0x{1 << (bits - 1):x}u) - 0x{1 << (bits - 1):x}; }}")
        w("")
    w("/* The relocation set: every register holding a DMA address (README 'address registers'). */")
    w("#define NPU_ADDR_REGS(X) \\")
    addrs = [r for d in domains for r in d.regs if r.addr]
    for i, r in enumerate(addrs):
        end = " \\" if i + 1 < len(addrs) else ""
        w(f"    X(REG_{r.full}){end}")
    w(f"#define NPU_ADDR_REG_COUNT {len(addrs)}")
    w("")
    w("#endif /* NPU_RK3588_REGS_H */")
    return "\n".join(o) + "\n"


def emit_table(enums, domains, specials):
    o = []
    w = o.append
    w("/* SPDX-License-Identifier: MIT */")
    w("/* npu-rk3588-regs-table.c: register names and fields for decoders. Generated by")
    w(" * core/hw/gen-regs.py from core/hw/registers.xml: do not edit. */")
    w('#include "npu-regdb.h"')
    w("")
    w("#include <stddef.h>")
    w("")
    for en, (doc, vals) in enums.items():
        w(f"static const struct npu_enum_value enum_{en}_values[] = {{")
        for (vn, vv, vdoc) in vals:
            w(f"    {{ {cstr(vn)}, {vv}u, {cstr(vdoc)} }},")
        w("};")
        w(f"const struct npu_enum_info npu_enum_{en} = {{ {cstr(en)}, enum_{en}_values, "
          f"{len(vals)}u, {cstr(doc)} }};")
    w("")
    w("const struct npu_enum_info *const npu_rk3588_enums[] = {")
    for en in enums:
        w(f"    &npu_enum_{en},")
    w("};")
    w(f"const unsigned npu_rk3588_n_enums = {len(enums)};")
    w("")
    emitted = {}
    for d in domains:
        for r in d.regs:
            key = (d.name, r.base_name)
            if key in emitted:
                continue
            emitted[key] = f"fields_{d.name}_{r.base_name}"
            w(f"static const struct npu_field_info fields_{d.name}_{r.base_name}[] = {{")
            for f in r.fields:
                fl = []
                if f.minus_one:
                    fl.append("NPU_FIELD_MINUS_ONE")
                if f.signed:
                    fl.append("NPU_FIELD_SIGNED")
                if f.unverified:
                    fl.append("NPU_FIELD_UNVERIFIED")
                flags = "|".join(fl) if fl else "0"
                typ = f"&npu_enum_{f.type}" if f.type else "NULL"
                w(f"    {{ {cstr(f.name)}, {f.low}, {f.high}, {flags}, {typ}, {cstr(f.doc)}, "
                  f"{cstr(f.unverified)} }},")
            w("};")
    w("")
    regs = sorted((r for d in domains for r in d.regs), key=lambda r: r.offset)
    w("/* Sorted by offset (npu_reg_lookup bisects). */")
    w("const struct npu_reg_info npu_rk3588_regs[] = {")
    for r in regs:
        fl = []
        if r.addr:
            fl.append("NPU_REG_ADDR")
        if r.access == "ro":
            fl.append("NPU_REG_RO")
        if r.access == "w1c":
            fl.append("NPU_REG_W1C")
        if r.undocumented:
            fl.append("NPU_REG_UNDOCUMENTED")
        if r.unverified or any(f.unverified for f in r.fields):
            fl.append("NPU_REG_UNVERIFIED")
        if not r.regcmd:
            fl.append("NPU_REG_NO_REGCMD")
        flags = "|".join(fl) if fl else "0"
        fa = emitted[(r.dom.name, r.base_name)]
        w(f"    {{ 0x{r.offset:04x}, NPU_BLOCK_{r.dom.name}, {flags}, {cstr(r.name)}, "
          f"{cstr(r.dom.name + '.' + r.name)}, {fa}, {len(r.fields)}u, {cstr(r.doc)}, "
          f"{cstr(r.unverified)} }},")
    w("};")
    w(f"const unsigned npu_rk3588_n_regs = {len(regs)};")
    w("")
    w("const struct npu_block_info npu_rk3588_blocks[NPU_BLOCK_COUNT] = {")
    for d in domains:
        w(f"    {{ {cstr(d.name)}, 0x{d.base:04x}, 0x{d.size:04x}, 0x{d.target:04x}, "
          f"{d.op_en_bit}, {'true' if d.regcmd else 'false'} }},")
    w("};")
    return "\n".join(o) + "\n"


def write_if_changed(path, text):
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xml")
    ap.add_argument("--header")
    ap.add_argument("--table")
    a = ap.parse_args()
    try:
        enums, domains, specials = parse(a.xml)
        validate(enums, domains)
    except (GenError, OSError) as e:
        print(f"gen-regs.py: error: {e}", file=sys.stderr)
        return 1
    size = os.path.getsize(a.xml)
    if a.header:
        write_if_changed(a.header, emit_header(enums, domains, specials, a.xml, size))
    if a.table:
        write_if_changed(a.table, emit_table(enums, domains, specials))
    return 0


if __name__ == "__main__":
    sys.exit(main())
