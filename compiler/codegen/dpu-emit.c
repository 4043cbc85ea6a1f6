/* SPDX-License-Identifier: MIT */
/*
 * dpu-emit.c: task emitters for the DPU (flying passes, the DPU half of convolutions, LUT
 * uploads, transpose copies) and the PPU (pooling), plus the small convolutions the
 * composite lowerings need. Register order follows RKNN's streams (NOTES S17-S19) so the
 * tasks read like the vendor's; every register a block reads is written in every task
 * (facts §1.4 compiler rule: the simulator refuses reads of registers a group never got).
 *
 * Strict-mode envelope (docs/simulator.md "Strict and lenient mode"): BS/BN ALU add/minus
 * with one memory operand kind, EW per-pixel operands from ERDMA only, LUT_CFG 0x68 with
 * zero slopes, fp OUT_CVT identity except offset/MINUS_EXP after a LUT, flying fp16 only,
 * output surfaces that do not interleave, PPU max/min from PPU_RDMA with a zero pad value.
 * The emitters check these and refuse with a message rather than emit something the
 * simulator would refuse at run time.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "npu-rk.h"

static const char dom[] = "dpu";

static enum npu_status refuse(struct npu_stream *s, const char *fmt, ...) NPU_PRINTF(2, 3);

static enum npu_status
refuse(struct npu_stream *s, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    npu_err(dom, "%s", msg);
    if (s->error == NPU_OK) {
        s->error = NPU_ERR_INVALID;
        snprintf(s->errmsg, sizeof(s->errmsg), "%s", msg);
    }
    return NPU_ERR_INVALID;
}

unsigned
npu_dpu_type_bytes(enum npu_dpu_type t)
{
    switch (t) {
    case NPU_DPU_FP16: return 2;
    case NPU_DPU_FP32: return 4;
    case NPU_DPU_INT8: return 1;
    }
    return 2;
}

static unsigned
type_size_code(enum npu_dpu_type t)
{
    switch (t) {
    case NPU_DPU_FP16: return NPU_ELEM_SIZE_16BIT;
    case NPU_DPU_FP32: return NPU_ELEM_SIZE_32BIT;
    case NPU_DPU_INT8: return NPU_ELEM_SIZE_8BIT;
    }
    return NPU_ELEM_SIZE_16BIT;
}

uint64_t
npu_dpu_map_extent(const struct npu_dpu_map *m)
{
    if (!m->w || !m->h || !m->c)
        return 0;
    return ((uint64_t)(npu_dpu_map_c1(m) - 1) * npu_dpu_map_surf(m) +
            (uint64_t)(m->h - 1) * npu_dpu_map_line(m) + m->w) *
           16;
}

struct npu_dpu_map
npu_dpu_map_packed(struct npu_dpu_ref ref, enum npu_dpu_type t, uint32_t c, uint32_t h, uint32_t w)
{
    struct npu_dpu_map m = {
        .ref = ref, .type = t, .w = w, .h = h, .c = c, .line = w, .surf = w * h};
    return m;
}

struct npu_dpu_map
npu_dpu_map_channels(const struct npu_dpu_map *m, uint32_t c0, uint32_t n)
{
    struct npu_dpu_map v = *m;
    v.line = npu_dpu_map_line(m);
    v.surf = npu_dpu_map_surf(m);
    v.ref.offset += (c0 / npu_dpu_type_c2(m->type)) * v.surf * 16;
    v.c = n;
    return v;
}

struct npu_dpu_map
npu_dpu_map_rows(const struct npu_dpu_map *m, uint32_t y0, uint32_t n)
{
    struct npu_dpu_map v = *m;
    v.line = npu_dpu_map_line(m);
    v.surf = npu_dpu_map_surf(m);
    v.ref.offset += y0 * v.line * 16;
    v.h = n;
    return v;
}

struct npu_dpu_map
npu_dpu_map_cols(const struct npu_dpu_map *m, uint32_t x0, uint32_t n)
{
    struct npu_dpu_map v = *m;
    v.line = npu_dpu_map_line(m);
    v.surf = npu_dpu_map_surf(m);
    v.ref.offset += x0 * 16;
    v.w = n;
    return v;
}

/* ------------------------------------------------------------------- cost */

void
npu_dpu_cost_add(struct npu_dpu_cost *cost, const struct npu_stream *s, double compute_s,
                 uint64_t dma_bytes, uint64_t macs)
{
    npu_dpu_cost_add_w(cost, s, compute_s, dma_bytes, 0, macs);
}

void
npu_dpu_cost_add_w(struct npu_dpu_cost *cost, const struct npu_stream *s, double compute_s,
                   uint64_t dma_bytes, uint64_t weight_bytes, uint64_t macs)
{
    if (!cost || !s->n_tasks)
        return;
    /* The PC fetches (AMOUNT + 1) * 2 qwords of a segment of body + 4 (facts §1.3). */
    const struct npu_task_seg *last = &s->tasks[s->n_tasks - 1];
    uint32_t n = last->n_body + NPU_TASK_TAIL_QWORDS;
    uint64_t regcmd = npu_pc_amount_qwords(npu_pc_amount(n)) * 8;
    uint64_t bytes = dma_bytes + regcmd;
    const struct npu_timing_model *tm = npu_timing_model();
    double dma_s;
    npu_timing_task(tm, (last->enable_mask & NPU_OP_EN_CNA) != 0, compute_s, weight_bytes, bytes,
                    &compute_s, &dma_s);
    cost->s += (compute_s > dma_s ? compute_s : dma_s) + tm->task_overhead_s;
    cost->compute_s += compute_s;
    cost->dma_s += dma_s;
    cost->dma_bytes += bytes;
    cost->macs += macs;
    cost->tasks++;
}

/* Compute seconds of a DPU- or PPU-only task over elems elements: the timing model's
 * flying rate (one 16-byte atom per cycle, "Per task"). */
static double
flying_s(double elems)
{
    const struct npu_timing_model *tm = npu_timing_model();
    return elems / (tm->clock_hz * tm->flying_elems_per_cycle);
}

/* Compute seconds of one cycle (a guard task, a LUT upload). */
static double
cycle_s(void)
{
    return 1.0 / npu_timing_model()->clock_hz;
}

/* ------------------------------------------------------- register helpers */

static uint32_t
f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static const uint32_t s_pointer = 0x0e; /* POINTER_PP_EN | EXECUTER_PP_EN | PP_MODE (§1.4) */

static uint32_t
stage_cfg(const struct npu_dpu_stage *st)
{
    bool alu = st->alu != NPU_DPU_SRC_NONE, mul = st->mul != NPU_DPU_SRC_NONE;
    if (!alu && !mul && !st->relu)
        return DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
               DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_BYPASS(1); /* 0x53 */
    uint32_t v = DPU_BS_CFG_BS_ALU_BYPASS(!alu) | DPU_BS_CFG_BS_MUL_BYPASS(!mul) |
                 DPU_BS_CFG_BS_RELU_BYPASS(!st->relu) | DPU_BS_CFG_BS_RELUX_EN(st->relux) |
                 DPU_BS_CFG_BS_ALU_SRC(st->alu == NPU_DPU_SRC_MEM);
    if (alu)
        v |= DPU_BS_CFG_BS_ALU_ALGO(st->alu_minus ? NPU_ALU_ALGO_MINUS : NPU_ALU_ALGO_ADD);
    return v;
}

/* BRDMA/NRDMA DATA_USE bits (facts §2.6: bit 0 ALU, bit 2 MUL). */
static uint32_t
stage_data_use(const struct npu_dpu_stage *st)
{
    return (st->alu == NPU_DPU_SRC_MEM ? 1u : 0u) | (st->mul == NPU_DPU_SRC_MEM ? 4u : 0u);
}

static bool
ew_active(const struct npu_dpu_ew *ew)
{
    return ew->op != NPU_DPU_EW_NONE || ew->lut || ew->relu;
}

static uint32_t
ew_cfg(const struct npu_dpu_ew *ew)
{
    if (!ew_active(ew))
        return DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
               DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_BYPASS(1) |
               DPU_EW_CFG_EW_BYPASS(1); /* 0x383 */
    uint32_t v = DPU_EW_CFG_EW_RELU_BYPASS(!ew->relu) | DPU_EW_CFG_EW_RELUX_EN(ew->relux) |
                 DPU_EW_CFG_EW_LUT_BYPASS(ew->lut == NULL);
    if (ew->op == NPU_DPU_EW_NONE)
        /* RKNN's tanh: 0x302 = OP_BYPASS | OP_CVT_BYPASS | RELU_BYPASS (NOTES S19) */
        return v | DPU_EW_CFG_EW_OP_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1);
    /* The per-pixel ERDMA operand of NOTES S18 (EW_CFG 0x108202c0 / 0x108402c0 /
     * 0x108003c4 / 0x108303c0): ALU ops keep the identity operand converter, MUL and DIV
     * bypass it. */
    v |= DPU_EW_CFG_EW_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
         DPU_EW_CFG_EDATA_SIZE(type_size_code(ew->operand.type)) |
         DPU_EW_CFG_EW_OP_SRC(NPU_OPERAND_SRC_MEMORY);
    switch (ew->op) {
    case NPU_DPU_EW_ADD: v |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD); break;
    case NPU_DPU_EW_SUB: v |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MINUS); break;
    case NPU_DPU_EW_DIV:
        v |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_DIV) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1);
        break;
    case NPU_DPU_EW_MAX:
        v |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MAX) | DPU_EW_CFG_EW_EQUAL_EN(1);
        break;
    case NPU_DPU_EW_MIN:
        v |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MIN) | DPU_EW_CFG_EW_EQUAL_EN(1);
        break;
    case NPU_DPU_EW_MUL:
        v |= DPU_EW_CFG_EW_OP_TYPE(NPU_EW_OP_TYPE_MUL) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1);
        break;
    default: break;
    }
    return v;
}

/* Checks a stage against the strict-mode envelope. */
static enum npu_status
check_stage(struct npu_stream *s, const struct npu_dpu_stage *st, const char *name)
{
    if (st->alu == NPU_DPU_SRC_MEM && st->mul == NPU_DPU_SRC_MEM)
        return refuse(s,
                      "DPU %s: ALU and MUL operands both from memory (one operand kind per "
                      "stage, facts §6.13)",
                      name);
    if (st->mul == NPU_DPU_SRC_REG && !isfinite(npu_fp16_to_fp32(npu_fp32_to_fp16(st->mul_value))))
        return refuse(s, "DPU %s: MUL operand %g is not finite in fp16", name, st->mul_value);
    if (st->relux && !st->relu)
        return refuse(s, "DPU %s: ReLU-X needs ReLU", name);
    return NPU_OK;
}

/* A map the DPU writes or ERDMA reads must not interleave surfaces with lines (the
 * simulator refuses overlapping surfaces, facts §2.10). */
static enum npu_status
check_map(struct npu_stream *s, const struct npu_dpu_map *m, const char *what)
{
    if (!m->w || !m->h || !m->c)
        return refuse(s, "%s: empty %ux%ux%u map", what, m->c, m->h, m->w);
    uint32_t line = npu_dpu_map_line(m), surf = npu_dpu_map_surf(m);
    if (line < m->w)
        return refuse(s, "%s: line of %u atoms is shorter than the width %u", what, line, m->w);
    if (npu_dpu_map_c1(m) > 1 && (uint64_t)surf < (uint64_t)line * m->h)
        return refuse(s,
                      "%s: surfaces of %u atoms interleave with %u lines of %u atoms (not "
                      "verified, facts §2.10)",
                      what, surf, m->h, line);
    if (m->ref.offset & 15u)
        return refuse(s, "%s: offset 0x%x is not 16-byte aligned", what, m->ref.offset);
    if (m->w - 1 > DPU_DATA_CUBE_WIDTH_WIDTH__MAX || m->h - 1 > DPU_DATA_CUBE_HEIGHT_HEIGHT__MAX ||
        m->c - 1 > DPU_DATA_CUBE_CHANNEL_CHANNEL__MAX ||
        line - m->w > DPU_DATA_CUBE_NOTCH_ADDR_NOTCH_ADDR_0__MAX ||
        surf > DPU_DST_SURF_STRIDE_DST_SURF_STRIDE__MAX)
        return refuse(s,
                      "%s: %ux%ux%u map (line %u, surface %u atoms) exceeds the register "
                      "fields",
                      what, m->c, m->h, m->w, line, surf);
    return NPU_OK;
}

static void
emit_ref(struct npu_stream *s, uint16_t reg, struct npu_dpu_ref r)
{
    npu_emit_reloc(s, reg, r.buffer, r.offset);
}

/*
 * DPU registers of one task. flying: input from MRDMA; otherwise from CORE (conv). The
 * cube is out's w, h, c (c_pad = padded channels, out.c real). size_e: SIZE_E_0..2.
 */
struct dpu_task {
    bool flying;
    bool depthwise;
    unsigned in_prec, out_prec; /* DPU precision codes */
    unsigned proc_prec;         /* PROC_PRECISION when it differs from in_prec (0: in_prec) */
    bool f32tof16;              /* OUT_CVT FP32TOFP16_EN */
    unsigned size_e;
    uint32_t c_pad;
    const struct npu_dpu_map *out;
    const struct npu_dpu_stages *st;
    /* transpose copy (NOTES S17) */
    bool tp;
    uint32_t tp_grid_w, tp_grid_h, tp_notch, tp_chan_stride, tp_c, tp_w, tp_h;
    struct npu_dpu_ref tp_dst;
};

static void
emit_dpu(struct npu_stream *s, const struct dpu_task *t)
{
    const struct npu_dpu_map *o = t->out;
    const struct npu_dpu_stages *st = t->st;
    uint32_t w = t->tp ? t->tp_w : o->w, h = t->tp ? t->tp_h : o->h;
    uint32_t c = t->tp ? t->tp_c : t->c_pad, c_real = t->tp ? t->tp_c : o->c;
    uint32_t line = t->tp ? 0 : npu_dpu_map_line(o), surf = t->tp ? 0 : npu_dpu_map_surf(o);
    uint32_t notch = t->tp ? t->tp_notch : line - w;
    const struct npu_dpu_lut *lut = st->ew.lut;

    npu_emit(s, REG_DPU_S_POINTER, s_pointer);
    uint32_t fm = DPU_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                  DPU_FEATURE_MODE_CFG_OUTPUT_MODE(NPU_DPU_OUTPUT_MODE_MEMORY) |
                  DPU_FEATURE_MODE_CFG_FLYING_MODE(t->flying) |
                  DPU_FEATURE_MODE_CFG_CONV_MODE(t->depthwise ? NPU_CONV_MODE_DEPTHWISE : 0);
    npu_emit(s, REG_DPU_FEATURE_MODE_CFG, fm);
    npu_emit(s, REG_DPU_DATA_FORMAT,
             DPU_DATA_FORMAT_OUT_PRECISION(t->out_prec) | DPU_DATA_FORMAT_IN_PRECISION(t->in_prec) |
                 DPU_DATA_FORMAT_PROC_PRECISION(t->proc_prec ? t->proc_prec : t->in_prec));
    npu_emit(s, REG_DPU_OFFSET_PEND, 0);
    emit_ref(s, REG_DPU_DST_BASE_ADDR, t->tp ? t->tp_dst : o->ref);
    npu_emit(s, REG_DPU_DST_SURF_STRIDE,
             DPU_DST_SURF_STRIDE_DST_SURF_STRIDE(t->tp ? t->tp_chan_stride : surf));
    npu_emit(s, REG_DPU_DATA_CUBE_WIDTH, DPU_DATA_CUBE_WIDTH_WIDTH(w - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_HEIGHT, DPU_DATA_CUBE_HEIGHT_HEIGHT(h - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_NOTCH_ADDR,
             DPU_DATA_CUBE_NOTCH_ADDR_NOTCH_ADDR_0(notch) |
                 DPU_DATA_CUBE_NOTCH_ADDR_NOTCH_ADDR_1(notch));
    npu_emit(s, REG_DPU_DATA_CUBE_CHANNEL,
             DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(c_real - 1) | DPU_DATA_CUBE_CHANNEL_CHANNEL(c - 1));

    npu_emit(s, REG_DPU_BS_CFG, stage_cfg(&st->bs));
    npu_emit(s, REG_DPU_BS_ALU_CFG, st->bs.alu == NPU_DPU_SRC_REG ? f32_bits(st->bs.alu_value) : 0);
    npu_emit(s, REG_DPU_BS_MUL_CFG,
             (st->bs.mul == NPU_DPU_SRC_REG
                  ? DPU_BS_MUL_CFG_BS_MUL_OPERAND(npu_fp32_to_fp16(st->bs.mul_value))
                  : 0) |
                 DPU_BS_MUL_CFG_BS_MUL_SRC(st->bs.mul == NPU_DPU_SRC_MEM));
    npu_emit(s, REG_DPU_BS_RELUX_CMP_VALUE, st->bs.relux ? f32_bits(st->bs.relux_value) : 0);
    if (t->tp)
        /* RKNN's layout copies: 0x080007fe = TP_ORG_EN, SIZE_E 7/7/7, OD_BYPASS (S17) */
        npu_emit(s, REG_DPU_BS_OW_CFG,
                 DPU_BS_OW_CFG_TP_ORG_EN(1) | DPU_BS_OW_CFG_SIZE_E_2(7) |
                     DPU_BS_OW_CFG_SIZE_E_1(7) | DPU_BS_OW_CFG_SIZE_E_0(7) |
                     DPU_BS_OW_CFG_OD_BYPASS(1));
    else
        npu_emit(s, REG_DPU_BS_OW_CFG,
                 DPU_BS_OW_CFG_SIZE_E_2(t->size_e) | DPU_BS_OW_CFG_SIZE_E_1(t->size_e) |
                     DPU_BS_OW_CFG_SIZE_E_0(t->size_e) | DPU_BS_OW_CFG_OD_BYPASS(1));
    npu_emit(s, REG_DPU_BS_OW_OP, 0);
    if (t->tp) {
        npu_emit(s, REG_DPU_WDMA_SIZE_0,
                 DPU_WDMA_SIZE_0_TP_PRECISION(NPU_TP_PRECISION_16BIT) |
                     DPU_WDMA_SIZE_0_SIZE_C_WDMA((c + 7) / 8 - 1) |
                     DPU_WDMA_SIZE_0_CHANNEL_WDMA(c - 1));
        npu_emit(s, REG_DPU_WDMA_SIZE_1,
                 DPU_WDMA_SIZE_1_HEIGHT_WDMA(t->tp_grid_h - 1) |
                     DPU_WDMA_SIZE_1_WIDTH_WDMA(t->tp_grid_w - 1));
    } else {
        npu_emit(s, REG_DPU_WDMA_SIZE_0, DPU_WDMA_SIZE_0_CHANNEL_WDMA(c - 1));
        npu_emit(s, REG_DPU_WDMA_SIZE_1,
                 DPU_WDMA_SIZE_1_HEIGHT_WDMA(h - 1) | DPU_WDMA_SIZE_1_WIDTH_WDMA(w - 1));
    }
    npu_emit(s, REG_DPU_BN_CFG, stage_cfg(&st->bn));
    npu_emit(s, REG_DPU_BN_ALU_CFG, st->bn.alu == NPU_DPU_SRC_REG ? f32_bits(st->bn.alu_value) : 0);
    npu_emit(s, REG_DPU_BN_MUL_CFG,
             (st->bn.mul == NPU_DPU_SRC_REG
                  ? DPU_BN_MUL_CFG_BN_MUL_OPERAND(npu_fp32_to_fp16(st->bn.mul_value))
                  : 0) |
                 DPU_BN_MUL_CFG_BN_MUL_SRC(st->bn.mul == NPU_DPU_SRC_MEM));
    npu_emit(s, REG_DPU_BN_RELUX_CMP_VALUE, st->bn.relux ? f32_bits(st->bn.relux_value) : 0);
    npu_emit(s, REG_DPU_EW_CFG, ew_cfg(&st->ew));
    npu_emit(s, REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CVT_SCALE_VALUE, DPU_EW_CVT_SCALE_VALUE_EW_OP_CVT_SCALE(1));
    npu_emit(s, REG_DPU_EW_RELUX_CMP_VALUE, st->ew.relux ? f32_bits(st->ew.relux_value) : 0);
    /* OUT_CVT: identity, or RKNN's tanh offset / MINUS_EXP after a LUT (NOTES S19) */
    npu_emit(s, REG_DPU_OUT_CVT_OFFSET, lut ? (uint32_t)lut->out_offset : 0);
    npu_emit(s, REG_DPU_OUT_CVT_SCALE,
             DPU_OUT_CVT_SCALE_FP32TOFP16_EN(t->f32tof16) | DPU_OUT_CVT_SCALE_OUT_CVT_SCALE(1));
    npu_emit(s, REG_DPU_OUT_CVT_SHIFT, lut ? DPU_OUT_CVT_SHIFT_MINUS_EXP(lut->minus_exp) : 0);
    for (unsigned i = 0; i < REG_DPU_EW_OP_VALUE__COUNT; i++)
        npu_emit(s, REG_DPU_EW_OP_VALUE(i), 0);
    npu_emit(s, REG_DPU_SURFACE_ADD,
             DPU_SURFACE_ADD_SURF_ADD(t->tp ? 8 * t->tp_chan_stride : surf * (t->size_e + 1)));
    npu_emit(s, REG_DPU_UNDOC_40C4, 0);
    npu_emit(s, REG_DPU_LUT_ACCESS_CFG, 0);
    npu_emit(s, REG_DPU_LUT_ACCESS_DATA, 0);
    npu_dpu_emit_lut_regs(s, lut);
}

/*
 * DPU_RDMA registers. in: the flying input (NULL after a conv). cube: w, h, c of the DPU.
 */
static void
emit_rdma2(struct npu_stream *s, const struct npu_dpu_map *in, uint32_t w, uint32_t h, uint32_t c,
           unsigned prec, unsigned proc, bool fp32_internal, const struct npu_dpu_stages *st)
{
    const struct npu_dpu_ew *ew = &st->ew;
    bool ew_mem = ew->op != NPU_DPU_EW_NONE;
    uint32_t ew_notch = ew_mem ? npu_dpu_map_line(&ew->operand) - w : 0;

    npu_emit(s, REG_DPU_RDMA_S_POINTER, s_pointer);
    npu_emit(s, REG_DPU_RDMA_DATA_CUBE_WIDTH, DPU_RDMA_DATA_CUBE_WIDTH_WIDTH(w - 1));
    npu_emit(s, REG_DPU_RDMA_DATA_CUBE_HEIGHT,
             DPU_RDMA_DATA_CUBE_HEIGHT_HEIGHT(h - 1) |
                 DPU_RDMA_DATA_CUBE_HEIGHT_EW_LINE_NOTCH_ADDR(ew_notch));
    npu_emit(s, REG_DPU_RDMA_DATA_CUBE_CHANNEL, DPU_RDMA_DATA_CUBE_CHANNEL_CHANNEL(c - 1));
    if (in)
        emit_ref(s, REG_DPU_RDMA_SRC_BASE_ADDR, in->ref);
    else
        npu_emit(s, REG_DPU_RDMA_SRC_BASE_ADDR, 0);
    uint32_t bs_use = stage_data_use(&st->bs), bn_use = stage_data_use(&st->bn);
    npu_emit(s, REG_DPU_RDMA_BRDMA_CFG, DPU_RDMA_BRDMA_CFG_BRDMA_DATA_USE(bs_use));
    if (bs_use)
        emit_ref(s, REG_DPU_RDMA_BS_BASE_ADDR,
                 st->bs.alu == NPU_DPU_SRC_MEM ? st->bs.alu_mem : st->bs.mul_mem);
    else
        npu_emit(s, REG_DPU_RDMA_BS_BASE_ADDR, 0);
    npu_emit(s, REG_DPU_RDMA_NRDMA_CFG, DPU_RDMA_NRDMA_CFG_NRDMA_DATA_USE(bn_use));
    if (bn_use)
        emit_ref(s, REG_DPU_RDMA_BN_BASE_ADDR,
                 st->bn.alu == NPU_DPU_SRC_MEM ? st->bn.alu_mem : st->bn.mul_mem);
    else
        npu_emit(s, REG_DPU_RDMA_BN_BASE_ADDR, 0);
    if (ew_mem) {
        npu_emit(s, REG_DPU_RDMA_ERDMA_CFG,
                 DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                     DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE(type_size_code(ew->operand.type)));
        emit_ref(s, REG_DPU_RDMA_EW_BASE_ADDR, ew->operand.ref);
        npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE,
                 DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE(npu_dpu_map_surf(&ew->operand)));
    } else {
        npu_emit(s, REG_DPU_RDMA_ERDMA_CFG, DPU_RDMA_ERDMA_CFG_ERDMA_DISABLE(1));
        npu_emit(s, REG_DPU_RDMA_EW_BASE_ADDR, 0);
        npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, 0);
    }
    npu_emit(s, REG_DPU_RDMA_FEATURE_MODE_CFG,
             DPU_RDMA_FEATURE_MODE_CFG_IN_PRECISION(prec) |
                 DPU_RDMA_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 DPU_RDMA_FEATURE_MODE_CFG_PROC_PRECISION(proc) |
                 DPU_RDMA_FEATURE_MODE_CFG_MRDMA_FP16TOFP32_EN(fp32_internal) |
                 DPU_RDMA_FEATURE_MODE_CFG_MRDMA_DISABLE(in == NULL) |
                 DPU_RDMA_FEATURE_MODE_CFG_FLYING_MODE(in != NULL));
    /* MRDMA strides (facts §2.6 note, RKNN's layout copies): line y at y * (w + LN) atoms,
     * next surface at (h - 1)(w + LN) + w + SN atoms; SN may be negative. */
    uint32_t ln = 0;
    int64_t sn = 0;
    if (in) {
        ln = npu_dpu_map_line(in) - w;
        sn = (int64_t)npu_dpu_map_surf(in) - (int64_t)(h - 1) * npu_dpu_map_line(in) - w;
    }
    npu_emit(s, REG_DPU_RDMA_SRC_DMA_CFG, DPU_RDMA_SRC_DMA_CFG_LINE_NOTCH_ADDR(ln));
    npu_emit(s, REG_DPU_RDMA_SURF_NOTCH, DPU_RDMA_SURF_NOTCH_SURF_NOTCH_ADDR((uint32_t)sn));
    npu_emit(s, REG_DPU_RDMA_PAD_CFG, 0);
    npu_emit(s, REG_DPU_RDMA_WEIGHT,
             DPU_RDMA_WEIGHT_E_WEIGHT(1) | DPU_RDMA_WEIGHT_N_WEIGHT(1) |
                 DPU_RDMA_WEIGHT_B_WEIGHT(1) | DPU_RDMA_WEIGHT_M_WEIGHT(1));
    npu_emit(s, REG_DPU_RDMA_EW_SURF_NOTCH, 0);
}

static void
emit_rdma(struct npu_stream *s, const struct npu_dpu_map *in, uint32_t w, uint32_t h, uint32_t c,
          unsigned prec, bool fp32_internal, const struct npu_dpu_stages *st)
{
    emit_rdma2(s, in, w, h, c, prec, prec, fp32_internal, st);
}

static enum npu_status
check_stages(struct npu_stream *s, const struct npu_dpu_stages *st, uint32_t w, uint32_t h,
             uint32_t c)
{
    enum npu_status r;
    if ((r = check_stage(s, &st->bs, "BS")) || (r = check_stage(s, &st->bn, "BN")))
        return r;
    const struct npu_dpu_ew *ew = &st->ew;
    if (ew->op != NPU_DPU_EW_NONE) {
        const struct npu_dpu_map *e = &ew->operand;
        if (e->type != NPU_DPU_FP16 && e->type != NPU_DPU_FP32)
            return refuse(s, "DPU EW: operand must be fp16 or fp32");
        if (e->w != w || e->h != h || e->c < c)
            return refuse(s, "DPU EW: operand %ux%ux%u does not cover the %ux%ux%u cube", e->c,
                          e->h, e->w, c, h, w);
        struct npu_dpu_map tmp = *e;
        tmp.c = c;
        if ((r = check_map(s, &tmp, "DPU EW operand")))
            return r;
        if (npu_dpu_map_line(e) - w > DPU_RDMA_DATA_CUBE_HEIGHT_EW_LINE_NOTCH_ADDR__MAX)
            return refuse(s, "DPU EW: operand line notch too large");
    }
    if (ew->relux && !ew->relu)
        return refuse(s, "DPU EW: ReLU-X needs ReLU");
    if (ew->lut) {
        const struct npu_dpu_lut *l = ew->lut;
        if (l->le_sel > 20 || l->lo_sel > 20 ||
            (int64_t)l->le_start + (512ll << l->le_sel) > INT32_MAX ||
            (int64_t)l->lo_start + (512ll << l->lo_sel) > INT32_MAX || l->minus_exp > 255)
            return refuse(s, "DPU LUT: table range exceeds the register fields");
    }
    return NPU_OK;
}

/* Bytes ERDMA and BRDMA/NRDMA read for a task (the simulator's accounting). */
static uint64_t
stage_rdma_bytes(const struct npu_dpu_stages *st, uint32_t c)
{
    uint64_t b = 0;
    if (stage_data_use(&st->bs))
        b += 4ull * c;
    if (stage_data_use(&st->bn))
        b += 4ull * c;
    if (st->ew.op != NPU_DPU_EW_NONE) {
        struct npu_dpu_map e = st->ew.operand;
        e.c = c;
        b += npu_dpu_map_extent(&e);
    }
    return b;
}

static bool
needs_rdma(const struct npu_dpu_stages *st)
{
    return stage_data_use(&st->bs) || stage_data_use(&st->bn) || st->ew.op != NPU_DPU_EW_NONE;
}

/* ----------------------------------------------------------- flying pass */

enum npu_status
npu_dpu_emit_pass(struct npu_stream *s, const struct npu_dpu_pass *p, struct npu_dpu_cost *cost)
{
    enum npu_status r;
    const struct npu_dpu_map *in = &p->in;
    struct npu_dpu_map out = p->out;

    /* fp16 -> int8 (quantise) and int8 -> fp16 (dequantise) through an fp16 PROC stage:
     * TRM-inferred precision combinations (facts §2.9; ledger level T), BS / BN only */
    bool quant = in->type == NPU_DPU_FP16 && out.type == NPU_DPU_INT8;
    bool dequant = in->type == NPU_DPU_INT8 && out.type == NPU_DPU_FP16;
    if (!(in->type == NPU_DPU_FP16 && out.type == NPU_DPU_FP16) && !quant && !dequant)
        return refuse(s, "DPU pass: flying mode runs fp16 -> fp16, fp16 -> int8 or int8 -> fp16 "
                         "only (facts §2.9, §5.5)");
    if ((quant || dequant) && (p->st.ew.op != NPU_DPU_EW_NONE || p->st.ew.lut || p->st.ew.relu))
        return refuse(s, "DPU pass: an int8 conversion uses the BS / BN stages only");
    if (out.w != in->w || out.h != in->h || out.c != in->c)
        return refuse(s, "DPU pass: output %ux%ux%u differs from the input %ux%ux%u", out.c, out.h,
                      out.w, in->c, in->h, in->w);
    if (!in->w || !in->h || !in->c || (in->ref.offset & 15u))
        return refuse(s, "DPU pass: empty or misaligned input");
    if ((r = check_map(s, &out, "DPU pass output")) ||
        (r = check_stages(s, &p->st, in->w, in->h, in->c)))
        return r;
    int64_t ln = (int64_t)npu_dpu_map_line(in) - in->w;
    if (ln < 0 || ln > DPU_RDMA_SRC_DMA_CFG_LINE_NOTCH_ADDR__MAX)
        return refuse(s, "DPU pass: input line notch %lld out of range", (long long)ln);

    /* RKNN's fp16 templates compute in fp32 (MRDMA_FP16TOFP32 + FP32TOFP16), except DIV,
     * which stays in fp16 (NOTES S18); the simulator accepts both when they match. */
    bool fp32_internal = p->st.ew.op != NPU_DPU_EW_DIV;
    unsigned in_prec = dequant ? NPU_PRECISION_INT8 : NPU_PRECISION_FP16;
    /* quantise: fp16 read widened to fp32 (MRDMA_FP16TOFP32), int8 written (no FP32TOFP16);
     * dequantise: int8 read, fp32 inside, fp16 written (FP32TOFP16) */
    struct dpu_task t = {.flying = true,
                         .in_prec = in_prec,
                         .out_prec = quant ? NPU_PRECISION_INT8 : NPU_PRECISION_FP16,
                         .proc_prec = NPU_PRECISION_FP16,
                         .f32tof16 = quant     ? false
                                     : dequant ? true
                                               : fp32_internal,
                         .size_e = 0,
                         .c_pad = out.c,
                         .out = &out,
                         .st = &p->st};
    if (dequant)
        fp32_internal = false;
    if ((r = npu_stream_begin_task(s)))
        return r;
    emit_dpu(s, &t);
    emit_rdma2(s, in, in->w, in->h, in->c, in_prec, NPU_PRECISION_FP16, fp32_internal, &p->st);
    if ((r = npu_stream_end_task(s, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA)))
        return r;
    uint64_t c1 = npu_dpu_map_c1(in), c1o = npu_dpu_map_c1(&out);
    uint64_t bytes = (c1 + c1o) * in->w * in->h * 16 + stage_rdma_bytes(&p->st, in->c);
    npu_dpu_cost_add(cost, s, flying_s((double)in->w * in->h * in->c), bytes, 0);
    return NPU_OK;
}

/* --------------------------------------------------------------- transpose */

enum npu_status
npu_dpu_emit_tp(struct npu_stream *s, const struct npu_dpu_tp *t, struct npu_dpu_cost *cost)
{
    enum npu_status r;
    const struct npu_dpu_map *in = &t->in;
    uint64_t pixels = (uint64_t)in->w * in->h;
    if (in->type != NPU_DPU_FP16)
        return refuse(s, "DPU transpose: 16-bit data only (NOTES S17)");
    if (!in->w || !in->h || !in->c || pixels % 8 || !t->grid_w || (pixels / 8) % t->grid_w ||
        t->grid_line < t->grid_w)
        return refuse(s,
                      "DPU transpose: %llu pixels must be a multiple of 8 and fill whole "
                      "grid rows of %u atoms (line %u)",
                      (unsigned long long)pixels, t->grid_w, t->grid_line);
    uint32_t grid_h = (uint32_t)(pixels / 8 / t->grid_w);
    if (grid_h - 1 > DPU_WDMA_SIZE_1_HEIGHT_WDMA__MAX ||
        t->grid_w - 1 > DPU_WDMA_SIZE_1_WIDTH_WDMA__MAX ||
        t->grid_line - t->grid_w > DPU_DATA_CUBE_NOTCH_ADDR_NOTCH_ADDR_0__MAX ||
        8ull * t->chan_stride > DPU_SURFACE_ADD_SURF_ADD__MAX || in->c - 1 > 4095 ||
        (t->dst.offset & 15u))
        return refuse(s,
                      "DPU transpose: grid %ux%u (line %u), channel stride %u exceed the "
                      "register fields",
                      t->grid_w, grid_h, t->grid_line, t->chan_stride);
    struct npu_dpu_stages none;
    memset(&none, 0, sizeof(none));
    struct npu_dpu_map dummy = *in;
    /* RKNN copies 16-bit data as int16 (DATA_FORMAT 0x24000001, NOTES S17). */
    struct dpu_task d = {.flying = true,
                         .in_prec = NPU_PRECISION_INT16,
                         .out_prec = NPU_PRECISION_INT16,
                         .f32tof16 = false,
                         .out = &dummy,
                         .st = &none,
                         .tp = true,
                         .tp_grid_w = t->grid_w,
                         .tp_grid_h = grid_h,
                         .tp_notch = t->grid_line - t->grid_w,
                         .tp_chan_stride = t->chan_stride,
                         .tp_c = in->c,
                         .tp_w = in->w,
                         .tp_h = in->h,
                         .tp_dst = t->dst};
    if ((r = npu_stream_begin_task(s)))
        return r;
    emit_dpu(s, &d);
    emit_rdma(s, in, in->w, in->h, in->c, NPU_PRECISION_INT16, false, &none);
    if ((r = npu_stream_end_task(s, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA)))
        return r;
    uint64_t c1 = npu_dpu_map_c1(in);
    uint64_t out_bytes = (uint64_t)((in->c + 7) / 8) * in->w * in->h * 16;
    npu_dpu_cost_add(cost, s, flying_s((double)pixels * in->c), c1 * pixels * 16 + out_bytes, 0);
    return NPU_OK;
}

/* -------------------------------------------------------------- LUT upload */

/* RKNN's upload carrier (NOTES S19): a 1x1x16 int8 flying pass with every stage bypassed
 * (DATA_FORMAT 0) from scratch to scratch + 16; the caller ends the task. */
static enum npu_status
emit_dummy(struct npu_stream *s, struct npu_dpu_ref scratch)
{
    enum npu_status r;
    if (scratch.offset & 15u)
        return refuse(s, "LUT task: scratch offset 0x%x is not 16-byte aligned", scratch.offset);
    struct npu_dpu_ref dst = {scratch.buffer, scratch.offset + 16};
    struct npu_dpu_map in = npu_dpu_map_packed(scratch, NPU_DPU_INT8, 16, 1, 1);
    struct npu_dpu_map out = npu_dpu_map_packed(dst, NPU_DPU_INT8, 16, 1, 1);
    struct npu_dpu_stages none;
    memset(&none, 0, sizeof(none));
    struct dpu_task t = {.flying = true,
                         .in_prec = NPU_PRECISION_INT8,
                         .out_prec = NPU_PRECISION_INT8,
                         .f32tof16 = false,
                         .size_e = 0,
                         .c_pad = 16,
                         .out = &out,
                         .st = &none};
    if ((r = npu_stream_begin_task(s)))
        return r;
    emit_dpu(s, &t);
    emit_rdma(s, &in, 1, 1, 16, NPU_PRECISION_INT8, false, &none);
    return npu_stream_status(s);
}

enum npu_status
npu_dpu_emit_guard(struct npu_stream *s, struct npu_dpu_ref scratch, struct npu_dpu_cost *cost)
{
    enum npu_status r;
    if ((r = emit_dummy(s, scratch)) ||
        (r = npu_stream_end_task(s, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA)))
        return r;
    npu_dpu_cost_add(cost, s, cycle_s(), 32, 0);
    return NPU_OK;
}

/* The DPU LUT registers of a task: the table's ranges when lut is set (the table itself
 * is uploaded by npu_dpu_emit_lut_upload), else all zero. */
void
npu_dpu_emit_lut_regs(struct npu_stream *s, const struct npu_dpu_lut *lut)
{
    if (lut) {
        /* RKNN's tanh configuration, the only one strict mode accepts: LO_LE_MUX 2,
         * OFLOW_PRIORITY 1 (LO above both ranges), HYBRID_PRIORITY 1 (LO on overlap). */
        npu_emit(s, REG_DPU_LUT_CFG,
                 DPU_LUT_CFG_LUT_LO_LE_MUX(2) | DPU_LUT_CFG_LUT_OFLOW_PRIORITY(1) |
                     DPU_LUT_CFG_LUT_HYBRID_PRIORITY(1));
        npu_emit(s, REG_DPU_LUT_INFO,
                 DPU_LUT_INFO_LUT_LE_INDEX_SELECT(lut->le_sel) |
                     DPU_LUT_INFO_LUT_LO_INDEX_SELECT(lut->lo_sel));
        npu_emit(s, REG_DPU_LUT_LE_START, (uint32_t)lut->le_start);
        npu_emit(s, REG_DPU_LUT_LE_END, (uint32_t)(lut->le_start + (512 << lut->le_sel)));
        npu_emit(s, REG_DPU_LUT_LO_START, (uint32_t)lut->lo_start);
        npu_emit(s, REG_DPU_LUT_LO_END, (uint32_t)(lut->lo_start + (512 << lut->lo_sel)));
    } else {
        npu_emit(s, REG_DPU_LUT_CFG, 0);
        npu_emit(s, REG_DPU_LUT_INFO, 0);
        npu_emit(s, REG_DPU_LUT_LE_START, 0);
        npu_emit(s, REG_DPU_LUT_LE_END, 0);
        npu_emit(s, REG_DPU_LUT_LO_START, 0);
        npu_emit(s, REG_DPU_LUT_LO_END, 0);
    }
    npu_emit(s, REG_DPU_LUT_LE_SLOPE_SCALE, 0);
    npu_emit(s, REG_DPU_LUT_LE_SLOPE_SHIFT, 0);
    npu_emit(s, REG_DPU_LUT_LO_SLOPE_SCALE, 0);
    npu_emit(s, REG_DPU_LUT_LO_SLOPE_SHIFT, 0);
}

enum npu_status
npu_dpu_emit_lut_upload(struct npu_stream *s, const struct npu_dpu_lut *lut,
                        struct npu_dpu_ref scratch, struct npu_dpu_cost *cost)
{
    enum npu_status r;
    if ((r = emit_dummy(s, scratch)))
        return r;
    npu_emit(s, REG_DPU_LUT_ACCESS_CFG,
             DPU_LUT_ACCESS_CFG_LUT_ACCESS_TYPE(NPU_LUT_ACCESS_WRITE) |
                 DPU_LUT_ACCESS_CFG_LUT_TABLE_ID(NPU_LUT_TABLE_LE));
    /* RKNN writes the entries sign-extended to 32 bits (accepted, NOTES S19). The first
     * write of each table goes through npu_emit (which checks the register), the other 512
     * are the same register: packed here once, the qwords npu_emit would push (an upload
     * is 1,026 writes, and dry lowerings emit it for every LUT node they predict). */
    uint16_t tgt = npu_target_for_offset(REG_DPU_LUT_ACCESS_DATA);
    uint64_t q[512];
    npu_emit(s, REG_DPU_LUT_ACCESS_DATA, (uint32_t)(int32_t)lut->le[0]);
    for (unsigned i = 1; i < 513; i++)
        q[i - 1] = npu_regcmd_pack(tgt, REG_DPU_LUT_ACCESS_DATA, (uint32_t)(int32_t)lut->le[i]);
    npu_emit_raw_n(s, q, 512);
    npu_emit(s, REG_DPU_LUT_ACCESS_CFG,
             DPU_LUT_ACCESS_CFG_LUT_ACCESS_TYPE(NPU_LUT_ACCESS_WRITE) |
                 DPU_LUT_ACCESS_CFG_LUT_TABLE_ID(NPU_LUT_TABLE_LO));
    npu_emit(s, REG_DPU_LUT_ACCESS_DATA, (uint32_t)(int32_t)lut->lo[0]);
    for (unsigned i = 1; i < 513; i++)
        q[i - 1] = npu_regcmd_pack(tgt, REG_DPU_LUT_ACCESS_DATA, (uint32_t)(int32_t)lut->lo[i]);
    npu_emit_raw_n(s, q, 512);
    if ((r = npu_stream_end_task(s, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA)))
        return r;
    npu_dpu_cost_add(cost, s, cycle_s(), 32, 0);
    return NPU_OK;
}

/* --------------------------------------------------------------- pooling */

enum npu_status
npu_dpu_emit_pool(struct npu_stream *s, const struct npu_dpu_pool *p, struct npu_dpu_cost *cost)
{
    enum npu_status r;
    const struct npu_dpu_map *in = &p->in, *out = &p->out;
    if (in->type != NPU_DPU_FP16 || out->type != NPU_DPU_FP16)
        return refuse(s, "PPU: fp16 maps only");
    if (p->op != NPU_DPU_POOL_MAX && p->op != NPU_DPU_POOL_MIN)
        return refuse(s, "PPU: only max and min pooling (fp16 average pooling: RECIP format "
                         "open, facts §6.6)");
    if (!p->kh || !p->kw || p->kh > 16 || p->kw > 16 || !p->sy || !p->sx || p->sy > 16 ||
        p->sx > 16 || p->pad_top > 7 || p->pad_left > 7 || p->pad_bottom > 7 || p->pad_right > 7)
        return refuse(s,
                      "PPU: kernel %ux%u stride %ux%u pads %u/%u/%u/%u outside 1..16 / 0..7 "
                      "(facts §5.4)",
                      p->kh, p->kw, p->sy, p->sx, p->pad_top, p->pad_left, p->pad_bottom,
                      p->pad_right);
    uint32_t wp = in->w + p->pad_left + p->pad_right, hp = in->h + p->pad_top + p->pad_bottom;
    if (wp < p->kw || hp < p->kh || out->w != (wp - p->kw) / p->sx + 1 ||
        out->h != (hp - p->kh) / p->sy + 1 || out->c != in->c)
        return refuse(s, "PPU: output %ux%ux%u does not match (in + pads - k) / stride + 1", out->c,
                      out->h, out->w);
    if (npu_dpu_map_line(out) != out->w)
        return refuse(s, "PPU: the output lines are packed (line = width)");
    if ((r = check_map(s, out, "PPU output")))
        return r;
    if (in->ref.offset & 15u)
        return refuse(s, "PPU: input offset not 16-byte aligned");
    uint32_t iline = npu_dpu_map_line(in), isurf = npu_dpu_map_surf(in);
    if (iline < in->w || (npu_dpu_map_c1(in) > 1 && (uint64_t)isurf < (uint64_t)iline * in->h))
        return refuse(s, "PPU: input strides overlap (facts §2.7)");
    if (in->w - 1 > PPU_DATA_CUBE_IN_WIDTH_CUBE_IN_WIDTH__MAX ||
        in->h - 1 > PPU_DATA_CUBE_IN_HEIGHT_CUBE_IN_HEIGHT__MAX ||
        in->c - 1 > PPU_DATA_CUBE_IN_CHANNEL_CUBE_IN_CHANNEL__MAX)
        return refuse(s, "PPU: input exceeds the register fields");
    uint32_t osurf = npu_dpu_map_surf(out);

    if ((r = npu_stream_begin_task(s)))
        return r;
    npu_emit(s, REG_PPU_S_POINTER, s_pointer);
    npu_emit(s, REG_PPU_RDMA_S_POINTER, s_pointer);
    npu_emit(s, REG_PPU_DATA_CUBE_IN_WIDTH, PPU_DATA_CUBE_IN_WIDTH_CUBE_IN_WIDTH(in->w - 1));
    npu_emit(s, REG_PPU_DATA_CUBE_IN_HEIGHT, PPU_DATA_CUBE_IN_HEIGHT_CUBE_IN_HEIGHT(in->h - 1));
    npu_emit(s, REG_PPU_DATA_CUBE_IN_CHANNEL, PPU_DATA_CUBE_IN_CHANNEL_CUBE_IN_CHANNEL(in->c - 1));
    npu_emit(s, REG_PPU_DATA_CUBE_OUT_WIDTH, PPU_DATA_CUBE_OUT_WIDTH_CUBE_OUT_WIDTH(out->w - 1));
    npu_emit(s, REG_PPU_DATA_CUBE_OUT_HEIGHT, PPU_DATA_CUBE_OUT_HEIGHT_CUBE_OUT_HEIGHT(out->h - 1));
    npu_emit(s, REG_PPU_DATA_CUBE_OUT_CHANNEL,
             PPU_DATA_CUBE_OUT_CHANNEL_CUBE_OUT_CHANNEL(out->c - 1));
    npu_emit(s, REG_PPU_OPERATION_MODE_CFG,
             PPU_OPERATION_MODE_CFG_POOLING_METHOD(
                 p->op == NPU_DPU_POOL_MAX ? NPU_POOLING_METHOD_MAX : NPU_POOLING_METHOD_MIN) |
                 PPU_OPERATION_MODE_CFG_FLYING_MODE(1));
    npu_emit(s, REG_PPU_POOLING_KERNEL_CFG,
             PPU_POOLING_KERNEL_CFG_KERNEL_WIDTH(p->kw - 1) |
                 PPU_POOLING_KERNEL_CFG_KERNEL_HEIGHT(p->kh - 1) |
                 PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_WIDTH(p->sx - 1) |
                 PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_HEIGHT(p->sy - 1));
    npu_emit(s, REG_PPU_RECIP_KERNEL_WIDTH, 0);
    npu_emit(s, REG_PPU_RECIP_KERNEL_HEIGHT, 0);
    npu_emit(s, REG_PPU_POOLING_PADDING_CFG,
             PPU_POOLING_PADDING_CFG_PAD_LEFT(p->pad_left) |
                 PPU_POOLING_PADDING_CFG_PAD_TOP(p->pad_top) |
                 PPU_POOLING_PADDING_CFG_PAD_RIGHT(p->pad_right) |
                 PPU_POOLING_PADDING_CFG_PAD_BOTTOM(p->pad_bottom));
    npu_emit(s, REG_PPU_PADDING_VALUE_1_CFG, 0);
    npu_emit(s, REG_PPU_PADDING_VALUE_2_CFG, 0);
    emit_ref(s, REG_PPU_DST_BASE_ADDR, out->ref);
    npu_emit(s, REG_PPU_DST_SURF_STRIDE, PPU_DST_SURF_STRIDE_DST_SURF_STRIDE(osurf));
    /* INDEX_ADD = DST_SURF_STRIDE without INDEX_EN; DPU_FLYIN 0 with PPU_RDMA input. */
    npu_emit(s, REG_PPU_DATA_FORMAT,
             PPU_DATA_FORMAT_INDEX_ADD(osurf) | PPU_DATA_FORMAT_PROC_PRECISION(NPU_PRECISION_FP16));
    npu_emit(s, REG_PPU_MISC_CTRL, PPU_MISC_CTRL_BURST_LEN(NPU_BURST_LEN_BURST16));
    npu_emit(s, REG_PPU_RDMA_CUBE_IN_WIDTH, PPU_RDMA_CUBE_IN_WIDTH_CUBE_IN_WIDTH(in->w - 1));
    npu_emit(s, REG_PPU_RDMA_CUBE_IN_HEIGHT, PPU_RDMA_CUBE_IN_HEIGHT_CUBE_IN_HEIGHT(in->h - 1));
    npu_emit(s, REG_PPU_RDMA_CUBE_IN_CHANNEL, PPU_RDMA_CUBE_IN_CHANNEL_CUBE_IN_CHANNEL(in->c - 1));
    emit_ref(s, REG_PPU_RDMA_SRC_BASE_ADDR, in->ref);
    npu_emit(s, REG_PPU_RDMA_SRC_LINE_STRIDE, PPU_RDMA_SRC_LINE_STRIDE_SRC_LINE_STRIDE(iline));
    npu_emit(s, REG_PPU_RDMA_SRC_SURF_STRIDE, PPU_RDMA_SRC_SURF_STRIDE_SRC_SURF_STRIDE(isurf));
    /* size code 2 = 16-bit (AB's working fp16 pool; facts §6.6, NOTES S8) */
    npu_emit(s, REG_PPU_RDMA_DATA_FORMAT, PPU_RDMA_DATA_FORMAT_IN_PRECISION(NPU_ELEM_SIZE_16BIT));
    if ((r = npu_stream_end_task(s, NPU_OP_EN_PPU | NPU_OP_EN_PPU_RDMA)))
        return r;
    uint64_t c1 = npu_dpu_map_c1(in);
    npu_dpu_cost_add(cost, s, flying_s((double)in->w * in->h * in->c),
                     c1 * in->w * in->h * 16 + c1 * out->w * out->h * 16, 0);
    return NPU_OK;
}

/* ------------------------------------------------------------- convolution */

/* One conv task over output rows [oy0, oy0 + oh). */
static enum npu_status
emit_conv_tile(struct npu_stream *s, const struct npu_dpu_conv *cv,
               const struct npu_weight_layout *wl, uint32_t oy0, uint32_t oh,
               struct npu_dpu_cost *cost)
{
    enum npu_status r;
    const struct npu_dpu_map *in = &cv->in;
    const uint32_t c_pad = NPU_ALIGN(in->c, 8u);
    /* input rows this tile needs; rows above the map are the tile's top padding */
    int64_t iy0 = (int64_t)oy0 * cv->sy - cv->pad_top;
    int64_t iy1 = (int64_t)(oy0 + oh - 1) * cv->sy - cv->pad_top + cv->kh;
    uint32_t pad_top = iy0 < 0 ? (uint32_t)-iy0 : 0;
    if (iy0 < 0)
        iy0 = 0;
    if (iy1 > in->h)
        iy1 = in->h;
    uint32_t ih = (uint32_t)(iy1 - iy0);
    uint32_t entries = (uint32_t)NPU_DIV_ROUND_UP((uint64_t)in->w * c_pad * 2, 64);
    uint32_t data_bank = (uint32_t)NPU_DIV_ROUND_UP((uint64_t)entries * 64 * ih, 32768);
    if (!data_bank)
        data_bank = 1;
    if (data_bank > 11)
        return refuse(s, "conv: a tile of %u input rows does not fit the CBUF", ih);
    const uint32_t out_c2 = npu_dpu_type_c2(cv->out.type);
    const uint32_t k_pad = NPU_ALIGN(cv->kernels, out_c2);
    struct npu_dpu_map out = npu_dpu_map_rows(&cv->out, oy0, oh);
    struct npu_dpu_stages st = cv->st;
    if (st.ew.op != NPU_DPU_EW_NONE)
        st.ew.operand = npu_dpu_map_rows(&cv->st.ew.operand, oy0, oh);
    struct npu_dpu_ref feat = {in->ref.buffer, in->ref.offset + (uint32_t)iy0 * in->w * 16};
    uint32_t surf = npu_dpu_map_surf(in);
    bool fp32_out = cv->out.type == NPU_DPU_FP32;

    if ((r = npu_stream_begin_task(s)))
        return r;
    struct dpu_task t = {.flying = false,
                         .depthwise = cv->depthwise,
                         .in_prec = NPU_PRECISION_FP16,
                         .out_prec = fp32_out ? NPU_PRECISION_FP32 : NPU_PRECISION_FP16,
                         .f32tof16 = !fp32_out,
                         /* facts §2.10: SIZE_E = KG x out bytes / 16 - 1 (fp16 1, fp32 3);
                          * depthwise groups of 32 fp16 channels (partial table) */
                         .size_e = cv->depthwise ? 3 : (fp32_out ? 3 : 1),
                         .c_pad = k_pad,
                         .out = &out,
                         .st = &st};
    npu_emit(s, REG_CNA_CONV_CON1,
             CNA_CONV_CON1_PROC_PRECISION(NPU_CNA_PRECISION_FP16) |
                 CNA_CONV_CON1_IN_PRECISION(NPU_CNA_PRECISION_FP16) |
                 CNA_CONV_CON1_CONV_MODE(cv->depthwise ? NPU_CONV_MODE_DEPTHWISE : 0));
    /* FEATURE_GRAINS: buffering only (NOTES S11); rows of the tile + 1 as MTX */
    npu_emit(s, REG_CNA_CONV_CON2,
             CNA_CONV_CON2_FEATURE_GRAINS(NPU_MIN(ih + 1, CNA_CONV_CON2_FEATURE_GRAINS__MAX)));
    npu_emit(s, REG_CNA_CONV_CON3,
             CNA_CONV_CON3_CONV_X_STRIDE(cv->sx) | CNA_CONV_CON3_CONV_Y_STRIDE(cv->sy));
    npu_emit(s, REG_CNA_DATA_SIZE0,
             CNA_DATA_SIZE0_DATAIN_WIDTH(in->w) | CNA_DATA_SIZE0_DATAIN_HEIGHT(ih));
    npu_emit(s, REG_CNA_DATA_SIZE1,
             CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(in->c - 1) | CNA_DATA_SIZE1_DATAIN_CHANNEL(c_pad));
    npu_emit(s, REG_CNA_DATA_SIZE2, CNA_DATA_SIZE2_DATAOUT_WIDTH(out.w));
    npu_emit(s, REG_CNA_DATA_SIZE3, CNA_DATA_SIZE3_DATAOUT_ATOMICS(out.w * oh));
    npu_emit(s, REG_CNA_WEIGHT_SIZE0, CNA_WEIGHT_SIZE0_WEIGHT_BYTES(wl->total_bytes));
    npu_emit(s, REG_CNA_WEIGHT_SIZE1,
             CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL(wl->bytes_per_kernel));
    npu_emit(s, REG_CNA_WEIGHT_SIZE2,
             CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(cv->kw) | CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(cv->kh) |
                 CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(wl->weight_kernels));
    npu_emit(s, REG_CNA_CBUF_CON0,
             CNA_CBUF_CON0_DATA_REUSE(cv->data_reuse ? 1 : 0) |
                 CNA_CBUF_CON0_WEIGHT_BANK(12 - data_bank) | CNA_CBUF_CON0_DATA_BANK(data_bank));
    npu_emit(s, REG_CNA_CBUF_CON1, CNA_CBUF_CON1_DATA_ENTRIES(entries));
    npu_emit(s, REG_CNA_CVT_CON0,
             CNA_CVT_CON0_DATA_SIGN(1) | CNA_CVT_CON0_CVT_TYPE(NPU_CVT_ORDER_ADD_FIRST) |
                 CNA_CVT_CON0_CVT_BYPASS(1));
    npu_emit(s, REG_CNA_CVT_CON1, CNA_CVT_CON1_CVT_SCALE0(1));
    npu_emit(s, REG_CNA_CVT_CON2, CNA_CVT_CON2_CVT_SCALE1(1));
    npu_emit(s, REG_CNA_CVT_CON3, CNA_CVT_CON3_CVT_SCALE2(1));
    npu_emit(s, REG_CNA_CVT_CON4, CNA_CVT_CON4_CVT_SCALE3(1));
    npu_emit(s, REG_CNA_FC_CON0, 0);
    npu_emit(s, REG_CNA_FC_CON1, 0);
    npu_emit(s, REG_CNA_PAD_CON0,
             CNA_PAD_CON0_PAD_TOP(pad_top) | CNA_PAD_CON0_PAD_LEFT(cv->pad_left));
    emit_ref(s, REG_CNA_FEATURE_DATA_ADDR, feat);
    npu_emit(s, REG_CNA_FC_CON2, 0);
    npu_emit(s, REG_CNA_DMA_CON0,
             CNA_DMA_CON0_WEIGHT_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 CNA_DMA_CON0_DATA_BURST_LEN(NPU_BURST_LEN_BURST16));
    /* Normal-mode strides (facts §2.10): LINE = 4 W, LINE + SURF = the stored surface in
     * pixels (W x H_full), the same in every tile (NOTES S12). */
    npu_emit(s, REG_CNA_DMA_CON1, CNA_DMA_CON1_LINE_STRIDE(4 * in->w));
    npu_emit(s, REG_CNA_DMA_CON2,
             CNA_DMA_CON2_SURF_STRIDE((uint32_t)((int32_t)surf - (int32_t)(4 * in->w))));
    npu_emit(s, REG_CNA_FC_DATA_SIZE0,
             CNA_FC_DATA_SIZE0_DMA_WIDTH(in->w) | CNA_FC_DATA_SIZE0_DMA_HEIGHT(ih));
    npu_emit(s, REG_CNA_FC_DATA_SIZE1, CNA_FC_DATA_SIZE1_DMA_CHANNEL(c_pad));
    npu_emit(s, REG_CNA_DCOMP_CTRL, 0);
    npu_emit(s, REG_CNA_DCOMP_REGNUM, 0);
    emit_ref(s, REG_CNA_DCOMP_ADDR0, cv->weights);
    for (unsigned i = 0; i < REG_CNA_DCOMP_AMOUNT__COUNT; i++)
        npu_emit(s, REG_CNA_DCOMP_AMOUNT(i), 0);
    npu_emit(s, REG_CNA_CVT_CON5, 0);
    npu_emit(s, REG_CNA_PAD_CON1, 0);
    /* QD_EN 0 as in every RKNN fp16 conv (NOTES S15) */
    npu_emit(s, REG_CORE_MISC_CFG,
             CORE_MISC_CFG_PROC_PRECISION(NPU_CNA_PRECISION_FP16) |
                 CORE_MISC_CFG_DW_EN(cv->depthwise));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_0,
             CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(oh - 1) |
                 CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH(out.w - 1));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_1, CORE_DATAOUT_SIZE_1_DATAOUT_CHANNEL(k_pad - 1));
    npu_emit(s, REG_CORE_CLIP_TRUNCATE, 0);
    npu_emit(s, REG_CORE_UNDOC_3030, 0);
    emit_dpu(s, &t);
    bool rdma = needs_rdma(&st);
    if (rdma)
        emit_rdma(s, NULL, out.w, oh, k_pad, NPU_PRECISION_FP16, false, &st);
    if ((r = npu_stream_end_task(s, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU |
                                        (rdma ? NPU_OP_EN_DPU_RDMA : 0))))
        return r;

    uint64_t taps = (uint64_t)cv->kh * cv->kw, hw = (uint64_t)out.w * oh * taps;
    uint64_t steps, macs;
    const struct npu_timing_model *tm = npu_timing_model();
    if (cv->depthwise) {
        steps = NPU_DIV_ROUND_UP((uint64_t)c_pad, tm->kernel_group_fp16) * hw;
        macs = (uint64_t)c_pad * hw;
    } else {
        steps = NPU_DIV_ROUND_UP((uint64_t)cv->kernels, tm->kernel_group_fp16) *
                NPU_DIV_ROUND_UP((uint64_t)c_pad, tm->channel_group) * hw;
        macs = (uint64_t)cv->kernels * c_pad * hw;
    }
    uint64_t bytes = (cv->data_reuse ? 0 : (uint64_t)(c_pad / 8) * in->w * ih * 16) +
                     wl->total_bytes + (uint64_t)NPU_DIV_ROUND_UP(k_pad, out_c2) * out.w * oh * 16 +
                     stage_rdma_bytes(&st, k_pad);
    npu_dpu_cost_add_w(cost, s, (double)steps / tm->clock_hz, bytes, wl->total_bytes, macs);
    return NPU_OK;
}

enum npu_status
npu_dpu_emit_conv(struct npu_stream *s, const struct npu_dpu_conv *cv, struct npu_dpu_cost *cost)
{
    enum npu_status r;
    const struct npu_dpu_map *in = &cv->in;
    if (in->type != NPU_DPU_FP16 || (cv->out.type != NPU_DPU_FP16 && cv->out.type != NPU_DPU_FP32))
        return refuse(s, "conv: fp16 input, fp16 or fp32 output (facts §2.9)");
    if (!in->w || !in->h || !in->c || !cv->kernels || !cv->kh || !cv->kw || !cv->sy || !cv->sx ||
        cv->kh > 31 || cv->kw > 31 || cv->sy > 7 || cv->sx > 7 || cv->pad_top > 15 ||
        cv->pad_left > 15)
        return refuse(s, "conv: kernel %ux%u stride %ux%u pads %u/%u out of range", cv->kh, cv->kw,
                      cv->sy, cv->sx, cv->pad_top, cv->pad_left);
    if (npu_dpu_map_line(in) != in->w || npu_dpu_map_surf(in) % in->w ||
        npu_dpu_map_surf(in) < in->w * in->h || (in->ref.offset & 15u))
        return refuse(s, "conv: input lines must be packed and the surface a whole number of "
                         "lines (the verified CNA stride pattern, facts §2.10)");
    if (cv->depthwise && cv->kernels != in->c)
        return refuse(s, "conv: depthwise needs kernels = channels");
    if (cv->out.c != cv->kernels)
        return refuse(s, "conv: output map has %u channels for %u kernels", cv->out.c, cv->kernels);
    uint32_t ow = cv->out.w, oh = cv->out.h;
    if (!ow || !oh || (uint64_t)(ow - 1) * cv->sx >= (uint64_t)in->w + cv->pad_left ||
        (uint64_t)(oh - 1) * cv->sy >= (uint64_t)in->h + cv->pad_top)
        return refuse(s, "conv: output %ux%u does not fit the input %ux%u", ow, oh, in->w, in->h);
    struct npu_dpu_map out_chk = cv->out;
    out_chk.c = NPU_ALIGN(cv->kernels, npu_dpu_type_c2(cv->out.type));
    if ((r = check_map(s, &out_chk, "conv output")) ||
        (r = check_stages(s, &cv->st, ow, oh, cv->kernels)))
        return r;
    struct npu_dpu_conv cv2;
    if (cv->st.ew.op != NPU_DPU_EW_NONE && cv->st.ew.operand.c < out_chk.c) {
        /* the operand's last atom holds the padded channels too (their results are
         * replaced by OFFSET_PEND): read it whole */
        uint32_t c2 = npu_dpu_type_c2(cv->st.ew.operand.type);
        if (NPU_DIV_ROUND_UP(cv->st.ew.operand.c, c2) != NPU_DIV_ROUND_UP(out_chk.c, c2))
            return refuse(s, "conv: the EW operand must cover the padded %u output channels",
                          out_chk.c);
        cv2 = *cv;
        cv2.st.ew.operand.c = out_chk.c;
        cv = &cv2;
    }
    struct npu_weight_layout wl;
    if (npu_weight_layout_init(&wl, 2, cv->kernels, in->c, cv->kh, cv->kw, cv->depthwise))
        return refuse(s, "conv: weight geometry refused by the layout");
    /* streamed weights need one kernel group in the weight banks (facts §6.12) */
    uint64_t group =
        (cv->depthwise ? 1 : NPU_MIN(cv->kernels, 16u)) * (uint64_t)wl.bytes_per_kernel;
    /* rows per tile: the largest tile whose input fits 11 data banks with room for a group */
    uint32_t entries = (uint32_t)NPU_DIV_ROUND_UP((uint64_t)in->w * NPU_ALIGN(in->c, 8u) * 2, 64);
    uint32_t max_banks = 11;
    while (max_banks > 1 && (12 - max_banks) * 32768ull < group)
        max_banks--;
    if ((12 - max_banks) * 32768ull < group)
        return refuse(s, "conv: one kernel group of weights (%llu bytes) does not fit the CBUF",
                      (unsigned long long)group);
    uint64_t rows_fit = (uint64_t)max_banks * 32768 / ((uint64_t)entries * 64);
    /* DATAIN_HEIGHT is an 11-bit field (facts §2.3): tiles of at most 2047 input rows */
    rows_fit = NPU_MIN(rows_fit, (uint64_t)CNA_DATA_SIZE0_DATAIN_HEIGHT__MAX);
    if (rows_fit < cv->kh)
        return refuse(s, "conv: %u input rows of %u entries do not fit the CBUF", cv->kh, entries);
    if (in->w > CNA_DATA_SIZE0_DATAIN_WIDTH__MAX || ow > CNA_DATA_SIZE2_DATAOUT_WIDTH__MAX ||
        NPU_ALIGN(in->c, 8u) > CNA_DATA_SIZE1_DATAIN_CHANNEL__MAX ||
        (uint64_t)ow * NPU_MIN(oh, 2047u) > CNA_DATA_SIZE3_DATAOUT_ATOMICS__MAX)
        return refuse(s, "conv: %ux%u input / %u output width exceed the CNA fields", in->w, in->h,
                      ow);
    uint32_t tile = (uint32_t)NPU_MIN((uint64_t)oh, (rows_fit - cv->kh) / cv->sy + 1);
    if (cv->data_reuse && tile < oh)
        return refuse(s, "conv: DATA_REUSE needs the whole input in one CBUF tile");
    for (uint32_t y = 0; y < oh; y += tile)
        if ((r = emit_conv_tile(s, cv, &wl, y, NPU_MIN(tile, oh - y), cost)))
            return r;
    return NPU_OK;
}
