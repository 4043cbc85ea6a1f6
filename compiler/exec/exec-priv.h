/* SPDX-License-Identifier: MIT */
/*
 * exec-priv.h: the CPU graph executor's plan (compiler/exec). A plan is made
 * once per model: every value gets a slot (graph input, constant, or a range
 * of the session's activation arena), node outputs are packed into the arena
 * by lifetime so that dead tensors' memory is reused, and fused nodes get the
 * attribute lists their base kernels need. Sessions only hold memory.
 */
#ifndef NPU_EXEC_PRIV_H
#define NPU_EXEC_PRIV_H

#include "npu/npu-cpu.h"
#include "npu/npu-ir.h"

enum slot_kind { SLOT_INPUT, SLOT_CONST, SLOT_ARENA };

struct exec_slot {
    enum slot_kind kind;
    struct npu_tensor t; /* dtype/shape; data for SLOT_CONST */
    int64_t offset;      /* SLOT_ARENA: byte offset in the arena */
    int input;           /* SLOT_INPUT: graph input index */
    int view_of;         /* an in-place Concat's part: the whole's slot (else -1) */
    int64_t view_off;    /* ... and the part's byte offset in it */
};

/* How a step runs: a kernel call, possibly followed by an epilogue (fused
 * bias and activation), or the executor's decomposition of a fused op the
 * kernels lack. */
struct exec_step {
    struct npu_node *node;
    enum npu_op op;         /* kernel op for the main call */
    struct npu_attrs attrs; /* attributes without the npu_* fusion ones */
    int *in, nin;           /* slot per input, -1 = absent */
    int *out, nout;
    int bias;        /* slot of a fused bias to add, -1 = none */
    enum npu_op act; /* fused activation, NONE = none */
    struct npu_attrs act_attrs;
    struct npu_tensor act_lo, act_hi; /* Clip bounds as scalar tensors */
    bool decompose;                   /* fused op without a kernel: executor fallback */
    struct npu_cpu_prep *prep;        /* npu_cpu_prepare's work on the constants, or NULL */
    bool cat_in_place;                /* a Concat whose parts were written in place: no call */
    /* a 1x1 Conv and the depthwise Conv reading it as one step (npu_cpu_run_pw_dw): in =
     * X, W1, B1, W2, B2 (-1: absent), attrs the depthwise's, pw_attrs the 1x1's, prep the
     * 1x1's packed weights */
    bool pwdw;
    struct npu_attrs pw_attrs;
};

struct exec_plan {
    struct npu_graph *g; /* owned */
    struct exec_slot *slots;
    int nslots;
    struct exec_step *steps;
    int nsteps;
    int *input_slot, ninputs;
    int *output_slot, noutputs;
    int *output_copy;     /* arena offset to copy a CONST/INPUT output to, -1 = none */
    size_t arena_bytes;   /* peak activation memory */
    size_t scratch_bytes; /* for decompositions */
};

enum npu_status exec_plan_build(struct npu_graph *g, unsigned flags, struct exec_plan **out);
void exec_plan_free(struct exec_plan *p);

struct exec_run_stats {
    double cpu_s;
};

/* Runs the plan once. inputs[i] are the graph inputs (checked by the caller),
 * arena/scratch session memory. */
enum npu_status exec_run(const struct exec_plan *p, struct npu_cpu_ctx *ctx, void *arena,
                         void *scratch, const struct npu_tensor *inputs, double *cpu_s);

#endif /* NPU_EXEC_PRIV_H */
