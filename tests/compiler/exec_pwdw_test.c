/* SPDX-License-Identifier: MIT */
/*
 * exec_pwdw_test.c: the CPU executor's 1x1 -> depthwise pairs (compiler/exec/npu-exec.c,
 * npu_cpu_run_pw_dw): a 1x1 Conv whose only reader is a depthwise Conv runs as one banded
 * step. Graphs built in memory with random channel counts and odd planes (MobileNetV2's
 * inverted residual block: expand 1x1 + relu, depthwise 3x3 stride 1 or 2 + relu, project
 * 1x1; a 5x5 depthwise; the expanded tensor also a graph output; a plane under 28x28) run
 * with the fusion and without any kernel fusion (NPU_EXEC_NO_KERNEL_FUSION): the outputs must
 * be the same bytes, with 1 and with 3 threads, and where the pair fuses the plan must hold
 * less activation memory (the expanded tensor is never allocated).
 */
#include <stdlib.h>

#include "npu-test.h"
#include "npu/npu-cpu.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"

#include "exec-graph.h"

enum shape {
    BLOCK_S1,   /* expand, depthwise 3x3 stride 1, project, Add (the residual) */
    BLOCK_S2,   /* expand, depthwise 3x3 stride 2, project */
    DW5,        /* expand, depthwise 5x5 stride 2 */
    SECOND_USE, /* the expanded tensor is a graph output too: not fused */
    SMALL,      /* a plane under 28x28: left unfused by design */
};

static struct npu_graph *
build(enum shape sh, int64_t C, int64_t E, int64_t H, int64_t W)
{
    struct npu_graph *g = npu_graph_new("pwdw");
    int64_t xd[4] = {2, C, H, W};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 4, xd);
    struct npu_value *e = conv(g, x, E, 1, 1, 1, true);
    /* the depthwise Conv: group = channels, ReLU */
    struct npu_value *d =
        conv(g, e, E, sh == DW5 ? 5 : 3, sh == BLOCK_S1 || sh == SMALL ? 1 : 2, E, true);
    struct npu_value *y = conv(g, d, C, 1, 1, 1, false);
    if (sh == BLOCK_S1 || sh == SMALL)
        y = unary(g, NPU_OP_ADD, y, x);
    if (sh == SECOND_USE)
        npu_graph_add_output(g, e);
    npu_graph_add_output(g, y);
    return g;
}

struct gcase {
    enum shape sh;
    int64_t C, E, H, W;
};

static struct npu_graph *
build_case(const void *arg)
{
    const struct gcase *c = arg;
    return build(c->sh, c->C, c->E, c->H, c->W);
}

int
main(void)
{
    /* the band form needs AVX2+FMA or AVX-512 (x86-64); elsewhere nothing fuses and only the
     * bytes are compared */
    const struct npu_attrs none = {NULL, 0};
    int64_t xd[4] = {1, 16, 28, 28}, w1d[4] = {32, 16, 1, 1}, w2d[4] = {32, 1, 3, 3};
    struct npu_tensor tx = {.dtype = NPU_DTYPE_FP32, .ndim = 4},
                      tw1 = {.dtype = NPU_DTYPE_FP32, .ndim = 4},
                      tw2 = {.dtype = NPU_DTYPE_FP32, .ndim = 4};
    memcpy(tx.dims, xd, sizeof(xd));
    memcpy(tw1.dims, w1d, sizeof(w1d));
    memcpy(tw2.dims, w2d, sizeof(w2d));
    struct npu_attr ga = {"group", NPU_ATTR_INT, .i = 32};
    const struct npu_attrs dwa = {&ga, 1};
    const bool can = npu_cpu_pw_dw_wanted(&none, &tx, &tw1, &dwa, &tw2);
    if (!can)
        fprintf(stderr, "exec_pwdw_test: no band form on this CPU: bytes compared only\n");
    static const struct {
        enum shape sh;
        bool fuses;
    } shapes[] = {
        {BLOCK_S1, true}, {BLOCK_S2, true}, {DW5, true}, {SECOND_USE, false}, {SMALL, false}};
    for (int rep = 0; rep < 2; rep++)
        for (size_t i = 0; i < NPU_ARRAY_SIZE(shapes); i++) {
            /* channels: 8-31 in, 8-55 more expanded (so that the expanded tensor is where the
             * unfused plan peaks); planes 28-45 x 29-49 */
            int64_t C = 8 + (int64_t)(rng % 24), E = C + 8 + (int64_t)((rng >> 5) % 48),
                    H = 28 + (int64_t)((rng >> 11) % 18), W = 29 + (int64_t)((rng >> 17) % 21);
            if (shapes[i].sh == SMALL) {
                H = 14;
                W = 13;
            }
            rng = rng * 1664525u + 1013904223u;
            const struct gcase gc = {shapes[i].sh, C, E, H, W};
            char what[96];
            snprintf(what, sizeof(what), "shape %d C%lld E%lld %lldx%lld", (int)shapes[i].sh,
                     (long long)C, (long long)E, (long long)H, (long long)W);
            size_t b_ref = 0, b_got = 0;
            exec_fused_vs_unfused(build_case, &gc, shapes[i].sh == SECOND_USE ? 2 : 1, 2, C, H, W,
                                  what, &b_ref, &b_got);
            if (shapes[i].fuses && can)
                CHECK(b_got < b_ref);
            if (!shapes[i].fuses)
                CHECK(b_got == b_ref);
            printf("shape %d C%-3lld E%-3lld %3lldx%-3lld activations %zu B fused, %zu B unfused\n",
                   (int)shapes[i].sh, (long long)C, (long long)E, (long long)H, (long long)W, b_got,
                   b_ref);
        }
    return npu_test_done("exec_pwdw_test");
}
