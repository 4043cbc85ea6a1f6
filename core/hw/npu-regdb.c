/* SPDX-License-Identifier: MIT */
/*
 * npu-regdb.c: lookups over the generated register table and the regcmd qword classifier
 * and formatter that npu-dis, the simulator and IR dumps share. Everything here reads the
 * database; nothing knows a register offset by itself.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "npu-regcmd.h"

/* Every regcmd write is checked against the database (npu_emit, the simulator, the evidence
 * classifier): lookups by offset are a direct index, built once from the sorted table, rather
 * than a search. Entry k is 1 + the table index of the register at offset 4k, 0 for none. */
static uint16_t reg_index[0x10000 / 4];
/* The regcmd target of the register at offset 4k (npu_target_for_offset, computed once):
 * npu_emit packs every write with it instead of searching the blocks per write. */
static uint16_t reg_target[0x10000 / 4];
static pthread_once_t reg_index_once = PTHREAD_ONCE_INIT;

static void
reg_index_build(void)
{
    for (unsigned i = 0; i < npu_rk3588_n_regs && i < UINT16_MAX; i++) {
        uint32_t o = npu_rk3588_regs[i].offset;
        if (!(o & 3) && !reg_index[o / 4]) {
            reg_index[o / 4] = (uint16_t)(i + 1);
            reg_target[o / 4] = npu_target_for_offset(o);
        }
    }
}

static const struct npu_reg_info *
reg_search(uint32_t offset)
{
    unsigned lo = 0, hi = npu_rk3588_n_regs;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        uint32_t o = npu_rk3588_regs[mid].offset;

        if (o == offset)
            return &npu_rk3588_regs[mid];
        if (o < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct npu_reg_info *
npu_reg_lookup(uint32_t offset)
{
    if (offset > 0xffff)
        return NULL;
    if (offset & 3)
        return reg_search(offset); /* the table holds none today; searched all the same */
    pthread_once(&reg_index_once, reg_index_build);
    unsigned k = reg_index[offset / 4];
    return k ? &npu_rk3588_regs[k - 1] : NULL;
}

const struct npu_reg_info *
npu_reg_lookup_target(uint32_t offset, uint16_t *target)
{
    *target = 0;
    if (offset > 0xffff || (offset & 3)) {
        const struct npu_reg_info *r = npu_reg_lookup(offset);
        if (r)
            *target = npu_target_for_offset(offset);
        return r;
    }
    pthread_once(&reg_index_once, reg_index_build);
    unsigned k = reg_index[offset / 4];
    if (!k)
        return NULL;
    *target = reg_target[offset / 4];
    return &npu_rk3588_regs[k - 1];
}

const struct npu_reg_info *
npu_reg_by_name(const char *name)
{
    if (!name)
        return NULL;
    if (!strncmp(name, "REG_", 4))
        name += 4;
    for (unsigned i = 0; i < npu_rk3588_n_regs; i++) {
        const struct npu_reg_info *r = &npu_rk3588_regs[i];
        const char *bn = npu_rk3588_blocks[r->block].name;
        size_t bl = strlen(bn);

        if (!strcmp(name, r->full_name))
            return r;
        /* "CNA_CONV_CON3": block name, one separator, register name. */
        if (!strncmp(name, bn, bl) && name[bl] == '_' && !strcmp(name + bl + 1, r->name))
            return r;
    }
    return NULL;
}

const struct npu_field_info *
npu_reg_field(const struct npu_reg_info *reg, const char *name)
{
    if (!reg || !name)
        return NULL;
    for (unsigned i = 0; i < reg->n_fields; i++)
        if (!strcmp(reg->fields[i].name, name))
            return &reg->fields[i];
    return NULL;
}

int
npu_block_for_offset(uint32_t offset)
{
    if (offset > 0xffff)
        return -1;
    for (int b = 0; b < NPU_BLOCK_COUNT; b++) {
        const struct npu_block_info *bi = &npu_rk3588_blocks[b];

        if (offset >= bi->base && offset < (uint32_t)bi->base + bi->size)
            return b;
    }
    return -1;
}

const char *
npu_block_name(int block)
{
    if (block < 0 || block >= NPU_BLOCK_COUNT)
        return "?";
    return npu_rk3588_blocks[block].name;
}

uint16_t
npu_target_for_offset(uint32_t offset)
{
    int b = npu_block_for_offset(offset);

    if (b < 0 || !npu_rk3588_blocks[b].regcmd)
        return 0;
    return npu_rk3588_blocks[b].target;
}

int
npu_block_for_target(uint16_t target)
{
    if (!target)
        return -1;
    for (int b = 0; b < NPU_BLOCK_COUNT; b++)
        if (npu_rk3588_blocks[b].regcmd && npu_rk3588_blocks[b].target == target)
            return b;
    return -1;
}

uint32_t
npu_field_get(const struct npu_field_info *f, uint32_t reg_value)
{
    unsigned width = f->high - f->low + 1u;
    uint32_t mask = width >= 32 ? 0xffffffffu : (1u << width) - 1u;

    return (reg_value >> f->low) & mask;
}

int64_t
npu_field_get_signed(const struct npu_field_info *f, uint32_t reg_value)
{
    unsigned width = f->high - f->low + 1u;
    uint32_t v = npu_field_get(f, reg_value);

    if (!(f->flags & NPU_FIELD_SIGNED))
        return v;
    if (v & (1u << (width - 1)))
        return (int64_t)v - ((int64_t)1 << width);
    return v;
}

uint32_t
npu_reg_reserved_bits(const struct npu_reg_info *reg, uint32_t reg_value)
{
    uint32_t covered = 0;

    for (unsigned i = 0; i < reg->n_fields; i++) {
        const struct npu_field_info *f = &reg->fields[i];
        unsigned width = f->high - f->low + 1u;
        uint32_t mask = width >= 32 ? 0xffffffffu : (1u << width) - 1u;

        covered |= mask << f->low;
    }
    return reg_value & ~covered;
}

const char *
npu_enum_name(const struct npu_enum_info *e, uint32_t value)
{
    if (!e)
        return NULL;
    for (unsigned i = 0; i < e->n_values; i++)
        if (e->values[i].value == value)
            return e->values[i].name;
    return NULL;
}

uint64_t
npu_regcmd_reg(uint16_t offset, uint32_t value)
{
    uint16_t t = npu_target_for_offset(offset);

    if (!t)
        return 0;
    return npu_regcmd_pack(t, offset, value);
}

uint32_t
npu_int_mask_for_enable(uint32_t enable_mask)
{
    return (enable_mask & NPU_OP_EN_PPU) ? NPU_INT_MASK_PPU : NPU_INT_MASK_DPU;
}

enum npu_qword_kind
npu_qword_classify(uint64_t q, struct npu_qword_info *out)
{
    struct npu_qword_info tmp;

    if (!out)
        out = &tmp;
    memset(out, 0, sizeof(*out));
    out->target = npu_regcmd_target(q);
    out->offset = npu_regcmd_offset(q);
    out->value = npu_regcmd_value(q);
    out->block = -1;

    if (q == 0)
        return out->kind = NPU_QW_NOP;
    if (out->target == NPU_TARGET_MARKER)
        return out->kind = (out->offset == NPU_MARKER_OFFSET) ? NPU_QW_MARKER : NPU_QW_BAD_SPECIAL;
    if (out->target == NPU_TARGET_OP_EN) {
        if (out->offset != NPU_OP_EN_OFFSET || (out->value & ~NPU_OP_EN_ALL))
            return out->kind = NPU_QW_BAD_SPECIAL;
        return out->kind = NPU_QW_OP_EN;
    }
    if (out->target == NPU_TARGET_NOP)
        return out->kind = NPU_QW_BAD_SPECIAL; /* target 0 with a non-zero payload */

    out->block = npu_block_for_target(out->target);
    if (out->block < 0)
        return out->kind = NPU_QW_UNKNOWN_TARGET;
    if (npu_block_for_offset(out->offset) != out->block)
        return out->kind = NPU_QW_TARGET_MISMATCH;
    out->reg = npu_reg_lookup(out->offset);
    if (!out->reg)
        return out->kind = NPU_QW_UNKNOWN_REG;
    return out->kind = NPU_QW_REG;
}

const char *
npu_qword_kind_str(enum npu_qword_kind kind)
{
    switch (kind) {
    case NPU_QW_REG: return "register write";
    case NPU_QW_NOP: return "no-op";
    case NPU_QW_MARKER: return "marker";
    case NPU_QW_OP_EN: return "op_en";
    case NPU_QW_UNKNOWN_TARGET: return "unknown target";
    case NPU_QW_TARGET_MISMATCH: return "target does not match the offset's block";
    case NPU_QW_UNKNOWN_REG: return "unknown register";
    case NPU_QW_BAD_SPECIAL: return "malformed special entry";
    }
    return "?";
}

/* Appends to a bounded buffer while counting the full length (snprintf semantics). */
struct sbuf {
    char *buf;
    size_t size, len;
};

static void __attribute__((format(printf, 2, 3))) sb_printf(struct sbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int n;
    size_t room = sb->len < sb->size ? sb->size - sb->len : 0;

    va_start(ap, fmt);
    n = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb->len += (size_t)n;
}

size_t
npu_format_reg(char *buf, size_t size, const struct npu_reg_info *reg, uint32_t value,
               unsigned fmt_flags)
{
    struct sbuf sb = {buf, size, 0};
    uint32_t reserved;
    int printed = 0;

    if (size)
        buf[0] = '\0';
    if (!reg)
        return 0;
    for (unsigned i = 0; i < reg->n_fields; i++) {
        const struct npu_field_info *f = &reg->fields[i];
        uint32_t v = npu_field_get(f, value);
        unsigned width = f->high - f->low + 1u;
        const char *en;

        if (!v && !(fmt_flags & NPU_FMT_ALL_FIELDS) && !(f->flags & NPU_FIELD_MINUS_ONE))
            continue;
        sb_printf(&sb, "%s%s=", printed++ ? " " : "", f->name);
        en = (fmt_flags & NPU_FMT_RAW) ? NULL : npu_enum_name(f->type, v);
        if (en)
            sb_printf(&sb, "%s", en);
        else if ((f->flags & NPU_FIELD_MINUS_ONE) && !(fmt_flags & NPU_FMT_RAW))
            sb_printf(&sb, "%llu(%u)", (unsigned long long)v + 1, v);
        else if (f->flags & NPU_FIELD_SIGNED)
            sb_printf(&sb, "%lld", (long long)npu_field_get_signed(f, value));
        else if (width == 32)
            sb_printf(&sb, "0x%x", v);
        else if (v >= 4096)
            sb_printf(&sb, "%u(0x%x)", v, v);
        else
            sb_printf(&sb, "%u", v);
    }
    reserved = npu_reg_reserved_bits(reg, value);
    if (reserved)
        sb_printf(&sb, "%sreserved=0x%x", printed++ ? " " : "", reserved);
    if (!printed)
        sb_printf(&sb, "0");
    return sb.len;
}

size_t
npu_format_op_en(char *buf, size_t size, uint32_t enable_mask)
{
    struct sbuf sb = {buf, size, 0};
    int printed = 0;

    if (size)
        buf[0] = '\0';
    for (unsigned bit = 0; bit < 32; bit++) {
        const char *name = NULL;

        if (!(enable_mask & (1u << bit)))
            continue;
        for (int b = 0; b < NPU_BLOCK_COUNT; b++)
            if (npu_rk3588_blocks[b].op_en_bit == (int)bit)
                name = npu_rk3588_blocks[b].name;
        if (name)
            sb_printf(&sb, "%s%s", printed++ ? "|" : "", name);
        else
            sb_printf(&sb, "%sbit%u", printed++ ? "|" : "", bit);
    }
    if (!printed)
        sb_printf(&sb, "none");
    return sb.len;
}
