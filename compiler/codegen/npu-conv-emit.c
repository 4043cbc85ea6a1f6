/* SPDX-License-Identifier: MIT */
/*
 * npu-conv-emit.c: the register program of rk.Conv, a convolution or matrix
 * product as CNA + CORE + DPU tasks: one task's registers (rk_emit_task), a
 * node's tasks into the job's stream, and the LUT upload before a conv with a
 * LUT activation. The attribute schema is in npu-conv-rk.c, the task geometry
 * and modeled time in npu-conv-time.c.
 *
 * Register order and values follow RKNN's single-core conv tasks (golden
 * ab-conv*: the 4-qword prefix of NOTES S9, then DPU S_POINTER, CNA, CORE,
 * DPU; 108 qwords), or MTX's Appendix A.1 matmul with style "mtx". Rules and
 * where they come from:
 *   strides LINE = 4W, SURF = W(H-4) of the whole map (facts §2.10, NOTES S12)
 *   DATA_ENTRIES = ceil(row bytes / 64); DATA_BANK + WEIGHT_BANK = 12 (§2.10,
 *     §2.11, NOTES S14); the bank split itself is chosen by the tiler
 *   DATAIN_CHANNEL = C padded to 8 (fp16) / 16 (int8) (NOTES S13), REAL =
 *     (C - 1) mod 64 (RKNN, NOTES S5) or C - 1 (MTX)
 *   WEIGHT_SIZE0/1/2 from the packed layout (§2.10, npu-layout.h)
 *   SIZE_E = kernel group x output bytes / 16 - 1 (32-channel groups for
 *     depthwise), SURFACE_ADD = DST_SURF_STRIDE x (SIZE_E + 1) (§2.10)
 *   DST_SURF_STRIDE = W x H of the whole output in every tile (NOTES S20)
 *   output channels padded to the kernel group (16 fp16, 32 int8) for CORE /
 *     DPU, ORIG_CHANNEL real (partial table; NOTES S20)
 *   DPU stages: bias = BS ALU add of a per-channel fp32/int32 array through
 *     BRDMA (facts §5.3, Mesa); ReLU / ReLU-X in BS; clip(lo, hi) as BS add
 *     (bias - lo), ReLU, ReLU-X (hi - lo), then BN ALU add lo; partial sums of
 *     channel-block accumulation = EW ALU add of a per-pixel operand through
 *     ERDMA (32-bit for fp32 partials), with the activation in the EW ReLU
 *     stage after it (facts §5.3 stage order BS -> BN -> EW).
 */
#include <stdlib.h>
#include <string.h>

#include "npu-conv-priv.h"

static uint32_t
f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint32_t
cna_prec(enum npu_dtype dt)
{
    return dt == NPU_DTYPE_INT8    ? NPU_CNA_PRECISION_INT8
           : dt == NPU_DTYPE_INT16 ? NPU_CNA_PRECISION_INT16
                                   : NPU_CNA_PRECISION_FP16;
}

static uint32_t
dpu_prec(enum npu_dtype dt)
{
    switch (dt) {
    case NPU_DTYPE_INT8: return NPU_PRECISION_INT8;
    case NPU_DTYPE_INT16: return NPU_PRECISION_INT16;
    case NPU_DTYPE_INT32: return NPU_PRECISION_INT32;
    case NPU_DTYPE_FP32: return NPU_PRECISION_FP32;
    default: return NPU_PRECISION_FP16;
    }
}

void
rk_emit_task(struct npu_stream *s, const struct rk_conv_geom *g, const struct rk_tile *t,
             const struct rk_emit_addrs *a)
{
    const uint32_t es = rk_esize(g->in_dt), c2 = 16 / es;
    const uint32_t cp = cna_prec(g->in_dt);
    const uint32_t cpad = rk_cpad(g, t->nc);
    const enum npu_dtype odt = conv_tile_out_dt(g, t);
    const uint32_t ob = rk_esize(odt), oc2 = 16 / ob;
    const uint32_t kout = conv_kout_of(g, t->nk, odt);
    const uint32_t kg = rk_kernel_group(g);
    /* facts §2.10: SIZE_E = group x out bytes / 16 - 1; depthwise output
     * groups are the 32-channel (fp16) / 64-channel (int8) blocks */
    const uint32_t grp = g->depthwise ? (g->in_dt == NPU_DTYPE_INT8 ? 64 : 32) : kg;
    const uint32_t size_e = grp * ob / 16 - 1;
    const uint32_t surf = g->ow * g->oh; /* atoms, whole output (NOTES S20) */
    const bool rdma = conv_uses_rdma(g, t);
    const bool fp = g->in_dt == NPU_DTYPE_FP16;
    const uint32_t mode = g->depthwise ? NPU_CONV_MODE_DEPTHWISE : NPU_CONV_MODE_DIRECT;
    struct rk_rows r;
    rk_tile_rows(g, t->oy0, t->oh, &r);

    const uint32_t per_kernel = g->kh * g->kw * cpad * es;
    /* DATA_ENTRIES: row bytes / 64; W x H_tile in small-channel mode (facts
     * §2.10, NOTES §2 ARGB case) */
    const uint32_t entries =
        g->argb ? g->w * r.ih : (uint32_t)(((uint64_t)g->w * cpad * es + 63) / 64);
    const uint32_t cbuf0 = CNA_CBUF_CON0_WEIGHT_REUSE((t->flags & RKT_F_WREUSE) ? 1 : 0) |
                           CNA_CBUF_CON0_DATA_REUSE((t->flags & RKT_F_DREUSE) ? 1 : 0) |
                           CNA_CBUF_CON0_WEIGHT_BANK(12 - t->bank) |
                           CNA_CBUF_CON0_DATA_BANK(t->bank);
    /* small-channel mode: NONALIGN_DMA | GROUP_LINE_OFF | ARGB_IN (7 + C) (facts
     * §2.10, RKNN's ARGB capture 0x6000a120) */
    const uint32_t con1 =
        CNA_CONV_CON1_PROC_PRECISION(cp) | CNA_CONV_CON1_IN_PRECISION(cp) |
        CNA_CONV_CON1_CONV_MODE(mode) |
        (g->argb ? CNA_CONV_CON1_NONALIGN_DMA(1) | CNA_CONV_CON1_GROUP_LINE_OFF(1) |
                       CNA_CONV_CON1_ARGB_IN(NPU_ARGB_IN_1CH + g->argb - 1)
                 : 0);
    /* REAL: MTX writes C - 1, RKNN (C - 1) mod 64 (errata S5) */
    const uint32_t real = g->mtx ? t->nc - 1 : (t->nc - 1) % 64;
    /* FEATURE_GRAINS is buffering only (NOTES S11): MTX M + 1; ARGB: the
     * tile's rows (RKNN); else the closest fit to RKNN's values: input rows
     * + kernel height */
    uint32_t grains = g->mtx ? r.ih + 1 : g->argb ? r.ih : r.ih + g->kh;
    if (grains > CNA_CONV_CON2_FEATURE_GRAINS__MAX)
        grains = CNA_CONV_CON2_FEATURE_GRAINS__MAX;
    const uint32_t s_ptr = DPU_S_POINTER_POINTER_PP_EN(1) | DPU_S_POINTER_EXECUTER_PP_EN(1) |
                           DPU_S_POINTER_POINTER_PP_MODE(1);

    npu_stream_begin_task(s);
    if (!g->mtx) {
        /* NOTES S9: every single-core RKNN conv task starts with these four */
        npu_emit(s, REG_CNA_CBUF_CON0, cbuf0);
        npu_emit(s, REG_CNA_DCOMP_REGNUM, 0);
        npu_emit(s, REG_CNA_DCOMP_CTRL, 0);
        npu_emit(s, REG_CNA_CONV_CON1, con1);
    }
    npu_emit(s, REG_DPU_S_POINTER, s_ptr);
    if (rdma)
        npu_emit(s, REG_DPU_RDMA_S_POINTER, s_ptr);
    npu_emit(s, REG_CNA_CONV_CON1, con1);
    npu_emit(s, REG_CNA_CONV_CON2, CNA_CONV_CON2_FEATURE_GRAINS(grains));
    npu_emit(s, REG_CNA_CONV_CON3,
             CNA_CONV_CON3_CONV_X_STRIDE(g->sx) | CNA_CONV_CON3_CONV_Y_STRIDE(g->sy));
    npu_emit(s, REG_CNA_DATA_SIZE0,
             CNA_DATA_SIZE0_DATAIN_WIDTH(g->w) | CNA_DATA_SIZE0_DATAIN_HEIGHT(r.ih));
    npu_emit(s, REG_CNA_DATA_SIZE1,
             CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(real) | CNA_DATA_SIZE1_DATAIN_CHANNEL(cpad));
    npu_emit(s, REG_CNA_DATA_SIZE2, CNA_DATA_SIZE2_DATAOUT_WIDTH(g->ow));
    npu_emit(s, REG_CNA_DATA_SIZE3, CNA_DATA_SIZE3_DATAOUT_ATOMICS(g->ow * t->oh));
    npu_emit(s, REG_CNA_WEIGHT_SIZE0,
             CNA_WEIGHT_SIZE0_WEIGHT_BYTES(per_kernel * (g->depthwise ? 1 : t->nk)));
    npu_emit(s, REG_CNA_WEIGHT_SIZE1, CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL(per_kernel));
    npu_emit(s, REG_CNA_WEIGHT_SIZE2,
             CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(g->kw) | CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(g->kh) |
                 CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(g->depthwise ? 1 : t->nk));
    npu_emit(s, REG_CNA_CBUF_CON0, cbuf0);
    npu_emit(s, REG_CNA_CBUF_CON1, CNA_CBUF_CON1_DATA_ENTRIES(entries));
    /* converter bypassed; RKNN writes 0xb, but only BYPASS in ARGB mode */
    npu_emit(s, REG_CNA_CVT_CON0,
             g->argb ? CNA_CVT_CON0_CVT_BYPASS(1)
                     : CNA_CVT_CON0_DATA_SIGN(1) | CNA_CVT_CON0_CVT_TYPE(NPU_CVT_ORDER_ADD_FIRST) |
                           CNA_CVT_CON0_CVT_BYPASS(1));
    npu_emit(s, REG_CNA_CVT_CON1, CNA_CVT_CON1_CVT_SCALE0(1));
    npu_emit(s, REG_CNA_CVT_CON2, CNA_CVT_CON2_CVT_SCALE1(1));
    npu_emit(s, REG_CNA_CVT_CON3, CNA_CVT_CON3_CVT_SCALE2(1));
    npu_emit(s, REG_CNA_CVT_CON4, CNA_CVT_CON4_CVT_SCALE3(1));
    npu_emit(s, REG_CNA_FC_CON0, 0);
    npu_emit(s, REG_CNA_FC_CON1, 0);
    npu_emit(s, REG_CNA_PAD_CON0, CNA_PAD_CON0_PAD_LEFT(g->pl) | CNA_PAD_CON0_PAD_TOP(r.pad_top));
    /* the tile's first input row of its first channel surface (facts §2.10) */
    npu_emit_reloc(s, REG_CNA_FEATURE_DATA_ADDR, a->x.buffer,
                   g->argb ? a->x.offset + r.iy0 * g->w * g->argb * es
                           : a->x.offset + (t->c0 / c2) * g->w * g->h * 16 + r.iy0 * g->w * 16);
    npu_emit(s, REG_CNA_FC_CON2, 0);
    npu_emit(s, REG_CNA_DMA_CON0,
             CNA_DMA_CON0_WEIGHT_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 CNA_DMA_CON0_DATA_BURST_LEN(NPU_BURST_LEN_BURST16));
    /* normal-mode strides of the whole stored map (facts §2.10, NOTES S12) */
    /* small-channel mode: LINE = W, SURF = W (H - 1) pixels (facts §2.10) */
    npu_emit(s, REG_CNA_DMA_CON1, CNA_DMA_CON1_LINE_STRIDE(g->argb ? g->w : 4 * g->w));
    npu_emit(
        s, REG_CNA_DMA_CON2,
        CNA_DMA_CON2_SURF_STRIDE((uint32_t)((int64_t)g->w * ((int64_t)g->h - (g->argb ? 1 : 4)))));
    npu_emit(s, REG_CNA_FC_DATA_SIZE0,
             CNA_FC_DATA_SIZE0_DMA_WIDTH(g->w) | CNA_FC_DATA_SIZE0_DMA_HEIGHT(r.ih));
    npu_emit(s, REG_CNA_FC_DATA_SIZE1, CNA_FC_DATA_SIZE1_DMA_CHANNEL(cpad));
    npu_emit(s, REG_CNA_DCOMP_CTRL, 0);
    npu_emit(s, REG_CNA_DCOMP_REGNUM, 0);
    npu_emit_reloc(s, REG_CNA_DCOMP_ADDR0, a->w.buffer, a->w.offset + t->woff);
    for (unsigned i = 0; i < REG_CNA_DCOMP_AMOUNT__COUNT; i++)
        npu_emit(s, REG_CNA_DCOMP_AMOUNT(i), 0);
    /* PER_CHANNEL_CVT_EN: RKNN writes 0xfff with 3 channels (converter
     * bypassed, so without effect; 4 bits per channel is a guess) */
    npu_emit(s, REG_CNA_CVT_CON5,
             g->argb ? CNA_CVT_CON5_PER_CHANNEL_CVT_EN((1u << (4 * g->argb)) - 1) : 0);
    npu_emit(s, REG_CNA_PAD_CON1, CNA_PAD_CON1_PAD_VALUE((uint32_t)g->pad_value));

    /* QD_EN: MTX sets it in fp16 matmul, RKNN never (NOTES S15) */
    npu_emit(s, REG_CORE_MISC_CFG,
             CORE_MISC_CFG_PROC_PRECISION(cp) | CORE_MISC_CFG_DW_EN(g->depthwise ? 1 : 0) |
                 CORE_MISC_CFG_QD_EN(g->mtx && fp ? 1 : 0));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_0,
             CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(t->oh - 1) |
                 CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH(g->ow - 1));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_1, CORE_DATAOUT_SIZE_1_DATAOUT_CHANNEL(kout - 1));
    /* int16: the 48-bit sums shifted right into int32 (facts §2.4, §5.2; conv-int16.c) */
    npu_emit(s, REG_CORE_CLIP_TRUNCATE, CORE_CLIP_TRUNCATE_CLIP_TRUNCATE(g->q_clip));
    npu_emit(s, REG_CORE_UNDOC_3030, 0);

    /* ---- DPU: stages */
    const bool act_here = (t->flags & RKT_F_ACT) && g->act != RK_ACT_NONE;
    const bool act_in_ew = act_here && t->src > 0;
    const bool act_in_bs = act_here && !act_in_ew;
    const bool bias_here = (t->flags & RKT_F_BIAS) != 0;
    const float lo = g->act == RK_ACT_CLIP ? g->act_lo : 0.0f;
    uint32_t bs_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
                      DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_BYPASS(1);
    uint32_t bs_alu = 0, bs_relux = 0, bn_cfg = bs_cfg, bn_alu = 0;
    bool bs_alu_reg = act_in_bs && lo != 0.0f && !bias_here;
    if (bias_here || act_in_bs) {
        bs_cfg = DPU_BS_CFG_BS_MUL_BYPASS(1);
        if (bias_here)
            bs_cfg |= DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                      DPU_BS_CFG_BS_ALU_SRC(NPU_OPERAND_SRC_MEMORY);
        else if (bs_alu_reg) {
            bs_cfg |= DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD);
            bs_alu = f32_bits(-lo);
        } else
            bs_cfg |= DPU_BS_CFG_BS_ALU_BYPASS(1);
        if (!act_in_bs) {
            bs_cfg |= DPU_BS_CFG_BS_RELU_BYPASS(1);
        } else if (g->act == RK_ACT_CLIP) {
            bs_cfg |= DPU_BS_CFG_BS_RELUX_EN(1);
            bs_relux = f32_bits(g->act_hi - lo);
            if (lo != 0.0f) {
                bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
                         DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD);
                bn_alu = f32_bits(lo);
            }
        }
    }
    uint32_t bn_mul = 0;
    const bool final_q =
        t->dst == 0 && ((g->in_dt == NPU_DTYPE_INT8 && g->out_dt == NPU_DTYPE_INT8) ||
                        (g->in_dt == NPU_DTYPE_INT16 && g->out_dt == NPU_DTYPE_INT16));
    /* dequantised result: fp16 processing after the int32 sums, BS adds the f32 bias, BN
     * multiplies by the channel's f32 scale from NRDMA (as the DequantizeLinear pass) */
    const bool deq = g->q_deq && t->dst == 0;
    uint32_t bn_relux = 0;
    if (deq) {
        /* int8 range kept (npu-rk.h q_lo / q_hi): BS bias' add + ReLU (ReLU-X with one
         * scale, its operand then holds (q_hi - q_lo) / scale), BN MUL scale[k] and the
         * lower bound's add back, or ReLU-X q_hi when the lower bound is 0 */
        bs_cfg = DPU_BS_CFG_BS_MUL_BYPASS(1) | DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                 DPU_BS_CFG_BS_ALU_SRC(NPU_OPERAND_SRC_MEMORY);
        if (g->q_bs_relux > 0) {
            bs_cfg |= DPU_BS_CFG_BS_RELUX_EN(1);
            bs_relux = f32_bits(g->q_bs_relux);
        }
        bn_mul = DPU_BS_MUL_CFG_BS_MUL_SRC(NPU_OPERAND_SRC_MEMORY);
        /* a LUT after it: the scales carry its input scale, the bounds too (exact: a
         * power of two) */
        const float lin = g->lut_id ? npu_dpu_lut_get(g->lut_id)->in_scale : 1.0f;
        if (g->q_lo_ew) {
            /* per-channel scales: y - q_lo >= 0 after BS; BN clamps it at q_hi - q_lo (one
             * bound for all channels after the scale), the EW stage adds q_lo back from the
             * residual operand (conv-quant.c conv_deq_lo_ew; TRM-inferred, level T) */
            bn_cfg = DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_RELUX_EN(1);
            bn_relux = f32_bits((g->q_hi - g->q_lo) * lin);
        } else if (g->q_lo != 0.0f) {
            bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD);
            bn_alu = f32_bits(g->q_lo * lin);
        } else if (g->q_bs_relux > 0) {
            bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_ALU_BYPASS(1);
        } else {
            bn_cfg = DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_RELUX_EN(1);
            bn_relux = f32_bits(g->q_hi * lin);
        }
    } else if (final_q && g->q_per_channel) {
        /* BN MUL then ALU (facts §5.3): x * m[c] >> shift, operand per channel
         * from NRDMA (one operand kind, facts §6.13) */
        bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_ALU_BYPASS(1);
        bn_mul = DPU_BS_MUL_CFG_BS_MUL_SHIFT_VALUE(g->q_chshift) |
                 DPU_BS_MUL_CFG_BS_MUL_SRC(NPU_OPERAND_SRC_MEMORY);
    }
    uint32_t ew_cfg = DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
                      DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_BYPASS(1) |
                      DPU_EW_CFG_EW_BYPASS(1);
    uint32_t ew_relux = 0, esz_code = NPU_ELEM_SIZE_32BIT;
    if (t->src > 0) {
        uint32_t pes = rk_esize(g->part_dt);
        esz_code = pes == 4 ? NPU_ELEM_SIZE_32BIT : NPU_ELEM_SIZE_16BIT;
        ew_cfg = DPU_EW_CFG_EW_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                 DPU_EW_CFG_EDATA_SIZE(esz_code) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                 DPU_EW_CFG_EW_OP_CVT_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                 DPU_EW_CFG_EW_OP_SRC(NPU_OPERAND_SRC_MEMORY);
        if (act_in_ew) {
            if (g->act == RK_ACT_CLIP) {
                ew_cfg |= DPU_EW_CFG_EW_RELUX_EN(1);
                ew_relux = f32_bits(g->act_hi);
            }
        } else {
            ew_cfg |= DPU_EW_CFG_EW_RELU_BYPASS(1);
        }
    } else if (conv_res_here(g, t)) {
        /* the residual: EW ALU add of a per-pixel operand (ERDMA), as the partial sums */
        esz_code = rk_esize(g->res_dt) == 4 ? NPU_ELEM_SIZE_32BIT : NPU_ELEM_SIZE_16BIT;
        ew_cfg = DPU_EW_CFG_EW_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                 DPU_EW_CFG_EDATA_SIZE(esz_code) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                 DPU_EW_CFG_EW_OP_CVT_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                 DPU_EW_CFG_EW_OP_SRC(NPU_OPERAND_SRC_MEMORY) | DPU_EW_CFG_EW_RELU_BYPASS(1);
    }
    /* LUT function (the DPU LUT tables, NOTES S19 configuration): BN MUL scales every
     * block's contribution into the table's index domain (u = t * in_scale, exact power of
     * two); the last block looks up u after its partial-sum add. */
    const struct npu_dpu_lut *lut =
        g->lut_id && (t->flags & RKT_F_ACT) ? npu_dpu_lut_get(g->lut_id) : NULL;
    if (g->lut_id && !deq) {
        const struct npu_dpu_lut *l = npu_dpu_lut_get(g->lut_id);
        bn_cfg = DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_ALU_BYPASS(1);
        bn_mul = DPU_BS_MUL_CFG_BS_MUL_OPERAND(npu_fp32_to_fp16(l->in_scale));
    }
    if (lut) {
        ew_cfg &= ~(DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_BYPASS(1));
        if (t->src <= 0 && !conv_res_here(g, t))
            /* RKNN's tanh: OP_BYPASS | OP_CVT_BYPASS | RELU_BYPASS (0x302, NOTES S19); with
             * the EW add of a folded DequantizeLinear's lower bound (q_lo_ew) the LUT looks up
             * the sum, as after a partial-sum add */
            ew_cfg = DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
                     DPU_EW_CFG_EW_OP_BYPASS(1);
    }

    /* the result may have padded surfaces (out_surf); partial sums are packed */
    const uint32_t dsurf = t->dst == 0 && g->out_surf ? g->out_surf : surf;
    const uint32_t out_off = (t->k0 / oc2) * dsurf * 16 + t->oy0 * g->ow * 16;
    const struct npu_ref_buf *dst = &a->out[t->dst];
    npu_emit(s, REG_DPU_FEATURE_MODE_CFG,
             DPU_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 DPU_FEATURE_MODE_CFG_OUTPUT_MODE(NPU_DPU_OUTPUT_MODE_MEMORY) |
                 DPU_FEATURE_MODE_CFG_CONV_MODE(mode));
    npu_emit(
        s, REG_DPU_DATA_FORMAT,
        DPU_DATA_FORMAT_OUT_PRECISION(dpu_prec(odt)) |
            DPU_DATA_FORMAT_IN_PRECISION(dpu_prec(g->in_dt)) |
            DPU_DATA_FORMAT_BN_MUL_SHIFT_VALUE_NEG(final_q && g->q_per_channel ? g->q_chshift : 0) |
            DPU_DATA_FORMAT_PROC_PRECISION(deq ? NPU_PRECISION_FP16 : dpu_prec(g->in_dt)));
    npu_emit(s, REG_DPU_OFFSET_PEND, 0);
    npu_emit_reloc(s, REG_DPU_DST_BASE_ADDR, dst->buffer, dst->offset + out_off);
    npu_emit(s, REG_DPU_DST_SURF_STRIDE, DPU_DST_SURF_STRIDE_DST_SURF_STRIDE(dsurf));
    npu_emit(s, REG_DPU_DATA_CUBE_WIDTH, DPU_DATA_CUBE_WIDTH_WIDTH(g->ow - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_HEIGHT, DPU_DATA_CUBE_HEIGHT_HEIGHT(t->oh - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_NOTCH_ADDR, 0);
    npu_emit(s, REG_DPU_DATA_CUBE_CHANNEL,
             DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(t->nk - 1) |
                 DPU_DATA_CUBE_CHANNEL_CHANNEL(kout - 1));
    npu_emit(s, REG_DPU_BS_CFG, bs_cfg);
    npu_emit(s, REG_DPU_BS_ALU_CFG, bs_alu);
    npu_emit(s, REG_DPU_BS_MUL_CFG, 0);
    npu_emit(s, REG_DPU_BS_RELUX_CMP_VALUE, bs_relux);
    npu_emit(s, REG_DPU_BS_OW_CFG,
             DPU_BS_OW_CFG_SIZE_E_2(size_e) | DPU_BS_OW_CFG_SIZE_E_1(size_e) |
                 DPU_BS_OW_CFG_SIZE_E_0(size_e) | DPU_BS_OW_CFG_OD_BYPASS(1));
    npu_emit(s, REG_DPU_BS_OW_OP, 0);
    npu_emit(s, REG_DPU_WDMA_SIZE_0, DPU_WDMA_SIZE_0_CHANNEL_WDMA(kout - 1));
    npu_emit(s, REG_DPU_WDMA_SIZE_1,
             DPU_WDMA_SIZE_1_HEIGHT_WDMA(t->oh - 1) | DPU_WDMA_SIZE_1_WIDTH_WDMA(g->ow - 1));
    npu_emit(s, REG_DPU_BN_CFG, bn_cfg);
    npu_emit(s, REG_DPU_BN_ALU_CFG, bn_alu);
    npu_emit(s, REG_DPU_BN_MUL_CFG, bn_mul);
    npu_emit(s, REG_DPU_BN_RELUX_CMP_VALUE, bn_relux);
    npu_emit(s, REG_DPU_EW_CFG, ew_cfg);
    npu_emit(s, REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CVT_SCALE_VALUE, DPU_EW_CVT_SCALE_VALUE_EW_OP_CVT_SCALE(1));
    npu_emit(s, REG_DPU_EW_RELUX_CMP_VALUE, ew_relux);
    /* OUT_CVT: identity, or the int8 requantisation (facts §5.3: multiply first,
     * shift with round half to even, then the offset = output zero point) */
    /* after a LUT: RKNN's tanh offset and MINUS_EXP (the table's output scale, S19) */
    npu_emit(s, REG_DPU_OUT_CVT_OFFSET,
             final_q ? (uint32_t)g->q_offset
             : lut   ? (uint32_t)lut->out_offset
                     : 0);
    npu_emit(s, REG_DPU_OUT_CVT_SCALE,
             DPU_OUT_CVT_SCALE_FP32TOFP16_EN(odt == NPU_DTYPE_FP16 ? 1 : 0) |
                 DPU_OUT_CVT_SCALE_OUT_CVT_SCALE(final_q ? g->q_scale : 1));
    npu_emit(s, REG_DPU_OUT_CVT_SHIFT,
             DPU_OUT_CVT_SHIFT_OUT_CVT_SHIFT(final_q ? g->q_shift : 0) |
                 (lut ? DPU_OUT_CVT_SHIFT_MINUS_EXP(lut->minus_exp) : 0));
    for (unsigned i = 0; i < REG_DPU_EW_OP_VALUE__COUNT; i++)
        npu_emit(s, REG_DPU_EW_OP_VALUE(i), 0);
    npu_emit(s, REG_DPU_SURFACE_ADD, DPU_SURFACE_ADD_SURF_ADD(dsurf * (size_e + 1)));
    npu_emit(s, REG_DPU_UNDOC_40C4, 0);
    npu_emit(s, REG_DPU_LUT_ACCESS_CFG, 0);
    npu_emit(s, REG_DPU_LUT_ACCESS_DATA, 0);
    npu_dpu_emit_lut_regs(s, lut); /* RKNN's LUT_CFG 0x68, the one strict mode accepts */

    if (rdma) {
        /* DPU_RDMA feeding BS (BRDMA) and EW (ERDMA) of a conv: not flying,
         * MRDMA off; the operand cubes match the DPU cube (facts §2.6). */
        const uint32_t pes = rk_esize(g->part_dt);
        npu_emit(s, REG_DPU_RDMA_DATA_CUBE_WIDTH, DPU_RDMA_DATA_CUBE_WIDTH_WIDTH(g->ow - 1));
        npu_emit(s, REG_DPU_RDMA_DATA_CUBE_HEIGHT, DPU_RDMA_DATA_CUBE_HEIGHT_HEIGHT(t->oh - 1));
        npu_emit(s, REG_DPU_RDMA_DATA_CUBE_CHANNEL, DPU_RDMA_DATA_CUBE_CHANNEL_CHANNEL(kout - 1));
        npu_emit(s, REG_DPU_RDMA_SRC_BASE_ADDR, 0);
        if (bias_here) {
            npu_emit(s, REG_DPU_RDMA_BRDMA_CFG, DPU_RDMA_BRDMA_CFG_BRDMA_DATA_USE(1));
            npu_emit_reloc(s, REG_DPU_RDMA_BS_BASE_ADDR, a->bias.buffer,
                           a->bias.offset + t->k0 * 4);
        } else {
            npu_emit(s, REG_DPU_RDMA_BRDMA_CFG, 0);
            npu_emit(s, REG_DPU_RDMA_BS_BASE_ADDR, 0);
        }
        if ((final_q || deq) && g->q_per_channel) {
            /* DATA_USE bit 2: MUL operand (facts §2.6) */
            npu_emit(s, REG_DPU_RDMA_NRDMA_CFG, DPU_RDMA_NRDMA_CFG_NRDMA_DATA_USE(4));
            npu_emit_reloc(s, REG_DPU_RDMA_BN_BASE_ADDR, a->qmul.buffer,
                           a->qmul.offset + t->k0 * 4);
        } else {
            npu_emit(s, REG_DPU_RDMA_NRDMA_CFG, 0);
            npu_emit(s, REG_DPU_RDMA_BN_BASE_ADDR, 0);
        }
        if (t->src < 0 && conv_res_here(g, t)) {
            npu_emit(s, REG_DPU_RDMA_ERDMA_CFG,
                     DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                         DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE(esz_code));
            npu_emit_reloc(s, REG_DPU_RDMA_EW_BASE_ADDR, a->res.buffer,
                           a->res.offset + (t->k0 / (16 / rk_esize(g->res_dt))) * surf * 16 +
                               t->oy0 * g->ow * 16);
            npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE(surf));
        } else if (t->src > 0) {
            const struct npu_ref_buf *src = &a->out[t->src];
            npu_emit(s, REG_DPU_RDMA_ERDMA_CFG,
                     DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                         DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE(esz_code));
            npu_emit_reloc(s, REG_DPU_RDMA_EW_BASE_ADDR, src->buffer,
                           src->offset + (t->k0 / (16 / pes)) * surf * 16 + t->oy0 * g->ow * 16);
            npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE(surf));
        } else {
            npu_emit(s, REG_DPU_RDMA_ERDMA_CFG, DPU_RDMA_ERDMA_CFG_ERDMA_DISABLE(1));
            npu_emit(s, REG_DPU_RDMA_EW_BASE_ADDR, 0);
            npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, 0);
        }
        npu_emit(s, REG_DPU_RDMA_FEATURE_MODE_CFG,
                 DPU_RDMA_FEATURE_MODE_CFG_IN_PRECISION(dpu_prec(g->in_dt)) |
                     DPU_RDMA_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                     DPU_RDMA_FEATURE_MODE_CFG_PROC_PRECISION(dpu_prec(g->in_dt)) |
                     DPU_RDMA_FEATURE_MODE_CFG_MRDMA_DISABLE(1));
        npu_emit(s, REG_DPU_RDMA_SRC_DMA_CFG, 0);
        npu_emit(s, REG_DPU_RDMA_SURF_NOTCH, 0);
        npu_emit(s, REG_DPU_RDMA_PAD_CFG, 0);
        npu_emit(s, REG_DPU_RDMA_WEIGHT,
                 DPU_RDMA_WEIGHT_E_WEIGHT(1) | DPU_RDMA_WEIGHT_N_WEIGHT(1) |
                     DPU_RDMA_WEIGHT_B_WEIGHT(1) | DPU_RDMA_WEIGHT_M_WEIGHT(1));
        npu_emit(s, REG_DPU_RDMA_EW_SURF_NOTCH, 0);
    }
    npu_stream_end_task(s, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU |
                               (rdma ? NPU_OP_EN_DPU_RDMA : 0));
}

enum npu_status
npu_rk_conv_emit(struct npu_cg *cg, const struct npu_node *n)
{
    struct rk_conv_geom g;
    struct rk_tile *t = NULL;
    uint32_t nt = 0;
    enum npu_status st = rk_conv_decode(n, &g, &t, &nt);
    if (st)
        return st;
    struct rk_emit_addrs a;
    memset(&a, 0, sizeof(a));
    if ((st = npu_cg_addr(cg, n->in[0], &a.x)) || (st = npu_cg_addr(cg, n->in[1], &a.w)) ||
        (g.bias && (st = npu_cg_addr(cg, n->in[2], &a.bias))) ||
        (g.q_per_channel && (st = npu_cg_addr(cg, n->in[3], &a.qmul))))
        goto out;
    if (g.residual && (st = npu_cg_addr(cg, n->in[n->nin - 1], &a.res)))
        goto out;
    for (int i = 0; i < n->nout; i++)
        if ((st = npu_cg_addr(cg, n->out[i], &a.out[i])))
            goto out;
    struct npu_stream *s = npu_cg_stream(cg);
    if (g.lut_id && (st = rk_emit_lut_prologue(s, &g, &a))) {
        npu_err(NPU_BE_DOM, "node '%s' (rk.Conv) LUT upload: %s", n->name, npu_stream_error(s));
        goto out;
    }
    for (uint32_t i = 0; i < nt; i++) {
        uint32_t before = s->n_tasks;
        rk_emit_task(s, &g, &t[i], &a);
        if ((st = npu_stream_status(s))) {
            npu_err(NPU_BE_DOM, "node '%s' (rk.Conv) task %u: %s", n->name, i, npu_stream_error(s));
            goto out;
        }
        if (s->tasks[before].n_body != rk_task_body_qwords(&g, &t[i]))
            npu_die("rk.Conv task body %u qwords, expected %u", s->tasks[before].n_body,
                    rk_task_body_qwords(&g, &t[i]));
    }
out:
    free(t);
    return st;
}

enum npu_status
rk_emit_lut_prologue(struct npu_stream *s, const struct rk_conv_geom *g,
                     const struct rk_emit_addrs *a)
{
    /* The LUT rule (docs/npu-dpu-ops.md §2): the previous task may read the tables, so a
     * guard task goes before the upload (NOTES S19: the upload is a task of its own). The
     * 1x1x16 int8 copies use the first 32 bytes of the result, which the conv overwrites. */
    const struct npu_dpu_lut *l = npu_dpu_lut_get(g->lut_id);
    struct npu_dpu_ref scratch = {a->out[0].buffer, a->out[0].offset};
    enum npu_status st;
    if (!l)
        return NPU_ERR_INVALID;
    if ((st = npu_dpu_emit_guard(s, scratch, NULL)))
        return st;
    return npu_dpu_emit_lut_upload(s, l, scratch, NULL);
}
