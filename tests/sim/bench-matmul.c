/* SPDX-License-Identifier: MIT */
/*
 * bench-matmul.c: simulator speed (suite 'bench', meson benchmark()). Runs the
 * fp16 matmul M=196, K=768, N=768 end to end through the device API on the
 * simulator (one task from the hardware layer's Appendix A.1 builder: the
 * 301 KB input fits 10 data banks, the weights stream through 2) and a plain
 * fp32 sgemm of the same shape in this program, and prints both rates and
 * their ratio, plus the job's modeled NPU time (the timing model in use, v2 by default).
 *
 *   bench-matmul [iterations]
 */
#include <math.h>
#include <time.h>

#include "npu-handprog.h"
#include "npu-test-matmul.h"
#include "npu-test.h"
#include "npu/npu-timing.h"
#include "sim-gemm.h"

#ifdef SIM_HAVE_CBLAS
#include <cblas.h>
#endif

enum {
    BUF_A = NPU_TEST_MM_A,
    BUF_B = NPU_TEST_MM_B,
    BUF_C = NPU_TEST_MM_C,
    N_BUFS = NPU_TEST_MM_NBUF
};

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void
sgemm(int M, int N, int K, const float *a, const float *b, float *c)
{
#ifdef SIM_HAVE_CBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
#else
    sim_sgemm(M, N, K, a, b, c);
#endif
}

int
main(int argc, char **argv)
{
    const uint32_t M = 196, K = 768, N = 768;
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    if (iters < 1)
        iters = 1;
    struct npu_device *dev = NULL;
    CHECK_EQ_INT(NPU_OK, npu_device_open("sim", &dev));
    if (!dev)
        return npu_test_done("bench-matmul");

    struct npu_test_mm mm;
    npu_test_mm_operands(dev, M, K, N, 0, 1, 1000.0f, &mm);
    struct npu_bo *const *buf = mm.bo;
    struct npu_bo *rc, *task;
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 4096, 0, &rc));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 40, NPU_BO_TASKS, &task));

    /* the same fp16 values as fp32, for the sgemm baseline */
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float *c = malloc(sizeof(float) * M * N);
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = npu_fp16_to_fp32(mm.a[i]);
    for (size_t i = 0; i < (size_t)K * N; i++)
        b[i] = npu_fp16_to_fp32(mm.b[i]);

    struct npu_stream s;
    npu_stream_init(&s);
    CHECK_EQ_INT(NPU_OK, npu_test_mm_emit(&s, NPU_REF_MATMUL_FP16_FP32, M, K, N));
    struct npu_regcmd_image img;
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, npu_bo_iova(rc), NPU_SEGMENT_ALIGN, &img));
    uint32_t iova[N_BUFS] = {npu_bo_iova(buf[0]), npu_bo_iova(buf[1]), npu_bo_iova(buf[2])};
    CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, iova, N_BUFS));
    memcpy(npu_bo_map(rc), img.qwords, img.n_qwords * 8);
    CHECK_EQ_INT(NPU_OK, npu_image_fill_rknpu_tasks(&img, npu_bo_map(task), 1));
    npu_image_fini(&img);
    npu_stream_fini(&s);

    struct npu_submit sub = ts_submit(task, 0, 1, 1);
    struct npu_job_result res;
    memset(&res, 0, sizeof(res));
    char msg[512] = "";
    CHECK_EQ_INT(NPU_OK, ts_run(dev, &sub, &res, msg, sizeof(msg))); /* warm-up */
    if (msg[0])
        fprintf(stderr, "%s\n", msg);
    /* Interleaved so that both see the same machine load (the host is
     * shared); the median of each is reported. */
    sgemm(M, N, K, a, b, c); /* warm-up */
    double *ts = malloc(sizeof(double) * iters), *tr = malloc(sizeof(double) * iters);
    for (int i = 0; i < iters; i++) {
        double t0 = now();
        ts_run(dev, &sub, &res, NULL, 0);
        double t1 = now();
        sgemm(M, N, K, a, b, c);
        ts[i] = t1 - t0;
        tr[i] = now() - t1;
    }
    qsort(ts, iters, sizeof(double), cmp_double);
    qsort(tr, iters, sizeof(double), cmp_double);
    double t_sim = ts[iters / 2], t_ref = tr[iters / 2];
    double t_sim_min = ts[0], t_ref_min = tr[0];
    free(ts);
    free(tr);

    /* the simulated result agrees with the baseline within fp32 rounding */
    const uint8_t *out = npu_bo_map(buf[BUF_C]);
    double worst = 0;
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            float v;
            memcpy(&v, out + npu_nc1hwc2_offset(4, n, m, 0, M, 1), 4);
            worst = fmax(worst, fabs(v - c[(size_t)m * N + n]));
        }
    CHECK(worst < 1e-3);

    double flop = 2.0 * M * K * N;
    printf("bench-matmul: fp16 matmul M=%u K=%u N=%u, %d iterations, simulator GEMM %s, "
           "baseline sgemm %s\n",
           M, K, N, iters, sim_sgemm_path_name(sim_sgemm_path(-1)),
           sim_gemm_has_blas() ? "OpenBLAS" : "the simulator's");
    printf("  simulated (device API, A.1 program, host): %8.3f ms  %7.2f GFLOP/s  (best %.3f ms)\n",
           t_sim * 1e3, flop / t_sim * 1e-9, t_sim_min * 1e3);
    printf(
        "  plain fp32 sgemm (host):                    %8.3f ms  %7.2f GFLOP/s  (best %.3f ms)\n",
        t_ref * 1e3, flop / t_ref * 1e-9, t_ref_min * 1e3);
    printf("  ratio simulated / sgemm time (median):      %8.2f x  (best-of: %.2f x)\n",
           t_sim / t_ref, t_sim_min / t_ref_min);
    printf("  NPU time, modeled (%s):        %8.3f ms  (%llu DMA bytes, MAC "
           "utilisation %.1f%%)\n",
           npu_timing_model()->label, res.modeled_s * 1e3, (unsigned long long)res.dma_bytes,
           100 * res.mac_utilisation);
    printf("  max |simulated - sgemm| = %.2e\n", worst);

    free(a);
    free(b);
    free(c);
    npu_test_mm_free(&mm);
    npu_bo_destroy(rc);
    npu_bo_destroy(task);
    npu_device_close(dev);
    return npu_test_done("bench-matmul");
}
