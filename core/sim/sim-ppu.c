/* SPDX-License-Identifier: MIT */
/*
 * sim-ppu.c: the PPU (pooling) and PPU_RDMA, facts §5.4: max, min and
 * average pooling with kernel up to 16x16, stride up to 16, padding with a pad
 * value, fed by the DPU or (flying mode) by PPU_RDMA reading an NC1HWC2 cube
 * with explicit line and surface strides in bytes. Output: packed NC1HWC2 at
 * DST_BASE_ADDR with surface stride DST_SURF_STRIDE.
 *
 * Average pooling multiplies the window sum by RECIP_KERNEL_WIDTH and
 * RECIP_KERNEL_HEIGHT, each "reciprocal x 2^16" per the TRM; for integers that
 * is what the simulator does. For fp16 the register format is an open question
 * (facts §6.6: AB's working fp16 2x2 average uses 30720 = 0x7800, which is the
 * binary16 encoding of 32768 = 0.5 x 2^16); the simulator reads the fp16
 * registers as binary16 numbers scaled by 2^-16 and refuses fp average pooling
 * in strict mode.
 */
#include "sim-priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim-num.h"

static unsigned
prec_bytes(unsigned p)
{
    switch (p) {
    case NPU_PRECISION_INT8: return 1;
    case NPU_PRECISION_INT16:
    case NPU_PRECISION_FP16: return 2;
    case NPU_PRECISION_INT32:
    case NPU_PRECISION_FP32: return 4;
    default: return 0;
    }
}

static bool
is_float(unsigned p)
{
    return p == NPU_PRECISION_FP16 || p == NPU_PRECISION_FP32;
}

bool
sim_ppu_run(struct sim_exec *x, const struct sim_cube *from_dpu)
{
    sim_num_init();
    bool ok = true;
#define R(off) sim_reg(x, off, &ok)
    uint32_t iw = R(REG_PPU_DATA_CUBE_IN_WIDTH), ih = R(REG_PPU_DATA_CUBE_IN_HEIGHT);
    uint32_t ic = R(REG_PPU_DATA_CUBE_IN_CHANNEL), ow = R(REG_PPU_DATA_CUBE_OUT_WIDTH);
    uint32_t oh = R(REG_PPU_DATA_CUBE_OUT_HEIGHT), oc = R(REG_PPU_DATA_CUBE_OUT_CHANNEL);
    uint32_t mode = R(REG_PPU_OPERATION_MODE_CFG), kcfg = R(REG_PPU_POOLING_KERNEL_CFG);
    uint32_t padc = R(REG_PPU_POOLING_PADDING_CFG), dst = R(REG_PPU_DST_BASE_ADDR);
    uint32_t dss = R(REG_PPU_DST_SURF_STRIDE), fmt = R(REG_PPU_DATA_FORMAT);
    uint32_t misc = R(REG_PPU_MISC_CTRL);
    if (!ok)
        return false;
    uint32_t W = PPU_DATA_CUBE_IN_WIDTH_CUBE_IN_WIDTH__GET(iw) + 1;
    uint32_t H = PPU_DATA_CUBE_IN_HEIGHT_CUBE_IN_HEIGHT__GET(ih) + 1;
    uint32_t C = PPU_DATA_CUBE_IN_CHANNEL_CUBE_IN_CHANNEL__GET(ic) + 1;
    uint32_t OW = PPU_DATA_CUBE_OUT_WIDTH_CUBE_OUT_WIDTH__GET(ow) + 1;
    uint32_t OH = PPU_DATA_CUBE_OUT_HEIGHT_CUBE_OUT_HEIGHT__GET(oh) + 1;
    uint32_t OC = PPU_DATA_CUBE_OUT_CHANNEL_CUBE_OUT_CHANNEL__GET(oc) + 1;
    unsigned method = PPU_OPERATION_MODE_CFG_POOLING_METHOD__GET(mode);
    bool flying = PPU_OPERATION_MODE_CFG_FLYING_MODE__GET(mode);
    unsigned kw = PPU_POOLING_KERNEL_CFG_KERNEL_WIDTH__GET(kcfg) + 1;
    unsigned kh = PPU_POOLING_KERNEL_CFG_KERNEL_HEIGHT__GET(kcfg) + 1;
    unsigned sw = PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_WIDTH__GET(kcfg) + 1;
    unsigned sh = PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_HEIGHT__GET(kcfg) + 1;
    unsigned pl = PPU_POOLING_PADDING_CFG_PAD_LEFT__GET(padc);
    unsigned pr = PPU_POOLING_PADDING_CFG_PAD_RIGHT__GET(padc);
    unsigned pt = PPU_POOLING_PADDING_CFG_PAD_TOP__GET(padc);
    unsigned pb = PPU_POOLING_PADDING_CFG_PAD_BOTTOM__GET(padc);
    unsigned prec = PPU_DATA_FORMAT_PROC_PRECISION__GET(fmt);
    unsigned esz = prec_bytes(prec);
    bool fp = is_float(prec);
    uint64_t surf = (uint64_t)PPU_DST_SURF_STRIDE_DST_SURF_STRIDE__GET(dss) * 16;

    if (!esz)
        return sim_fail(x, NPU_ERR_UNSUPPORTED, "PPU: PROC_PRECISION %u is not simulated", prec);
    if (method > NPU_POOLING_METHOD_MIN)
        return sim_fail(x, NPU_ERR_HW_REFUSED, "PPU: POOLING_METHOD %u is not average, max or min",
                        method);
    if (PPU_OPERATION_MODE_CFG_INDEX_EN__GET(mode))
        return sim_fail(x, NPU_ERR_UNSUPPORTED, "PPU: INDEX_EN (argmax output) is not simulated");
    if ((PPU_OPERATION_MODE_CFG_USE_CNT__GET(mode) ||
         PPU_OPERATION_MODE_CFG_NOTCH_ADDR__GET(mode) || PPU_MISC_CTRL_NONALIGN__GET(misc) ||
         PPU_MISC_CTRL_MC_SURF_OUT__GET(misc)) &&
        !sim_unverified(x, "facts §2.7: no program sets them",
                        "PPU USE_CNT/NOTCH_ADDR 0x%x, MISC_CTRL 0x%x", mode, misc))
        return false;
    if ((bool)PPU_DATA_FORMAT_DPU_FLYIN__GET(fmt) == flying &&
        !sim_unverified(x, "facts §2.7: DPU_FLYIN marks DPU-fed pooling",
                        "PPU DATA_FORMAT DPU_FLYIN %u with FLYING_MODE %u",
                        PPU_DATA_FORMAT_DPU_FLYIN__GET(fmt), flying))
        return false;
    if (PPU_DATA_FORMAT_INDEX_ADD__GET(fmt) != PPU_DST_SURF_STRIDE_DST_SURF_STRIDE__GET(dss) &&
        !sim_unverified(x, "facts §2.7: INDEX_ADD = DST_SURF_STRIDE without INDEX_EN",
                        "PPU INDEX_ADD %u with DST_SURF_STRIDE %u",
                        PPU_DATA_FORMAT_INDEX_ADD__GET(fmt),
                        PPU_DST_SURF_STRIDE_DST_SURF_STRIDE__GET(dss)))
        return false;
    if (OC != C)
        return sim_fail(x, NPU_ERR_HW_REFUSED, "PPU: %u output channels for %u input channels", OC,
                        C);
    if (W + pl + pr < kw || H + pt + pb < kh || OW != (W + pl + pr - kw) / sw + 1 ||
        OH != (H + pt + pb - kh) / sh + 1) {
        if (!sim_unverified(x, "facts §5.4: out = (in + pads - k) / stride + 1",
                            "PPU output %ux%u for input %ux%u, kernel %ux%u, stride %ux%u, pads "
                            "l%u r%u t%u b%u",
                            OW, OH, W, H, kw, kh, sw, sh, pl, pr, pt, pb))
            return false;
    }
    if (dst & 0xfu)
        return sim_fail(x, NPU_ERR_FAULT, "PPU: DST_BASE_ADDR 0x%08x is not 16-byte aligned", dst);

    /* pad value (35 bits over two registers) */
    double pad_f = 0;
    int64_t pad_i = 0;
    if (pl || pr || pt || pb) {
        uint32_t p1 = R(REG_PPU_PADDING_VALUE_1_CFG), p2 = R(REG_PPU_PADDING_VALUE_2_CFG);
        if (!ok)
            return false;
        int64_t raw = ((int64_t)(p2 & 7u) << 32) | p1;
        if (raw & ((int64_t)1 << 34))
            raw -= (int64_t)1 << 35;
        if (fp) {
            if (raw &&
                !sim_unverified(x, "facts §5.4: pad-value format for fp pooling",
                                "PPU fp pad value 0x%llx (taken as fp32 bits)", (long long)raw))
                return false;
            pad_f = npu_bits_f32((uint32_t)raw);
        } else {
            pad_i = raw;
        }
    }

    /* average: reciprocals */
    double rw = 0, rh = 0;
    uint32_t rwi = 0, rhi = 0;
    if (method == NPU_POOLING_METHOD_AVERAGE) {
        uint32_t a = R(REG_PPU_RECIP_KERNEL_WIDTH), b = R(REG_PPU_RECIP_KERNEL_HEIGHT);
        if (!ok)
            return false;
        rwi = PPU_RECIP_KERNEL_WIDTH_RECIP_KERNEL_WIDTH__GET(a);
        rhi = PPU_RECIP_KERNEL_HEIGHT_RECIP_KERNEL_HEIGHT__GET(b);
        if (fp) {
            if (!sim_unverified(x, "facts §6.6: RECIP_KERNEL_* format for fp16",
                                "PPU fp average pooling with RECIP %u x %u (read as binary16 "
                                "x 2^-16)",
                                rwi, rhi))
                return false;
            rw = ldexp(sim_f16_to_f32((uint16_t)rwi), -16);
            rh = ldexp(sim_f16_to_f32((uint16_t)rhi), -16);
        }
    }

    /* ---- input */
    struct sim_cube *cube = &x->rdma_in;
    const struct sim_cube *src = from_dpu;
    if (flying) {
        uint32_t rw_ = R(REG_PPU_RDMA_CUBE_IN_WIDTH), rh_ = R(REG_PPU_RDMA_CUBE_IN_HEIGHT);
        uint32_t rc_ = R(REG_PPU_RDMA_CUBE_IN_CHANNEL), saddr = R(REG_PPU_RDMA_SRC_BASE_ADDR);
        uint32_t ls = R(REG_PPU_RDMA_SRC_LINE_STRIDE), ss = R(REG_PPU_RDMA_SRC_SURF_STRIDE);
        uint32_t rf = R(REG_PPU_RDMA_DATA_FORMAT);
        if (!ok)
            return false;
        if (PPU_RDMA_CUBE_IN_WIDTH_CUBE_IN_WIDTH__GET(rw_) + 1 != W ||
            PPU_RDMA_CUBE_IN_HEIGHT_CUBE_IN_HEIGHT__GET(rh_) + 1 != H ||
            PPU_RDMA_CUBE_IN_CHANNEL_CUBE_IN_CHANNEL__GET(rc_) + 1 != C)
            return sim_fail(x, NPU_ERR_HW_REFUSED, "PPU and PPU_RDMA input cubes differ");
        unsigned code = PPU_RDMA_DATA_FORMAT_IN_PRECISION__GET(rf);
        unsigned rbytes = code == NPU_ELEM_SIZE_8BIT    ? 1
                          : code == NPU_ELEM_SIZE_16BIT ? 2
                          : code == NPU_ELEM_SIZE_32BIT ? 4
                                                        : 0;
        if (rbytes != esz)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "PPU_RDMA element size code %u does not match the PPU precision %u "
                            "(facts §6.6)",
                            code, prec);
        uint64_t line = (uint64_t)PPU_RDMA_SRC_LINE_STRIDE_SRC_LINE_STRIDE__GET(ls) * 16;
        uint64_t sstr = (uint64_t)PPU_RDMA_SRC_SURF_STRIDE_SRC_SURF_STRIDE__GET(ss) * 16;
        unsigned c2 = 16 / esz;
        uint32_t c1 = (C + c2 - 1) / c2;
        uint64_t ext = (uint64_t)(c1 - 1) * sstr + (uint64_t)(H - 1) * line + (uint64_t)W * 16;
        if ((line < (uint64_t)W * 16 || (c1 > 1 && sstr < line * H)) &&
            !sim_unverified(x, "facts §2.7: PPU_RDMA strides overlap",
                            "PPU_RDMA line %llu / surface %llu bytes for %ux%u pixels",
                            (unsigned long long)line, (unsigned long long)sstr, W, H))
            return false;
        const uint8_t *base = sim_dma(x, NPU_BLOCK_PPU_RDMA, "PPU_RDMA input read", saddr, ext);
        if (!base || !sim_cube_alloc(x, cube, W, H, C, !fp))
            return false;
        for (uint32_t c = 0; c < C; c++)
            for (uint32_t y = 0; y < H; y++)
                for (uint32_t xx = 0; xx < W; xx++) {
                    const uint8_t *p = base + (c / c2) * sstr + y * line + xx * 16 + (c % c2) * esz;
                    size_t o = ((size_t)c * H + y) * W + xx;
                    if (prec == NPU_PRECISION_FP16) {
                        uint16_t hv;
                        memcpy(&hv, p, 2);
                        cube->f[o] = sim_f16_to_f32(hv);
                    } else if (prec == NPU_PRECISION_FP32) {
                        memcpy(&cube->f[o], p, 4);
                    } else if (esz == 1) {
                        cube->i[o] = (int8_t)p[0];
                    } else if (esz == 2) {
                        int16_t v;
                        memcpy(&v, p, 2);
                        cube->i[o] = v;
                    } else {
                        int32_t v;
                        memcpy(&v, p, 4);
                        cube->i[o] = v;
                    }
                }
        x->rec.rdma_bytes += (uint64_t)c1 * W * H * 16;
        src = cube;
    } else {
        if (!src || src->w != W || src->h != H || src->c != C)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "PPU input cube %ux%ux%u does not match the DPU output", W, H, C);
        if (src->is_int == fp)
            return sim_fail(x, NPU_ERR_HW_REFUSED,
                            "PPU precision %u does not match the DPU output precision", prec);
    }

    /* ---- output */
    unsigned c2 = 16 / esz;
    uint32_t c1 = (C + c2 - 1) / c2;
    if (c1 > 1 && surf < (uint64_t)OW * OH * 16 &&
        !sim_unverified(x, "facts §2.7: output surfaces overlap",
                        "PPU DST_SURF_STRIDE %llu bytes for %ux%u pixels", (unsigned long long)surf,
                        OW, OH))
        return false;
    uint64_t ext = (uint64_t)(c1 - 1) * surf + (uint64_t)OW * OH * 16;
    uint8_t *out = sim_dma(x, NPU_BLOCK_PPU, "output write", dst, ext);
    if (!out)
        return false;
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t y = 0; y < OH; y++)
            for (uint32_t xx = 0; xx < OW; xx++) {
                double accf = method == NPU_POOLING_METHOD_MAX   ? -INFINITY
                              : method == NPU_POOLING_METHOD_MIN ? INFINITY
                                                                 : 0.0;
                int64_t acci = method == NPU_POOLING_METHOD_MAX   ? INT64_MIN
                               : method == NPU_POOLING_METHOD_MIN ? INT64_MAX
                                                                  : 0;
                for (unsigned ky = 0; ky < kh; ky++)
                    for (unsigned kx = 0; kx < kw; kx++) {
                        int64_t iy = (int64_t)y * sh + ky - pt, ix = (int64_t)xx * sw + kx - pl;
                        bool in = iy >= 0 && iy < H && ix >= 0 && ix < W;
                        size_t o = ((size_t)c * H + (in ? iy : 0)) * W + (in ? ix : 0);
                        if (fp) {
                            double v = in ? src->f[o] : pad_f;
                            if (method == NPU_POOLING_METHOD_MAX)
                                accf = v > accf ? v : accf;
                            else if (method == NPU_POOLING_METHOD_MIN)
                                accf = v < accf ? v : accf;
                            else
                                accf += v;
                        } else {
                            int64_t v = in ? src->i[o] : pad_i;
                            if (method == NPU_POOLING_METHOD_MAX)
                                acci = v > acci ? v : acci;
                            else if (method == NPU_POOLING_METHOD_MIN)
                                acci = v < acci ? v : acci;
                            else
                                acci += v;
                        }
                    }
                if (method == NPU_POOLING_METHOD_AVERAGE) {
                    if (fp)
                        accf = (float)((float)accf * rw) * rh;
                    else
                        acci = sim_shift_round(
                            sim_shift_round(acci * (int64_t)rwi, 16, 0) * (int64_t)rhi, 16, 0);
                }
                uint8_t *p = out + (c / c2) * surf + ((uint64_t)y * OW + xx) * 16 + (c % c2) * esz;
                if (prec == NPU_PRECISION_FP16) {
                    uint16_t hv = npu_fp32_to_fp16((float)accf);
                    memcpy(p, &hv, 2);
                } else if (prec == NPU_PRECISION_FP32) {
                    float f = (float)accf;
                    memcpy(p, &f, 4);
                } else {
                    int64_t lo = esz == 1 ? INT8_MIN : esz == 2 ? INT16_MIN : INT32_MIN;
                    int64_t hi = esz == 1 ? INT8_MAX : esz == 2 ? INT16_MAX : INT32_MAX;
                    int64_t v = sim_sat(acci, lo, hi);
                    if (esz == 1) {
                        p[0] = (uint8_t)(int8_t)v;
                    } else if (esz == 2) {
                        int16_t s = (int16_t)v;
                        memcpy(p, &s, 2);
                    } else {
                        int32_t s = (int32_t)v;
                        memcpy(p, &s, 4);
                    }
                }
            }
    x->rec.output_bytes += (uint64_t)c1 * OW * OH * 16;
    if (!(x->enable & NPU_OP_EN_CNA)) {
        const struct npu_timing_model *tm = npu_timing_model();
        double s = (double)W * H * C / (tm->clock_hz * tm->flying_elems_per_cycle);
        if (s > x->rec.compute_s)
            x->rec.compute_s = s;
    }
#undef R
    return true;
}
