/* SPDX-License-Identifier: MIT */
/*
 * npu-regcmd.h: the 64-bit regcmd entry (facts 1.1) and what a decoder needs to say about it.
 *
 *   qword = target << 48 | value << 16 | offset      (little-endian in memory)
 *
 * target is the block-select code (0x0201 CNA ...), or one of the special entries: 0x0081
 * op_en (offset 0x0008, value = block-enable mask), 0x0041 marker, all-zero qword = no-op.
 * The PC fetch amount of a segment of N qwords is AMOUNT(N) = ceil(N/2) - 1 (facts 1.3;
 * NOTES 0 confirms it on 232 chained tails).
 */
#ifndef NPU_REGCMD_H
#define NPU_REGCMD_H

#include <stddef.h>
#include <stdint.h>

#include "npu-regdb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The marker that must precede op_en (TRM, facts 1.2). */
#define NPU_MARKER_QWORD 0x0041000000000000ull
/* Interrupt masks of a task's terminal block (facts 2.2): DPU group 0|1, PPU group 0|1. */
#define NPU_INT_MASK_DPU (PC_INTERRUPT_MASK_DPU_0(1) | PC_INTERRUPT_MASK_DPU_1(1))
#define NPU_INT_MASK_PPU (PC_INTERRUPT_MASK_PPU_0(1) | PC_INTERRUPT_MASK_PPU_1(1))
/* Every driver clears all 17 interrupt bits (facts 4.1 RKNPU_INT_CLEAR). */
#define NPU_INT_CLEAR_ALL 0x1ffffu
/* qwords of the task tail: next address, next amount, marker, op_en (facts 1.3). */
#define NPU_TASK_TAIL_QWORDS 4u

static inline uint64_t
npu_regcmd_pack(uint16_t target, uint16_t offset, uint32_t value)
{
    return (uint64_t)target << 48 | (uint64_t)value << 16 | offset;
}

static inline uint16_t
npu_regcmd_target(uint64_t q)
{
    return (uint16_t)(q >> 48);
}

static inline uint32_t
npu_regcmd_value(uint64_t q)
{
    return (uint32_t)(q >> 16);
}

static inline uint16_t
npu_regcmd_offset(uint64_t q)
{
    return (uint16_t)q;
}

static inline uint64_t
npu_regcmd_op_en(uint32_t enable_mask)
{
    return npu_regcmd_pack(NPU_TARGET_OP_EN, NPU_OP_EN_OFFSET, enable_mask);
}

/* A register write with the target of the offset's block; 0 (a no-op qword) when the block
 * is not regcmd-addressable, which callers must treat as an error. */
uint64_t npu_regcmd_reg(uint16_t offset, uint32_t value);

/* AMOUNT(N) = ceil(N/2) - 1 for a segment of n_qwords >= 1 (facts 1.3). */
static inline uint32_t
npu_pc_amount(size_t n_qwords)
{
    return n_qwords ? (uint32_t)((n_qwords + 1) / 2 - 1) : 0;
}

/* Qwords the PC fetches for an amount: (AMOUNT + 1) * 2 (bits 15:0 only). */
static inline size_t
npu_pc_amount_qwords(uint32_t amount)
{
    return ((size_t)(amount & 0xffffu) + 1) * 2;
}

/* Interrupt mask of a task that enables these blocks: 0xC00 when it ends in PPU, else 0x300
 * (facts 1.4, 2.2; golden enable 0x60 <-> int_mask 0xc00). */
uint32_t npu_int_mask_for_enable(uint32_t enable_mask);

enum npu_qword_kind {
    NPU_QW_REG = 0,         /* register write: target matches the offset's block */
    NPU_QW_NOP,             /* all-zero qword */
    NPU_QW_MARKER,          /* 0x0041 marker */
    NPU_QW_OP_EN,           /* 0x0081 op_en */
    NPU_QW_UNKNOWN_TARGET,  /* target is no block code and no special entry */
    NPU_QW_TARGET_MISMATCH, /* a block code, but the offset lies in another block */
    NPU_QW_UNKNOWN_REG,     /* right block, but the database has no register there */
    NPU_QW_BAD_SPECIAL,     /* marker/op_en/nop with unexpected offset or payload bits */
};

struct npu_qword_info {
    enum npu_qword_kind kind;
    uint16_t target, offset;
    uint32_t value;
    int block;                      /* block of the target code (-1 for specials/unknown) */
    const struct npu_reg_info *reg; /* NULL unless kind == NPU_QW_REG */
};

/* Classifies one qword. Never fails; unknown things come back as their kind. */
enum npu_qword_kind npu_qword_classify(uint64_t q, struct npu_qword_info *out);
/* Block whose regcmd target code this is, or -1. */
int npu_block_for_target(uint16_t target);
/* Short static description of a kind ("unknown target"). */
const char *npu_qword_kind_str(enum npu_qword_kind kind);

enum npu_format_flags {
    NPU_FMT_ALL_FIELDS = 1u << 0, /* also print fields whose value is 0 */
    NPU_FMT_RAW = 1u << 1,        /* minus-one fields as raw values, no enum names */
};

/* Writes "FIELD=value FIELD=NAME ..." for a register value into buf (always terminated when
 * size > 0). Minus-one fields print the real value ("WIDTH=4(3)" = real 4, field 3), enums
 * print their name, signed fields a signed decimal, reserved bits set print "reserved=0x..".
 * Returns the length the full text needs (snprintf semantics). */
size_t npu_format_reg(char *buf, size_t size, const struct npu_reg_info *reg, uint32_t value,
                      unsigned fmt_flags);
/* "CNA|CORE|DPU" for an op_en mask; unknown bits print as "bit1". snprintf semantics. */
size_t npu_format_op_en(char *buf, size_t size, uint32_t enable_mask);

#ifdef __cplusplus
}
#endif

#endif /* NPU_REGCMD_H */
