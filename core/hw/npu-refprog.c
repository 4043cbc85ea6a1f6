/* SPDX-License-Identifier: MIT */
/*
 * npu-refprog.c: facts Appendix A.1 (matmul) and A.2 (flying-mode elementwise) as emit code.
 * Register order follows the reference streams (MTX's for A.1, RKNN's for A.2) so the output
 * can be compared byte for byte with the golden files.
 */
#include <stdio.h>

#include "npu-refprog.h"

static const char dom[] = "hw";

static enum npu_status
refuse(struct npu_stream *s, const char *what)
{
    npu_err(dom, "reference program: %s", what);
    if (s->error == NPU_OK) {
        s->error = NPU_ERR_INVALID;
        snprintf(s->errmsg, sizeof(s->errmsg), "%s", what);
    }
    return NPU_ERR_INVALID;
}

/* The DPU LUT registers, all 0 (LUT unused), in the order both reference streams write them. */
static void
emit_dpu_lut_off(struct npu_stream *s)
{
    npu_emit(s, REG_DPU_LUT_ACCESS_CFG, 0);
    npu_emit(s, REG_DPU_LUT_ACCESS_DATA, 0);
    npu_emit(s, REG_DPU_LUT_CFG, 0);
    npu_emit(s, REG_DPU_LUT_INFO, 0);
    npu_emit(s, REG_DPU_LUT_LE_START, 0);
    npu_emit(s, REG_DPU_LUT_LE_END, 0);
    npu_emit(s, REG_DPU_LUT_LO_START, 0);
    npu_emit(s, REG_DPU_LUT_LO_END, 0);
    npu_emit(s, REG_DPU_LUT_LE_SLOPE_SCALE, 0);
    npu_emit(s, REG_DPU_LUT_LE_SLOPE_SHIFT, 0);
    npu_emit(s, REG_DPU_LUT_LO_SLOPE_SCALE, 0);
    npu_emit(s, REG_DPU_LUT_LO_SLOPE_SHIFT, 0);
}

enum npu_status
npu_ref_matmul_emit(struct npu_stream *s, const struct npu_ref_matmul *p)
{
    const bool int8 = p->kind == NPU_REF_MATMUL_INT8_INT32;
    const bool fp16_out = p->kind == NPU_REF_MATMUL_FP16_FP16;
    const uint32_t m = p->m, k = p->k, n = p->n;
    const uint32_t esize = int8 ? 1 : 2;
    const uint32_t cna_prec = int8 ? NPU_CNA_PRECISION_INT8 : NPU_CNA_PRECISION_FP16;
    const uint32_t dpu_in = int8 ? NPU_PRECISION_INT8 : NPU_PRECISION_FP16;
    const uint32_t dpu_out =
        int8 ? NPU_PRECISION_INT32 : (fp16_out ? NPU_PRECISION_FP16 : NPU_PRECISION_FP32);
    /* facts 2.10: SIZE_E = kernel group x output bytes / 16 - 1; SURFACE_ADD =
     * DST_SURF_STRIDE x (SIZE_E + 1). Kernel group 32 int8, 16 fp16. */
    const uint32_t kg = int8 ? 32 : 16, out_bytes = fp16_out ? 2 : 4;
    const uint32_t size_e = kg * out_bytes / 16 - 1;
    uint32_t data_bank;
    enum npu_status st;

    if (p->kind > NPU_REF_MATMUL_INT8_INT32)
        return refuse(s, "unknown matmul kind");
    if (!m || !k || !n || k % 32 || n % 16 || (m != 1 && m % 4))
        return refuse(s, "matmul needs K % 32 == 0, N % 16 == 0, M == 1 or M % 4 == 0 (A.1)");
    if (m > CNA_DATA_SIZE0_DATAIN_HEIGHT__MAX || k > CNA_DATA_SIZE1_DATAIN_CHANNEL__MAX ||
        n > CNA_WEIGHT_SIZE2_WEIGHT_KERNELS__MAX || n - 1 > DPU_DATA_CUBE_CHANNEL_CHANNEL__MAX ||
        (uint64_t)esize * k * n > UINT32_MAX)
        return refuse(s, "matmul shape exceeds the register fields");
    /* One task: the whole of A must sit in at most 11 data banks (12 banks of 32 KiB, at least
     * one left for weights; facts 2.11). Exactly 32768 bytes is one bank. */
    data_bank = (uint32_t)NPU_DIV_ROUND_UP((uint64_t)esize * m * k, 32768);
    if (data_bank > 11)
        return refuse(s, "matmul input does not fit CBUF in one task");

    st = npu_stream_begin_task(s);
    if (st != NPU_OK)
        return st;
    npu_emit(s, REG_DPU_S_POINTER,
             DPU_S_POINTER_POINTER_PP_EN(1) | DPU_S_POINTER_EXECUTER_PP_EN(1) |
                 DPU_S_POINTER_POINTER_PP_MODE(1));
    npu_emit(s, REG_CNA_CONV_CON1,
             CNA_CONV_CON1_PROC_PRECISION(cna_prec) | CNA_CONV_CON1_IN_PRECISION(cna_prec));
    npu_emit(s, REG_CNA_CONV_CON2, CNA_CONV_CON2_FEATURE_GRAINS(m + 1));
    npu_emit(s, REG_CNA_CONV_CON3, CNA_CONV_CON3_CONV_X_STRIDE(1) | CNA_CONV_CON3_CONV_Y_STRIDE(1));
    npu_emit(s, REG_CNA_DATA_SIZE0,
             CNA_DATA_SIZE0_DATAIN_WIDTH(1) | CNA_DATA_SIZE0_DATAIN_HEIGHT(m));
    /* MTX writes K - 1 (works on hardware); RKNN would write (K - 1) mod 64 (errata S5). */
    npu_emit(s, REG_CNA_DATA_SIZE1,
             CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(k - 1) | CNA_DATA_SIZE1_DATAIN_CHANNEL(k));
    npu_emit(s, REG_CNA_DATA_SIZE2, CNA_DATA_SIZE2_DATAOUT_WIDTH(1));
    npu_emit(s, REG_CNA_DATA_SIZE3, CNA_DATA_SIZE3_DATAOUT_ATOMICS(m));
    npu_emit(s, REG_CNA_WEIGHT_SIZE0, CNA_WEIGHT_SIZE0_WEIGHT_BYTES(esize * k * n));
    npu_emit(s, REG_CNA_WEIGHT_SIZE1, CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL(esize * k));
    npu_emit(s, REG_CNA_WEIGHT_SIZE2,
             CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(1) | CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(1) |
                 CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(n));
    npu_emit(s, REG_CNA_CBUF_CON0,
             CNA_CBUF_CON0_WEIGHT_BANK(12 - data_bank) | CNA_CBUF_CON0_DATA_BANK(data_bank));
    /* DATA_ENTRIES = row bytes / 64 (facts 2.10 CBUF sizing), row = W(1) x K x esize. */
    npu_emit(s, REG_CNA_CBUF_CON1,
             CNA_CBUF_CON1_DATA_ENTRIES((uint32_t)NPU_DIV_ROUND_UP((uint64_t)k * esize, 64)));
    npu_emit(s, REG_CNA_CVT_CON0,
             CNA_CVT_CON0_DATA_SIGN(1) | CNA_CVT_CON0_CVT_TYPE(NPU_CVT_ORDER_ADD_FIRST) |
                 CNA_CVT_CON0_CVT_BYPASS(1));
    npu_emit(s, REG_CNA_CVT_CON1, CNA_CVT_CON1_CVT_SCALE0(1));
    npu_emit(s, REG_CNA_CVT_CON2, CNA_CVT_CON2_CVT_SCALE1(1));
    npu_emit(s, REG_CNA_CVT_CON3, CNA_CVT_CON3_CVT_SCALE2(1));
    npu_emit(s, REG_CNA_CVT_CON4, CNA_CVT_CON4_CVT_SCALE3(1));
    npu_emit(s, REG_CNA_FC_CON0, 0);
    npu_emit(s, REG_CNA_FC_CON1, 0);
    npu_emit(s, REG_CNA_PAD_CON0, 0);
    npu_emit_reloc(s, REG_CNA_FEATURE_DATA_ADDR, p->input.buffer, p->input.offset);
    npu_emit(s, REG_CNA_FC_CON2, 0);
    npu_emit(s, REG_CNA_DMA_CON0,
             CNA_DMA_CON0_WEIGHT_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 CNA_DMA_CON0_DATA_BURST_LEN(NPU_BURST_LEN_BURST16));
    /* Normal-mode strides, W = 1, H = M: LINE = 4 W, SURF = W (H - 4), negative wraps in 28
     * bits (facts 2.10; M = 1 gives -3 as MTX). */
    npu_emit(s, REG_CNA_DMA_CON1, CNA_DMA_CON1_LINE_STRIDE(4));
    npu_emit(s, REG_CNA_DMA_CON2, CNA_DMA_CON2_SURF_STRIDE((uint32_t)((int32_t)m - 4)));
    npu_emit(s, REG_CNA_FC_DATA_SIZE0,
             CNA_FC_DATA_SIZE0_DMA_WIDTH(1) | CNA_FC_DATA_SIZE0_DMA_HEIGHT(m));
    npu_emit(s, REG_CNA_FC_DATA_SIZE1, CNA_FC_DATA_SIZE1_DMA_CHANNEL(k));
    npu_emit(s, REG_CNA_DCOMP_CTRL, 0);
    npu_emit(s, REG_CNA_DCOMP_REGNUM, 0);
    npu_emit_reloc(s, REG_CNA_DCOMP_ADDR0, p->weight.buffer, p->weight.offset);
    for (unsigned i = 0; i < REG_CNA_DCOMP_AMOUNT__COUNT; i++)
        npu_emit(s, REG_CNA_DCOMP_AMOUNT(i), 0);
    npu_emit(s, REG_CNA_CVT_CON5, 0);
    npu_emit(s, REG_CNA_PAD_CON1, 0);

    /* QD_EN: MTX sets it for fp16 only (facts 5.2, open question 6.8). */
    npu_emit(s, REG_CORE_MISC_CFG,
             CORE_MISC_CFG_PROC_PRECISION(cna_prec) | CORE_MISC_CFG_QD_EN(int8 ? 0 : 1));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_0,
             CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(m - 1) | CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH(0));
    npu_emit(s, REG_CORE_DATAOUT_SIZE_1, CORE_DATAOUT_SIZE_1_DATAOUT_CHANNEL(n - 1));
    npu_emit(s, REG_CORE_CLIP_TRUNCATE, 0);
    npu_emit(s, REG_CORE_UNDOC_3030, 0);

    npu_emit(s, REG_DPU_FEATURE_MODE_CFG,
             DPU_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 DPU_FEATURE_MODE_CFG_OUTPUT_MODE(NPU_DPU_OUTPUT_MODE_MEMORY));
    npu_emit(s, REG_DPU_DATA_FORMAT,
             DPU_DATA_FORMAT_OUT_PRECISION(dpu_out) | DPU_DATA_FORMAT_IN_PRECISION(dpu_in) |
                 DPU_DATA_FORMAT_PROC_PRECISION(dpu_in));
    npu_emit(s, REG_DPU_OFFSET_PEND, 0);
    npu_emit_reloc(s, REG_DPU_DST_BASE_ADDR, p->output.buffer, p->output.offset);
    npu_emit(s, REG_DPU_DST_SURF_STRIDE, DPU_DST_SURF_STRIDE_DST_SURF_STRIDE(m)); /* W x H */
    npu_emit(s, REG_DPU_DATA_CUBE_WIDTH, DPU_DATA_CUBE_WIDTH_WIDTH(0));
    npu_emit(s, REG_DPU_DATA_CUBE_HEIGHT, DPU_DATA_CUBE_HEIGHT_HEIGHT(m - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_NOTCH_ADDR, 0);
    npu_emit(s, REG_DPU_DATA_CUBE_CHANNEL,
             DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(n - 1) | DPU_DATA_CUBE_CHANNEL_CHANNEL(n - 1));
    npu_emit(s, REG_DPU_BS_CFG,
             DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
                 DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_BYPASS(1));
    npu_emit(s, REG_DPU_BS_ALU_CFG, 0);
    npu_emit(s, REG_DPU_BS_MUL_CFG, 0);
    npu_emit(s, REG_DPU_BS_RELUX_CMP_VALUE, 0);
    npu_emit(s, REG_DPU_BS_OW_CFG,
             DPU_BS_OW_CFG_SIZE_E_2(size_e) | DPU_BS_OW_CFG_SIZE_E_1(size_e) |
                 DPU_BS_OW_CFG_SIZE_E_0(size_e) | DPU_BS_OW_CFG_OD_BYPASS(1));
    npu_emit(s, REG_DPU_BS_OW_OP, 0);
    npu_emit(s, REG_DPU_WDMA_SIZE_0, DPU_WDMA_SIZE_0_CHANNEL_WDMA(n - 1));
    npu_emit(s, REG_DPU_WDMA_SIZE_1,
             DPU_WDMA_SIZE_1_HEIGHT_WDMA(m - 1) | DPU_WDMA_SIZE_1_WIDTH_WDMA(0));
    npu_emit(s, REG_DPU_BN_CFG,
             DPU_BN_CFG_BN_RELU_BYPASS(1) | DPU_BN_CFG_BN_MUL_BYPASS(1) |
                 DPU_BN_CFG_BN_ALU_BYPASS(1) | DPU_BN_CFG_BN_BYPASS(1));
    npu_emit(s, REG_DPU_BN_ALU_CFG, 0);
    npu_emit(s, REG_DPU_BN_MUL_CFG, 0);
    npu_emit(s, REG_DPU_BN_RELUX_CMP_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CFG,
             DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
                 DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_BYPASS(1) |
                 DPU_EW_CFG_EW_BYPASS(1));
    npu_emit(s, REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CVT_SCALE_VALUE, DPU_EW_CVT_SCALE_VALUE_EW_OP_CVT_SCALE(1));
    npu_emit(s, REG_DPU_EW_RELUX_CMP_VALUE, 0);
    npu_emit(s, REG_DPU_OUT_CVT_OFFSET, 0);
    npu_emit(s, REG_DPU_OUT_CVT_SCALE,
             DPU_OUT_CVT_SCALE_FP32TOFP16_EN(fp16_out ? 1 : 0) |
                 DPU_OUT_CVT_SCALE_OUT_CVT_SCALE(1));
    npu_emit(s, REG_DPU_OUT_CVT_SHIFT, 0);
    for (unsigned i = 0; i < REG_DPU_EW_OP_VALUE__COUNT; i++)
        npu_emit(s, REG_DPU_EW_OP_VALUE(i), 0);
    npu_emit(s, REG_DPU_SURFACE_ADD, DPU_SURFACE_ADD_SURF_ADD(m * (size_e + 1)));
    npu_emit(s, REG_DPU_UNDOC_40C4, 0);
    emit_dpu_lut_off(s);
    return npu_stream_end_task(s, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU);
}

enum npu_status
npu_ref_eltwise_emit(struct npu_stream *s, const struct npu_ref_eltwise *p)
{
    uint32_t prec = p->precision, size_code, ew_cfg, rdma_mode;
    bool fp32_internal, op_cvt_bypass;
    enum npu_status st;

    switch (p->precision) {
    case NPU_PRECISION_INT8: size_code = NPU_ELEM_SIZE_8BIT; break;
    case NPU_PRECISION_INT16:
    case NPU_PRECISION_FP16: size_code = NPU_ELEM_SIZE_16BIT; break;
    case NPU_PRECISION_INT32: size_code = NPU_ELEM_SIZE_32BIT; break;
    default: return refuse(s, "elementwise precision must be int8, int16, fp16 or int32 (A.2)");
    }
    if (p->op > NPU_REF_EW_MIN)
        return refuse(s, "unknown elementwise op");
    if (!p->w || !p->c || p->w - 1 > DPU_DATA_CUBE_WIDTH_WIDTH__MAX ||
        p->c - 1 > DPU_DATA_CUBE_CHANNEL_CHANNEL__MAX ||
        p->w > DPU_DST_SURF_STRIDE_DST_SURF_STRIDE__MAX)
        return refuse(s, "elementwise shape exceeds the register fields");
    if (p->fp32_internal > 0 && prec != NPU_PRECISION_FP16)
        return refuse(s, "fp32 internal compute applies to fp16 only");
    fp32_internal = prec == NPU_PRECISION_FP16 &&
                    (p->fp32_internal < 0 ? p->op != NPU_REF_EW_DIV : p->fp32_internal > 0);

    /* EW_CFG per A.2: per-pixel operand from ERDMA, element size, ReLU and LUT bypassed; ALU
     * ops carry their algorithm (MAX/MIN also EQUAL_EN), MUL sets OP_TYPE. The operand
     * converter is bypassed for int32 (A.2) and, as in RKNN's fp16 templates, for MUL and DIV
     * (NOTES S18: 0x108003c4, 0x108303c0). */
    op_cvt_bypass =
        prec == NPU_PRECISION_INT32 ||
        (prec == NPU_PRECISION_FP16 && (p->op == NPU_REF_EW_MUL || p->op == NPU_REF_EW_DIV));
    ew_cfg = DPU_EW_CFG_EW_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
             DPU_EW_CFG_EDATA_SIZE(size_code) | DPU_EW_CFG_EW_RELU_BYPASS(1) |
             DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_SRC(NPU_OPERAND_SRC_MEMORY) |
             DPU_EW_CFG_EW_OP_CVT_BYPASS(op_cvt_bypass ? 1 : 0);
    switch (p->op) {
    case NPU_REF_EW_ADD: ew_cfg |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD); break;
    case NPU_REF_EW_SUB: ew_cfg |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MINUS); break;
    case NPU_REF_EW_DIV: ew_cfg |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_DIV); break;
    case NPU_REF_EW_MAX:
        ew_cfg |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MAX) | DPU_EW_CFG_EW_EQUAL_EN(1);
        break;
    case NPU_REF_EW_MIN:
        ew_cfg |= DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MIN) | DPU_EW_CFG_EW_EQUAL_EN(1);
        break;
    case NPU_REF_EW_MUL: ew_cfg |= DPU_EW_CFG_EW_OP_TYPE(NPU_EW_OP_TYPE_MUL); break;
    }
    rdma_mode = DPU_RDMA_FEATURE_MODE_CFG_IN_PRECISION(prec) |
                DPU_RDMA_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                DPU_RDMA_FEATURE_MODE_CFG_PROC_PRECISION(prec) |
                DPU_RDMA_FEATURE_MODE_CFG_MRDMA_FP16TOFP32_EN(fp32_internal ? 1 : 0) |
                DPU_RDMA_FEATURE_MODE_CFG_FLYING_MODE(1);

    st = npu_stream_begin_task(s);
    if (st != NPU_OK)
        return st;
    const uint32_t s_ptr = DPU_S_POINTER_POINTER_PP_EN(1) | DPU_S_POINTER_EXECUTER_PP_EN(1) |
                           DPU_S_POINTER_POINTER_PP_MODE(1);
    npu_emit(s, REG_DPU_S_POINTER, s_ptr);
    npu_emit(s, REG_DPU_RDMA_S_POINTER, s_ptr);
    npu_emit(s, REG_DPU_FEATURE_MODE_CFG,
             DPU_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST16) |
                 DPU_FEATURE_MODE_CFG_OUTPUT_MODE(NPU_DPU_OUTPUT_MODE_MEMORY) |
                 DPU_FEATURE_MODE_CFG_FLYING_MODE(1));
    npu_emit(s, REG_DPU_DATA_FORMAT,
             DPU_DATA_FORMAT_OUT_PRECISION(prec) | DPU_DATA_FORMAT_IN_PRECISION(prec) |
                 DPU_DATA_FORMAT_PROC_PRECISION(prec));
    npu_emit(s, REG_DPU_OFFSET_PEND, 0);
    npu_emit_reloc(s, REG_DPU_DST_BASE_ADDR, p->z.buffer, p->z.offset);
    npu_emit(s, REG_DPU_DST_SURF_STRIDE, DPU_DST_SURF_STRIDE_DST_SURF_STRIDE(p->w)); /* W x 1 */
    npu_emit(s, REG_DPU_DATA_CUBE_WIDTH, DPU_DATA_CUBE_WIDTH_WIDTH(p->w - 1));
    npu_emit(s, REG_DPU_DATA_CUBE_HEIGHT, DPU_DATA_CUBE_HEIGHT_HEIGHT(0));
    npu_emit(s, REG_DPU_DATA_CUBE_NOTCH_ADDR, 0);
    npu_emit(s, REG_DPU_DATA_CUBE_CHANNEL,
             DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(p->c - 1) |
                 DPU_DATA_CUBE_CHANNEL_CHANNEL(p->c - 1));
    npu_emit(s, REG_DPU_BS_CFG,
             DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
                 DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_BYPASS(1));
    npu_emit(s, REG_DPU_BS_ALU_CFG, 0);
    npu_emit(s, REG_DPU_BS_MUL_CFG, 0);
    npu_emit(s, REG_DPU_BS_RELUX_CMP_VALUE, 0);
    npu_emit(s, REG_DPU_BS_OW_CFG, DPU_BS_OW_CFG_OD_BYPASS(1));
    npu_emit(s, REG_DPU_BS_OW_OP, 0);
    npu_emit(s, REG_DPU_WDMA_SIZE_0, DPU_WDMA_SIZE_0_CHANNEL_WDMA(p->c - 1));
    npu_emit(s, REG_DPU_WDMA_SIZE_1,
             DPU_WDMA_SIZE_1_HEIGHT_WDMA(0) | DPU_WDMA_SIZE_1_WIDTH_WDMA(p->w - 1));
    npu_emit(s, REG_DPU_BN_CFG,
             DPU_BN_CFG_BN_RELU_BYPASS(1) | DPU_BN_CFG_BN_MUL_BYPASS(1) |
                 DPU_BN_CFG_BN_ALU_BYPASS(1) | DPU_BN_CFG_BN_BYPASS(1));
    npu_emit(s, REG_DPU_BN_ALU_CFG, 0);
    npu_emit(s, REG_DPU_BN_MUL_CFG, 0);
    npu_emit(s, REG_DPU_BN_RELUX_CMP_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CFG, ew_cfg);
    npu_emit(s, REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    npu_emit(s, REG_DPU_EW_CVT_SCALE_VALUE, DPU_EW_CVT_SCALE_VALUE_EW_OP_CVT_SCALE(1));
    npu_emit(s, REG_DPU_EW_RELUX_CMP_VALUE, 0);
    npu_emit(s, REG_DPU_OUT_CVT_OFFSET, 0);
    npu_emit(s, REG_DPU_OUT_CVT_SCALE,
             DPU_OUT_CVT_SCALE_FP32TOFP16_EN(fp32_internal ? 1 : 0) |
                 DPU_OUT_CVT_SCALE_OUT_CVT_SCALE(1));
    npu_emit(s, REG_DPU_OUT_CVT_SHIFT, 0);
    for (unsigned i = 0; i < REG_DPU_EW_OP_VALUE__COUNT; i++)
        npu_emit(s, REG_DPU_EW_OP_VALUE(i), 0);
    npu_emit(s, REG_DPU_SURFACE_ADD, DPU_SURFACE_ADD_SURF_ADD(p->w)); /* SIZE_E 0: = stride */
    npu_emit(s, REG_DPU_UNDOC_40C4, 0);
    emit_dpu_lut_off(s);

    npu_emit(s, REG_DPU_RDMA_DATA_CUBE_WIDTH, DPU_RDMA_DATA_CUBE_WIDTH_WIDTH(p->w - 1));
    npu_emit(s, REG_DPU_RDMA_DATA_CUBE_HEIGHT, DPU_RDMA_DATA_CUBE_HEIGHT_HEIGHT(0));
    npu_emit(s, REG_DPU_RDMA_DATA_CUBE_CHANNEL, DPU_RDMA_DATA_CUBE_CHANNEL_CHANNEL(p->c - 1));
    npu_emit_reloc(s, REG_DPU_RDMA_SRC_BASE_ADDR, p->x.buffer, p->x.offset);
    npu_emit(s, REG_DPU_RDMA_BRDMA_CFG, 0);
    npu_emit(s, REG_DPU_RDMA_BS_BASE_ADDR, 0);
    npu_emit(s, REG_DPU_RDMA_NRDMA_CFG, 0);
    npu_emit(s, REG_DPU_RDMA_BN_BASE_ADDR, 0);
    npu_emit(s, REG_DPU_RDMA_ERDMA_CFG,
             DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                 DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE(size_code));
    npu_emit_reloc(s, REG_DPU_RDMA_EW_BASE_ADDR, p->y.buffer, p->y.offset);
    npu_emit(s, REG_DPU_RDMA_EW_SURF_STRIDE, DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE(p->w));
    npu_emit(s, REG_DPU_RDMA_FEATURE_MODE_CFG, rdma_mode);
    npu_emit(s, REG_DPU_RDMA_SRC_DMA_CFG, 0);
    npu_emit(s, REG_DPU_RDMA_SURF_NOTCH, 0);
    npu_emit(s, REG_DPU_RDMA_PAD_CFG, 0);
    npu_emit(s, REG_DPU_RDMA_WEIGHT,
             DPU_RDMA_WEIGHT_E_WEIGHT(1) | DPU_RDMA_WEIGHT_N_WEIGHT(1) |
                 DPU_RDMA_WEIGHT_B_WEIGHT(1) | DPU_RDMA_WEIGHT_M_WEIGHT(1));
    npu_emit(s, REG_DPU_RDMA_EW_SURF_NOTCH, 0);
    return npu_stream_end_task(s, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA);
}
