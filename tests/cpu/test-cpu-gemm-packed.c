/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-gemm-packed.c: fp32 MatMul and Gemm with a constant B packed once
 * (npu_cpu_prepare / npu_cpu_run_prep, core/cpu/npu-cpu-gemm-packed.c) against a loop in
 * double, at random shapes: M from 1 (the streaming kernel) to past one 256-row block (the
 * AVX-512 tile, its 4/2/1-row tails, and the unpacked path where that kernel is off), K
 * around the 128-wide chunk, N around the 48-wide panel; MatMul with a 3-D A folded into
 * rows, fused bias and activation; Gemm with transB, a bias C, a full C with beta, and
 * alpha (which stays unpacked). Every case must give the same bytes with 1 and 3 threads,
 * and the prepared run must agree with the plain one to fp32 rounding.
 */
#include "../../core/cpu/npu-cpu-gemm-packed.h"
#include "cpu-test-util.h"
#include "npu-test.h"

struct mm_case {
    enum npu_op op;
    int64_t batch, M, K, N;
    bool tb, bias, full_c;
    float alpha, beta;
    const char *act;
};

static void
run_case(const struct mm_case *c)
{
    int64_t rows = c->batch * c->M;
    bool gemm = c->op == NPU_OP_GEMM;
    struct npu_tensor *a = c->batch > 1 ? tt(NPU_DTYPE_FP32, 3, c->batch, c->M, c->K)
                                        : tt(NPU_DTYPE_FP32, 2, c->M, c->K);
    struct npu_tensor *b =
        c->tb ? tt(NPU_DTYPE_FP32, 2, c->N, c->K) : tt(NPU_DTYPE_FP32, 2, c->K, c->N);
    struct npu_tensor *bias =
        c->full_c ? tt(NPU_DTYPE_FP32, 2, c->M, c->N) : tt(NPU_DTYPE_FP32, 1, c->N);
    struct npu_tensor *y[4];
    for (int i = 0; i < 4; i++)
        y[i] = c->batch > 1 ? tt(NPU_DTYPE_FP32, 3, c->batch, c->M, c->N)
                            : tt(NPU_DTYPE_FP32, 2, c->M, c->N);
    tt_fill_rand(a, -1, 1);
    tt_fill_rand(b, -1, 1);
    tt_fill_rand(bias, -1, 1);
    struct alist al = {0};
    if (gemm) {
        al_int(&al, "transB", c->tb);
        al_float(&al, "alpha", c->alpha);
        al_float(&al, "beta", c->beta);
    }
    if (c->act)
        al_str(&al, "npu_act", c->act);
    struct npu_tensor *in[3] = {a, b, c->bias || c->full_c ? bias : NULL};
    int nin = in[2] ? 3 : 2;

    /* plain run (1 and 3 threads) */
    CHECK_EQ_INT(NPU_OK, run2(c->op, &al, nin, in, 1, &y[0]));
    /* prepared: A known only by its shape */
    struct npu_tensor ashape = *a;
    ashape.data = NULL;
    const struct npu_tensor *pin[3] = {&ashape, b, in[2]};
    struct npu_cpu_prep *prep = NULL;
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(c->op, al_done(&al), pin, nin, &prep));
    /* products under 4096 elements of B are not worth a copy */
    CHECK((prep != NULL) == (c->K * c->N >= 4096));
    const struct npu_tensor *const *cin = (const struct npu_tensor *const *)in;
    CHECK_EQ_INT(NPU_OK, npu_cpu_run_prep(tctx1, prep, c->op, al_done(&al), cin, nin, &y[1], 1));
    CHECK_EQ_INT(NPU_OK, npu_cpu_run_prep(tctxn, prep, c->op, al_done(&al), cin, nin, &y[2], 1));
    if (!tt_same_bytes(y[1], y[2])) {
        fprintf(stderr, "packed %s M%lld K%lld N%lld: 1 and 3 threads differ\n", npu_op_name(c->op),
                (long long)rows, (long long)c->K, (long long)c->N);
        CHECK(false);
    }
    /* prepared from other bytes: runs as npu_cpu_run does */
    struct npu_tensor *b2 = tt_new(b->dtype, b->ndim, b->dims);
    memcpy(b2->data, b->data, (size_t)tt_n(b) * sizeof(float));
    in[1] = b2;
    CHECK_EQ_INT(NPU_OK, npu_cpu_run_prep(tctx1, prep, c->op, al_done(&al), cin, nin, &y[3], 1));
    CHECK(tt_same_bytes(y[0], y[3]));
    in[1] = b;

    /* against double, bound a few fp32 roundings of the sum of |terms| */
    const float *af = a->data, *bf = b->data, *cf = bias->data;
    double worst = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t n = 0; n < c->N; n++) {
            double acc = 0, mag = 0;
            for (int64_t k = 0; k < c->K; k++) {
                double p = (double)af[r * c->K + k] *
                           (double)(c->tb ? bf[n * c->K + k] : bf[k * c->N + n]);
                acc += p;
                mag += fabs(p);
            }
            double alpha = gemm ? c->alpha : 1.0, beta = gemm ? c->beta : 1.0;
            acc *= alpha;
            mag *= fabs(alpha);
            if (c->full_c) {
                acc += beta * cf[r * c->N + n];
                mag += fabs(beta * cf[r * c->N + n]);
            } else if (c->bias) {
                acc += beta * cf[n];
                mag += fabs(beta * cf[n]);
            }
            double want = tt_act_ref(c->act, acc);
            for (int v = 0; v < 2; v++) {
                double got = ((const float *)y[v]->data)[r * c->N + n];
                double e = fabs(got - want) / (1e-6 * (mag + 1.0));
                worst = e > worst ? e : worst;
            }
        }
    if (!(worst <= 4.0))
        fprintf(stderr, "%s batch %lld M%lld K%lld N%lld tb%d: error %.3g of the bound\n",
                npu_op_name(c->op), (long long)c->batch, (long long)c->M, (long long)c->K,
                (long long)c->N, c->tb, worst / 4.0);
    CHECK(worst <= 4.0);
    npu_cpu_prep_free(prep);
    tt_free(a);
    tt_free(b);
    tt_free(b2);
    tt_free(bias);
    for (int i = 0; i < 4; i++)
        tt_free(y[i]);
}

static int64_t
pick(const int64_t *v, size_t n)
{
    return v[tt_rand_u64() % n];
}

static void
random_cases(int count)
{
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 17, 31, 64, 129, 257, 300};
    static const int64_t Ks[] = {16, 17, 64, 100, 127, 128, 129, 256, 300};
    static const int64_t Ns[] = {16, 33, 47, 48, 49, 95, 96, 100, 145, 200};
    static const char *acts[] = {NULL, NULL, "relu", "gelu"};
    for (int i = 0; i < count; i++) {
        struct mm_case c = {0};
        c.op = tt_rand_u64() % 2 ? NPU_OP_GEMM : NPU_OP_MATMUL;
        c.batch = 1;
        c.M = pick(Ms, NPU_ARRAY_SIZE(Ms));
        c.K = pick(Ks, NPU_ARRAY_SIZE(Ks));
        c.N = pick(Ns, NPU_ARRAY_SIZE(Ns));
        c.alpha = 1.0f;
        c.beta = 1.0f;
        c.act = acts[tt_rand_u64() % 4];
        c.bias = tt_rand_u64() % 2;
        if (c.op == NPU_OP_MATMUL) {
            if (c.M <= 40 && tt_rand_u64() % 3 == 0) { /* [batch, M, K] folded into rows */
                c.batch = 3;
            }
        } else {
            c.tb = tt_rand_u64() % 2;
            int v = (int)(tt_rand_u64() % 4);
            if (v == 0) { /* a full C scaled by beta: accumulated onto */
                c.full_c = true;
                c.bias = false;
                c.beta = 0.5f;
            } else if (v == 1) {
                c.alpha = 0.75f; /* stays on the unpacked path */
            }
        }
        run_case(&c);
    }
}

static void
test_prepare_cases(void)
{
    struct npu_attrs none = {0};
    struct npu_tensor *b = tt(NPU_DTYPE_FP32, 2, 64, 64);
    struct npu_tensor *b3 = tt(NPU_DTYPE_FP32, 3, 2, 64, 64);
    struct npu_tensor *bs = tt(NPU_DTYPE_FP32, 2, 8, 8);
    struct npu_tensor *bi = tt(NPU_DTYPE_INT32, 2, 64, 64);
    const struct npu_tensor *in[2] = {NULL, b};
    struct npu_cpu_prep *p = NULL;
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_MATMUL, &none, in, 2, &p));
    CHECK(p != NULL);
    npu_cpu_prep_free(p);
    /* nothing to pack: a batched B, a small one, integers, B known only at run time */
    const struct npu_tensor *skip[] = {b3, bs, bi};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(skip); i++) {
        in[1] = skip[i];
        p = (struct npu_cpu_prep *)&none;
        CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_MATMUL, &none, in, 2, &p));
        CHECK(p == NULL);
    }
    struct npu_tensor bshape = *b;
    bshape.data = NULL;
    in[1] = &bshape;
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_GEMM, &none, in, 2, &p));
    CHECK(p == NULL);
    tt_free(b);
    tt_free(b3);
    tt_free(bs);
    tt_free(bi);
}

int
main(void)
{
    tctx_init();
    test_prepare_cases();
    /* the shapes of GPT-2 small's decoder step and a ViT projection, with bias */
    run_case(&(struct mm_case){NPU_OP_GEMM, 1, 1, 768, 2304, false, true, false, 1, 1, NULL});
    run_case(&(struct mm_case){NPU_OP_MATMUL, 1, 1, 768, 1000, false, false, false, 1, 1, NULL});
    run_case(&(struct mm_case){NPU_OP_MATMUL, 1, 196, 768, 768, false, true, false, 1, 1, NULL});
    random_cases(60);
    bool wide = cpu_mm_packed_wide(-1);
    if (wide) {
        /* again with the AVX-512 tile off: rows past 4 take the unpacked path */
        cpu_mm_packed_wide(0);
        random_cases(20);
        cpu_mm_packed_wide(-1);
    }
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-gemm-packed");
}
