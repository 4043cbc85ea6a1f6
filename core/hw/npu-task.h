/* SPDX-License-Identifier: MIT */
/*
 * npu-task.h: building regcmd streams, in three separate steps.
 *
 * 1. Emit: per task a body of register writes (npu_emit / npu_emit_reloc), closed by
 *    npu_stream_end_task() with the task's op_en mask. Address registers emitted through
 *    npu_emit_reloc() are recorded as (qword, buffer id, offset) so the stream can be placed
 *    at any buffer addresses later (the compiler's template-replay route).
 * 2. Layout: npu_stream_layout() places the segments in one regcmd buffer at a given IOVA,
 *    each on a 64-byte boundary (what RKNN does, errata S6; 16 bytes is the hardware minimum),
 *    zero padding between, and writes each segment's 4-qword tail as for a last task:
 *      tail-0  0 (no next task)        tail-1  PC_REGISTER_AMOUNTS = 0
 *      tail-2  0x0041 marker           tail-3  0x0081 op_en = enable mask   (facts 1.3)
 * 3. Chain: npu_image_chain() links a range of tasks into one PC chain: tail-0 of task i
 *    becomes PC_BASE_ADDRESS = address of task i+1, tail-1 PC_REGISTER_AMOUNTS = AMOUNT(N)
 *    with N = body(i+1) + 4 and AMOUNT(N) = ceil(N/2) - 1 (facts 1.3, NOTES 0), plus bits
 *    17:16 = cores - 1 for multi-core plans (errata S3). npu_image_relocate() then writes
 *    every address from the buffer IOVAs (and re-bases the chain if the image moved), and
 *    npu_image_fill_rknpu_tasks() / _rocket_tasks() fill the kernel task descriptors.
 *
 * Errors while emitting are sticky: the first one is kept in the stream (with a message) and
 * later emits do nothing, so emit code checks once, at npu_stream_end_task() or layout.
 */
#ifndef NPU_TASK_H
#define NPU_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu-abi.h"
#include "npu-regcmd.h"
#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Buffer id of relocations against the regcmd buffer itself (the PC chain addresses). */
#define NPU_RELOC_REGCMD UINT32_MAX
/* Default and minimum segment alignment in bytes (errata S6; facts 1.3). */
#define NPU_SEGMENT_ALIGN 64u
#define NPU_SEGMENT_ALIGN_MIN 16u

struct npu_reloc {
    uint32_t qword;  /* body index while building; index into the image after layout */
    uint32_t buffer; /* caller's buffer id, or NPU_RELOC_REGCMD */
    uint32_t offset; /* byte offset inside that buffer */
};

/* One task while it is being built. */
struct npu_task_seg {
    uint64_t *body;
    uint32_t n_body, cap_body;
    struct npu_reloc *relocs;
    uint32_t n_relocs, cap_relocs;
    uint32_t enable_mask; /* op_en value */
    uint32_t int_mask;    /* descriptor int_mask */
    uint32_t op_idx;      /* descriptor op_idx (kernel ignores it) */
};

struct npu_stream {
    struct npu_task_seg *tasks;
    uint32_t n_tasks, cap_tasks;
    bool open;             /* a task is being emitted */
    enum npu_status error; /* first error, sticky */
    char errmsg[160];
};

void npu_stream_init(struct npu_stream *s);
void npu_stream_fini(struct npu_stream *s);
/* Starts a new task (an open one must be ended first). */
enum npu_status npu_stream_begin_task(struct npu_stream *s);
/* Register write; the target comes from the offset's block. Unknown or read-only registers
 * and MMIO-only ones are errors. */
void npu_emit(struct npu_stream *s, uint16_t reg, uint32_t value);
/* Address register write: value = IOVA(buffer) + offset, filled in by npu_image_relocate();
 * until then the qword holds `offset`. Only registers of the relocation set are accepted. */
void npu_emit_reloc(struct npu_stream *s, uint16_t reg, uint32_t buffer, uint32_t offset);
/* A qword as is (for replaying captured streams); no checks. */
void npu_emit_raw(struct npu_stream *s, uint64_t qword);
/* n qwords as is (npu_emit_raw of each, in one append); no checks. */
void npu_emit_raw_n(struct npu_stream *s, const uint64_t *qwords, uint32_t n);
/* Ends the open task. enable_mask 0 = the blocks the body wrote (PC excluded): CNA+CORE+DPU
 * gives 0x0d, DPU+DPU_RDMA 0x18, PPU+PPU_RDMA 0x60 as in facts 1.2. The descriptor int_mask
 * becomes 0xc00 when PPU is enabled, else 0x300. Returns the stream's status. */
enum npu_status npu_stream_end_task(struct npu_stream *s, uint32_t enable_mask);
enum npu_status npu_stream_status(const struct npu_stream *s);
/* Human-readable reason of the sticky error ("" when OK). */
const char *npu_stream_error(const struct npu_stream *s);

struct npu_image_task {
    uint32_t start;  /* qword index of the segment in the image */
    uint32_t n_body; /* body qwords = descriptor regcfg_amount */
    uint32_t enable_mask;
    uint32_t int_mask;
    uint32_t op_idx;
};

/* A laid-out regcmd buffer. */
struct npu_regcmd_image {
    uint64_t *qwords; /* whole buffer, padding included */
    size_t n_qwords;
    uint32_t iova;  /* IOVA of qwords[0] */
    uint32_t align; /* segment alignment in bytes */
    struct npu_image_task *tasks;
    uint32_t n_tasks;
    struct npu_reloc *relocs; /* qword = index into qwords */
    uint32_t n_relocs, cap_relocs;
};

/* Places every task of a finished stream (no open task, no error) in a new image at iova.
 * align: 0 for the default 64, else a power of two >= 16; iova must be a multiple of it.
 * Fails when the image would cross 4 GiB (all NPU addresses are 32-bit, facts 1.1). */
enum npu_status npu_stream_layout(const struct npu_stream *s, uint32_t iova, uint32_t align,
                                  struct npu_regcmd_image *img);
void npu_image_fini(struct npu_regcmd_image *img);
/* Chains tasks first .. first+count-1 (count >= 1; the last one keeps the zero tail).
 * cores: 1..3, written to PC_REGISTER_AMOUNTS bits 17:16 as cores - 1 (errata S3). */
enum npu_status npu_image_chain(struct npu_regcmd_image *img, uint32_t first, uint32_t count,
                                unsigned cores);
/* Writes every relocated address: buffer_iova[id] + offset, or img->iova + offset for the
 * chain. Errors: unknown buffer id, an address past 4 GiB, an address not 16-byte aligned in
 * a register that keeps only bits 31:4. Setting img->iova first and calling this again
 * re-bases the chain. */
enum npu_status npu_image_relocate(struct npu_regcmd_image *img, const uint32_t *buffer_iova,
                                   uint32_t n_buffers);
/* IOVA of task t's segment. */
static inline uint32_t
npu_image_task_iova(const struct npu_regcmd_image *img, uint32_t t)
{
    return img->iova + img->tasks[t].start * 8u;
}
/* Vendor descriptors for all tasks: regcmd_addr, regcfg_amount (body only), enable_mask,
 * int_mask, int_clear 0x1ffff, op_idx; flags, int_status and regcfg_offset 0. */
enum npu_status npu_image_fill_rknpu_tasks(const struct npu_regcmd_image *img,
                                           struct npu_rknpu_task *out, uint32_t n_out);
/* Rocket tasks: regcmd IOVA and regcmd_count = body + tail. */
enum npu_status npu_image_fill_rocket_tasks(const struct npu_regcmd_image *img,
                                            struct npu_rocket_task *out, uint32_t n_out);

/* What a segment's tail says. */
struct npu_tail {
    bool well_formed;     /* tail-0 PC_BASE_ADDRESS write or zero qword, tail-1 AMOUNTS write,
                             tail-2 marker, tail-3 op_en */
    bool has_next;        /* tail-0 carries a non-zero next address */
    uint32_t next_addr;   /* PC_BASE_ADDRESS value */
    uint32_t next_amount; /* PC_DATA_AMOUNT (bits 15:0) */
    unsigned cores;       /* CORE_NUM + 1 (bits 17:16) */
    uint32_t enable_mask; /* op_en value */
};

/* Reads the last four qwords of a segment of n qwords (n >= 4). */
void npu_tail_parse(const uint64_t *seg, size_t n, struct npu_tail *out);

#ifdef __cplusplus
}
#endif

#endif /* NPU_TASK_H */
