/* SPDX-License-Identifier: MIT */
/*
 * npub-format.h: the byte layout of .npub (versions 1 to 3; 2 adds the
 * optional PROPS section, 3 the STATE buffer's size and the DYNRELOCS section), shared by the
 * writer (npu-npub-write.c) and the loader (npu-npub-read.c). docs/npub-format.md is the
 * description for people; this file is the one for the compiler. Everything is little-endian;
 * records have fixed sizes and fixed field offsets, read and written through the get/put helpers
 * below (no struct overlays, so neither the host's byte order nor its padding matters).
 */
#ifndef NPUB_FORMAT_H
#define NPUB_FORMAT_H

#include <stdint.h>
#include <string.h>

/* "NPUB" then CR LF SUB LF (catches text-mode transfers, as PNG's does). */
static const uint8_t NPUB_MAGIC[8] = {'N', 'P', 'U', 'B', 0x0d, 0x0a, 0x1a, 0x0a};

#define NPUB_HEADER_BYTES 128u
#define NPUB_SECTION_ENTRY_BYTES 32u
#define NPUB_MAX_SECTIONS 32u
#define NPUB_ALIGN 64u             /* section and blob alignment in the file */
#define NPUB_NO_STRING 0xffffffffu /* a NULL string reference */

/* Header fields (byte offsets). */
enum {
    H_MAGIC = 0,            /* u8[8] */
    H_FORMAT = 8,           /* u32 format version */
    H_HEADER_SIZE = 12,     /* u32 = 128 */
    H_FILE_SIZE = 16,       /* u64 */
    H_N_SECTIONS = 24,      /* u32 */
    H_FLAGS = 28,           /* u32, 0 */
    H_TABLE_OFFSET = 32,    /* u64 = 128 */
    H_COMPILER = 40,        /* u32 major*10000+minor*100+patch */
    H_PROGRAM_VERSION = 44, /* u32 NPU_PROGRAM_VERSION */
    H_MODEL_HASH = 48,      /* u64 */
    H_OPTIONS_HASH = 56,    /* u64 */
    H_TABLE_HASH = 64,      /* u64 XXH64 of the section table */
    /* 72..111 reserved, zero */
    H_BODY_HASH = 112,   /* u64 XXH64 of bytes [128, file_size) */
    H_HEADER_HASH = 120, /* u64 XXH64 of bytes [0, 120) */
};

/* Section table entry fields. */
enum {
    S_KIND = 0,   /* u32 enum npub_section */
    S_COUNT = 4,  /* u32 records (0 for byte blobs) */
    S_OFFSET = 8, /* u64 from the start of the file, NPUB_ALIGN-aligned */
    S_SIZE = 16,  /* u64 bytes */
    S_HASH = 24,  /* u64 XXH64 of the section's bytes */
};

enum npub_section {
    SEC_META = 1,  /* text, "key=value\n" lines */
    SEC_STRINGS,   /* NUL-terminated strings; references are byte offsets */
    SEC_PROGRAM,   /* one PROGRAM record */
    SEC_TENSORS,   /* TENSOR records */
    SEC_STEPS,     /* STEP records */
    SEC_ATTRS,     /* ATTR records */
    SEC_INDICES,   /* i32: step operands, graph inputs and outputs */
    SEC_JOBS,      /* JOB records */
    SEC_TASKS,     /* TASK records */
    SEC_RELOCS,    /* RELOC records */
    SEC_REGCMD,    /* u64 regcmd qwords of every job */
    SEC_WEIGHTS,   /* contents of NPU_BUF_WEIGHTS */
    SEC_CONSTS,    /* host constants and attribute payloads (64-byte aligned pieces) */
    SEC_PROPS,     /* PROP records: model metadata (format 2 on; optional) */
    SEC_DYNRELOCS, /* DYNRELOC records: run-time positioned relocations (format 3 on) */
    SEC_KIND_END,
};

/* PROGRAM record. */
enum {
    P_N_INPUTS = 0,
    P_INPUTS_START = 4,
    P_N_OUTPUTS = 8,
    P_OUTPUTS_START = 12,
    P_PRODUCER = 16, /* u32 string */
    P_ACT_BYTES = 24,
    P_HOST_BYTES = 32,
    P_WEIGHTS_BYTES = 40,
    P_STATE_BYTES = 48, /* u64, format 3 on (reserved, zero, before) */
    PROGRAM_BYTES = 64,
};

/* TENSOR record. */
enum {
    T_NAME = 0,
    T_DTYPE = 4,
    T_NDIM = 8,
    T_PLACE = 12,
    T_DIMS = 16, /* i64[8] */
    T_OFFSET = 80,
    T_BYTES = 88,
    T_BUFFER = 96,
    T_LAYOUT = 100,
    T_MEM_DTYPE = 104,
    T_NPU_C = 108,
    T_NPU_H = 112,
    T_NPU_W = 116,
    T_ORDER = 120,
    T_QSCALE = 124, /* f32 */
    T_QZERO = 128,
    T_IO_INPUT = 132,
    T_IO_OUTPUT = 136,
    T_FLAGS = 140, /* bit 0: constant data in CONSTS */
    T_DATA_OFFSET = 144,
    T_DATA_SIZE = 152, /* u64, into CONSTS */
    TENSOR_BYTES = 160,
};
#define T_FLAG_CONST 1u

/* STEP record. */
enum {
    ST_KIND = 0,
    ST_OP = 4, /* u32 string: the op's name (npu-ops.h), NO_STRING unless CPU */
    ST_JOB = 8,
    ST_NAME = 12,
    ST_IN_START = 16,
    ST_NIN = 20,
    ST_OUT_START = 24,
    ST_NOUT = 28,
    ST_ATTR_START = 32,
    ST_NATTR = 36,
    STEP_BYTES = 40,
};

/* ATTR record. */
enum {
    A_NAME = 0,
    A_TYPE = 4,
    A_I = 8,  /* i64 */
    A_F = 16, /* f32 */
    A_S = 20, /* u32 string */
    A_PAYLOAD =
        24,   /* u64 offset in CONSTS: ints (i64), floats (f32), strings (u32 refs), tensor data */
    A_N = 32, /* u64 count */
    A_T_DTYPE = 40,
    A_T_NDIM = 44,
    A_T_DIMS = 48, /* i64[8] */
    A_T_QSCALE = 112,
    A_T_QZERO = 116,
    ATTR_BYTES = 120,
};

/* JOB record. */
enum {
    J_REGCMD_START = 0, /* u64 qword index in REGCMD */
    J_N_QWORDS = 8,
    J_TASK_START = 12,
    J_N_TASKS = 16,
    J_RELOC_START = 20,
    J_N_RELOCS = 24,
    J_ALIGN = 28,
    J_MODELED = 32, /* f64 */
    JOB_BYTES = 40,
};

/* TASK record. */
enum {
    K_START = 0,
    K_N_BODY = 4,
    K_ENABLE = 8,
    K_INT_MASK = 12,
    K_NAME = 16,
    TASK_BYTES = 20,
};

/* PROP record: one model metadata entry, both strings in STRINGS. */
enum { PR_KEY = 0, PR_VALUE = 4, PROP_BYTES = 8 };

/* DYNRELOC record (format 3): a relocation of job J_ moved per run by a position input.
 * Records are in job order; D_RELOC indexes the job's own relocations. */
enum {
    D_JOB = 0,
    D_RELOC = 4,
    D_INPUT = 8,
    D_STRIDE = 12,
    D_LIMIT = 16,
    D_EXTENT = 20,
    DYNRELOC_BYTES = 24,
};

/* RELOC record. */
enum { R_QWORD = 0, R_BUFFER = 4, R_OFFSET = 8, RELOC_BYTES = 12 };

static inline uint32_t
get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t
get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline float
getf32(const uint8_t *p)
{
    uint32_t u = get32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline double
getf64(const uint8_t *p)
{
    uint64_t u = get64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void
put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static inline void
putf32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u);
}

static inline void
putf64(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    put64(p, u);
}

#endif /* NPUB_FORMAT_H */
