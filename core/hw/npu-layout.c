/* SPDX-License-Identifier: MIT */
/*
 * npu-layout.c: feature-map, small-channel and weight layouts (see npu-layout.h for the
 * formulas and where each one is verified). All sizes are checked before any byte moves.
 */
#include <string.h>

#include "npu-layout.h"
#include "npu-rk3588-regs.h"

static const char dom[] = "hw";

/* Copies one element of esize bytes (1, 2 or 4): constant-size memcpy per case. */
static inline void
put(uint8_t *d, const uint8_t *s, size_t esize)
{
    switch (esize) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    default: memcpy(d, s, 4); break;
    }
}

/* Fills count elements with the low esize bytes of bits (host byte order = memory order on
 * the little-endian SoC and on x86). */
static void
fill(uint8_t *d, size_t count, size_t esize, uint32_t bits)
{
    uint8_t pat[4];

    if (esize == 1) {
        memset(d, (int)(bits & 0xff), count);
        return;
    }
    if (esize == 2) {
        uint16_t v = (uint16_t)bits;
        memcpy(pat, &v, 2);
    } else {
        memcpy(pat, &bits, 4);
    }
    for (size_t i = 0; i < count; i++)
        memcpy(d + i * esize, pat, esize);
}

static bool
mul_ok(size_t *acc, size_t v)
{
    if (v && *acc > SIZE_MAX / v)
        return false;
    *acc *= v;
    return true;
}

size_t
npu_nc1hwc2_bytes(size_t esize, uint32_t c, uint32_t h, uint32_t w)
{
    uint32_t c2 = npu_c2(esize);
    size_t n = NPU_ATOM_BYTES;

    if (!c2)
        return 0;
    if (!mul_ok(&n, NPU_DIV_ROUND_UP((size_t)c, c2)) || !mul_ok(&n, h) || !mul_ok(&n, w))
        return 0;
    return n;
}

static enum npu_status
check_fm(size_t esize, uint32_t n, uint32_t c, uint32_t h, uint32_t w, size_t *img_bytes,
         size_t *total)
{
    size_t t;

    if (!npu_c2(esize)) {
        npu_err(dom, "layout: element size %zu (want 1, 2 or 4)", esize);
        return NPU_ERR_INVALID;
    }
    if (!n || !c || !h || !w) {
        npu_err(dom, "layout: empty tensor %ux%ux%ux%u", n, c, h, w);
        return NPU_ERR_INVALID;
    }
    *img_bytes = npu_nc1hwc2_bytes(esize, c, h, w);
    t = *img_bytes;
    if (!t || !mul_ok(&t, n)) {
        npu_err(dom, "layout: tensor %ux%ux%ux%u is too large", n, c, h, w);
        return NPU_ERR_INVALID;
    }
    *total = t;
    return NPU_OK;
}

enum npu_status
npu_nchw_to_nc1hwc2(void *dst, size_t dst_size, const void *src, size_t esize, uint32_t n,
                    uint32_t c, uint32_t h, uint32_t w, uint32_t pad_bits)
{
    size_t img, total, hw = (size_t)h * w;
    uint32_t c2;
    enum npu_status st = check_fm(esize, n, c, h, w, &img, &total);

    if (st != NPU_OK)
        return st;
    if (!dst || !src || dst_size < total) {
        npu_err(dom, "layout: NC1HWC2 needs %zu bytes, got %zu", total, dst_size);
        return NPU_ERR_INVALID;
    }
    c2 = npu_c2(esize);
    for (uint32_t b = 0; b < n; b++) {
        uint8_t *d = (uint8_t *)dst + b * img;
        const uint8_t *s = (const uint8_t *)src + (size_t)b * c * hw * esize;
        uint32_t c_pad = (uint32_t)NPU_ALIGN((size_t)c, c2);

        /* Padding channels of the last C1 block: every pixel's tail of the atom. */
        if (c_pad > c) {
            uint8_t *blk = d + (size_t)(c / c2) * hw * NPU_ATOM_BYTES;
            for (size_t p = 0; p < hw; p++)
                fill(blk + p * NPU_ATOM_BYTES + (size_t)(c % c2) * esize, c_pad - c, esize,
                     pad_bits);
        }
        for (uint32_t ch = 0; ch < c; ch++) {
            uint8_t *dp = d + (size_t)(ch / c2) * hw * NPU_ATOM_BYTES + (size_t)(ch % c2) * esize;
            const uint8_t *sp = s + (size_t)ch * hw * esize;
            for (size_t p = 0; p < hw; p++)
                put(dp + p * NPU_ATOM_BYTES, sp + p * esize, esize);
        }
    }
    return NPU_OK;
}

enum npu_status
npu_nc1hwc2_to_nchw(void *dst, size_t dst_size, const void *src, size_t src_size, size_t esize,
                    uint32_t n, uint32_t c, uint32_t h, uint32_t w)
{
    size_t img, total, hw = (size_t)h * w, plain;
    uint32_t c2;
    enum npu_status st = check_fm(esize, n, c, h, w, &img, &total);

    if (st != NPU_OK)
        return st;
    plain = (size_t)n * c * hw * esize;
    if (!dst || !src || src_size < total || dst_size < plain) {
        npu_err(dom, "layout: NC1HWC2 -> NCHW needs %zu source and %zu destination bytes", total,
                plain);
        return NPU_ERR_INVALID;
    }
    c2 = npu_c2(esize);
    for (uint32_t b = 0; b < n; b++) {
        const uint8_t *s = (const uint8_t *)src + b * img;
        uint8_t *d = (uint8_t *)dst + (size_t)b * c * hw * esize;

        for (uint32_t ch = 0; ch < c; ch++) {
            const uint8_t *sp =
                s + (size_t)(ch / c2) * hw * NPU_ATOM_BYTES + (size_t)(ch % c2) * esize;
            uint8_t *dp = d + (size_t)ch * hw * esize;
            for (size_t p = 0; p < hw; p++)
                put(dp + p * esize, sp + p * NPU_ATOM_BYTES, esize);
        }
    }
    return NPU_OK;
}

size_t
npu_argb_bytes(size_t esize, uint32_t c, uint32_t h, uint32_t w, uint32_t line)
{
    size_t n = esize;

    if (!line)
        line = w;
    if (!npu_c2(esize) || c < 1 || c > 4 || line < w)
        return 0;
    if (!mul_ok(&n, c) || !mul_ok(&n, h) || !mul_ok(&n, line))
        return 0;
    return n;
}

enum npu_status
npu_nchw_to_argb(void *dst, size_t dst_size, const void *src, size_t esize, uint32_t c, uint32_t h,
                 uint32_t w, uint32_t line, uint32_t pad_bits)
{
    size_t need;

    if (!line)
        line = w;
    need = npu_argb_bytes(esize, c, h, w, line);
    if (!need || !w || !h) {
        npu_err(dom,
                "layout: small-channel input needs 1-4 channels, esize 1/2/4 and line >= W "
                "(got C=%u esize=%zu W=%u line=%u)",
                c, esize, w, line);
        return NPU_ERR_INVALID;
    }
    if (!dst || !src || dst_size < need) {
        npu_err(dom, "layout: small-channel input needs %zu bytes, got %zu", need, dst_size);
        return NPU_ERR_INVALID;
    }
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *row = (uint8_t *)dst + (size_t)y * line * c * esize;

        for (uint32_t x = 0; x < w; x++)
            for (uint32_t ch = 0; ch < c; ch++)
                put(row + ((size_t)x * c + ch) * esize,
                    (const uint8_t *)src + (((size_t)ch * h + y) * w + x) * esize, esize);
        if (line > w)
            fill(row + (size_t)w * c * esize, (size_t)(line - w) * c, esize, pad_bits);
    }
    return NPU_OK;
}

enum npu_status
npu_weight_layout_init(struct npu_weight_layout *l, size_t esize, uint32_t kernels,
                       uint32_t channels, uint32_t kh, uint32_t kw, bool depthwise)
{
    uint64_t per_kernel, total;

    memset(l, 0, sizeof(*l));
    if (esize != 1 && esize != 2) {
        npu_err(dom, "weights: element size %zu (int8 = 1, int16/fp16 = 2)", esize);
        return NPU_ERR_INVALID;
    }
    if (!kernels || !channels || !kh || !kw) {
        npu_err(dom, "weights: empty shape %ux%ux%ux%u", kernels, channels, kh, kw);
        return NPU_ERR_INVALID;
    }
    if (kh > CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT__MAX || kw > CNA_WEIGHT_SIZE2_WEIGHT_WIDTH__MAX) {
        npu_err(dom, "weights: kernel %ux%u exceeds the %u-wide WEIGHT_SIZE2 fields", kh, kw,
                CNA_WEIGHT_SIZE2_WEIGHT_WIDTH__MAX);
        return NPU_ERR_INVALID;
    }
    if (depthwise && kernels != channels) {
        npu_err(dom, "weights: depthwise needs kernels == channels (%u != %u)", kernels, channels);
        return NPU_ERR_INVALID;
    }
    l->esize = esize;
    l->kernels = kernels;
    l->channels = channels;
    l->kh = kh;
    l->kw = kw;
    l->depthwise = depthwise;
    /* facts 2.10: groups of 32 int8 / 16 fp16 kernels, blocks of 32 channels, C padded to
     * 16 (int8) / 8 (fp16; NOTES S13: RKNN writes the true C when it is a multiple of 8). */
    l->kernel_group = depthwise ? 1 : (esize == 1 ? 32 : 16);
    l->channel_block = depthwise ? (esize == 1 ? 64 : 32) : 32;
    l->c_pad = (uint32_t)NPU_ALIGN((uint64_t)channels, esize == 1 ? 16 : 8);
    l->weight_kernels = depthwise ? 1 : kernels;
    per_kernel = (uint64_t)kh * kw * l->c_pad * esize;
    total = per_kernel * l->weight_kernels;
    if (per_kernel > CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL__MAX || total > UINT32_MAX ||
        l->weight_kernels > CNA_WEIGHT_SIZE2_WEIGHT_KERNELS__MAX) {
        npu_err(dom, "weights: %llu bytes per kernel x %u kernels exceed WEIGHT_SIZE0/1/2",
                (unsigned long long)per_kernel, l->weight_kernels);
        return NPU_ERR_INVALID;
    }
    l->bytes_per_kernel = (uint32_t)per_kernel;
    l->total_bytes = (uint32_t)total;
    return NPU_OK;
}

size_t
npu_weight_offset(const struct npu_weight_layout *l, uint32_t k, uint32_t c, uint32_t ky,
                  uint32_t kx)
{
    size_t taps = (size_t)l->kh * l->kw, tap = (size_t)ky * l->kw + kx;
    uint32_t cb = l->channel_block;
    uint32_t b = c / cb, cb_n = NPU_MIN(cb, l->c_pad - b * cb);
    size_t e;

    if (l->depthwise)
        return ((size_t)b * cb * taps + tap * cb_n + (c - b * cb)) * l->esize;

    uint32_t kg = l->kernel_group, g = k / kg;
    uint32_t kg_n = NPU_MIN(kg, l->kernels - g * kg);

    /* [group][cblock][ky][kx][kernel][channel]; earlier groups are full, earlier blocks in
     * this group are full-width (facts 2.10). */
    e = (size_t)g * kg * taps * l->c_pad + (size_t)b * cb * taps * kg_n +
        (tap * kg_n + (k - g * kg)) * cb_n + (c - b * cb);
    return e * l->esize;
}

static enum npu_status
check_pack(const struct npu_weight_layout *l, void *dst, size_t dst_size, const void *src)
{
    if (!l || !l->esize) {
        npu_err(dom, "weights: layout not initialised");
        return NPU_ERR_INVALID;
    }
    if (!dst || !src || dst_size < l->total_bytes) {
        npu_err(dom, "weights: packed weights need %u bytes, got %zu", l->total_bytes, dst_size);
        return NPU_ERR_INVALID;
    }
    return NPU_OK;
}

enum npu_status
npu_weight_pack(const struct npu_weight_layout *l, void *dst, size_t dst_size, const void *src_oihw,
                uint32_t pad_bits)
{
    const uint8_t *s = src_oihw;
    uint8_t *d = dst;
    size_t taps;
    enum npu_status st = check_pack(l, dst, dst_size, src_oihw);

    if (st != NPU_OK)
        return st;
    taps = (size_t)l->kh * l->kw;
    /* Padding channels first, then the real weights over them. */
    if (l->c_pad > l->channels) {
        for (uint32_t k = 0; k < l->weight_kernels; k++)
            for (uint32_t c = l->channels; c < l->c_pad; c++)
                for (uint32_t y = 0; y < l->kh; y++)
                    for (uint32_t x = 0; x < l->kw; x++)
                        fill(d + npu_weight_offset(l, l->depthwise ? c : k, c, y, x), 1, l->esize,
                             pad_bits);
    }
    for (uint32_t k = 0; k < l->kernels; k++) {
        /* Depthwise source is C x 1 x kh x kw: kernel k filters channel k only. */
        uint32_t c0 = l->depthwise ? k : 0, c1 = l->depthwise ? k + 1 : l->channels;
        for (uint32_t c = c0; c < c1; c++) {
            const uint8_t *sp =
                s + ((size_t)k * (l->depthwise ? 1 : l->channels) + (c - c0)) * taps * l->esize;
            for (uint32_t y = 0; y < l->kh; y++)
                for (uint32_t x = 0; x < l->kw; x++)
                    put(d + npu_weight_offset(l, k, c, y, x),
                        sp + ((size_t)y * l->kw + x) * l->esize, l->esize);
        }
    }
    return NPU_OK;
}

enum npu_status
npu_weight_pack_matmul(const struct npu_weight_layout *l, void *dst, size_t dst_size,
                       const void *b_kn, uint32_t pad_bits)
{
    const uint8_t *s = b_kn;
    uint8_t *d = dst;
    enum npu_status st = check_pack(l, dst, dst_size, b_kn);

    if (st != NPU_OK)
        return st;
    if (l->depthwise || l->kh != 1 || l->kw != 1) {
        npu_err(dom, "weights: a matmul layout is 1x1 and not depthwise");
        return NPU_ERR_INVALID;
    }
    for (uint32_t n = 0; n < l->kernels; n++)
        for (uint32_t c = l->channels; c < l->c_pad; c++)
            fill(d + npu_weight_offset(l, n, c, 0, 0), 1, l->esize, pad_bits);
    /* Kernel n is column n of B (facts 2.10: out[m][n] = sum_k A[m][k] B[k][n]). */
    for (uint32_t k = 0; k < l->channels; k++)
        for (uint32_t n = 0; n < l->kernels; n++)
            put(d + npu_weight_offset(l, n, k, 0, 0), s + ((size_t)k * l->kernels + n) * l->esize,
                l->esize);
    return NPU_OK;
}
