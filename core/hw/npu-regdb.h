/* SPDX-License-Identifier: MIT */
/*
 * npu-regdb.h: the register database as data, for decoders (npu-dis, the simulator's
 * register names, IR dumps). The table itself is generated from core/hw/registers.xml into
 * npu-rk3588-regs-table.c; this header gives its types and the lookups over it. Emit code
 * does not need any of this: it uses the macros of npu-rk3588-regs.h.
 */
#ifndef NPU_REGDB_H
#define NPU_REGDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu-rk3588-regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-register flags. */
enum npu_reg_flags {
    NPU_REG_ADDR = 1u << 0,         /* holds a DMA address: in the relocation set (facts 2.10) */
    NPU_REG_RO = 1u << 1,           /* read-only */
    NPU_REG_W1C = 1u << 2,          /* write-one-to-clear */
    NPU_REG_UNDOCUMENTED = 1u << 3, /* not in the TRM but written by every generator (CORE 0x3030,
                                       DPU 0x40C4; facts 6.9) */
    NPU_REG_UNVERIFIED = 1u << 4,   /* the register or one of its fields has an open question */
    NPU_REG_NO_REGCMD = 1u << 5,    /* MMIO only: not written through a regcmd stream */
};

/* Per-field flags. */
enum npu_field_flags {
    NPU_FIELD_MINUS_ONE = 1u << 0, /* field holds the real value minus one */
    NPU_FIELD_SIGNED = 1u << 1,    /* two's complement in the field width */
    NPU_FIELD_UNVERIFIED = 1u << 2,
};

struct npu_enum_value {
    const char *name; /* "FP16" */
    uint32_t value;
    const char *doc; /* or NULL */
};

struct npu_enum_info {
    const char *name; /* "precision" */
    const struct npu_enum_value *values;
    unsigned n_values;
    const char *doc;
};

struct npu_field_info {
    const char *name; /* "CONV_X_STRIDE" */
    uint8_t low, high;
    uint16_t flags;                   /* enum npu_field_flags */
    const struct npu_enum_info *type; /* enumeration of the values, or NULL */
    const char *doc;
    const char *unverified; /* why the field is open, or NULL */
};

struct npu_reg_info {
    uint16_t offset;
    uint16_t block;                      /* enum npu_block */
    uint32_t flags;                      /* enum npu_reg_flags */
    const char *name;                    /* "CONV_CON3" */
    const char *full_name;               /* "CNA.CONV_CON3" */
    const struct npu_field_info *fields; /* in bit order as the XML lists them */
    unsigned n_fields;
    const char *doc;
    const char *unverified;
};

struct npu_block_info {
    const char *name; /* "DPU_RDMA" */
    uint16_t base, size;
    uint16_t target;  /* regcmd target code, 0 if the block is not regcmd-addressable */
    int8_t op_en_bit; /* bit in the op_en mask, -1 if none */
    bool regcmd;
};

/* The generated tables (npu-rk3588-regs-table.c). */
extern const struct npu_reg_info npu_rk3588_regs[]; /* sorted by offset */
extern const unsigned npu_rk3588_n_regs;
extern const struct npu_block_info npu_rk3588_blocks[NPU_BLOCK_COUNT];
extern const struct npu_enum_info *const npu_rk3588_enums[];
extern const unsigned npu_rk3588_n_enums;

/* Register at this offset, or NULL if the database has none. */
const struct npu_reg_info *npu_reg_lookup(uint32_t offset);
/* npu_reg_lookup, and *target = npu_target_for_offset(offset) when a register is found (0
 * otherwise), both from tables built once: the register check and target of one write. */
const struct npu_reg_info *npu_reg_lookup_target(uint32_t offset, uint16_t *target);
/* Register by name: "CNA.CONV_CON3", "CNA_CONV_CON3" or "REG_CNA_CONV_CON3"; NULL if unknown. */
const struct npu_reg_info *npu_reg_by_name(const char *name);
/* Field of a register by name, or NULL. */
const struct npu_field_info *npu_reg_field(const struct npu_reg_info *reg, const char *name);

/* Block holding this offset (from its high nibble), or -1 for an unassigned range. */
int npu_block_for_offset(uint32_t offset);
/* Static block name ("CNA"), or "?" if out of range. */
const char *npu_block_name(int block);
/* regcmd target code for a register offset (0x0201 for 0x1xxx ...), or 0 when the offset's
 * block is not reachable through regcmd (DDMA, SDMA, GLOBAL, unassigned). */
uint16_t npu_target_for_offset(uint32_t offset);

/* Field value of a register word; sign-extended for NPU_FIELD_SIGNED fields. */
uint32_t npu_field_get(const struct npu_field_info *f, uint32_t reg_value);
int64_t npu_field_get_signed(const struct npu_field_info *f, uint32_t reg_value);
/* Bits of the register that no field covers (reserved bits set in reg_value). */
uint32_t npu_reg_reserved_bits(const struct npu_reg_info *reg, uint32_t reg_value);
/* Name of an enum value, or NULL if the value is not listed. */
const char *npu_enum_name(const struct npu_enum_info *e, uint32_t value);

#ifdef __cplusplus
}
#endif

#endif /* NPU_REGDB_H */
