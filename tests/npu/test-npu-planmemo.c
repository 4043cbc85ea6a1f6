/* SPDX-License-Identifier: MIT */
/*
 * test-npu-planmemo.c: the conv/matmul tiler remembers recent plans (conv_plan_conv1's memo,
 * compiler/backend/conv-tiling.c). Every plan it returns must be the search's own
 * (conv_plan_search): the same tiles, figures and answer, for geometries asked once, again
 * (from the memo), after enough others to evict them, with other forced tilings and task
 * limits, groups, one_set, and under timing model v2 (the memo's key holds the model's
 * figures; v2 prices these tiles as v1 does today, so that part cannot fail yet).
 * Geometries: SigLIP-B/16's matmuls as 1x1 convs (196 tokens), a 3x3 conv, a depthwise
 * conv, a conv too big for the task limit (refused).
 */
#include "conv-priv.h"
#include "npu-test-util.h"
#include "npu/npu-timing.h"

static struct rk_conv_geom
geom(uint32_t c, uint32_t h, uint32_t w, uint32_t k, uint32_t kh, bool dw)
{
    struct rk_conv_geom g;
    memset(&g, 0, sizeof(g));
    g.c = c;
    g.h = h;
    g.w = w;
    g.k = k;
    g.kh = g.kw = kh;
    g.sy = g.sx = g.dy = g.dx = 1;
    g.pt = g.pl = kh / 2;
    g.oh = h;
    g.ow = w;
    g.depthwise = dw;
    g.in_dt = NPU_DTYPE_FP16;
    g.out_dt = NPU_DTYPE_FP16;
    g.part_dt = NPU_DTYPE_FP32;
    g.bias = true;
    return g;
}

static bool
same_plan(const struct plan *a, const struct plan *b)
{
    return a->n == b->n && a->parts == b->parts &&
           !memcmp(&a->seconds, &b->seconds, sizeof(double)) && a->dma_bytes == b->dma_bytes &&
           a->macs == b->macs && (!a->n || !memcmp(a->t, b->t, (size_t)a->n * sizeof(*a->t)));
}

/* conv_plan_conv1 against conv_plan_search for one question; 1 when they differ */
static int
ask(const struct rk_conv_geom *g, uint32_t groups, const struct npu_backend_options *o,
    bool one_set, int *n_ok)
{
    struct plan got, want;
    bool gok = conv_plan_conv1(g, groups, o, one_set, &got);
    bool wok = conv_plan_search(g, groups, o, one_set, &want);
    int bad = gok != wok || !same_plan(&got, &want);
    *n_ok += gok;
    conv_plan_free(&got);
    conv_plan_free(&want);
    return bad;
}

int
main(void)
{
    struct rk_conv_geom gs[24];
    int ng = 0;
    gs[ng++] = geom(768, 1, 196, 768, 1, false);  /* q, k, v, out projections */
    gs[ng++] = geom(768, 1, 196, 3072, 1, false); /* fc1 */
    gs[ng++] = geom(3072, 1, 196, 768, 1, false); /* fc2 */
    gs[ng++] = geom(64, 28, 28, 64, 3, false);
    gs[ng++] = geom(96, 40, 40, 96, 3, true);
    gs[ng++] = geom(4096, 256, 256, 4096, 3, false); /* too many tasks */
    for (uint32_t i = 0; ng < (int)NPU_ARRAY_SIZE(gs); i++)
        gs[ng++] =
            geom(32 + 32 * (i % 7), 8 + i, 16 + 2 * i, 16 + 16 * (i % 5), 1 + 2 * (i % 2), false);
    struct npu_backend_options o0 = {0}, forced = {0}, limited = {0}, rknn = {0};
    forced.force_rows = 4;
    forced.force_kernels = 32;
    forced.force_order = 2;
    limited.max_tasks = 8;
    rknn.rknn_tiling = 1;
    const struct npu_backend_options *os[4] = {&o0, &forced, &limited, &rknn};
    int bad = 0, n_ok = 0, asked = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) /* other prices: plans remembered under v1 must not be returned */
            CHECK_EQ_INT(NPU_OK, npu_timing_model_select("v2"));
        for (int rep = 0; rep < 3; rep++)
            for (int i = 0; i < ng; i++)
                for (int k = 0; k < 4; k++) {
                    bad += ask(&gs[i], 1, os[k], false, &n_ok);
                    bad += ask(&gs[i], 1, os[k], true, &n_ok);
                    asked += 2;
                }
        bad += ask(&gs[3], 2, &o0, false, &n_ok); /* grouped */
        bad += ask(&gs[0], 1, &o0, false, &n_ok); /* right after */
        asked += 2;
    }
    printf("  %d questions (%d planned), %d answered differently from the search\n", asked, n_ok,
           bad);
    CHECK_EQ_INT(0, bad);
    CHECK(n_ok > asked / 2 && n_ok < asked); /* both plans and refusals were asked */
    return npu_test_done("npu-planmemo");
}
