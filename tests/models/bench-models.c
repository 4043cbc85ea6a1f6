/* SPDX-License-Identifier: MIT */
/*
 * bench-models.c: CPU-executor throughput on the transformer shapes OpenNPU
 * is built for, as a share of this machine's measured fp32 peak (suite
 * 'bench', run with `meson test -C build --benchmark --suite bench`).
 *
 *  - peak: bench_peak_gflops() (tests/cpu/bench-peak.c), a register-resident
 *    FMA loop in the widest vectors present, measured in this program for 1
 *    thread and for every online CPU;
 *  - MatMul 196x768x768 (one SigLIP-B/16 projection) through npu_cpu_run;
 *  - the tiny SigLIP test model, and SigLIP-B/16 when built
 *    (`ninja -C build siglip-b16`), through npu-model.h on backend cpu.
 *
 * GFLOP/s count 2 FLOPs per multiply-accumulate of the MatMul/Gemm/Conv work
 * only (LayerNorm, softmax and GELU are left out, so model figures slightly
 * understate the work done). Times are the best of N runs after warm-up.
 * Figures are printed, never asserted.
 *
 * Usage: bench-models TINY_SIGLIP_DIR [SIGLIP_B16_DIR]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-peak.h"
#include "npu/npu-cpu.h"
#include "npu/npu-model.h"
#include "npu/npu-npy.h"

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process: with wall time, how many threads were busy
 * (a BLAS may run threads of its own whatever the context asked for). */
static double
cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Fewer busy threads than one means other processes had the CPU for part
 * of the time: the figures are then lower bounds. */
static const char *
busy_note(double busy)
{
    return busy < 0.8 ? " [CPU shared with other processes]" : "";
}

/* MAC work of the SigLIP vision tower of make-models.py, x2 FLOPs. */
static double
siglip_gflop(int image, int patch, int width, int layers, int mlp)
{
    double t = (double)(image / patch) * (image / patch), d = width, m = mlp;
    double f = t * d * 3.0 * patch * patch;                        /* patch embedding conv */
    f += layers * (4 * t * d * d + 2 * t * t * d + 2 * t * d * m); /* q,k,v,o; QK^T, AV; MLP */
    f += 2 * d * d + 2 * t * d * d + 2 * t * d + 2 * d * m; /* pooling head: q,o; k,v; attn; MLP */
    return 2.0 * f * 1e-9;
}

static void
fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

static void
bench_matmul(int threads, double peak)
{
    const int64_t m = 196, k = 768, n = 768;
    struct npu_tensor a = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {m, k}};
    struct npu_tensor b = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {k, n}};
    struct npu_tensor c = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {m, n}};
    a.data = aligned_alloc(64, (size_t)(m * k) * 4);
    b.data = aligned_alloc(64, (size_t)(k * n) * 4);
    c.data = aligned_alloc(64, (size_t)(m * n) * 4);
    fill(a.data, (size_t)(m * k), 1);
    fill(b.data, (size_t)(k * n), 2);
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(threads);
    const struct npu_tensor *in[2] = {&a, &b};
    struct npu_tensor *out[1] = {&c};
    struct npu_attrs none = {NULL, 0};
    double best = INFINITY, wall = 0, cpu = 0;
    enum npu_status st = NPU_OK;
    for (int r = 0; r < 30 && !st; r++) {
        double t0 = now_s(), c0 = cpu_s();
        st = npu_cpu_run(ctx, NPU_OP_MATMUL, &none, in, 2, out, 1);
        double dt = now_s() - t0;
        if (r >= 3) {
            best = fmin(best, dt);
            wall += dt;
            cpu += cpu_s() - c0;
        }
    }
    double gflop = 2.0 * m * k * n * 1e-9;
    if (st)
        printf("MatMul 196x768x768   %d thread(s): failed: %s\n", threads, npu_status_str(st));
    else
        printf("MatMul 196x768x768   %d thread(s): %8.3f ms  %7.1f GFLOP/s  %5.1f%% of peak"
               "  (busy threads %.1f)%s\n",
               npu_cpu_ctx_threads(ctx), best * 1e3, gflop / best, 100.0 * gflop / best / peak,
               cpu / wall, busy_note(cpu / wall));
    npu_cpu_ctx_destroy(ctx);
    free(a.data);
    free(b.data);
    free(c.data);
}

static void
bench_model(const char *label, const char *dir, int threads, int runs, double gflop, double peak)
{
    char path[1024], in_path[1024];
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    snprintf(in_path, sizeof(in_path), "%s/in.pixel_values.npy", dir);
    struct npu_model_options mo = {.backend = "cpu", .cpu_threads = threads};
    struct npu_model *m = NULL;
    struct npu_session *s = NULL;
    struct npu_tensor in = {0}, out[2];
    double t0 = now_s();
    enum npu_status st = npu_model_load(path, &mo, &m);
    double load = now_s() - t0;
    if (!st)
        st = npu_session_create(m, 0, &s);
    if (!st)
        st = npu_npy_read(in_path, &in);
    double best = INFINITY, sum = 0, cpu = 0;
    int n = 0;
    for (int r = 0; r < runs + 2 && !st; r++) {
        t0 = now_s();
        double c0 = cpu_s();
        st = npu_session_run(s, &in, 1, out, 2, NULL);
        double dt = now_s() - t0;
        if (r >= 2) { /* warm-up: first-touch allocations, caches */
            best = fmin(best, dt);
            sum += dt;
            cpu += cpu_s() - c0;
            n++;
        }
    }
    if (st)
        printf("%-20s %d thread(s): failed: %s\n", label, threads, npu_status_str(st));
    else
        printf("%-20s %d thread(s): %8.3f ms min, %8.3f ms mean  %7.1f GFLOP/s  %5.1f%% of peak"
               "  (busy threads %.1f, %.3f GFLOP, load %.0f ms)%s\n",
               label, threads, best * 1e3, sum / n * 1e3, gflop / best, 100.0 * gflop / best / peak,
               cpu / sum, gflop, load * 1e3, busy_note(cpu / sum));
    npu_npy_free(&in);
    npu_session_destroy(s);
    npu_model_free(m);
}

int
main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s TINY_SIGLIP_DIR [SIGLIP_B16_DIR]\n", argv[0]);
        return 2;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu > 0 ? (int)ncpu : 1;
    /* Best of three: the machine may be shared, and a busy neighbour only
     * ever makes the probe slower. */
    const char *isa = "?";
    double peak1 = 0, peakn = 0;
    for (int i = 0; i < 3; i++) {
        peak1 = fmax(peak1, bench_peak_gflops(1, &isa));
        peakn = fmax(peakn, nt > 1 ? bench_peak_gflops(nt, &isa) : peak1);
    }
    printf("fp32 peak (measured here, %s): %.1f GFLOP/s on 1 thread, %.1f on %d\n", isa, peak1,
           peakn, nt);

    bench_matmul(1, peak1);
    if (nt > 1)
        bench_matmul(nt, peakn);

    /* tests/models/make-models.py SiglipCfg() and SigLIP-B/16. */
    double tiny = siglip_gflop(32, 8, 64, 2, 128), b16 = siglip_gflop(224, 16, 768, 12, 3072);
    bench_model("SigLIP tiny", argv[1], 1, 200, tiny, peak1);
    if (nt > 1)
        bench_model("SigLIP tiny", argv[1], nt, 200, tiny, peakn);
    char b16_model[1100];
    snprintf(b16_model, sizeof(b16_model), "%s/model.onnx", argc > 2 ? argv[2] : "");
    if (argc > 2 && access(b16_model, R_OK) == 0) {
        bench_model("SigLIP-B/16", argv[2], 1, 3, b16, peak1);
        if (nt > 1)
            bench_model("SigLIP-B/16", argv[2], nt, 5, b16, peakn);
    } else {
        printf("SigLIP-B/16: not built (ninja -C build siglip-b16), skipped\n");
    }
    return 0;
}
