/* SPDX-License-Identifier: MIT */
/*
 * npu-selftest: the bring-up checklist of docs/hardware.md, one command per step, on any
 * backend (a board's rknpu or rocket, the kernel double, or the simulator for comparison).
 * Every step builds its program with the hardware layer, runs it through the device API and
 * checks the result against a plain C reference; it prints PASS/FAIL per check and the
 * job time (measured by the driver where it reports one, else modeled, timing model v2 unless
 * NPU_TIMING names another).
 *
 *   npu-selftest [-b BACKEND] [--report FILE] [--lut-quick] STEP...
 *       STEP: info eltwise matmul conv golden multicore chain dma all
 *   npu-selftest -b rknpu golden [--golden DIR] [--big]
 *
 * Steps: info (backends probed, device opened); eltwise (A.2 int8 and fp16 adds, one DPU
 * task each); matmul (A.1 fp16 matmuls, one task each); conv (an fp16 3x3 conv, CNA+CORE+DPU);
 * golden (every mtx-matmul golden stream regenerated at this device's addresses, checked
 * against the captured bytes, run and checked against the reference; --big adds the
 * 128 MB weight one); multicore (three jobs on cores 0/1/2 at once, then one matmul split
 * over three cores in one mask-7 submit); chain (chains of 1 ... 2000 tiny fp16 adds, one
 * submit each, every output checked; least squares gives the per-task and per-submit cost);
 * dma (a 4 MiB-operand fp16 add on each core: bytes moved per second); raw (read-after-write
 * through a chain for DPU->DPU, DPU->PPU and DPU->CNA, one submit each); lut (every LUT
 * configuration the back end emits over all 65,536 fp16 inputs against the simulator;
 * --lut-quick: three of them). --report writes the
 * JSON report of docs/hardware.md ("The bring-up report"): the backend, the device, each
 * step's PASS/FAIL counts and the fitted figures, each measured, modeled or host-timed.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-dpu.h"
#include "npu-golden.h"
#include "npu-handconv.h"
#include "npu-layout.h"
#include "npu-mc-matmul.h"
#include "npu-refprog.h"
#include "npu/npu-evidence.h"
#include "npu/npu-timing.h"

#ifndef NPU_SELFTEST_GOLDEN_DIR
#define NPU_SELFTEST_GOLDEN_DIR "tests/golden/vectors"
#endif

static struct npu_device *dev;
static unsigned n_pass, n_fail;
static const char *golden_dir = NPU_SELFTEST_GOLDEN_DIR;
static bool big;
static const char *report_path;

/* Where a figure's times come from: the driver's measurement of the job, the simulator's
 * timing model, or the host's wall clock from submit to completion (the vendor driver
 * reports no time for a job waited on through its fence, as the rknpu backend does). */
enum time_src { SRC_MEASURED, SRC_MODELED, SRC_HOST };

static const char *const src_names[] = {"measured", "modeled", "host"};

/* What the report of --report holds beyond the PASS/FAIL counts (docs/hardware.md,
 * "The bring-up report"). */
#define MAX_STEPS 16
static struct {
    const char *name;
    unsigned pass, fail;
} step_counts[MAX_STEPS];
static unsigned n_step_counts;
static struct npu_device_info dev_info;
static bool have_chain;
static enum time_src chain_src;
static double fit_task_s, fit_submit_s;
static double chain_task_bytes; /* what one chain task moves (the model's count, else ours) */
static bool have_dma[NPU_SUBCORE_SLOTS];
static enum time_src dma_src[NPU_SUBCORE_SLOTS];
static double dma_bps[NPU_SUBCORE_SLOTS];

static void report(bool ok, const char *fmt, ...) NPU_PRINTF(2, 3);

static void
report(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s  ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok)
        n_pass++;
    else
        n_fail++;
    fflush(stdout);
}

static const char *
time_str(const struct npu_job_result *r, char *buf, size_t n)
{
    if (r->hw_elapsed_s > 0)
        snprintf(buf, n, "%.1f us measured by the driver", r->hw_elapsed_s * 1e6);
    else if (r->timing_valid)
        snprintf(buf, n, "%.1f us modeled (%s)", r->modeled_s * 1e6, npu_timing_model()->label);
    else
        snprintf(buf, n, "%.1f us host wait", r->host_s * 1e6);
    return buf;
}

/* The job's time for the fits, from the best source it has; *src says which. */
static double
job_time(const struct npu_job_result *r, enum time_src *src)
{
    if (r->hw_elapsed_s > 0) {
        *src = SRC_MEASURED;
        return r->hw_elapsed_s;
    }
    if (r->timing_valid) {
        *src = SRC_MODELED;
        return r->modeled_s;
    }
    *src = SRC_HOST;
    return r->host_s;
}

static const char *
time_kind(enum time_src src)
{
    static char buf[400];
    if (src == SRC_MEASURED)
        return "measured by the driver";
    if (src == SRC_HOST)
        return "host wall time, submit to completion";
    snprintf(buf, sizeof(buf), "modeled (%s)", npu_timing_model()->label);
    return buf;
}

/* Lays out a stream at a new regcmd BO, relocates it against bufs, fills descriptors, runs
 * it as one chain on `mask` (0 auto) and waits. */
static enum npu_status
run_stream_on(struct npu_device *dev, struct npu_stream *s, struct npu_bo *const *bufs,
              unsigned n_bufs, struct npu_job_result *res)
{
    enum npu_status st = npu_stream_status(s);
    if (st != NPU_OK) {
        snprintf(res->message, sizeof(res->message), "stream: %s", npu_stream_error(s));
        return st;
    }
    struct npu_bo *rc = NULL, *task = NULL;
    struct npu_regcmd_image img;
    memset(&img, 0, sizeof(img));
    /* every task's body and tail, each segment padded to its alignment (a LUT upload's
     * body alone is over a thousand qwords) */
    size_t rc_bytes = 4096;
    for (uint32_t i = 0; i < s->n_tasks; i++)
        rc_bytes += ((size_t)s->tasks[i].n_body + 8) * 8 + NPU_SEGMENT_ALIGN;
    st = npu_bo_create(dev, rc_bytes, 0, &rc);
    if (st == NPU_OK)
        st = npu_bo_create(dev, 40 * (size_t)s->n_tasks, NPU_BO_TASKS, &task);

    if (st == NPU_OK)
        st = npu_stream_layout(s, npu_bo_iova(rc), NPU_SEGMENT_ALIGN, &img);
    if (st == NPU_OK && img.n_tasks > 1)
        st = npu_image_chain(&img, 0, img.n_tasks, 1);
    uint32_t iova[8] = {0};
    for (unsigned i = 0; i < n_bufs && i < 8; i++)
        iova[i] = npu_bo_iova(bufs[i]);
    if (st == NPU_OK)
        st = npu_image_relocate(&img, iova, n_bufs);
    if (st == NPU_OK && (size_t)img.n_qwords * 8 > rc_bytes) {
        snprintf(res->message, sizeof(res->message), "regcmd image of %u qwords over its BO",
                 (unsigned)img.n_qwords);
        st = NPU_ERR_INVALID;
    }
    if (st == NPU_OK) {
        memcpy(npu_bo_map(rc), img.qwords, img.n_qwords * 8);
        st = npu_image_fill_rknpu_tasks(&img, npu_bo_map(task), img.n_tasks);
    }
    if (st == NPU_OK) {
        struct npu_submit sub = ts_submit(task, 0, img.n_tasks, 0);
        st = ts_run(dev, &sub, res, res->message, sizeof(res->message));
    }
    npu_image_fini(&img);
    npu_bo_destroy(rc);
    npu_bo_destroy(task);
    return st;
}

static enum npu_status
run_stream(struct npu_stream *s, struct npu_bo *const *bufs, unsigned n_bufs,
           struct npu_job_result *res)
{
    return run_stream_on(dev, s, bufs, n_bufs, res);
}

/* ------------------------------------------------------------------ steps */

static void
step_info(void)
{
    struct npu_device_info info;
    npu_device_get_info(dev, &info);
    printf("device: %s: %s\n", info.backend, info.description);
    printf("        hardware %s; driver %s\n", info.hw_version_str, info.drv_version_str);
    report(info.n_cores == 3, "the device has %u cores (RK3588: 3)", info.n_cores);
}

static void
step_eltwise(void)
{
    static const struct {
        enum npu_precision prec;
        const char *name;
    } cases[] = {{NPU_PRECISION_INT8, "int8"}, {NPU_PRECISION_FP16, "fp16"}};
    for (size_t ci = 0; ci < NPU_ARRAY_SIZE(cases); ci++) {
        const uint32_t W = 64, C = 64;
        unsigned es = cases[ci].prec == NPU_PRECISION_INT8 ? 1 : 2;
        size_t bytes = npu_nc1hwc2_bytes(es, C, 1, W);
        struct npu_bo *b[3] = {0};
        for (int i = 0; i < 3; i++)
            npu_bo_create(dev, bytes, 0, &b[i]);
        uint32_t seed = 3 + (uint32_t)ci;
        uint8_t *x = npu_bo_map(b[0]), *y = npu_bo_map(b[1]);
        for (size_t i = 0; i < bytes / es; i++) {
            if (es == 1) {
                x[i] = (uint8_t)trand(&seed);
                y[i] = (uint8_t)trand(&seed);
            } else {
                uint16_t hx = npu_fp32_to_fp16(((int)(trand(&seed) % 2001) - 1000) / 100.0f);
                uint16_t hy = npu_fp32_to_fp16(((int)(trand(&seed) % 2001) - 1000) / 100.0f);
                memcpy(x + 2 * i, &hx, 2);
                memcpy(y + 2 * i, &hy, 2);
            }
        }
        struct npu_stream s;
        npu_stream_init(&s);
        struct npu_ref_eltwise p = {.op = NPU_REF_EW_ADD,
                                    .precision = cases[ci].prec,
                                    .w = W,
                                    .c = C,
                                    .fp32_internal = -1,
                                    .x = {0, 0},
                                    .y = {1, 0},
                                    .z = {2, 0}};
        npu_ref_eltwise_emit(&s, &p);
        struct npu_job_result r;
        memset(&r, 0, sizeof(r));
        enum npu_status st = run_stream(&s, b, 3, &r);
        npu_stream_fini(&s);
        unsigned bad = 0;
        const uint8_t *z = npu_bo_map(b[2]);
        for (size_t i = 0; st == NPU_OK && i < bytes / es; i++) {
            if (es == 1) {
                int v = (int8_t)x[i] + (int8_t)y[i];
                v = v > 127 ? 127 : v < -128 ? -128 : v;
                bad += (int8_t)z[i] != v;
            } else {
                uint16_t hx, hy, hz;
                memcpy(&hx, x + 2 * i, 2);
                memcpy(&hy, y + 2 * i, 2);
                memcpy(&hz, z + 2 * i, 2);
                float ref = npu_fp16_to_fp32(hx) + npu_fp16_to_fp32(hy);
                bad += fabsf(npu_fp16_to_fp32(hz) - ref) > 1e-3f * fabsf(ref) + 1e-3f;
            }
        }
        char tb[512];
        report(st == NPU_OK && !bad, "eltwise %s add %ux%u: %s%s%u wrong (%s)", cases[ci].name, W,
               C, st == NPU_OK ? "" : r.message, st == NPU_OK ? "" : "; ", bad,
               time_str(&r, tb, sizeof(tb)));
        for (int i = 0; i < 3; i++)
            npu_bo_destroy(b[i]);
    }
}

/* Runs the fp16 matmul (kind) M x K x N as one task (or as the multi-core plan when plan is
 * given); returns the worst error in units of the fp32 summation bound. */
static double
matmul(enum npu_ref_matmul_kind kind, uint32_t M, uint32_t K, uint32_t N, struct npu_mc_plan *plan,
       struct npu_job_result *r, enum npu_status *st_out, const struct npu_golden *golden)
{
    bool int8 = kind == NPU_REF_MATMUL_INT8_INT32;
    size_t es = int8 ? 1 : 2, os = kind == NPU_REF_MATMUL_FP16_FP16 ? 2 : 4;
    struct npu_weight_layout wl;
    npu_weight_layout_init(&wl, es, N, K, 1, 1, false);
    size_t a_bytes = npu_nc1hwc2_bytes(es, K, M, 1), c_bytes = npu_nc1hwc2_bytes(os, N, M, 1);
    struct npu_bo *b[3] = {0};
    enum npu_status st = npu_bo_create(dev, a_bytes, 0, &b[0]);
    if (st == NPU_OK)
        st = npu_bo_create(dev, wl.total_bytes, 0, &b[1]);
    if (st == NPU_OK)
        st = npu_bo_create(dev, c_bytes, 0, &b[2]);
    double worst = INFINITY;
    void *a = malloc(es * M * K), *bm = malloc(es * (size_t)K * N), *at = malloc(es * M * K);
    void *c = malloc(os * (size_t)M * N);
    if (st != NPU_OK || !a || !bm || !at || !c) {
        snprintf(r->message, sizeof(r->message), "out of memory for buffers");
        st = st == NPU_OK ? NPU_ERR_NOMEM : st;
        goto out;
    }
    uint32_t seed = M * 7 + K + N;
    for (size_t i = 0; i < (size_t)M * K + (size_t)K * N; i++) {
        void *dst = i < (size_t)M * K ? a : bm;
        size_t j = i < (size_t)M * K ? i : i - (size_t)M * K;
        if (int8)
            ((int8_t *)dst)[j] = (int8_t)trand(&seed);
        else
            ((uint16_t *)dst)[j] = npu_fp32_to_fp16(((int)(trand(&seed) % 2001) - 1000) / 700.0f);
    }
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t k = 0; k < K; k++)
            memcpy((uint8_t *)at + es * ((size_t)k * M + m),
                   (uint8_t *)a + es * ((size_t)m * K + k), es);
    npu_nchw_to_nc1hwc2(npu_bo_map(b[0]), a_bytes, at, es, 1, K, M, 1, 0);
    npu_weight_pack_matmul(&wl, npu_bo_map(b[1]), wl.total_bytes, bm, 0);

    struct npu_stream s;
    npu_stream_init(&s);
    if (plan) {
        npu_mc_emit_matmul(plan, &s, (struct npu_ref_buf){0, 0}, (struct npu_ref_buf){1, 0},
                           (struct npu_ref_buf){2, 0}, NULL, NULL);
        struct npu_bo *rc = NULL, *task = NULL;
        struct npu_regcmd_image img;
        st = npu_bo_create(dev, (size_t)s.n_tasks * 2048 + 4096, 0, &rc);
        if (st == NPU_OK)
            st = npu_bo_create(dev, 40 * (size_t)s.n_tasks, NPU_BO_TASKS, &task);
        if (st == NPU_OK)
            st = npu_stream_layout(&s, npu_bo_iova(rc), NPU_SEGMENT_ALIGN, &img);
        if (st == NPU_OK) {
            struct npu_submit sub = ts_submit(task, 0, 1, 0);
            uint32_t iova[3] = {npu_bo_iova(b[0]), npu_bo_iova(b[1]), npu_bo_iova(b[2])};
            st = npu_mc_finish(plan, &img, &sub);
            if (st == NPU_OK)
                st = npu_image_relocate(&img, iova, 3);
            if (st == NPU_OK) {
                memcpy(npu_bo_map(rc), img.qwords, img.n_qwords * 8);
                st = npu_image_fill_rknpu_tasks(&img, npu_bo_map(task), img.n_tasks);
            }
            if (st == NPU_OK)
                st = ts_run(dev, &sub, r, r->message, sizeof(r->message));
            npu_image_fini(&img);
        }
        npu_bo_destroy(rc);
        npu_bo_destroy(task);
    } else {
        struct npu_ref_matmul p = {.kind = kind,
                                   .m = M,
                                   .k = K,
                                   .n = N,
                                   .input = {0, 0},
                                   .weight = {1, 0},
                                   .output = {2, 0}};
        npu_ref_matmul_emit(&s, &p);
        if (golden && npu_stream_status(&s) == NPU_OK) {
            /* The captured stream, addresses aside, must be what we are about to run. */
            struct npu_regcmd_image img;
            if (npu_stream_layout(&s, 0x1000, NPU_SEGMENT_ALIGN, &img) == NPU_OK) {
                const struct npu_golden_task *gt = &golden->tasks[0];
                uint32_t n = img.tasks[0].n_body + NPU_TASK_TAIL_QWORDS, diff = 0;
                for (uint32_t i = 0; i < n && i < gt->n_q; i++)
                    if (!(gt->q[i].flags & NPU_GQ_RELOC) &&
                        gt->q[i].q != img.qwords[img.tasks[0].start + i])
                        diff++;
                report(gt->n_q == n && diff == 0,
                       "  regcmd identical to the captured stream, addresses aside (%u qwords, "
                       "%u differ)",
                       n, diff);
                npu_image_fini(&img);
            }
        }
        st = run_stream(&s, b, 3, r);
    }
    npu_stream_fini(&s);
    if (st != NPU_OK)
        goto out;
    npu_nc1hwc2_to_nchw(c, os * (size_t)M * N, npu_bo_map(b[2]), c_bytes, os, 1, N, M, 1);
    worst = 0;
    for (uint32_t m = 0; m < M; m++) {
        for (uint32_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (uint32_t k = 0; k < K; k++) {
                double t = int8 ? (double)((int8_t *)a)[(size_t)m * K + k] *
                                      ((int8_t *)bm)[(size_t)k * N + n]
                                : (double)npu_fp16_to_fp32(((uint16_t *)a)[(size_t)m * K + k]) *
                                      npu_fp16_to_fp32(((uint16_t *)bm)[(size_t)k * N + n]);
                ref += t;
                mag += fabs(t);
            }
            size_t idx = (size_t)n * M + m;
            double got = os == 4 ? (int8 ? (double)((int32_t *)c)[idx] : ((float *)c)[idx])
                                 : npu_fp16_to_fp32(((uint16_t *)c)[idx]);
            /* fp32 sums: within K roundings (1e-6 relative); fp16 out: half an fp16 ulp more */
            double tol = int8 ? 0.5 : mag * 1e-6 + (os == 2 ? fabs(ref) * 1e-3 : 0) + 1e-30;
            worst = fmax(worst, fabs(got - ref) / tol);
        }
    }
out:
    *st_out = st;
    free(a);
    free(bm);
    free(at);
    free(c);
    for (int i = 0; i < 3; i++)
        npu_bo_destroy(b[i]);
    return worst;
}

static void
matmul_case(enum npu_ref_matmul_kind kind, uint32_t M, uint32_t K, uint32_t N, const char *label,
            const struct npu_golden *g)
{
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    enum npu_status st;
    double worst = matmul(kind, M, K, N, NULL, &r, &st, g);
    double bound = kind == NPU_REF_MATMUL_INT8_INT32 ? 1 : K;
    char tb[512];
    report(st == NPU_OK && worst <= bound, "%s %ux%ux%u: %s%s (%s)", label, M, K, N,
           st == NPU_OK ? "worst error within bound" : npu_status_str(st),
           st == NPU_OK ? "" : r.message, time_str(&r, tb, sizeof(tb)));
}

static void
step_matmul(void)
{
    matmul_case(NPU_REF_MATMUL_FP16_FP32, 4, 32, 16, "matmul fp16->fp32", NULL);
    matmul_case(NPU_REF_MATMUL_FP16_FP32, 64, 64, 64, "matmul fp16->fp32", NULL);
    matmul_case(NPU_REF_MATMUL_FP16_FP16, 64, 256, 128, "matmul fp16->fp16", NULL);
    matmul_case(NPU_REF_MATMUL_INT8_INT32, 64, 256, 128, "matmul int8->int32", NULL);
}

static void
step_conv(void)
{
    struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                      .out_prec = NPU_PRECISION_FP16,
                      .C = 16,
                      .H = 9,
                      .W = 9,
                      .K = 24,
                      .kh = 3,
                      .kw = 3,
                      .sx = 2,
                      .sy = 2,
                      .pad_t = 1,
                      .pad_l = 1,
                      .out_h = 5,
                      .out_w = 5};
    struct npu_bo *in = NULL, *wt = NULL, *out = NULL, *rc = NULL, *task = NULL;
    npu_bo_create(dev, tc_in_bytes(&t), 0, &in);
    npu_bo_create(dev, tc_w_bytes(&t), 0, &wt);
    npu_bo_create(dev, tc_out_bytes(&t), 0, &out);
    npu_bo_create(dev, 16384, 0, &rc);
    npu_bo_create(dev, 40, NPU_BO_TASKS, &task);
    if (!in || !wt || !out || !rc || !task) {
        report(false, "conv: cannot create buffers");
        goto out;
    }
    t.in = npu_bo_iova(in);
    t.wt = npu_bo_iova(wt);
    t.out = npu_bo_iova(out);
    uint32_t seed = 4242;
    size_t n_in = (size_t)t.C * t.H * t.W, n_w = (size_t)t.K * t.C * 9;
    double *x = malloc(n_in * sizeof(double)), *w = malloc(n_w * sizeof(double));
    for (size_t i = 0; i < n_in; i++)
        x[i] = (int)(trand(&seed) % 7) - 3;
    for (size_t i = 0; i < n_w; i++)
        w[i] = (int)(trand(&seed) % 5) - 2;
    tc_store(&t, npu_bo_map(in), npu_bo_map(wt), x, w);
    struct tprog p = {.n = 0};
    tc_body(&p, &t);
    uint32_t en = NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU;
    tp_tail(&p, 0, 0, en);
    uint32_t body = tp_store(rc, 0, &p);
    td_set(task, 0, en, body, npu_bo_iova(rc));
    struct npu_submit s = ts_submit(task, 0, 1, 0);
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    enum npu_status st = ts_run(dev, &s, &r, r.message, sizeof(r.message));
    unsigned bad = 0;
    for (uint32_t k = 0; st == NPU_OK && k < t.K; k++)
        for (uint32_t y = 0; y < t.out_h; y++)
            for (uint32_t xx = 0; xx < t.out_w; xx++) {
                uint16_t h;
                memcpy(&h, (uint8_t *)npu_bo_map(out) + tc_out_off(&t, k, y, xx), 2);
                bad += h != npu_fp32_to_fp16((float)tc_ref(&t, x, w, k, y, xx));
            }
    char tb[512];
    report(
        st == NPU_OK && !bad, "conv fp16 3x3 stride 2 pad 1, 16x9x9 -> 24x5x5: %s%s%u wrong (%s)",
        st == NPU_OK ? "" : r.message, st == NPU_OK ? "" : "; ", bad, time_str(&r, tb, sizeof(tb)));
    free(x);
    free(w);
out:
    npu_bo_destroy(in);
    npu_bo_destroy(wt);
    npu_bo_destroy(out);
    npu_bo_destroy(rc);
    npu_bo_destroy(task);
}

static int
cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
step_golden(void)
{
    DIR *d = opendir(golden_dir);
    if (!d) {
        report(false, "golden: cannot read %s (use --golden DIR)", golden_dir);
        return;
    }
    char *names[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (!strncmp(e->d_name, "mtx-matmul-", 11) && strstr(e->d_name, ".regcmd"))
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n; i++) {
        char in[8], outp[8];
        unsigned m, k, nn;
        if (sscanf(names[i], "mtx-matmul-%7[a-z0-9]-%7[a-z0-9]-m%uk%un%u.regcmd", in, outp, &m, &k,
                   &nn) != 5)
            continue;
        enum npu_ref_matmul_kind kind = !strcmp(in, "int8")     ? NPU_REF_MATMUL_INT8_INT32
                                        : !strcmp(outp, "fp16") ? NPU_REF_MATMUL_FP16_FP16
                                                                : NPU_REF_MATMUL_FP16_FP32;
        if ((uint64_t)k * nn > 32u * 1024 * 1024 && !big) {
            printf("skip  %s (%.0f MB of weights; --big runs it)\n", names[i],
                   (double)k * nn * (kind == NPU_REF_MATMUL_INT8_INT32 ? 1 : 2) / 1e6);
            free(names[i]);
            continue;
        }
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", golden_dir, names[i]);
        struct npu_golden g;
        memset(&g, 0, sizeof(g));
        bool have = npu_golden_load(path, &g) == NPU_OK && g.n_tasks == 1;
        printf("      %s\n", names[i]);
        matmul_case(kind, m, k, nn, "  golden matmul", have ? &g : NULL);
        if (have)
            npu_golden_free(&g);
        free(names[i]);
    }
}

static void
step_multicore(void)
{
    /* three independent DPU jobs on cores 0, 1, 2 at once */
    struct npu_bo *b[3][4];
    struct npu_job *job[3] = {0};
    const uint32_t W = 256;
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 4; j++)
            npu_bo_create(dev, j == 3 ? 40 : (j == 0 ? 4096 : W * 16), j == 3 ? NPU_BO_TASKS : 0,
                          &b[i][j]);
        uint32_t seed = 9 + i;
        int8_t *x = npu_bo_map(b[i][1]);
        for (uint32_t k = 0; k < W * 16; k++)
            x[k] = (int8_t)trand(&seed);
        struct tprog p = {.n = 0};
        struct fly f = {.prec = NPU_PRECISION_INT8,
                        .W = W,
                        .H = 1,
                        .C = 16,
                        .x = npu_bo_iova(b[i][1]),
                        .y = npu_bo_iova(b[i][1]),
                        .z = npu_bo_iova(b[i][2])};
        f.ew_cfg = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_8BIT) |
                   DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) | DPU_EW_CFG_EW_RELU_BYPASS(1) |
                   DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_SRC(1);
        tp_fly(&p, &f);
        tp_tail(&p, 0, 0, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA);
        uint32_t body = tp_store(b[i][0], 0, &p);
        td_set(b[i][3], 0, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA, body, npu_bo_iova(b[i][0]));
        struct npu_submit s = ts_submit(b[i][3], 0, 1, 1u << i);
        ok &= npu_job_submit(dev, &s, &job[i]) == NPU_OK;
    }
    unsigned mask = 0;
    for (int i = 0; i < 3; i++) {
        struct npu_job_result r;
        memset(&r, 0, sizeof(r));
        if (job[i]) {
            ok &= npu_job_wait(job[i], -1, &r) == NPU_OK;
            mask |= r.core_mask;
            npu_job_destroy(job[i]);
        }
        const int8_t *x = npu_bo_map(b[i][1]), *z = npu_bo_map(b[i][2]);
        for (uint32_t k = 0; k < W * 16; k++) {
            int v = 2 * x[k];
            ok &= z[k] == (v > 127 ? 127 : v < -128 ? -128 : v);
        }
        for (int j = 0; j < 4; j++)
            npu_bo_destroy(b[i][j]);
    }
    report(ok, "three jobs submitted at once with core masks 1, 2, 4 (cores reported: 0x%x)", mask);

    struct npu_mc_plan p3;
    npu_mc_plan_matmul_cores(200, 768, 768, NPU_REF_MATMUL_FP16_FP32, 3, &p3);
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    enum npu_status st;
    double worst = matmul(NPU_REF_MATMUL_FP16_FP32, 200, 768, 768, &p3, &r, &st, NULL);
    char tb[512];
    report(st == NPU_OK && worst <= 768,
           "matmul 200x768x768 split by N over 3 cores, one mask-7 submit (subcore_task[2..4]): "
           "%s (%s; planned %.1f us vs %.1f us on one core, modeled, %s)",
           st == NPU_OK ? "within bound" : r.message, time_str(&r, tb, sizeof(tb)), p3.est_s * 1e6,
           p3.est_single_s * 1e6, npu_timing_model()->label);
}

/* Fills n fp16 values of x and y with small numbers whose sums fp16 holds exactly. */
static void
fill_fp16(uint16_t *x, uint16_t *y, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = npu_fp32_to_fp16(((int)(trand(&seed) % 201) - 100) / 4.0f);
        y[i] = npu_fp32_to_fp16(((int)(trand(&seed) % 201) - 100) / 4.0f);
    }
}

/* Counts the elements of z that are not x + y (exact: quarters below 50 add exactly). */
static size_t
count_wrong_fp16(const uint16_t *x, const uint16_t *y, const uint16_t *z, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += npu_fp16_to_fp32(z[i]) != npu_fp16_to_fp32(x[i]) + npu_fp16_to_fp32(y[i]);
    return bad;
}

/* Per-task and per-submit cost: chains of 1, 2, 4, ... 1024 and 2000 identical tiny fp16
 * adds (the eltwise step's task at 8 pixels x 8 channels, so that a task's data takes a few
 * ns and its time is the task overhead), chained through the PC by npu_image_chain(), each
 * chain one submit. Least squares of time = submit + n * task over the chains. */
#define CHAIN_RUNS 3

static void
step_chain(void)
{
    static const unsigned lens[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2000};
    const uint32_t W = 8, C = 8;
    size_t bytes = npu_nc1hwc2_bytes(2, C, 1, W);
    struct npu_bo *b[3] = {0};
    for (int i = 0; i < 3; i++)
        if (npu_bo_create(dev, bytes, 0, &b[i]) != NPU_OK) {
            report(false, "chain: cannot create buffers");
            goto out;
        }
    uint16_t *x = npu_bo_map(b[0]), *y = npu_bo_map(b[1]), *z = npu_bo_map(b[2]);
    fill_fp16(x, y, bytes / 2, 77);
    double sn = 0, st_ = 0, snn = 0, snt = 0;
    unsigned n_pts = 0;
    enum time_src src = SRC_MODELED;
    bool mixed = false;
    for (size_t li = 0; li < NPU_ARRAY_SIZE(lens); li++) {
        unsigned n = lens[li];
        struct npu_stream s;
        npu_stream_init(&s);
        struct npu_ref_eltwise p = {.op = NPU_REF_EW_ADD,
                                    .precision = NPU_PRECISION_FP16,
                                    .w = W,
                                    .c = C,
                                    .fp32_internal = -1,
                                    .x = {0, 0},
                                    .y = {1, 0},
                                    .z = {2, 0}};
        for (unsigned t = 0; t < n; t++)
            npu_ref_eltwise_emit(&s, &p);
        /* The fastest of a few runs: a wall clock is disturbed only upwards. */
        enum npu_status st = NPU_OK;
        struct npu_job_result r;
        size_t bad = 0;
        double t = 0;
        enum time_src m = SRC_MODELED;
        for (unsigned rep = 0; rep < CHAIN_RUNS && st == NPU_OK; rep++) {
            memset(z, 0, bytes);
            memset(&r, 0, sizeof(r));
            st = run_stream(&s, b, 3, &r);
            bad += st == NPU_OK ? count_wrong_fp16(x, y, z, bytes / 2) : 0;
            double ti = st == NPU_OK ? job_time(&r, &m) : 0;
            t = rep == 0 || ti < t ? ti : t;
        }
        npu_stream_fini(&s);
        if (st == NPU_OK && n == 1)
            chain_task_bytes =
                r.timing_valid && r.dma_bytes ? (double)r.dma_bytes : 3.0 * (double)bytes;
        if (st == NPU_OK && t > 0) {
            if (n_pts && m != src)
                mixed = true;
            src = m;
            sn += n;
            st_ += t;
            snn += (double)n * n;
            snt += n * t;
            n_pts++;
        }
        report(st == NPU_OK && !bad && t > 0,
               "chain of %u fp16 add tasks, one submit, %u runs: %s%s%zu wrong (fastest %.1f us "
               "%s)",
               n, CHAIN_RUNS, st == NPU_OK ? "" : r.message, st == NPU_OK ? "" : "; ", bad, t * 1e6,
               time_kind(m));
    }
    double den = n_pts * snn - sn * sn;
    if (n_pts < 2 || den <= 0 || mixed) {
        report(false, "chain: no fit (%u timed chains%s)", n_pts,
               mixed ? ", their times from different sources" : "");
        goto out;
    }
    fit_task_s = (n_pts * snt - sn * st_) / den;
    fit_submit_s = (st_ - fit_task_s * sn) / n_pts;
    chain_src = src;
    have_chain = true;
    printf("      fit time = submit_overhead + n x task_cost over %u chains (%s):\n", n_pts,
           time_kind(src));
    printf("      task_cost %.3f us, submit_overhead %.3f us\n", fit_task_s * 1e6,
           fit_submit_s * 1e6);
    /* A host-timed intercept is the host's submit path plus noise, not a hardware figure:
     * only its slope must be positive (docs/hardware.md, "The bring-up report"). */
    report(fit_task_s > 0 && (fit_submit_s > 0 || src == SRC_HOST),
           "chain: fitted task cost positive%s",
           src == SRC_HOST ? " (host wall time: the submit overhead is not checked)"
                           : ", submit overhead positive");
out:
    for (int i = 0; i < 3; i++)
        npu_bo_destroy(b[i]);
}

/* Per-core DMA bandwidth: one large fp16 add (two 4 MiB operands in, one out, a DPU
 * flying-mode task, facts A.2) per core, bytes moved over the task's share of the job time
 * (the job time less the chain step's fitted submit and task overheads when it ran). */
static void
step_dma(void)
{
    const uint32_t W = 256, H = 256, C = 32;
    size_t bytes = npu_nc1hwc2_bytes(2, C, H, W);
    unsigned cores = dev_info.n_cores < NPU_SUBCORE_SLOTS ? dev_info.n_cores : NPU_SUBCORE_SLOTS;
    struct npu_bo *b[5] = {0};
    for (int i = 0; i < 5; i++)
        if (npu_bo_create(dev,
                          i == 3   ? 4096
                          : i == 4 ? 40
                                   : bytes,
                          i == 4 ? NPU_BO_TASKS : 0, &b[i]) != NPU_OK) {
            report(false, "dma: cannot create buffers");
            goto out;
        }
    uint16_t *x = npu_bo_map(b[0]), *y = npu_bo_map(b[1]), *z = npu_bo_map(b[2]);
    fill_fp16(x, y, bytes / 2, 91);
    uint32_t en = NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA;
    struct tprog p = {.n = 0};
    struct fly f = {.prec = NPU_PRECISION_FP16,
                    .W = W,
                    .H = H,
                    .C = C,
                    .x = npu_bo_iova(b[0]),
                    .y = npu_bo_iova(b[1]),
                    .z = npu_bo_iova(b[2])};
    f.ew_cfg = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) |
               DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) | DPU_EW_CFG_EW_RELU_BYPASS(1) |
               DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_SRC(1);
    tp_fly(&p, &f);
    tp_tail(&p, 0, 0, en);
    uint32_t body = tp_store(b[3], 0, &p);
    td_set(b[4], 0, en, body, npu_bo_iova(b[3]));
    double moved = 3.0 * (double)bytes;
    for (unsigned core = 0; core < cores; core++) {
        memset(z, 0, bytes);
        struct npu_submit s = ts_submit(b[4], 0, 1, 1u << core);
        struct npu_job_result r;
        memset(&r, 0, sizeof(r));
        enum npu_status st = ts_run(dev, &s, &r, r.message, sizeof(r.message));
        size_t bad = st == NPU_OK ? count_wrong_fp16(x, y, z, bytes / 2) : 0;
        enum time_src m = SRC_MODELED;
        double t = st == NPU_OK ? job_time(&r, &m) : 0;
        double fixed = have_chain && chain_src == m ? fit_submit_s + fit_task_s : 0;
        double bps = t - fixed > 0 ? moved / (t - fixed) : 0;
        if (st == NPU_OK && !bad && bps > 0) {
            have_dma[core] = true;
            dma_src[core] = m;
            dma_bps[core] = bps;
        }
        report(st == NPU_OK && !bad && bps > 0,
               "dma core %u: fp16 add %ux%ux%u, %.1f MB moved in %.1f us%s: %.2f GB/s (%s)%s%s",
               core, W, H, C, moved / 1e6, t * 1e6, fixed > 0 ? " less the fitted overheads" : "",
               bps / 1e9, time_kind(m), st == NPU_OK ? "" : "; ", st == NPU_OK ? "" : r.message);
        if (bad)
            printf("      %zu of %zu outputs wrong\n", bad, bytes / 2);
    }
out:
    for (int i = 0; i < 5; i++)
        npu_bo_destroy(b[i]);
}

/* ---------------------------------------------------------------------- raw */

static void confirm(const char *name);

/* fp16 element (c, p) of a [ceil(C/8)][W][8] tensor (the eltwise layout; with W = M pixels
 * also the A.1 matmul's input layout W 1, H M, C K). */
static inline size_t
ew_idx(uint32_t c, uint32_t p, uint32_t w)
{
    return ((size_t)(c / 8) * w + p) * 8 + c % 8;
}

/* Read-after-write through a chain, one submit per block pair, every task reading what the
 * task before it wrote: DPU -> DPU (16 dependent fp16 adds, z = z + y, ping-ponging two
 * buffers), DPU -> PPU (an add, a 2x2 max pooling of its output, then an add of the pooled
 * map: PPU -> DPU too, and the chain ends in a DPU task as rocket needs), DPU -> CNA (an add,
 * then an fp16 matmul whose A is that output). Values are small quarters and integers, so
 * every result is exact and compared for equality with the C reference. */
static void
step_raw(void)
{
    const uint32_t C = 32, W = 16; /* DPU->DPU / DPU->CNA: 16 pixels (M) x 32 channels (K) */
    const uint32_t N = 16;
    size_t tb = npu_nc1hwc2_bytes(2, C, 1, W);
    struct npu_weight_layout wl;
    npu_weight_layout_init(&wl, 2, N, C, 1, 1, false);
    size_t ob = npu_nc1hwc2_bytes(4, N, W, 1);
    struct npu_bo *b[6] = {0};
    size_t sizes[6] = {tb, tb, tb, tb, wl.total_bytes, ob + tb};
    for (int i = 0; i < 6; i++)
        if (npu_bo_create(dev, sizes[i], 0, &b[i]) != NPU_OK) {
            report(false, "raw: cannot create buffers");
            goto out;
        }
    uint16_t *x = npu_bo_map(b[0]), *y = npu_bo_map(b[1]);
    uint16_t *z[2] = {npu_bo_map(b[2]), npu_bo_map(b[3])};
    for (size_t i = 0; i < tb / 2; i++) {
        x[i] = npu_fp32_to_fp16((float)((int)(i * 37 % 64) - 32) / 4.0f);
        y[i] = npu_fp32_to_fp16((float)((int)(i * 11 % 8) - 4) / 4.0f);
    }

    /* DPU -> DPU */
    struct npu_stream s;
    npu_stream_init(&s);
    const unsigned n_dd = 16;
    for (unsigned t = 0; t < n_dd; t++) {
        struct npu_ref_eltwise p = {.op = NPU_REF_EW_ADD,
                                    .precision = NPU_PRECISION_FP16,
                                    .w = W,
                                    .c = C,
                                    .fp32_internal = -1,
                                    .x = {t ? 2 + (t - 1) % 2 : 0, 0},
                                    .y = {1, 0},
                                    .z = {2 + t % 2, 0}};
        npu_ref_eltwise_emit(&s, &p);
    }
    memset(z[0], 0, tb);
    memset(z[1], 0, tb);
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    enum npu_status st = run_stream(&s, b, 4, &r);
    npu_stream_fini(&s);
    size_t bad = 0;
    const uint16_t *last = z[(n_dd - 1) % 2];
    for (size_t i = 0; st == NPU_OK && i < tb / 2; i++)
        bad += npu_fp16_to_fp32(last[i]) !=
               npu_fp16_to_fp32(x[i]) + (float)n_dd * npu_fp16_to_fp32(y[i]);
    char tbuf[512];
    bool on_sim = !strcmp(dev_info.backend, "sim");
    if (st == NPU_OK && !bad && !on_sim)
        confirm("raw:DPU->DPU");
    report(st == NPU_OK && !bad,
           "raw DPU->DPU: %u chained fp16 adds, each reading the last one's output: %zu of %zu "
           "wrong%s%s (%s)",
           n_dd, bad, tb / 2, st ? "; " : "",
           st ? (r.message[0] ? r.message : npu_status_str(st)) : "", time_str(&r, tbuf, 512));

    /* DPU -> PPU: z = x + y as a packed 8-channel map 4 x 8 (32 pixels), then 2x2/2 max */
    npu_stream_init(&s);
    {
        struct npu_ref_eltwise p = {.op = NPU_REF_EW_ADD,
                                    .precision = NPU_PRECISION_FP16,
                                    .w = 32,
                                    .c = 8,
                                    .fp32_internal = -1,
                                    .x = {0, 0},
                                    .y = {1, 0},
                                    .z = {2, 0}};
        npu_ref_eltwise_emit(&s, &p);
        struct npu_dpu_pool pool = {.op = NPU_DPU_POOL_MAX, .kh = 2, .kw = 2, .sy = 2, .sx = 2};
        pool.in = npu_dpu_map_packed((struct npu_dpu_ref){2, 0}, NPU_DPU_FP16, 8, 4, 8);
        pool.out = npu_dpu_map_packed((struct npu_dpu_ref){3, 0}, NPU_DPU_FP16, 8, 2, 4);
        npu_dpu_emit_pool(&s, &pool, NULL);
        /* and back to the DPU: w = pooled + pooled (a chain must end in a DPU task on
         * rocket, which cannot wait for a PPU interrupt) */
        struct npu_ref_eltwise d = {.op = NPU_REF_EW_ADD,
                                    .precision = NPU_PRECISION_FP16,
                                    .w = 8,
                                    .c = 8,
                                    .fp32_internal = -1,
                                    .x = {3, 0},
                                    .y = {3, 0},
                                    .z = {5, 0}};
        npu_ref_eltwise_emit(&s, &d);
    }
    memset(z[0], 0, tb);
    memset(z[1], 0, tb);
    memset(npu_bo_map(b[5]), 0, ob + tb);
    memset(&r, 0, sizeof(r));
    st = run_stream(&s, b, 6, &r);
    npu_stream_fini(&s);
    bad = 0;
    for (uint32_t c = 0; st == NPU_OK && c < 8; c++)
        for (uint32_t oy = 0; oy < 2; oy++)
            for (uint32_t ox = 0; ox < 4; ox++) {
                float m = -INFINITY;
                for (uint32_t dy = 0; dy < 2; dy++)
                    for (uint32_t dx = 0; dx < 2; dx++) {
                        size_t i = ew_idx(c, (2 * oy + dy) * 8 + 2 * ox + dx, 32);
                        m = fmaxf(m, npu_fp16_to_fp32(x[i]) + npu_fp16_to_fp32(y[i]));
                    }
                size_t o = ew_idx(c, oy * 4 + ox, 8);
                bad += npu_fp16_to_fp32(z[1][o]) != m ||
                       npu_fp16_to_fp32(((const uint16_t *)npu_bo_map(b[5]))[o]) != 2 * m;
            }
    if (st == NPU_OK && !bad && !on_sim)
        confirm("raw:DPU->PPU->DPU");
    if (st == NPU_ERR_UNSUPPORTED && !strcmp(dev_info.backend, "rocket"))
        printf("SKIP  raw DPU->PPU->DPU: rocket launches every task alone and needs each to end "
               "in a DPU interrupt, so no PPU task can run through it (docs/hardware.md)\n");
    else
        report(st == NPU_OK && !bad,
               "raw DPU->PPU->DPU: fp16 add, 2x2/2 max pooling of its output, an add of the pooled "
               "map: %zu of 64 wrong%s%s (%s)",
               bad, st ? "; " : "", st ? (r.message[0] ? r.message : npu_status_str(st)) : "",
               time_str(&r, tbuf, 512));

    /* DPU -> CNA: z = x + y (M 16 x K 32), then C = z . B (K 32 x N 16, integers -2 .. 2) */
    uint16_t *bm = malloc((size_t)C * N * 2);
    if (!bm) {
        report(false, "raw: out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < C; k++)
        for (uint32_t n = 0; n < N; n++)
            bm[k * N + n] = npu_fp32_to_fp16((float)((int)((k * 5 + n * 3) % 5) - 2));
    npu_weight_pack_matmul(&wl, npu_bo_map(b[4]), wl.total_bytes, bm, 0);
    npu_stream_init(&s);
    {
        struct npu_ref_eltwise p = {.op = NPU_REF_EW_ADD,
                                    .precision = NPU_PRECISION_FP16,
                                    .w = W,
                                    .c = C,
                                    .fp32_internal = -1,
                                    .x = {0, 0},
                                    .y = {1, 0},
                                    .z = {2, 0}};
        npu_ref_eltwise_emit(&s, &p);
        struct npu_ref_matmul mm = {.kind = NPU_REF_MATMUL_FP16_FP32,
                                    .m = W,
                                    .k = C,
                                    .n = N,
                                    .input = {2, 0},
                                    .weight = {4, 0},
                                    .output = {5, 0}};
        npu_ref_matmul_emit(&s, &mm);
    }
    memset(z[0], 0, tb);
    memset(npu_bo_map(b[5]), 0, ob + tb);
    memset(&r, 0, sizeof(r));
    st = run_stream(&s, b, 6, &r);
    npu_stream_fini(&s);
    bad = 0;
    const float *cm = npu_bo_map(b[5]);
    for (uint32_t m = 0; st == NPU_OK && m < W; m++)
        for (uint32_t n = 0; n < N; n++) {
            float want = 0;
            for (uint32_t k = 0; k < C; k++)
                want +=
                    (npu_fp16_to_fp32(x[ew_idx(k, m, W)]) + npu_fp16_to_fp32(y[ew_idx(k, m, W)])) *
                    npu_fp16_to_fp32(bm[k * N + n]);
            bad += cm[((size_t)(n / 4) * W + m) * 4 + n % 4] != want;
        }
    if (st == NPU_OK && !bad && !on_sim)
        confirm("raw:DPU->CNA");
    report(st == NPU_OK && !bad,
           "raw DPU->CNA: fp16 add, then a %ux%ux%u fp16 matmul reading its output as A: %zu of "
           "%u wrong%s%s (%s)",
           W, C, N, bad, W * N, st ? "; " : "",
           st ? (r.message[0] ? r.message : npu_status_str(st)) : "", time_str(&r, tbuf, 512));
    free(bm);
out:
    for (int i = 0; i < 6; i++)
        npu_bo_destroy(b[i]);
}

/* ---------------------------------------------------------------------- lut */

/* Patterns this device ran exactly as the simulator computes them (the report's
 * "confirmed"; only on a backend other than the simulator itself). */
#define MAX_CONFIRMED 64
static char confirmed[MAX_CONFIRMED][48];
static unsigned n_confirmed;
static bool lut_quick;

static void
confirm(const char *name)
{
    if (n_confirmed < MAX_CONFIRMED)
        snprintf(confirmed[n_confirmed++], sizeof(confirmed[0]), "%s", name);
}

/* The 1/sqrt band table's function: sqrt(2^lg / v), v clamped into the band. */
static double
band_ref(int lg, double v)
{
    double L = ldexp(1.0, lg), H = ldexp(1.0, lg + NPU_DPU_RSQRT_BAND_LG);
    return sqrt(L / fmin(fmax(v, L), H));
}

/* The upload of table l (scratch: 32 bytes) and one flying pass out = f(in) through it, the
 * index scale applied as the back end applies it: one fp16-exact BN factor, or for the
 * 1/sqrt bands (up to 2^27) two, BS then BN (dpu-norm.c). */
static enum npu_status
lut_emit(struct npu_stream *s, const struct npu_dpu_lut *l, struct npu_dpu_map in,
         struct npu_dpu_map out, struct npu_dpu_ref scratch)
{
    enum npu_status st = npu_dpu_emit_lut_upload(s, l, scratch, NULL);
    struct npu_dpu_pass p = {.in = in, .out = out};
    int e = (int)lrint(log2(l->in_scale)), e1 = e / 2;
    bool two = ldexp(1.0, e) == (double)l->in_scale && (e > 15 || e < -14);
    if (two) {
        p.st.bs.mul = NPU_DPU_SRC_REG;
        p.st.bs.mul_value = ldexpf(1.0f, e1);
    }
    p.st.bn.mul = NPU_DPU_SRC_REG;
    p.st.bn.mul_value = two ? ldexpf(1.0f, e - e1) : l->in_scale;
    p.st.ew.lut = l;
    return st ? st : npu_dpu_emit_pass(s, &p, NULL);
}

/* The LUT configurations the back end emits: k = 0 .. LUT_CONFIGS - 1 gives the table's id
 * and a name (the functions' tables, attention's coarse exp table, LayerNormalization's
 * three 1/sqrt bands); *fn and *lg say what its fp64 reference is. */
#define LUT_CONFIGS (NPU_DPU_FN_COUNT + 1 + 3)

static uint32_t
lut_config(int k, char *name, size_t n, enum npu_dpu_fn *fn, int *lg)
{
    static const int bands[3] = {-20, -20 + NPU_DPU_RSQRT_BAND_LG, -20 + 2 * NPU_DPU_RSQRT_BAND_LG};
    *fn = NPU_DPU_FN_COUNT;
    *lg = 0;
    if (k < NPU_DPU_FN_COUNT) {
        *fn = (enum npu_dpu_fn)k;
        snprintf(name, n, "lut:%s", npu_dpu_fn_name(*fn));
        return npu_dpu_lut_fn_id(*fn);
    }
    if (k == NPU_DPU_FN_COUNT) {
        *fn = NPU_DPU_FN_EXP_NEG;
        snprintf(name, n, "lut:exp_neg_coarse");
        return NPU_DPU_LUT_EXP_NEG_COARSE;
    }
    *lg = bands[k - NPU_DPU_FN_COUNT - 1];
    snprintf(name, n, "lut:rsqrt_band_%d", *lg);
    return npu_dpu_lut_band_id(*lg);
}

/* Runs one LUT configuration over every fp16 bit pattern (C 8 x H 128 x W 64, one flying
 * pass: BN scales t into the table's index domain, EW looks it up) on device d: the upload
 * and the pass in one submit. out gets the 65,536 results. */
static enum npu_status
lut_run(struct npu_device *d, const struct npu_dpu_lut *l, uint16_t *out, char *msg, size_t n)
{
    const uint32_t C = 8, H = 128, W = 64;
    const size_t map = (size_t)C * H * W * 2;
    struct npu_bo *bo = NULL;
    enum npu_status st = npu_bo_create(d, 2 * map + 4096, 0, &bo);
    if (st != NPU_OK) {
        snprintf(msg, n, "cannot create a %zu-byte buffer", 2 * map + 4096);
        return st;
    }
    uint16_t *x = npu_bo_map(bo), *y = (uint16_t *)((uint8_t *)npu_bo_map(bo) + map);
    /* element (c, y, x) of the one C2 = 8 surface holds the bit pattern (c H + y) W + x */
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t r = 0; r < H; r++)
            for (uint32_t k = 0; k < W; k++)
                x[((size_t)r * W + k) * 8 + c] = (uint16_t)(((size_t)c * H + r) * W + k);
    memset(y, 0, map);
    struct npu_stream s;
    npu_stream_init(&s);
    struct npu_dpu_map in = npu_dpu_map_packed((struct npu_dpu_ref){0, 0}, NPU_DPU_FP16, C, H, W);
    struct npu_dpu_map o =
        npu_dpu_map_packed((struct npu_dpu_ref){0, (uint32_t)map}, NPU_DPU_FP16, C, H, W);
    st = lut_emit(&s, l, in, o, (struct npu_dpu_ref){0, (uint32_t)(2 * map)});
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    if (st == NPU_OK)
        st = run_stream_on(d, &s, &bo, 1, &r);
    if (st != NPU_OK)
        snprintf(msg, n, "%s", r.message[0] ? r.message : npu_status_str(st));
    for (uint32_t c = 0; st == NPU_OK && c < C; c++)
        for (uint32_t q = 0; q < H; q++)
            for (uint32_t k = 0; k < W; k++)
                out[((size_t)c * H + q) * W + k] = y[((size_t)q * W + k) * 8 + c];
    npu_stream_fini(&s);
    npu_bo_destroy(bo);
    return st;
}

/* Every LUT configuration the back end emits (each function's table, the coarse exp table
 * of attention, the three 1/sqrt bands of LayerNormalization, 2^-20, 2^-6 and 2^8, with
 * their two-stage input scale; --lut-quick: three of them), swept over
 * all 65,536 fp16 inputs on this device and on a fresh strict simulator: on a board the
 * simulator is the reference and every output must match bit for bit; on the simulator or
 * the kernel double it is a self-consistency check. The error against the CPU's fp64
 * function (finite inputs of its domain) is printed for each. */
static void
step_lut(void)
{
    struct npu_device *ref = NULL;
    struct npu_device_options o = {.strict = 1};
    if (npu_device_open_ex("sim", &o, &ref) != NPU_OK) {
        report(false, "lut: cannot open the reference simulator");
        return;
    }
    bool on_sim = !strcmp(dev_info.backend, "sim");
    uint16_t *got = malloc(65536 * 2), *want = malloc(65536 * 2);
    if (!got || !want) {
        report(false, "lut: out of memory");
        goto out;
    }
    for (int k = 0; k < LUT_CONFIGS; k++) {
        char name[48];
        int lg;
        enum npu_dpu_fn fn;
        uint32_t id = lut_config(k, name, sizeof(name), &fn, &lg);
        if (lut_quick && id != npu_dpu_lut_fn_id(NPU_DPU_FN_SIGMOID) &&
            id != NPU_DPU_LUT_EXP_NEG_COARSE && id != npu_dpu_lut_band_id(-6))
            continue;
        const struct npu_dpu_lut *l = npu_dpu_lut_get(id);
        if (!l) {
            report(false, "%s: no table of id 0x%x", name, id);
            continue;
        }
        char m1[512] = "", m2[512] = "";
        enum npu_status s1 = lut_run(dev, l, got, m1, sizeof(m1));
        enum npu_status s2 = lut_run(ref, l, want, m2, sizeof(m2));
        size_t diff = 0, first = 0;
        double err = 0;
        size_t n_ref = 0;
        for (uint32_t h = 0; s1 == NPU_OK && s2 == NPU_OK && h < 65536; h++) {
            if (got[h] != want[h] && !diff++)
                first = h;
            float t = npu_fp16_to_fp32((uint16_t)h);
            double f;
            if (fn != NPU_DPU_FN_COUNT && k < NPU_DPU_FN_COUNT + 1) {
                double lo = fn == NPU_DPU_FN_EXP_NEG ? -16 : -8,
                       hi = fn == NPU_DPU_FN_EXP_NEG ? 0 : 8;
                if (!isfinite(t) || t < lo || t > hi)
                    continue;
                f = npu_dpu_fn_ref(fn, t);
            } else {
                if (!isfinite(t) || t <= 0)
                    continue;
                f = band_ref(lg, t);
            }
            err = fmax(err, fabs(npu_fp16_to_fp32(got[h]) - f));
            n_ref++;
        }
        bool ok = s1 == NPU_OK && s2 == NPU_OK && !diff;
        if (ok && !on_sim)
            confirm(name);
        report(ok,
               "%s: 65536 fp16 inputs, %zu differ from the simulator%s%s%s; max abs error %.2e "
               "against fp64 over %zu inputs of its domain",
               name, diff, on_sim ? " (self-consistency: the device is a simulator)" : "",
               s1   ? "; device: "
               : s2 ? "; simulator: "
                    : "",
               s1   ? m1
               : s2 ? m2
                    : "",
               err, n_ref);
        if (diff)
            printf("      first: input 0x%04zx, device 0x%04x, simulator 0x%04x\n", first,
                   got[first], want[first]);
    }
out:
    free(got);
    free(want);
    npu_device_close(ref);
}

/* ------------------------------------------------------------------- tlevel */

/* The single-task programs of the T-level step: each emits one task (a LUT pass: its upload
 * and the pass) over four buffers of TL_BUF bytes: 0 the input map, 1 the second operand or
 * the weights, 2 the output, 3 fp32 per-channel operands and scratch. */
#define TL_BUF (256u * 1024u)
/* tl_gen's answer past the last program */
#define TL_END NPU_ERR_CANCELLED

static enum npu_status
tl_gen(int g, struct npu_stream *s, char *name, size_t n)
{
    static const char *const ops[] = {"add", "sub", "mul", "div", "max", "min"};
    static const char *const kinds[] = {"fp16->fp32", "fp16->fp16", "int8->int32"};
    struct npu_dpu_ref r0 = {0, 0}, r1 = {1, 0}, r2 = {2, 0}, r3 = {3, 0};
    if (g < 12) {
        bool i8 = g >= 6;
        struct npu_ref_eltwise p = {.op = (enum npu_ref_ew_op)(g % 6),
                                    .precision = i8 ? NPU_PRECISION_INT8 : NPU_PRECISION_FP16,
                                    .w = 64,
                                    .c = 32,
                                    .fp32_internal = -1,
                                    .x = {0, 0},
                                    .y = {1, 0},
                                    .z = {2, 0}};
        snprintf(name, n, "eltwise %s %s (A.2)", i8 ? "int8" : "fp16", ops[g % 6]);
        return npu_ref_eltwise_emit(s, &p);
    }
    if (g < 15) {
        struct npu_ref_matmul m = {.kind = (enum npu_ref_matmul_kind)(g - 12),
                                   .m = 16,
                                   .k = 64,
                                   .n = 32,
                                   .input = {0, 0},
                                   .weight = {1, 0},
                                   .output = {2, 0}};
        snprintf(name, n, "matmul 16x64x32 %s (A.1)", kinds[g - 12]);
        return npu_ref_matmul_emit(s, &m);
    }
    struct npu_dpu_map in = npu_dpu_map_packed(r0, NPU_DPU_FP16, 32, 8, 16);
    struct npu_dpu_map out = npu_dpu_map_packed(r2, NPU_DPU_FP16, 32, 8, 16);
    struct npu_dpu_pass p = {.in = in, .out = out};
    if (g >= 27 && g < 27 + LUT_CONFIGS) {
        char lname[32];
        enum npu_dpu_fn fn;
        int lg;
        const struct npu_dpu_lut *l =
            npu_dpu_lut_get(lut_config(g - 27, lname, sizeof(lname), &fn, &lg));
        snprintf(name, n, "LUT upload and pass, %s", lname);
        return l ? lut_emit(s, l, in, out, (struct npu_dpu_ref){3, TL_BUF - 4096})
                 : NPU_ERR_INTERNAL;
    }
    switch (g) {
    case 20:
        snprintf(name, n, "DPU pass: BS ReLU-X, BN add per channel (memory), ReLU");
        p.st.bs.relu = true, p.st.bs.relux = true, p.st.bs.relux_value = 1.5f;
        p.st.bn.alu = NPU_DPU_SRC_MEM, p.st.bn.alu_mem = r3, p.st.bn.relu = true;
        return npu_dpu_emit_pass(s, &p, NULL);
    case 15:
        snprintf(name, n, "DPU pass: BS add, BN mul (register operands)");
        p.st.bs.alu = NPU_DPU_SRC_REG, p.st.bs.alu_value = 0.5f;
        p.st.bn.mul = NPU_DPU_SRC_REG, p.st.bn.mul_value = 0.75f;
        return npu_dpu_emit_pass(s, &p, NULL);
    case 16:
        snprintf(name, n, "DPU pass: BS add, BN mul per channel (memory)");
        p.st.bs.alu = NPU_DPU_SRC_MEM, p.st.bs.alu_mem = r3;
        p.st.bn.mul = NPU_DPU_SRC_MEM, p.st.bn.mul_mem = (struct npu_dpu_ref){3, 4096};
        return npu_dpu_emit_pass(s, &p, NULL);
    case 17:
    case 18:
    case 19:
        p.st.ew.op = g == 17 ? NPU_DPU_EW_MUL : g == 18 ? NPU_DPU_EW_DIV : NPU_DPU_EW_MAX;
        p.st.ew.operand = npu_dpu_map_packed(r1, NPU_DPU_FP16, 32, 8, 16);
        p.st.ew.relu = g == 17;
        snprintf(name, n, "DPU pass: EW %s per pixel%s",
                 g == 17   ? "mul"
                 : g == 18 ? "div"
                           : "max",
                 g == 17 ? ", ReLU" : "");
        return npu_dpu_emit_pass(s, &p, NULL);
    case 21:
    case 22: {
        struct npu_dpu_pool q = {.op = g == 21 ? NPU_DPU_POOL_MAX : NPU_DPU_POOL_MIN,
                                 .in = npu_dpu_map_packed(r0, NPU_DPU_FP16, 16, 8, 8),
                                 .kh = g == 21 ? 2 : 3,
                                 .kw = g == 21 ? 2 : 3,
                                 .sy = 2,
                                 .sx = 2,
                                 .pad_top = g == 22,
                                 .pad_left = g == 22,
                                 .pad_bottom = g == 22,
                                 .pad_right = g == 22};
        q.out = npu_dpu_map_packed(r2, NPU_DPU_FP16, 16, 4, 4);
        snprintf(name, n, "PPU %s pooling %ux%u/2", g == 21 ? "max" : "min", q.kh, q.kw);
        return npu_dpu_emit_pool(s, &q, NULL);
    }
    case 23: {
        struct npu_dpu_tp t = {.in = npu_dpu_map_packed(r0, NPU_DPU_FP16, 8, 8, 8),
                               .dst = r2,
                               .grid_w = 8,
                               .grid_line = 8,
                               .chan_stride = 8};
        snprintf(name, n, "DPU transpose copy");
        return npu_dpu_emit_tp(s, &t, NULL);
    }
    case 24:
    case 25:
    case 26: {
        bool dw = g == 26, fp32 = g == 25;
        struct npu_dpu_conv c = {.in = npu_dpu_map_packed(r0, NPU_DPU_FP16, 16, 8, 8),
                                 .weights = r1,
                                 .kernels = 16,
                                 .kh = g == 25 ? 1 : 3,
                                 .kw = g == 25 ? 1 : 3,
                                 .sy = 1,
                                 .sx = 1,
                                 .pad_top = g != 25,
                                 .pad_left = g != 25,
                                 .depthwise = dw};
        c.out = npu_dpu_map_packed(r2, fp32 ? NPU_DPU_FP32 : NPU_DPU_FP16, 16, 8, 8);
        if (fp32) {
            c.st.ew.op = NPU_DPU_EW_ADD;
            c.st.ew.operand = npu_dpu_map_packed(r3, NPU_DPU_FP32, 16, 8, 8);
        }
        snprintf(name, n, "conv %s (CNA+CORE+DPU)",
                 dw     ? "3x3 depthwise"
                 : fp32 ? "1x1 -> fp32 + EW add (fp32 operand)"
                        : "3x3");
        return npu_dpu_emit_conv(s, &c, NULL);
    }
    default: return TL_END;
    }
}

/* Fills the four buffers the same way on every device: small fp16 values (no zero, so
 * divisions stay finite) in 0 .. 2, small fp32 values in 3. */
static void
tl_fill(struct npu_bo *const *b)
{
    for (int k = 0; k < 3; k++) {
        uint16_t *h = npu_bo_map(b[k]);
        for (size_t i = 0; i < TL_BUF / 2; i++)
            h[i] = k == 2 ? 0 : npu_fp32_to_fp16((float)((int)((i * 13 + k * 7) % 16) + 1) / 8.0f);
    }
    float *f = npu_bo_map(b[3]);
    for (size_t i = 0; i < TL_BUF / 4; i++)
        f[i] = (float)((int)(i % 9) - 4) / 4.0f;
}

/* Runs program g on device d; out gets the four buffers' contents after it. */
static enum npu_status
tl_run(struct npu_device *d, int g, uint8_t *out, char *msg, size_t n)
{
    struct npu_bo *b[4] = {0};
    enum npu_status st = NPU_OK;
    for (int i = 0; i < 4 && st == NPU_OK; i++)
        st = npu_bo_create(d, TL_BUF, 0, &b[i]);
    struct npu_job_result r;
    memset(&r, 0, sizeof(r));
    char name[64];
    struct npu_stream s;
    npu_stream_init(&s);
    if (st == NPU_OK) {
        tl_fill(b);
        tl_gen(g, &s, name, sizeof(name));
        st = run_stream_on(d, &s, b, 4, &r);
    }
    if (st != NPU_OK)
        snprintf(msg, n, "%s", r.message[0] ? r.message : npu_status_str(st));
    for (int i = 0; i < 4 && st == NPU_OK; i++)
        memcpy(out + (size_t)i * TL_BUF, npu_bo_map(b[i]), TL_BUF);
    npu_stream_fini(&s);
    for (int i = 0; i < 4; i++)
        npu_bo_destroy(b[i]);
    return st;
}

/* Each T-level pattern of the evidence ledger (core/hw/evidence.xml: inferred from the TRM
 * and the facts only) that one of the single-task programs above writes is run alone - the
 * first program that writes it, as its own submit - on this device and on a fresh
 * simulator, and every byte of the four buffers compared: on a board a match confirms the
 * pattern (the report's "confirmed"); on the simulator it is a self-consistency check.
 * The T entries none of these programs write are counted and named at the end: they need
 * a compiled model to exercise. */
static void
step_tlevel(void)
{
    unsigned n_led = 0;
    const struct npu_evidence_entry *led = npu_evidence_ledger(&n_led);
    int *first = malloc(sizeof(int) * (n_led ? n_led : 1));
    uint8_t *got = malloc(4 * (size_t)TL_BUF), *want = malloc(4 * (size_t)TL_BUF);
    struct npu_device *ref = NULL;
    struct npu_device_options o = {.strict = 1, .evidence = -1};
    if (!first || !got || !want || npu_device_open_ex("sim", &o, &ref) != NPU_OK) {
        report(false, "tlevel: out of memory or no reference simulator");
        goto out;
    }
    for (unsigned i = 0; i < n_led; i++)
        first[i] = -1;
    char name[64];
    for (int g = 0;; g++) {
        struct npu_stream s;
        npu_stream_init(&s);
        enum npu_status st = tl_gen(g, &s, name, sizeof(name));
        if (st == TL_END) {
            npu_stream_fini(&s);
            break;
        }
        /* a program counts only if the ledger covers every write of it (the back end's
         * patterns): the weakest level over its tasks is not NONE */
        bool covered = st == NPU_OK;
        int found[16];
        unsigned n_found = 0;
        for (uint32_t t = 0; covered && t < s.n_tasks; t++) {
            size_t nw = 0, cap = s.tasks[t].n_body;
            struct npu_evidence_write *w = calloc(cap ? cap : 1, sizeof(*w));
            enum npu_evidence_level lv = NPU_EVIDENCE_NONE;
            if (!w || npu_evidence_classify_task(s.tasks[t].body, s.tasks[t].n_body, w, cap, &nw,
                                                 &lv) != NPU_OK)
                covered = false;
            covered = covered && lv != NPU_EVIDENCE_NONE;
            for (size_t k = 0; covered && k < nw && k < cap; k++)
                if (w[k].entry && w[k].entry->level == NPU_EVIDENCE_T && n_found < 16)
                    found[n_found++] = (int)(w[k].entry - led);
            free(w);
        }
        for (unsigned k = 0; covered && k < n_found; k++)
            if (first[found[k]] < 0)
                first[found[k]] = g;
        if (!covered)
            printf("      program \"%s\" not used: it writes a pattern outside the ledger\n", name);
        npu_stream_fini(&s);
    }
    bool on_sim = !strcmp(dev_info.backend, "sim");
    unsigned n_t = 0, n_run = 0;
    for (unsigned i = 0; i < n_led; i++) {
        if (led[i].level != NPU_EVIDENCE_T)
            continue;
        n_t++;
        if (first[i] < 0)
            continue;
        n_run++;
        struct npu_stream s;
        npu_stream_init(&s);
        tl_gen(first[i], &s, name, sizeof(name));
        npu_stream_fini(&s);
        char m1[512] = "", m2[512] = "";
        enum npu_status s1 = tl_run(dev, first[i], got, m1, sizeof(m1));
        enum npu_status s2 = tl_run(ref, first[i], want, m2, sizeof(m2));
        size_t diff = 0;
        for (size_t k = 0; !s1 && !s2 && k < 4 * (size_t)TL_BUF; k++)
            diff += got[k] != want[k];
        bool ok = !s1 && !s2 && !diff;
        if (ok && !on_sim)
            confirm(led[i].id);
        if (s1 == NPU_ERR_UNSUPPORTED && !strcmp(dev_info.backend, "rocket")) {
            printf("SKIP  T %s alone in \"%s\": rocket cannot run it (%s)\n", led[i].id, name, m1);
            continue;
        }
        report(ok, "T %s (%s) alone in \"%s\": %zu bytes differ from the simulator%s%s%s",
               led[i].id, led[i].purpose, name, diff, on_sim ? " (self-consistency)" : "",
               s1   ? "; device: "
               : s2 ? "; simulator: "
                    : "",
               s1   ? m1
               : s2 ? m2
                    : "");
    }
    printf("      %u of the ledger's %u T-level patterns run alone; not written by these "
           "programs:",
           n_run, n_t);
    for (unsigned i = 0; i < n_led; i++)
        if (led[i].level == NPU_EVIDENCE_T && first[i] < 0)
            printf(" %s", led[i].id);
    printf("\n");
out:
    npu_device_close(ref);
    free(first);
    free(got);
    free(want);
}

/* The report of --report: JSON, format in docs/hardware.md ("The bring-up report"). */
static int
write_report(const char *path, const char *backend)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "npu-selftest: cannot write %s\n", path);
        return -1;
    }
    const struct npu_timing_model *tm = npu_timing_model();
    fprintf(f, "{\n  \"format\": \"opennpu-bringup-report\",\n  \"version\": 1,\n");
    fprintf(f, "  \"backend\": \"%s\",\n  \"backend_requested\": \"%s\",\n", dev_info.backend,
            backend);
    fprintf(f,
            "  \"device\": {\"n_cores\": %u, \"hw_version\": %u, \"drv_version\": %u, "
            "\"timing_model\": \"%s\"},\n",
            dev_info.n_cores, dev_info.hw_version, dev_info.drv_version, dev_info.timing_model);
    fprintf(f, "  \"steps\": {");
    for (unsigned i = 0; i < n_step_counts; i++)
        fprintf(f, "%s\n    \"%s\": {\"pass\": %u, \"fail\": %u}", i ? "," : "",
                step_counts[i].name, step_counts[i].pass, step_counts[i].fail);
    fprintf(f, "\n  },\n  \"pass\": %u,\n  \"fail\": %u,\n", n_pass, n_fail);
    fprintf(f, "  \"figures\": {\n");
    if (have_chain)
        fprintf(f,
                "    \"task_overhead_s\": {\"value\": %.6e, \"source\": \"%s\"},\n"
                "    \"submit_overhead_s\": {\"value\": %.6e, \"source\": \"%s\"},\n"
                "    \"chain_task_bytes\": %.0f,\n",
                fit_task_s, src_names[chain_src], fit_submit_s, src_names[chain_src],
                chain_task_bytes);
    fprintf(f, "    \"dma_bytes_per_s_core\": [");
    bool first = true;
    for (unsigned c = 0; c < NPU_SUBCORE_SLOTS; c++) {
        if (!have_dma[c])
            continue;
        fprintf(f, "%s\n      {\"core\": %u, \"value\": %.6e, \"source\": \"%s\"}",
                first ? "" : ",", c, dma_bps[c], src_names[dma_src[c]]);
        first = false;
    }
    fprintf(f, "%s]\n  },\n", first ? "" : "\n    ");
    /* Patterns this device computed exactly as the simulator (docs/hardware.md): they count
     * as verified on this installation. */
    fprintf(f, "  \"confirmed\": [");
    for (unsigned i = 0; i < n_confirmed; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", confirmed[i]);
    fprintf(f, "],\n");
    /* The table row the modeled figures follow, so that a checker can compare them. */
    fprintf(f,
            "  \"timing_model\": {\"name\": \"%s\", \"label\": \"%s\", \"task_overhead_s\": "
            "%.6e, \"submit_overhead_s\": %.6e, \"dma_bytes_per_s_core\": %.6e, "
            "\"per_mechanism\": %d, \"dma_eff_line\": %.6e, \"dma_task_latency_s\": %.6e}\n}\n",
            tm->name, tm->label, tm->task_overhead_s, tm->submit_overhead_s,
            tm->dma_bytes_per_s_core, tm->per_mechanism, tm->per_mechanism ? tm->dma_eff_line : 1.0,
            tm->per_mechanism ? tm->dma_task_latency_s : 0.0);
    return fclose(f) == 0 ? 0 : -1;
}

static int
usage(FILE *f)
{
    fprintf(
        f,
        "usage: npu-selftest [-b auto|sim|rknpu|rocket] [--golden DIR] [--big] "
        "[--report FILE] [--lut-quick] info|eltwise|matmul|conv|golden|multicore|chain|dma|raw|lut|"
        "tlevel|"
        "all ...\n");
    return f == stdout ? 0 : 2;
}

/* The steps in the order "all" runs them. */
static const struct {
    const char *name;
    void (*run)(void);
} step_table[] = {
    {"info", step_info},   {"eltwise", step_eltwise}, {"matmul", step_matmul},
    {"conv", step_conv},   {"golden", step_golden},   {"multicore", step_multicore},
    {"chain", step_chain}, {"dma", step_dma},         {"raw", step_raw},
    {"lut", step_lut},     {"tlevel", step_tlevel},
};

int
main(int argc, char **argv)
{
    const char *backend = "auto";
    const char *steps[16];
    int n_steps = 0;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-b") || !strcmp(argv[i], "--backend")) && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--golden") && i + 1 < argc)
            golden_dir = argv[++i];
        else if (!strcmp(argv[i], "--report") && i + 1 < argc)
            report_path = argv[++i];
        else if (!strcmp(argv[i], "--lut-quick"))
            lut_quick = true;
        else if (!strcmp(argv[i], "--big"))
            big = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage(stdout);
        else if (argv[i][0] != '-' && n_steps < 16)
            steps[n_steps++] = argv[i];
        else
            return usage(stderr);
    }
    if (!n_steps)
        return usage(stderr);
    if (!strcmp(backend, "auto")) {
        struct npu_backend_probe p[4];
        unsigned n = npu_device_probe_backends(p, 4);
        for (unsigned i = 0; i < n && i < 4; i++)
            printf("probe %-7s %s: %s\n", p[i].name, npu_status_str(p[i].status), p[i].reason);
    }
    enum npu_status st = npu_device_open(backend, &dev);
    if (st != NPU_OK) {
        fprintf(stderr, "npu-selftest: cannot open backend '%s': %s\n", backend,
                npu_status_str(st));
        return 1;
    }
    npu_device_get_info(dev, &dev_info);
    for (int i = 0; i < n_steps; i++) {
        bool all = !strcmp(steps[i], "all");
        bool known = false;
        unsigned pass0 = n_pass, fail0 = n_fail;
        for (size_t k = 0; k < NPU_ARRAY_SIZE(step_table); k++)
            if (all || !strcmp(steps[i], step_table[k].name))
                known = true, step_table[k].run();
        if (!known) {
            npu_device_close(dev);
            return usage(stderr);
        }
        if (n_step_counts < MAX_STEPS) {
            step_counts[n_step_counts].name = steps[i];
            step_counts[n_step_counts].pass = n_pass - pass0;
            step_counts[n_step_counts].fail = n_fail - fail0;
            n_step_counts++;
        }
    }
    npu_device_close(dev);
    if (report_path && write_report(report_path, backend) != 0)
        n_fail++;
    printf("%u passed, %u failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
