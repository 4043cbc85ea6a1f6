/* SPDX-License-Identifier: MIT */
/*
 * test-program.c: the program executor (core/runtime/npu-program-*.c) on the
 * simulator, with hand-made programs (hand-prog.h: the A.1 matmul job of facts
 * Appendix A between CONVERT and CPU steps):
 *  - conversions against core/hw's layout functions and fp16 converter (an
 *    independent implementation), every layout/map/dtype combination, with
 *    padding channels zeroed, and the refused combinations;
 *  - steps run in order and give relu(a.b + bias) within the fp32 summation
 *    bound of a double-precision reference; I/O converted by the runtime
 *    when the program's input and output live in NPU memory;
 *  - run statistics (submits, tasks, modeled time, DMA, utilisation, cores);
 *  - a job that faults surfaces as NPU_ERR_FAULT naming the step and job;
 *  - validation refuses each kind of inconsistent program with its message;
 *  - fused CPU epilogues (bias + npu_act) for dtypes the kernels do not fuse;
 *  - three sessions on the three cores run concurrently from three threads;
 *  - npu_prog_argmax over NC1HWC2 (fp16, fp32, int8 with a scale) and row-major tensors: the index
 * a scan over the converted fp32 values gives (the first maximum, NaN only as the first element),
 *    ties, -0 / +0, NaN, the maximum in the last, padded, channel group (padding never read),
 *    and a scan continued over a second tensor (base).
 */
#include <pthread.h>

#include "hand-prog.h"
#include "npu-test.h"
#include "npu/npu-cpu.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-timing.h"

static uint32_t seed = 12345;

static float
frand(void)
{
    return ((int)(hp_rand(&seed) % 20001) - 10000) / 5000.0f;
}

/* ---- conversions ------------------------------------------------------------------ */

static struct npu_prog_tensor
tdesc(enum npu_dtype dt, int ndim, const int64_t *dims, enum npu_layout lay, enum npu_dtype mem,
      uint32_t c, uint32_t h, uint32_t w, uint32_t map)
{
    struct npu_prog_tensor t;
    memset(&t, 0, sizeof(t));
    t.name = "t";
    t.t.dtype = dt;
    t.t.ndim = ndim;
    memcpy(t.t.dims, dims, sizeof(int64_t) * (size_t)ndim);
    t.layout = lay;
    t.mem_dtype = mem;
    t.npu_c = c;
    t.npu_h = h;
    t.npu_w = w;
    t.npu_order = map;
    t.io_input = t.io_output = -1;
    t.bytes = npu_prog_tensor_need(&t);
    return t;
}

static void
test_convert_chw(uint32_t n, uint32_t c, uint32_t h, uint32_t w)
{
    int64_t dims[4] = {n, c, h, w};
    size_t numel = (size_t)n * c * h * w;
    struct npu_prog_tensor host = tdesc(NPU_DTYPE_FP32, 4, dims, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor npu =
        tdesc(NPU_DTYPE_FP32, 4, dims, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP16, c, h, w, NPU_VIEW_NCHW);
    CHECK_EQ_INT((uint64_t)n * npu_nc1hwc2_bytes(2, c, h, w), npu.bytes);
    float *src = malloc(4 * numel), *back = malloc(4 * numel);
    uint16_t *h16 = malloc(2 * numel);
    uint8_t *got = malloc(npu.bytes), *ref = malloc(npu.bytes);
    void *tmp = malloc(npu_prog_convert_scratch(&host, &npu) + 1);
    for (size_t i = 0; i < numel; i++) {
        src[i] = frand();
        h16[i] = npu_fp32_to_fp16(src[i]);
    }
    memset(got, 0xa5, npu.bytes); /* padding must be overwritten with zeros */
    CHECK_EQ_INT(NPU_OK, npu_nchw_to_nc1hwc2(ref, npu.bytes, h16, 2, n, c, h, w, 0));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&host, src, &npu, got, tmp));
    CHECK(!memcmp(got, ref, npu.bytes));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&npu, got, &host, back, tmp));
    int bad = 0;
    for (size_t i = 0; i < numel; i++)
        bad += back[i] != npu_fp16_to_fp32(h16[i]);
    CHECK_EQ_INT(0, bad);
    /* same dtype (fp32 in NPU memory, C2 = 4): no scratch needed */
    struct npu_prog_tensor n32 =
        tdesc(NPU_DTYPE_FP32, 4, dims, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP32, c, h, w, NPU_VIEW_NCHW);
    uint8_t *g32 = malloc(n32.bytes), *r32 = malloc(n32.bytes);
    CHECK_EQ_INT(0, npu_prog_convert_scratch(&host, &n32));
    CHECK_EQ_INT(NPU_OK, npu_nchw_to_nc1hwc2(r32, n32.bytes, src, 4, n, c, h, w, 0));
    memset(g32, 0x5a, n32.bytes);
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&host, src, &n32, g32, NULL));
    CHECK(!memcmp(g32, r32, n32.bytes));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&n32, g32, &host, back, NULL));
    CHECK(!memcmp(back, src, 4 * numel));
    free(g32);
    free(r32);
    free(src);
    free(back);
    free(h16);
    free(got);
    free(ref);
    free(tmp);
}

/* [..., C] rows against the element formula of facts §2.10. */
static void
test_convert_rows(uint32_t b, uint32_t p, uint32_t c, uint32_t npu_w)
{
    int64_t dims[3] = {b, p, c};
    size_t numel = (size_t)b * p * c, px = (size_t)b * p;
    struct npu_prog_tensor host = tdesc(NPU_DTYPE_FP32, 3, dims, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor npu = tdesc(NPU_DTYPE_FP32, 3, dims, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP16,
                                       c, (uint32_t)(px / npu_w), npu_w, NPU_VIEW_HWC);
    CHECK(npu.bytes != UINT64_MAX);
    float *src = malloc(4 * numel), *back = malloc(4 * numel);
    uint8_t *got = malloc(npu.bytes), *ref = calloc(1, npu.bytes);
    void *tmp = malloc(npu_prog_convert_scratch(&host, &npu) + 1);
    uint32_t hh = (uint32_t)(px / npu_w);
    for (size_t q = 0; q < px; q++)
        for (uint32_t k = 0; k < c; k++) {
            float v = frand();
            src[q * c + k] = v;
            uint16_t h16 = npu_fp32_to_fp16(v);
            memcpy(ref + npu_nc1hwc2_offset(2, k, (uint32_t)(q / npu_w), (uint32_t)(q % npu_w), hh,
                                            npu_w),
                   &h16, 2);
        }
    memset(got, 0xa5, npu.bytes);
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&host, src, &npu, got, tmp));
    CHECK(!memcmp(got, ref, npu.bytes));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&npu, got, &host, back, tmp));
    int bad = 0;
    for (size_t i = 0; i < numel; i++)
        bad += back[i] != npu_fp16_to_fp32(npu_fp32_to_fp16(src[i]));
    CHECK_EQ_INT(0, bad);
    free(src);
    free(back);
    free(got);
    free(ref);
    free(tmp);
}

static void
test_convert_misc(void)
{
    /* int8 quantisation: q = sat(round_half_even(x / s) + z) (ONNX QuantizeLinear) */
    int64_t d2[2] = {3, 20};
    struct npu_prog_tensor host = tdesc(NPU_DTYPE_FP32, 2, d2, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor q8 =
        tdesc(NPU_DTYPE_FP32, 2, d2, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_INT8, 20, 3, 1, NPU_VIEW_HWC);
    q8.t.qscale = 0.05f;
    q8.t.qzero = 3;
    float x[60], back[60];
    int8_t *qd = calloc(1, q8.bytes);
    void *tmp = malloc(npu_prog_convert_scratch(&host, &q8) + 1);
    for (int i = 0; i < 60; i++)
        x[i] = frand() * 4;
    x[0] = 0.025f * 3; /* 1.5 steps: ties to even -> 2 */
    /* 0.175f / 0.05f is 3.5 in float (3.4999999 in double): the CPU's QuantizeLinear
     * (npu-cpu-quant.c) divides in float and rounds the tie to 4, and so does the
     * conversion, which the back end lets quantise in its place (fold-conversions.c) */
    x[1] = 0.175f;
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&host, x, &q8, qd, tmp));
    CHECK_EQ_INT(7, qd[npu_nc1hwc2_offset(1, 1, 0, 0, 3, 1)]);
    int bad = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 20; k++) {
            float q = rintf(x[r * 20 + k] / 0.05f) + 3;
            q = q < -128 ? -128 : q > 127 ? 127 : q;
            bad += qd[npu_nc1hwc2_offset(1, k, r, 0, 3, 1)] != (int8_t)q;
        }
    CHECK_EQ_INT(0, bad);
    CHECK_EQ_INT(5, qd[0]);
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&q8, qd, &host, back, tmp));
    bad = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 20; k++)
            bad += back[r * 20 + k] !=
                   (float)((qd[npu_nc1hwc2_offset(1, k, r, 0, 3, 1)] - 3) * (double)0.05f);
    CHECK_EQ_INT(0, bad);
    free(qd);
    free(tmp);

    /* uint8, row-major both sides: ties to even, saturation at 0 and 255, NaN to the zero
     * point (as the CPU's QuantizeLinear), infinities saturated */
    int64_t du = 8;
    struct npu_prog_tensor h1 = tdesc(NPU_DTYPE_FP32, 1, &du, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor u8 =
        tdesc(NPU_DTYPE_UINT8, 1, &du, NPU_LAYOUT_NCHW, NPU_DTYPE_UINT8, 0, 0, 0, 0);
    u8.t.qscale = 0.5f;
    u8.t.qzero = 10;
    const float xu[8] = {0.25f, 0.75f, -4.25f, -100.0f, 200.0f, NAN, INFINITY, -INFINITY};
    const uint8_t want[8] = {10, 12, 2, 0, 255, 10, 255, 0};
    uint8_t qu[8] = {0};
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&h1, xu, &u8, qu, NULL));
    CHECK(!memcmp(qu, want, sizeof(want)));
    /* a zero point that is no uint8 (a hostile or broken program file): refused, both ways
     * (the quantising loop would convert the NaN's zero point, 2^31, to int32) */
    u8.t.qzero = INT32_MAX;
    CHECK(!npu_prog_convert_ok(&h1, &u8, NULL));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_convert(&h1, xu, &u8, qu, NULL));
    u8.t.qzero = 256;
    CHECK(!npu_prog_convert_ok(&u8, &h1, NULL));
    u8.t.qzero = 255;
    CHECK(npu_prog_convert_ok(&h1, &u8, NULL));

    /* small-channel input (facts §2.10) against core/hw */
    int64_t d4[4] = {1, 3, 5, 7};
    struct npu_prog_tensor img = tdesc(NPU_DTYPE_FP32, 4, d4, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor sc =
        tdesc(NPU_DTYPE_FP32, 4, d4, NPU_LAYOUT_SMALL_C, NPU_DTYPE_FP16, 3, 5, 7, NPU_VIEW_NCHW);
    float px[105];
    uint16_t p16[105];
    for (int i = 0; i < 105; i++) {
        px[i] = frand();
        p16[i] = npu_fp32_to_fp16(px[i]);
    }
    uint8_t *g = malloc(sc.bytes), *r = malloc(sc.bytes);
    tmp = malloc(npu_prog_convert_scratch(&img, &sc));
    CHECK_EQ_INT(NPU_OK, npu_nchw_to_argb(r, sc.bytes, p16, 2, 3, 5, 7, 0, 0));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&img, px, &sc, g, tmp));
    CHECK(!memcmp(g, r, sc.bytes));
    free(g);
    free(r);
    free(tmp);

    /* host <-> host: int64 -> int32 saturating, fp32 -> fp16 */
    int64_t d1[1] = {4};
    struct npu_prog_tensor i64 = tdesc(NPU_DTYPE_INT64, 1, d1, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor i32 = tdesc(NPU_DTYPE_INT32, 1, d1, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    int64_t iv[4] = {1, -7, (int64_t)1 << 40, -((int64_t)1 << 40)};
    int32_t ov[4];
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&i64, iv, &i32, ov, NULL));
    CHECK_EQ_INT(1, ov[0]);
    CHECK_EQ_INT(-7, ov[1]);
    CHECK_EQ_INT(INT32_MAX, ov[2]);
    CHECK_EQ_INT(INT32_MIN, ov[3]);

    /* refused: mismatched counts, inconsistent views, both NPU, no scale, bad pairs */
    const char *why = NULL;
    int64_t d3[2] = {3, 21};
    struct npu_prog_tensor other = tdesc(NPU_DTYPE_FP32, 2, d3, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    CHECK(!npu_prog_convert_ok(&host, &other, &why) && strstr(why, "element counts"));
    struct npu_prog_tensor badv = q8;
    badv.npu_c = 19;
    CHECK_EQ_INT(UINT64_MAX, npu_prog_tensor_need(&badv));
    CHECK(!npu_prog_convert_ok(&host, &badv, &why) && strstr(why, "destination layout"));
    CHECK(!npu_prog_convert_ok(&q8, &q8, &why) && strstr(why, "both sides"));
    struct npu_prog_tensor noscale = q8;
    noscale.t.qscale = 0;
    CHECK(!npu_prog_convert_ok(&host, &noscale, &why) && strstr(why, "dtype pair"));
    struct npu_prog_tensor bl = tdesc(NPU_DTYPE_BOOL, 2, d2, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    CHECK(!npu_prog_convert_ok(&bl, &host, &why) && strstr(why, "dtype pair"));
    /* fp64 host data to fp16 on the NPU: through fp32, as the NPU computes in fp16 */
    struct npu_prog_tensor f64 = tdesc(NPU_DTYPE_FP64, 2, d2, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor f64n =
        tdesc(NPU_DTYPE_FP64, 2, d2, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP16, 20, 3, 1, NPU_VIEW_HWC);
    double dv[60], dback[60];
    for (int i = 0; i < 60; i++)
        dv[i] = frand() * 3.0;
    uint8_t *h = calloc(1, f64n.bytes);
    tmp = malloc(npu_prog_convert_scratch(&f64, &f64n));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&f64, dv, &f64n, h, tmp));
    bad = 0;
    for (int row = 0; row < 3; row++)
        for (int k = 0; k < 20; k++) {
            uint16_t got;
            memcpy(&got, h + npu_nc1hwc2_offset(2, k, row, 0, 3, 1), 2);
            bad += got != npu_fp32_to_fp16((float)dv[row * 20 + k]);
        }
    CHECK_EQ_INT(0, bad);
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&f64n, h, &f64, dback, tmp));
    bad = 0;
    for (int i = 0; i < 60; i++)
        bad += dback[i] != npu_fp16_to_fp32(npu_fp32_to_fp16((float)dv[i]));
    CHECK_EQ_INT(0, bad);
    free(h);
    free(tmp);
    struct npu_prog_tensor chw_bad =
        tdesc(NPU_DTYPE_FP32, 4, d4, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP16, 3, 7, 4, NPU_VIEW_NCHW);
    CHECK_EQ_INT(UINT64_MAX, chw_bad.bytes); /* 84 view elements for 105 */

    /* The order is defined on the logical element index, not on the dims: a
     * [1, 105] value (a Flatten) over the (3, 5, 7) view converts exactly as
     * the [1, 3, 5, 7] map does. */
    int64_t dflat[2] = {1, 105};
    struct npu_prog_tensor flat_h = tdesc(NPU_DTYPE_FP32, 2, dflat, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    struct npu_prog_tensor flat_n =
        tdesc(NPU_DTYPE_FP32, 2, dflat, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP16, 3, 5, 7, NPU_VIEW_NCHW);
    struct npu_prog_tensor map_n =
        tdesc(NPU_DTYPE_FP32, 4, d4, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP16, 3, 5, 7, NPU_VIEW_NCHW);
    CHECK_EQ_INT(map_n.bytes, flat_n.bytes);
    uint8_t *m1 = malloc(map_n.bytes), *m2 = malloc(map_n.bytes);
    void *tm = malloc(npu_prog_convert_scratch(&img, &map_n));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&img, px, &map_n, m1, tm));
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&flat_h, px, &flat_n, m2, tm));
    CHECK(!memcmp(m1, m2, map_n.bytes));
    free(m1);
    free(m2);
    free(tm);
}

/* ---- running ---------------------------------------------------------------------- */

static double
check_run(struct hand_prog *h, struct npu_prog_session *s, bool io_on_npu, uint32_t run_seed,
          struct npu_prog_run_stats *rs)
{
    size_t na = (size_t)h->m * h->k, nc = (size_t)h->m * h->n;
    float *a = malloc(4 * na);
    double *ref = malloc(8 * nc), *mag = malloc(8 * nc);
    uint32_t sd = run_seed;
    for (size_t i = 0; i < na; i++)
        a[i] = ((int)(hp_rand(&sd) % 20001) - 10000) / 5000.0f;
    hand_prog_ref(h, a, io_on_npu, ref, mag);
    struct npu_tensor in = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {h->m, h->k}, .data = a};
    struct npu_tensor out;
    double worst = -1;
    if (npu_prog_session_run(s, &in, 1, &out, 1, rs) == NPU_OK) {
        worst = 0;
        CHECK_EQ_INT(NPU_DTYPE_FP32, out.dtype);
        CHECK_EQ_INT(2, out.ndim);
        CHECK_EQ_INT(h->m, out.dims[0]);
        CHECK_EQ_INT(h->n, out.dims[1]);
        const float *y = out.data;
        for (size_t i = 0; i < nc; i++) {
            double tol = h->k * ldexp(1.0, -24) * mag[i] + ldexp(1.0, -23) * fabs(ref[i]) + 1e-7;
            double e = fabs(y[i] - ref[i]) / tol;
            worst = e > worst ? e : worst;
        }
    }
    free(a);
    free(ref);
    free(mag);
    return worst;
}

static void
test_run(struct npu_device *dev, bool io_on_npu)
{
    struct hand_prog h;
    CHECK_EQ_INT(0, hand_prog_make(&h, 64, 64, 32, io_on_npu, 7));
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &h.p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 1, 1, &s));
    struct npu_prog_step_stats steps[8];
    struct npu_prog_task_stats tasks[4];
    struct npu_prog_run_stats rs = {.steps = steps, .task_stats = tasks, .task_cap = 4};
    for (int run = 0; run < 3 && s; run++) {
        double worst = check_run(&h, s, io_on_npu, 100 + run, &rs);
        CHECK(worst >= 0 && worst <= 1);
    }
    printf("program %s: 64x64x32 matmul%s, worst error %.3f of the fp32 bound\n",
           io_on_npu ? "(I/O on the NPU)" : "(CONVERT + CPU steps)",
           io_on_npu ? "" : " + bias + relu", check_run(&h, s, io_on_npu, 99, &rs));
    CHECK_EQ_INT(1, rs.submits);
    CHECK_EQ_INT(1, rs.tasks);
    CHECK_EQ_INT(0x2, rs.core_mask);
    CHECK(rs.timing_valid);
    CHECK(rs.npu_modeled_s > npu_timing_model()->submit_overhead_s); /* the submit overhead of
                                                                      * the model + the task */
    CHECK(rs.dma_bytes >= 64ull * 64 * 2 + 64ull * 32 * 4);
    CHECK_EQ_INT(64ull * 64 * 32, rs.macs);
    CHECK(rs.mac_utilisation > 0 && rs.mac_utilisation <= 1);
    CHECK(rs.wall_s > 0 && rs.wall_s >= rs.cpu_s + rs.convert_s);
    int js = io_on_npu ? 0 : 1;
    CHECK_EQ_INT(1, steps[js].tasks);
    CHECK_NEAR(rs.npu_modeled_s, steps[js].modeled_s, 1e-12);
    CHECK_EQ_INT(1, rs.n_task_stats);
    CHECK_STR("matmul", tasks[0].name);
    CHECK(tasks[0].modeled_s > 0 && tasks[0].modeled_s < rs.npu_modeled_s);
    if (!io_on_npu) {
        CHECK_EQ_INT(0, steps[3].tasks);
        CHECK(steps[3].host_s > 0 && steps[4].host_s > 0);
    }
    /* wrong inputs are refused with a message */
    struct npu_tensor bad = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {64, 63}, .data = &bad};
    struct npu_tensor out;
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_session_run(s, &bad, 1, &out, 1, NULL));
    CHECK(strstr(npu_prog_session_error(s), "input 0") != NULL);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_session_run(s, &bad, 1, &out, 2, NULL));
    CHECK_EQ_INT(NPU_ERR_INVALID,
                 npu_prog_session_create(m, 3, 1, &(struct npu_prog_session *){0}));
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
    hand_prog_free(&h);
}

static void
test_fault(struct npu_device *dev)
{
    struct hand_prog h;
    CHECK_EQ_INT(0, hand_prog_make(&h, 64, 64, 32, false, 8));
    /* The output written from 16 bytes before the end of ACT: the reloc is
     * valid (inside the buffer) but the DMA runs past the BO. */
    for (uint32_t r = 0; r < h.job.n_relocs; r++)
        if (h.relocs[r].buffer == NPU_BUF_ACT && h.relocs[r].offset == h.t[HT_C32].offset)
            h.relocs[r].offset = (uint32_t)(NPU_ALIGN(h.p.act_bytes, 4096) - 16);
    h.p.act_bytes = NPU_ALIGN(h.p.act_bytes, 4096);
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &h.p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    float *a = calloc((size_t)64 * 64, 4);
    struct npu_tensor in = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {64, 64}, .data = a};
    struct npu_tensor out;
    npu_log_set_level(-1); /* the fault is expected: keep the log quiet */
    enum npu_status st = npu_prog_session_run(s, &in, 1, &out, 1, NULL);
    npu_log_set_level(NPU_LOG_WARN);
    CHECK_EQ_INT(NPU_ERR_FAULT, st);
    const char *e = npu_prog_session_error(s);
    printf("fault: %s\n", e);
    CHECK(strstr(e, "step 1 'matmul'") != NULL);
    CHECK(strstr(e, "job 0") != NULL);
    CHECK(strstr(e, "fault") != NULL);
    /* the session stays usable: a later run fails the same way, cleanly */
    npu_log_set_level(-1);
    CHECK_EQ_INT(NPU_ERR_FAULT, npu_prog_session_run(s, &in, 1, &out, 1, NULL));
    npu_log_set_level(NPU_LOG_WARN);
    free(a);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
    hand_prog_free(&h);
}

/* One corruption of a valid program and the words its message must contain. */
static void
expect_invalid(struct npu_device *dev, const struct npu_program *p, const char *words)
{
    char msg[512];
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_program_validate(p, msg, sizeof(msg)));
    if (!strstr(msg, words))
        fprintf(stderr, "validation message \"%s\" lacks \"%s\"\n", msg, words);
    CHECK(strstr(msg, words) != NULL);
    struct npu_prog_model *m = NULL;
    npu_log_set_level(-1);
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_prog_model_create(dev, p, NULL, &m));
    npu_log_set_level(NPU_LOG_WARN);
    CHECK(m == NULL);
}

static void
test_validate(struct npu_device *dev)
{
    struct hand_prog h;
    CHECK_EQ_INT(0, hand_prog_make(&h, 64, 64, 32, false, 9));
    char msg[256];
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&h.p, msg, sizeof(msg)));
    CHECK_STR("", msg);

    struct npu_program p = h.p;
    p.version = 2;
    expect_invalid(dev, &p, "program version 2");

    struct npu_prog_tensor t[HT_COUNT];
    memcpy(t, h.t, sizeof(t));
    p = h.p;
    p.tensors = t;
    t[HT_C32].offset = h.p.act_bytes - 64;
    expect_invalid(dev, &p, "tensor 2 'c32': bytes");
    memcpy(t, h.t, sizeof(t));
    t[HT_C].offset = h.p.host_bytes;
    expect_invalid(dev, &p, "outside the");
    memcpy(t, h.t, sizeof(t));
    t[HT_A16].npu_c = 63;
    expect_invalid(dev, &p, "does not match its dims");
    memcpy(t, h.t, sizeof(t));
    t[HT_A16].bytes = 8;
    expect_invalid(dev, &p, "its layout needs");
    memcpy(t, h.t, sizeof(t));
    t[HT_A16].buffer = 5;
    expect_invalid(dev, &p, "buffer 5");
    memcpy(t, h.t, sizeof(t));
    t[HT_Y].t.dtype = 77;
    expect_invalid(dev, &p, "dtype 77");
    memcpy(t, h.t, sizeof(t));
    t[HT_Y].t.dims[1] = -3;
    expect_invalid(dev, &p, "negative");
    memcpy(t, h.t, sizeof(t));
    t[HT_Y].layout = 9;
    expect_invalid(dev, &p, "layout 9");

    struct npu_prog_step s[8];
    memcpy(s, h.s, sizeof(s));
    p = h.p;
    p.steps = s;
    s[3].kind = 7;
    expect_invalid(dev, &p, "kind 7");
    memcpy(s, h.s, sizeof(s));
    s[1].job = 1;
    expect_invalid(dev, &p, "job 1 (1 jobs)");
    memcpy(s, h.s, sizeof(s));
    int bad_in[2] = {HT_C32, HT_BIAS};
    s[3].in = bad_in;
    expect_invalid(dev, &p, "reads tensor 2 'c32' in NPU memory");
    memcpy(s, h.s, sizeof(s));
    int bad_out[1] = {HT_BIAS};
    s[4].out = bad_out;
    expect_invalid(dev, &p, "which is a constant");
    memcpy(s, h.s, sizeof(s));
    int idx99[2] = {99, HT_BIAS};
    s[3].in = idx99;
    expect_invalid(dev, &p, "names tensor 99");
    memcpy(s, h.s, sizeof(s));
    s[3].op = NPU_OP_COUNT + 3;
    expect_invalid(dev, &p, "not a known op");
    memcpy(s, h.s, sizeof(s));
    int conv_bad[1] = {HT_BIAS};
    s[0].out = conv_bad;
    expect_invalid(dev, &p, "constant");

    /* dataflow of host tensors: an output no step writes, a read before the write */
    p = h.p;
    p.n_steps = 4; /* the Relu that writes y is gone */
    expect_invalid(dev, &p, "output 0: tensor 6 'y' is never written");
    memcpy(s, h.s, sizeof(s));
    struct npu_prog_step tmp_step = s[3];
    s[3] = s[4];
    s[4] = tmp_step; /* Relu(cb) before Add writes cb */
    p = h.p;
    p.steps = s;
    expect_invalid(dev, &p, "step 3 'relu' reads tensor 5 'cb' before any step writes it");

    p = h.p;
    int in99 = 99;
    p.inputs = &in99;
    expect_invalid(dev, &p, "input 0 names tensor 99");
    p = h.p;
    int in_w = HT_BIAS;
    p.inputs = &in_w;
    expect_invalid(dev, &p, "constant or weight");

    struct npu_prog_job j = h.job;
    struct npu_prog_reloc r[64];
    struct npu_prog_task tk[4];
    p = h.p;
    p.jobs = &j;
    memcpy(r, h.relocs, sizeof(*r) * h.job.n_relocs);
    j.relocs = r;
    r[0].qword = j.n_qwords;
    expect_invalid(dev, &p, "reloc 0: qword");
    memcpy(r, h.relocs, sizeof(*r) * h.job.n_relocs);
    r[0].buffer = 7;
    expect_invalid(dev, &p, "buffer id 7");
    memcpy(r, h.relocs, sizeof(*r) * h.job.n_relocs);
    r[0].offset = (uint32_t)(r[0].buffer == NPU_BUF_ACT ? h.p.act_bytes : h.p.weights_bytes);
    expect_invalid(dev, &p, "reloc 0: offset");
    memcpy(r, h.relocs, sizeof(*r) * h.job.n_relocs);
    r[0].qword = h.tasks[0].start + h.tasks[0].n_body + 2; /* the marker */
    expect_invalid(dev, &p, "not a DMA address register");
    memcpy(r, h.relocs, sizeof(*r) * h.job.n_relocs);
    j.n_relocs = h.job.n_relocs - 1; /* the last address stays absolute */
    expect_invalid(dev, &p, "an address without a relocation");
    j = h.job;
    memcpy(tk, h.tasks, sizeof(*tk) * h.job.n_tasks);
    j.tasks = tk;
    tk[0].n_body = j.n_qwords;
    expect_invalid(dev, &p, "past the image");
    memcpy(tk, h.tasks, sizeof(*tk) * h.job.n_tasks);
    tk[0].start = 3;
    expect_invalid(dev, &p, "64-byte boundary");
    j = h.job;
    j.segment_align = 48;
    expect_invalid(dev, &p, "segment alignment 48");
    j = h.job;
    j.n_tasks = 0;
    expect_invalid(dev, &p, "0 tasks");

    p = h.p;
    p.weights = NULL;
    expect_invalid(dev, &p, "no weights");
    p = h.p;
    p.act_bytes = 1ull << 33;
    expect_invalid(dev, &p, "4 GiB");
    hand_prog_free(&h);
}

/* A program of one CPU step over four tensors: inputs 0, 1, 2 (0 the program's input, 1 and 2
 * constants), output 3 (the program's output). The arrays live in the struct. */
struct one_cpu_step {
    int ins[3], outs[1], pin[1], pout[1];
    struct npu_prog_step st;
    struct npu_program p;
};

static void
one_cpu_step_init(struct one_cpu_step *o, struct npu_prog_tensor *t, enum npu_op op,
                  struct npu_attr *at, int nat, const char *name, uint64_t host_bytes)
{
    *o = (struct one_cpu_step){.ins = {0, 1, 2}, .outs = {3}, .pin = {0}, .pout = {3}};
    o->st = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                   .op = op,
                                   .attrs = {at, nat},
                                   .in = o->ins,
                                   .nin = 3,
                                   .out = o->outs,
                                   .nout = 1,
                                   .name = name};
    o->p = (struct npu_program){.version = NPU_PROGRAM_VERSION,
                                .tensors = t,
                                .n_tensors = 4,
                                .steps = &o->st,
                                .n_steps = 1,
                                .inputs = o->pin,
                                .n_inputs = 1,
                                .outputs = o->pout,
                                .n_outputs = 1,
                                .host_bytes = host_bytes};
}

static void
test_cpu_epilogue(void)
{
    /* y = clip(a . b + bias, -1, 1) in fp16: MatMul kernels fuse only fp32, so
     * the executor adds the bias and clips with the unfused kernels. */
    enum { M = 3, K = 5, N = 4 };
    uint16_t a[M * K], b[K * N], bias[N];
    float af[M * K], bf[K * N], biasf[N];
    for (int i = 0; i < M * K; i++)
        af[i] = npu_fp16_to_fp32(a[i] = npu_fp32_to_fp16(frand()));
    for (int i = 0; i < K * N; i++)
        bf[i] = npu_fp16_to_fp32(b[i] = npu_fp32_to_fp16(frand()));
    for (int i = 0; i < N; i++)
        biasf[i] = npu_fp16_to_fp32(bias[i] = npu_fp32_to_fp16(frand()));
    struct npu_prog_tensor t[4];
    memset(t, 0, sizeof(t));
    int64_t da[2] = {M, K}, db[2] = {K, N}, dc[1] = {N}, dy[2] = {M, N};
    t[0] = tdesc(NPU_DTYPE_FP16, 2, da, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    t[1] = tdesc(NPU_DTYPE_FP16, 2, db, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    t[1].t.data = b;
    t[2] = tdesc(NPU_DTYPE_FP16, 1, dc, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    t[2].t.data = bias;
    t[3] = tdesc(NPU_DTYPE_FP16, 2, dy, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    t[3].offset = 64;
    struct npu_attr at[3] = {
        {.name = "npu_act", .type = NPU_ATTR_STRING, .s = "clip"},
        {.name = "npu_act_alpha", .type = NPU_ATTR_FLOAT, .f = -1},
        {.name = "npu_act_beta", .type = NPU_ATTR_FLOAT, .f = 1},
    };
    struct one_cpu_step one;
    one_cpu_step_init(&one, t, NPU_OP_MATMUL, at, 3, "mm", 128);
    struct npu_program p = one.p;
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(NULL, &p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    struct npu_tensor in = {.dtype = NPU_DTYPE_FP16, .ndim = 2, .dims = {M, K}, .data = a}, out;
    CHECK_EQ_INT(NPU_OK, npu_prog_session_run(s, &in, 1, &out, 1, NULL));
    const uint16_t *y = out.data;
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int q = 0; q < K; q++)
                acc += (double)af[i * K + q] * bf[q * N + j];
            double r = npu_fp16_to_fp32(npu_fp32_to_fp16((float)acc)) + biasf[j];
            r = r < -1 ? -1 : r > 1 ? 1 : r;
            bad += fabs(npu_fp16_to_fp32(y[i * N + j]) - r) > 4e-3;
        }
    CHECK_EQ_INT(0, bad);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
}

static void
test_cpu_conv_prepared(void)
{
    /* A CPU Conv step with constant weights: the session prepares it once (prog_cpu_prepare,
     * npu_cpu_prepare: packed weights where core/cpu has the direct path) and every run gives
     * the bits npu_cpu_run gives. White-box check that the prepared weights are the ones
     * used: after the runs the program's weight bytes are scribbled over (which the contract
     * forbids a caller to do); a prepared step keeps the packed copy, so its output must not
     * change, and an unprepared one must. */
    enum { C = 16, M = 32, H = 12, W = 12 };
    static float x[C * H * W], w[M * C * 9], b[M];
    for (int i = 0; i < C * H * W; i++)
        x[i] = frand();
    for (int i = 0; i < M * C * 9; i++)
        w[i] = frand() * 0.25f;
    for (int i = 0; i < M; i++)
        b[i] = frand();
    struct npu_prog_tensor t[4];
    int64_t dx[4] = {1, C, H, W}, dw[4] = {M, C, 3, 3}, db[1] = {M}, dy[4] = {1, M, H, W};
    t[0] = tdesc(NPU_DTYPE_FP32, 4, dx, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    t[1] = tdesc(NPU_DTYPE_FP32, 4, dw, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    t[1].t.data = w;
    t[2] = tdesc(NPU_DTYPE_FP32, 1, db, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    t[2].t.data = b;
    t[3] = tdesc(NPU_DTYPE_FP32, 4, dy, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    int64_t pads[4] = {1, 1, 1, 1}, ks[2] = {3, 3};
    struct npu_attr at[3] = {
        {.name = "pads", .type = NPU_ATTR_INTS, .ints = pads, .n = 4},
        {.name = "kernel_shape", .type = NPU_ATTR_INTS, .ints = ks, .n = 2},
        {.name = "npu_act", .type = NPU_ATTR_STRING, .s = "relu"},
    };
    struct one_cpu_step one;
    one_cpu_step_init(&one, t, NPU_OP_CONV, at, 3, "conv", sizeof(float) * M * H * W);
    struct npu_program p = one.p;
    /* the reference: the same op through plain npu_cpu_run */
    static float ref[M * H * W];
    struct npu_tensor tx = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, H, W}, .data = x};
    struct npu_tensor tw = t[1].t, tb = t[2].t, ty = t[3].t;
    ty.data = ref;
    const struct npu_tensor *rin[3] = {&tx, &tw, &tb};
    struct npu_tensor *rout[1] = {&ty};
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(1);
    CHECK(ctx != NULL);
    struct npu_attrs attrs = {at, 3};
    CHECK_EQ_INT(NPU_OK, npu_cpu_run(ctx, NPU_OP_CONV, &attrs, rin, 3, rout, 1));
    /* whether core/cpu prepares this Conv on this machine */
    struct npu_cpu_prep *probe = NULL;
    struct npu_tensor tx0 = tx;
    tx0.data = NULL;
    const struct npu_tensor *pin3[3] = {&tx0, &tw, &tb};
    CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(NPU_OP_CONV, &attrs, pin3, 3, &probe));
    bool prepared = probe != NULL;
    npu_cpu_prep_free(probe);
    npu_cpu_ctx_destroy(ctx);

    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(NULL, &p, NULL, &m));
    CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    struct npu_tensor out;
    for (int r = 0; r < 3; r++) {
        CHECK_EQ_INT(NPU_OK, npu_prog_session_run(s, &tx, 1, &out, 1, NULL));
        CHECK(!memcmp(out.data, ref, sizeof(ref)));
    }
    for (int i = 0; i < M * C * 9; i++)
        w[i] = -w[i];
    CHECK_EQ_INT(NPU_OK, npu_prog_session_run(s, &tx, 1, &out, 1, NULL));
    CHECK_EQ_INT(prepared, !memcmp(out.data, ref, sizeof(ref)));
    fprintf(stderr, "test-program: CPU Conv step %s\n",
            prepared ? "prepared once per session" : "not prepared here (no direct path)");
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
}

/* ---- concurrency ------------------------------------------------------------------ */

struct worker {
    struct npu_prog_model *m;
    struct hand_prog *h;
    int core, runs, ok;
    uint32_t cores_seen;
};

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct npu_prog_session *s = NULL;
    if (npu_prog_session_create(w->m, w->core, 1, &s))
        return NULL;
    for (int i = 0; i < w->runs; i++) {
        struct npu_prog_run_stats rs = {0};
        double worst = check_run(w->h, s, false, (uint32_t)(w->core * 1000 + i), &rs);
        w->ok += worst >= 0 && worst <= 1;
        w->cores_seen |= rs.core_mask;
    }
    npu_prog_session_destroy(s);
    return NULL;
}

static void
test_concurrency(struct npu_device *dev)
{
    struct hand_prog h;
    CHECK_EQ_INT(0, hand_prog_make(&h, 64, 128, 64, false, 10));
    struct npu_prog_model *m = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &h.p, NULL, &m));
    struct worker w[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (struct worker){m, &h, i, 12, 0, 0};
        CHECK_EQ_INT(0, pthread_create(&th[i], NULL, worker_main, &w[i]));
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(w[i].runs, w[i].ok);
        CHECK_EQ_INT(1u << i, w[i].cores_seen);
    }
    printf("concurrency: 3 threads x %d runs on cores 0, 1, 2: all correct\n", w[0].runs);
    npu_prog_model_destroy(m);
    hand_prog_free(&h);
}

/* ---- argmax over the NPU layout --------------------------------------------------- */

/* choose()'s greedy scan (npu-llm.c) over host floats */
static int64_t
ref_argmax(const float *v, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[b])
            b = i;
    return b;
}

/* v (numel of t) converted into t's layout, padding channels filled with +inf (fp16 0x7c00
 * or fp32), then the argmax read there against ref_argmax */
static int64_t
argmax_in_layout(const struct npu_prog_tensor *t, const float *v, int64_t base,
                 struct npu_prog_argmax *acc)
{
    const int64_t n = npu_tensor_numel(&t->t);
    int64_t dims[1] = {n};
    struct npu_prog_tensor host = tdesc(NPU_DTYPE_FP32, 1, dims, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    const size_t es = npu_dtype_size(npu_prog_mem_dtype(t));
    uint8_t *d = malloc(t->bytes + 1);
    void *tmp = malloc(npu_prog_convert_scratch(&host, t) + 1);
    memset(d, 0, t->bytes);
    CHECK_EQ_INT(NPU_OK, npu_prog_convert(&host, v, t, d, tmp));
    if (t->layout == NPU_LAYOUT_NC1HWC2 && t->npu_order == NPU_VIEW_NCHW) {
        const uint32_t c2 = (uint32_t)(16 / es), cp = (t->npu_c + c2 - 1) / c2 * c2;
        const size_t one = npu_nc1hwc2_bytes(es, t->npu_c, t->npu_h, t->npu_w);
        for (size_t img = 0; img < t->bytes / one; img++)
            for (uint32_t c = t->npu_c; c < cp; c++)
                for (uint32_t y = 0; y < t->npu_h; y++)
                    for (uint32_t x = 0; x < t->npu_w; x++) {
                        uint8_t *e =
                            d + img * one + npu_nc1hwc2_offset(es, c, y, x, t->npu_h, t->npu_w);
                        const uint16_t h = 0x7c00;
                        const float f = INFINITY;
                        memcpy(e, es == 2 ? (const void *)&h : (const void *)&f, es);
                    }
    }
    struct npu_prog_argmax one = {.index = -1};
    if (!acc)
        acc = &one;
    CHECK_EQ_INT(NPU_OK, npu_prog_argmax(t, d, base, acc));
    free(d);
    free(tmp);
    return acc->index;
}

static void
test_argmax(void)
{
    /* [1, 21]: 8 + 8 + 5 channels, the last group padded by 3 */
    int64_t d21[2] = {1, 21};
    struct npu_prog_tensor t16 =
        tdesc(NPU_DTYPE_FP32, 2, d21, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP16, 21, 1, 1, NPU_VIEW_NCHW);
    struct npu_prog_tensor t32 =
        tdesc(NPU_DTYPE_FP32, 2, d21, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_FP32, 21, 1, 1, NPU_VIEW_NCHW);
    struct npu_prog_tensor lin16 =
        tdesc(NPU_DTYPE_FP32, 2, d21, NPU_LAYOUT_NCHW, NPU_DTYPE_FP16, 0, 0, 0, 0);
    const struct npu_prog_tensor *ts[3] = {&t16, &t32, &lin16};
    float v[21];
    for (int k = 0; k < 3; k++) {
        const struct npu_prog_tensor *t = ts[k];
        for (int i = 0; i < 21; i++)
            v[i] = -1.0f - (float)i / 8;
        v[3] = v[10] = 2.0f; /* a tie: the first */
        CHECK_EQ_INT(3, argmax_in_layout(t, v, 0, NULL));
        v[20] = 2.5f; /* the maximum in the last, padded, group */
        CHECK_EQ_INT(20, argmax_in_layout(t, v, 0, NULL));
        for (int i = 0; i < 21; i++)
            v[i] = -1.0f;
        v[5] = -0.0f, v[7] = 0.0f; /* -0 == +0: the first */
        CHECK_EQ_INT(5, argmax_in_layout(t, v, 0, NULL));
        v[5] = 0.0f, v[7] = -0.0f;
        CHECK_EQ_INT(5, argmax_in_layout(t, v, 0, NULL));
        v[0] = NAN; /* a NaN first: kept, as a scan from element 0 keeps it */
        CHECK_EQ_INT(0, ref_argmax(v, 21));
        CHECK_EQ_INT(0, argmax_in_layout(t, v, 0, NULL));
        v[0] = -1.0f, v[2] = NAN, v[12] = NAN; /* NaN elsewhere: never greater */
        CHECK_EQ_INT(5, argmax_in_layout(t, v, 0, NULL));
        /* continued over a second tensor whose first element is NaN and which holds the
         * maximum: as one scan over the concatenation */
        struct npu_prog_argmax acc = {.index = -1};
        argmax_in_layout(t, v, 0, &acc);
        float w[21];
        for (int i = 0; i < 21; i++)
            w[i] = -3.0f;
        w[0] = NAN, w[9] = 1.0f;
        CHECK_EQ_INT(21 + 9, argmax_in_layout(t, w, 21, &acc));
        CHECK(acc.value == 1.0f);
    }
    /* random values against the scan over the converted floats: CHW views of several images
     * and [pixels][C] rows, fp16 and fp32 */
    const uint32_t shapes[][4] = {{1, 17, 3, 2}, {2, 8, 4, 4}, {3, 33, 1, 5}, {1, 50, 1, 1}};
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++)
        for (int m = 0; m < 3; m++) {
            const uint32_t *sh = shapes[k];
            int64_t dims[4] = {sh[0], sh[1], sh[2], sh[3]};
            int64_t rdims[2] = {(int64_t)sh[0] * sh[2] * sh[3], sh[1]};
            const enum npu_dtype md = m == 1 ? NPU_DTYPE_FP32 : NPU_DTYPE_FP16;
            struct npu_prog_tensor t = m < 2
                                           ? tdesc(NPU_DTYPE_FP32, 4, dims, NPU_LAYOUT_NC1HWC2, md,
                                                   sh[1], sh[2], sh[3], NPU_VIEW_NCHW)
                                           : tdesc(NPU_DTYPE_FP32, 2, rdims, NPU_LAYOUT_NC1HWC2, md,
                                                   sh[1], (uint32_t)rdims[0], 1, NPU_VIEW_HWC);
            const int64_t n = npu_tensor_numel(&t.t);
            float *x = malloc((size_t)n * sizeof(float));
            for (int rep = 0; rep < 8; rep++) {
                for (int64_t i = 0; i < n; i++) /* coarse values: ties in fp16 and fp32 */
                    x[i] = (float)((int)(hp_rand(&seed) % 9) - 4) / 4;
                if (rep & 1)
                    x[hp_rand(&seed) % (uint32_t)n] = NAN;
                CHECK_EQ_INT(ref_argmax(x, n), argmax_in_layout(&t, x, 0, NULL));
            }
            free(x);
        }
    /* refused: an integer tensor without a scale */
    struct npu_prog_tensor i8 =
        tdesc(NPU_DTYPE_INT8, 2, d21, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_INT8, 21, 1, 1, NPU_VIEW_NCHW);
    struct npu_prog_argmax acc = {.index = -1};
    uint8_t buf[64] = {0};
    npu_log_set_level((enum npu_log_level) - 1);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_prog_argmax(&i8, buf, 0, &acc));
    npu_log_set_level(NPU_LOG_WARN);
    /* int8 with a scale and zero point (a w8a8 LM head's slices): the argmax of the values
     * its conversion to fp32 dequantises them to, continued over two slices of different
     * scales as one scan over their concatenation (coarse values: ties within and across) */
    int64_t d37[2] = {1, 37};
    struct npu_prog_tensor q8[2],
        qh = tdesc(NPU_DTYPE_INT8, 2, d37, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0),
        fh = tdesc(NPU_DTYPE_FP32, 2, d37, NPU_LAYOUT_NCHW, 0, 0, 0, 0, 0);
    const float scales[2] = {0.5f, 0.25f};
    const int32_t zeros[2] = {-3, 5};
    for (int rep = 0; rep < 16; rep++) {
        float ref[74];
        struct npu_prog_argmax qa = {.index = -1};
        for (int k = 0; k < 2; k++) {
            q8[k] = tdesc(NPU_DTYPE_INT8, 2, d37, NPU_LAYOUT_NC1HWC2, NPU_DTYPE_INT8, 37, 1, 1,
                          NPU_VIEW_NCHW);
            q8[k].t.qscale = qh.t.qscale = scales[k];
            q8[k].t.qzero = qh.t.qzero = zeros[k];
            int8_t hv[37];
            for (int i = 0; i < 37; i++)
                hv[i] = (int8_t)((int)(hp_rand(&seed) % 7) * 4 - 12);
            uint8_t *nb = calloc(q8[k].bytes + 1, 1);
            void *tmp = malloc(npu_prog_convert_scratch(&q8[k], &fh) + 64);
            CHECK_EQ_INT(NPU_OK, npu_prog_convert(&qh, hv, &q8[k], nb, tmp));
            CHECK_EQ_INT(NPU_OK, npu_prog_convert(&q8[k], nb, &fh, ref + 37 * k, tmp));
            CHECK_EQ_INT(NPU_OK, npu_prog_argmax(&q8[k], nb, 37 * k, &qa));
            free(nb);
            free(tmp);
        }
        CHECK_EQ_INT(ref_argmax(ref, 74), qa.index);
        CHECK(qa.value == ref[qa.index]);
    }
}

int
main(void)
{
    test_convert_chw(1, 3, 5, 7);
    test_convert_chw(2, 8, 4, 4);
    test_convert_chw(1, 17, 3, 2);
    test_convert_chw(1, 1, 1, 1);
    test_convert_rows(1, 6, 9, 1);
    test_convert_rows(2, 5, 16, 5);
    test_convert_rows(3, 4, 33, 2);
    test_convert_misc();
    test_argmax();
    test_cpu_epilogue();
    test_cpu_conv_prepared();

    struct npu_device *dev = NULL;
    CHECK_EQ_INT(NPU_OK, npu_device_open("sim", &dev));
    if (!dev)
        return npu_test_done("test-program");
    test_run(dev, false);
    test_run(dev, true);
    test_fault(dev);
    test_validate(dev);
    test_concurrency(dev);
    npu_device_close(dev);
    return npu_test_done("test-program");
}
