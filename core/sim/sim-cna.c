/* SPDX-License-Identifier: MIT */
/*
 * sim-cna.c: CNA (feature and weight DMA, CBUF, input converter) and CORE
 * (MAC array and accumulators): direct and depthwise convolution as facts
 * §5.2 defines it,
 *
 *   acc[k][y][x] = sum_c sum_ky sum_kx in[c][y*sy + ky*dy - pad_top]
 *                                          [x*sx + kx*dx - pad_left] * w[k][c][ky][kx]
 *
 * with out-of-range taps reading PAD_CON1, for int8, int16 and fp16 inputs.
 * fp16 products are summed in fp32 (sim-gemm.c); integers exactly in 64 bits,
 * then CLIP_TRUNCATE shifts with ROUND_TYPE and saturates to int32 before the
 * DPU (facts §5.2, §5.5).
 *
 * Feature addressing follows the decoding facts §2.10 recommends, accepting
 * only the verified stride patterns (normal NC1HWC2: LINE = 4 W and LINE +
 * SURF = W x H_full; small-channel ARGB mode: LINE = W, LINE + SURF = W x
 * H_full; GROUP_LINE_OFF one-row tiles of NOTES S12); anything else is an
 * unverified pattern. Weights are read from DCOMP_ADDR0 in the packed layout
 * [kernel group][32-channel block][ky][kx][kernel][channel] (facts §2.10).
 * The CBUF is checked: banks, the input tile against DATA_BANK, weights
 * resident or streamed, and WEIGHT_REUSE / DATA_REUSE take what an earlier
 * task left there.
 */
#include "sim-priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim-gemm.h"
#include "sim-num.h"

/* Decoded CNA + CORE programming of one task. */
struct conv {
    unsigned prec;  /* enum npu_cna_precision */
    unsigned esize; /* bytes per element */
    unsigned c2;    /* channels per 16-byte atom */
    bool depthwise;
    unsigned argb; /* real channels in small-channel mode, else 0 */
    bool group_line_off;
    uint32_t in_w, in_h, c, c_real;
    uint32_t out_w, out_h, k, k_out;
    uint32_t kw, kh, sx, sy, dx, dy;
    uint32_t pad_top, pad_left;
    int64_t pad_value;
    uint32_t feature, weights;
    uint64_t line_bytes, surf_bytes, pixel_bytes;
    uint32_t w_bytes, w_per_kernel;
    uint32_t data_bank, weight_bank, data_entries;
    bool weight_reuse, data_reuse;
    bool cvt; /* input converter active */
    uint32_t cvt_con0, cvt_lane[4];
    bool qd_en;
    uint32_t clip, clip_half_up;
};

static unsigned
kernel_group(unsigned prec)
{
    return prec == NPU_CNA_PRECISION_INT8 ? SIM_KERNEL_GROUP_INT8 : SIM_KERNEL_GROUP_16BIT;
}

/* The packed weight layout (facts §2.10): [kernel group of KG][channel block]
 * [ky][kx][kernel in group][channel in block]; the last group / block hold the
 * remaining kernels / channels. The channel block is 32, and 64 for int8
 * depthwise (Mesa's rkt_fill_weights doubles its input-channel group for
 * depthwise). load_weights() walks it. */

static bool
decode(struct sim_exec *x, struct conv *v)
{
    bool ok = true;
#define R(off) sim_reg(x, off, &ok)
    uint32_t con1 = R(REG_CNA_CONV_CON1), con2 = R(REG_CNA_CONV_CON2);
    uint32_t con3 = R(REG_CNA_CONV_CON3);
    uint32_t ds0 = R(REG_CNA_DATA_SIZE0), ds1 = R(REG_CNA_DATA_SIZE1);
    uint32_t ds2 = R(REG_CNA_DATA_SIZE2), ds3 = R(REG_CNA_DATA_SIZE3);
    uint32_t ws0 = R(REG_CNA_WEIGHT_SIZE0), ws1 = R(REG_CNA_WEIGHT_SIZE1);
    uint32_t ws2 = R(REG_CNA_WEIGHT_SIZE2);
    uint32_t cb0 = R(REG_CNA_CBUF_CON0), cb1 = R(REG_CNA_CBUF_CON1);
    uint32_t cvt0 = R(REG_CNA_CVT_CON0), fc0 = R(REG_CNA_FC_CON0);
    uint32_t pad0 = R(REG_CNA_PAD_CON0), faddr = R(REG_CNA_FEATURE_DATA_ADDR);
    uint32_t dma1 = R(REG_CNA_DMA_CON1), dma2 = R(REG_CNA_DMA_CON2);
    uint32_t fds0 = R(REG_CNA_FC_DATA_SIZE0), fds1 = R(REG_CNA_FC_DATA_SIZE1);
    uint32_t dctrl = R(REG_CNA_DCOMP_CTRL), dregnum = R(REG_CNA_DCOMP_REGNUM);
    uint32_t waddr = R(REG_CNA_DCOMP_ADDR0);
    uint32_t misc = R(REG_CORE_MISC_CFG), os0 = R(REG_CORE_DATAOUT_SIZE_0);
    uint32_t os1 = R(REG_CORE_DATAOUT_SIZE_1), clip = R(REG_CORE_CLIP_TRUNCATE);
    if (!ok)
        return false;

    /* ---- mode and precision */
    unsigned mode = CNA_CONV_CON1_CONV_MODE__GET(con1);
    if (mode != NPU_CONV_MODE_DIRECT && mode != NPU_CONV_MODE_DEPTHWISE)
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "CNA: CONV_MODE %u is not direct (0) or "
                        "depthwise (3)",
                        mode);
    v->depthwise = mode == NPU_CONV_MODE_DEPTHWISE;
    if (CNA_CONV_CON1_DECONV__GET(con1))
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "CNA: DECONV=1: deconvolution has no open implementation to follow and "
                        "is not simulated (facts §5.2)");
    if ((bool)CORE_MISC_CFG_DW_EN__GET(misc) != v->depthwise)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "CNA CONV_MODE %u but CORE DW_EN %u: depthwise needs both (facts §5.2)",
                        mode, CORE_MISC_CFG_DW_EN__GET(misc));
    unsigned in_p = CNA_CONV_CON1_IN_PRECISION__GET(con1);
    unsigned proc_p = CNA_CONV_CON1_PROC_PRECISION__GET(con1);
    unsigned core_p = CORE_MISC_CFG_PROC_PRECISION__GET(misc);
    if (in_p != NPU_CNA_PRECISION_INT8 && in_p != NPU_CNA_PRECISION_INT16 &&
        in_p != NPU_CNA_PRECISION_FP16)
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "CNA: input precision %u (bf16/int4/tf32) is not simulated", in_p);
    if (proc_p != in_p || core_p != in_p) {
        if (!sim_unverified(x, "facts §2.9 working combinations",
                            "CNA IN_PRECISION %u / PROC_PRECISION %u / CORE PROC_PRECISION %u",
                            in_p, proc_p, core_p))
            return false;
    }
    v->prec = in_p;
    v->esize = in_p == NPU_CNA_PRECISION_INT8 ? 1 : 2;
    v->c2 = 16 / v->esize;

    /* ---- the fields only RKNN's multi-core plans or nobody use */
    if (CNA_CONV_CON2_KERNEL_GROUP__GET(con2) &&
        !sim_unverified(x, "NOTES S10: KERNEL_GROUP is always 0", "CNA KERNEL_GROUP = %u",
                        CNA_CONV_CON2_KERNEL_GROUP__GET(con2)))
        return false;
    if (CNA_CONV_CON2_MC_SPLIT__GET(con2) &&
        !sim_unverified(x, "errata S4: multi-core split code", "CNA CONV_CON2 split code %u",
                        CNA_CONV_CON2_MC_SPLIT__GET(con2)))
        return false;
    if ((CNA_CONV_CON2_CSC_DO_EN__GET(con2) || CNA_CONV_CON2_CSC_WO_EN__GET(con2) ||
         CNA_CONV_CON2_CMD_FIFO_SRST__GET(con2)) &&
        !sim_unverified(x, "facts §2.3: no program sets them",
                        "CNA CONV_CON2 scan-disable / FIFO-reset bits 0x%x", con2 & 7u))
        return false;
    if (CNA_CONV_CON3_NN_MODE__GET(con3) &&
        !sim_unverified(x, "facts §2.3 / errata S4: NN_MODE is kept 0", "CNA NN_MODE = %u",
                        CNA_CONV_CON3_NN_MODE__GET(con3)))
        return false;
    if (CNA_DATA_SIZE3_SURF_MODE__GET(ds3) &&
        !sim_unverified(x, "facts §2.3: SURF_MODE is always 0", "CNA SURF_MODE = %u",
                        CNA_DATA_SIZE3_SURF_MODE__GET(ds3)))
        return false;
    if (CNA_FC_CON0_FC_SKIP_EN__GET(fc0))
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "CNA: FC zero skipping (FC_SKIP_EN) is not "
                        "simulated");
    if (dctrl || dregnum)
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "CNA: weight decompression (DCOMP_CTRL 0x%x, DCOMP_REGNUM %u) is not "
                        "simulated; every generator writes 0",
                        dctrl, dregnum);

    /* ---- geometry */
    v->in_w = CNA_DATA_SIZE0_DATAIN_WIDTH__GET(ds0);
    v->in_h = CNA_DATA_SIZE0_DATAIN_HEIGHT__GET(ds0);
    v->c = CNA_DATA_SIZE1_DATAIN_CHANNEL__GET(ds1);
    v->c_real = CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL__GET(ds1) + 1;
    v->out_w = CNA_DATA_SIZE2_DATAOUT_WIDTH__GET(ds2);
    v->out_h = CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT__GET(os0) + 1;
    v->k_out = CORE_DATAOUT_SIZE_1_DATAOUT_CHANNEL__GET(os1) + 1;
    v->k = CNA_WEIGHT_SIZE2_WEIGHT_KERNELS__GET(ws2);
    v->kw = CNA_WEIGHT_SIZE2_WEIGHT_WIDTH__GET(ws2);
    v->kh = CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT__GET(ws2);
    v->sx = CNA_CONV_CON3_CONV_X_STRIDE__GET(con3);
    v->sy = CNA_CONV_CON3_CONV_Y_STRIDE__GET(con3);
    v->dx = CNA_CONV_CON3_ATROUS_X_DILATION__GET(con3) + 1;
    v->dy = CNA_CONV_CON3_ATROUS_Y_DILATION__GET(con3) + 1;
    v->pad_top = CNA_PAD_CON0_PAD_TOP__GET(pad0);
    v->pad_left = CNA_PAD_CON0_PAD_LEFT__GET(pad0);
    v->feature = faddr;
    v->weights = waddr;
    v->w_bytes = CNA_WEIGHT_SIZE0_WEIGHT_BYTES__GET(ws0);
    v->w_per_kernel = CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL__GET(ws1);
    v->data_bank = CNA_CBUF_CON0_DATA_BANK__GET(cb0);
    v->weight_bank = CNA_CBUF_CON0_WEIGHT_BANK__GET(cb0);
    v->data_entries = CNA_CBUF_CON1_DATA_ENTRIES__GET(cb1);
    v->weight_reuse = CNA_CBUF_CON0_WEIGHT_REUSE__GET(cb0);
    v->data_reuse = CNA_CBUF_CON0_DATA_REUSE__GET(cb0);
    v->qd_en = CORE_MISC_CFG_QD_EN__GET(misc);
    v->clip = CORE_CLIP_TRUNCATE_CLIP_TRUNCATE__GET(clip);
    v->clip_half_up = CORE_CLIP_TRUNCATE_ROUND_TYPE__GET(clip);
    v->group_line_off = CNA_CONV_CON1_GROUP_LINE_OFF__GET(con1);

    if (!v->in_w || !v->in_h || !v->c || !v->out_w || !v->k || !v->kw || !v->kh)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "CNA: empty geometry (input %ux%u C %u, output width %u, %u kernels of "
                        "%ux%u)",
                        v->in_w, v->in_h, v->c, v->out_w, v->k, v->kw, v->kh);
    if (!v->sx || !v->sy)
        return sim_fail(x, NPU_ERR_HW_REFUSED, "CNA: conv stride %ux%u must be at least 1", v->sx,
                        v->sy);
    if ((v->dx > 1 || v->dy > 1) &&
        !sim_unverified(x, "facts §6.14: dilation encoding untested",
                        "CNA ATROUS dilation %u x %u (taken as value + 1)", v->dx, v->dy))
        return false;
    if (CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH__GET(os0) + 1 != v->out_w ||
        CNA_DATA_SIZE3_DATAOUT_ATOMICS__GET(ds3) != v->out_w * v->out_h)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "CNA/CORE: output sizes disagree (CNA DATAOUT_WIDTH %u, CORE width %u x "
                        "height %u, DATAOUT_ATOMICS %u)",
                        v->out_w, CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH__GET(os0) + 1, v->out_h,
                        CNA_DATA_SIZE3_DATAOUT_ATOMICS__GET(ds3));
    if (v->depthwise) {
        if (v->k != 1 && !sim_unverified(x, "facts §5.2: depthwise has WEIGHT_KERNELS = 1",
                                         "depthwise conv with WEIGHT_KERNELS = %u", v->k))
            return false;
        if (v->k_out < v->c)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CORE: depthwise output has %u channels for %u input channels",
                            v->k_out, v->c);
    } else if (v->k_out < v->k) {
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "CORE: DATAOUT_CHANNEL %u is below WEIGHT_KERNELS %u", v->k_out, v->k);
    }
    if (CNA_FC_DATA_SIZE0_DMA_WIDTH__GET(fds0) != v->in_w ||
        CNA_FC_DATA_SIZE0_DMA_HEIGHT__GET(fds0) != v->in_h ||
        CNA_FC_DATA_SIZE1_DMA_CHANNEL__GET(fds1) != v->c) {
        if (!sim_unverified(x, "facts §2.3: DMA sizes equal datain sizes outside zero-skip",
                            "CNA FC_DATA_SIZE %ux%ux%u differs from DATA_SIZE %ux%ux%u",
                            CNA_FC_DATA_SIZE0_DMA_WIDTH__GET(fds0),
                            CNA_FC_DATA_SIZE0_DMA_HEIGHT__GET(fds0),
                            CNA_FC_DATA_SIZE1_DMA_CHANNEL__GET(fds1), v->in_w, v->in_h, v->c))
            return false;
    }

    /* ---- small-channel (ARGB / non-aligned) input, facts §2.10 */
    unsigned argb = CNA_CONV_CON1_ARGB_IN__GET(con1);
    bool nonalign = CNA_CONV_CON1_NONALIGN_DMA__GET(con1);
    if (argb || nonalign) {
        if (!(argb >= NPU_ARGB_IN_1CH && argb <= NPU_ARGB_IN_4CH) || !nonalign) {
            if (!sim_unverified(x, "facts §2.10: ARGB_IN 8..11 with NONALIGN_DMA",
                                "CNA ARGB_IN %u with NONALIGN_DMA %u", argb, nonalign))
                return false;
        }
        v->argb = argb >= NPU_ARGB_IN_1CH ? argb - NPU_ARGB_IN_1CH + 1 : 0;
        if (!v->argb)
            return sim_fail(x, NPU_ERR_UNSUPPORTED,
                            "CNA: NONALIGN_DMA without a small-channel ARGB_IN mode is not "
                            "simulated");
        if (v->c_real != v->argb || v->argb > v->c)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CNA: ARGB_IN names %u channels but DATAIN_CHANNEL_REAL + 1 = %u "
                            "(DATAIN_CHANNEL %u)",
                            v->argb, v->c_real, v->c);
        if (v->depthwise)
            return sim_fail(x, NPU_ERR_UNSUPPORTED,
                            "CNA: depthwise with ARGB input is not "
                            "simulated");
    }

    /* ---- DMA strides: only the verified patterns (facts §2.10, §6.1, NOTES S12) */
    uint32_t line = CNA_DMA_CON1_LINE_STRIDE__GET(dma1);
    int64_t surf = (int32_t)(CNA_DMA_CON2_SURF_STRIDE__GET(dma2) << 4) >> 4; /* 28-bit signed */
    int64_t total = (int64_t)line + surf;
    if (v->argb) {
        /* line = LINE pixels, surface = LINE + SURF pixels; one surface. */
        uint32_t mesa_line = NPU_MAX(v->in_w, 16u);
        bool verified = (line == v->in_w || line == mesa_line) && total > 0 && total % line == 0 &&
                        total / line >= v->in_h;
        if (!verified && !sim_unverified(x, "facts §2.10 non-aligned stride pattern",
                                         "CNA ARGB strides LINE %u SURF %lld for a %ux%u tile",
                                         line, (long long)surf, v->in_w, v->in_h))
            return false;
        v->pixel_bytes = (uint64_t)v->argb * v->esize;
        v->line_bytes = (uint64_t)line * v->pixel_bytes;
        v->surf_bytes = (uint64_t)(total > 0 ? total : 0) * v->pixel_bytes;
    } else if (!v->group_line_off) {
        bool verified = line == 4ull * v->in_w && total > 0 && total % v->in_w == 0 &&
                        total / v->in_w >= v->in_h;
        if (!verified && !sim_unverified(x, "facts §2.10 / §6.1 CNA stride units",
                                         "CNA strides LINE %u SURF %lld for a %ux%u tile", line,
                                         (long long)surf, v->in_w, v->in_h))
            return false;
        v->pixel_bytes = 16;
        v->line_bytes = 4ull * line;
        v->surf_bytes = total > 0 ? 16ull * (uint64_t)total : 0;
    } else {
        /* NOTES S12 (RKNN matmul tiles): one-row tiles of a LINE-wide map;
         * the surface advance is the tile width plus SURF. */
        bool verified = v->in_h == 1 && line >= v->in_w && surf == (int64_t)line - v->in_w;
        if (!verified && !sim_unverified(x, "NOTES S12: GROUP_LINE_OFF proven for one-row tiles",
                                         "CNA GROUP_LINE_OFF strides LINE %u SURF %lld for a "
                                         "%ux%u tile",
                                         line, (long long)surf, v->in_w, v->in_h))
            return false;
        int64_t s_atoms = (int64_t)(v->in_h - 1) * line + v->in_w + surf;
        v->pixel_bytes = 16;
        v->line_bytes = 16ull * line;
        v->surf_bytes = s_atoms > 0 ? 16ull * (uint64_t)s_atoms : 0;
    }

    /* ---- input converter (facts §2.3 CVT_CON0..5, §5.2) */
    v->cvt_con0 = cvt0;
    v->cvt = !CNA_CVT_CON0_CVT_BYPASS__GET(cvt0);
    if (v->cvt) {
        uint32_t c1 = R(REG_CNA_CVT_CON1), c2 = R(REG_CNA_CVT_CON2);
        uint32_t c3 = R(REG_CNA_CVT_CON3), c4 = R(REG_CNA_CVT_CON4);
        if (!ok)
            return false;
        v->cvt_lane[0] = c1;
        v->cvt_lane[1] = c2;
        v->cvt_lane[2] = c3;
        v->cvt_lane[3] = c4;
        if (v->prec == NPU_CNA_PRECISION_FP16)
            return sim_fail(x, NPU_ERR_UNSUPPORTED,
                            "CNA: the input converter on fp16 data is not simulated (every fp16 "
                            "program bypasses it)");
        /* Mesa's 1-channel uint8 path is the only hardware-proven use. */
        if (!(v->argb && v->prec == NPU_CNA_PRECISION_INT8) &&
            !sim_unverified(x, "facts §5.2: only Mesa's small-channel int8 path uses it",
                            "CNA input converter on %s input",
                            v->argb ? "small-channel int16" : "NC1HWC2"))
            return false;
    }

    /* ---- weights */
    uint64_t taps = (uint64_t)v->kw * v->kh;
    uint64_t per_kernel = taps * v->c * v->esize;
    uint64_t nk = v->depthwise ? 1 : v->k;
    if (v->w_per_kernel != per_kernel || v->w_bytes != per_kernel * nk)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "CNA: weight sizes disagree with the geometry: WEIGHT_BYTES_PER_KERNEL "
                        "%u (expected %llu = %ux%u x %u channels x %u B), WEIGHT_BYTES %u "
                        "(expected %llu)",
                        v->w_per_kernel, (unsigned long long)per_kernel, v->kw, v->kh, v->c,
                        v->esize, v->w_bytes, (unsigned long long)(per_kernel * nk));
    if (v->weights & 0xfu)
        return sim_fail(x, NPU_ERR_FAULT,
                        "CNA: weight address DCOMP_ADDR0 0x%08x is not 16-byte aligned (facts "
                        "§2.10)",
                        v->weights);
    v->clip &= CORE_CLIP_TRUNCATE_CLIP_TRUNCATE__MASK;
#undef R
    return true;
}

/* CBUF rules (facts §2.10, §2.11, §6.2, §6.12, NOTES S14). */
static bool
check_cbuf(struct sim_exec *x, const struct conv *v)
{
    if (!v->data_bank || !v->weight_bank || v->data_bank + v->weight_bank > SIM_CBUF_BANKS)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "CNA: CBUF split DATA_BANK %u + WEIGHT_BANK %u: the CBUF has %u banks and "
                        "each part needs at least one",
                        v->data_bank, v->weight_bank, SIM_CBUF_BANKS);
    uint64_t data_cap = (uint64_t)v->data_bank * SIM_CBUF_BANK_BYTES;
    if (v->argb) {
        /* RKNN: DATA_ENTRIES = W x H_tile in small-channel mode (NOTES S2
         * channeltile); each pixel occupies one padded atom. */
        if (v->data_entries != v->in_w * v->in_h &&
            !sim_unverified(x, "NOTES §2 ARGB case: DATA_ENTRIES = W x H_tile",
                            "CNA DATA_ENTRIES %u for a %ux%u small-channel tile", v->data_entries,
                            v->in_w, v->in_h))
            return false;
        uint64_t need = (uint64_t)v->in_w * v->in_h * v->c * v->esize;
        if (need > data_cap)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CNA: CBUF overflow: the %ux%u input tile needs %llu bytes but "
                            "DATA_BANK %u holds %llu",
                            v->in_w, v->in_h, (unsigned long long)need, v->data_bank,
                            (unsigned long long)data_cap);
    } else {
        /* DATA_ENTRIES = ceil(row bytes / 64) in normal mode (facts §2.10;
         * 64-byte units, §6.2). The whole tile is buffered (NOTES S14). */
        uint64_t row = (uint64_t)v->in_w * v->c * v->esize;
        uint64_t entries = (row + 63) / 64;
        if (v->data_entries < entries)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CNA: DATA_ENTRIES %u is too small for a row of %u x %u channels "
                            "(%llu entries of 64 bytes)",
                            v->data_entries, v->in_w, v->c, (unsigned long long)entries);
        if (v->data_entries != entries &&
            !sim_unverified(x, "facts §2.10: DATA_ENTRIES = ceil(row bytes / 64)",
                            "CNA DATA_ENTRIES %u for a row needing %llu", v->data_entries,
                            (unsigned long long)entries))
            return false;
        uint64_t need = (uint64_t)v->data_entries * 64 * v->in_h;
        if (need > data_cap)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CNA: CBUF overflow: %u input rows of %u entries need %llu bytes but "
                            "DATA_BANK %u holds %llu",
                            v->in_h, v->data_entries, (unsigned long long)need, v->data_bank,
                            (unsigned long long)data_cap);
    }
    uint64_t w_cap = (uint64_t)v->weight_bank * SIM_CBUF_BANK_BYTES;
    if (v->w_bytes > w_cap) {
        /* Streamed weights (RKNN c160h40 with 3 weight banks, NOTES §2). At
         * least one kernel group must fit: beyond that nothing is known. */
        uint64_t kg = v->depthwise ? 1 : NPU_MIN(v->k, kernel_group(v->prec));
        uint64_t group = kg * v->w_per_kernel;
        if (group > w_cap &&
            !sim_unverified(x, "facts §6.12: weight-bank arithmetic",
                            "CNA: one kernel group of weights (%llu bytes) exceeds WEIGHT_BANK %u "
                            "(%llu bytes)",
                            (unsigned long long)group, v->weight_bank, (unsigned long long)w_cap))
            return false;
        if (v->weight_reuse)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CNA: WEIGHT_REUSE with %u bytes of weights that cannot stay in %u "
                            "weight banks",
                            v->w_bytes, v->weight_bank);
    }
    return true;
}

/* Converter of facts §5.2 on one integer input value of lane `lane`. */
static inline int64_t
convert_in(const struct conv *v, int64_t xv, unsigned lane)
{
    uint32_t l = v->cvt_lane[lane & 3];
    int64_t scale = (int64_t)(l >> 16);
    int64_t offset = (int16_t)(l & 0xffff);
    unsigned trunc = (v->cvt_con0 >> (4 + 6 * (lane & 3))) & 0x3f;
    int half_up = CNA_CVT_CON0_ROUND_TYPE__GET(v->cvt_con0);
    int64_t r;
    if (CNA_CVT_CON0_CVT_TYPE__GET(v->cvt_con0))
        r = sim_shift_round((xv + offset) * scale, trunc, half_up);
    else
        r = sim_shift_round(xv * scale, trunc, half_up) + offset;
    return v->prec == NPU_CNA_PRECISION_INT8 ? sim_sat(r, -128, 127) : sim_sat(r, -32768, 32767);
}

/* NPU_SIM_CNA_FTZ: fp16 subnormals (|v| < 2^-14) as signed zeros, a what-if for a CNA that
 * does not keep them (the facts file does not say; the default keeps them). */
static void
flush_subnormals(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] != 0.0f && fabsf(v[i]) < 0x1p-14f)
            v[i] = copysignf(0.0f, v[i]);
}

/* Reads the input tile into planar [c][h][w] (C = DATAIN_CHANNEL channels). */
static bool
load_input(struct sim_exec *x, const struct conv *v, float *inf, int32_t *ini)
{
    uint64_t plane = (uint64_t)v->in_w * v->in_h;
    uint64_t extent;
    if (v->argb) {
        extent = (uint64_t)(v->in_h - 1) * v->line_bytes + (uint64_t)v->in_w * v->pixel_bytes;
    } else {
        uint32_t c1 = (v->c + v->c2 - 1) / v->c2;
        extent = (uint64_t)(c1 - 1) * v->surf_bytes + (uint64_t)(v->in_h - 1) * v->line_bytes +
                 (uint64_t)v->in_w * 16;
    }
    const uint8_t *base = sim_dma(x, NPU_BLOCK_CNA, "feature read", v->feature, extent);
    if (!base)
        return false;
    bool is_fp = v->prec == NPU_CNA_PRECISION_FP16;
    bool sign = !v->cvt || CNA_CVT_CON0_DATA_SIGN__GET(v->cvt_con0);
    if (is_fp && !v->argb && v->c2 == 8) {
        /* fp16 feature cube: walk memory in its own order (C2 = 8 lanes of 16 bytes per
         * pixel), the same element-for-element decode as the general loop below */
        uint32_t c1n = (v->c + v->c2 - 1) / v->c2;
        for (uint32_t c1 = 0; c1 < c1n; c1++) {
            uint32_t lanes = NPU_MIN(v->c2, v->c - c1 * v->c2);
            float *dst0 = inf + (size_t)c1 * v->c2 * plane;
            for (uint32_t h = 0; h < v->in_h; h++) {
                const uint8_t *row = base + (size_t)c1 * v->surf_bytes + h * v->line_bytes;
                float *dst = dst0 + (size_t)h * v->in_w;
                for (uint32_t w = 0; w < v->in_w; w++) {
                    uint16_t hv[8];
                    memcpy(hv, row + (size_t)w * 16, 16);
                    for (uint32_t l = 0; l < lanes; l++)
                        dst[(size_t)l * plane + w] = sim_f16_to_f32(hv[l]);
                }
            }
        }
        x->rec.feature_bytes = (uint64_t)c1n * v->in_w * v->in_h * 16;
        if (x->cna_ftz)
            flush_subnormals(inf, (size_t)v->c * plane);
        return true;
    }
    for (uint32_t c = 0; c < v->c; c++) {
        for (uint32_t h = 0; h < v->in_h; h++) {
            const uint8_t *row;
            size_t step;
            bool present = true;
            if (v->argb) {
                row = base + h * v->line_bytes + (size_t)c * v->esize;
                step = v->pixel_bytes;
                /* channels past the real ones are not in memory; they enter
                 * the MAC array as zeros [DER] */
                present = c < v->argb;
            } else {
                row = base + (size_t)(c / v->c2) * v->surf_bytes + h * v->line_bytes +
                      (size_t)(c % v->c2) * v->esize;
                step = 16;
            }
            size_t o = (size_t)c * plane + (size_t)h * v->in_w;
            for (uint32_t w = 0; w < v->in_w; w++) {
                const uint8_t *p = row + w * step;
                if (is_fp) {
                    uint16_t hv = 0;
                    if (present)
                        memcpy(&hv, p, 2);
                    inf[o + w] = sim_f16_to_f32(hv);
                    continue;
                }
                int64_t val;
                if (!present) {
                    val = 0;
                } else if (v->esize == 1) {
                    val = sign ? (int8_t)p[0] : p[0];
                } else {
                    uint16_t hv;
                    memcpy(&hv, p, 2);
                    val = sign ? (int16_t)hv : hv;
                }
                if (v->cvt && present)
                    val = convert_in(v, val, c);
                ini[o + w] = (int32_t)val;
            }
        }
    }
    x->rec.feature_bytes = v->argb
                               ? (uint64_t)v->in_w * v->in_h * v->pixel_bytes
                               : (uint64_t)((v->c + v->c2 - 1) / v->c2) * v->in_w * v->in_h * 16;
    if (is_fp && x->cna_ftz)
        flush_subnormals(inf, (size_t)v->c * plane);
    return true;
}

/* Unpacks the weights into a row-major matrix [kernel][c][ky][kx] (for
 * depthwise [c][ky][kx]), walking the packed buffer in its own order
 * (sequential reads). */
static bool
load_weights(struct sim_exec *x, const struct conv *v, const uint8_t *wsrc, float *wf, int32_t *wi)
{
    const uint32_t KG = kernel_group(v->prec);
    const uint32_t CB = v->depthwise && v->prec == NPU_CNA_PRECISION_INT8 ? 64 : 32;
    uint32_t nk = v->depthwise ? 1 : v->k;
    size_t taps = (size_t)v->kh * v->kw;
    size_t n = 0; /* element index in the packed buffer */
    for (uint32_t k0 = 0; k0 < nk; k0 += KG) {
        uint32_t kgs = NPU_MIN(KG, nk - k0);
        for (uint32_t c0 = 0; c0 < v->c; c0 += CB) {
            uint32_t cbs = NPU_MIN(CB, v->c - c0);
            for (size_t t = 0; t < taps; t++)
                for (uint32_t kin = 0; kin < kgs; kin++) {
                    size_t dst = ((size_t)(k0 + kin) * v->c + c0) * taps + t;
                    if (v->prec == NPU_CNA_PRECISION_FP16) {
                        const uint8_t *src = wsrc + 2 * n;
                        if (taps == 1) { /* contiguous: the common 1x1 / MatMul case */
                            float *restrict d = wf + dst;
                            for (uint32_t cin = 0; cin < cbs; cin++) {
                                uint16_t hv;
                                memcpy(&hv, src + 2 * cin, 2);
                                d[cin] = sim_f16_to_f32(hv);
                            }
                            n += cbs;
                            continue;
                        }
                        for (uint32_t cin = 0; cin < cbs; cin++) {
                            uint16_t hv;
                            memcpy(&hv, src + 2 * cin, 2);
                            wf[dst + cin * taps] = sim_f16_to_f32(hv);
                        }
                    } else if (v->esize == 1) {
                        for (uint32_t cin = 0; cin < cbs; cin++)
                            wi[dst + cin * taps] = (int8_t)wsrc[n + cin];
                    } else {
                        for (uint32_t cin = 0; cin < cbs; cin++) {
                            int16_t sv;
                            memcpy(&sv, wsrc + 2 * (n + cin), 2);
                            wi[dst + cin * taps] = sv;
                        }
                    }
                    n += cbs;
                }
        }
    }
    (void)x;
    return n * v->esize == v->w_bytes;
}

/* Offset in an input plane of the tap (ky, kx) of output pixel (y, xo), or -1 if the tap
 * falls in the padding. */
static inline int64_t
tap_offset(const struct conv *v, uint32_t y, uint32_t xo, uint32_t ky, uint32_t kx)
{
    int64_t iy = (int64_t)y * v->sy + (int64_t)ky * v->dy - v->pad_top;
    int64_t ix = (int64_t)xo * v->sx + (int64_t)kx * v->dx - v->pad_left;
    return iy >= 0 && iy < v->in_h && ix >= 0 && ix < v->in_w ? iy * v->in_w + ix : -1;
}

/* im2col_f / im2col_i: fill col[(c*taps + t)][p] for output pixels p0..p0+np-1, with the pad
 * value for taps outside the input (one body for the fp32 and the int32 pipelines). */
#define DEFINE_IM2COL(name, T)                                                                     \
    static void name(const struct conv *v, const T *in, T pad, uint32_t p0, uint32_t np, T *col)   \
    {                                                                                              \
        size_t taps = (size_t)v->kh * v->kw;                                                       \
        for (uint32_t c = 0; c < v->c; c++) {                                                      \
            const T *plane = in + (size_t)c * v->in_w * v->in_h;                                   \
            for (uint32_t ky = 0; ky < v->kh; ky++)                                                \
                for (uint32_t kx = 0; kx < v->kw; kx++) {                                          \
                    T *dst = col + ((size_t)c * taps + ky * v->kw + kx) * np;                      \
                    for (uint32_t i = 0; i < np; i++) {                                            \
                        uint32_t p = p0 + i;                                                       \
                        int64_t o = tap_offset(v, p / v->out_w, p % v->out_w, ky, kx);             \
                        dst[i] = o >= 0 ? plane[o] : pad;                                          \
                    }                                                                              \
                }                                                                                  \
        }                                                                                          \
    }
DEFINE_IM2COL(im2col_f, float)
DEFINE_IM2COL(im2col_i, int32_t)

/* Whether some output tap falls outside the input (PAD_CON1 is then read). */
static bool
needs_padding(const struct conv *v)
{
    int64_t last_y = (int64_t)(v->out_h - 1) * v->sy + (int64_t)(v->kh - 1) * v->dy - v->pad_top;
    int64_t last_x = (int64_t)(v->out_w - 1) * v->sx + (int64_t)(v->kw - 1) * v->dx - v->pad_left;
    return v->pad_top || v->pad_left || last_y >= v->in_h || last_x >= v->in_w;
}

/* The CBUF's resident input-tile identity for DATA_REUSE. */
static void
data_key(const struct conv *v, uint32_t key[8])
{
    key[0] = v->in_w;
    key[1] = v->in_h;
    key[2] = v->c;
    key[3] = v->prec;
    key[4] = v->data_bank;
    key[5] = v->argb;
    key[6] = 0;
    key[7] = 0;
}

/* The row-major weight matrix of load_weights for this task, in *wf (fp16) or *wi. Unpacking
 * is a pure function of the packed bytes and the geometry in the key, so the core keeps the
 * last matrix with the bytes it came from and hands it out again when both are equal (a model
 * run frame after frame unpacks each weight set once; the bits are the same either way). The
 * matrix belongs to the core (freed with it). */
static bool
weight_matrix(struct sim_exec *x, const struct conv *v, const uint8_t *wsrc, float **wf,
              int32_t **wi)
{
    struct sim_cbuf *cb = &x->core->cbuf;
    bool is_fp = v->prec == NPU_CNA_PRECISION_FP16;
    uint32_t nk = v->depthwise ? 1 : v->k;
    size_t n = (size_t)nk * v->c * v->kh * v->kw;
    size_t bytes = n * (is_fp ? sizeof(float) : sizeof(int32_t));
    uint32_t key[8] = {v->prec, v->esize, v->depthwise, v->k, v->c, v->kh, v->kw, v->w_bytes};
    if (!(cb->wmemo_valid && !memcmp(cb->wmemo_key, key, sizeof(key)) &&
          !memcmp(cb->wmemo_src, wsrc, v->w_bytes))) {
        cb->wmemo_valid = false;
        if (cb->wmemo_mat_cap < bytes) {
            free(cb->wmemo_mat);
            cb->wmemo_mat = malloc(bytes ? bytes : 1);
            cb->wmemo_mat_cap = cb->wmemo_mat ? bytes : 0;
        }
        if (cb->wmemo_src_cap < v->w_bytes) {
            free(cb->wmemo_src);
            cb->wmemo_src = malloc(v->w_bytes ? v->w_bytes : 1);
            cb->wmemo_src_cap = cb->wmemo_src ? v->w_bytes : 0;
        }
        if (!cb->wmemo_mat || !cb->wmemo_src)
            return sim_fail(x, NPU_ERR_NOMEM, "no host memory for the weights");
        if (!load_weights(x, v, wsrc, is_fp ? cb->wmemo_mat : NULL, is_fp ? NULL : cb->wmemo_mat))
            return sim_fail(x, NPU_ERR_INTERNAL,
                            "CNA: weight layout walk disagrees with WEIGHT_BYTES");
        if (is_fp && x->cna_ftz)
            flush_subnormals(cb->wmemo_mat, n);
        memcpy(cb->wmemo_src, wsrc, v->w_bytes);
        memcpy(cb->wmemo_key, key, sizeof(key));
        cb->wmemo_valid = true;
    }
    *wf = is_fp ? cb->wmemo_mat : NULL;
    *wi = is_fp ? NULL : cb->wmemo_mat;
    return true;
}

bool
sim_cna_run(struct sim_exec *x, struct sim_cube *out)
{
    sim_num_init();
    struct conv v;
    memset(&v, 0, sizeof(v));
    if (!decode(x, &v) || !check_cbuf(x, &v))
        return false;
    struct sim_cbuf *cb = &x->core->cbuf;
    bool is_fp = v.prec == NPU_CNA_PRECISION_FP16;
    bool ok = true;
    if (needs_padding(&v)) {
        uint32_t pv = sim_reg(x, REG_CNA_PAD_CON1, &ok);
        if (!ok)
            return false;
        if (is_fp) {
            if (pv &&
                !sim_unverified(x, "facts §5.2: every fp16 program pads with 0",
                                "CNA PAD_VALUE 0x%08x on fp16 input (taken as fp16 bits)", pv))
                return false;
            v.pad_value = pv & 0xffff;
        } else {
            v.pad_value = v.esize == 1 ? (int8_t)(pv & 0xff) : (int16_t)(pv & 0xffff);
        }
    }

    /* ---- input tile (from memory, or the CBUF with DATA_REUSE) */
    size_t in_n = (size_t)v.c * v.in_w * v.in_h;
    uint64_t w_n = (uint64_t)(v.depthwise ? 1 : v.k) * v.c * v.kh * v.kw;
    if (in_n > (1u << 26) || w_n > (1u << 26))
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "CNA: %llu input / %llu weight elements are too many to simulate",
                        (unsigned long long)in_n, (unsigned long long)w_n);
    uint32_t key[8];
    data_key(&v, key);
    float *inf = NULL;
    int32_t *ini = NULL;
    bool owned_in = false;
    if (v.data_reuse) {
        if (!cb->data_valid || memcmp(cb->data_key, key, sizeof(key)) || cb->data_n != in_n)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CNA: DATA_REUSE=1 but the CBUF holds no input tile of this geometry "
                            "(%ux%u, %u channels) from an earlier task; the hardware would "
                            "compute on stale data",
                            v.in_w, v.in_h, v.c);
        inf = cb->data_f;
        ini = cb->data_i;
        x->rec.feature_bytes = 0;
        x->rec.cbuf_from = NPU_MIN(x->rec.cbuf_from, cb->data_task);
    } else {
        /* Keep the tile in the core's CBUF copy for a later DATA_REUSE. */
        if (cb->data_cap < in_n) {
            free(cb->data_f);
            free(cb->data_i);
            cb->data_f = malloc(in_n * sizeof(float));
            cb->data_i = malloc(in_n * sizeof(int32_t));
            cb->data_cap = (cb->data_f && cb->data_i) ? in_n : 0;
            if (!cb->data_cap) {
                cb->data_valid = false;
                return sim_fail(x, NPU_ERR_NOMEM, "no host memory for the input tile");
            }
        }
        inf = cb->data_f;
        ini = cb->data_i;
        cb->data_valid = false;
        if (!load_input(x, &v, inf, ini))
            return false;
        memcpy(cb->data_key, key, sizeof(key));
        cb->data_task = x->task;
        cb->data_n = in_n;
        cb->data_valid = true;
    }
    (void)owned_in;

    /* ---- weights (from memory, or resident with WEIGHT_REUSE) */
    const uint8_t *wsrc;
    if (v.weight_reuse) {
        if (!cb->weights_valid || cb->weight_bytes != v.w_bytes || cb->weight_bank0 != v.data_bank)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "CNA: WEIGHT_REUSE=1 but the CBUF holds no complete set of %u weight "
                            "bytes in banks %u..11 from an earlier task; the hardware would use "
                            "stale weights",
                            v.w_bytes, v.data_bank);
        wsrc = cb->weights;
        x->rec.weight_bytes = 0;
        x->rec.cbuf_from = NPU_MIN(x->rec.cbuf_from, cb->weights_task);
    } else {
        wsrc = sim_dma(x, NPU_BLOCK_CNA, "weight read", v.weights, v.w_bytes);
        if (!wsrc)
            return false;
        x->rec.weight_bytes = v.w_bytes;
        cb->weights_valid = false;
        if (v.w_bytes <= (uint64_t)v.weight_bank * SIM_CBUF_BANK_BYTES) {
            if (cb->weights_cap < v.w_bytes) {
                free(cb->weights);
                cb->weights = malloc(v.w_bytes);
                cb->weights_cap = cb->weights ? v.w_bytes : 0;
            }
            if (cb->weights) {
                memcpy(cb->weights, wsrc, v.w_bytes);
                cb->weights_valid = true;
                cb->weights_task = x->task;
                cb->weight_bytes = v.w_bytes;
                cb->weight_bank0 = v.data_bank;
            }
        }
    }

    /* ---- compute */
    uint32_t nk = v.depthwise ? 1 : v.k;
    size_t taps = (size_t)v.kh * v.kw;
    size_t ckk = (size_t)v.c * taps;
    size_t P = (size_t)v.out_w * v.out_h;
    /* 2^34 MACs is over ten times the largest vendor task (c160h40: 0.67 G);
     * beyond it a malformed program would only keep the host busy. */
    if ((double)P * (v.depthwise ? v.c : nk) * (v.depthwise ? taps : ckk) > 17179869184.0)
        return sim_fail(x, NPU_ERR_UNSUPPORTED,
                        "CNA/CORE: %ux%u outputs x %u kernels x %zu taps is too much work to "
                        "simulate",
                        v.out_w, v.out_h, v.depthwise ? v.c : nk, v.depthwise ? taps : ckk);
    if (!sim_cube_alloc(x, out, v.out_w, v.out_h, v.k_out, !is_fp))
        return false;
    float *wf = NULL;
    int32_t *wi = NULL;
    void *col = NULL;
    bool res = false;
    if (!weight_matrix(x, &v, wsrc, &wf, &wi))
        goto out;

    if (v.depthwise) {
        for (uint32_t c = 0; c < v.k_out; c++) {
            for (uint32_t y = 0; y < v.out_h; y++)
                for (uint32_t xo = 0; xo < v.out_w; xo++) {
                    float accf = 0.0f;
                    int64_t acci = 0;
                    if (c < v.c) {
                        const size_t pl = (size_t)c * v.in_w * v.in_h;
                        for (uint32_t ky = 0; ky < v.kh; ky++)
                            for (uint32_t kx = 0; kx < v.kw; kx++) {
                                int64_t to = tap_offset(&v, y, xo, ky, kx);
                                size_t wo = (size_t)c * taps + ky * v.kw + kx;
                                if (is_fp) {
                                    float xv = to >= 0 ? inf[pl + to]
                                                       : sim_f16_to_f32((uint16_t)v.pad_value);
                                    accf += xv * wf[wo];
                                } else {
                                    int64_t xv = to >= 0 ? ini[pl + to] : v.pad_value;
                                    acci += xv * wi[wo];
                                }
                            }
                    }
                    size_t o = ((size_t)c * v.out_h + y) * v.out_w + xo;
                    if (is_fp)
                        out->f[o] = accf;
                    else
                        out->i[o] = acci;
                }
        }
    } else {
        /* im2col in chunks of output pixels, then one GEMM per chunk:
         * out[k][p] = W[k][c*taps] x col[c*taps][p]. */
        size_t chunk = P;
        size_t limit = (size_t)4 << 20; /* elements per col chunk */
        if (ckk * chunk > limit)
            chunk = NPU_MAX(limit / ckk, (size_t)1);
        size_t esz = is_fp ? sizeof(float) : sizeof(int32_t);
        col = malloc(ckk * chunk * esz);
        void *tmp = malloc((size_t)nk * chunk * (is_fp ? sizeof(float) : sizeof(int64_t)));
        if (!col || !tmp) {
            free(tmp);
            sim_fail(x, NPU_ERR_NOMEM, "no host memory for the convolution");
            goto out;
        }
        bool direct = v.kh == 1 && v.kw == 1 && v.sx == 1 && v.sy == 1 && !v.pad_top &&
                      !v.pad_left && v.out_w == v.in_w && v.out_h == v.in_h && chunk == P;
        for (size_t p0 = 0; p0 < P; p0 += chunk) {
            size_t np = NPU_MIN(chunk, P - p0);
            if (is_fp) {
                const float *B = inf;
                if (!direct) {
                    im2col_f(&v, inf, sim_f16_to_f32((uint16_t)v.pad_value), (uint32_t)p0,
                             (uint32_t)np, col);
                    B = col;
                }
                /* one chunk: [nk][np] is the output's own layout, no copy needed */
                float *dst = np == P ? out->f : tmp;
                if (!sim_sgemm(nk, np, ckk, wf, B, dst)) {
                    free(tmp);
                    sim_fail(x, NPU_ERR_NOMEM, "no host memory for the convolution");
                    goto out;
                }
                for (uint32_t k = 0; dst == tmp && k < nk; k++)
                    memcpy(out->f + (size_t)k * P + p0, (float *)tmp + (size_t)k * np,
                           np * sizeof(float));
            } else {
                const int32_t *B = ini;
                if (!direct) {
                    im2col_i(&v, ini, (int32_t)v.pad_value, (uint32_t)p0, (uint32_t)np, col);
                    B = col;
                }
                if (!sim_igemm(nk, np, ckk, wi, B, tmp)) {
                    free(tmp);
                    sim_fail(x, NPU_ERR_NOMEM, "no host memory for the convolution");
                    goto out;
                }
                for (uint32_t k = 0; k < nk; k++)
                    memcpy(out->i + (size_t)k * P + p0, (int64_t *)tmp + (size_t)k * np,
                           np * sizeof(int64_t));
            }
        }
        free(tmp);
        /* Kernels past WEIGHT_KERNELS (channel padding) come out as 0. */
        for (uint32_t k = nk; k < v.k_out; k++) {
            if (is_fp)
                memset(out->f + (size_t)k * P, 0, P * sizeof(float));
            else
                memset(out->i + (size_t)k * P, 0, P * sizeof(int64_t));
        }
    }

    /* ---- integer accumulators: CLIP_TRUNCATE then int32 (facts §5.2). int16: the sums
     * held in the 48-bit accumulator (facts §3, saturating [DER]), and the shift, which
     * the TRM defines for integer accumulators (facts §2.4: right shift, ROUND_TYPE), is
     * taken as the facts say; no hardware-tested program shifts, so its ledger level is T.
     * int8 programs still must not shift (no source for the int8 accumulator's 34 bits
     * together with a shift). */
    if (!is_fp) {
        bool i16 = v.prec == NPU_CNA_PRECISION_INT16;
        if (v.clip && !i16 &&
            !sim_unverified(x, "facts §5.2: no program shifts the accumulators",
                            "CORE CLIP_TRUNCATE = %u", v.clip)) {
            goto out;
        }
        const int64_t a48 = ((int64_t)1 << 47) - 1;
        size_t n = (size_t)v.k_out * P;
        for (size_t i = 0; i < n; i++) {
            int64_t a = i16 ? sim_sat(out->i[i], -a48 - 1, a48) : out->i[i];
            out->i[i] = sim_sat(sim_shift_round(a, v.clip, v.clip_half_up), INT32_MIN, INT32_MAX);
        }
    } else if (v.clip && !sim_unverified(x, "facts §2.4: CLIP_TRUNCATE acts on integers",
                                         "CORE CLIP_TRUNCATE = %u on fp16", v.clip)) {
        goto out;
    }

    /* ---- CORE QD_EN: per-window input sums for the DPU CPEND stage [DER] */
    free(out->winsum);
    out->winsum = NULL;
    if (v.qd_en && !is_fp) {
        out->winsum = calloc(P, sizeof(int64_t));
        if (!out->winsum) {
            sim_fail(x, NPU_ERR_NOMEM, "no host memory");
            goto out;
        }
        for (uint32_t y = 0; y < v.out_h; y++)
            for (uint32_t xo = 0; xo < v.out_w; xo++) {
                int64_t s = 0;
                for (uint32_t c = 0; c < v.c; c++)
                    for (uint32_t ky = 0; ky < v.kh; ky++)
                        for (uint32_t kx = 0; kx < v.kw; kx++) {
                            int64_t iy = (int64_t)y * v.sy + (int64_t)ky * v.dy - v.pad_top;
                            int64_t ix = (int64_t)xo * v.sx + (int64_t)kx * v.dx - v.pad_left;
                            bool in = iy >= 0 && iy < v.in_h && ix >= 0 && ix < v.in_w;
                            s += in ? ini[((size_t)c * v.in_h + iy) * v.in_w + ix] : v.pad_value;
                        }
                out->winsum[(size_t)y * v.out_w + xo] = s;
            }
    }

    /* ---- timing model inputs */
    {
        const struct npu_timing_model *tm = npu_timing_model();
        bool i8 = v.prec == NPU_CNA_PRECISION_INT8;
        uint32_t kg = i8 ? tm->kernel_group_int8 : tm->kernel_group_fp16;
        uint64_t hw = (uint64_t)v.out_h * v.out_w * taps;
        uint32_t c_useful = v.argb ? v.argb : v.c;
        if (v.depthwise) {
            x->rec.mac_steps = NPU_DIV_ROUND_UP((uint64_t)v.c, kg) * hw;
            x->rec.macs = (uint64_t)c_useful * hw;
        } else {
            x->rec.mac_steps = NPU_DIV_ROUND_UP((uint64_t)v.k, kg) *
                               NPU_DIV_ROUND_UP((uint64_t)v.c, tm->channel_group) * hw;
            x->rec.macs = (uint64_t)v.k * c_useful * hw;
        }
        x->rec.mac_per_cycle = i8 ? tm->mac_per_cycle_int8 : tm->mac_per_cycle_fp16;
        x->rec.compute_s = (double)x->rec.mac_steps / tm->clock_hz;
    }
    res = true;
out:
    free(col); /* wf / wi belong to the core's weight memo */
    return res;
}
