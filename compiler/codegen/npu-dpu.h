/* SPDX-License-Identifier: MIT */
/*
 * npu-dpu.h: emitters for the NPU's post-processing engines, used by the back end's DPU/PPU
 * op handlers (elementwise, activations, LUT functions, pooling, data movement) and by the
 * composite lowerings (softmax, layer norm, attention), which also need small convolutions
 * (sums with a ones kernel, broadcasts of a per-pixel scalar over channels).
 *
 * Every emitter appends whole tasks to a core/hw task stream (npu_stream); addresses are
 * relocations (buffer id + byte offset), so the result is position independent. Only
 * register patterns the simulator accepts in strict mode are emitted (docs/simulator.md,
 * docs/npu-dpu-ops.md gives the evidence per pattern); anything else is refused with
 * NPU_ERR_INVALID and a message.
 *
 * Each emitter also adds its modeled cost (timing model v1, shared/hw/timing-model-v1.md)
 * to an optional struct npu_dpu_cost, counting bytes the way the simulator counts them, so
 * op handlers can report costs without running anything.
 *
 * Feature maps are NC1HWC2 with 16-byte atoms (facts §2.10). A map names its first element
 * and its line and surface strides in atoms, which lets a lowering address a channel slice
 * (surface offset), a row slice (line offset), a window of a bigger map (line stride) or a
 * strided view without moving data.
 */
#ifndef NPU_DPU_H
#define NPU_DPU_H

#include <stdbool.h>
#include <stdint.h>

#include "npu-hw.h"
#include "npu-task.h"
#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A place in NPU memory: relocation buffer id (NPU_BUF_WEIGHTS, NPU_BUF_ACT, ...) + offset. */
struct npu_dpu_ref {
    uint32_t buffer;
    uint32_t offset;
};

/* Element types of DPU/PPU data. */
enum npu_dpu_type {
    NPU_DPU_FP16 = 0, /* C2 = 8 */
    NPU_DPU_FP32,     /* C2 = 4; convolution outputs and EW operands only */
    NPU_DPU_INT8,     /* C2 = 16 */
};

/* Bytes per element, C2 (elements per atom). */
unsigned npu_dpu_type_bytes(enum npu_dpu_type t);
static inline unsigned
npu_dpu_type_c2(enum npu_dpu_type t)
{
    return 16u / npu_dpu_type_bytes(t);
}

/*
 * A feature map: element (c, y, x) at
 *     offset + (c / C2) * surf * 16 + (y * line + x) * 16 + (c % C2) * esize.
 * line 0 means w (packed lines), surf 0 means line * h (packed surfaces).
 */
struct npu_dpu_map {
    struct npu_dpu_ref ref;
    enum npu_dpu_type type;
    uint32_t w, h, c;
    uint32_t line; /* atoms from line y to y + 1 */
    uint32_t surf; /* atoms from surface s to s + 1 */
};

static inline uint32_t
npu_dpu_map_line(const struct npu_dpu_map *m)
{
    return m->line ? m->line : m->w;
}

static inline uint32_t
npu_dpu_map_surf(const struct npu_dpu_map *m)
{
    return m->surf ? m->surf : npu_dpu_map_line(m) * m->h;
}

/* Surfaces (C1) of a map. */
static inline uint32_t
npu_dpu_map_c1(const struct npu_dpu_map *m)
{
    return (m->c + npu_dpu_type_c2(m->type) - 1) / npu_dpu_type_c2(m->type);
}

/* Bytes spanned from the first to one past the last atom. */
uint64_t npu_dpu_map_extent(const struct npu_dpu_map *m);
/* A packed map over [buffer, offset): c x h x w of type t. */
struct npu_dpu_map npu_dpu_map_packed(struct npu_dpu_ref ref, enum npu_dpu_type t, uint32_t c,
                                      uint32_t h, uint32_t w);
/* Views (no data moves): channels [c0, c0 + n) with c0 a multiple of C2; rows [y0, y0 + n);
 * columns [x0, x0 + n). */
struct npu_dpu_map npu_dpu_map_channels(const struct npu_dpu_map *m, uint32_t c0, uint32_t n);
struct npu_dpu_map npu_dpu_map_rows(const struct npu_dpu_map *m, uint32_t y0, uint32_t n);
struct npu_dpu_map npu_dpu_map_cols(const struct npu_dpu_map *m, uint32_t x0, uint32_t n);

/* ------------------------------------------------------------------ stages */

enum npu_dpu_src {
    NPU_DPU_SRC_NONE = 0, /* stage part bypassed */
    NPU_DPU_SRC_REG,      /* one value for every element (register operand) */
    NPU_DPU_SRC_MEM,      /* one fp32 value per channel read by BRDMA / NRDMA */
};

/*
 * A BS or BN stage (facts §5.3): BS computes ALU then MUL, BN MUL then ALU, then ReLU and
 * ReLU-X. Strict mode accepts ALU add / minus only, one memory operand kind per stage
 * (facts §6.13), no PReLU and no MUL shift in fp pipelines. Register ALU and ReLU-X
 * operands are fp32, MUL operands fp16 (AB observation, facts §5.3).
 */
struct npu_dpu_stage {
    enum npu_dpu_src alu;
    bool alu_minus; /* x - operand instead of x + operand */
    float alu_value;
    struct npu_dpu_ref alu_mem; /* fp32 per channel, channels of the cube */
    enum npu_dpu_src mul;
    float mul_value; /* rounded to fp16 */
    struct npu_dpu_ref mul_mem;
    bool relu;  /* max(x, 0) */
    bool relux; /* then min(x, relux_value) (needs relu) */
    float relux_value;
};

enum npu_dpu_ew_op {
    NPU_DPU_EW_NONE = 0,
    NPU_DPU_EW_ADD,
    NPU_DPU_EW_SUB, /* x - operand */
    NPU_DPU_EW_MUL,
    NPU_DPU_EW_DIV, /* x / operand */
    NPU_DPU_EW_MAX,
    NPU_DPU_EW_MIN,
};

/*
 * A LUT configuration (facts §2.5/§5.3; the simulator's semantics, checked against RKNN's
 * tanh program, NOTES S19). The EW stage looks up u = its input (after the EW operation)
 * in two tables of 513 int16 entries: LE covers [le_start, le_start + 512 * 2^le_sel],
 * LO covers [lo_start, lo_start + 512 * 2^lo_sel], with linear interpolation; with
 * RKNN's LUT_CFG (the only one strict mode accepts) LO wins where both cover u, u below
 * both ranges reads LE[0] and above both LO[512] (flat ends: slopes must stay 0). The
 * result y = (entry + out_offset) * 2^-minus_exp (OUT_CVT offset and MINUS_EXP).
 * Inputs are scaled into the table's index domain by the stage before EW (BN).
 */
struct npu_dpu_lut {
    int16_t le[513], lo[513];
    int32_t le_start, lo_start;
    unsigned le_sel, lo_sel;
    int32_t out_offset;
    unsigned minus_exp;
    /* how u is formed from the function's argument t: u = t * in_scale + in_offset
     * (in_scale must be exact in fp16). Used by the emitters that apply the function. */
    float in_scale, in_offset;
    uint32_t id; /* what table this is (npu_dpu_lut_id): skip uploads of a resident table */
};

struct npu_dpu_ew {
    enum npu_dpu_ew_op op;
    struct npu_dpu_map operand;    /* per-pixel operand over the same cube (fp16 or fp32) */
    const struct npu_dpu_lut *lut; /* NULL: LUT bypassed */
    bool relu;
    bool relux;
    float relux_value;
};

/* The DPU part of a task: stages and output. */
struct npu_dpu_stages {
    struct npu_dpu_stage bs, bn;
    struct npu_dpu_ew ew;
};

/* --------------------------------------------------------------- emitters */

/* Modeled cost (timing model v1) accumulated by the emitters. */
struct npu_dpu_cost {
    double s;         /* sum of task times */
    double compute_s; /* sum of compute terms */
    double dma_s;     /* sum of DMA terms */
    uint64_t dma_bytes;
    uint64_t macs;
    uint32_t tasks;
};

/*
 * A flying-mode DPU task (facts §5.1, Appendix A.2): out = stages(in) over in's cube. in and
 * out are fp16 (the proven flying combination, facts §2.9/§5.5); out has in's w, h, c.
 */
struct npu_dpu_pass {
    struct npu_dpu_map in;
    struct npu_dpu_stages st;
    struct npu_dpu_map out;
};
enum npu_status npu_dpu_emit_pass(struct npu_stream *s, const struct npu_dpu_pass *p,
                                  struct npu_dpu_cost *cost);

/*
 * A convolution task (CNA + CORE + DPU, facts §5.2) for the composite lowerings and the
 * tests: fp16 input (packed lines), kernels of kh x kw, stride, top/left padding (bottom and
 * right implied by the output size), direct or depthwise, weights packed as core/hw's
 * npu_weight_pack() does, the DPU stages of struct npu_dpu_stages and an fp16 or fp32
 * output map of out_w x out_h x kernels. The whole input must fit the CBUF data banks (1x1
 * convolutions are split into row tiles automatically).
 */
struct npu_dpu_conv {
    struct npu_dpu_map in; /* fp16; line must be w; surf >= w * h */
    struct npu_dpu_ref weights;
    uint32_t kernels; /* output channels (= in.c for depthwise) */
    uint32_t kh, kw, sy, sx, pad_top, pad_left;
    bool depthwise;
    /* CBUF_CON0 DATA_REUSE: the input is the tile the previous conv task loaded (same
     * geometry and data banks; one tile only). Its feature bytes are not read again. */
    bool data_reuse;
    struct npu_dpu_stages st;
    struct npu_dpu_map out; /* fp16 or fp32; w, h = output size; c = kernels */
};
enum npu_status npu_dpu_emit_conv(struct npu_stream *s, const struct npu_dpu_conv *c,
                                  struct npu_dpu_cost *cost);

/* The DPU LUT registers of a task (LUT_CFG, LUT_INFO, ranges, slopes): the ranges of lut,
 * or zeros when lut is NULL. */
void npu_dpu_emit_lut_regs(struct npu_stream *s, const struct npu_dpu_lut *lut);

/*
 * A LUT upload task (NOTES S19: its own task, LUT_ACCESS_CFG write LE, 513 data words,
 * LO, 513 words) carrying a 1x1x16 int8 flying copy from scratch to scratch + 16 (the
 * blocks must run something; RKNN does the same). scratch: 32 bytes of activation memory
 * (the first 16 are read, the next 16 written).
 */
enum npu_status npu_dpu_emit_lut_upload(struct npu_stream *s, const struct npu_dpu_lut *lut,
                                        struct npu_dpu_ref scratch, struct npu_dpu_cost *cost);

/* The same 1x1x16 copy without the tables: a task that does not use the LUT, placed before
 * an upload whose predecessor might (docs/npu-dpu-ops.md, LUT rule). */
enum npu_status npu_dpu_emit_guard(struct npu_stream *s, struct npu_dpu_ref scratch,
                                   struct npu_dpu_cost *cost);

/*
 * A flying PPU task (facts §5.4, PPU_RDMA input): max or min pooling of an fp16 map with
 * kernel kh x kw (<= 8 x 8 each... up to 16), strides, pads (pad value 0 only: strict mode).
 * out: packed lines (line = out w).
 */
enum npu_dpu_pool_op {
    NPU_DPU_POOL_MAX = 1,
    NPU_DPU_POOL_MIN = 2,
};
struct npu_dpu_pool {
    enum npu_dpu_pool_op op;
    struct npu_dpu_map in;
    uint32_t kh, kw, sy, sx, pad_top, pad_left, pad_bottom, pad_right;
    struct npu_dpu_map out;
};
enum npu_status npu_dpu_emit_pool(struct npu_stream *s, const struct npu_dpu_pool *p,
                                  struct npu_dpu_cost *cost);

/*
 * The DPU transpose copy (BS_OW_CFG TP_ORG_EN, NOTES S17) with the semantics the simulator
 * derived from RKNN's layout copies: for every channel c of in (16-bit data, packed pixels
 * p = y * w + x, w * h a multiple of 8), pixel p goes to lane p % 8 of atom j = p / 8, and
 * atom j to row j / grid_w, column j % grid_w of a grid whose lines are grid_line atoms
 * long, the grid of channel c starting at dst + c * chan_stride atoms. Every DPU stage is
 * bypassed.
 */
struct npu_dpu_tp {
    struct npu_dpu_map in; /* fp16; any line / surface strides */
    struct npu_dpu_ref dst;
    uint32_t grid_w;      /* atoms per grid row; grid rows = w * h / 8 / grid_w */
    uint32_t grid_line;   /* atoms from one grid row to the next (>= grid_w) */
    uint32_t chan_stride; /* atoms from channel c to c + 1 */
};
enum npu_status npu_dpu_emit_tp(struct npu_stream *s, const struct npu_dpu_tp *t,
                                struct npu_dpu_cost *cost);

/* Modeled cost of the task just ended in s (reads the stream's last task); the emitters
 * call it, composites may use it for tasks they build themselves. */
void npu_dpu_cost_add(struct npu_dpu_cost *cost, const struct npu_stream *s, double compute_s,
                      uint64_t dma_bytes, uint64_t macs);
/* The same with weight_bytes of dma_bytes a contiguous weight stream (timing model v2's
 * DMA efficiency by access pattern, npu_timing_task()). */
void npu_dpu_cost_add_w(struct npu_dpu_cost *cost, const struct npu_stream *s, double compute_s,
                        uint64_t dma_bytes, uint64_t weight_bytes, uint64_t macs);

/* fp16 helpers shared by the emitters and the LUT builders. */
static inline bool
npu_dpu_fp16_exact(float v)
{
    return npu_fp16_to_fp32(npu_fp32_to_fp16(v)) == v;
}

/* ---- LUT functions and tables ------------------------------------------- */

/* ------------------------------------------------------------------ LUT */

enum npu_dpu_fn {
    NPU_DPU_FN_SIGMOID = 0,
    NPU_DPU_FN_TANH,
    NPU_DPU_FN_ERF,
    NPU_DPU_FN_GELU,      /* x * Phi(x), one table (saturates at |y| = 16) */
    NPU_DPU_FN_GELU_TANH, /* tanh form, one table */
    NPU_DPU_FN_SILU,      /* x * sigmoid(x), one table (saturates at 16) */
    NPU_DPU_FN_PHI,       /* Phi(x) = 0.5 (1 + erf(x / sqrt 2)), for x * Phi(x) in two passes */
    NPU_DPU_FN_PHI_TANH,
    NPU_DPU_FN_EXP_NEG, /* exp(t), t <= 0 (softmax after the max is subtracted) */
    NPU_DPU_FN_COUNT
};

/* Bands of the 1/sqrt tables cover [2^lg, 2^(lg + NPU_DPU_RSQRT_BAND_LG)]. */
#define NPU_DPU_RSQRT_BAND_LG 14

/* fp64 reference of a table's function. */
double npu_dpu_fn_ref(enum npu_dpu_fn fn, double x);
const char *npu_dpu_fn_name(enum npu_dpu_fn fn);
/* Fills the table of fn (entries, ranges, output scaling, input scale, id). */
enum npu_status npu_dpu_lut_build(enum npu_dpu_fn fn, struct npu_dpu_lut *l);
/* The 1/sqrt band table for v in [2^lg_lo, 2^(lg_lo + 14)], lg_lo in -20..12. */
enum npu_status npu_dpu_lut_rsqrt_band(int lg_lo, struct npu_dpu_lut *l);
/* exp(t), t <= 0, in the coarse layout (INDEX_SELECT 0, u = 32 t) for index domains that
 * must stay within fp16 (the attention path's shift map, dpu-attn.c). */
#define NPU_DPU_LUT_EXP_NEG_COARSE 0x180u
/* Rebuilds a table from its id (the rk.Dpu attributes carry only the id). */
enum npu_status npu_dpu_lut_from_id(uint32_t id, struct npu_dpu_lut *l);
/* The shared, immutable table of an id (NULL for an unknown id). */
const struct npu_dpu_lut *npu_dpu_lut_get(uint32_t id);
static inline uint32_t
npu_dpu_lut_fn_id(enum npu_dpu_fn fn)
{
    return 0x100u + (uint32_t)fn;
}
static inline uint32_t
npu_dpu_lut_band_id(int lg_lo)
{
    return 0x200u + (uint32_t)(lg_lo + 64);
}
/* The lookup of u (already in the index domain) as the simulator performs it, before the
 * fp16 store. */
double npu_dpu_lut_lookup(const struct npu_dpu_lut *l, double u);
/* The whole BN-scale + lookup + fp16 store of argument t, as the NPU computes it. */
double npu_dpu_lut_eval(const struct npu_dpu_lut *l, float t);
/* The same under the simulator's fixed-point index model (NPU_SIM_LUT=fixed,
 * docs/simulator.md): u is first rounded to the nearest integer (ties to even), so only
 * the low le_sel / lo_sel bits interpolate. */
double npu_dpu_lut_lookup_fixed(const struct npu_dpu_lut *l, double u);
double npu_dpu_lut_eval_fixed(const struct npu_dpu_lut *l, float t);

/* ------------------------------------------------------------- rk.Dpu */

#ifdef __cplusplus
}
#endif

#endif /* NPU_DPU_H */
