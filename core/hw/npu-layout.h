/* SPDX-License-Identifier: MIT */
/*
 * npu-layout.h: memory layouts the NPU reads and writes (facts 2.10).
 *
 * Feature maps, "NC1HWC2" with 16-byte atoms: element (c, h, w) of one image lives at
 *     (c / C2) * SURF + (h * W + w) * 16 + (c % C2) * esize,   SURF = W * H * 16,
 *     C2 = 16 / esize: 16 for int8, 8 for int16/fp16, 4 for int32/fp32.
 * Channels past C in the last C1 block are padding and get a neutral value (0 unless the
 * caller passes another, e.g. a zero point).
 *
 * Small-channel input ("ARGB", non-aligned mode, 1-4 channels): pixels stored contiguously
 * with only the real channels, [H][line][C], line >= W pixels (RKNN: line = W) (facts 2.10).
 *
 * Convolution weights: [kernel group][input-channel block][ky][kx][kernel][channel], a kernel
 * group = 32 kernels (int8) or 16 (int16/fp16), a channel block = 32 channels except the last,
 * which holds the remaining padded channels (C padded to 16 int8 / 8 fp16), and the last
 * kernel group holds only the remaining kernels, so WEIGHT_SIZE0 = kernels x
 * WEIGHT_SIZE1 (facts 2.10, verified by MTX/Mesa/AB on hardware; sizes checked against
 * every row of the RKNN partial table). Matmul B[K][N] is N kernels of 1x1xK.
 * Depthwise weights: one "kernel" of C channels, [channel block][ky][kx][channel] with
 * blocks of 64 int8 (Mesa, hardware-tested) or 32 fp16/int16 channels. The fp16 block size
 * is DERIVED: 64 bytes like int8, and RKNN's depthwise DPU output groups are 32 fp16 channels
 * (SURFACE_ADD = 4 x DST_SURF_STRIDE in all 341 depthwise rows of the partial table); no
 * fp16 depthwise weight bytes have been seen. WEIGHT_SIZE0 = WEIGHT_SIZE1 = kh*kw*C*esize and
 * WEIGHT_KERNELS = 1 are verified by those rows.
 */
#ifndef NPU_LAYOUT_H
#define NPU_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_ATOM_BYTES 16u

/* C2 of an element size (1, 2 or 4 bytes); 0 for anything else. */
static inline uint32_t
npu_c2(size_t esize)
{
    return (esize == 1 || esize == 2 || esize == 4) ? (uint32_t)(16 / esize) : 0;
}

/* Bytes of one image in NC1HWC2: ceil(C/C2) * H * W * 16; 0 on a bad esize or overflow. */
size_t npu_nc1hwc2_bytes(size_t esize, uint32_t c, uint32_t h, uint32_t w);
/* Byte offset of element (c, y, x) in one image of height h, width w. */
static inline size_t
npu_nc1hwc2_offset(size_t esize, uint32_t c, uint32_t y, uint32_t x, uint32_t h, uint32_t w)
{
    uint32_t c2 = npu_c2(esize);

    return (size_t)(c / c2) * w * h * NPU_ATOM_BYTES + ((size_t)y * w + x) * NPU_ATOM_BYTES +
           (size_t)(c % c2) * esize;
}

/* NCHW (n images, row-major) -> NC1HWC2 (images back to back). pad_bits: the low esize bytes
 * fill the padding channels. dst_size must hold n * npu_nc1hwc2_bytes(). */
enum npu_status npu_nchw_to_nc1hwc2(void *dst, size_t dst_size, const void *src, size_t esize,
                                    uint32_t n, uint32_t c, uint32_t h, uint32_t w,
                                    uint32_t pad_bits);
/* NC1HWC2 -> NCHW; padding channels are dropped. */
enum npu_status npu_nc1hwc2_to_nchw(void *dst, size_t dst_size, const void *src, size_t src_size,
                                    size_t esize, uint32_t n, uint32_t c, uint32_t h, uint32_t w);

/* Small-channel input: bytes of one image, h * line * c * esize (line 0 means w). */
size_t npu_argb_bytes(size_t esize, uint32_t c, uint32_t h, uint32_t w, uint32_t line);
/* NCHW (one image, 1 <= c <= 4) -> [H][line][C]; pixels w..line-1 of a row get pad_bits. */
enum npu_status npu_nchw_to_argb(void *dst, size_t dst_size, const void *src, size_t esize,
                                 uint32_t c, uint32_t h, uint32_t w, uint32_t line,
                                 uint32_t pad_bits);

/* Geometry and sizes of packed weights. */
struct npu_weight_layout {
    size_t esize;      /* 1 int8, 2 int16/fp16 */
    uint32_t kernels;  /* output channels (K) */
    uint32_t channels; /* input channels (C) before padding */
    uint32_t kh, kw;
    bool depthwise;
    uint32_t kernel_group;  /* kernels per group: 32 int8, 16 fp16 (1 when depthwise) */
    uint32_t channel_block; /* channels per block: 32; depthwise 64 int8 / 32 fp16 */
    uint32_t c_pad;         /* channels padded to 16 (int8) or 8 (16-bit) */
    /* Register values (facts 2.3). */
    uint32_t weight_kernels;   /* WEIGHT_SIZE2.WEIGHT_KERNELS: K, or 1 for depthwise */
    uint32_t bytes_per_kernel; /* WEIGHT_SIZE1: kh * kw * c_pad * esize */
    uint32_t total_bytes;      /* WEIGHT_SIZE0: bytes_per_kernel * weight_kernels */
};

/* Fills l; errors for esize not 1/2, zero sizes, kh/kw > 32 (5-bit fields), depthwise with
 * kernels != channels, or sizes past the register fields. */
enum npu_status npu_weight_layout_init(struct npu_weight_layout *l, size_t esize, uint32_t kernels,
                                       uint32_t channels, uint32_t kh, uint32_t kw, bool depthwise);
/* Byte offset of weight (kernel k, channel c, ky, kx) in the packed buffer; for depthwise k
 * must equal c (the only non-zero weights). */
size_t npu_weight_offset(const struct npu_weight_layout *l, uint32_t k, uint32_t c, uint32_t ky,
                         uint32_t kx);
/* Packs OIHW weights (depthwise: C x 1 x kh x kw); padding channels get pad_bits. */
enum npu_status npu_weight_pack(const struct npu_weight_layout *l, void *dst, size_t dst_size,
                                const void *src_oihw, uint32_t pad_bits);
/* Packs a matmul's B[K][N] (row-major) as N kernels of 1x1xK; l must be 1x1, kernels N,
 * channels K, not depthwise. */
enum npu_status npu_weight_pack_matmul(const struct npu_weight_layout *l, void *dst,
                                       size_t dst_size, const void *b_kn, uint32_t pad_bits);

#ifdef __cplusplus
}
#endif

#endif /* NPU_LAYOUT_H */
