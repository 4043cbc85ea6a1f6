/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-pool.c: fp32 2-D MaxPool without dilation (core/cpu/npu-cpu-pool.c
 * takes each input row's maxima over the column taps, then the rows in order)
 * bit for bit against the tap-by-tap scan in row-major order written here:
 * inputs salted with NaN, +0/-0 ties and -inf, kernels 1x1 to 5x5, strides 1-3,
 * pads 0-2 on either side, ceil_mode, planes from 1x1 to 17x23 (the 2x2 stride-2
 * pair loop with even and odd widths). Each case also runs on 1 and 3 threads,
 * which must give the same bits; a dilated case checks the other path agrees.
 * 1-D MaxPool and AveragePool (their fp32 loop) likewise, bit for bit against
 * the rule of the generic path (averages summed in double, rounded once).
 */
#include "cpu-test-util.h"
#include "npu-test.h"
#include "npu/npu-fp16.h"

static int ncases;

static float
scan_max(float a, float v)
{
    return (v != v || v > a) && a == a ? v : a;
}

static void
check(int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw, const int64_t pads[4],
      bool ceil_mode, int64_t dil)
{
    const int64_t N = 2, C = 3;
    int64_t OH = 0, OW = 0;
    int64_t ekh = (kh - 1) * dil + 1, ekw = (kw - 1) * dil + 1;
    int64_t nh = H + pads[0] + pads[2] - ekh, nw = W + pads[1] + pads[3] - ekw;
    if (nh < 0 || nw < 0)
        return;
    OH = (ceil_mode ? (nh + sh - 1) / sh : nh / sh) + 1;
    OW = (ceil_mode ? (nw + sw - 1) / sw : nw / sw) + 1;
    /* ONNX: with ceil_mode a last window must start inside the input or the left padding */
    if (ceil_mode && (OH - 1) * sh >= H + pads[0])
        OH--;
    if (ceil_mode && (OW - 1) * sw >= W + pads[1])
        OW--;
    struct npu_tensor *x = tt(NPU_DTYPE_FP32, 4, N, C, H, W);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, N, C, OH, OW);
    float *xf = x->data;
    for (int64_t i = 0; i < tt_n(x); i++) {
        uint64_t r = tt_rand_u64() % 16;
        xf[i] = r == 0   ? NAN
                : r == 1 ? -NAN
                : r == 2 ? 0.0f
                : r == 3 ? -0.0f
                : r == 4 ? -INFINITY
                : r == 5 ? 1.0f
                         : (float)tt_uniform(-3, 3);
    }
    /* a NaN with another payload, so that which NaN wins is seen */
    if (tt_n(x) > 7)
        xf[7] = npu_bits_f32(0x7fc01234u);
    struct alist al = {0};
    int64_t k[2] = {kh, kw}, s[2] = {sh, sw}, d[2] = {dil, dil};
    al_ints(&al, "kernel_shape", k, 2);
    al_ints(&al, "strides", s, 2);
    al_ints(&al, "pads", pads, 4);
    al_ints(&al, "dilations", d, 2);
    al_int(&al, "ceil_mode", ceil_mode);
    struct npu_tensor *in[1] = {x}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MAX_POOL, &al, 1, in, 1, out));
    const float *yf = y->data;
    int bad = 0;
    for (int64_t p = 0; p < N * C; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                float a = -INFINITY;
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t j = 0; j < kw; j++) {
                        int64_t h = oh * sh - pads[0] + i * dil, w = ow * sw - pads[1] + j * dil;
                        if (h >= 0 && h < H && w >= 0 && w < W)
                            a = scan_max(a, xf[(p * H + h) * W + w]);
                    }
                float g = yf[(p * OH + oh) * OW + ow];
                if (npu_f32_bits(a) != npu_f32_bits(g) && bad++ < 3)
                    fprintf(stderr,
                            "  %lldx%lld k %lldx%lld s %lldx%lld pads %lld,%lld,%lld,%lld ceil %d "
                            "dil %lld: plane %lld (%lld, %lld): got %08x want %08x\n",
                            (long long)H, (long long)W, (long long)kh, (long long)kw, (long long)sh,
                            (long long)sw, (long long)pads[0], (long long)pads[1],
                            (long long)pads[2], (long long)pads[3], ceil_mode, (long long)dil,
                            (long long)p, (long long)oh, (long long)ow, npu_f32_bits(g),
                            npu_f32_bits(a));
            }
    CHECK_EQ_INT(0, bad);
    ncases++;
    tt_free(x);
    tt_free(y);
}

/* 1-D MaxPool and AveragePool (fp32 without indices: their own loop) against the rule written
 * here: max by the scan, average summed in double and rounded once */
static void
check1d(bool is_max, int64_t L, int64_t k, int64_t st, int64_t dil, int64_t pb, int64_t pe,
        bool ceil_mode, bool include_pad)
{
    const int64_t N = 2, C = 3;
    int64_t ek = (k - 1) * dil + 1, n = L + pb + pe - ek;
    if (n < 0)
        return;
    int64_t OL = (ceil_mode ? (n + st - 1) / st : n / st) + 1;
    if (ceil_mode && (OL - 1) * st >= L + pb)
        OL--;
    struct npu_tensor *x = tt(NPU_DTYPE_FP32, 3, N, C, L), *y = tt(NPU_DTYPE_FP32, 3, N, C, OL);
    float *xf = x->data;
    for (int64_t i = 0; i < tt_n(x); i++) {
        uint64_t r = tt_rand_u64() % 16;
        xf[i] = is_max && r == 0   ? NAN
                : is_max && r == 1 ? -0.0f
                : r == 2           ? 0.0f
                                   : (float)tt_uniform(-3, 3);
    }
    struct alist al = {0};
    int64_t pads[2] = {pb, pe};
    al_ints(&al, "kernel_shape", &k, 1);
    al_ints(&al, "strides", &st, 1);
    al_ints(&al, "pads", pads, 2);
    if (is_max)
        al_ints(&al, "dilations", &dil, 1);
    al_int(&al, "ceil_mode", ceil_mode);
    if (!is_max)
        al_int(&al, "count_include_pad", include_pad);
    struct npu_tensor *in[1] = {x}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(is_max ? NPU_OP_MAX_POOL : NPU_OP_AVERAGE_POOL, &al, 1, in, 1, out));
    const float *yf = y->data;
    int bad = 0;
    for (int64_t p = 0; p < N * C; p++)
        for (int64_t o = 0; o < OL; o++) {
            float want;
            if (is_max) {
                want = -INFINITY;
                for (int64_t t = 0; t < k; t++) {
                    int64_t q = o * st - pb + t * dil;
                    if (q >= 0 && q < L)
                        want = scan_max(want, xf[p * L + q]);
                }
            } else {
                double acc = 0;
                int64_t cnt = 0, cnt_pad = 0;
                for (int64_t t = 0; t < k; t++) {
                    int64_t q = o * st - pb + t;
                    cnt_pad += q < L + pe;
                    if (q >= 0 && q < L) {
                        acc += xf[p * L + q];
                        cnt++;
                    }
                }
                int64_t div = include_pad ? cnt_pad : cnt;
                want = (float)(div ? acc / (double)div : 0.0);
            }
            float g = yf[p * OL + o];
            if (npu_f32_bits(want) != npu_f32_bits(g) && bad++ < 3)
                fprintf(stderr,
                        "  1-D %s L %lld k %lld s %lld d %lld pads %lld,%lld ceil %d incl %d: "
                        "plane %lld pos %lld: got %08x want %08x\n",
                        is_max ? "max" : "avg", (long long)L, (long long)k, (long long)st,
                        (long long)dil, (long long)pb, (long long)pe, ceil_mode, include_pad,
                        (long long)p, (long long)o, npu_f32_bits(g), npu_f32_bits(want));
        }
    CHECK_EQ_INT(0, bad);
    ncases++;
    tt_free(x);
    tt_free(y);
}

int
main(void)
{
    tctx_init();
    /* rows of 33 and 71: full 16-output vectors of the AVX-512 stride-2 row and a tail */
    static const int64_t planes[][2] = {{1, 1},   {2, 2},   {4, 4},  {5, 7}, {8, 16},
                                        {16, 32}, {17, 23}, {3, 71}, {4, 33}};
    static const int64_t kernels[][2] = {{1, 1}, {2, 2}, {2, 1}, {3, 3}, {5, 5}, {1, 3}};
    static const int64_t strides[][2] = {{1, 1}, {2, 2}, {2, 1}, {3, 2}};
    static const int64_t padset[][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {0, 1, 1, 0}};
    for (size_t a = 0; a < NPU_ARRAY_SIZE(planes); a++)
        for (size_t b = 0; b < NPU_ARRAY_SIZE(kernels); b++)
            for (size_t c = 0; c < NPU_ARRAY_SIZE(strides); c++)
                for (size_t e = 0; e < NPU_ARRAY_SIZE(padset); e++) {
                    const int64_t *pd = padset[e];
                    /* ONNX requires pads smaller than the kernel */
                    if (pd[0] >= kernels[b][0] || pd[2] >= kernels[b][0] ||
                        pd[1] >= kernels[b][1] || pd[3] >= kernels[b][1])
                        continue;
                    for (int cm = 0; cm < 2; cm++)
                        check(planes[a][0], planes[a][1], kernels[b][0], kernels[b][1],
                              strides[c][0], strides[c][1], pd, cm, 1);
                }
    /* dilation keeps the tap-by-tap path: the same rule */
    static const int64_t p0[4] = {0, 0, 0, 0}, p1[4] = {1, 2, 1, 2};
    check(9, 11, 3, 3, 1, 1, p0, false, 2);
    check(9, 11, 3, 3, 2, 1, p1, true, 2);
    for (int mx = 0; mx < 2; mx++)
        for (int64_t L = 1; L <= 13; L += 3)
            for (int64_t k = 1; k <= 4; k++)
                for (int64_t st = 1; st <= 3; st++)
                    for (int64_t pb = 0; pb < k && pb <= 2; pb++)
                        for (int cm = 0; cm < 2; cm++) {
                            check1d(mx, L, k, st, 1, pb, k > 1 ? 1 : 0, cm, false);
                            check1d(mx, L, k, st, mx ? 2 : 1, pb, pb, cm, true);
                        }
    fprintf(stderr, "test-cpu-pool: %d cases\n", ncases);
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-pool");
}
