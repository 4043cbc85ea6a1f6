/* SPDX-License-Identifier: MIT */
/*
 * exec_residual_test.c: the CPU executor's residual fusion (compiler/exec/npu-exec.c): a
 * Conv whose only reader is an Add, optionally followed by a Relu, runs as one Conv step
 * with the Add's other operand as its residual. Graphs built in memory with random shapes
 * and weights (ResNet's identity and projection shortcuts, the shortcut conv placed after or
 * before the main branch, a Conv whose output has a second reader, an Add with broadcasting)
 * run with the fusion and without any kernel fusion (NPU_EXEC_NO_KERNEL_FUSION): the outputs
 * must be the same bytes, with 1 and with 3 threads, and where the pattern fuses the plan
 * must hold less activation memory (the Conv's and the Add's own tensors are gone: the main
 * branches narrow to one channel so that the Add is where the unfused plan peaks).
 */
#include <stdlib.h>

#include "npu-test.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"

#include "exec-graph.h"

enum shape {
    IDENTITY,    /* Add(conv(relu(conv(x))), x), Relu */
    PROJ_AFTER,  /* Add(main, conv1x1 s2(x)) with the shortcut conv after the main branch */
    PROJ_BEFORE, /* the shortcut conv before the main branch */
    NO_RELU,     /* Add without a Relu (MobileNetV2's inverted residual) */
    SECOND_USE,  /* the Conv's output is a graph output too: not fused */
    BROADCAST,   /* Add with a [1, M, 1, 1] operand: not fused */
    SMALL,       /* IDENTITY over a plane under 28x28: left unfused by design */
};

static struct npu_graph *
build(enum shape sh, int64_t C, int64_t H, int64_t W)
{
    struct npu_graph *g = npu_graph_new("residual");
    int64_t xd[4] = {2, C, H, W};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 4, xd);
    struct npu_value *y = NULL;
    switch (sh) {
    case IDENTITY:
    case SMALL:
    case NO_RELU:
    case SECOND_USE: {
        struct npu_value *a = conv(g, conv(g, x, 1, 3, 1, 1, true), C, 3, 1, 1, false);
        y = unary(g, NPU_OP_ADD, a, x);
        if (sh != NO_RELU)
            y = unary(g, NPU_OP_RELU, y, NULL);
        if (sh == SECOND_USE)
            npu_graph_add_output(g, a);
        break;
    }
    case PROJ_AFTER:
    case PROJ_BEFORE: {
        struct npu_value *s = sh == PROJ_BEFORE ? conv(g, x, 2 * C, 1, 2, 1, false) : NULL;
        struct npu_value *a = conv(g, conv(g, x, 1, 1, 1, 1, true), 1, 3, 2, 1, true);
        a = conv(g, a, 2 * C, 1, 1, 1, false);
        if (!s)
            s = conv(g, x, 2 * C, 1, 2, 1, false);
        y = unary(g, NPU_OP_RELU, unary(g, NPU_OP_ADD, a, s), NULL);
        break;
    }
    case BROADCAST: {
        int64_t bd[4] = {1, C, 1, 1};
        struct npu_value *a = conv(g, x, C, 3, 1, 1, false);
        y = unary(g, NPU_OP_RELU, unary(g, NPU_OP_ADD, a, const_rand(g, "bc", 4, bd)), NULL);
        break;
    }
    }
    npu_graph_add_output(g, y);
    return g;
}

struct gcase {
    enum shape sh;
    int64_t C, H, W;
};

static struct npu_graph *
build_case(const void *arg)
{
    const struct gcase *c = arg;
    return build(c->sh, c->C, c->H, c->W);
}

int
main(void)
{
    static const struct {
        enum shape sh;
        bool fuses;
    } shapes[] = {{IDENTITY, true},    {PROJ_AFTER, true}, {PROJ_BEFORE, true}, {NO_RELU, true},
                  {SECOND_USE, false}, {BROADCAST, false}, {SMALL, false}};
    for (int rep = 0; rep < 3; rep++)
        for (size_t i = 0; i < NPU_ARRAY_SIZE(shapes); i++) {
            /* random shapes: channels not multiples of 8, planes with odd sides */
            /* (planes of 28x28 and more: smaller ones are left unfused by design) */
            int64_t C = 3 + (int64_t)(rng % 29), H = 28 + (int64_t)((rng >> 5) % 14),
                    W = 29 + (int64_t)((rng >> 10) % 17);
            if (shapes[i].sh == SMALL) {
                H -= 14;
                W -= 16;
            }
            if (shapes[i].sh == PROJ_AFTER || shapes[i].sh == PROJ_BEFORE) {
                H += 28; /* the Add is over the stride-2 plane */
                W += 28;
            }
            rng = rng * 1664525u + 1013904223u;
            const struct gcase gc = {shapes[i].sh, C, H, W};
            char what[96];
            snprintf(what, sizeof(what), "shape %d C%lld %lldx%lld", (int)shapes[i].sh,
                     (long long)C, (long long)H, (long long)W);
            size_t b_ref = 0, b_got = 0;
            exec_fused_vs_unfused(build_case, &gc, shapes[i].sh == SECOND_USE ? 2 : 1, 2, C, H, W,
                                  what, &b_ref, &b_got);
            if (shapes[i].fuses)
                CHECK(b_got < b_ref);
            printf("shape %d C%-3lld %3lldx%-3lld activations %zu B fused, %zu B unfused\n",
                   (int)shapes[i].sh, (long long)C, (long long)H, (long long)W, b_got, b_ref);
        }
    return npu_test_done("exec_residual_test");
}
