/* SPDX-License-Identifier: MIT */
/*
 * test-layout.c: data layouts. References, independent of npu-layout.c:
 *  - the NC1HWC2 formula of facts 2.10, restated here;
 *  - buffer sizes of the golden files (c32h14w14 input 0x3100, output 0x9000, weights 0x12000);
 *  - MTX's weight_fp16/weight_int8 index formulas (1x1, full groups), restated;
 *  - for general convs, the order [group][cblock][ky][kx][kernel][channel] enumerated by a
 *    counter (no offset formula), and the same for depthwise [cblock][ky][kx][channel];
 *  - the RKNN dump's 6-kernel 3x2 fp16 conv: 96 bytes per kernel; small-channel input
 *    advances 96 B per 2 rows of an 8-pixel 3-channel fp16 image (facts 2.10).
 */
#include "npu-hw.h"
#include "npu-test-log.h"
#include "npu-test.h"

static uint64_t rs = 0x1234567887654321ull;

static uint32_t
rnd(void)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rs >> 33);
}

static void
test_nc1hwc2(void)
{
    static const size_t esizes[] = {1, 2, 4};

    CHECK_EQ_INT(16, npu_c2(1));
    CHECK_EQ_INT(8, npu_c2(2));
    CHECK_EQ_INT(4, npu_c2(4));
    CHECK_EQ_INT(0, npu_c2(3));
    /* Golden c32h14w14: input 1x32x14x14 fp16 = 0x3100, output 1x128x12x12 fp16 = 0x9000. */
    CHECK_EQ_HEX(0x3100, npu_nc1hwc2_bytes(2, 32, 14, 14));
    CHECK_EQ_HEX(0x9000, npu_nc1hwc2_bytes(2, 128, 12, 12));
    /* MTX output fp32 C[M][N], W = 1, H = M: index (n/4)*M*4 + m*4 + n%4 (facts A.1). */
    for (uint32_t n = 0; n < 40; n += 7)
        for (uint32_t m = 0; m < 12; m += 5)
            CHECK_EQ_INT(((n / 4) * 12 * 4 + m * 4 + n % 4) * 4,
                         npu_nc1hwc2_offset(4, n, m, 0, 12, 1));

    for (unsigned e = 0; e < 3; e++) {
        size_t es = esizes[e];
        const uint32_t N = 2, C = 13, H = 3, W = 5;
        size_t plain = N * C * H * W * es, img = npu_nc1hwc2_bytes(es, C, H, W);
        uint8_t *src = malloc(plain), *dst = malloc(N * img), *back = malloc(plain);
        uint32_t c2 = (uint32_t)(16 / es), pad = 0xa5a5a5a5u;

        for (size_t i = 0; i < plain; i++)
            src[i] = (uint8_t)rnd();
        memset(dst, 0x11, N * img);
        CHECK_EQ_INT(NPU_OK, npu_nchw_to_nc1hwc2(dst, N * img, src, es, N, C, H, W, pad));
        /* Every element where the facts formula says. */
        int bad = 0;
        for (uint32_t b = 0; b < N; b++)
            for (uint32_t c = 0; c < C; c++)
                for (uint32_t y = 0; y < H; y++)
                    for (uint32_t x = 0; x < W; x++) {
                        size_t fo =
                            b * img + (c / c2) * (W * H * 16) + (y * W + x) * 16 + (c % c2) * es;
                        size_t so = (((size_t)b * C + c) * H + y) * W + x;
                        bad += memcmp(dst + fo, src + so * es, es) != 0;
                    }
        CHECK_EQ_INT(0, bad);
        /* Padding channels C..C_pad-1 hold the pad value. */
        uint32_t cpad = (C + c2 - 1) / c2 * c2;
        bad = 0;
        for (uint32_t c = C; c < cpad; c++)
            for (uint32_t p = 0; p < H * W; p++)
                bad += memcmp(dst + (c / c2) * (W * H * 16) + p * 16 + (c % c2) * es, &pad, es);
        CHECK_EQ_INT(0, bad);
        CHECK_EQ_INT(NPU_OK, npu_nc1hwc2_to_nchw(back, plain, dst, N * img, es, N, C, H, W));
        CHECK(!memcmp(src, back, plain));
        /* Size checks. */
        CHECK_EQ_INT(NPU_ERR_INVALID,
                     npu_nchw_to_nc1hwc2(dst, N * img - 1, src, es, N, C, H, W, 0));
        CHECK_EQ_INT(NPU_ERR_INVALID,
                     npu_nc1hwc2_to_nchw(back, plain - 1, dst, N * img, es, N, C, H, W));
        free(src);
        free(dst);
        free(back);
    }
    CHECK_EQ_INT(NPU_ERR_INVALID,
                 npu_nchw_to_nc1hwc2((void *)1, 1 << 20, (void *)1, 3, 1, 1, 1, 1, 0));
    CHECK_EQ_INT(NPU_ERR_INVALID,
                 npu_nchw_to_nc1hwc2((void *)1, 1 << 20, (void *)1, 2, 1, 0, 1, 1, 0));
    CHECK_EQ_INT(0, npu_nc1hwc2_bytes(2, 0xffffffffu, 0xffffffffu, 0xffffffffu));
}

static void
test_argb(void)
{
    const uint32_t C = 3, H = 5, W = 8;
    uint16_t src[3 * 5 * 8], dst[5 * 10 * 3];

    /* facts 2.10: fp16 RGB is 6 bytes/pixel; 2 rows of an 8-px image = 96 bytes. */
    CHECK_EQ_INT(96, npu_argb_bytes(2, 3, 2, 8, 0));
    CHECK_EQ_INT(0, npu_argb_bytes(2, 5, 2, 8, 0));
    CHECK_EQ_INT(0, npu_argb_bytes(2, 3, 2, 8, 7));
    for (unsigned i = 0; i < C * H * W; i++)
        src[i] = (uint16_t)(i * 3 + 1);
    CHECK_EQ_INT(NPU_OK, npu_nchw_to_argb(dst, sizeof(dst), src, 2, C, H, W, 10, 0x7777));
    int bad = 0;
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < 10; x++)
            for (uint32_t c = 0; c < C; c++) {
                uint16_t want = x < W ? src[(c * H + y) * W + x] : 0x7777;
                bad += dst[(y * 10 + x) * C + c] != want;
            }
    CHECK_EQ_INT(0, bad);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_nchw_to_argb(dst, 10, src, 2, C, H, W, 0, 0));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_nchw_to_argb(dst, sizeof(dst), src, 2, 5, H, W, 0, 0));
}

/* The reference order for normal conv weights, by enumeration. Returns element index. */
static void
enumerate_conv(const struct npu_weight_layout *l, uint32_t *idx /* [K][Cpad][kh][kw] */)
{
    uint32_t kg = l->esize == 1 ? 32 : 16, cb = 32, counter = 0;
    uint32_t cpad = l->c_pad;

    for (uint32_t g = 0; g * kg < l->kernels; g++) {
        uint32_t kn = l->kernels - g * kg < kg ? l->kernels - g * kg : kg;
        for (uint32_t b = 0; b * cb < cpad; b++) {
            uint32_t cn = cpad - b * cb < cb ? cpad - b * cb : cb;
            for (uint32_t y = 0; y < l->kh; y++)
                for (uint32_t x = 0; x < l->kw; x++)
                    for (uint32_t k = 0; k < kn; k++)
                        for (uint32_t c = 0; c < cn; c++)
                            idx[(((g * kg + k) * cpad + b * cb + c) * l->kh + y) * l->kw + x] =
                                counter++;
        }
    }
}

static void
test_weights_conv(void)
{
    static const struct {
        size_t es;
        uint32_t k, c, kh, kw;
    } shapes[] = {
        {2, 37, 45, 3, 3}, {1, 70, 50, 3, 2}, {2, 16, 32, 1, 1}, {1, 32, 64, 1, 1},
        {2, 6, 3, 3, 2},   {2, 5, 100, 5, 5}, {1, 33, 17, 1, 3},
    };
    struct npu_weight_layout l;

    for (unsigned s = 0; s < NPU_ARRAY_SIZE(shapes); s++) {
        CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, shapes[s].es, shapes[s].k, shapes[s].c,
                                                    shapes[s].kh, shapes[s].kw, false));
        uint32_t cpad = (shapes[s].c + (shapes[s].es == 1 ? 15 : 7)) /
                        (shapes[s].es == 1 ? 16 : 8) * (shapes[s].es == 1 ? 16 : 8);
        CHECK_EQ_INT(cpad, l.c_pad);
        CHECK_EQ_INT(shapes[s].kh * shapes[s].kw * cpad * shapes[s].es, l.bytes_per_kernel);
        CHECK_EQ_INT(l.bytes_per_kernel * shapes[s].k, l.total_bytes);
        CHECK_EQ_INT(shapes[s].k, l.weight_kernels);
        size_t n = (size_t)l.kernels * cpad * l.kh * l.kw;
        uint32_t *idx = malloc(n * sizeof(uint32_t));
        enumerate_conv(&l, idx);
        int bad = 0;
        for (uint32_t k = 0; k < l.kernels; k++)
            for (uint32_t c = 0; c < cpad; c++)
                for (uint32_t y = 0; y < l.kh; y++)
                    for (uint32_t x = 0; x < l.kw; x++)
                        bad += npu_weight_offset(&l, k, c, y, x) !=
                               (size_t)idx[((k * cpad + c) * l.kh + y) * l.kw + x] * l.esize;
        CHECK_EQ_INT(0, bad);

        /* Packing puts each OIHW element at its offset; padding channels get the pad. */
        size_t ns = (size_t)l.kernels * l.channels * l.kh * l.kw;
        uint8_t *src = malloc(ns * l.esize), *dst = malloc(l.total_bytes);
        for (size_t i = 0; i < ns * l.esize; i++)
            src[i] = (uint8_t)rnd();
        memset(dst, 0x5a, l.total_bytes);
        CHECK_EQ_INT(NPU_OK, npu_weight_pack(&l, dst, l.total_bytes, src, 0));
        bad = 0;
        for (uint32_t k = 0; k < l.kernels; k++)
            for (uint32_t c = 0; c < cpad; c++)
                for (uint32_t y = 0; y < l.kh; y++)
                    for (uint32_t x = 0; x < l.kw; x++) {
                        const uint8_t *d = dst + npu_weight_offset(&l, k, c, y, x);
                        if (c < l.channels)
                            bad += memcmp(d,
                                          src +
                                              (((size_t)k * l.channels + c) * l.kh + y) * l.kw *
                                                  l.esize +
                                              x * l.esize,
                                          l.esize) != 0;
                        else
                            for (size_t b = 0; b < l.esize; b++)
                                bad += d[b] != 0;
                    }
        CHECK_EQ_INT(0, bad);
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_weight_pack(&l, dst, l.total_bytes - 1, src, 0));
        free(src);
        free(dst);
        free(idx);
    }
    /* The RKNN dump: 6 kernels of 3x2 over 3 channels (padded to 8) = 96 B each, 576 total. */
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 2, 6, 3, 2, 3, false));
    CHECK_EQ_INT(96, l.bytes_per_kernel);
    CHECK_EQ_INT(576, l.total_bytes);
    /* Golden c32h14w14: 128x32x3x3 fp16 = 0x12000 bytes. */
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 2, 128, 32, 3, 3, false));
    CHECK_EQ_HEX(0x12000, l.total_bytes);
    CHECK_EQ_HEX(0x240, l.bytes_per_kernel);
    /* Errors. */
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_weight_layout_init(&l, 4, 1, 1, 1, 1, false));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_weight_layout_init(&l, 2, 1, 1, 32, 1, false));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_weight_layout_init(&l, 2, 4, 8, 3, 3, true));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_weight_layout_init(&l, 2, 20000, 8, 1, 1, false));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_weight_layout_init(&l, 2, 16, 0x10000, 3, 3, false));
}

static void
test_weights_matmul(void)
{
    struct npu_weight_layout l;
    const uint32_t K = 96, N = 48;

    /* MTX's formulas (element index), for full 16/32-kernel groups and 32-channel blocks. */
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 2, N, K, 1, 1, false));
    int bad = 0;
    for (uint32_t n = 0; n < N; n++)
        for (uint32_t k = 0; k < K; k++) {
            size_t mtx =
                (size_t)(k / 32) * 32 * 16 + (size_t)(n / 16) * 16 * K + k % 32 + (n % 16) * 32;
            bad += npu_weight_offset(&l, n, k, 0, 0) != mtx * 2;
        }
    CHECK_EQ_INT(0, bad);
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 1, 64, K, 1, 1, false));
    bad = 0;
    for (uint32_t n = 0; n < 64; n++)
        for (uint32_t k = 0; k < K; k++) {
            size_t mtx =
                (size_t)(k / 32) * 32 * 32 + (size_t)(n / 32) * 32 * K + k % 32 + (n % 32) * 32;
            bad += npu_weight_offset(&l, n, k, 0, 0) != mtx;
        }
    CHECK_EQ_INT(0, bad);

    /* B[K][N]: kernel n = column n. */
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 2, N, K, 1, 1, false));
    uint16_t *b = malloc(K * N * 2), *w = malloc(l.total_bytes);
    for (uint32_t i = 0; i < K * N; i++)
        b[i] = (uint16_t)(i * 7 + 3);
    CHECK_EQ_INT(NPU_OK, npu_weight_pack_matmul(&l, w, l.total_bytes, b, 0));
    bad = 0;
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t n = 0; n < N; n++)
            bad += w[npu_weight_offset(&l, n, k, 0, 0) / 2] != b[k * N + n];
    CHECK_EQ_INT(0, bad);
    free(b);
    free(w);
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 2, 4, 4, 3, 3, false));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_weight_pack_matmul(&l, (void *)1, 1 << 20, (void *)1, 0));
}

static void
test_weights_depthwise(void)
{
    static const struct {
        size_t es;
        uint32_t c, kh, kw, block;
    } shapes[] = {{2, 128, 3, 3, 32}, {2, 144, 5, 5, 32}, {1, 100, 3, 3, 64}, {2, 20, 3, 3, 32}};
    struct npu_weight_layout l;

    /* Partial table rows: C=128 3x3 fp16 -> WEIGHT_SIZE0 = WEIGHT_SIZE1 = 0x900, kernels 1. */
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, 2, 128, 128, 3, 3, true));
    CHECK_EQ_HEX(0x900, l.total_bytes);
    CHECK_EQ_HEX(0x900, l.bytes_per_kernel);
    CHECK_EQ_INT(1, l.weight_kernels);
    for (unsigned s = 0; s < NPU_ARRAY_SIZE(shapes); s++) {
        CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&l, shapes[s].es, shapes[s].c, shapes[s].c,
                                                    shapes[s].kh, shapes[s].kw, true));
        CHECK_EQ_INT(shapes[s].block, l.channel_block);
        /* Enumerate [cblock][ky][kx][channel]. */
        uint32_t cpad = l.c_pad, counter = 0, cb = shapes[s].block;
        uint32_t *idx = malloc(cpad * l.kh * l.kw * sizeof(uint32_t));
        for (uint32_t b = 0; b * cb < cpad; b++) {
            uint32_t cn = cpad - b * cb < cb ? cpad - b * cb : cb;
            for (uint32_t y = 0; y < l.kh; y++)
                for (uint32_t x = 0; x < l.kw; x++)
                    for (uint32_t c = 0; c < cn; c++)
                        idx[((b * cb + c) * l.kh + y) * l.kw + x] = counter++;
        }
        CHECK_EQ_INT(l.total_bytes, counter * l.esize);
        int bad = 0;
        for (uint32_t c = 0; c < cpad; c++)
            for (uint32_t y = 0; y < l.kh; y++)
                for (uint32_t x = 0; x < l.kw; x++)
                    bad += npu_weight_offset(&l, c, c, y, x) !=
                           idx[(c * l.kh + y) * l.kw + x] * l.esize;
        CHECK_EQ_INT(0, bad);
        /* Pack C x 1 x kh x kw. */
        size_t ns = (size_t)l.channels * l.kh * l.kw * l.esize;
        uint8_t *src = malloc(ns), *dst = malloc(l.total_bytes);
        for (size_t i = 0; i < ns; i++)
            src[i] = (uint8_t)rnd();
        CHECK_EQ_INT(NPU_OK, npu_weight_pack(&l, dst, l.total_bytes, src, 0));
        bad = 0;
        for (uint32_t c = 0; c < l.channels; c++)
            for (uint32_t y = 0; y < l.kh; y++)
                for (uint32_t x = 0; x < l.kw; x++)
                    bad += memcmp(dst + npu_weight_offset(&l, c, c, y, x),
                                  src + ((c * l.kh + y) * l.kw + x) * l.esize, l.esize) != 0;
        CHECK_EQ_INT(0, bad);
        free(src);
        free(dst);
        free(idx);
    }
}

int
main(void)
{
    npu_log_set_handler(npu_test_log_quiet, NULL); /* error paths log on purpose */
    test_nc1hwc2();
    test_argb();
    test_weights_conv();
    test_weights_matmul();
    test_weights_depthwise();
    return npu_test_done("test-layout");
}
