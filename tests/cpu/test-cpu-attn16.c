/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-attn16.c: the decode attention over an fp16 NC1HWC2 KV cache read in place
 * (core/cpu/npu-cpu-attn16.c) against a double loop and against the CPU executor's own
 * op sequence for the decode graph's attention (Transpose, MatMul, Mul, Add, Softmax,
 * MatMul on fp32 [kv_heads, slots, head_dim], what the GPT-2 decode step runs on the
 * CPU today), on the GPT-2 small shape, the LLaMA test checkpoint's (GQA), the
 * smallest head and an odd number of slots; the surfaces padded with NaN so that a
 * read outside the rows shows; head ranges; refusals. The slots the mask switches off at the
 * end of a row are skipped: the same bits as with those slots kept at a mask of -9999 (read,
 * weight 0 in fp32), NaN and huge values written into them change nothing, and
 * npu_cpu_attn16_read_slots follows the row's valid length.
 *
 * --bench: CPU time (this thread's) of one layer's attention, GPT-2 small shape (12
 * heads, 160 slots, hd 64), three ways: the executor's fp32 ops on host arrays (today),
 * this kernel on the fp16 cache in place, and the widening of K and V from the NPU
 * layout to fp32 host arrays that a conversion step would do per step instead.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu-test-util.h"
#include "npu-test.h"
#include "npu/npu-fp16.h"

#define MASK_OFF (-10000.0f)

struct case_data {
    struct npu_attn16_shape sh;
    int64_t pad;               /* extra elements per surface */
    float *q, *mask, *kf, *vf; /* kf, vf: fp32 [KVH, T, hd], values fp16-exact */
    uint16_t *k16, *v16;       /* NC1HWC2 */
    int64_t surf;
};

static void
pack(const float *src, uint16_t *dst, int64_t rows, int64_t hd, int64_t surf)
{
    for (int64_t i = 0; i < (hd / 8) * surf; i++)
        dst[i] = 0x7e00; /* NaN: padding the kernel must not read */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t d = 0; d < hd; d++)
            dst[(d / 8) * surf + r * 8 + d % 8] = npu_fp32_to_fp16(src[r * hd + d]);
}

static struct case_data
make(int64_t KVH, int64_t G, int64_t T, int64_t hd, int64_t len, int64_t pad)
{
    struct case_data c = {.sh = {KVH, G, T, hd, 1.0f / sqrtf((float)hd)}, .pad = pad};
    c.surf = KVH * T * 8 + pad;
    c.q = malloc(sizeof(float) * (size_t)(KVH * G * hd));
    c.mask = malloc(sizeof(float) * (size_t)(G * T));
    c.kf = malloc(sizeof(float) * (size_t)(KVH * T * hd));
    c.vf = malloc(sizeof(float) * (size_t)(KVH * T * hd));
    c.k16 = malloc(sizeof(uint16_t) * (size_t)((hd / 8) * c.surf));
    c.v16 = malloc(sizeof(uint16_t) * (size_t)((hd / 8) * c.surf));
    for (int64_t i = 0; i < KVH * G * hd; i++)
        c.q[i] = (float)tt_uniform(-2, 2);
    for (int64_t i = 0; i < KVH * T * hd; i++) {
        c.kf[i] = npu_fp16_to_fp32(npu_fp32_to_fp16((float)tt_uniform(-2, 2)));
        c.vf[i] = npu_fp16_to_fp32(npu_fp32_to_fp16((float)tt_uniform(-2, 2)));
    }
    for (int64_t g = 0; g < G; g++)
        for (int64_t j = 0; j < T; j++)
            c.mask[g * T + j] = j < len + g ? 0.0f : MASK_OFF;
    pack(c.kf, c.k16, KVH * T, hd, c.surf);
    pack(c.vf, c.v16, KVH * T, hd, c.surf);
    return c;
}

static void
drop(struct case_data *c)
{
    free(c->q);
    free(c->mask);
    free(c->kf);
    free(c->vf);
    free(c->k16);
    free(c->v16);
}

static void
ref_double(const struct case_data *c, double *y)
{
    const int64_t KVH = c->sh.kv_heads, G = c->sh.group, T = c->sh.slots, hd = c->sh.head_dim;
    double *s = malloc(sizeof(double) * (size_t)T);
    for (int64_t h = 0; h < KVH; h++)
        for (int64_t g = 0; g < G; g++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < T; j++) {
                double a = 0;
                for (int64_t d = 0; d < hd; d++)
                    a += (double)c->q[(h * G + g) * hd + d] * c->kf[(h * T + j) * hd + d];
                s[j] = a * c->sh.scale + c->mask[g * T + j];
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int64_t j = 0; j < T; j++)
                sum += s[j] = exp(s[j] - mx);
            for (int64_t d = 0; d < hd; d++) {
                double a = 0;
                for (int64_t j = 0; j < T; j++)
                    a += s[j] / sum * c->vf[(h * T + j) * hd + d];
                y[(h * G + g) * hd + d] = a;
            }
        }
    free(s);
}

/* The decode graph's CPU attention, op by op on the executor (fp32 host arrays). */
struct graph_ops {
    struct npu_tensor *q, *k, *v, *kt, *sc, *scl, *scm, *mask, *scale, *p, *y;
};

static struct graph_ops
graph_make(const struct case_data *c)
{
    const int64_t KVH = c->sh.kv_heads, G = c->sh.group, T = c->sh.slots, hd = c->sh.head_dim;
    struct graph_ops o;
    o.q = tt(NPU_DTYPE_FP32, 3, KVH, G, hd);
    o.k = tt(NPU_DTYPE_FP32, 3, KVH, T, hd);
    o.v = tt(NPU_DTYPE_FP32, 3, KVH, T, hd);
    o.kt = tt(NPU_DTYPE_FP32, 3, KVH, hd, T);
    o.sc = tt(NPU_DTYPE_FP32, 3, KVH, G, T);
    o.scl = tt(NPU_DTYPE_FP32, 3, KVH, G, T);
    o.scm = tt(NPU_DTYPE_FP32, 3, KVH, G, T);
    o.p = tt(NPU_DTYPE_FP32, 3, KVH, G, T);
    o.mask = tt(NPU_DTYPE_FP32, 3, (int64_t)1, G, T);
    o.scale = tt(NPU_DTYPE_FP32, 1, (int64_t)1);
    o.y = tt(NPU_DTYPE_FP32, 3, KVH, G, hd);
    memcpy(o.q->data, c->q, sizeof(float) * (size_t)(KVH * G * hd));
    memcpy(o.k->data, c->kf, sizeof(float) * (size_t)(KVH * T * hd));
    memcpy(o.v->data, c->vf, sizeof(float) * (size_t)(KVH * T * hd));
    memcpy(o.mask->data, c->mask, sizeof(float) * (size_t)(G * T));
    *(float *)o.scale->data = c->sh.scale;
    return o;
}

static int
graph_run(struct npu_cpu_ctx *ctx, struct graph_ops *o)
{
    static const int64_t p021[3] = {0, 2, 1};
    struct alist al = {0}, sm = {0};
    al_ints(&al, "perm", p021, 3);
    al_int(&sm, "axis", -1);
    int bad = 0;
    bad |= run_op(ctx, NPU_OP_TRANSPOSE, &al, 1, (struct npu_tensor *[]){o->k}, 1,
                  (struct npu_tensor *[]){o->kt}) != NPU_OK;
    bad |= run_op(ctx, NPU_OP_MATMUL, NULL, 2, (struct npu_tensor *[]){o->q, o->kt}, 1,
                  (struct npu_tensor *[]){o->sc}) != NPU_OK;
    bad |= run_op(ctx, NPU_OP_MUL, NULL, 2, (struct npu_tensor *[]){o->sc, o->scale}, 1,
                  (struct npu_tensor *[]){o->scl}) != NPU_OK;
    bad |= run_op(ctx, NPU_OP_ADD, NULL, 2, (struct npu_tensor *[]){o->scl, o->mask}, 1,
                  (struct npu_tensor *[]){o->scm}) != NPU_OK;
    bad |= run_op(ctx, NPU_OP_SOFTMAX, &sm, 1, (struct npu_tensor *[]){o->scm}, 1,
                  (struct npu_tensor *[]){o->p}) != NPU_OK;
    bad |= run_op(ctx, NPU_OP_MATMUL, NULL, 2, (struct npu_tensor *[]){o->p, o->v}, 1,
                  (struct npu_tensor *[]){o->y}) != NPU_OK;
    return bad;
}

static void
graph_free(struct graph_ops *o)
{
    struct npu_tensor *all[] = {o->q,   o->k,    o->v,     o->kt, o->sc, o->scl,
                                o->scm, o->mask, o->scale, o->p,  o->y};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        tt_free(all[i]);
}

static void
check_case(struct npu_cpu_ctx *ctx, const char *name, int64_t KVH, int64_t G, int64_t T, int64_t hd,
           int64_t len, int64_t pad)
{
    struct case_data c = make(KVH, G, T, hd, len, pad);
    const int64_t n = KVH * G * hd;
    double *want = malloc(sizeof(double) * (size_t)n);
    float *y = malloc(sizeof(float) * (size_t)n), *y2 = malloc(sizeof(float) * (size_t)n);
    float *work = malloc(sizeof(float) * (size_t)T);
    ref_double(&c, want);
    struct npu_attn16_cache k = {c.k16, c.surf}, v = {c.v16, c.surf};
    enum npu_status st = npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, 0, KVH, work, y);
    CHECK(st == NPU_OK);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(y[i] - want[i]) / (1e-5 + 1e-5 * fabs(want[i]));
        worst = e > worst || e != e ? e : worst;
    }
    if (!(worst <= 1.0))
        fprintf(stderr, "%s: error %.3g of the tolerance against the double loop\n", name, worst);
    CHECK(worst <= 1.0);

    /* the same as the executor's op sequence (fp32) */
    struct graph_ops o = graph_make(&c);
    CHECK(graph_run(ctx, &o) == 0);
    double gworst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(y[i] - ((float *)o.y->data)[i]) / (1e-5 + 1e-5 * fabs(want[i]));
        gworst = e > gworst || e != e ? e : gworst;
    }
    if (!(gworst <= 1.0))
        fprintf(stderr, "%s: error %.3g of the tolerance against the executor's ops\n", name,
                gworst);
    CHECK(gworst <= 1.0);
    graph_free(&o);

    /* in head ranges: the same bits */
    if (KVH > 1) {
        int64_t mid = KVH / 2;
        CHECK(npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, 0, mid, work, y2) == NPU_OK);
        CHECK(npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, mid, KVH, work, y2) == NPU_OK);
        CHECK(memcmp(y, y2, sizeof(float) * (size_t)n) == 0);
    }
    printf("%s (%s): kv heads %lld, group %lld, slots %lld, hd %lld: %.3g of the tolerance "
           "(double), %.3g (executor's fp32 ops)\n",
           name, npu_cpu_attn16_isa(), (long long)KVH, (long long)G, (long long)T, (long long)hd,
           worst, gworst);
    free(want);
    free(y);
    free(y2);
    free(work);
    drop(&c);
}

static void
fill_rows(uint16_t *dst, int64_t surf, int64_t hd, int64_t row0, int64_t n, uint16_t val)
{
    for (int64_t r = row0; r < row0 + n; r++)
        for (int64_t d = 0; d < hd; d++)
            dst[(d / 8) * surf + r * 8 + d % 8] = val;
}

/* The trailing slots a mask switches off are skipped, exactly. */
static void
check_skipped(const char *name, int64_t KVH, int64_t G, int64_t T, int64_t hd, int64_t len)
{
    struct case_data c = make(KVH, G, T, hd, len, 0);
    const int64_t n = KVH * G * hd;
    float *y = malloc(sizeof(float) * (size_t)n), *y2 = malloc(sizeof(float) * (size_t)n);
    float *work = malloc(sizeof(float) * (size_t)T), *m2 = malloc(sizeof(float) * (size_t)(G * T));
    struct npu_attn16_cache k = {c.k16, c.surf}, v = {c.v16, c.surf};
    for (int64_t g = 0; g < G; g++)
        CHECK(npu_cpu_attn16_read_slots(c.mask + g * T, T) == NPU_MIN(len + g, T));
    CHECK(npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, 0, KVH, work, y) == NPU_OK);
    /* the slots read, from the kernel's own scan of the mask (the most a row read: the last
     * row's), the same bits, over all the heads and over the last one alone */
    const int64_t want_read = NPU_MIN(len + G - 1, T);
    int64_t rd = -1;
    CHECK(npu_cpu_attn16_decode_read(&c.sh, c.q, c.mask, &k, &v, 0, KVH, work, y2, &rd) == NPU_OK);
    CHECK(rd == want_read);
    CHECK(memcmp(y, y2, sizeof(float) * (size_t)n) == 0);
    rd = -1;
    CHECK(npu_cpu_attn16_decode_read(&c.sh, c.q, c.mask, &k, &v, KVH - 1, KVH, work, y2, &rd) ==
          NPU_OK);
    CHECK(rd == want_read);
    /* the off slots read (mask -9999: above the skip, weight exp(-9999 + ..) = 0 in fp32) */
    for (int64_t i = 0; i < G * T; i++)
        m2[i] = c.mask[i] == MASK_OFF ? -9999.0f : c.mask[i];
    CHECK(npu_cpu_attn16_read_slots(m2, T) == T);
    CHECK(npu_cpu_attn16_decode(&c.sh, c.q, m2, &k, &v, 0, KVH, work, y2) == NPU_OK);
    CHECK(memcmp(y, y2, sizeof(float) * (size_t)n) == 0);
    /* NaN, then the largest fp16, in every head's rows past the valid ones: nothing changes */
    const int64_t valid = NPU_MIN(len + G - 1, T);
    static const uint16_t junk[2] = {0x7e00, 0x7bff};
    for (int r = 0; r < 2 && valid < T; r++) {
        for (int64_t h = 0; h < KVH; h++) {
            fill_rows(c.k16, c.surf, hd, h * T + valid, T - valid, junk[r]);
            fill_rows(c.v16, c.surf, hd, h * T + valid, T - valid, junk[r]);
        }
        CHECK(npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, 0, KVH, work, y2) == NPU_OK);
        CHECK(memcmp(y, y2, sizeof(float) * (size_t)n) == 0);
    }
    printf("%s (%s): slots %lld, rows read %lld..%lld: the same bits as over every slot, "
           "garbage in the rest ignored\n",
           name, npu_cpu_attn16_isa(), (long long)T, (long long)NPU_MIN(len, T), (long long)valid);
    free(y);
    free(y2);
    free(work);
    free(m2);
    drop(&c);
}

static void
check_refusals(void)
{
    struct case_data c = make(2, 1, 32, 16, 5, 0);
    float y[32], work[32];
    struct npu_attn16_cache k = {c.k16, c.surf}, v = {c.v16, c.surf}, ks = {c.k16, c.surf - 8};
    struct npu_attn16_shape bad = c.sh;
    bad.head_dim = 12;
    CHECK(npu_cpu_attn16_decode(&bad, c.q, c.mask, &k, &v, 0, 2, work, y) == NPU_ERR_INVALID);
    CHECK(npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &ks, &v, 0, 2, work, y) == NPU_ERR_INVALID);
    CHECK(npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, 1, 1, work, y) == NPU_ERR_INVALID);
    CHECK(npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, 0, 3, work, y) == NPU_ERR_INVALID);
    CHECK(npu_cpu_attn16_decode(&c.sh, NULL, c.mask, &k, &v, 0, 2, work, y) == NPU_ERR_INVALID);
    drop(&c);
}

static double
cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* best of `reps` rounds of `iters` calls, in us per call */
#define TIME_IT(out, body)                                                                         \
    do {                                                                                           \
        double best_ = INFINITY;                                                                   \
        for (int r_ = 0; r_ < 7; r_++) {                                                           \
            double t0_ = cpu_now();                                                                \
            for (int i_ = 0; i_ < iters; i_++) {                                                   \
                body;                                                                              \
            }                                                                                      \
            double t_ = (cpu_now() - t0_) / iters * 1e6;                                           \
            best_ = t_ < best_ ? t_ : best_;                                                       \
        }                                                                                          \
        (out) = best_;                                                                             \
    } while (0)

static void
bench(int iters)
{
    const int64_t KVH = 12, G = 1, T = 160, hd = 64;
    struct case_data c = make(KVH, G, T, hd, 133, 0);
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(1);
    struct graph_ops o = graph_make(&c);
    float y[12 * 64], work[160];
    struct npu_attn16_cache k = {c.k16, c.surf}, v = {c.v16, c.surf};
    double t_ops, t_16, t_cvt;
    TIME_IT(t_ops, graph_run(ctx, &o));
    TIME_IT(t_16, npu_cpu_attn16_decode(&c.sh, c.q, c.mask, &k, &v, 0, KVH, work, y));
    /* today's CPU StateWrite of K (and the same of V): the host cache [12, 160, 64] copied
     * with the new row at position 133 */
    struct npu_tensor *row = tt(NPU_DTYPE_FP32, 3, KVH, (int64_t)1, hd),
                      *pos = tt(NPU_DTYPE_INT64, 1, (int64_t)1),
                      *kw = tt(NPU_DTYPE_FP32, 3, KVH, T, hd);
    *(int64_t *)pos->data = 133;
    struct alist al = {0};
    al_int(&al, "axis", 1);
    struct npu_attrs *attrs = al_done(&al);
    double t_sw;
    TIME_IT(t_sw, npu_cpu_run(ctx, NPU_OP_STATE_WRITE, attrs,
                              (const struct npu_tensor *const[]){o.k, row, pos}, 3,
                              (struct npu_tensor *const[]){kw}, 1));
    tt_free(row);
    tt_free(pos);
    tt_free(kw);
    float *kf = o.k->data, *vf = o.v->data;
    TIME_IT(t_cvt, {
        for (int64_t r = 0; r < KVH * T; r++)
            for (int64_t d = 0; d < hd; d++) {
                kf[r * hd + d] = npu_fp16_to_fp32(c.k16[(d / 8) * c.surf + r * 8 + d % 8]);
                vf[r * hd + d] = npu_fp16_to_fp32(c.v16[(d / 8) * c.surf + r * 8 + d % 8]);
            }
    });
    printf("GPT-2 small decode attention, one layer (12 heads, 160 slots, hd 64), CPU time of "
           "this thread, best of 7 x %d:\n"
           "  executor's fp32 ops on host arrays (today):      %8.1f us  (K, V read: %lld bytes)\n"
           "  fp16 NC1HWC2 cache read in place (%-6s):      %8.1f us  (%lld bytes)  ratio %.2f\n"
           "  NC1HWC2 fp16 -> fp32 of K and V (a conversion):  %8.1f us  (scalar widening loop)\n"
           "  CPU npu.StateWrite of one cache input (today, x2): %7.1f us  (copies the cache)\n",
           iters, t_ops, (long long)(2 * KVH * T * hd * 4), npu_cpu_attn16_isa(), t_16,
           (long long)(2 * KVH * T * hd * 2), t_16 / t_ops, t_cvt, t_sw);
    graph_free(&o);
    npu_cpu_ctx_destroy(ctx);
    drop(&c);
}

int
main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--bench")) {
        bench(argc > 2 ? atoi(argv[2]) : 200);
        return 0;
    }
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(1);
    CHECK(ctx != NULL);
    check_case(ctx, "gpt2-small", 12, 1, 160, 64, 133, 0);
    check_case(ctx, "llama-test-gqa", 2, 2, 256, 16, 40, 24);
    check_case(ctx, "smallest", 1, 1, 1, 8, 1, 0);
    check_case(ctx, "odd-slots", 3, 1, 33, 24, 7, 8);
    check_case(ctx, "first-step", 4, 1, 32, 32, 1, 0);
    check_skipped("gpt2-small-129", 12, 1, 160, 64, 129);
    check_skipped("llama-test-gqa", 2, 2, 256, 16, 40);
    check_skipped("odd-slots", 3, 1, 33, 24, 7);
    check_skipped("full", 2, 1, 32, 16, 32);
    /* every slot off: all of them read, as before */
    float off[4] = {MASK_OFF, MASK_OFF, MASK_OFF, MASK_OFF};
    CHECK(npu_cpu_attn16_read_slots(off, 4) == 4);
    off[1] = 0.0f;
    CHECK(npu_cpu_attn16_read_slots(off, 4) == 2);
    check_refusals();
    npu_cpu_ctx_destroy(ctx);
    return npu_test_done("cpu-attn16");
}
