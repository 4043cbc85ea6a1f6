/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-conv-direct.c: the direct fp32 convolution (core/cpu/npu-cpu-conv-direct.c) and
 * the prepare step (npu_cpu_prepare / npu_cpu_run_prep) against a direct loop in double,
 * over odd shapes: channel counts that are not multiples of 8, planes whose length is not a
 * multiple of the 48-output panel, asymmetric padding, strides 1-3, dilation, batch 2, bias
 * and fused activations. meson runs it with NPU_CPU_CONV=direct (every shape on the direct
 * path; the test sets that itself unless the environment names a path, so that the binary run
 * by hand checks the same: the packing check below holds only there), once more with the AVX2
 * kernel forced (NPU_CPU_CONV_ISA=avx2) and once with every sum over more than 64 k cut in chunks
 * (NPU_CPU_CONV_KC=64) and with every prepared Conv on the small-plane form (NPU_CPU_CONV_T=1; by
 * default only small planes), its sums in chunks of 40 k (NPU_CPU_CONV_TKC=40); those runs keep
 * Winograd off (NPU_CPU_CONV_WINO=0), and one more runs every 3x3 stride-1 case through it
 * (NPU_CPU_CONV_WINO=1, the whole-plane product in chunks of 40 channels: NPU_CPU_CONV_WKC=40),
 * within the same bound. Each case also requires bit-identical results with
 * 1 and 3 threads and with and without prepared weights, and the fused residual (Conv's 4th operand
 * R, y = act(conv + R)) to give the same bytes as Conv, Add and Relu run one after the other, on
 * the direct path and on the others.
 */
#include "cpu-test-util.h"
#include "npu-test.h"

struct cd_case {
    int64_t N, C, H, W, M, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
    bool bias;
    const char *act;
};

static void
run_case(const struct cd_case *c)
{
    int64_t OH = (c->H + c->pt + c->pb - ((c->KH - 1) * c->dh + 1)) / c->sh + 1;
    int64_t OW = (c->W + c->pl + c->pr - ((c->KW - 1) * c->dw + 1)) / c->sw + 1;
    struct npu_tensor *x = tt(NPU_DTYPE_FP32, 4, c->N, c->C, c->H, c->W);
    struct npu_tensor *w = tt(NPU_DTYPE_FP32, 4, c->M, c->C, c->KH, c->KW);
    struct npu_tensor *b = tt(NPU_DTYPE_FP32, 1, c->M);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, c->N, c->M, OH, OW);
    struct npu_tensor *y2 = tt(NPU_DTYPE_FP32, 4, c->N, c->M, OH, OW);
    tt_fill_rand(x, -1, 1);
    tt_fill_rand(w, -1, 1);
    tt_fill_rand(b, -1, 1);
    int64_t ints[8] = {c->sh, c->sw, c->dh, c->dw, c->pt, c->pl, c->pb, c->pr};
    struct alist al = {0};
    al_ints(&al, "strides", ints, 2);
    al_ints(&al, "dilations", ints + 2, 2);
    al_ints(&al, "pads", ints + 4, 4);
    if (c->act)
        al_str(&al, "npu_act", c->act);
    struct npu_tensor *in[3] = {x, w, c->bias ? b : NULL};
    int nin = c->bias ? 3 : 2;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV, &al, nin, in, 1, &y));

    /* the reference, and the bound: a few fp32 roundings of the sum of |products| */
    const float *xf = x->data, *wf = w->data, *bf = b->data;
    double worst = 0;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = 0, mag = 0;
                    for (int64_t ci = 0; ci < c->C; ci++)
                        for (int64_t kh = 0; kh < c->KH; kh++)
                            for (int64_t kw = 0; kw < c->KW; kw++) {
                                int64_t h = oh * c->sh - c->pt + kh * c->dh;
                                int64_t ww = ow * c->sw - c->pl + kw * c->dw;
                                if (h < 0 || h >= c->H || ww < 0 || ww >= c->W)
                                    continue;
                                double p = (double)xf[((n * c->C + ci) * c->H + h) * c->W + ww] *
                                           (double)wf[((m * c->C + ci) * c->KH + kh) * c->KW + kw];
                                acc += p;
                                mag += fabs(p);
                            }
                    if (c->bias) {
                        acc += bf[m];
                        mag += fabs(bf[m]);
                    }
                    double want = tt_act_ref(c->act, acc);
                    double got = ((const float *)y->data)[((n * c->M + m) * OH + oh) * OW + ow];
                    double e = fabs(got - want) / (1e-6 * (mag + 1.0));
                    if (!(e <= worst))
                        worst = e;
                }
    if (!(worst <= 4.0))
        fprintf(stderr,
                "conv N%lld C%lld %lldx%lld M%lld k%lldx%lld s%lldx%lld d%lldx%lld: error %.3g "
                "of the bound\n",
                (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->M,
                (long long)c->KH, (long long)c->KW, (long long)c->sh, (long long)c->sw,
                (long long)c->dh, (long long)c->dw, worst / 4.0);
    CHECK(worst <= 4.0);

    /* prepared weights: X known only by its shape; the same bytes as without */
    struct npu_tensor xshape = *x;
    xshape.data = NULL;
    const struct npu_tensor *pin[3] = {&xshape, w, c->bias ? b : NULL};
    struct npu_cpu_prep *prep = NULL;
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_CONV, al_done(&al), pin, nin, &prep));
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        CHECK(prep != NULL); /* the direct path exists here: it must have packed */
#endif
    CHECK_EQ_INT(NPU_OK, npu_cpu_run_prep(tctxn, prep, NPU_OP_CONV, al_done(&al),
                                          (const struct npu_tensor *const *)in, nin, &y2, 1));
    CHECK(tt_same_bytes(y, y2));

    /* the fused residual (4th operand R): the same bytes as the unfused graph, Conv without
     * its activation, Add R, then the activation, with and without prepared weights */
    struct npu_tensor *r = tt(NPU_DTYPE_FP32, 4, c->N, c->M, OH, OW);
    struct npu_tensor *yf = tt(NPU_DTYPE_FP32, 4, c->N, c->M, OH, OW);
    tt_fill_rand(r, -1, 1);
    struct npu_tensor *in4[4] = {x, w, c->bias ? b : NULL, r};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV, &al, 4, in4, 1, &yf));
    struct alist pl = {0};
    al_ints(&pl, "strides", ints, 2);
    al_ints(&pl, "dilations", ints + 2, 2);
    al_ints(&pl, "pads", ints + 4, 4);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV, &pl, nin, in, 1, &y2));
    struct npu_tensor *add_in[2] = {y2, r};
    CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_ADD, &(struct alist){0}, 2, add_in, 1, &y2));
    if (c->act && !strcmp(c->act, "relu")) {
        CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_RELU, &(struct alist){0}, 1, &y2, 1, &y2));
        CHECK(tt_same_bytes(yf, y2));
    } else if (!c->act) {
        CHECK(tt_same_bytes(yf, y2));
    } else {
        /* other activations: their vector forms may round differently from the op's */
        const float *pf = yf->data, *pu = y2->data;
        double e = 0;
        for (int64_t i = 0; i < npu_tensor_numel(yf); i++)
            e = fmax(e, fabs(pf[i] - tt_act_ref(c->act, pu[i])));
        CHECK(e < 1e-5);
    }
    CHECK_EQ_INT(NPU_OK, npu_cpu_run_prep(tctxn, prep, NPU_OP_CONV, al_done(&al),
                                          (const struct npu_tensor *const *)in4, 4, &y2, 1));
    CHECK(tt_same_bytes(yf, y2));
    npu_cpu_prep_free(prep);
    tt_free(r);
    tt_free(yf);
    tt_free(x);
    tt_free(w);
    tt_free(b);
    tt_free(y);
    tt_free(y2);
}

/* The residual operand on the paths that have no residual epilogue (depthwise, grouped on the
 * GEMM path): conv, then y = act(y + R) in one pass; the same bytes as the unfused ops. A
 * residual of another shape or dtype is refused. */
static void
test_residual_other_paths(void)
{
    static const struct {
        int64_t C, H, W, M, G, K, s;
        const char *act;
    } cases[] = {
        {16, 13, 11, 16, 16, 3, 1, "relu"}, /* depthwise */
        {24, 9, 10, 24, 24, 3, 2, NULL},    /* depthwise, stride 2 */
        {8, 7, 9, 12, 2, 3, 1, "relu"},     /* grouped: GEMM path */
        {3, 17, 19, 16, 1, 3, 2, "relu"},   /* 3-channel stem */
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        int64_t C = cases[i].C, M = cases[i].M, G = cases[i].G, K = cases[i].K, s = cases[i].s;
        int64_t OH = (cases[i].H + 2 - K) / s + 1, OW = (cases[i].W + 2 - K) / s + 1;
        struct npu_tensor *x = tt(NPU_DTYPE_FP32, 4, 1, C, cases[i].H, cases[i].W);
        struct npu_tensor *w = tt(NPU_DTYPE_FP32, 4, M, C / G, K, K);
        struct npu_tensor *b = tt(NPU_DTYPE_FP32, 1, M);
        struct npu_tensor *r = tt(NPU_DTYPE_FP32, 4, 1, M, OH, OW);
        struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, 1, M, OH, OW);
        struct npu_tensor *y2 = tt(NPU_DTYPE_FP32, 4, 1, M, OH, OW);
        tt_fill_rand(x, -1, 1);
        tt_fill_rand(w, -1, 1);
        tt_fill_rand(b, -1, 1);
        tt_fill_rand(r, -1, 1);
        int64_t ints[6] = {s, s, 1, 1, 1, 1};
        struct alist al = {0}, pl = {0};
        al_ints(&al, "strides", ints, 2);
        al_ints(&al, "pads", ints + 2, 4);
        al_int(&al, "group", G);
        al_ints(&pl, "strides", ints, 2);
        al_ints(&pl, "pads", ints + 2, 4);
        al_int(&pl, "group", G);
        if (cases[i].act)
            al_str(&al, "npu_act", cases[i].act);
        struct npu_tensor *in4[4] = {x, w, b, r};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV, &al, 4, in4, 1, &y));
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONV, &pl, 3, in4, 1, &y2));
        struct npu_tensor *add_in[2] = {y2, r};
        CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_ADD, &(struct alist){0}, 2, add_in, 1, &y2));
        if (cases[i].act)
            CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_RELU, &(struct alist){0}, 1, &y2, 1, &y2));
        CHECK(tt_same_bytes(y, y2));
        /* R of another shape, or not fp32: a clear error */
        struct npu_tensor *bad = tt(NPU_DTYPE_FP32, 4, 1, M, OH, OW + 1);
        struct npu_tensor *in_bad[4] = {x, w, b, bad};
        CHECK_EQ_INT(NPU_ERR_INVALID, run2(NPU_OP_CONV, &al, 4, in_bad, 1, &y));
        tt_free(bad);
        tt_free(x);
        tt_free(w);
        tt_free(b);
        tt_free(r);
        tt_free(y);
        tt_free(y2);
    }
}

static void
test_prepare_errors(void)
{
    struct npu_attrs none = {0};
    struct npu_tensor *w = tt(NPU_DTYPE_FP32, 4, 8, 8, 3, 3);
    const struct npu_tensor *in[2] = {NULL, w};
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_cpu_prepare(NPU_OP_CONV, &none, in, 2, NULL));
    struct npu_cpu_prep *p = (struct npu_cpu_prep *)&none;
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_cpu_prepare(NPU_OP_CONV, &none, NULL, 2, &p));
    CHECK(p == NULL);
    /* nothing to prepare: not an error, no object */
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_RELU, &none, in, 1, &p));
    CHECK(p == NULL);
    in[1] = NULL;
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_CONV, &none, in, 2, &p));
    CHECK(p == NULL);
    npu_cpu_prep_free(NULL);
    tt_free(w);
}

int
main(void)
{
    /* every shape on the direct path, also when the binary is run by hand: the path is chosen
     * once, on the first convolution, from NPU_CPU_CONV; meson's other settings (ISA, KC, T)
     * are kept because an existing value is not overwritten */
    setenv("NPU_CPU_CONV", "direct", 0);
    tctx_init();
    static const struct cd_case cases[] = {
        /* N  C   H   W   M  KH KW sh sw dh dw pt pl pb pr bias act */
        {1, 16, 7, 7, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, NULL},
        {1, 8, 13, 13, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, "relu"},
        {1, 9, 11, 17, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 16, 15, 14, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, NULL},
        {1, 12, 9, 9, 24, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, NULL},
        {1, 5, 10, 12, 7, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, true, "leaky_relu"},
        {1, 10, 12, 19, 17, 5, 3, 2, 1, 1, 1, 1, 0, 2, 1, true, "leaky_relu"},
        {1, 3, 23, 21, 10, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, true, "relu"},
        {2, 33, 6, 5, 40, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, true, "sigmoid"},
        {1, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 8, 14, 14, 9, 2, 2, 3, 3, 1, 1, 0, 1, 1, 0, false, NULL},
        {1, 24, 1, 50, 3, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, true, NULL},
        {2, 8, 48, 1, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, "relu"},
        /* SiLU and Sigmoid over rows long enough for the 16-wide vector code, with a tail */
        {1, 16, 20, 21, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "silu"},
        {1, 48, 9, 9, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, "sigmoid"},
        /* long sums (k in chunks): 3x3 over 130 channels, 1x1 over 1030 in place */
        {1, 130, 9, 7, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 1030, 7, 7, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, NULL},
        /* planes copied band by band (a copy over 1 MB with <= 32 output channels, over
         * 3 MB): stride 1 and 2, asymmetric padding, a 5x5 kernel, silu */
        {1, 16, 130, 131, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 7, 301, 290, 20, 3, 3, 2, 2, 1, 1, 1, 0, 2, 1, true, "silu"},
        {2, 10, 170, 160, 9, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, false, NULL},
        /* 1x1 with a stride (only phase (0, 0) is copied): odd planes, strides 2 and 3 and
         * mixed, padding (some copied rows and columns are zero), batch 2, a plane of many
         * panels (ResNet's 56x56 downsampling shape, smaller) */
        {2, 13, 15, 17, 11, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, true, "relu"},
        {1, 9, 20, 19, 17, 1, 1, 3, 2, 1, 1, 1, 2, 0, 1, true, NULL},
        {1, 6, 11, 14, 8, 1, 1, 2, 3, 1, 1, 1, 1, 1, 1, false, "silu"},
        {1, 64, 56, 56, 40, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, true, NULL},
        /* the small-plane form (output channels in the vector, pixel tiles of 7-8): channel
         * counts of 1, 2 and 3 vectors and a part block (50 = 48 + 2, 100 = 2 x 48 + 4, 33),
         * 7x7 planes (1x1 and 3x3, ResNet's last stage), stride 2 with dilation and
         * asymmetric padding, 1x1 with a stride, batch 2, SiLU over a tile of 50 x 7 */
        {1, 40, 7, 7, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 300, 7, 7, 100, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, NULL},
        {2, 17, 13, 11, 33, 3, 3, 2, 2, 2, 2, 2, 1, 1, 2, true, "silu"},
        {1, 24, 14, 14, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, "relu"},
        {1, 8, 9, 10, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, "sigmoid"},
        /* its k in chunks (cpu-conv-direct-small-plane: 40 k a chunk; by default weights over
         * 1 MiB): a plane of one tile of 4 pixels with K = 130 (chunks 40, 40, 40, 10), and
         * 81 pixels (11 tiles, two groups) with K = 27 x 9 and 97 channels (48 + 48 + 1) */
        {1, 130, 4, 4, 49, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, true, "relu"},
        {1, 27, 11, 11, 97, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, true, NULL},
        /* weights over 2 MiB (prepared in 2 MiB pages) on a 3x3 plane: by default the
         * small-plane form in chunks of 128 k (K = 1040: a short last chunk), 520 channels (a
         * last block of 40) */
        {1, 1040, 3, 3, 520, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, "relu"},
        /* 3x3 stride 1 (Winograd F(2x2, 3x3) where it runs, NPU_CPU_CONV_WINO): odd planes
         * (a last tile row and column of one output), no padding, padding 2 and asymmetric,
         * one input or output channel, channel blocks 16 / 48 + 1 / 2 x 48 + 1, batch 2,
         * planes of many bands (56x56, 61x37) and of one (7x7, 4x5), silu */
        {1, 16, 15, 13, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {2, 19, 9, 11, 49, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, true, NULL},
        {1, 20, 8, 9, 97, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, false, "silu"},
        {1, 17, 10, 12, 18, 3, 3, 1, 1, 1, 1, 0, 1, 2, 0, true, "relu"},
        {1, 1, 12, 11, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, NULL},
        {1, 24, 11, 10, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 32, 56, 56, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 21, 61, 37, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "silu"},
        {1, 200, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, "relu"},
        {1, 16, 4, 5, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, NULL},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++)
        run_case(&cases[i]);
    test_prepare_errors();
    test_residual_other_paths();
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-conv-direct");
}
