/* SPDX-License-Identifier: MIT */
/*
 * npu-rk.h: the rk.* ops, the NPU's instructions in the IR, as codegen
 * defines them: the layout conventions of rk.* values, the attribute formats
 * of rk.Conv and rk.Dpu (what lowering writes and codegen reads), their
 * inference, the per-task timing (the timing model, npu/npu-timing.h) and the task
 * emitters.
 * The back end's lowering (compiler/backend) builds rk.* nodes with these;
 * codegen (this folder) emits them. Nothing here knows of lowering.
 *
 * Conventions for rk.* values (values defined by rk.* nodes):
 *  - they live in NPU memory (NPU_BUF_ACT); their IR dtype is the element
 *    type in memory (f16 for the fp16 pipeline, f32 / i8 / i32 ...), their
 *    dims are the logical ONNX dims of the value they stand for;
 *  - their layout is NC1HWC2 (facts §2.10) over a 3-D view (C, H, W). The
 *    view is the producer's int-list attribute "view" = [c, h, w] when
 *    present, else the canonical view of the dims (npu_rk_canonical_view);
 *  - a producer may name another layout with the string attribute "layout"
 *    ("nc1hwc2" is the default; others are documented per op).
 * rk.ToNpu(x){view, dtype} makes the NPU copy of a host value, rk.ToHost(y)
 * {dtype} the host copy of an NPU value; codegen turns both into CONVERT
 * steps.
 */
#ifndef NPU_RK_H
#define NPU_RK_H

#include <stdbool.h>
#include <stdint.h>

#include "npu-dpu.h"
#include "npu-hw.h"
#include "npu/npu-backend.h"
#include "npu/npu-ir.h"
#include "npu/npu-timing.h"

#define NPU_BE_DOM "npu-be"

/* ---- views and layouts ----------------------------------------------------- */

/* Canonical 3-D view of logical dims: rank 4 [1, C, H, W] -> (C, H, W); any
 * other rank r -> (C = last dim, H = product of the others, W = 1), so a
 * matrix [.., M, K] is M one-pixel rows of K channels (facts §2.10 "matmul as
 * 1x1 conv"). Returns false for rank 4 with N > 1, rank > 4 with a leading
 * product that overflows, or dims past the 13-bit DPU cube fields. */
bool npu_rk_canonical_view(const struct npu_tensor *t, uint32_t view[3]);
/* View of an rk.* value (producer's "view" attribute or canonical). */
bool npu_rk_view(const struct npu_value *v, uint32_t view[3]);
/* How the value's logical row-major elements map onto its view (enum
 * npu_view_order, npu-program.h): the producer's "order" attribute ("nchw" /
 * "hwc") when present; else NCHW when the value is rank 4 and its view is
 * dims[1..3], HWC otherwise (matrices: rows x channels). */
uint32_t npu_rk_view_order(const struct npu_value *v);
/* Same rule for a host value given the view it is converted to. */
uint32_t npu_rk_order_of(const struct npu_tensor *t, const uint32_t view[3]);
/* Layout name of an rk.* value ("nc1hwc2" unless the producer says otherwise). */
const char *npu_rk_layout(const struct npu_value *v);
/* Bytes an NC1HWC2 tensor of this dtype and view occupies in NPU memory:
 * ceil(align(C, 64) / C2) * H * W * 16, room for the channel padding a conv
 * writes (kernel group 16 / 32, depthwise block 32 / 64; docs/npu-backend.md). */
uint64_t npu_rk_nc1hwc2_bytes(enum npu_dtype dt, const uint32_t view[3]);
/* Bytes an rk.* value occupies in NPU memory (its layout's size). */
uint64_t npu_rk_value_bytes(const struct npu_value *v);
/* Atoms from one channel surface of an NC1HWC2 rk.* value to the next: the producer's
 * "surf" attribute when a reader had the rows padded (the DPU attention lowering,
 * docs/npu-dpu-ops.md §3.8; output 0 only), else H x W of its view. */
uint32_t npu_rk_surf(const struct npu_value *v);
/* True when the value's surfaces are packed (surf = H x W): what every reader but the one
 * that asked for padding expects. */
bool npu_rk_packed(const struct npu_value *v);
/* True when v is an rk.* value (defined by an rk.* node). */
bool npu_rk_value(const struct npu_value *v);

/* ---- codegen -------------------------------------------------------------- */

/* Where a value lives for the NPU: relocation buffer id and byte offset.
 * Constants are in NPU_BUF_WEIGHTS, rk.* values in NPU_BUF_ACT. */
enum npu_status npu_cg_addr(struct npu_cg *cg, const struct npu_value *v, struct npu_ref_buf *out);
/* The stream of the job being generated (tasks are appended to it). */
struct npu_stream *npu_cg_stream(struct npu_cg *cg);
/* Records that hardware task `task` of the open job (its index in the stream) writes at
 * `where` at a run-time position: graph input pos_input times stride bytes, 0 .. limit - 1,
 * extent bytes written (npu_prog_dynreloc; made when the job closes). */
enum npu_status npu_cg_dynreloc(struct npu_cg *cg, uint32_t task, struct npu_ref_buf where,
                                const char *pos_input, uint32_t stride, uint32_t limit,
                                uint32_t extent);
const struct npu_backend_options *npu_cg_options(struct npu_cg *cg);

/* ---- attribute helpers ---------------------------------------------------- */

/* Reads an int-list attribute of exactly cnt entries into out (false if absent
 * or of another length). */
bool npu_attr_ints_n(const struct npu_node *n, const char *name, int64_t *out, size_t cnt);

/* ---- rk.* op table ------------------------------------------------------- */

/* The emitter of an rk.* compute op (rk.Conv, rk.Dpu): appends the node's hardware
 * tasks to the job codegen is building; NULL for other ops. The lowering stage's handler
 * table (npu_op_handler) holds the source ops; this is its counterpart for the ops
 * codegen defines, so codegen never calls back into lowering. */
typedef enum npu_status (*npu_rk_emit_fn)(struct npu_cg *cg, const struct npu_node *n);
npu_rk_emit_fn npu_rk_emitter(enum npu_op op);

/* ---- rk.ToNpu / rk.ToHost ------------------------------------------------ */

enum npu_status npu_rk_infer_to_npu(struct npu_graph *g, struct npu_node *n);
enum npu_status npu_rk_infer_to_host(struct npu_graph *g, struct npu_node *n);

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
    uint32_t c, h, w;   /* input view (NC1HWC2) */
    uint32_t k, oh, ow; /* output view: K real output channels */
    uint32_t kh, kw, sy, sx, dy, dx;
    uint32_t pt, pl;        /* top / left padding; bottom / right follow from the output size */
    bool depthwise;         /* one filter per channel (K == C) */
    uint32_t argb;          /* small-channel input mode (facts §2.10): 1..4 real channels
                               stored as packed pixels [H][W][C]; 0 = NC1HWC2 */
    enum npu_dtype in_dt;   /* f16 or i8 */
    enum npu_dtype out_dt;  /* f16, f32 (fp16 pipeline); i8, i32 (int8 pipeline) */
    enum npu_dtype part_dt; /* partial sums: f32 / f16 / i32 */
    bool bias;
    enum rk_act act;
    float act_lo, act_hi;
    bool mtx;          /* MTX Appendix A.1 register style */
    int32_t pad_value; /* CNA PAD_CON1 (int8: the input zero point) */
    /* int8 requantisation of the final result (facts §5.3 OUT_CVT):
     * y = sat(((x * q_scale) >> q_shift) + q_offset), half-to-even; per channel:
     * BN MUL by a per-channel multiplier (input 3) >> q_chshift, then + q_offset */
    bool q_per_channel;
    uint32_t q_scale, q_shift, q_chshift;
    int32_t q_offset;
    /* dequantised result (attribute "q_deq"): an int8 product with an fp16 result, the
     * DPU processing in fp16 after the CORE's int32 sums (TRM-inferred, ledger level T):
     * BS ALU adds the bias (input 2, f32), BN MUL the per-channel scale x_scale * w_scale
     * (input 3, f32 through NRDMA; q_per_channel is set with it) */
    bool q_deq;
    /* the int8 result's range (-128 - zp, 127 - zp) x y_scale that a dequantised result
     * keeps (attributes q_lo, q_hi): BS adds bias - q_lo / scale[k] and applies ReLU
     * (ReLU-X (q_hi - q_lo) / scale with one scale for all channels), BN multiplies by
     * scale[k], then adds q_lo (q_lo != 0) or applies ReLU-X q_hi (q_lo == 0) */
    float q_lo, q_hi;
    float q_bs_relux; /* attribute q_bs_relux: (q_hi - q_lo) / scale, one scale (0: none) */
    /* attribute q_lo_ew: per-channel scales with q_lo < 0: BN applies ReLU-X q_hi - q_lo
     * instead of adding q_lo, and the EW stage adds q_lo from the residual operand (a
     * constant f32 of the result's NC1HWC2 size; conv-quant.c conv_deq_lo_ew) */
    bool q_lo_ew;
    /* (with a LUT, lut_id below, the per-channel scales already carry the table's input
     * scale, and BN's add and ReLU-X operands are q_lo, q_hi times it) */
    /* int16 pipeline (in_dt i16, w16a16i): CORE CLIP_TRUNCATE, the right shift of the
     * 48-bit sums before the DPU (attribute q_clip, 0..31; TRM-inferred, level T) */
    uint32_t q_clip;
    /* EW-stage fusions (docs/npu-backend.md §3, fp16 pipeline):
     *  lut_id: a DPU LUT function (npu_dpu_lut_get) applied to the final result in
     *    the EW stage after any partial-sum add; its input scale is BN MUL in every task
     *    (so partial sums carry it), a guard + upload task precede the conv tasks;
     *  residual: the last input (an NPU value in the output's view) added per pixel by the
     *    EW stage of the first channel block (tasks with src < 0). */
    uint32_t lut_id;
    bool residual;
    enum npu_dtype res_dt;
    /* atoms between output surfaces of the result (attribute "surf", >= ow x oh): rows
     * padded for the DPU attention lowering (npu_rk_surf) */
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
/* Modeled seconds of one task (npu_timing_model(), the simulator's accounting). */
double rk_task_seconds(const struct rk_conv_geom *g, const struct rk_tile *t, uint64_t *dma_bytes,
                       uint64_t *macs);

/* Modeled seconds of all tasks of an rk.Conv (npu_timing_model()), < 0 on error. */
double rk_conv_modeled(const struct npu_node *n);

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

enum npu_status npu_rk_conv_infer(struct npu_graph *g, struct npu_node *n);
enum npu_status npu_rk_conv_emit(struct npu_cg *cg, const struct npu_node *n);

/* ---- rk.Dpu ---------------------------------------------------------------- */

/* Symbolic buffers of maps inside an rk.Dpu node: input i / output j of the node. */
#define RKD_IN(i) (0x10000u + (uint32_t)(i))
#define RKD_OUT(j) (0x20000u + (uint32_t)(j))

enum rkd_kind {
    RKD_PASS = 1, /* npu_dpu_emit_pass */
    RKD_CONV,     /* npu_dpu_emit_conv */
    RKD_LUT,      /* npu_dpu_emit_lut_upload (scratch = map A's ref) */
    RKD_POOL,     /* npu_dpu_emit_pool */
    RKD_TP,       /* npu_dpu_emit_tp (dst = map B's ref) */
    RKD_GUARD,    /* a 1x1x16 int8 copy (scratch = map A's ref): no LUT use before an upload */
};

/* One task of an rk.Dpu node: its kind and the emitter's argument struct with symbolic refs
 * (RKD_IN / RKD_OUT). */
struct rkd_task {
    enum rkd_kind kind;
    union {
        struct npu_dpu_pass pass;
        struct npu_dpu_conv conv;
        struct npu_dpu_pool pool;
        struct npu_dpu_tp tp;
        struct {
            uint32_t id;
            struct npu_dpu_ref scratch;
        } lut;
    } u;
};

/* Fields per task and floats per task of rk.Dpu's "tasks" / "fvals" attributes, and tasks
 * per attribute chunk ("tasks", "tasks_1", ...). */
/* Inputs and outputs an rk.Dpu node may have. */
#define RKD_MAX_IN 32
#define RKD_MAX_OUT 8
#define RKD_FIELDS 53
#define RKD_FVALS 7
#define RKD_CHUNK 19

/* Encodes a task into RKD_FIELDS ints and RKD_FVALS floats (the attribute format). */
void rkd_encode(const struct rkd_task *t, int64_t *f, float *v);
/* Emits one task (dry when s is a dry stream), adding its modeled cost to cost (may be NULL). */
enum npu_status rkd_emit_task(struct npu_stream *s, const struct rkd_task *t,
                              const struct npu_dpu_lut *lut, struct npu_dpu_cost *cost);
/* Tasks an rk.Dpu node emits (0 for a view, -1 when its task list is malformed). */
int npu_rk_dpu_task_count(const struct npu_node *n);
/* rk.Dpu inference and emission (dpu-rk.c). */
enum npu_status npu_rk_dpu_infer(struct npu_graph *g, struct npu_node *n);
struct npu_cg;
enum npu_status npu_rk_dpu_emit(struct npu_cg *cg, const struct npu_node *n);

#endif /* NPU_RK_H */
