/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-dwconv.c: the fp32 depthwise and small-channel Conv fast paths
 * (core/cpu/npu-cpu-dwconv.c) against a direct loop in double written here
 * and against the portable paths they replace (the same op with the fast
 * paths switched off), with every instruction set this CPU has: odd plane
 * sizes (1 to 41 wide), kernels 1x3 to 7x7, strides 1-2 (and 3 down the
 * rows), every padding from none to kernel - 1 on each side, channel counts
 * that are not a multiple of 16, channel multipliers, bias and fused
 * activations (relu, clip, hard_swish, hard_sigmoid: applied in registers),
 * a batch of 2; and the 1x1 convs over a 1x1 plane (matrix-vector). Each case also runs on 1 and 3
 * threads, which must give the same bits. Without AVX2+FMA (aarch64 included) the fast paths are
 * off: skipped (77), saying so.
 */
#include "../../core/cpu/npu-cpu-dwconv.h"
#include "../../core/cpu/npu-cpu-internal.h"
#include "cpu-test-util.h"
#include "npu-test.h"

struct ccase {
    int64_t N, C, M, G, H, W, KH, KW, sh, sw, pt, pl, pb, pr;
    bool bias;
    const char *act;
};

static int cases_run;

/* Runs one Conv through npu_cpu_run and checks it against the double loop; returns the output
 * (caller frees). */
static struct npu_tensor *
run_case(const struct ccase *c, const struct npu_tensor *x, const struct npu_tensor *w,
         const struct npu_tensor *b, const char *what)
{
    int64_t OH = (c->H + c->pt + c->pb - c->KH) / c->sh + 1;
    int64_t OW = (c->W + c->pl + c->pr - c->KW) / c->sw + 1;
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, c->N, c->M, OH, OW);
    struct alist al = {0};
    int64_t st[2] = {c->sh, c->sw}, pads[4] = {c->pt, c->pl, c->pb, c->pr};
    al_ints(&al, "strides", st, 2);
    al_ints(&al, "pads", pads, 4);
    al_int(&al, "group", c->G);
    if (c->act)
        al_str(&al, "npu_act", c->act);
    if (c->act && !strcmp(c->act, "clip")) {
        al_float(&al, "npu_act_alpha", -0.25f);
        al_float(&al, "npu_act_beta", 0.5f);
    }
    struct npu_tensor *in[3] = {(struct npu_tensor *)x, (struct npu_tensor *)w,
                                (struct npu_tensor *)b};
    struct npu_tensor *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV, &al, b ? 3 : 2, in, 1, out));
    const int64_t Cg = c->C / c->G, Mg = c->M / c->G;
    int bad = 0;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = b ? tt_get(b, m) : 0, mag = fabs(s);
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t kh = 0; kh < c->KH; kh++)
                            for (int64_t kw = 0; kw < c->KW; kw++) {
                                int64_t h = oh * c->sh - c->pt + kh, x0 = ow * c->sw - c->pl + kw;
                                if (h < 0 || h >= c->H || x0 < 0 || x0 >= c->W)
                                    continue;
                                int64_t ch = (m / Mg) * Cg + ci;
                                double v = tt_get(x, ((n * c->C + ch) * c->H + h) * c->W + x0) *
                                           tt_get(w, ((m * Cg + ci) * c->KH + kh) * c->KW + kw);
                                s += v;
                                mag += fabs(v);
                            }
                    if (c->act && !strcmp(c->act, "relu"))
                        s = s < 0 ? 0 : s;
                    if (c->act && !strcmp(c->act, "clip"))
                        s = s < -0.25 ? -0.25 : s > 0.5 ? 0.5 : s;
                    if (c->act && !strcmp(c->act, "hard_swish"))
                        s = s <= -3 ? 0 : s >= 3 ? s : s * (s + 3) / 6;
                    if (c->act && !strcmp(c->act, "hard_sigmoid")) {
                        s = 0.2 * s + 0.5;
                        s = s < 0 ? 0 : s > 1 ? 1 : s;
                    }
                    double got = tt_get(y, ((n * c->M + m) * OH + oh) * OW + ow);
                    if (!(fabs(got - s) <= 4e-6 * mag + 1e-30) && bad++ < 3)
                        fprintf(stderr, "  %s: n%lld m%lld (%lld,%lld): got %.9g want %.9g\n", what,
                                (long long)n, (long long)m, (long long)oh, (long long)ow, got, s);
                }
    if (bad)
        fprintf(stderr,
                "%s: C=%lld M=%lld G=%lld %lldx%lld k%lldx%lld s%lld,%lld pads %lld,%lld,%lld,%lld "
                "failed at %d outputs\n",
                what, (long long)c->C, (long long)c->M, (long long)c->G, (long long)c->H,
                (long long)c->W, (long long)c->KH, (long long)c->KW, (long long)c->sh,
                (long long)c->sw, (long long)c->pt, (long long)c->pl, (long long)c->pb,
                (long long)c->pr, bad);
    CHECK_EQ_INT(0, bad);
    return y;
}

/* the case with the fast paths at `isa` against the double loop and the portable path */
static void
check(const struct ccase *c, int isa)
{
    int64_t OH = (c->H + c->pt + c->pb - c->KH) / c->sh + 1;
    int64_t OW = (c->W + c->pl + c->pr - c->KW) / c->sw + 1;
    if (OH < 1 || OW < 1)
        return;
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, c->N, c->C, c->H, c->W), -1, 1);
    struct npu_tensor *w =
        tt_fill_rand(tt(NPU_DTYPE_FP32, 4, c->M, c->C / c->G, c->KH, c->KW), -1, 1);
    struct npu_tensor *b = c->bias ? tt_fill_rand(tt(NPU_DTYPE_FP32, 1, c->M), -1, 1) : NULL;
    cpu_dwconv_isa(isa);
    struct npu_tensor *fast = run_case(c, x, w, b,
                                       isa == 3   ? "AVX-512"
                                       : isa == 2 ? "AVX2"
                                                  : "portable");
    cpu_dwconv_isa(0);
    struct npu_tensor *port = run_case(c, x, w, b, "portable");
    /* both within rounding of each other: the same sums, in the same order (FMA or not) */
    int bad = 0;
    for (int64_t i = 0; i < tt_n(fast); i++) {
        double a = tt_get(fast, i), p = tt_get(port, i);
        if (!(fabs(a - p) <= 1e-5 * (1 + fabs(p))))
            bad++;
    }
    CHECK_EQ_INT(0, bad);
    cases_run++;
    tt_free(x), tt_free(w), tt_free(b), tt_free(fast), tt_free(port);
}

static void
sweep(int isa)
{
    static const char *acts[] = {NULL, "relu", "clip", "hard_swish", "hard_sigmoid"};
    /* depthwise: the MobileNet shapes (3x3 / 5x5, stride 1 / 2, same padding) at sizes around
     * the vector widths, then every padding of 3x3 and 5x5 on odd planes */
    static const int64_t sizes[] = {1, 2, 5, 7, 8, 9, 14, 15, 16, 17, 28, 31, 33, 41};
    int k = 0;
    for (size_t i = 0; i < NPU_ARRAY_SIZE(sizes); i++)
        for (int64_t ks = 3; ks <= 5; ks += 2)
            for (int64_t s = 1; s <= 2; s++) {
                int64_t p = ks / 2, H = sizes[i], W = sizes[(i + 3) % NPU_ARRAY_SIZE(sizes)];
                int64_t C = 1 + (k * 7) % 20;
                struct ccase c = {1, C, C, C, H, W, ks,         ks,
                                  s, s, p, p, p, p, k % 2 == 0, acts[k % 5]};
                check(&c, isa);
                k++;
            }
    for (int64_t ks = 3; ks <= 5; ks += 2)
        for (int64_t pt = 0; pt < ks; pt++)
            for (int64_t pl = 0; pl < ks; pl++)
                for (int64_t s = 1; s <= 2; s++) {
                    struct ccase c = {
                        2, 3, 3,  3,  13 + pt,       19 + 2 * pl,   ks,   ks,
                        s, s, pt, pl, (pt + 1) % ks, (pl + 2) % ks, true, acts[(pt + pl) % 5]};
                    check(&c, isa);
                }
    /* non-square kernels, row stride 3, a channel multiplier, 7x7, wide rows */
    struct ccase more[] = {
        {1, 5, 10, 5, 11, 37, 1, 3, 1, 2, 0, 1, 0, 1, true, "relu"},
        {1, 4, 4, 4, 23, 18, 3, 1, 3, 1, 1, 0, 1, 0, false, NULL},
        {2, 17, 34, 17, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, true, "clip"},
        {1, 6, 6, 6, 20, 21, 7, 7, 1, 1, 3, 3, 3, 3, true, NULL},
        {1, 3, 3, 3, 12, 13, 7, 5, 2, 2, 0, 4, 6, 0, false, NULL},
        {1, 19, 19, 19, 57, 112, 3, 3, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 5, 5, 5, 58, 113, 3, 3, 2, 2, 0, 0, 1, 1, true, NULL},
        /* the MobileNetV3 layers' fused activations on wide and narrow planes, stride 1 and 2 */
        {1, 17, 17, 17, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, true, "hard_swish"},
        {1, 9, 9, 9, 57, 57, 5, 5, 2, 2, 2, 2, 2, 2, true, "hard_swish"},
        {1, 33, 33, 33, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2, true, "hard_sigmoid"},
        {2, 7, 7, 7, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, true, "hard_swish"},
        {1, 5, 5, 5, 112, 112, 3, 3, 1, 1, 1, 1, 1, 1, true, "clip"},
        /* small planes read from a copy with zero rows (7x7 and 14x14 with 5x5, asymmetric
         * pads, a multiplier, batch 2, 16 rows), planes just past it (17 rows) and ones
         * without it (14x14 3x3), whose last rows go as the last four */
        {1, 11, 11, 11, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2, true, "hard_swish"},
        {2, 6, 12, 6, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, true, "clip"},
        {1, 9, 9, 9, 14, 14, 5, 5, 2, 2, 2, 2, 2, 2, true, "relu"},
        {1, 5, 5, 5, 16, 13, 5, 5, 1, 1, 3, 1, 0, 2, false, NULL},
        {1, 5, 5, 5, 17, 13, 5, 5, 1, 1, 2, 2, 2, 2, true, NULL},
        {1, 7, 7, 7, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, true, "clip"},
        {1, 3, 3, 3, 6, 7, 7, 7, 1, 1, 3, 3, 3, 3, true, NULL},
        /* stride 2 with taps in pairs: 5x5 and 7x7 (odd last tap), wide rows with their border
         * blocks grouped, asymmetric pads */
        {1, 4, 4, 4, 29, 31, 7, 7, 2, 2, 3, 3, 3, 3, true, "relu"},
        {1, 3, 3, 3, 40, 203, 5, 5, 2, 2, 2, 1, 2, 3, true, "hard_sigmoid"},
        {2, 3, 3, 3, 30, 150, 5, 5, 1, 1, 0, 2, 4, 1, true, "clip"},
        {1, 2, 2, 2, 9, 97, 7, 7, 1, 1, 3, 3, 3, 3, false, NULL},
        /* four output rows from their 3 * s + KH input rows, each loaded once: non-square
         * kernels (5x3, 3x5, 7x7), stride 2 with an odd last tap, a multiplier, batch 2, plane
         * heights giving 4, 5 and 7 full rows, row stride other than column stride */
        {2, 3, 6, 3, 19, 33, 5, 3, 2, 2, 2, 1, 2, 1, true, "hard_swish"},
        {1, 4, 4, 4, 11, 40, 3, 5, 1, 1, 1, 2, 1, 2, true, "clip"},
        {1, 3, 3, 3, 21, 45, 7, 7, 2, 2, 3, 3, 3, 3, true, NULL},
        {1, 5, 5, 5, 13, 29, 3, 3, 2, 2, 0, 0, 0, 1, false, "relu"},
        {1, 2, 2, 2, 15, 15, 3, 3, 1, 2, 1, 1, 1, 1, true, NULL},
        /* the pointwise convs between them (the direct path's Clip epilogue, 16 lanes at a
         * time with a tail): 7x7 to 56x56 planes, odd channel counts, batch 2 */
        {1, 24, 40, 1, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0, true, "clip"},
        {2, 17, 19, 1, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, false, "clip"},
        {1, 16, 24, 1, 56, 56, 1, 1, 1, 1, 0, 0, 0, 0, true, "clip"},
        {1, 40, 33, 1, 9, 11, 1, 1, 1, 1, 0, 0, 0, 0, true, "hard_swish"},
        /* planes whose last 1-4 outputs follow the 48-wide panels (49, 50, 51, 196): the
         * column kernel, with relu, with a sum over more than 1024 channels (in chunks), odd
         * M (a last block of fewer than 8 rows), K not a multiple of 4 */
        {1, 160, 21, 1, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, true, "relu"},
        {2, 19, 13, 1, 10, 5, 1, 1, 1, 1, 0, 0, 0, 0, false, NULL},
        {1, 7, 9, 1, 3, 17, 1, 1, 1, 1, 0, 0, 0, 0, true, "clip"},
        {1, 96, 17, 1, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0, true, NULL},
        {1, 1101, 10, 1, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, true, "relu"},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(more); i++)
        check(&more[i], isa);
    /* 1x1 convs over a 1x1 plane (the SE blocks' FCs, matrix-vector): C around the 16- and
     * 8-float runs and their tails, M around the 4-row and 16-row blocks, batch 2, the SE
     * activations; 960 x 240 is large enough to be split between threads */
    static const int64_t mc[][2] = {{1, 1},     {7, 3},     {16, 4},   {17, 5},
                                    {72, 24},   {24, 72},   {33, 17},  {120, 480},
                                    {240, 960}, {960, 240}, {961, 33}, {8, 1000}};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(mc); i++) {
        struct ccase c = {
            1 + (int64_t)(i % 2), mc[i][0],   mc[i][1], 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
            i % 3 != 2,           acts[i % 5]};
        check(&c, isa);
    }
    /* small-channel dense convs (the stem: 3 channels, 3x3, stride 2) with M around the 8-wide
     * channel blocks, every padding, C = 1..4, 5x5 with one channel, 2x3 */
    static const int64_t ms[] = {1, 5, 8, 16, 19, 32, 33};
    k = 0;
    for (int64_t C = 1; C <= 4; C++)
        for (size_t i = 0; i < NPU_ARRAY_SIZE(ms); i++)
            for (int64_t s = 1; s <= 2; s++) {
                int64_t p = k % 3, H = sizes[(k + 2) % NPU_ARRAY_SIZE(sizes)] + 1;
                int64_t W = sizes[(k + 5) % NPU_ARRAY_SIZE(sizes)] + 2;
                struct ccase c = {1 + k % 2,   C, ms[i],      1,          H, W,
                                  3,           3, s,          s,          p, (p + 1) % 3,
                                  (p + 2) % 3, p, k % 3 != 1, acts[k % 3]};
                check(&c, isa);
                k++;
            }
    struct ccase stems[] = {
        {1, 3, 32, 1, 224, 224, 3, 3, 2, 2, 1, 1, 1, 1, true, "clip"},
        {1, 3, 16, 1, 75, 61, 3, 3, 2, 2, 0, 1, 1, 0, true, NULL},
        {2, 1, 9, 1, 21, 40, 5, 5, 1, 2, 2, 2, 2, 2, true, "relu"},
        {1, 2, 11, 1, 17, 19, 2, 3, 1, 1, 1, 0, 0, 2, false, NULL},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(stems); i++)
        check(&stems[i], isa);
}

int
main(void)
{
    tctx_init();
    int best = cpu_dwconv_isa(3); /* the best the CPU has, whatever NPU_CPU_DWCONV says */
    if (best == 0) {
        /* the portable paths alone are test cpu-conv's */
        fprintf(stderr, "test-cpu-dwconv: skipped: no AVX2+FMA (or not x86-64) here, so the fast "
                        "paths are off and Conv runs the portable paths test cpu-conv checks\n");
        tctx_fini();
        return 77;
    }
    for (int isa = best; isa >= 2; isa--) {
        sweep(isa);
        fprintf(stderr, "test-cpu-dwconv: instruction set %d: %d cases\n", isa, cases_run);
        cases_run = 0;
    }
    cpu_dwconv_isa(best);
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-dwconv");
}
