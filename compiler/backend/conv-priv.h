/* SPDX-License-Identifier: MIT */
/*
 * conv-priv.h: what the files of the conv/matmul lowering (conv-*.c) share: the
 * description of a source MatMul / Gemm / Conv read from its node (struct conv_src), a
 * tiling (struct plan), and the functions one of those files provides to the others.
 *
 * The files, one job each: conv-supports.c reads the node (and refuses what the NPU
 * cannot run) for supports() and cost(); conv-quant.c holds the integer pipeline's zero
 * points, scales, int32 bias and requantisation; conv-tiling.c is the CBUF tiler;
 * conv-weights.c packs the weights and the bias array; conv-fuse.c decides what the conv's
 * DPU stages take over from the ops after it (LUT activations, a residual Add);
 * conv-lower.c builds the rk.Conv node; conv-call.c emits conv tasks for the composites.
 */
#ifndef CONV_PRIV_H
#define CONV_PRIV_H

#include "npu-be-priv.h"

#define MAX_WIDTH 2047u /* CNA DATAIN_WIDTH / DATAOUT_WIDTH [10:0] */

enum src_kind { SRC_MATMUL, SRC_GEMM, SRC_CONV };

/* A source node read into one convolution description. */
struct conv_src {
    enum src_kind kind;
    bool integer; /* int8 pipeline: MatMulInteger / ConvInteger (-> int32),
                     QLinearMatMul / QLinearConv (-> int8 / uint8) */
    bool qlinear;
    int xi, wi, xzi, wzi; /* input indices of x, w and their zero points */
    int32_t x_zp;         /* input zero point (on the NPU's int8 scale) */
    bool x_u8;            /* uint8 input: the NPU holds x - 128 (facts §5.2, Mesa) */
    bool w_u8;
    /* QLinear requantisation: y = round(acc * sx * sw[k] / sy) + zy */
    float sx, sy;
    const struct npu_value *ws; /* weight scale(s) */
    int32_t y_zp;
    enum npu_dtype y_dt;          /* int8 / uint8 host result */
    const struct npu_value *qb;   /* QLinearConv B (int32) */
    const struct npu_value *w_zp; /* weight zero point(s) or NULL */
    /* kernel == stride, no padding: run as space-to-depth on the host (the
     * input is a host value) + 1x1 conv over C*kh*kw channels (CONV_CON3
     * holds strides up to 7 only; ViT patch embeddings use 14..32) */
    bool patchify;
    uint32_t pk[2]; /* the original kernel (= stride) */
    /* ConvTranspose with stride 1: the conv of x with the kernels flipped and
     * in/out swapped, padded by k - 1 - pad (output size (H-1) + k - pads) */
    bool transposed;
    struct npu_value *x; /* activation input */
    uint32_t in_view[3]; /* how x is viewed (C, H, W) */
    uint32_t out_view[3];
    int out_ndim;
    int64_t out_dims[NPU_MAX_DIMS];
    struct rk_conv_geom g;
    uint32_t pads[4];
    uint32_t groups; /* grouped conv run per group (1 = not) */
    /* batch and 1-D convs (docs/npu-backend.md "Batches and 1-D convs"): N images are N
     * channel blocks of one map, x viewed as (N * C, H, W) (NCHW order: image n's channel
     * c is map channel n * C + c), the conv as one of N * group groups whose weights
     * repeat per image; a 1-D conv is a 2-D one with H = 1 */
    uint32_t images;       /* N (1 = one image) */
    bool one_d;            /* [N, C, L] input */
    uint32_t k_src, c_src; /* kernels, channels per group of the source weights */
    /* dilation run as a dense kernel with zero taps between the source's (the ATROUS
     * fields are unverified, facts §6.14): source taps skh x skw, dilation dy x dx */
    uint32_t skh, skw, dly, dlx;
    bool block_diag;           /* grouped conv expanded to dense */
    const struct npu_value *w; /* weights constant */
    bool w_trans;              /* matmul/gemm: B is [K][N] (false: [N][K], Gemm transB) */
    /* B's rows read centred (each minus its mean over its N columns, NPU_CENTRE_ROWS_ATTR):
     * only where conv_pack_direct holds and w_trans (npu_conv_lower) */
    bool centre_rows;
    float alpha;               /* Gemm alpha */
    const struct npu_value *b; /* bias constant (per output channel) or NULL */
    float beta;
    /* activation (npu_act) */
    const char *act_name;
    float act_alpha, act_beta;
    bool act_fused; /* expressible in the conv's DPU stages */
};

/* A tiling: the tasks of a conv (struct rk_tile) and their modeled cost. */
struct plan {
    struct rk_tile *t;
    uint32_t n, cap;
    uint32_t parts; /* partial-sum buffers (0 or 2) */
    double seconds; /* modeled, timing model v1, without the submit */
    uint64_t dma_bytes, macs;
};

/* ---- reading the source node (conv-supports.c) ----------------------------------------------- */

/* Reads node n into s: false (the reason in why) when the NPU cannot run it. */
bool conv_read_src(const struct npu_graph *g, const struct npu_node *n, struct conv_src *s,
                   char *why, size_t wl);

/* ---- the integer pipeline (conv-quant.c) ----------------------------------------------------- */

/* Whether v is an int8 or uint8 tensor. */
bool conv_int8_operand(const struct npu_value *v);
/* conv-int16.c: the int16 pipeline (w16a16i). check: an int16 QLinear node is int16
 * throughout with zero points 0 (sets the geometry's types); clip: the CORE
 * CLIP_TRUNCATE shift that keeps the worst-case sums of the dense weights wd in int32
 * (false past the 48-bit accumulator); shift_bias: the int32 bias on the shifted scale. */
bool conv_int16_check(const struct npu_node *n, struct conv_src *s, char *why, size_t wl);
bool conv_int16_clip(const struct conv_src *s, const float *wd, uint32_t *clip);
void conv_int16_shift_bias(int32_t *b, uint32_t n, uint32_t clip);
/* Zero points of the integer ops (into s->x_zp, s->w_zp); `kernels` output channels. */
bool conv_read_zero_points(const struct npu_node *n, struct conv_src *s, uint32_t kernels,
                           char *why, size_t wl);
/* QLinear scales and the output zero point (inputs 1, 4, 6, 7). */
bool conv_read_qparams(const struct npu_node *n, struct conv_src *s, uint32_t kernels, char *why,
                       size_t wl);
/* Integer kinds: -x_zp x (weight sum of the kernel), int32 per channel (w: dense weights). */
int32_t *conv_bias_array_int(const struct conv_src *s, const float *w, uint32_t *len);
/* x * m / 2^shift approximating f (m <= 32767, shift <= max_shift); false when it cannot. */
bool conv_dyadic(double f, unsigned max_shift, uint32_t *m, uint32_t *shift);
/* The DequantizeLinear a QLinear product's DPU can take over (its only reader, the
 * result's own per-tensor int8 parameters), or NULL. */
struct npu_node *conv_deq_consumer(struct npu_lower_ctx *cx, struct npu_node *n,
                                   const struct conv_src *s);
/* Whether a folded DequantizeLinear adds its lower bound in the EW stage (per-channel
 * weight scales, zero point other than -128; conv-quant.c). */
bool conv_deq_lo_ew(const struct conv_src *s);
extern int npu_conv_deq_lo_ew;
/* The same before partitioning (no placement looked at), for cost(). */
struct npu_node *conv_deq_reader(const struct npu_node *n, const struct conv_src *s,
                                 const struct npu_backend_options *o);
/* Sets s's geometry for a fused DequantizeLinear (fp16 result, per-channel scales, bias). */
void conv_deq_geom(struct conv_src *s);
/* Its per-channel scales x_scale * w_scale[k] (f32, padded to 64) times mul (a LUT's exact
 * power-of-two input scale, else 1) as a constant. */
struct npu_value *conv_deq_scales(struct npu_lower_ctx *cx, const struct npu_node *n,
                                  const struct conv_src *s, double mul);
/* The activation reading a folded DequantizeLinear's result that the product's EW stage
 * applies as a DPU LUT: its conv activation name (and *act the node), or NULL. */
const char *conv_deq_act(const struct npu_node *dq, const struct npu_backend_options *o,
                         struct npu_node **act);

/* ---- the tiler (conv-tiling.c) --------------------------------------------------------------- */

void conv_plan_free(struct plan *p);
/* Chooses the tiling of a conv (per group when groups > 1): the cheapest modeled plan. */
bool conv_plan_conv(const struct rk_conv_geom *g, uint32_t groups,
                    const struct npu_backend_options *o, struct plan *best);
/* The same; one_set: the weights are one packed set (no channel blocks), kernel tiles
 * take their kernels' slice of it. */
bool conv_plan_conv1(const struct rk_conv_geom *g, uint32_t groups,
                     const struct npu_backend_options *o, bool one_set, struct plan *best);
/* conv_plan_conv1 without its memo of recent plans: the search itself (tests compare). */
bool conv_plan_search(const struct rk_conv_geom *g, uint32_t groups,
                      const struct npu_backend_options *o, bool one_set, struct plan *best);

/* ---- weights and bias (conv-weights.c) ------------------------------------------------------- */

/* fp32 OIHW weights of the source, grouped convs expanded to dense when block_diag; alpha
 * applied. */
float *conv_dense_weights(const struct conv_src *s);
/* Packs the weight set of every tile of p (deduplicated), 64-byte aligned; sets the tiles'
 * woff. */
enum npu_status conv_pack_weights(const struct conv_src *s, struct plan *p, uint8_t **out,
                                  uint64_t *out_bytes);
/* The same into a new uint8 constant `name` of cx's graph (*out; NULL when out of memory):
 * fp16 MatMul / Gemm sets are converted from the fp32 source straight into the constant's
 * bytes, no fp32 copy of B and no separate blob. */
enum npu_status conv_pack_weights_const(struct npu_lower_ctx *cx, const struct conv_src *s,
                                        struct plan *p, const char *name, struct npu_value **out);
/* Whether conv_pack_weights_const converts s's sets straight from the fp32 source (the
 * only packing that can centre B's rows on the way, s->centre_rows). */
bool conv_pack_direct(const struct conv_src *s, const struct plan *p);
/* Per-channel BS operand: bias (times beta) minus the clip's lower bound, padded. */
float *conv_bias_array(const struct conv_src *s, uint32_t *len);

/* ---- fusion with the ops after the conv (conv-fuse.c) ---------------------------------------- */

/* The LUT table that applies activation `a` in one lookup (0: none). */
uint32_t conv_lut_of_act(const char *a);
/* Splits a non-fusable activation off into its own node after n. */
enum npu_status conv_split_act(struct npu_lower_ctx *cx, struct npu_node *n,
                               const struct conv_src *s);
/* A residual Add after n that n's DPU pass can do, and its other operand's NPU value. */
struct npu_node *conv_residual_add(struct npu_lower_ctx *cx, struct npu_node *n,
                                   const struct conv_src *s, struct npu_value **res);
/* The Add conv_residual_add() will likely find, predicted for cost() (no NPU values yet). */
const struct npu_node *conv_residual_reader(const struct npu_node *n, const struct conv_src *s,
                                            const struct npu_backend_options *o);

#endif /* CONV_PRIV_H */
