/* SPDX-License-Identifier: MIT */
/*
 * test-npu-tiling.c: every tiling the planner can produce, forced on small
 * shapes (npu_backend_options.force_*), against the CPU executor on the
 * strict simulator: row tiles (with the kernel's row overlap and padding at
 * the edges), kernel tiles with the input resident (DATA_REUSE) or with the
 * weights resident across row tiles (WEIGHT_REUSE), input-channel blocks
 * accumulated through the DPU in both loop orders, all three at once,
 * depthwise channel tiles, and the int8 pipeline's int32 partial sums. The
 * test also checks that the reuse flags it exercises are really set.
 * Tolerance: exact fp16 data, relative 2^-11 (test-npu-matmul.c).
 */
#include "npu-test-util.h"

static int verbose;

/* Counts tiles and reuse flags of the rk.Conv after lowering. */
static void
tile_stats(struct npu_graph *g, const struct npu_backend_options *o, int *tasks, int *wre, int *dre,
           int *acc)
{
    *tasks = *wre = *dre = *acc = 0;
    if (npu_lower_graph(g, o))
        return;
    npu_graph_for_each_node (g, n) {
        if (n->op != NPU_OP_RK_CONV)
            continue;
        size_t c;
        const int64_t *t = npu_node_ints(n, "tiles", &c);
        for (size_t i = 0; i < c; i += 11) {
            (*tasks)++;
            *wre += (t[i + 7] & 1) != 0;
            *dre += (t[i + 7] & 2) != 0;
            *acc += t[i + 9] >= 0;
        }
    }
}

static void
run_conv(const struct tu_conv *p, const struct npu_backend_options *o, const char *label,
         int want_wre, int want_dre, int want_acc)
{
    struct npu_graph *g0 = tu_conv_graph(p), *g1 = tu_conv_graph(p), *g2 = tu_conv_graph(p);
    int tasks, wre, dre, acc;
    tile_stats(g0, o, &tasks, &wre, &dre, &acc);
    npu_graph_free(g0);
    size_t n = (size_t)p->C * p->H * p->W;
    float *x = malloc(n * 4);
    uint32_t s = p->seed + 3;
    tu_fill(x, n, &s, p->range);
    struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
    in.data = x;
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
    CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, o, &in, &got, &res));
    double e = tu_cmp(&got, &want, 1e-7, ldexp(1, -11), NULL);
    CHECK(e <= 1);
    if (want_wre)
        CHECK(wre > 0);
    if (want_dre)
        CHECK(dre > 0);
    if (want_acc)
        CHECK(acc > 0);
    if (verbose || e > 1)
        printf("%-48s tasks %3d  WEIGHT_REUSE %2d  DATA_REUSE %2d  accumulating %2d  err %.2f\n",
               label, tasks, wre, dre, acc, e);
    free(x);
    free(want.data);
    free(got.data);
}

int
main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    struct tu_conv c = {.C = 96,
                        .H = 24,
                        .W = 24,
                        .K = 80,
                        .kh = 3,
                        .kw = 3,
                        .pt = 1,
                        .pl = 1,
                        .pb = 1,
                        .pr = 1,
                        .bias = true,
                        .act = "relu",
                        .range = 8,
                        .seed = 1};
    struct npu_backend_options o;

    o = (struct npu_backend_options){.force_rows = 5};
    run_conv(&c, &o, "rows of 5 (edges padded)", 0, 0, 0);
    o = (struct npu_backend_options){.force_rows = 7, .force_order = 2};
    run_conv(&c, &o, "rows of 7, kernels outside", 1, 0, 0);
    o = (struct npu_backend_options){.force_kernels = 32, .force_order = 1};
    run_conv(&c, &o, "kernels of 32, input resident", 0, 1, 0);
    o = (struct npu_backend_options){.force_kernels = 32, .force_rows = 6, .force_order = 2};
    run_conv(&c, &o, "kernels of 32 x rows of 6, weights resident", 1, 0, 0);
    o = (struct npu_backend_options){.force_kernels = 16, .force_rows = 6, .force_order = 1};
    run_conv(&c, &o, "rows of 6 x kernels of 16, input resident", 0, 1, 0);
    o = (struct npu_backend_options){.force_channels = 32};
    run_conv(&c, &o, "channel blocks of 32 (fp32 partials)", 0, 0, 1);
    o = (struct npu_backend_options){
        .force_channels = 32, .force_rows = 7, .force_kernels = 32, .force_order = 1};
    run_conv(&c, &o, "blocks x rows x kernels, rows outside", 0, 0, 1);
    o = (struct npu_backend_options){
        .force_channels = 64, .force_rows = 7, .force_kernels = 48, .force_order = 2};
    run_conv(&c, &o, "blocks x rows x kernels, kernels outside", 1, 0, 1);
    o = (struct npu_backend_options){.force_channels = 32, .fp16_partials = 1};
    c.range = 4;
    run_conv(&c, &o, "channel blocks, fp16 partials", 0, 0, 1);
    c.range = 8;
    /* clip(0, hi) after an accumulating add (EW ReLU-X) */
    c.act = "clip";
    c.act_alpha = 0;
    c.act_beta = 2;
    o = (struct npu_backend_options){.force_channels = 32, .force_rows = 12};
    run_conv(&c, &o, "channel blocks + clip(0,2) in the EW stage", 0, 0, 1);
    /* stride 2 with row tiles */
    struct tu_conv c2 = {.C = 40,
                         .H = 31,
                         .W = 29,
                         .K = 48,
                         .kh = 5,
                         .kw = 5,
                         .sy = 2,
                         .sx = 2,
                         .pt = 2,
                         .pl = 2,
                         .pb = 2,
                         .pr = 2,
                         .range = 8,
                         .seed = 2};
    o = (struct npu_backend_options){.force_rows = 3};
    run_conv(&c2, &o, "5x5/2 rows of 3", 0, 0, 0);
    o = (struct npu_backend_options){
        .force_rows = 4, .force_channels = 32, .force_kernels = 16, .force_order = 2};
    run_conv(&c2, &o, "5x5/2 rows x kernels x blocks", 1, 0, 1);
    /* depthwise channel tiles x rows */
    struct tu_conv dw = {.C = 96,
                         .H = 20,
                         .W = 22,
                         .K = 96,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .group = 96,
                         .bias = true,
                         .range = 8,
                         .seed = 3};
    o = (struct npu_backend_options){.force_kernels = 32, .force_rows = 6, .force_order = 1};
    run_conv(&dw, &o, "depthwise tiles of 32 x rows of 6", 0, 0, 0);
    o = (struct npu_backend_options){.force_kernels = 32, .force_rows = 6, .force_order = 2};
    run_conv(&dw, &o, "depthwise rows inside channel tiles", 1, 0, 0);
    /* matmul: blocks and kernels */
    struct tu_mm m = {.rank = 2, .M = 100, .K = 200, .N = 70, .bias = true, .range = 8, .seed = 4};
    {
        struct npu_graph *g1 = tu_matmul_graph(&m), *g2 = tu_matmul_graph(&m);
        float a[100 * 200];
        uint32_t s = 9;
        tu_fill(a, NPU_ARRAY_SIZE(a), &s, 8);
        struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
        in.data = a;
        o = (struct npu_backend_options){
            .force_channels = 64, .force_kernels = 32, .force_rows = 30};
        CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
        CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, &o, &in, &got, NULL));
        CHECK(tu_cmp(&got, &want, 1e-7, ldexp(1, -11), NULL) <= 1);
        free(want.data);
        free(got.data);
    }
    return npu_test_done("npu-tiling");
}
