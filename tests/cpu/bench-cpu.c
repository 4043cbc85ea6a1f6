/* SPDX-License-Identifier: MIT */
/*
 * bench-cpu.c: speed of the CPU kernels at ViT-B/16 shapes (196 tokens,
 * width 768, 12 heads of 64), against baselines measured in the same run:
 * the machine's fp32 peak (bench-peak.c), a plain loop for each op, our
 * fallback GEMM against OpenBLAS, one thread against all threads, and the
 * fused attention against the unfused MatMul/Softmax/MatMul chain.
 *
 * `bench-cpu` prints a table; `bench-cpu --quick` runs each case once (as a
 * smoke test); `--only matmul,conv,rows,attention,cast` picks sections. Figures are
 * best-of-3 wall-clock times; nothing is asserted.
 */
#include <time.h>
#include <unistd.h>

#include "../../core/cpu/npu-cpu-internal.h"
#include "bench-peak.h"
#include "cpu-test-util.h"

static bool quick;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef void (*bench_fn)(void *arg);

/* Seconds per call: repeat to >= 0.15 s, best of three. */
static double
timeit(bench_fn fn, void *arg)
{
    fn(arg); /* warm up (and allocate scratch) */
    if (quick)
        return 0;
    int reps = 1;
    double t;
    for (;;) {
        double t0 = now();
        for (int i = 0; i < reps; i++)
            fn(arg);
        t = now() - t0;
        if (t > 0.15 || reps > (1 << 20))
            break;
        reps = t < 0.01 ? reps * 8 : reps * 2;
    }
    double best = t / reps;
    for (int k = 0; k < 2; k++) {
        double t0 = now();
        for (int i = 0; i < reps; i++)
            fn(arg);
        double tt = (now() - t0) / reps;
        best = tt < best ? tt : best;
    }
    return best;
}

struct op_call {
    struct npu_cpu_ctx *ctx;
    enum npu_op op;
    struct alist *al;
    int nin, nout;
    struct npu_tensor **in, **out;
};

static void
call_op(void *p)
{
    struct op_call *c = p;
    if (run_op(c->ctx, c->op, c->al, c->nin, c->in, c->nout, c->out) != NPU_OK) {
        fprintf(stderr, "bench: %s failed\n", npu_op_name(c->op));
        exit(1);
    }
}

static double peak1, peakN;
static int nthreads;

static void
report(const char *what, double secs, double flops, int threads)
{
    if (quick) {
        printf("  %-52s ok\n", what);
        return;
    }
    if (flops > 0) {
        /* against the peak of the same number of threads, probed right after the kernel ran:
         * on a shared machine that is the capacity the kernel actually had */
        double g = flops / secs * 1e-9, pk = bench_peak_now(threads);
        printf("  %-52s %9.3f ms %8.1f GFLOP/s  %5.1f%% of peak (%d core%s)\n", what, secs * 1e3, g,
               100.0 * g / pk, threads, threads > 1 ? "s" : "");
    } else {
        printf("  %-52s %9.3f ms\n", what, secs * 1e3);
    }
}

/* ---- baselines ---------------------------------------------------------------------------- */

struct mm_args {
    const float *a, *b;
    float *c;
    int64_t M, N, K;
};

/* the plain loop a compiler vectorises by itself (i-k-j order) */
static void
naive_mm(void *p)
{
    struct mm_args *m = p;
    for (int64_t i = 0; i < m->M; i++) {
        float *c = m->c + i * m->N;
        memset(c, 0, sizeof(float) * (size_t)m->N);
        for (int64_t k = 0; k < m->K; k++) {
            float a = m->a[i * m->K + k];
            const float *b = m->b + k * m->N;
            for (int64_t j = 0; j < m->N; j++)
                c[j] += a * b[j];
        }
    }
}

static void
whole_sgemm(void *p)
{
    struct mm_args *m = p;
    cpu_sgemm(false, false, m->M, m->N, m->K, 1.0f, m->a, m->K, m->b, m->N, 0.0f, m->c, m->N);
}

struct sm_args {
    const float *x;
    float *y;
    int64_t rows, n;
};

static void
naive_softmax(void *p)
{
    struct sm_args *s = p;
    for (int64_t r = 0; r < s->rows; r++) {
        const float *x = s->x + r * s->n;
        float *y = s->y + r * s->n;
        float m = -INFINITY, sum = 0;
        for (int64_t i = 0; i < s->n; i++)
            m = x[i] > m ? x[i] : m;
        for (int64_t i = 0; i < s->n; i++)
            sum += y[i] = expf(x[i] - m);
        for (int64_t i = 0; i < s->n; i++)
            y[i] /= sum;
    }
}

static void
naive_layernorm(void *p)
{
    struct sm_args *s = p;
    for (int64_t r = 0; r < s->rows; r++) {
        const float *x = s->x + r * s->n;
        float *y = s->y + r * s->n;
        double m = 0, v = 0;
        for (int64_t i = 0; i < s->n; i++)
            m += x[i];
        m /= (double)s->n;
        for (int64_t i = 0; i < s->n; i++)
            v += (x[i] - m) * (x[i] - m);
        float inv = (float)(1.0 / sqrt(v / (double)s->n + 1e-5));
        for (int64_t i = 0; i < s->n; i++)
            y[i] = (float)(x[i] - m) * inv;
    }
}

static void
naive_gelu(void *p)
{
    struct sm_args *s = p;
    for (int64_t i = 0; i < s->rows * s->n; i++)
        s->y[i] = 0.5f * s->x[i] * (1.0f + erff(s->x[i] * 0.70710678f));
}

static void
naive_gelu_tanh(void *p)
{
    struct sm_args *s = p;
    for (int64_t i = 0; i < s->rows * s->n; i++) {
        float x = s->x[i];
        s->y[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}

static void
naive_exp(void *p)
{
    struct sm_args *s = p;
    for (int64_t i = 0; i < s->rows * s->n; i++)
        s->y[i] = expf(s->x[i]);
}

/* ---- cases -------------------------------------------------------------------------------- */

static void
bench_matmul(struct npu_cpu_ctx *c1, struct npu_cpu_ctx *cn)
{
    const int64_t M = 196, K = 768, N = 768;
    struct npu_tensor *a = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(M), D(K)), -1, 1);
    struct npu_tensor *b = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(K), D(N)), -1, 1);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 2, D(M), D(N));
    struct npu_tensor *in[2] = {a, b}, *out[1] = {y};
    double flops = 2.0 * M * N * K;
    printf("MatMul %lldx%lldx%lld fp32 (ViT-B/16 q/k/v/o projection):\n", (long long)M,
           (long long)K, (long long)N);
    struct mm_args na = {a->data, b->data, y->data, M, N, K};
    double tn = timeit(naive_mm, &na);
    report("plain i-k-j loop, 1 thread (baseline)", tn, flops, 1);
    if (cpu_have_blas()) {
        /* the GEMM engine's single-threaded call on the whole problem: what our tiling costs */
        cpu_gemm_use_blas(true);
        double tb = timeit(whole_sgemm, &na);
        report("one cpu_sgemm call (OpenBLAS, untiled, 1 thread)", tb, flops, 1);
    }
    for (int blas = cpu_have_blas() ? 1 : 0; blas >= 0; blas--) {
        cpu_gemm_use_blas(blas);
        for (int k = 0; k < 2; k++) {
            struct op_call c = {k ? cn : c1, NPU_OP_MATMUL, NULL, 2, 1, in, out};
            int th = npu_cpu_ctx_threads(c.ctx);
            char what[96];
            snprintf(what, sizeof(what), "npu_cpu_run MatMul, %s, %d thread%s",
                     blas ? "OpenBLAS sgemm" : "own blocked kernel", th, th > 1 ? "s" : "");
            double t = timeit(call_op, &c);
            report(what, t, flops, th);
            if (!quick && k == 0)
                printf("  %-52s %9.1fx\n", "  speed-up over the plain loop", tn / t);
        }
    }
    cpu_gemm_use_blas(true);
    tt_free(a), tt_free(b), tt_free(y);
}

static void
bench_conv(struct npu_cpu_ctx *c1, struct npu_cpu_ctx *cn)
{
    /* ViT-B/16 patch embedding: 3x224x224 -> 768 x 14x14, k16 s16 */
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(1), D(3), D(224), D(224)), -1, 1);
    struct npu_tensor *w = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(768), D(3), D(16), D(16)), -1, 1);
    struct npu_tensor *b = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(768)), -1, 1);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, D(1), D(768), D(14), D(14));
    struct npu_tensor *in[3] = {x, w, b}, *out[1] = {y};
    int64_t k16[2] = {16, 16};
    struct alist al = {0};
    al_ints(&al, "strides", k16, 2);
    double flops = 2.0 * 196 * 768 * 768;
    printf("Conv 3x224x224 -> 768x14x14, 16x16 stride 16 (ViT-B/16 patch embedding):\n");
    for (int k = 0; k < 2; k++) {
        struct op_call c = {k ? cn : c1, NPU_OP_CONV, &al, 3, 1, in, out};
        int th = npu_cpu_ctx_threads(c.ctx);
        char what[96];
        snprintf(what, sizeof(what), "im2col + GEMM, %d thread%s", th, th > 1 ? "s" : "");
        report(what, timeit(call_op, &c), flops, th);
    }
    tt_free(x), tt_free(w), tt_free(b), tt_free(y);

    /* a ResNet-style 3x3 conv for contrast */
    x = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(1), D(64), D(56), D(56)), -1, 1);
    w = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(64), D(64), D(3), D(3)), -1, 1);
    y = tt(NPU_DTYPE_FP32, 4, D(1), D(64), D(56), D(56));
    struct npu_tensor *in2[2] = {x, w};
    int64_t p1[4] = {1, 1, 1, 1};
    struct alist al2 = {0};
    al_ints(&al2, "pads", p1, 4);
    flops = 2.0 * 56 * 56 * 64 * 64 * 9;
    printf("Conv 64x56x56 -> 64x56x56, 3x3 pad 1 (ResNet stage 1):\n");
    for (int k = 0; k < 2; k++) {
        struct op_call c = {k ? cn : c1, NPU_OP_CONV, &al2, 2, 1, in2, out};
        out[0] = y;
        int th = npu_cpu_ctx_threads(c.ctx);
        char what[96];
        snprintf(what, sizeof(what), "im2col + GEMM, %d thread%s", th, th > 1 ? "s" : "");
        report(what, timeit(call_op, &c), flops, th);
    }
    tt_free(x), tt_free(w), tt_free(y);
}

static void
bench_rows(struct npu_cpu_ctx *c1, struct npu_cpu_ctx *cn)
{
    /* Softmax over attention scores: 12 heads x 196 x 196 */
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(12), D(196), D(196)), -8, 8);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 3, D(12), D(196), D(196));
    struct npu_tensor *in[3] = {x}, *out[1] = {y};
    printf("Softmax [12,196,196] (last axis):\n");
    struct sm_args sa = {x->data, y->data, 12 * 196, 196};
    double tb = timeit(naive_softmax, &sa);
    report("plain loop with libm expf, 1 thread (baseline)", tb, 0, 1);
    for (int k = 0; k < 2; k++) {
        struct op_call c = {k ? cn : c1, NPU_OP_SOFTMAX, NULL, 1, 1, in, out};
        int th = npu_cpu_ctx_threads(c.ctx);
        char what[96];
        snprintf(what, sizeof(what), "npu_cpu_run Softmax, %d thread%s", th, th > 1 ? "s" : "");
        double t = timeit(call_op, &c);
        report(what, t, 0, th);
        if (!quick)
            printf("  %-52s %9.1fx\n", "  speed-up over the baseline", tb / t);
    }
    tt_free(x), tt_free(y);

    /* LayerNorm [196, 768] */
    x = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(196), D(768)), -2, 2);
    y = tt(NPU_DTYPE_FP32, 2, D(196), D(768));
    struct npu_tensor *sc = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(768)), 0.5, 1.5);
    struct npu_tensor *bi = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(768)), -1, 1);
    struct npu_tensor *lin[3] = {x, sc, bi};
    out[0] = y;
    printf("LayerNormalization [196,768]:\n");
    sa = (struct sm_args){x->data, y->data, 196, 768};
    tb = timeit(naive_layernorm, &sa);
    report("plain two-pass loop (double sums), 1 thread (baseline)", tb, 0, 1);
    for (int k = 0; k < 2; k++) {
        struct op_call c = {k ? cn : c1, NPU_OP_LAYER_NORMALIZATION, NULL, 3, 1, lin, out};
        int th = npu_cpu_ctx_threads(c.ctx);
        char what[96];
        snprintf(what, sizeof(what), "npu_cpu_run LayerNormalization, %d thread%s", th,
                 th > 1 ? "s" : "");
        double t = timeit(call_op, &c);
        report(what, t, 0, th);
        if (!quick)
            printf("  %-52s %9.1fx\n", "  speed-up over the baseline", tb / t);
    }
    tt_free(x), tt_free(y), tt_free(sc), tt_free(bi);

    /* activations on the MLP hidden layer [196, 3072] */
    x = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(196), D(3072)), -6, 6);
    y = tt(NPU_DTYPE_FP32, 2, D(196), D(3072));
    in[0] = x;
    out[0] = y;
    printf("Activations on [196,3072] (ViT MLP hidden layer):\n");
    sa = (struct sm_args){x->data, y->data, 196, 3072};
    struct {
        const char *name;
        enum npu_op op;
        const char *approx;
        bench_fn base;
        const char *base_name;
    } acts[] = {
        {"Gelu (erf)", NPU_OP_GELU, NULL, naive_gelu, "libm erff loop"},
        {"npu.GeluTanh", NPU_OP_FUSED_GELU_TANH, NULL, naive_gelu_tanh, "libm tanhf loop"},
        {"Exp", NPU_OP_EXP, NULL, naive_exp, "libm expf loop"},
        {"npu.SiLU", NPU_OP_FUSED_SILU, NULL, NULL, NULL},
        {"Tanh", NPU_OP_TANH, NULL, NULL, NULL},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(acts); i++) {
        double tb2 = 0;
        if (acts[i].base) {
            tb2 = timeit(acts[i].base, &sa);
            char what[96];
            snprintf(what, sizeof(what), "%s: %s, 1 thread (baseline)", acts[i].name,
                     acts[i].base_name);
            report(what, tb2, 0, 1);
        }
        for (int k = 0; k < 2; k++) {
            struct op_call c = {k ? cn : c1, acts[i].op, NULL, 1, 1, in, out};
            int th = npu_cpu_ctx_threads(c.ctx);
            char what[96];
            snprintf(what, sizeof(what), "%s, %d thread%s", acts[i].name, th, th > 1 ? "s" : "");
            double t = timeit(call_op, &c);
            report(what, t, 0, th);
            if (!quick && tb2 > 0 && k == 0)
                printf("  %-52s %9.1fx\n", "  speed-up over the baseline", tb2 / t);
        }
    }
    tt_free(x), tt_free(y);
}

struct copy_args {
    const void *src;
    void *dst;
    size_t bytes;
};

static void
plain_copy(void *p)
{
    struct copy_args *c = p;
    memcpy(c->dst, c->src, c->bytes);
}

/* Cast to and from fp16 (the conversions every fp16 tensor goes through) and an fp16 Add
 * (widened to fp32, added, rounded back), on the MLP hidden layer [196, 3072]. */
static void
bench_cast(struct npu_cpu_ctx *c1, struct npu_cpu_ctx *cn)
{
    const int64_t R = 196, C = 3072;
    struct npu_tensor *f32 = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(R), D(C)), -8, 8);
    struct npu_tensor *f64 = tt_fill_rand(tt(NPU_DTYPE_FP64, 2, D(R), D(C)), -8, 8);
    struct npu_tensor *h = tt_fill_rand(tt(NPU_DTYPE_FP16, 2, D(R), D(C)), -100, 100);
    struct npu_tensor *h2 = tt_fill_rand(tt(NPU_DTYPE_FP16, 2, D(R), D(C)), -100, 100);
    struct npu_tensor *hy = tt(NPU_DTYPE_FP16, 2, D(R), D(C));
    struct npu_tensor *fy = tt(NPU_DTYPE_FP32, 2, D(R), D(C));
    printf("Cast and fp16 Add on [196,3072]:\n");
    struct copy_args ca = {f32->data, fy->data, (size_t)(R * C) * sizeof(float)};
    double tb = timeit(plain_copy, &ca);
    report("memcpy of the fp32 tensor (baseline)", tb, 0, 1);
    struct {
        const char *name;
        enum npu_op op;
        int nin;
        struct npu_tensor *a, *b, *y;
    } cases[] = {
        {"Cast fp32 -> fp16", NPU_OP_CAST, 1, f32, NULL, hy},
        {"Cast fp16 -> fp32", NPU_OP_CAST, 1, h, NULL, fy},
        {"Cast fp64 -> fp16", NPU_OP_CAST, 1, f64, NULL, hy},
        {"Add fp16 + fp16", NPU_OP_ADD, 2, h, h2, hy},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        struct npu_tensor *in[2] = {cases[i].a, cases[i].b}, *out[1] = {cases[i].y};
        for (int k = 0; k < 2; k++) {
            struct op_call c = {k ? cn : c1, cases[i].op, NULL, cases[i].nin, 1, in, out};
            int th = npu_cpu_ctx_threads(c.ctx);
            char what[96];
            snprintf(what, sizeof(what), "%s, %d thread%s", cases[i].name, th, th > 1 ? "s" : "");
            double t = timeit(call_op, &c);
            report(what, t, 0, th);
            if (!quick && k == 0)
                printf("  %-52s %9.2fx\n", "  time over the baseline", t / tb);
        }
    }
    tt_free(f32), tt_free(f64), tt_free(h), tt_free(h2), tt_free(hy), tt_free(fy);
}

struct unfused {
    struct npu_cpu_ctx *ctx;
    struct npu_tensor *q, *kt, *v, *s, *p, *y, *scale, *ss;
};

static void
unfused_attention(void *arg)
{
    struct unfused *u = arg;
    struct npu_tensor *in[2], *out[1];
    in[0] = u->q, in[1] = u->kt, out[0] = u->s;
    run_op(u->ctx, NPU_OP_MATMUL, NULL, 2, in, 1, out);
    in[0] = u->s, in[1] = u->scale, out[0] = u->ss;
    run_op(u->ctx, NPU_OP_MUL, NULL, 2, in, 1, out);
    in[0] = u->ss, out[0] = u->p;
    run_op(u->ctx, NPU_OP_SOFTMAX, NULL, 1, in, 1, out);
    in[0] = u->p, in[1] = u->v, out[0] = u->y;
    run_op(u->ctx, NPU_OP_MATMUL, NULL, 2, in, 1, out);
}

static void
bench_attention(struct npu_cpu_ctx *c1, struct npu_cpu_ctx *cn)
{
    const int64_t H = 12, S = 196, Dh = 64;
    struct npu_tensor *q = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(H), D(S), D(Dh)), -1, 1);
    struct npu_tensor *k = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(H), D(S), D(Dh)), -1, 1);
    struct npu_tensor *v = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(H), D(S), D(Dh)), -1, 1);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 3, D(H), D(S), D(Dh));
    struct npu_tensor *in[3] = {q, k, v}, *out[1] = {y};
    double flops = 2.0 * 2 * H * S * S * Dh;
    printf("npu.Attention, 12 heads, 196 tokens, head dim 64 (ViT-B/16 self-attention):\n");
    struct unfused u = {.q = q, .v = v, .y = y};
    u.kt = tt(NPU_DTYPE_FP32, 3, D(H), D(Dh), D(S));
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < S; i++)
            for (int64_t d = 0; d < Dh; d++)
                ((float *)u.kt->data)[(h * Dh + d) * S + i] =
                    ((float *)k->data)[(h * S + i) * Dh + d];
    u.s = tt(NPU_DTYPE_FP32, 3, D(H), D(S), D(S));
    u.ss = tt(NPU_DTYPE_FP32, 3, D(H), D(S), D(S));
    u.p = tt(NPU_DTYPE_FP32, 3, D(H), D(S), D(S));
    u.scale = tt(NPU_DTYPE_FP32, 0);
    *(float *)u.scale->data = 0.125f;
    for (int k2 = 0; k2 < 2; k2++) {
        u.ctx = k2 ? cn : c1;
        int th = npu_cpu_ctx_threads(u.ctx);
        char what[96];
        snprintf(what, sizeof(what), "unfused MatMul+Mul+Softmax+MatMul, %d thread%s", th,
                 th > 1 ? "s" : "");
        double tu = timeit(unfused_attention, &u);
        report(what, tu, flops, th);
        struct op_call c = {u.ctx, NPU_OP_FUSED_ATTENTION, NULL, 3, 1, in, out};
        snprintf(what, sizeof(what), "fused npu.Attention, %d thread%s", th, th > 1 ? "s" : "");
        double t = timeit(call_op, &c);
        report(what, t, flops, th);
        if (!quick)
            printf("  %-52s %9.1fx\n", "  speed-up of fusion", tu / t);
    }
    tt_free(q), tt_free(k), tt_free(v), tt_free(y), tt_free(u.kt), tt_free(u.s), tt_free(u.ss);
    tt_free(u.p), tt_free(u.scale);
}

static bool
want(const char *only, const char *name)
{
    return !only || strstr(only, name);
}

int
main(int argc, char **argv)
{
    const char *only = NULL; /* --only matmul,conv,rows,attention,cast */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
    }
    struct npu_cpu_ctx *c1 = npu_cpu_ctx_create(1), *cn = npu_cpu_ctx_create(0);
    if (!c1 || !cn) {
        fprintf(stderr, "bench: cannot create CPU contexts\n");
        return 77; /* skip */
    }
    nthreads = npu_cpu_ctx_threads(cn);
    const char *isa = "?";
    if (!quick) {
        peak1 = bench_peak_gflops(1, &isa);
        peakN = bench_peak_gflops(nthreads, &isa);
    } else {
        peak1 = peakN = 1;
    }
    printf("CPU kernels benchmark: %d threads, BLAS %s\n", nthreads,
           cpu_have_blas() ? "OpenBLAS (pinned to 1 thread; our pool splits the work)" : "none");
    const char *gemm_why = NULL;
    const char *gemm_path = npu_cpu_gemm_path(&gemm_why);
    printf("fp32 GEMM path chosen: %s (%s)\n", gemm_path, gemm_why);
    if (!quick)
        printf("fp32 peak (register-resident FMA loop, %s): %.1f GFLOP/s on 1 core, %.1f on %d\n",
               isa, peak1, peakN, nthreads);
    if (want(only, "matmul"))
        bench_matmul(c1, cn);
    if (want(only, "conv"))
        bench_conv(c1, cn);
    if (want(only, "rows"))
        bench_rows(c1, cn);
    if (want(only, "attention"))
        bench_attention(c1, cn);
    if (want(only, "cast"))
        bench_cast(c1, cn);
    npu_cpu_ctx_destroy(c1);
    npu_cpu_ctx_destroy(cn);
    return 0;
}
