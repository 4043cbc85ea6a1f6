/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-pwdw.c: an fp32 1x1 Conv (the "expand" of an inverted-residual block) and the
 * depthwise Conv that is its only reader, run as one step band by band: each task computes
 * the expanded rows one band of depthwise output rows reads, for a block of 16 channels,
 * into its own scratch (in L2), and the depthwise rows from there. The expanded tensor is
 * never written whole: on MobileNetV2's 112x112 and 56x56 planes it is 1.8-4.8 MB, more than
 * L2, and the unfused pair writes it out and reads it back.
 *
 * Every output is the same sum as in the unfused pair: the expand's outputs are the direct
 * path's FMA chains (cpu_cd_pw_rows, usable only on the shapes where the unfused 1x1 takes
 * that form), the depthwise ones dw_plane's over the band's rows; rows a band shares with the
 * next are computed twice with the same bits. So the result is bit-identical to the two
 * Convs run one after the other, and does not depend on the thread count.
 */
#include "npu-cpu-conv-direct.h"
#include "npu-cpu-dwconv.h"
#include "npu-cpu-internal.h"

#define PWDW_CB 16 /* expanded channels per task (a multiple of the direct path's 8) */

struct pwdw_geo {
    int64_t N, C, E, H, W, OH, OW;
    struct cpu_win dw;
    struct cpu_act_spec a1, a2;
    const float *b1, *b2;
};

/* Shapes and operands: X [N, C, H, W], W1 [E, C, 1, 1] (1x1, stride 1, unpadded, one group),
 * B1 [E] or NULL, W2 [E, 1, KH, KW] (group E), B2 [E] or NULL, Y [N, E, OH, OW]; all fp32. */
static enum npu_status
pwdw_setup(struct npu_cpu_ctx *ctx, const struct npu_attrs *pw_attrs, const struct npu_tensor *x,
           const struct npu_tensor *w1, const struct npu_tensor *b1,
           const struct npu_attrs *dw_attrs, const struct npu_tensor *w2,
           const struct npu_tensor *b2, const struct npu_tensor *y, struct pwdw_geo *g)
{
    if (!x || !w1 || !w2 || x->dtype != NPU_DTYPE_FP32 || w1->dtype != NPU_DTYPE_FP32 ||
        w2->dtype != NPU_DTYPE_FP32 || x->ndim != 4 || w1->ndim != 4 || w2->ndim != 4 || !x->data ||
        !w1->data || !w2->data)
        return KINVAL("1x1 + depthwise: X, W1 and W2 must be fp32 4-D tensors");
    *g = (struct pwdw_geo){
        .N = x->dims[0], .C = x->dims[1], .E = w1->dims[0], .H = x->dims[2], .W = x->dims[3]};
    if (w1->dims[1] != g->C || w1->dims[2] != 1 || w1->dims[3] != 1 ||
        npu_attrs_int(pw_attrs, "group", 1) != 1)
        return KINVAL("1x1 + depthwise: W1 must be [E, %lld, 1, 1] with one group",
                      (long long)g->C);
    struct cpu_win w;
    CPU_TRY(cpu_win_setup(ctx, pw_attrs, 2, x->dims + 2, w1->dims + 2, false, &w));
    for (int i = 0; i < 2; i++)
        if (w.s[i] != 1 || w.d[i] != 1 || w.pb[i] || w.pe[i])
            return KINVAL("1x1 + depthwise: the 1x1 conv must have stride 1 and no padding");
    if (w2->dims[0] != g->E || w2->dims[1] != 1 || npu_attrs_int(dw_attrs, "group", 1) != g->E)
        return KINVAL("1x1 + depthwise: W2 must be [%lld, 1, KH, KW] with %lld groups",
                      (long long)g->E, (long long)g->E);
    CPU_TRY(cpu_win_setup(ctx, dw_attrs, 2, x->dims + 2, w2->dims + 2, false, &g->dw));
    g->OH = g->dw.out[0];
    g->OW = g->dw.out[1];
    int64_t od[4] = {g->N, g->E, g->OH, g->OW};
    CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_FP32, 4, od));
    const struct npu_tensor *bs[2] = {b1, b2};
    for (int i = 0; i < 2; i++) {
        const struct npu_tensor *b = bs[i];
        if (b && !cpu_absent(b) &&
            (b->dtype != NPU_DTYPE_FP32 || b->ndim != 1 || b->dims[0] != g->E || !b->data))
            return KINVAL("1x1 + depthwise: B%d must be fp32 [%lld]", i + 1, (long long)g->E);
    }
    g->b1 = b1 && !cpu_absent(b1) ? b1->data : NULL;
    g->b2 = b2 && !cpu_absent(b2) ? b2->data : NULL;
    CPU_TRY(cpu_act_parse(ctx, pw_attrs, &g->a1));
    CPU_TRY(cpu_act_parse(ctx, dw_attrs, &g->a2));
    return NPU_OK;
}

/* The band form applies: the unfused 1x1 would run the direct path's flat form in place and
 * the depthwise the AVX-512/AVX2 fast path, and the plane is large enough to gain (planes of
 * 28x28 and up: on 14x14 the expanded tensor of MobileNetV2 is 0.4-0.5 MB and stays in L2). */
static bool
pwdw_usable(const struct pwdw_geo *g)
{
    const struct cpu_win *w = &g->dw;
    if (g->N < 1 || g->C < 1 || g->E < 1 || g->H * g->W < 28 * 28 || g->OH < 1 || g->OW < 1)
        return false;
    /* every band reads at least one row of the image */
    if (w->pb[0] >= w->k[0] || w->pb[0] < 0 || w->pe[0] >= w->k[0] || w->d[0] != 1)
        return false;
    struct cpu_win unit = {.nsp = 2};
    for (int i = 0; i < 2; i++) {
        unit.in[i] = unit.out[i] = i ? g->W : g->H;
        unit.k[i] = unit.s[i] = unit.d[i] = 1;
    }
    return cpu_conv_direct_wanted(&unit, g->C, g->E, 1) &&
           cpu_cd_pw_usable(g->H * g->W, g->C, g->E) && cpu_dw_band_usable(w);
}

static bool pwdw_off;
static pthread_once_t pwdw_once = PTHREAD_ONCE_INIT;

static void
pwdw_env(void)
{
    const char *e = getenv("NPU_CPU_PWDW"); /* 0: never (for measurements and the tests) */
    pwdw_off = e && !strcmp(e, "0");
}

bool
npu_cpu_pw_dw_wanted(const struct npu_attrs *pw_attrs, const struct npu_tensor *x,
                     const struct npu_tensor *pw_w, const struct npu_attrs *dw_attrs,
                     const struct npu_tensor *dw_w)
{
    pthread_once(&pwdw_once, pwdw_env);
    if (pwdw_off || !x || !pw_w || !dw_w || x->ndim != 4 || pw_w->ndim != 4 || dw_w->ndim != 4 ||
        x->dtype != NPU_DTYPE_FP32 || pw_w->dtype != NPU_DTYPE_FP32 ||
        dw_w->dtype != NPU_DTYPE_FP32 || pw_w->dims[1] != x->dims[1] || pw_w->dims[2] != 1 ||
        pw_w->dims[3] != 1 || dw_w->dims[0] != pw_w->dims[0] || dw_w->dims[1] != 1 ||
        npu_attrs_int(pw_attrs, "group", 1) != 1 ||
        npu_attrs_int(dw_attrs, "group", 1) != pw_w->dims[0])
        return false;
    struct pwdw_geo g = {
        .N = x->dims[0], .C = x->dims[1], .E = pw_w->dims[0], .H = x->dims[2], .W = x->dims[3]};
    struct cpu_win w;
    if (cpu_win_setup(NULL, pw_attrs, 2, x->dims + 2, pw_w->dims + 2, false, &w) ||
        cpu_win_setup(NULL, dw_attrs, 2, x->dims + 2, dw_w->dims + 2, false, &g.dw))
        return false;
    for (int i = 0; i < 2; i++)
        if (w.s[i] != 1 || w.d[i] != 1 || w.pb[i] || w.pe[i])
            return false;
    g.OH = g.dw.out[0];
    g.OW = g.dw.out[1];
    return pwdw_usable(&g);
}

struct pwdw_job {
    const struct pwdw_geo *g;
    const float *x, *wp, *w2;
    float *y;
    int64_t ob, nbands, ncb;
    struct npu_cpu_ctx *ctx;
};

static void
pwdw_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct pwdw_job *j = arg;
    const struct pwdw_geo *g = j->g;
    const struct cpu_win *w = &g->dw;
    const int64_t H = g->H, W = g->W, s0 = w->s[0], KH = w->k[0], kp = w->k[0] * w->k[1];
    float *scr = cpu_scratch(j->ctx, tid);
    float *pwscr = scr;
    float *t = scr + NPU_ALIGN(cpu_cd_pw_scratch(g->C), (size_t)16);
    for (int64_t task = begin; task < end; task++) {
        int64_t n = task / (j->nbands * j->ncb), r = task % (j->nbands * j->ncb);
        int64_t band = r / j->ncb, cb = r % j->ncb;
        int64_t oh0 = band * j->ob, oh1 = NPU_MIN(g->OH, oh0 + j->ob);
        int64_t h0 = NPU_MAX((int64_t)0, oh0 * s0 - w->pb[0]);
        int64_t h1 = NPU_MIN(H, (oh1 - 1) * s0 - w->pb[0] + KH);
        int64_t rows = h1 - h0;
        int64_t e0 = cb * PWDW_CB, e1 = NPU_MIN(g->E, e0 + PWDW_CB);
        const float *x = j->x + n * g->C * H * W;
        cpu_cd_pw_rows(j->wp, g->C, g->E, x, H * W, h0 * W, rows * W, e0, e1, g->b1, &g->a1, t,
                       rows * W, pwscr);
        float *y = j->y + n * g->E * g->OH * g->OW;
        for (int64_t e = e0; e < e1; e++)
            cpu_dw_band(w, t + (e - e0) * rows * W, h0, rows, oh0, oh1, j->w2 + e * kp,
                        g->b2 ? g->b2[e] : 0.0f, &g->a2, y + e * g->OH * g->OW);
    }
}

/* The pair one after the other (a shape or CPU the band form does not take): the expanded
 * tensor in a temporary. */
static enum npu_status
pwdw_unfused(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *pw_prep,
             const struct npu_attrs *pw_attrs, const struct npu_tensor *x,
             const struct npu_tensor *w1, const struct npu_tensor *b1,
             const struct npu_attrs *dw_attrs, const struct npu_tensor *w2,
             const struct npu_tensor *b2, struct npu_tensor *y, const struct pwdw_geo *g)
{
    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {g->N, g->E, g->H, g->W}};
    if (g->N * g->E * g->H * g->W > INT64_MAX / 8)
        return KINVAL("1x1 + depthwise: the expanded tensor is too large");
    t.data = malloc(sizeof(float) * (size_t)NPU_MAX(g->N * g->E * g->H * g->W, (int64_t)1));
    if (!t.data)
        return KNOMEM();
    const struct npu_tensor *in1[3] = {x, w1, b1}, *in2[3] = {&t, w2, b2};
    struct npu_tensor *o1[1] = {&t}, *o2[1] = {y};
    ctx->prep = pw_prep && pw_prep->op == NPU_OP_CONV ? pw_prep : NULL;
    enum npu_status st = cpu_k_conv(ctx, pw_attrs, in1, b1 ? 3 : 2, o1, 1);
    ctx->prep = NULL;
    if (st == NPU_OK)
        st = cpu_k_conv(ctx, dw_attrs, in2, b2 ? 3 : 2, o2, 1);
    free(t.data);
    return st;
}

static enum npu_status
pwdw_run(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *pw_prep,
         const struct npu_attrs *pw_attrs, const struct npu_tensor *x, const struct npu_tensor *w1,
         const struct npu_tensor *b1, const struct npu_attrs *dw_attrs, const struct npu_tensor *w2,
         const struct npu_tensor *b2, struct npu_tensor *y, struct cpu_win *win)
{
    struct pwdw_geo g;
    CPU_TRY(pwdw_setup(ctx, pw_attrs, x, w1, b1, dw_attrs, w2, b2, y, &g));
    *win = g.dw;
    if (cpu_numel(y) == 0)
        return NPU_OK;
    pthread_once(&pwdw_once, pwdw_env);
    if (pwdw_off || !pwdw_usable(&g))
        return pwdw_unfused(ctx, pw_prep, pw_attrs, x, w1, b1, dw_attrs, w2, b2, y, &g);
    float *own = NULL;
    const float *wp = cpu_cd_pw_pack(pw_prep, w1->data, g.E, g.C, &own);
    if (!wp)
        return KNOMEM();
    /* a band: the expanded rows of PWDW_CB channels within about 256 KB (L2 is 1 MB or more on
     * the CPUs with AVX-512; the band's rows of X are read from it once per channel block),
     * and at least 8 tasks per image so that two threads share the work evenly */
    const struct cpu_win *w = &g.dw;
    const int64_t s0 = w->s[0], KH = w->k[0];
    int64_t rmax = (INT64_C(256) << 10) / (int64_t)(sizeof(float) * PWDW_CB * g.W);
    int64_t ob = rmax >= KH ? (rmax - KH) / s0 + 1 : 1;
    ob = NPU_MAX((int64_t)4, NPU_MIN(ob, g.OH));
    int64_t ncb = NPU_DIV_ROUND_UP(g.E, (int64_t)PWDW_CB);
    while (ob > 4 && ncb * NPU_DIV_ROUND_UP(g.OH, ob) < 8)
        ob = NPU_DIV_ROUND_UP(ob, 2);
    /* the pool's pixel-range split (cpu_parallel_for_px) starts each thread on its own band
     * only with a band per thread or more; the 1x1 that reads Y next is cut by pixel ranges
     * too (the band cut does not change the result). Not below 16 rows a band: on 28x28
     * planes the extra rows and smaller tasks cost more (measured, MobileNetV2) */
    while (ctx->affine_mode && NPU_DIV_ROUND_UP(ob, 2) >= 16 &&
           NPU_DIV_ROUND_UP(g.OH, ob) < ctx->nthreads)
        ob = NPU_DIV_ROUND_UP(ob, 2);
    /* bands of even height (56 rows: 14 x 4, not 17 x 3 + 5), so that the threads' parts
     * are even too */
    if (ctx->affine_mode)
        ob = NPU_DIV_ROUND_UP(g.OH, NPU_DIV_ROUND_UP(g.OH, ob));
    struct pwdw_job j = {.g = &g,
                         .x = x->data,
                         .wp = wp,
                         .w2 = w2->data,
                         .y = y->data,
                         .ob = ob,
                         .nbands = NPU_DIV_ROUND_UP(g.OH, ob),
                         .ncb = ncb,
                         .ctx = ctx};
    int64_t rows = NPU_MIN(g.H, (ob - 1) * s0 + KH);
    size_t floats =
        NPU_ALIGN(cpu_cd_pw_scratch(g.C), (size_t)16) + (size_t)(PWDW_CB * rows * g.W) + 16;
    enum npu_status st = cpu_scratch_reserve(ctx, sizeof(float) * floats);
    if (st == NPU_OK)
        cpu_parallel_for_px(ctx, g.N * j.nbands * j.ncb, 1, pwdw_task, &j);
    free(own);
    return st;
}

enum npu_status
npu_cpu_run_pw_dw(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *pw_prep,
                  const struct npu_attrs *pw_attrs, const struct npu_tensor *x,
                  const struct npu_tensor *pw_w, const struct npu_tensor *pw_b,
                  const struct npu_attrs *dw_attrs, const struct npu_tensor *dw_w,
                  const struct npu_tensor *dw_b, struct npu_tensor *y)
{
    if (!ctx) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_run_pw_dw: no context");
        return NPU_ERR_INVALID;
    }
    if (!pw_attrs || !dw_attrs || !y) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_run_pw_dw: missing attributes or output");
        return NPU_ERR_INVALID;
    }
    pthread_mutex_lock(&ctx->run_lock);
    ctx->cur_op = NPU_OP_CONV;
    double t0 = ctx->prof ? cpu_now() : 0;
    struct cpu_win win = {0};
    enum npu_status st =
        pwdw_run(ctx, pw_prep, pw_attrs, x, pw_w, pw_b, dw_attrs, dw_w, dw_b, y, &win);
    if (ctx->prof && st == NPU_OK) {
        double s = cpu_now() - t0;
        int64_t kp = dw_w->dims[2] * dw_w->dims[3];
        double flop = 2.0 * (double)x->dims[0] * (double)pw_w->dims[0] *
                      ((double)x->dims[1] * (double)x->dims[2] * (double)x->dims[3] +
                       (double)kp * (double)y->dims[2] * (double)y->dims[3]);
        ctx->prof_s[NPU_OP_CONV] += s;
        ctx->prof_n[NPU_OP_CONV]++;
        ctx->prof_conv_s[5] += s;
        ctx->prof_conv_n[5]++;
        ctx->prof_conv_flop[5] += flop;
        /* the layer table's row: the 1x1's C, the depthwise's window */
        if (win.nsp == 2)
            cpu_conv_prof_layer(ctx, 5, x->dims[1], pw_w->dims[0], pw_w->dims[0], &win, s, flop);
    }
    ctx->cur_op = NPU_OP_NONE;
    pthread_mutex_unlock(&ctx->run_lock);
    return st;
}
