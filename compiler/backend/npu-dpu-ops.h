/* SPDX-License-Identifier: MIT */
/*
 * npu-dpu-ops.h: the DPU lowerings' part of the NPU back end (docs/npu-dpu-ops.md):
 *   - the builder of rk.Dpu, the lowered op that holds a list of DPU / PPU /
 *     small-convolution tasks with every register-relevant parameter in its attributes
 *     (dpu-build.c; the op's format, inference and emission are codegen's,
 *     codegen/npu-rk.h and codegen/dpu-rk.c, and so are the LUT tables,
 *     codegen/npu-dpu.h and codegen/dpu-lut.c);
 *   - the op handlers (supports / cost / lower) of the elementwise, activation, pooling,
 *     data-movement and composite ops (dpu-ops.c, dispatching to dpu-eltwise.c,
 *     dpu-unary.c, dpu-move.c, dpu-pool.c, dpu-norm.c, dpu-attn.c), whose rows are
 *     in the handler table (npu-handlers.c).
 */
#ifndef NPU_DPU_OPS_H
#define NPU_DPU_OPS_H

#include "npu-rk.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_lower_ctx;
struct npu_node;
struct npu_value;
struct npu_graph;

/*
 * The builder of one rk.Dpu node. With cx == NULL it is a dry run: tasks are emitted into a
 * private stream only to validate them and to price them (cost()), nothing is added to a
 * graph.
 */
struct rkd {
    struct npu_lower_ctx *cx;
    struct npu_node *orig; /* the node being lowered (insertion point, names) */
    struct npu_value *in[RKD_MAX_IN];
    uint64_t in_hash[RKD_MAX_IN]; /* constants: content hash (0 for activations) */
    uint64_t in_size[RKD_MAX_IN];
    int nin;
    uint64_t out_bytes[RKD_MAX_OUT]; /* temps: outputs 1.. */
    int nout;                        /* outputs including the result (output 0) */
    struct rkd_task *tasks;
    int ntasks, cap;
    struct npu_stream dry;
    struct npu_dpu_cost cost;
    bool lut_used_last; /* the last task used the LUT (or unknown at the start) */
    uint32_t lut_resident;
    int scratch; /* output index of the 32-byte LUT scratch, -1 none */
    enum npu_status err;
    /* the result's view (struct vmap of dpu-low.h) once finished, for dry predictions */
    uint32_t result_view[4];
    bool have_result;
    int depth;      /* dry predictions of producers' views */
    bool nonneg;    /* the result is known to be >= 0 (rk.Dpu attribute "nonneg") */
    bool no_center; /* dry runs: the back end will not centre residual streams */
    bool finished;  /* a result was declared (rkd_finish / rkd_alias) */
    /* cost() dry runs only: the graph and options, so that dl_alias_ok() predicts whether
     * the lowering will make a view an alias (no task) rather than a copy */
    const struct npu_graph *g;
    const struct npu_backend_options *o;
};

void rkd_init(struct rkd *b, struct npu_lower_ctx *cx, struct npu_node *orig);
void rkd_fini(struct rkd *b);
/* Adds an NPU value as an input; returns its symbolic ref (offset 0). */
struct npu_dpu_ref rkd_input(struct rkd *b, struct npu_value *v);
/* Adds a constant (copied) as an input; dry runs only count it. */
struct npu_dpu_ref rkd_const(struct rkd *b, const char *suffix, const void *data, uint64_t bytes);
/* A scratch output of `bytes` (rounded up to 64); returns its ref. */
struct npu_dpu_ref rkd_temp(struct rkd *b, uint64_t bytes);
/* The result (output 0) ref. */
static inline struct npu_dpu_ref
rkd_result(void)
{
    struct npu_dpu_ref r = {RKD_OUT(0), 0};
    return r;
}
/* Appends tasks (validated by running the emitter on the dry stream). */
void rkd_pass(struct rkd *b, const struct npu_dpu_pass *p);
void rkd_conv(struct rkd *b, const struct npu_dpu_conv *c);
void rkd_pool(struct rkd *b, const struct npu_dpu_pool *p);
void rkd_tp(struct rkd *b, const struct npu_dpu_tp *t);
/* Makes table `id` resident (upload unless it already is, guarded per the LUT rule). */
void rkd_lut(struct rkd *b, uint32_t id);
/*
 * Creates the rk.Dpu node (before b->orig) with output 0 of dtype dt, logical dims and the
 * given NC1HWC2 view (order: NPU_VIEW_*), declares it as output `idx` of b->orig and returns
 * NPU_OK. Dry builders return NPU_OK without doing anything.
 */
enum npu_status rkd_finish(struct rkd *b, int idx, enum npu_dtype dt, int ndim, const int64_t *dims,
                           const uint32_t view[3], uint32_t order);
/* Output idx of b->orig as a view of src's bytes (no task): kind 1 = the same bytes under
 * another (view, order); kind 2 = the heads of attention, [rows, heads x D] read as
 * [heads, rows, D] (heads = {rows, heads, D}; only the DPU attention lowering reads it). */
enum npu_status rkd_alias(struct rkd *b, int idx, struct npu_value *src, int kind,
                          const int64_t *heads, enum npu_dtype dt, int ndim, const int64_t *dims,
                          const uint32_t view[3], uint32_t order);
/* Modeled seconds of the tasks so far (timing model v1). */
static inline double
rkd_seconds(const struct rkd *b)
{
    return b->cost.s;
}

/* Layer-norm centring folded into the producers of residual streams (dpu-center.c): the
 * stream's addends (products, convolutions, constants) are centred over the normalised axis
 * and its layer norms marked "npu_centered". Run before lowering. */
enum npu_status npu_dpu_center_streams(struct npu_graph *g);

/* A MatMul on the NPU whose constant B [K, N] is to be read row-centred (each row minus its
 * mean over the N columns) carries this int attribute: npu_dpu_center_streams leaves such a
 * B as it is (it lies in the model file's mapping, where a write copies the page) and the
 * MatMul packer subtracts the means while it converts to fp16 (conv-weights.c), the same
 * arithmetic as centring first. npu_dpu_centre_pending writes the centred floats in place
 * and drops the mark, for any other reader of B (a lowering that does not pack that way,
 * the CPU after a refusal, the beta fold of dpu-norm.c); nothing when p has no mark.
 * npu_dpu_row_means: the means of `rows` rows of d floats (possibly unaligned), each summed
 * in double in column order and divided by d, as the centring computes them. */
#define NPU_CENTRE_ROWS_ATTR "npu_centre_rows"
enum npu_status npu_dpu_centre_pending(struct npu_graph *g, struct npu_node *p);
void npu_dpu_row_means(const float *b, int64_t rows, int64_t d, double *m);

/* ------------------------------------------------------------- handlers */

struct npu_backend_options;

/* One supports / cost / lower triple serves every op of dpu-ops.c; it dispatches on n->op.
 */
bool npu_dpu_supports(const struct npu_graph *g, const struct npu_node *n,
                      const struct npu_backend_options *o, char *why, size_t why_len);
double npu_dpu_cost(const struct npu_graph *g, const struct npu_node *n,
                    const struct npu_backend_options *o);
enum npu_status npu_dpu_lower(struct npu_lower_ctx *cx, struct npu_node *n);

#ifdef __cplusplus
}
#endif

#endif /* NPU_DPU_OPS_H */
