/* SPDX-License-Identifier: MIT */
/*
 * bench-peak.c: measures this machine's fp32 peak: a loop of independent
 * fused multiply-adds that never leaves the registers, in the widest vectors
 * the CPU offers, chosen at run time (AVX-512F, AVX2+FMA or SSE2 on x86-64;
 * NEON on aarch64). 12 or 16 independent accumulator chains cover FMA
 * latency x throughput on current cores (4 cycles x 2 pipes), so the loop
 * runs at the FMA units' issue rate: that rate is what "peak" means in the
 * benchmark.
 * Only these functions are compiled for the wider ISAs (target attributes),
 * so the rest of the program stays baseline.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-peak.h"

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* a_i = a_i * b + c on 12 (or 16) independent vectors of W floats, `iters` times. Named
 * locals, not an array, so that the compiler keeps every chain in a register; the recurrence
 * cannot be folded (fp arithmetic does not reassociate), so the loop runs as written. */
#define STEP(v) v = v * b + c
#define PEAK_FN(name, ATTR, W, WIDE)                                                               \
    ATTR static double name(int64_t iters, float *sink)                                            \
    {                                                                                              \
        typedef float vec __attribute__((vector_size(W * 4)));                                     \
        vec b, c, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15;            \
        for (int k = 0; k < W; k++) {                                                              \
            b[k] = 0.9999999f;                                                                     \
            c[k] = 1e-7f;                                                                          \
            a0[k] = 0.01f * k, a1[k] = 0.02f * k, a2[k] = 0.03f * k, a3[k] = 0.04f * k;            \
            a4[k] = 0.05f * k, a5[k] = 0.06f * k, a6[k] = 0.07f * k, a7[k] = 0.08f * k;            \
            a8[k] = 0.09f * k, a9[k] = 0.10f * k, a10[k] = 0.11f * k, a11[k] = 0.12f * k;          \
            a12[k] = 0.13f * k, a13[k] = 0.14f * k, a14[k] = 0.15f * k, a15[k] = 0.16f * k;        \
        }                                                                                          \
        for (int64_t it = 0; it < iters; it++) {                                                   \
            STEP(a0), STEP(a1), STEP(a2), STEP(a3), STEP(a4), STEP(a5);                            \
            STEP(a6), STEP(a7), STEP(a8), STEP(a9), STEP(a10), STEP(a11);                          \
            if (WIDE) {                                                                            \
                STEP(a12), STEP(a13), STEP(a14), STEP(a15);                                        \
            }                                                                                      \
        }                                                                                          \
        vec s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;                       \
        if (WIDE)                                                                                  \
            s += a12 + a13 + a14 + a15;                                                            \
        float t = 0;                                                                               \
        for (int k = 0; k < W; k++)                                                                \
            t += s[k];                                                                             \
        *sink = t;                                                                                 \
        return 2.0 * W * (WIDE ? 16 : 12) * (double)iters;                                         \
    }

#if defined(__x86_64__)
PEAK_FN(peak_avx512, __attribute__((target("avx512f,fma"))), 16, 1)
PEAK_FN(peak_avx2, __attribute__((target("avx2,fma"))), 8, 0)
PEAK_FN(peak_sse, , 4, 0)
#elif defined(__aarch64__)
PEAK_FN(peak_neon, , 4, 1)
#else
PEAK_FN(peak_scalar, , 1, 0)
#endif

typedef double (*peak_fn)(int64_t, float *);

static peak_fn
pick(const char **isa)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    /* NPU_BENCH_ISA=avx2|sse caps the probe (to compare vector widths) */
    const char *cap = getenv("NPU_BENCH_ISA");
    bool no512 = cap && (!strcmp(cap, "avx2") || !strcmp(cap, "sse"));
    bool no256 = cap && !strcmp(cap, "sse");
    if (!no512 && __builtin_cpu_supports("avx512f")) {
        *isa = "AVX-512F (16 x fp32, FMA)";
        return peak_avx512;
    }
    if (!no256 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *isa = "AVX2+FMA (8 x fp32)";
        return peak_avx2;
    }
    *isa = "SSE2 (4 x fp32, mul+add)";
    return peak_sse;
#elif defined(__aarch64__)
    *isa = "NEON (4 x fp32, FMA)";
    return peak_neon;
#else
    *isa = "scalar";
    return peak_scalar;
#endif
}

struct peak_arg {
    peak_fn fn;
    int64_t iters;
    double flops, secs;
    float sink;
};

static void *
peak_thread(void *p)
{
    struct peak_arg *a = p;
    double t0 = now();
    a->flops = a->fn(a->iters, &a->sink);
    a->secs = now() - t0;
    return NULL;
}

static double
peak_runs(peak_fn fn, int64_t iters, int nthreads, int reps)
{
    double best = 0;
    if (nthreads < 1)
        nthreads = 1;
    if (nthreads > 64)
        nthreads = 64;
    for (int rep = 0; rep < reps; rep++) {
        pthread_t th[64];
        struct peak_arg args[64];
        int started = 0;
        double t0 = now();
        for (int t = 0; t < nthreads; t++) {
            args[t] = (struct peak_arg){.fn = fn, .iters = iters};
            if (t == 0 || pthread_create(&th[t], NULL, peak_thread, &args[t]) == 0)
                started = t + 1;
            else
                break;
        }
        peak_thread(&args[0]);
        double flops = args[0].flops;
        for (int t = 1; t < started; t++) {
            pthread_join(th[t], NULL);
            flops += args[t].flops;
        }
        /* wall time of the whole group: threads that did not overlap do not count twice */
        double g = flops / (now() - t0) * 1e-9;
        best = g > best ? g : best;
    }
    return best;
}

/* iterations of the probe loop that take about `secs` on one thread */
static int64_t
calibrate(peak_fn fn, double secs)
{
    int64_t iters = 1 << 16;
    for (;;) {
        float sink;
        double t0 = now(), t;
        fn(iters, &sink);
        t = now() - t0;
        if (t > 0.02 || iters > (INT64_C(1) << 34))
            return (int64_t)((double)iters * secs / (t > 0 ? t : 1e-9)) + 1;
        iters *= 2;
    }
}

double
bench_peak_gflops(int nthreads, const char **isa)
{
    peak_fn fn = pick(isa);
    return peak_runs(fn, calibrate(fn, 0.1), nthreads, 7);
}

double
bench_peak_now(int nthreads)
{
    static peak_fn fn;
    static int64_t iters;
    const char *isa;
    if (!fn) {
        fn = pick(&isa);
        iters = calibrate(fn, 0.03);
    }
    return peak_runs(fn, iters, nthreads, 3);
}
