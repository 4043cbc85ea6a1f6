/* SPDX-License-Identifier: MIT */
/*
 * test-npu-matmul.c: MatMul and Gemm through the whole back end (lowering,
 * tiling, memory plan, codegen) executed on the simulator in strict mode,
 * against the CPU executor on the same graph.
 *
 * Tolerance: the data are multiples of 1/16 in [-2, 2] (exact in fp16), so
 * products are exact and every partial sum (a multiple of 1/256 below 2^13)
 * is exact in fp32 on both sides; the NPU result differs from the CPU's at
 * most by an fp32 -> fp16 store, half an fp16 ulp: relative 2^-11 (results
 * that only go to the host are written as fp32 and then agree exactly).
 * A second set with real-valued data checks the fp16 rounding of inputs and
 * weights against a statistical bound (see real_data()).
 */
#include "npu-test-util.h"
#include "npu/npu-timing.h"

static int verbose;

static void
check_mm(const struct tu_mm *p, const struct npu_backend_options *o, const char *label)
{
    struct npu_graph *g1 = tu_matmul_graph(p), *g2 = tu_matmul_graph(p);
    CHECK(g1 && g2);
    if (!g1 || !g2)
        return;
    int64_t na = (int64_t)(p->rank == 3 ? p->b0 : 1) * (p->rank == 1 ? 1 : p->M) * p->K;
    float *a = malloc((size_t)na * 4);
    uint32_t s = p->seed * 7 + 1;
    if (p->range)
        tu_fill(a, (size_t)na, &s, p->range);
    else
        tu_fill_real(a, (size_t)na, &s);
    struct npu_tensor in = g1->inputs[0]->t;
    in.data = a;
    struct npu_tensor want = {0}, got = {0};
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
    enum npu_status st = tu_run_npu(g2, o, &in, &got, &res);
    CHECK_EQ_INT(NPU_OK, st);
    if (!st) {
        int64_t worst = 0;
        double tol_rel = p->range ? ldexp(1, -11) : 4e-3;
        double tol_abs = p->range ? 1e-7 : 2e-3 * sqrt((double)p->K);
        double e = tu_cmp(&got, &want, tol_abs, tol_rel, &worst);
        if (e > 1)
            fprintf(stderr, "%s: element %lld: npu %.9g cpu %.9g (err %.3g of tolerance)\n", label,
                    (long long)worst, ((float *)got.data)[worst], ((float *)want.data)[worst], e);
        CHECK(e <= 1);
        CHECK_EQ_INT(1, res.submits);
        CHECK_EQ_INT(1, res.n_rk);
        if (verbose || e > 1)
            printf("%-40s tasks %3u  modeled %8.1f us  (%s)  err %.2f\n", label, res.tasks,
                   res.modeled_s * 1e6, npu_timing_model()->label, e);
    }
    free(a);
    free(want.data);
    free(got.data);
}

int
main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    struct npu_backend_options o = {0};
    char label[96];

    /* the thin slice: one task */
    if (getenv("ONLY_SLICE")) {
        struct tu_mm p0 = {.rank = 2, .M = 4, .K = 32, .N = 16, .range = 32, .seed = 1};
        verbose = 1;
        check_mm(&p0, &o, "matmul 4x32x16");
        return npu_test_done("npu-matmul");
    }
    struct tu_mm p = {.rank = 2, .M = 4, .K = 32, .N = 16, .range = 32, .seed = 1};
    check_mm(&p, &o, "matmul 4x32x16");

    /* M, K, N sweeps incl. 1 and non-multiples of 8 / 16 / 32 */
    static const int ms[] = {1, 2, 3, 5, 8, 17, 64, 196};
    static const int ks[] = {1, 3, 8, 31, 32, 33, 100, 768};
    static const int ns[] = {1, 7, 16, 20, 33, 100, 768};
    uint32_t seed = 10;
    for (size_t i = 0; i < NPU_ARRAY_SIZE(ms); i++)
        for (size_t j = 0; j < NPU_ARRAY_SIZE(ks); j++)
            for (size_t k = 0; k < NPU_ARRAY_SIZE(ns); k++) {
                /* keep the run short: skip most of the large products */
                if (ms[i] * ks[j] * ns[k] > 4000000 && (i + j + k) % 3)
                    continue;
                p = (struct tu_mm){
                    .rank = 2, .M = ms[i], .K = ks[j], .N = ns[k], .range = 32, .seed = seed++};
                snprintf(label, sizeof(label), "matmul %dx%dx%d", ms[i], ks[j], ns[k]);
                check_mm(&p, &o, label);
            }

    /* rank 1 and 3 (batched rows), bias, activations */
    p = (struct tu_mm){.rank = 1, .K = 64, .N = 40, .bias = true, .range = 32, .seed = 3};
    check_mm(&p, &o, "matmul vec 64x40 + bias");
    p = (struct tu_mm){.rank = 3,
                       .b0 = 3,
                       .M = 7,
                       .K = 48,
                       .N = 24,
                       .bias = true,
                       .act = "relu",
                       .range = 32,
                       .seed = 4};
    check_mm(&p, &o, "matmul 3x7x48x24 + bias relu");
    p = (struct tu_mm){.rank = 2,
                       .M = 9,
                       .K = 40,
                       .N = 36,
                       .bias = true,
                       .act = "clip",
                       .act_alpha = 0,
                       .act_beta = 1.5f,
                       .range = 32,
                       .seed = 5};
    check_mm(&p, &o, "matmul + bias relu6-like clip(0,1.5)");
    p = (struct tu_mm){.rank = 2,
                       .M = 9,
                       .K = 40,
                       .N = 36,
                       .bias = true,
                       .act = "clip",
                       .act_alpha = -0.75f,
                       .act_beta = 1.25f,
                       .range = 32,
                       .seed = 6};
    check_mm(&p, &o, "matmul + bias clip(-0.75,1.25)");
    p = (struct tu_mm){.rank = 2,
                       .M = 9,
                       .K = 40,
                       .N = 36,
                       .act = "clip",
                       .act_alpha = -0.5f,
                       .act_beta = 2.0f,
                       .range = 32,
                       .seed = 7};
    check_mm(&p, &o, "matmul clip(-0.5,2) no bias");
    p = (struct tu_mm){.rank = 2,
                       .M = 6,
                       .K = 24,
                       .N = 20,
                       .bias = true,
                       .act = "leaky_relu",
                       .act_alpha = 0.125f,
                       .range = 32,
                       .seed = 8};
    /* leaky_relu is split off the matmul (BS PReLU is unverified, facts §5.3) and runs as
     * its own DPU pass (BS MUL + EW MAX, docs/npu-dpu-ops.md): no CPU step */
    {
        struct npu_graph *g1 = tu_matmul_graph(&p), *g2 = tu_matmul_graph(&p);
        float a[6 * 24];
        uint32_t s = 99;
        tu_fill(a, NPU_ARRAY_SIZE(a), &s, 32);
        struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
        in.data = a;
        struct tu_npu_result res;
        CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
        CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, &o, &in, &got, &res));
        CHECK(tu_cmp(&got, &want, 1e-7, ldexp(1, -11), NULL) <= 1);
        CHECK_EQ_INT(0, res.n_cpu);
        free(want.data);
        free(got.data);
    }

    /* Gemm: transB, alpha, beta */
    p = (struct tu_mm){.rank = 2,
                       .M = 10,
                       .K = 48,
                       .N = 24,
                       .bias = true,
                       .gemm = true,
                       .trans_b = true,
                       .alpha = 0.5f,
                       .beta = 2.0f,
                       .range = 32,
                       .seed = 11};
    check_mm(&p, &o, "gemm transB alpha 0.5 beta 2");

    /* tiling: K large enough for channel-block accumulation, M for row tiles,
     * N for kernel tiles */
    p = (struct tu_mm){.rank = 2,
                       .M = 196,
                       .K = 3072,
                       .N = 64,
                       .bias = true,
                       .act = "relu",
                       .range = 8,
                       .seed = 12};
    check_mm(&p, &o, "matmul 196x3072x64 (channel blocks)");
    p = (struct tu_mm){.rank = 2, .M = 1500, .K = 256, .N = 48, .range = 32, .seed = 13};
    check_mm(&p, &o, "matmul 1500x256x48 (row tiles)");
    p = (struct tu_mm){.rank = 2, .M = 600, .K = 512, .N = 1200, .range = 8, .seed = 14};
    check_mm(&p, &o, "matmul 600x512x1200 (rows x kernels)");
    /* fp16 partial sums */
    struct npu_backend_options o16 = {.fp16_partials = 1};
    p = (struct tu_mm){.rank = 2, .M = 196, .K = 2048, .N = 32, .range = 4, .seed = 15};
    check_mm(&p, &o16, "matmul 196x2048x32 fp16 partials");

    /* real-valued data: fp16 rounding of inputs and weights. Each product
     * carries a relative error <= 2^-10, so |err| <= 2^-10 sum|a||b|; with
     * values in [-1, 1] and K terms the typical sum|a||b| is K/4: the bound
     * used is 2e-3 sqrt(K) absolute plus 4e-3 relative (statistical, not worst
     * case; seeds fixed). */
    p = (struct tu_mm){.rank = 2, .M = 33, .K = 300, .N = 70, .bias = true, .seed = 16};
    check_mm(&p, &o, "matmul real-valued 33x300x70");
    p = (struct tu_mm){.rank = 2, .M = 196, .K = 1536, .N = 40, .seed = 17};
    check_mm(&p, &o, "matmul real-valued 196x1536x40 (blocks)");

    return npu_test_done("npu-matmul");
}
