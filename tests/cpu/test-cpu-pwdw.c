/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-pwdw.c: the fused 1x1 -> depthwise step (npu_cpu_run_pw_dw, core/cpu/npu-cpu-pwdw.c)
 * against the two Convs run one after the other through npu_cpu_run: the outputs must be the
 * same bytes, with and without the 1x1's prepared weights, on 1, 2 and 3 threads (2 threads
 * cut the 56x56 planes into one band per thread for the pool's pixel-range split), with each
 * depthwise instruction set the CPU has. Shapes: MobileNetV2/V3's (3x3 and 5x5, stride 1 and
 * 2, 16-144 channels, clip / hard_swish / relu / none), channel counts that are not a multiple
 * of 8 or 16, a batch of 2, asymmetric padding, odd and narrow planes (8 lanes), 7x7 and 3x5
 * kernels; shapes the band form does not take (small plane, a plane ending 1 output past its
 * 48-wide panels) must say so in npu_cpu_pw_dw_wanted and still run right (the unfused
 * fallback); bad operands are refused with an error, never a crash.
 */
#include "../../core/cpu/npu-cpu-dwconv.h"
#include "cpu-test-util.h"
#include "npu-test.h"

struct pcase {
    int64_t N, C, E, H, W, KH, KW, s, pt, pl, pb, pr;
    bool b1, b2;
    const char *a1, *a2;
    bool wanted; /* the band form takes it (on a CPU with AVX2 or AVX-512) */
};

static int cases_run, mismatches;
static struct npu_cpu_ctx *tctx2;

static void
al_act(struct alist *al, const char *act)
{
    if (!act)
        return;
    al_str(al, "npu_act", act);
    if (!strcmp(act, "clip")) {
        al_float(al, "npu_act_alpha", 0.0f);
        al_float(al, "npu_act_beta", 6.0f);
    }
    if (!strcmp(act, "hard_sigmoid")) {
        al_float(al, "npu_act_alpha", 0.2f);
        al_float(al, "npu_act_beta", 0.5f);
    }
}

static void
run_case(const struct pcase *c)
{
    const int64_t OH = (c->H + c->pt + c->pb - c->KH) / c->s + 1;
    const int64_t OW = (c->W + c->pl + c->pr - c->KW) / c->s + 1;
    struct npu_tensor *x = tt(NPU_DTYPE_FP32, 4, c->N, c->C, c->H, c->W);
    struct npu_tensor *w1 = tt(NPU_DTYPE_FP32, 4, c->E, c->C, D(1), D(1));
    struct npu_tensor *w2 = tt(NPU_DTYPE_FP32, 4, c->E, D(1), c->KH, c->KW);
    struct npu_tensor *b1 = c->b1 ? tt(NPU_DTYPE_FP32, 1, c->E) : NULL;
    struct npu_tensor *b2 = c->b2 ? tt(NPU_DTYPE_FP32, 1, c->E) : NULL;
    struct npu_tensor *t = tt(NPU_DTYPE_FP32, 4, c->N, c->E, c->H, c->W);
    struct npu_tensor *want = tt(NPU_DTYPE_FP32, 4, c->N, c->E, OH, OW);
    struct npu_tensor *got = tt(NPU_DTYPE_FP32, 4, c->N, c->E, OH, OW);
    tt_fill_rand(x, -1, 1);
    tt_fill_rand(w1, -0.5, 0.5);
    tt_fill_rand(w2, -0.5, 0.5);
    if (b1)
        tt_fill_rand(b1, -0.5, 0.5);
    if (b2)
        tt_fill_rand(b2, -0.5, 0.5);
    struct alist l1 = {0}, l2 = {0};
    al_act(&l1, c->a1);
    int64_t st[2] = {c->s, c->s}, pads[4] = {c->pt, c->pl, c->pb, c->pr};
    al_ints(&l2, "strides", st, 2);
    al_ints(&l2, "pads", pads, 4);
    al_int(&l2, "group", c->E);
    al_act(&l2, c->a2);
    struct npu_attrs *a1 = al_done(&l1), *a2 = al_done(&l2);

    /* the reference: the two Convs, unfused */
    struct npu_tensor *in1[3] = {x, w1, b1}, *in2[3] = {t, w2, b2};
    struct npu_tensor *o1[1] = {t}, *o2[1] = {want};
    CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_CONV, &l1, b1 ? 3 : 2, in1, 1, o1));
    CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_CONV, &l2, b2 ? 3 : 2, in2, 1, o2));

    bool wanted = npu_cpu_pw_dw_wanted(a1, x, w1, a2, w2);
    if (wanted != c->wanted) {
        fprintf(stderr, "case %d: wanted %d, expected %d\n", cases_run, wanted, c->wanted);
        mismatches++;
    }
    struct npu_cpu_prep *prep = NULL;
    const struct npu_tensor *pin[3] = {x, w1, b1};
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_CONV, a1, pin, 3, &prep));
    struct npu_cpu_ctx *ctxs[3] = {tctx1, tctxn, tctx2};
    for (int k = 0; k < 6; k++) {
        memset(got->data, 0xff, (size_t)tt_n(got) * sizeof(float));
        CHECK_EQ_INT(NPU_OK, npu_cpu_run_pw_dw(ctxs[k % 3], k >= 3 ? prep : NULL, a1, x, w1, b1, a2,
                                               w2, b2, got));
        if (!tt_same_bytes(got, want)) {
            fprintf(stderr,
                    "case %d (%lld x %lldx%lld -> %lld, %lldx%lld s%lld): fused differs from "
                    "unfused (%d threads, prep %d)\n",
                    cases_run, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->E,
                    (long long)c->KH, (long long)c->KW, (long long)c->s,
                    npu_cpu_ctx_threads(ctxs[k % 3]), k >= 3);
            mismatches++;
        }
    }
    npu_cpu_prep_free(prep);
    cases_run++;
    tt_free(x);
    tt_free(w1);
    tt_free(w2);
    tt_free(b1);
    tt_free(b2);
    tt_free(t);
    tt_free(want);
    tt_free(got);
}

/* Operands the fused step must refuse with a status, not a crash. */
static void
bad_operands(void)
{
    struct npu_tensor *x = tt(NPU_DTYPE_FP32, 4, D(1), D(8), D(28), D(28));
    struct npu_tensor *w1 = tt(NPU_DTYPE_FP32, 4, D(16), D(8), D(1), D(1));
    struct npu_tensor *w1k = tt(NPU_DTYPE_FP32, 4, D(16), D(8), D(3), D(3));
    struct npu_tensor *w2 = tt(NPU_DTYPE_FP32, 4, D(16), D(1), D(3), D(3));
    struct npu_tensor *w2bad = tt(NPU_DTYPE_FP32, 4, D(12), D(1), D(3), D(3));
    struct npu_tensor *b1bad = tt(NPU_DTYPE_FP32, 1, D(15));
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, D(1), D(16), D(26), D(26));
    struct npu_tensor *ybad = tt(NPU_DTYPE_FP32, 4, D(1), D(16), D(28), D(28));
    struct npu_tensor *xi = tt(NPU_DTYPE_INT32, 4, D(1), D(8), D(28), D(28));
    struct alist l1 = {0}, l2 = {0}, l2g = {0};
    al_int(&l2, "group", 16);
    al_int(&l2g, "group", 4);
    struct npu_attrs *a1 = al_done(&l1), *a2 = al_done(&l2), *a2g = al_done(&l2g);
    /* the good call first: it works */
    CHECK_EQ_INT(NPU_OK, npu_cpu_run_pw_dw(tctx1, NULL, a1, x, w1, NULL, a2, w2, NULL, y));
    CHECK(npu_cpu_run_pw_dw(tctx1, NULL, a1, x, w1, NULL, a2, w2bad, NULL, y) != NPU_OK);
    CHECK(npu_cpu_run_pw_dw(tctx1, NULL, a1, x, w1k, NULL, a2, w2, NULL, y) != NPU_OK);
    CHECK(npu_cpu_run_pw_dw(tctx1, NULL, a1, x, w1, b1bad, a2, w2, NULL, y) != NPU_OK);
    CHECK(npu_cpu_run_pw_dw(tctx1, NULL, a1, x, w1, NULL, a2, w2, NULL, ybad) != NPU_OK);
    CHECK(npu_cpu_run_pw_dw(tctx1, NULL, a1, x, w1, NULL, a2g, w2, NULL, y) != NPU_OK);
    CHECK(npu_cpu_run_pw_dw(tctx1, NULL, a1, xi, w1, NULL, a2, w2, NULL, y) != NPU_OK);
    CHECK(npu_cpu_run_pw_dw(tctx1, NULL, a1, NULL, w1, NULL, a2, w2, NULL, y) != NPU_OK);
    CHECK(npu_cpu_run_pw_dw(NULL, NULL, a1, x, w1, NULL, a2, w2, NULL, y) != NPU_OK);
    CHECK(!npu_cpu_pw_dw_wanted(a1, x, w1k, a2, w2));
    CHECK(!npu_cpu_pw_dw_wanted(a1, x, w1, a2g, w2));
    CHECK(!npu_cpu_pw_dw_wanted(a1, xi, w1, a2, w2));
    tt_free(x);
    tt_free(w1);
    tt_free(w1k);
    tt_free(w2);
    tt_free(w2bad);
    tt_free(b1bad);
    tt_free(y);
    tt_free(ybad);
    tt_free(xi);
}

static void
sweep(bool fast)
{
    /* N, C, E, H, W, KH, KW, s, pads (t, l, b, r), biases, activations, wanted */
    const struct pcase cases[] = {
        {1, 16, 96, 56, 56, 3, 3, 2, 1, 1, 1, 1, true, true, "clip", "clip", fast},
        {1, 24, 144, 56, 56, 3, 3, 1, 1, 1, 1, 1, true, true, "clip", "clip", fast},
        {2, 24, 44, 30, 30, 3, 3, 1, 1, 1, 1, 1, false, false, "relu", NULL, fast},
        {1, 8, 72, 40, 33, 5, 5, 2, 2, 2, 2, 2, true, true, "hard_swish", "hard_swish", fast},
        {1, 24, 72, 28, 28, 3, 3, 1, 1, 1, 1, 1, false, true, NULL, "hard_sigmoid", fast},
        {1, 16, 40, 57, 29, 3, 3, 2, 0, 0, 1, 1, true, true, "clip", "clip", fast},
        {1, 16, 32, 32, 32, 7, 7, 1, 3, 3, 3, 3, true, false, "relu", "relu", fast},
        {1, 16, 24, 36, 31, 3, 5, 1, 1, 2, 1, 2, true, true, NULL, NULL, fast},
        {1, 16, 24, 112, 112, 3, 3, 1, 1, 1, 1, 1, true, true, "clip", "clip", fast},
        {1, 16, 20, 200, 8, 3, 3, 1, 1, 1, 1, 1, true, true, "clip", "relu", fast},
        {1, 8, 16, 60, 60, 3, 3, 2, 0, 0, 0, 0, true, true, "relu", "clip", fast},
        /* not taken: a 14x14 plane (stays in L2), 49x49 (2401 = 50 x 48 + 1 outputs) */
        {1, 32, 96, 14, 14, 3, 3, 1, 1, 1, 1, 1, true, true, "clip", "clip", false},
        {1, 16, 32, 49, 49, 3, 3, 1, 1, 1, 1, 1, true, true, "clip", "clip", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
}

int
main(void)
{
    tctx_init();
    tctx2 = npu_cpu_ctx_create(2);
    if (!tctx2) {
        fprintf(stderr, "cannot create a 2-thread CPU context\n");
        return 1;
    }
    /* NPU_CPU_PWDW=0 (the second meson test): every case runs the unfused fallback */
    const char *env = getenv("NPU_CPU_PWDW");
    const bool off = env && !strcmp(env, "0");
    const int best = cpu_dwconv_isa(3); /* 0: no AVX2+FMA here, the band form is never taken */
    for (int isa = best; isa >= 0; isa--) {
        if (isa == 1 || (isa == 0 && best > 0))
            continue;
        cpu_dwconv_isa(isa);
        sweep(isa >= 2 && !off);
        fprintf(stderr, "test-cpu-pwdw: depthwise instruction set %d: %d cases\n", isa, cases_run);
        cases_run = 0;
    }
    cpu_dwconv_isa(best);
    bad_operands();
    CHECK_EQ_INT(0, mismatches);
    npu_cpu_ctx_destroy(tctx2);
    tctx_fini();
    return npu_test_done("test-cpu-pwdw");
}
