/* SPDX-License-Identifier: MIT */
/*
 * npu-be-priv.h: be-conv's private declarations: the rows of the handler
 * table it owns, the rk.Conv task record and geometry shared by the tiler
 * (npu-conv.c) and the emitter (npu-conv-emit.c), the timing-model figures
 * both use, and the memory plan of codegen.
 */
#ifndef NPU_BE_PRIV_H
#define NPU_BE_PRIV_H

#include "npu-be.h"

/* ---- handler rows ---------------------------------------------------------------- */

enum npu_status npu_rk_infer_to_npu(struct npu_graph *g, struct npu_node *n);
enum npu_status npu_rk_infer_to_host(struct npu_graph *g, struct npu_node *n);

bool npu_conv_supports(const struct npu_graph *g, const struct npu_node *n,
                       const struct npu_backend_options *o, char *why, size_t why_len);
double npu_conv_cost(const struct npu_graph *g, const struct npu_node *n,
                     const struct npu_backend_options *o);
enum npu_status npu_conv_lower(struct npu_lower_ctx *cx, struct npu_node *n);
enum npu_status npu_rk_conv_infer(struct npu_graph *g, struct npu_node *n);
enum npu_status npu_rk_conv_emit(struct npu_cg *cg, const struct npu_node *n);

/* ---- timing model v1 (shared/hw/timing-model-v1.md) ----------------------------------- */

#define TMV1_CLOCK_HZ 1.0e9
#define TMV1_DMA_BPS 10.0e9
#define TMV1_TASK_S 2.0e-6
#define TMV1_SUBMIT_S 60.0e-6
#define TMV1_CHANNEL_GROUP 32u
#define TMV1_MAC_16BIT 512.0
#define TMV1_MAC_INT8 1024.0

/* ---- rk.Conv ------------------------------------------------------------------------- */

/* One task of an rk.Conv: fields of the "tiles" attribute, RKT_FIELDS ints per
 * task, in this order. */
enum rk_tile_field {
    RKT_OY0,   /* first output row */
    RKT_OH,    /* output rows */
    RKT_K0,    /* first output channel (kernel) */
    RKT_NK,    /* output channels */
    RKT_C0,    /* first input channel (channel-block accumulation) */
    RKT_NC,    /* input channels */
    RKT_BANK,  /* CBUF DATA_BANK; WEIGHT_BANK = 12 - DATA_BANK */
    RKT_FLAGS, /* RKT_F_* */
    RKT_WOFF,  /* byte offset of this task's packed weights in input 1 */
    RKT_SRC,   /* partial sum the EW stage adds (-1: none; else output index 1..) */
    RKT_DST,   /* where the task writes (0: the result, else a partial output index) */
    RKT_FIELDS
};

enum {
    RKT_F_WREUSE = 1u << 0, /* CBUF_CON0 WEIGHT_REUSE: weights resident from the last load */
    RKT_F_DREUSE = 1u << 1, /* CBUF_CON0 DATA_REUSE: input tile resident from the last load */
    RKT_F_BIAS = 1u << 2,   /* BS adds the per-channel bias (BRDMA) */
    RKT_F_ACT = 1u << 3,    /* the activation runs in this task */
};

enum rk_act {
    RK_ACT_NONE = 0,
    RK_ACT_RELU,
    RK_ACT_CLIP, /* min(max(x, lo), hi) */
};

/* Everything an rk.Conv's tasks depend on besides the tile list. */
struct rk_conv_geom {
    uint32_t c, h, w;      /* input view (NC1HWC2) */
    uint32_t k, oh, ow;    /* output view: K real output channels */
    uint32_t kh, kw, sy, sx, dy, dx;
    uint32_t pt, pl;       /* top / left padding; bottom / right follow from the output size */
    bool depthwise;        /* one filter per channel (K == C) */
    uint32_t argb;         /* small-channel input mode (facts §2.10): 1..4 real channels
                              stored as packed pixels [H][W][C]; 0 = NC1HWC2 */
    enum npu_dtype in_dt;  /* f16 or i8 */
    enum npu_dtype out_dt; /* f16, f32 (fp16 pipeline); i8, i32 (int8 pipeline) */
    enum npu_dtype part_dt; /* partial sums: f32 / f16 / i32 */
    bool bias;
    enum rk_act act;
    float act_lo, act_hi;
    bool mtx;              /* MTX Appendix A.1 register style */
    int32_t pad_value;     /* CNA PAD_CON1 (int8: the input zero point) */
    /* int8 requantisation of the final result (facts §5.3 OUT_CVT):
     * y = sat(((x * q_scale) >> q_shift) + q_offset), half-to-even; per channel:
     * BN MUL by a per-channel multiplier (input 3) >> q_chshift, then + q_offset */
    bool q_per_channel;
    uint32_t q_scale, q_shift, q_chshift;
    int32_t q_offset;
    /* EW-stage fusions (docs/npu-backend.md §3, fp16 pipeline):
     *  lut_id: a LUT function of be-dpu (npu_dpu_lut_get) applied to the final result in
     *    the EW stage after any partial-sum add; its input scale is BN MUL in every task
     *    (so partial sums carry it), a guard + upload task precede the conv tasks;
     *  residual: the last input (an NPU value in the output's view) added per pixel by the
     *    EW stage of the first channel block (tasks with src < 0). */
    uint32_t lut_id;
    bool residual;
    enum npu_dtype res_dt;
    /* atoms between output surfaces of the result (attribute "surf", >= ow x oh): rows
     * padded for be-dpu's attention (npu_rk_surf) */
    uint32_t out_surf;
};

struct rk_tile {
    uint32_t oy0, oh, k0, nk, c0, nc, bank, flags, woff;
    int32_t src, dst;
};

/* Kernel group (kernels per MAC pass): 16 fp16, 32 int8 (facts §2.10). */
static inline uint32_t
rk_kernel_group(const struct rk_conv_geom *g)
{
    return g->in_dt == NPU_DTYPE_INT8 ? 32 : 16;
}

static inline uint32_t
rk_esize(enum npu_dtype dt)
{
    return (uint32_t)npu_dtype_size(dt);
}

/* Channels padded as the CNA reads them: 8 for 16-bit, 16 for int8 (facts §2.3,
 * NOTES S13). */
static inline uint32_t
rk_cpad(const struct rk_conv_geom *g, uint32_t c)
{
    uint32_t a = g->in_dt == NPU_DTYPE_INT8 ? 16 : 8;
    return (c + a - 1) / a * a;
}

/* Input rows a tile reads, the padding above them, and the first row. */
struct rk_rows {
    uint32_t iy0, ih, pad_top;
};
void rk_tile_rows(const struct rk_conv_geom *g, uint32_t oy0, uint32_t oh, struct rk_rows *r);

/* Bytes of one packed weight set (nk kernels, nc channels). */
uint64_t rk_weight_set_bytes(const struct rk_conv_geom *g, uint32_t nk, uint32_t nc);
/* CBUF data bytes of an input tile of `rows` rows and nc channels (entries of
 * 64 bytes per row, facts §2.10). */
uint64_t rk_tile_data_bytes(const struct rk_conv_geom *g, uint32_t rows, uint32_t nc);
/* Body qwords of one task as the emitter writes it. */
uint32_t rk_task_body_qwords(const struct rk_conv_geom *g, const struct rk_tile *t);
/* Modeled seconds of one task (timing model v1, the simulator's accounting). */
double rk_task_seconds(const struct rk_conv_geom *g, const struct rk_tile *t, uint64_t *dma_bytes,
                       uint64_t *macs);

/* Modeled seconds of all tasks of an rk.Conv (timing model v1), < 0 on error. */
double rk_conv_modeled(const struct npu_node *n);
/* After lowering: convs whose result only goes to the host as f32 write f32. */
enum npu_status npu_rk_conv_widen_outputs(struct npu_graph *g);

/* Emits one task of a conv (npu-conv-emit.c); addresses: x, w, bias, per-channel
 * multipliers and outputs (0 result, 1 and 2 partial sums). */
struct rk_emit_addrs {
    struct npu_ref_buf x, w, bias, qmul, res, out[3];
};
/* The LUT prologue of an rk.Conv with lut_id (guard + upload, scratch: 32 bytes of the
 * result's memory, overwritten by the conv afterwards); its modeled seconds. */
enum npu_status rk_emit_lut_prologue(struct npu_stream *s, const struct rk_conv_geom *g,
                                     const struct rk_emit_addrs *a);
double rk_lut_prologue_seconds(void);
void rk_emit_task(struct npu_stream *s, const struct rk_conv_geom *g, const struct rk_tile *t,
                  const struct rk_emit_addrs *a);

/* Reads geometry and tiles of an rk.Conv node; logs what is wrong. */
enum npu_status rk_conv_decode(const struct npu_node *n, struct rk_conv_geom *g,
                               struct rk_tile **tiles, uint32_t *n_tiles);

#endif /* NPU_BE_PRIV_H */
