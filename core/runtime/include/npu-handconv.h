/* SPDX-License-Identifier: MIT */
/*
 * npu-handconv.h: builds complete one-task conv programs for the simulator
 * tests and npu-selftest from a plain description (the A.1 register set of facts Appendix A
 * generalised with the §2.10 rules: strides 4W / W(H-4), DATA_ENTRIES,
 * bank split, SIZE_E, SURFACE_ADD), plus NC1HWC2 / weight packing and a
 * double-precision reference convolution. Registers can be overridden by
 * writing them again before the tail (the last write wins, facts §1.3).
 */
#ifndef NPU_HANDCONV_H
#define NPU_HANDCONV_H

#include "npu-handprog.h"

struct tconv {
    unsigned prec;     /* NPU_CNA_PRECISION_INT8/INT16/FP16 */
    unsigned out_prec; /* DPU OUT_PRECISION */
    uint32_t C, H, W, K, kh, kw, sx, sy, pad_t, pad_l, dil, out_h, out_w;
    bool depthwise;
    int32_t pad_value;
    uint32_t in, wt, out; /* IOVAs */
};

static inline unsigned
tc_esize(unsigned prec)
{
    return prec == NPU_CNA_PRECISION_INT8 ? 1 : 2;
}

static inline unsigned
tc_obytes(unsigned p)
{
    return p == NPU_PRECISION_INT8                                 ? 1
           : (p == NPU_PRECISION_INT16 || p == NPU_PRECISION_FP16) ? 2
                                                                   : 4;
}

/* Output channels the CORE/DPU carry: kernels (or channels) padded to 8 the
 * way RKNN pads them (NOTES S20). */
static inline uint32_t
tc_kout(const struct tconv *t)
{
    uint32_t k = t->depthwise ? t->C : t->K;
    return (k + 7) / 8 * 8;
}

static inline void
tc_body(struct tprog *p, const struct tconv *t)
{
    unsigned es = tc_esize(t->prec), ob = tc_obytes(t->out_prec);
    uint32_t kg = t->prec == NPU_CNA_PRECISION_INT8 ? 32 : 16;
    uint32_t entries = (t->W * t->C * es + 63) / 64;
    uint32_t data_bank = (t->H * entries * 64 + 32767) / 32768;
    uint32_t nk = t->depthwise ? 1 : t->K;
    uint32_t per_kernel = t->kw * t->kh * t->C * es;
    uint32_t kout = tc_kout(t);
    uint32_t size_e = kg * ob / 16 - 1;
    uint32_t surf = t->out_w * t->out_h;
    unsigned mode = t->depthwise ? NPU_CONV_MODE_DEPTHWISE : NPU_CONV_MODE_DIRECT;
    if (t->depthwise && t->prec == NPU_CNA_PRECISION_INT8)
        size_e = 3; /* facts §2.10: int8 depthwise 64-channel groups */

    tp_reg(p, REG_DPU_S_POINTER, 0x0e);
    tp_reg(p, REG_CNA_CONV_CON1,
           CNA_CONV_CON1_PROC_PRECISION(t->prec) | CNA_CONV_CON1_IN_PRECISION(t->prec) |
               CNA_CONV_CON1_CONV_MODE(mode));
    tp_reg(p, REG_CNA_CONV_CON2, CNA_CONV_CON2_FEATURE_GRAINS(t->kh + t->sy + 1));
    tp_reg(p, REG_CNA_CONV_CON3,
           CNA_CONV_CON3_CONV_X_STRIDE(t->sx) | CNA_CONV_CON3_CONV_Y_STRIDE(t->sy) |
               CNA_CONV_CON3_ATROUS_X_DILATION(t->dil) | CNA_CONV_CON3_ATROUS_Y_DILATION(t->dil));
    tp_reg(p, REG_CNA_DATA_SIZE0,
           CNA_DATA_SIZE0_DATAIN_WIDTH(t->W) | CNA_DATA_SIZE0_DATAIN_HEIGHT(t->H));
    tp_reg(p, REG_CNA_DATA_SIZE1,
           CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(t->C - 1) | CNA_DATA_SIZE1_DATAIN_CHANNEL(t->C));
    tp_reg(p, REG_CNA_DATA_SIZE2, CNA_DATA_SIZE2_DATAOUT_WIDTH(t->out_w));
    tp_reg(p, REG_CNA_DATA_SIZE3, CNA_DATA_SIZE3_DATAOUT_ATOMICS(surf));
    tp_reg(p, REG_CNA_WEIGHT_SIZE0, per_kernel * nk);
    tp_reg(p, REG_CNA_WEIGHT_SIZE1, per_kernel);
    tp_reg(p, REG_CNA_WEIGHT_SIZE2,
           CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(t->kw) | CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(t->kh) |
               CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(nk));
    tp_reg(p, REG_CNA_CBUF_CON0,
           CNA_CBUF_CON0_DATA_BANK(data_bank) | CNA_CBUF_CON0_WEIGHT_BANK(12 - data_bank));
    tp_reg(p, REG_CNA_CBUF_CON1, CNA_CBUF_CON1_DATA_ENTRIES(entries));
    tp_reg(p, REG_CNA_CVT_CON0,
           CNA_CVT_CON0_DATA_SIGN(1) | CNA_CVT_CON0_CVT_TYPE(1) | CNA_CVT_CON0_CVT_BYPASS(1));
    for (unsigned i = 0; i < 4; i++)
        tp_reg(p, REG_CNA_CVT_CON1 + 4 * i, 1u << 16);
    tp_reg(p, REG_CNA_FC_CON0, 0);
    tp_reg(p, REG_CNA_FC_CON1, 0);
    tp_reg(p, REG_CNA_PAD_CON0, CNA_PAD_CON0_PAD_TOP(t->pad_t) | CNA_PAD_CON0_PAD_LEFT(t->pad_l));
    tp_reg(p, REG_CNA_FEATURE_DATA_ADDR, t->in);
    tp_reg(p, REG_CNA_FC_CON2, 0);
    tp_reg(p, REG_CNA_DMA_CON0, 0x000f000f);
    tp_reg(p, REG_CNA_DMA_CON1, CNA_DMA_CON1_LINE_STRIDE(4 * t->W));
    tp_reg(p, REG_CNA_DMA_CON2, CNA_DMA_CON2_SURF_STRIDE((uint32_t)(t->W * ((int)t->H - 4))));
    tp_reg(p, REG_CNA_FC_DATA_SIZE0,
           CNA_FC_DATA_SIZE0_DMA_WIDTH(t->W) | CNA_FC_DATA_SIZE0_DMA_HEIGHT(t->H));
    tp_reg(p, REG_CNA_FC_DATA_SIZE1, CNA_FC_DATA_SIZE1_DMA_CHANNEL(t->C));
    tp_reg(p, REG_CNA_DCOMP_CTRL, 0);
    tp_reg(p, REG_CNA_DCOMP_REGNUM, 0);
    tp_reg(p, REG_CNA_DCOMP_ADDR0, t->wt);
    tp_reg(p, REG_CNA_CVT_CON5, 0);
    tp_reg(p, REG_CNA_PAD_CON1, (uint32_t)t->pad_value);
    tp_reg(p, REG_CORE_MISC_CFG,
           CORE_MISC_CFG_PROC_PRECISION(t->prec) | CORE_MISC_CFG_DW_EN(t->depthwise));
    tp_reg(p, REG_CORE_DATAOUT_SIZE_0,
           CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(t->out_h - 1) |
               CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH(t->out_w - 1));
    tp_reg(p, REG_CORE_DATAOUT_SIZE_1, CORE_DATAOUT_SIZE_1_DATAOUT_CHANNEL(kout - 1));
    tp_reg(p, REG_CORE_CLIP_TRUNCATE, 0);
    tp_reg(p, REG_CORE_UNDOC_3030, 0);
    tp_reg(p, REG_DPU_FEATURE_MODE_CFG,
           DPU_FEATURE_MODE_CFG_BURST_LEN(15) | DPU_FEATURE_MODE_CFG_OUTPUT_MODE(2) |
               DPU_FEATURE_MODE_CFG_CONV_MODE(mode));
    tp_reg(p, REG_DPU_DATA_FORMAT,
           DPU_DATA_FORMAT_OUT_PRECISION(t->out_prec) | DPU_DATA_FORMAT_IN_PRECISION(t->prec) |
               DPU_DATA_FORMAT_PROC_PRECISION(t->prec));
    tp_reg(p, REG_DPU_OFFSET_PEND, 0);
    tp_reg(p, REG_DPU_DST_BASE_ADDR, t->out);
    tp_reg(p, REG_DPU_DST_SURF_STRIDE, DPU_DST_SURF_STRIDE_DST_SURF_STRIDE(surf));
    tp_reg(p, REG_DPU_DATA_CUBE_WIDTH, t->out_w - 1);
    tp_reg(p, REG_DPU_DATA_CUBE_HEIGHT, t->out_h - 1);
    tp_reg(p, REG_DPU_DATA_CUBE_NOTCH_ADDR, 0);
    tp_reg(p, REG_DPU_DATA_CUBE_CHANNEL,
           DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL((t->depthwise ? t->C : t->K) - 1) |
               DPU_DATA_CUBE_CHANNEL_CHANNEL(kout - 1));
    tp_reg(p, REG_DPU_BS_CFG, 0x53);
    tp_reg(p, REG_DPU_BS_ALU_CFG, 0);
    tp_reg(p, REG_DPU_BS_MUL_CFG, 0);
    tp_reg(p, REG_DPU_BS_RELUX_CMP_VALUE, 0);
    tp_reg(p, REG_DPU_BS_OW_CFG,
           DPU_BS_OW_CFG_SIZE_E_0(size_e) | DPU_BS_OW_CFG_SIZE_E_1(size_e) |
               DPU_BS_OW_CFG_SIZE_E_2(size_e) | DPU_BS_OW_CFG_OD_BYPASS(1));
    tp_reg(p, REG_DPU_BS_OW_OP, 0);
    tp_reg(p, REG_DPU_WDMA_SIZE_0, DPU_WDMA_SIZE_0_CHANNEL_WDMA(kout - 1));
    tp_reg(p, REG_DPU_WDMA_SIZE_1,
           DPU_WDMA_SIZE_1_HEIGHT_WDMA(t->out_h - 1) | DPU_WDMA_SIZE_1_WIDTH_WDMA(t->out_w - 1));
    tp_reg(p, REG_DPU_BN_CFG, 0x53);
    tp_reg(p, REG_DPU_BN_ALU_CFG, 0);
    tp_reg(p, REG_DPU_BN_MUL_CFG, 0);
    tp_reg(p, REG_DPU_BN_RELUX_CMP_VALUE, 0);
    tp_reg(p, REG_DPU_EW_CFG, 0x383);
    tp_reg(p, REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    tp_reg(p, REG_DPU_EW_CVT_SCALE_VALUE, 1);
    tp_reg(p, REG_DPU_EW_RELUX_CMP_VALUE, 0);
    tp_reg(p, REG_DPU_OUT_CVT_OFFSET, 0);
    tp_reg(p, REG_DPU_OUT_CVT_SCALE,
           (t->out_prec == NPU_PRECISION_FP16 ? DPU_OUT_CVT_SCALE_FP32TOFP16_EN(1) : 0) | 1);
    tp_reg(p, REG_DPU_OUT_CVT_SHIFT, 0);
    for (unsigned i = 0; i < 8; i++)
        tp_reg(p, REG_DPU_EW_OP_VALUE_0 + 4 * i, 0);
    tp_reg(p, REG_DPU_SURFACE_ADD, DPU_SURFACE_ADD_SURF_ADD(surf * (size_e + 1)));
    tp_reg(p, REG_DPU_UNDOC_40C4, 0);
}

/* Input element (c, h, w) offset in NC1HWC2 (facts §2.10). */
static inline size_t
tc_in_off(const struct tconv *t, uint32_t c, uint32_t h, uint32_t w)
{
    unsigned es = tc_esize(t->prec), c2 = 16 / es;
    return (size_t)(c / c2) * t->H * t->W * 16 + ((size_t)h * t->W + w) * 16 + (c % c2) * es;
}

static inline size_t
tc_out_off(const struct tconv *t, uint32_t k, uint32_t y, uint32_t x)
{
    unsigned ob = tc_obytes(t->out_prec), c2 = 16 / ob;
    return (size_t)(k / c2) * t->out_h * t->out_w * 16 + ((size_t)y * t->out_w + x) * 16 +
           (k % c2) * ob;
}

static inline size_t
tc_in_bytes(const struct tconv *t)
{
    unsigned c2 = 16 / tc_esize(t->prec);
    return (size_t)((t->C + c2 - 1) / c2) * t->H * t->W * 16;
}

static inline size_t
tc_out_bytes(const struct tconv *t)
{
    unsigned c2 = 16 / tc_obytes(t->out_prec);
    return (size_t)((tc_kout(t) + c2 - 1) / c2) * t->out_h * t->out_w * 16;
}

static inline size_t
tc_w_bytes(const struct tconv *t)
{
    return (size_t)(t->depthwise ? 1 : t->K) * t->C * t->kh * t->kw * tc_esize(t->prec);
}

/* Packed weight offset in elements (facts §2.10), kernel k, channel c. */
static inline size_t
tc_w_index(const struct tconv *t, uint32_t k, uint32_t c, uint32_t ky, uint32_t kx)
{
    const uint32_t KG = t->prec == NPU_CNA_PRECISION_INT8 ? 32 : 16;
    const uint32_t CB = t->depthwise && t->prec == NPU_CNA_PRECISION_INT8 ? 64 : 32;
    uint32_t K = t->depthwise ? 1 : t->K;
    uint32_t kg = k / KG, kin = k % KG, kgs = NPU_MIN(KG, K - kg * KG);
    uint32_t cb = c / CB, cin = c % CB, cbs = NPU_MIN(CB, t->C - cb * CB);
    size_t taps = (size_t)t->kh * t->kw;
    return (size_t)kg * KG * t->C * taps + (size_t)cb * CB * taps * kgs +
           ((size_t)ky * t->kw + kx) * kgs * cbs + (size_t)kin * cbs + cin;
}

static inline void
tc_put(uint8_t *p, unsigned prec, double v)
{
    if (prec == NPU_CNA_PRECISION_FP16) {
        uint16_t h = npu_fp32_to_fp16((float)v);
        memcpy(p, &h, 2);
    } else if (prec == NPU_CNA_PRECISION_INT8) {
        p[0] = (uint8_t)(int8_t)v;
    } else {
        int16_t s = (int16_t)v;
        memcpy(p, &s, 2);
    }
}

/* Writes in[C][H][W] and w[K][C][kh][kw] (depthwise: w[C][kh][kw]). */
static inline void
tc_store(const struct tconv *t, uint8_t *in_host, uint8_t *w_host, const double *in,
         const double *w)
{
    unsigned es = tc_esize(t->prec);
    for (uint32_t c = 0; c < t->C; c++)
        for (uint32_t h = 0; h < t->H; h++)
            for (uint32_t x = 0; x < t->W; x++)
                tc_put(in_host + tc_in_off(t, c, h, x), t->prec,
                       in[((size_t)c * t->H + h) * t->W + x]);
    uint32_t K = t->depthwise ? 1 : t->K;
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t c = 0; c < t->C; c++)
            for (uint32_t ky = 0; ky < t->kh; ky++)
                for (uint32_t kx = 0; kx < t->kw; kx++)
                    tc_put(w_host + es * tc_w_index(t, k, c, ky, kx), t->prec,
                           w[(((size_t)k * t->C + c) * t->kh + ky) * t->kw + kx]);
}

/* Exact reference accumulator of output (k, y, x). */
static inline double
tc_ref(const struct tconv *t, const double *in, const double *w, uint32_t k, uint32_t y, uint32_t x)
{
    double acc = 0;
    uint32_t d = t->dil + 1;
    uint32_t c0 = t->depthwise ? k : 0, c1 = t->depthwise ? k + 1 : t->C;
    for (uint32_t c = c0; c < c1; c++)
        for (uint32_t ky = 0; ky < t->kh; ky++)
            for (uint32_t kx = 0; kx < t->kw; kx++) {
                int64_t iy = (int64_t)y * t->sy + (int64_t)ky * d - t->pad_t;
                int64_t ix = (int64_t)x * t->sx + (int64_t)kx * d - t->pad_l;
                double xv = (iy >= 0 && iy < t->H && ix >= 0 && ix < t->W)
                                ? in[((size_t)c * t->H + iy) * t->W + ix]
                                : (t->prec == NPU_CNA_PRECISION_FP16
                                       ? (double)npu_fp16_to_fp32((uint16_t)t->pad_value)
                                       : (double)t->pad_value);
                size_t wi = t->depthwise ? ((size_t)c * t->kh + ky) * t->kw + kx
                                         : (((size_t)k * t->C + c) * t->kh + ky) * t->kw + kx;
                acc += xv * w[wi];
            }
    return acc;
}

#endif /* NPU_HANDCONV_H */
