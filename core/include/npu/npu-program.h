/* SPDX-License-Identifier: MIT */
/*
 * npu-program.h: a compiled model. This is the contract between the NPU back
 * end (lowering, tiling and codegen produce it), the artifact (.npub stores
 * exactly this, see docs/npub-format.md) and the runtime (executes it on a
 * device: sim, rknpu, rocket).
 *
 * A program is a list of steps run in order by one session:
 *   CPU      one IR op on host tensors through the CPU kernels (npu-cpu.h);
 *   NPU_JOB  one submit: a chain of hardware tasks (regcmd segments built with
 *            core/hw's npu_stream, relocations by buffer id + offset);
 *   CONVERT  a host <-> NPU copy with layout and dtype conversion
 *            (e.g. NCHW fp32 on the host <-> NC1HWC2 fp16 in NPU memory).
 *
 * NPU memory is addressed only through relocations, never absolute IOVAs:
 *   NPU_BUF_WEIGHTS  read-only, shared by every session of a model (packed
 *                    weights, biases, LUT tables, constant operands);
 *   NPU_BUF_ACT      per session: activations and NPU-side I/O tensors;
 *   NPU_BUF_STATE    per session, kept across runs and outside the activation
 *                    planner: state tensors such as an LLM's KV cache (graph
 *                    inputs a run may leave resident, see npu-program-exec.h);
 *   NPU_RELOC_REGCMD (core/hw) the job's own regcmd buffer (PC chain).
 * The runtime allocates one weights BO per model, and per session one
 * activation BO and one regcmd + task BO per job, then relocates the images
 * with npu_image_relocate().
 */
#ifndef NPU_PROGRAM_H
#define NPU_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npu/npu-common.h"
#include "npu/npu-ops.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum npu_buf_id { NPU_BUF_WEIGHTS = 0, NPU_BUF_ACT = 1, NPU_BUF_STATE = 2, NPU_BUF_COUNT };

/* How a tensor is laid out in memory. */
enum npu_layout {
    NPU_LAYOUT_NCHW = 0, /* row-major in the logical dims (host tensors) */
    NPU_LAYOUT_NC1HWC2,  /* facts §2.10: [C/C2][H][W][C2], 16-byte atoms */
    NPU_LAYOUT_SMALL_C,  /* facts §2.10 small-channel input: pixels of C (1-4) values */
};

/* Element (c, h, w) of an NPU view is logical (row-major) element
 *   NPU_VIEW_NCHW: (c * H + h) * W + w   (a [1, C, H, W] feature map)
 *   NPU_VIEW_HWC:  (h * W + w) * C + c   (a matrix [.., M, K]: H = M rows, W = 1, C = K)
 */
enum npu_view_order {
    NPU_VIEW_NCHW = 0,
    NPU_VIEW_HWC = 1,
};

enum npu_place {
    NPU_PLACE_HOST = 0, /* host memory: constant blob, or the session's host arena */
    NPU_PLACE_NPU,      /* NPU memory: buffer + offset */
};

struct npu_prog_tensor {
    const char *name;
    struct npu_tensor t; /* logical dtype and dims; t.data = host constant data or NULL */
    enum npu_place place;
    /* HOST, non-constant: byte offset in the session's host arena.
     * NPU: buffer (enum npu_buf_id) and byte offset inside it. */
    uint32_t buffer;
    uint64_t offset;
    uint64_t bytes; /* bytes occupied (layout padding included) */
    enum npu_layout layout;
    enum npu_dtype mem_dtype; /* element type in memory (fp16 for an fp32 tensor the NPU holds) */
    /* The 3-D view the NPU uses (C, H, W) for NC1HWC2 / SMALL_C tensors; how the
     * logical dims map onto it is recorded by the producer (docs/npu-backend.md). */
    uint32_t npu_c, npu_h, npu_w;
    /* How the logical row-major elements map onto the (C, H, W) view
     * (enum npu_view_order; added later, additive). */
    uint32_t npu_order;
    /* NPU element = host element + npu_offset in CONVERT steps: -128 where
     * uint8 host data is held as int8 on the NPU (Mesa's convention, facts
     * §5.2), else 0 (added later, additive). */
    int32_t npu_offset;
    int io_input;  /* >= 0: graph input index */
    int io_output; /* >= 0: graph output index */
};

enum npu_step_kind {
    NPU_STEP_CPU = 0,
    NPU_STEP_NPU_JOB,
    NPU_STEP_CONVERT,
};

struct npu_prog_step {
    enum npu_step_kind kind;
    /* CPU: the op, its attributes, tensor indices (-1 = absent optional input). */
    enum npu_op op;
    struct npu_attrs attrs;
    const int *in;
    int nin;
    const int *out;
    int nout;
    /* NPU_JOB: index into program->jobs. CONVERT: in[0] -> out[0]. */
    int job;
    const char *name; /* the IR node(s) this step came from, for messages and --explain */
};

/* One submit's worth of hardware tasks, position independent. */
struct npu_prog_task {
    uint32_t start;       /* first qword of the segment in regcmd[] */
    uint32_t n_body;      /* body qwords (regcfg_amount), tail excluded */
    uint32_t enable_mask; /* op_en value */
    uint32_t int_mask;    /* 0x300 ending in DPU, 0xC00 in PPU */
    /* The IR node this task computes part of (for per-op figures in npu-bench
     * and --explain); NULL = the job's step name. */
    const char *name;
};

struct npu_prog_reloc {
    uint32_t qword;  /* index into regcmd[] */
    uint32_t buffer; /* enum npu_buf_id, or NPU_RELOC_REGCMD (UINT32_MAX) */
    uint32_t offset; /* byte offset inside that buffer */
};

/*
 * A relocation whose address moves at run time (a write at a run-time position, such as
 * the new row of a KV cache): before each submit the runtime sets the register of
 * relocs[reloc] to
 *     IOVA(its buffer) + its offset + position * stride
 * where position is the value of graph input `input` (a host int32 / int64 tensor of one
 * element) for that run. Positions outside 0 .. limit - 1 are refused before anything is
 * submitted; the validator checks that offset + (limit - 1) * stride + extent stays inside
 * the buffer, extent being the bytes the register's access spans from its address.
 */
struct npu_prog_dynreloc {
    uint32_t reloc;  /* index into the job's relocs (a WEIGHTS / ACT / STATE relocation) */
    uint32_t input;  /* graph input index of the position */
    uint32_t stride; /* bytes per position, a multiple of 16 */
    uint32_t limit;  /* number of valid positions, >= 1 */
    uint32_t extent; /* bytes accessed from the address at any one position, >= 1 */
};

/* Tasks one job may hold: the PC's TASK_NUMBER field is 12 bits and the vendor driver's
 * max_submit_number is 4095 (facts §4.1, [TRM] pc_task_con, [DRV]). Codegen closes a job
 * before it would pass this; the validator refuses a job that does. */
#define NPU_PROG_MAX_JOB_TASKS 4095u

struct npu_prog_job {
    const uint64_t *regcmd; /* whole image (segments, tails chained, padding), addresses 0 */
    uint32_t n_qwords;
    const struct npu_prog_task *tasks;
    uint32_t n_tasks;
    const struct npu_prog_reloc *relocs;
    uint32_t n_relocs;
    uint32_t segment_align; /* bytes, power of two >= 16 */
    double modeled_s;       /* compile-time estimate, timing model v1 */
    /* Relocations patched per run (added later, additive; .npub format 3). */
    const struct npu_prog_dynreloc *dynrelocs;
    uint32_t n_dynrelocs;
};

struct npu_program {
    uint32_t version; /* NPU_PROGRAM_VERSION */
    const struct npu_prog_tensor *tensors;
    int n_tensors;
    const struct npu_prog_step *steps;
    int n_steps;
    const struct npu_prog_job *jobs;
    int n_jobs;
    const int *inputs; /* tensor indices of the graph inputs, in order */
    int n_inputs;
    const int *outputs;
    int n_outputs;
    const uint8_t *weights; /* contents of NPU_BUF_WEIGHTS */
    uint64_t weights_bytes;
    uint64_t act_bytes;   /* size of NPU_BUF_ACT per session */
    uint64_t host_bytes;  /* size of the host arena per session */
    const char *producer; /* "opennpu <version>" and the options that made it */
    uint64_t state_bytes; /* size of NPU_BUF_STATE per session (added later, additive) */
};

#define NPU_PROGRAM_VERSION 1

/* ---- programs ------------------------------------------------------------- */

/* An empty program whose memory comes from one arena (npu_program_alloc);
 * for codegen and for loaders that build programs. */
struct npu_program *npu_program_new(void);
/* Zeroed memory owned by the program, 64-byte aligned; NULL on OOM. */
void *npu_program_alloc(struct npu_program *p, size_t size);
/* The same for a buffer that is filled piece by piece while its source is given back (codegen's
 * weights with NPU_CODEGEN_RELEASE_CONSTS): above 1 MiB its pages are faulted in as they are
 * written, not all at once, so that source and copy are not both resident. */
void *npu_program_alloc_lazy(struct npu_program *p, size_t size);
char *npu_program_strdup(struct npu_program *p, const char *s);
/* Frees a program made by npu_program_new / npu_codegen (NULL allowed). */
void npu_program_free(struct npu_program *p);

/* Memory a graph and the programs made from it share: codegen hands a program the
 * graph's weight region (npu_graph_alloc_weights) instead of copying the constants out
 * of it when they already lie there at the program's offsets. An anonymous mapping,
 * reserved once (pages are committed as they are used) and unmapped when the last
 * holder puts it. */
struct npu_shared_mapping;
/* A new mapping of `reserve` bytes (zero pages, not committed), one reference; NULL if
 * the address space cannot be reserved. */
struct npu_shared_mapping *npu_shared_mapping_new(size_t reserve);
void *npu_shared_mapping_addr(const struct npu_shared_mapping *m);
size_t npu_shared_mapping_size(const struct npu_shared_mapping *m);
/* Commits [off, off + len) (faulted in by one call where the kernel can, else on first
 * touch). */
void npu_shared_mapping_commit(struct npu_shared_mapping *m, size_t off, size_t len);
void npu_shared_mapping_get(struct npu_shared_mapping *m);
/* Drops one reference; the last unmaps (NULL allowed). */
void npu_shared_mapping_put(struct npu_shared_mapping *m);
/* The program keeps a reference to m until npu_program_free (its weights point into it);
 * one mapping per program (NPU_ERR_INVALID for a second). */
enum npu_status npu_program_hold_mapping(struct npu_program *p, struct npu_shared_mapping *m);

/* Prints the program's steps, tensors and jobs (one line each) for humans. */
void npu_program_print(const struct npu_program *p, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PROGRAM_H */
