/* SPDX-License-Identifier: MIT */
/*
 * npu-backend.h: the NPU back end of the compiler (docs/npu-backend.md).
 *
 * After the front-end passes (npu_compile), the back end
 *   1. partitions: every node gets device=npu or device=cpu (the cost
 *      partitioner; npu_partition_supported() marks every node a handler
 *      supports);
 *   2. lowers: each device=npu node is replaced by rk.* nodes (npu-ops.h)
 *      whose attributes fix their hardware tasks, with rk.ToNpu / rk.ToHost
 *      at the host <-> NPU boundaries (npu_lower_graph);
 *   3. plans memory and generates code: NPU values get offsets in
 *      NPU_BUF_ACT, constants read by the NPU go to NPU_BUF_WEIGHTS,
 *      consecutive rk.* nodes become one NPU job (one submit), other nodes
 *      CPU steps, rk.ToNpu / rk.ToHost CONVERT steps (npu_codegen ->
 *      struct npu_program, npu-program.h).
 *
 * The lowered graph prints and parses with the IR text form (npu-ir.h);
 * compiling the parsed text gives the same register bytes (route b).
 *
 * Per-op behaviour comes from one table of handlers (struct
 * npu_op_handler): supports / cost / lower for the source ops, all in one
 * table file (compiler/backend/npu-handlers.c): the conv/matmul rows and the
 * DPU lowerings' rows. The rk.* ops' inference and emitters are codegen's
 * (compiler/codegen/npu-rk.h).
 */
#ifndef NPU_BACKEND_H
#define NPU_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "npu/npu-ir.h"
#include "npu/npu-program.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_lower_ctx; /* lowering state (compiler/backend/npu-be.h) */
struct npu_cg;        /* codegen state (compiler/codegen/npu-rk.h) */

/* Options of the back end. Zero-initialised = defaults. */
struct npu_backend_options {
    /* Register-stream style of conv/matmul tasks: 0 = RKNN's (the vendor
     * order, 108-qword single-core tasks, NOTES S9), 1 = MTX's Appendix A.1
     * matmul (reproduces the mtx-* golden streams; matmuls only). */
    int mtx_style;
    /* Channel-block accumulation keeps fp32 partial sums (0, default) or
     * fp16 ones (1: less DMA, fp16 rounding per block). */
    int fp16_partials;
    /* Tiling choice: 0 = the plan with the least modeled time (timing model
     * v1), 1 = RKNN's single-core rule first when it applies (NOTES S14). */
    int rknn_tiling;
    /* Cap on tasks per conv/matmul (0 = 4095, the TASK_NUMBER field). */
    unsigned max_tasks;
    /* Do not fuse activations into conv/matmul tasks (split them out). */
    bool no_act_fusion;
    /* Do not fuse a following residual Add into a matmul's DPU pass. */
    bool no_ew_fusion;
    /* Do not fold layer-norm centring into the producers of residual streams. */
    bool no_center_fold;
    /* Tests and experiments: restrict conv/matmul tiling to output rows per
     * tile, kernels per tile, input channels per block (0 = free) and the
     * loop order (0 free, 1 rows outside kernels, 2 kernels outside rows). */
    uint32_t force_rows, force_kernels, force_channels;
    int force_order;
    /* Register-pattern profile (enum npu_hw_profile, docs/evidence.md): AUTO
     * resolves by npu_hw_profile_resolve(); FAST is the program with every
     * pattern the back end knows; VERIFIED keeps only tasks whose every
     * register write the evidence ledger covers at level O or better. */
    int hw_profile;
    /* Set by the driver under VERIFIED (npu_build), not by callers: source
     * nodes whose lowering wrote a pattern below level O in an earlier
     * compile of the same graph. supports() refuses them, naming the pattern,
     * so the partition keeps them on the CPU. */
    const struct npu_hw_refusal *hw_refused;
    int n_hw_refused;
    /* Compile for the runtime's layer split (npu_prog_session_split_layers; the LLM
     * decode step with --cores): NPU activations keep their space for their whole job
     * (first to last task of the jobs they live in) instead of being reused after
     * their last reader, and a sum of two products' results is not folded into the
     * later product's DPU pass. Both would make tasks that do not share data depend
     * on each other, which keeps them off the other cores; the cost is memory. */
    bool layer_split;
};

/* Register-pattern profiles (npuc/npu-run/npu-bench --hw-profile, $NPU_HW_PROFILE). */
enum npu_hw_profile {
    NPU_HW_PROFILE_AUTO = 0, /* $NPU_HW_PROFILE, else VERIFIED on a real NPU, FAST otherwise */
    NPU_HW_PROFILE_FAST,
    NPU_HW_PROFILE_VERIFIED,
};
#define NPU_HW_PROFILE_ENV "NPU_HW_PROFILE"

/* A node the verified profile keeps off the NPU and the pattern that decided it. */
struct npu_hw_refusal {
    const char *node;    /* source node name (the name its tasks carry); "*" = every node */
    const char *pattern; /* the ledger entry covering the write ("DPU.LUT_INFO.T"), or
                          * "none" when no entry covers it */
    const char *reg;     /* "DPU.LUT_INFO" */
    uint32_t value;      /* the value written */
    int level;           /* enum npu_evidence_level of the write */
};

/* "auto", "fast", "verified". */
const char *npu_hw_profile_name(int profile);
/* Parses "fast" or "verified" (or "auto"); NPU_ERR_INVALID (nothing logged) otherwise. */
enum npu_status npu_hw_profile_parse(const char *s, int *out);
/* The profile a compile uses: p when not AUTO, else $NPU_HW_PROFILE when set
 * (a bad value is logged and ignored), else VERIFIED when on_device (the
 * program runs on rknpu or rocket: until a board's bring-up report upgrades
 * patterns, only ledger-backed ones go to silicon) and FAST otherwise. */
int npu_hw_profile_resolve(int p, bool on_device);

/* ---- the handler table (contract 3, docs/npu-backend-contracts.md) ----------- */

/* One row per source op (ONNX / npu.*) the NPU can run. The rk.* ops the
 * lowering produces are codegen's (inference and emitters, not in this table). */
struct npu_op_handler {
    enum npu_op op;
    /* Whether the NPU can run node n as it is (dtypes, shapes, attributes).
     * On false, writes a one-line reason to why (may be NULL). */
    bool (*supports)(const struct npu_graph *g, const struct npu_node *n,
                     const struct npu_backend_options *o, char *why, size_t why_len);
    /* Modeled NPU seconds (timing model v1) of n, including the layout
     * conversions it needs when its neighbours stay on the host; < 0 when
     * unknown. */
    double (*cost)(const struct npu_graph *g, const struct npu_node *n,
                   const struct npu_backend_options *o);
    /* Replaces n by rk.* nodes (npu-be.h helpers). */
    enum npu_status (*lower)(struct npu_lower_ctx *cx, struct npu_node *n);
};

/* The handler of op, or NULL. */
const struct npu_op_handler *npu_op_handler(enum npu_op op);
/* Rows of the table (for npuc --explain and tests). */
const struct npu_op_handler *npu_op_handlers(size_t *count);

/* Output inference of rk.* nodes (npu_infer_node calls it through the IR's hook). */
enum npu_status npu_rk_infer_node(struct npu_graph *g, struct npu_node *n);

/* Registers the back end's rk.* inference with the IR (npu_ir_register_rk_infer).
 * Idempotent; the back end's entry points call it, and so does the library's
 * constructor, so graphs holding rk.* nodes (IR text, .npub) infer anywhere. */
void npu_backend_register(void);

/* supports() of the node's handler; false with "no NPU handler" when none. */
bool npu_backend_supports(const struct npu_graph *g, const struct npu_node *n,
                          const struct npu_backend_options *o, char *why, size_t why_len);
/* cost() of the node's handler, or -1. */
double npu_backend_cost(const struct npu_graph *g, const struct npu_node *n,
                        const struct npu_backend_options *o);
/* Opens (open = true) or closes a scope in which the dry lowerings of supports() and cost()
 * share their predictions of producers' views, and the DPU handlers' supports() keep their
 * answers (per thread, nestable): the caller must not change the graph inside it. The
 * partitioner opens one over its whole pricing loop, where nodes' supports() and cost() would
 * otherwise dry-lower the same producers again and again. The answers are the same. */
void npu_backend_dry_scope(bool open);
/* Inside a scope: the pricing moves on to another node. Predictions cut at the depth limit
 * (each valid at its own depth only, seldom asked again by another node) are forgotten;
 * the rest stays. The answers are the same either way (a smaller table, cheaper lookups). */
void npu_backend_dry_scope_next(void);
/* Hardware tasks a lowered rk.* compute node appends to its job, in order (rk.Conv: its
 * tiles plus the LUT prologue when it applies a table; rk.Dpu: the tasks its chunked task
 * list emits, where a convolution record split into row tiles counts each; 0 for a view);
 * -1 for other ops or malformed attributes. Codegen checks every node against it. For
 * tools that attribute a job's per-task figures to the nodes that emitted them. */
int npu_backend_node_tasks(const struct npu_node *n);

/* ---- passes ---------------------------------------------------------------- */

/* The back end's graph passes, in the order the back-end pipeline runs them
 * (npu_backend_compile, compiler/driver/npu-be-pipeline.c, one list):
 *   partition         npu_partition (by cost, compiler/partition) or
 *                     npu_partition_supported
 *   center_streams    npu_be_pass_center_streams (unless no_center_fold)
 *   lower             npu_be_pass_lower
 *   prune_boundaries  npu_be_pass_prune_boundaries
 *   widen_outputs     npu_be_pass_widen_outputs
 *   fold_conversions  npu_be_pass_fold_conversions
 * then npu_codegen makes the program. */

/* device=npu for every node a handler supports, device=cpu for the rest.
 * Nodes that already have a device keep it. */
enum npu_status npu_partition_supported(struct npu_graph *g, const struct npu_backend_options *o);
/* Folds layer-norm centring into the producers of residual streams. */
enum npu_status npu_be_pass_center_streams(struct npu_graph *g,
                                           const struct npu_backend_options *o);
/* Lowers every device=npu node through its handler. Nodes whose lowering
 * refuses them (a reason is logged at info level) stay on the CPU. The graph
 * stays verifiable. */
enum npu_status npu_be_pass_lower(struct npu_graph *g, const struct npu_backend_options *o);
/* Removes boundary nodes nobody reads (an rk.ToHost whose result only NPU
 * nodes needed, an rk.ToNpu made for a refused lowering). */
enum npu_status npu_be_pass_prune_boundaries(struct npu_graph *g);
/* Convs whose result only goes to the host as f32 write f32 directly. */
enum npu_status npu_be_pass_widen_outputs(struct npu_graph *g);
/* A per-tensor int8 QuantizeLinear on the CPU whose result only rk.ToNpu reads, a
 * DequantizeLinear on the CPU of an rk.ToHost's int8 result, and a Reshape on the CPU whose
 * result only rk.ToNpu reads, folded into those conversions (the runtime's conversion
 * quantises / dequantises in its dtype pass and moves elements in logical order;
 * fold-conversions.c). */
enum npu_status npu_be_pass_fold_conversions(struct npu_graph *g);

/* The pipeline's passes with npu_partition_supported as the partition and no
 * codegen (tests, tools): device=any nodes go to the NPU when supported. */
enum npu_status npu_lower_graph(struct npu_graph *g, const struct npu_backend_options *o);

/* Plans memory and generates the program of a lowered graph. The graph is
 * not changed. *out is freed with npu_program_free(). */
enum npu_status npu_codegen(const struct npu_graph *g, const struct npu_backend_options *o,
                            struct npu_program **out);
/* npu_codegen_ex flags. RELEASE_CONSTS: the caller frees g right after (its NPU constants
 * are not read again): each big NPU constant's memory is given back once copied into the
 * program's weights (npu_graph_release_data), which are faulted in as they are written, so
 * that the lowered weights and the program's copy are never both resident. */
#define NPU_CODEGEN_RELEASE_CONSTS 1u
enum npu_status npu_codegen_ex(const struct npu_graph *g, const struct npu_backend_options *o,
                               unsigned flags, struct npu_program **out);

/* ---- codegen route (c): template replay ------------------------------------ */

/* A job's regcmd image as "golden-regcmd v1" text (core/hw npu-golden.h):
 * buffers "weights", "act" and "regcmd" and one "@buffer+0xOFF" relocation
 * per address qword. *text is malloc'd (caller frees). */
enum npu_status npu_job_to_golden(const struct npu_prog_job *j, const char *name, char **text,
                                  size_t *len);
/* Reads such a text back into a job whose memory comes from program p's
 * arena; relocated with the same buffers it is byte-identical to the job the
 * text came from. */
enum npu_status npu_job_from_golden(const char *text, size_t len, struct npu_program *p,
                                    struct npu_prog_job *out);

#ifdef __cplusplus
}
#endif

#endif /* NPU_BACKEND_H */
