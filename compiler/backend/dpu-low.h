/* SPDX-License-Identifier: MIT */
/*
 * dpu-low.h: helpers the DPU lowerings share (dpu-low.c: views of values, NPU inputs,
 * constants laid out for the DPU) and the per-family lowering entry points dpu-ops.c
 * dispatches to. Every lowering works in two modes through struct rkd: dry (cx == NULL:
 * validate and price, for supports() and cost()) and real (insert the rk.Dpu node).
 */
#ifndef DPU_LOW_H
#define DPU_LOW_H

#include <stdio.h>

#include "npu-be.h"
#include "npu-dpu-ops.h"

/* How a value sits in NPU memory: NC1HWC2 over view (C, H, W), logical order. */
struct vmap {
    uint32_t view[3];
    uint32_t order; /* NPU_VIEW_NCHW / NPU_VIEW_HWC */
};

/* The reason a lowering refuses, for supports() / npuc --explain. */
struct why {
    char *s;
    size_t len;
};

static inline enum npu_status why_set(struct why *w, const char *fmt, ...) NPU_PRINTF(2, 3);
static inline enum npu_status
why_set(struct why *w, const char *fmt, ...)
{
    if (w && w->s && w->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->s, w->len, fmt, ap);
        va_end(ap);
    }
    return NPU_ERR_UNSUPPORTED;
}

/* The NPU value standing for v (its own rk value, or the lowering's NPU copy), or NULL. */
struct npu_value *dl_npu_value(const struct rkd *b, const struct npu_value *v);
/* The view v has on the NPU (or will have: canonical, with rk.ToNpu's order). */
bool dl_view(const struct rkd *b, const struct npu_value *v, struct vmap *vm);
/* Logical element index -> (c, y, x) under a view. */
void dl_cyx(const struct vmap *vm, int64_t idx, uint32_t out[3]);
/* (c, y, x) of element idx + 1 from that of element idx: what dl_cyx gives, without its
 * divisions, for walks over every element in order (constant layouts, copy classification). */
static inline void
dl_cyx_next(const struct vmap *vm, uint32_t o[3])
{
    if (vm->order == NPU_VIEW_NCHW) {
        if (++o[2] == vm->view[2]) {
            o[2] = 0;
            if (++o[1] == vm->view[1]) {
                o[1] = 0;
                o[0]++;
            }
        }
    } else if (++o[0] == vm->view[0]) {
        o[0] = 0;
        if (++o[2] == vm->view[2]) {
            o[2] = 0;
            o[1]++;
        }
    }
}
/* Adds v as an input read in view vm (inserting rk.ToNpu for host values) and returns the
 * packed fp16 map; false (reason in w) when v cannot be read that way. */
/* The view a DPU-lowered producer will give v (dry runs; false when none is predicted). */
bool dl_predicts(const struct npu_value *v, int depth, struct vmap *vm);
/* Inside an npu_backend_dry_scope: the remembered answer of npu_dpu_supports for (n,
 * no_center) into *ok and why (why_len bytes, may be NULL); false when there is none. */
bool dl_supports_memo(const struct npu_node *n, bool no_center, bool *ok, char *why,
                      size_t why_len);
/* Inside a scope: remembers that answer (why: its reason, or NULL / ""). */
void dl_supports_remember(const struct npu_node *n, bool no_center, bool ok, const char *why);
bool dl_input(struct rkd *b, struct npu_value *v, const struct vmap *vm, struct npu_dpu_map *m,
              struct why *w);
/* Input v lowered onto the NPU (b->cx set) in view vm as dtype dt, as the value whose bytes
 * are read (an alias's source); NULL (reason in w) when the NPU does not hold it that way.
 * `as` names the dtype in the reason ("" or " as int8"). */
struct npu_value *dl_lower_input(struct rkd *b, struct npu_value *v, const struct vmap *vm,
                                 enum npu_dtype dt, const char *as, struct why *w);
/* A DPU pass copying map src to map dst (the same element count). */
void dl_copy(struct rkd *b, const struct npu_dpu_map *src, const struct npu_dpu_map *dst);
/* rk.Dpu alias kind of v's producer (0 none, 1 same bytes, 2 attention heads). */
int dl_alias_kind(const struct npu_value *v);
/* The value whose bytes an alias (kind 1) chain shows. */
struct npu_value *dl_source(struct npu_value *v);
/* Whether output `out` of the node being lowered may be a view without a copy: not a graph
 * output, every reader an NPU node of the DPU lowerings (of op `only` unless NPU_OP_NONE) that
 * accepts it. Other readers would see unwritten memory. Lowering, and cost() dry runs
 * (b->g set, readers not on the CPU counted as NPU ones); false in supports() dry runs. */
bool dl_alias_ok(const struct rkd *b, const struct npu_value *out, enum npu_op only);
/* A packed fp16 map over a view at ref. */
struct npu_dpu_map dl_map(struct npu_dpu_ref ref, const struct vmap *vm);
/* The values of constant c broadcast to `dims` (row-major, float); NULL if not possible. */
float *dl_bcast_const(const struct npu_value *c, int ndim, const int64_t *dims);
/* Classifies a broadcast constant under a view: 0 scalar, 1 per channel (values in chv[C]),
 * 2 anything else. */
int dl_const_kind(const float *full, int64_t n, const struct vmap *vm, float *chv);
/* A constant fp32 per-channel operand array (C entries, padded to 16) in NPU_BUF_WEIGHTS. */
struct npu_dpu_ref dl_chan_const(struct rkd *b, const char *name, const float *v, uint32_t c);
/* A constant fp16 map of view vm holding full[] (logical order) in NPU_BUF_WEIGHTS. */
struct npu_dpu_map dl_map_const(struct rkd *b, const char *name, const float *full, int64_t n,
                                const struct vmap *vm);
/* Finishes a lowering whose result is output idx of b->orig, in view vm (f16). */
enum npu_status dl_finish(struct rkd *b, int idx, const struct vmap *vm);

/* Applies LUT function fn to map `in` into `out` (one pass, BN scales into the table). */
void dl_lut_pass(struct rkd *b, enum npu_dpu_fn fn, const struct npu_dpu_map *in,
                 const struct npu_dpu_map *out);

/* Whether v is a constant with its data at hand. */
bool dl_is_const(const struct npu_value *v);

/* Lowers n with b (dry or real): the refusals every DPU handler shares, then the lowering
 * of n's family (dpu-ops.c). The dry runs that predict a producer's view use it too. */
enum npu_status dl_lower_any(struct rkd *b, struct npu_node *n, struct why *w);

/* Lowerings by family (n = b->orig). */
enum npu_status dl_lower_eltwise(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_unary(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_pool(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_move(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_layernorm(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_rmsnorm(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_softmax(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_attention(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_qdq(struct rkd *b, struct npu_node *n, struct why *w);
enum npu_status dl_lower_state_write(struct rkd *b, struct npu_node *n, struct why *w);
/* Whether n (the Transpose or the Reshape / Flatten of a head merge) will be written
 * directly by the attention before it, so that n has no task of its own: the test
 * dl_lower_attention makes, predicted for cost() (readers not yet placed). */
bool dl_attn_merged(const struct npu_graph *g, const struct npu_node *n,
                    const struct npu_backend_options *o);

/* Whether npu_dpu_center_streams would centre the input of layer norm ln (dpu-center.c):
 * dry runs price such a layer norm as centred. Reads the graph's use lists. */
bool dl_ln_centrable(const struct npu_node *ln);

/* Composite building blocks on maps (dpu-norm.c), used by the composites. */
/* Per-pixel max over the channels of x (c <= 8192) into an 8-lane map m8 (all lanes equal):
 * halving EW MAX passes over surfaces, then lane permutations (1x1 convs with a fused MAX).
 * Padding lanes of the last surface are masked to -inf first. */
void dl_chan_max(struct rkd *b, const struct npu_dpu_map *x, const struct npu_dpu_map *m8);
/* The same with the PPU (facts §5.4): x (c a multiple of 8, one pixel per row) has its
 * surfaces pooled as the rows of an image in stages of windows up to 16, then a clamp to
 * finite values and the lane rotations. scratch: 2 x ceil-stage + 3 x 8-lane maps of
 * x->h pixels. false (nothing emitted) when x does not qualify or scratch is too small. */
bool dl_chan_max_ppu(struct rkd *b, const struct npu_dpu_map *x, const struct npu_dpu_map *m8,
                     struct npu_dpu_ref scratch, uint64_t scratch_bytes);
/* Ones-kernel sum over x's channels times `scale`, broadcast to `kout` output channels
 * (kout = 8 gives an 8-lane map) written to out (fp16) with the given DPU stages applied
 * after the convolution. */
void dl_chan_sum(struct rkd *b, const struct npu_dpu_map *x, float scale,
                 const struct npu_dpu_map *out, const struct npu_dpu_stages *st);
/* Broadcast of lane 0 of an 8-lane map s8 (times w[k] per output channel k, or `scale`
 * when w is NULL) to out's channels, with stages st (e.g. an EW operand). */
void dl_bcast(struct rkd *b, const struct npu_dpu_map *s8, const float *w, float scale,
              const struct npu_dpu_map *out, const struct npu_dpu_stages *st);
/* Diagonal 1x1 convolution of x (c channels, fp16) into out (c channels, fp16 or fp32): diag
 * (an fp16 weight) times x, then the given DPU stages; a per-element pass whose result may
 * be fp32 (a flying pass writes fp16 only), e.g. a run-time per-channel operand for a later
 * task's BS / BN stage. */
void dl_ident_conv(struct rkd *b, const struct npu_dpu_map *x, float diag,
                   const struct npu_dpu_map *out, const struct npu_dpu_stages *st);
/* 1/sqrt of an 8-lane map v (fp16, v >= 2^-20) into r: band tables and one Newton step. */
void dl_rsqrt(struct rkd *b, const struct npu_dpu_map *v, const struct npu_dpu_map *r);

#endif /* DPU_LOW_H */
