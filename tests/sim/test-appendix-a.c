/* SPDX-License-Identifier: MIT */
/*
 * test-appendix-a.c: the two hardware-proven programs of facts Appendix A,
 * built by the hardware layer (npu_ref_matmul_emit, npu_ref_eltwise_emit,
 * npu_stream_layout, relocation, vendor descriptors, layouts and weight
 * packing) and run through the device API on the simulator in strict mode,
 * against a plain CPU reference:
 *
 *  A.1 matmul in one task: fp16 -> fp32, fp16 -> fp16, int8 -> int32, for
 *      M = 1 / 4 / 64. Integer-valued fp16 inputs give exact fp32 sums (MTX
 *      observation), so those compare bit for bit; random fp16 data must stay
 *      within the fp32 summation bound of the exact sum.
 *  A.2 DPU flying-mode elementwise add/sub/mul/max/min for int8, int16 and
 *      int32 (AB's hardware probe: saturating; int32 MUL takes the second
 *      operand as signed int16) and fp16 (with and without fp32 inside).
 */
#include <math.h>

#include "npu-handprog.h"
#include "npu-test-matmul.h"
#include "npu-test.h"

enum {
    BUF_A = NPU_TEST_MM_A,
    BUF_B = NPU_TEST_MM_B,
    BUF_C = NPU_TEST_MM_C,
    N_BUFS = NPU_TEST_MM_NBUF
};

struct prog {
    struct npu_bo *task, *regcmd;
};

/* Lays out a one-task stream, relocates it against the BOs and runs it. */
static enum npu_status
run_stream(struct npu_device *dev, struct npu_stream *s, struct npu_bo *const *bufs,
           struct npu_job_result *res, char *msg)
{
    struct npu_regcmd_image img;
    struct npu_bo *rc = NULL, *task = NULL;
    enum npu_status st = npu_stream_status(s);
    if (st != NPU_OK) {
        snprintf(msg, 512, "stream: %s", npu_stream_error(s));
        return st;
    }
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 64 * 1024, 0, &rc));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 40 * 4, NPU_BO_TASKS, &task));
    st = npu_stream_layout(s, npu_bo_iova(rc), NPU_SEGMENT_ALIGN, &img);
    CHECK_EQ_INT(NPU_OK, st);
    if (st == NPU_OK) {
        uint32_t iova[N_BUFS];
        for (int i = 0; i < N_BUFS; i++)
            iova[i] = bufs[i] ? npu_bo_iova(bufs[i]) : 0;
        CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, iova, N_BUFS));
        memcpy(npu_bo_map(rc), img.qwords, img.n_qwords * 8);
        CHECK_EQ_INT(NPU_OK, npu_image_fill_rknpu_tasks(&img, npu_bo_map(task), img.n_tasks));
        struct npu_submit sub = ts_submit(task, 0, img.n_tasks, 1);
        st = ts_run(dev, &sub, res, msg, 512);
        npu_image_fini(&img);
    }
    npu_bo_destroy(rc);
    npu_bo_destroy(task);
    return st;
}

/* ------------------------------------------------------------------- A.1 */

static void
test_matmul(struct npu_device *dev, enum npu_ref_matmul_kind kind, uint32_t M, uint32_t K,
            uint32_t N, bool integer_valued)
{
    bool int8 = kind == NPU_REF_MATMUL_INT8_INT32;
    size_t es = int8 ? 1 : 2, os = kind == NPU_REF_MATMUL_FP16_FP16 ? 2 : 4;
    struct npu_weight_layout wl;
    CHECK_EQ_INT(NPU_OK, npu_weight_layout_init(&wl, es, N, K, 1, 1, false));
    size_t a_bytes = npu_nc1hwc2_bytes(es, K, M, 1), c_bytes = npu_nc1hwc2_bytes(os, N, M, 1);
    struct npu_bo *buf[N_BUFS] = {0};
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, a_bytes, 0, &buf[BUF_A]));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, wl.total_bytes, 0, &buf[BUF_B]));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, c_bytes, 0, &buf[BUF_C]));

    /* A [M][K] and B [K][N] row-major, in the element format */
    uint32_t seed = M * 131 + K * 7 + N;
    double *a = malloc(sizeof(double) * M * K), *b = malloc(sizeof(double) * K * N);
    void *a_raw = malloc(es * M * K), *b_raw = malloc(es * K * N);
    for (size_t i = 0; i < (size_t)M * K + (size_t)K * N; i++) {
        double v;
        if (int8)
            v = (int8_t)trand(&seed);
        else if (integer_valued)
            v = (int)(trand(&seed) % 9) - 4;
        else
            v = npu_fp16_to_fp32(npu_fp32_to_fp16(((int)(trand(&seed) % 20001) - 10000) / 4999.0f));
        double *dst = i < (size_t)M * K ? &a[i] : &b[i - (size_t)M * K];
        void *raw = i < (size_t)M * K ? a_raw : b_raw;
        size_t j = i < (size_t)M * K ? i : i - (size_t)M * K;
        *dst = v;
        if (int8) {
            ((int8_t *)raw)[j] = (int8_t)v;
        } else {
            ((uint16_t *)raw)[j] = npu_fp32_to_fp16((float)v);
        }
    }
    /* A as an NC1HWC2 map W = 1, H = M, C = K: NCHW source [1][K][M][1] */
    void *a_nchw = malloc(es * M * K);
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t k = 0; k < K; k++)
            memcpy((uint8_t *)a_nchw + es * ((size_t)k * M + m),
                   (uint8_t *)a_raw + es * ((size_t)m * K + k), es);
    CHECK_EQ_INT(NPU_OK,
                 npu_nchw_to_nc1hwc2(npu_bo_map(buf[BUF_A]), a_bytes, a_nchw, es, 1, K, M, 1, 0));
    CHECK_EQ_INT(NPU_OK,
                 npu_weight_pack_matmul(&wl, npu_bo_map(buf[BUF_B]), wl.total_bytes, b_raw, 0));

    struct npu_stream s;
    npu_stream_init(&s);
    npu_test_mm_emit(&s, kind, M, K, N);
    char msg[512] = "";
    struct npu_job_result res;
    enum npu_status st = run_stream(dev, &s, buf, &res, msg);
    npu_stream_fini(&s);
    CHECK_EQ_INT(NPU_OK, st);
    if (st != NPU_OK)
        fprintf(stderr, "matmul %u/%u/%u: %s\n", M, K, N, msg);

    const uint8_t *c = npu_bo_map(buf[BUF_C]);
    unsigned bad = 0;
    double worst = 0;
    for (uint32_t m = 0; m < M && st == NPU_OK; m++)
        for (uint32_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (uint32_t k = 0; k < K; k++) {
                ref += a[(size_t)m * K + k] * b[(size_t)k * N + n];
                mag += fabs(a[(size_t)m * K + k] * b[(size_t)k * N + n]);
            }
            /* facts A.1: index (n / C2) * M * C2 + m * C2 + n % C2 */
            const uint8_t *q = c + npu_nc1hwc2_offset(os, n, m, 0, M, 1);
            double got;
            if (kind == NPU_REF_MATMUL_FP16_FP16) {
                uint16_t h;
                memcpy(&h, q, 2);
                got = npu_fp16_to_fp32(h);
            } else if (int8) {
                int32_t i;
                memcpy(&i, q, 4);
                got = i;
            } else {
                float f;
                memcpy(&f, q, 4);
                got = f;
            }
            double tol;
            if (int8 || integer_valued) {
                if (kind == NPU_REF_MATMUL_FP16_FP16)
                    ref = npu_fp16_to_fp32(npu_fp32_to_fp16((float)ref));
                tol = 0; /* exact sums (|partial| < 2^24) */
            } else {
                /* fp32 summation bound, plus the fp16 rounding of the result */
                tol = K * ldexp(1.0, -24) * mag;
                if (kind == NPU_REF_MATMUL_FP16_FP16)
                    tol += fabs(ref) * ldexp(1.0, -11) + ldexp(1.0, -24);
            }
            double err = fabs(got - ref);
            if (tol > 0)
                worst = fmax(worst, err / tol);
            if (err > tol && bad++ < 3)
                fprintf(stderr, "matmul %ux%ux%u: C[%u][%u] = %.9g, expected %.9g\n", M, K, N, m, n,
                        got, ref);
        }
    CHECK_EQ_INT(0, bad);
    if (st == NPU_OK)
        printf("A.1 %s M=%u K=%u N=%u %s: %s\n",
               int8                               ? "int8->int32"
               : kind == NPU_REF_MATMUL_FP16_FP16 ? "fp16->fp16"
                                                  : "fp16->fp32",
               M, K, N, int8 || integer_valued ? "integer data" : "random fp16",
               int8 || integer_valued ? "bit-exact" : "within the fp32 summation bound");
    free(a);
    free(b);
    free(a_raw);
    free(b_raw);
    free(a_nchw);
    for (int i = 0; i < N_BUFS; i++)
        npu_bo_destroy(buf[i]);
}

/* ------------------------------------------------------------------- A.2 */

static int64_t
sat(int64_t v, enum npu_precision p)
{
    int64_t lo = p == NPU_PRECISION_INT8    ? INT8_MIN
                 : p == NPU_PRECISION_INT16 ? INT16_MIN
                                            : INT32_MIN;
    int64_t hi = p == NPU_PRECISION_INT8    ? INT8_MAX
                 : p == NPU_PRECISION_INT16 ? INT16_MAX
                                            : INT32_MAX;
    return v < lo ? lo : v > hi ? hi : v;
}

static const char *const op_names[] = {"add", "sub", "mul", "div", "max", "min"};

static void
test_eltwise(struct npu_device *dev, enum npu_ref_ew_op op, enum npu_precision prec,
             int fp32_internal)
{
    const uint32_t W = 37, C = 24;
    size_t es = prec == NPU_PRECISION_INT8 ? 1 : prec == NPU_PRECISION_INT32 ? 4 : 2;
    size_t bytes = npu_nc1hwc2_bytes(es, C, 1, W);
    struct npu_bo *buf[N_BUFS] = {0};
    for (int i = 0; i < N_BUFS; i++)
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, bytes, 0, &buf[i]));
    uint8_t *x = npu_bo_map(buf[BUF_A]), *y = npu_bo_map(buf[BUF_B]);
    uint32_t seed = 1 + op * 17 + prec * 5;
    /* every element of x and y, padding channels included, gets a value */
    for (size_t i = 0; i < bytes / es; i++) {
        for (int which = 0; which < 2; which++) {
            uint8_t *p = (which ? y : x) + i * es;
            uint32_t r = trand(&seed);
            if (prec == NPU_PRECISION_FP16) {
                float v = ((int)(r % 20001) - 10000) / 1250.0f;
                if (op == NPU_REF_EW_DIV && which && fabsf(v) < 0.05f)
                    v = 0.5f;
                uint16_t h = npu_fp32_to_fp16(v);
                memcpy(p, &h, 2);
            } else if (prec == NPU_PRECISION_INT32) {
                /* beyond int16 to expose the int16 MUL operand */
                int32_t v = (int32_t)(r % 400001) - 200000;
                if (r & 0x100000)
                    v = (r & 1) ? INT32_MAX - (int32_t)(r % 7) : INT32_MIN + (int32_t)(r % 7);
                memcpy(p, &v, 4);
            } else {
                memcpy(p, &r, es);
            }
        }
    }
    struct npu_stream s;
    npu_stream_init(&s);
    struct npu_ref_eltwise p = {.op = op,
                                .precision = prec,
                                .w = W,
                                .c = C,
                                .fp32_internal = fp32_internal,
                                .x = {BUF_A, 0},
                                .y = {BUF_B, 0},
                                .z = {BUF_C, 0}};
    npu_ref_eltwise_emit(&s, &p);
    char msg[512] = "";
    enum npu_status st = run_stream(dev, &s, buf, NULL, msg);
    npu_stream_fini(&s);
    CHECK_EQ_INT(NPU_OK, st);
    if (st != NPU_OK)
        fprintf(stderr, "eltwise %s p%d: %s\n", op_names[op], prec, msg);
    const uint8_t *z = npu_bo_map(buf[BUF_C]);
    unsigned bad = 0;
    for (uint32_t c = 0; c < C && st == NPU_OK; c++)
        for (uint32_t w = 0; w < W; w++) {
            size_t o = npu_nc1hwc2_offset(es, c, 0, w, 1, W);
            if (prec == NPU_PRECISION_FP16) {
                uint16_t hx, hy, hz;
                memcpy(&hx, x + o, 2);
                memcpy(&hy, y + o, 2);
                memcpy(&hz, z + o, 2);
                float a = npu_fp16_to_fp32(hx), b = npu_fp16_to_fp32(hy), r;
                switch (op) {
                case NPU_REF_EW_ADD: r = a + b; break;
                case NPU_REF_EW_SUB: r = a - b; break;
                case NPU_REF_EW_MUL: r = a * b; break;
                case NPU_REF_EW_DIV: r = a / b; break;
                case NPU_REF_EW_MAX: r = a > b ? a : b; break;
                default: r = a < b ? a : b; break;
                }
                /* fp32 compute then one rounding to fp16 (exact for add/sub/
                 * mul of fp16 values in fp32; div differs from the exact
                 * quotient by fp32 rounding only, below fp16's half ulp) */
                if (hz != npu_fp32_to_fp16(r) && bad++ < 3)
                    fprintf(stderr, "fp16 %s(%g, %g) = %g, expected %g\n", op_names[op], a, b,
                            npu_fp16_to_fp32(hz), r);
                continue;
            }
            int64_t a, b, got;
            if (es == 1) {
                a = (int8_t)x[o];
                b = (int8_t)y[o];
                got = (int8_t)z[o];
            } else if (es == 2) {
                int16_t t;
                memcpy(&t, x + o, 2);
                a = t;
                memcpy(&t, y + o, 2);
                b = t;
                memcpy(&t, z + o, 2);
                got = t;
            } else {
                int32_t t;
                memcpy(&t, x + o, 4);
                a = t;
                memcpy(&t, y + o, 4);
                b = t;
                memcpy(&t, z + o, 4);
                got = t;
            }
            int64_t want;
            switch (op) {
            case NPU_REF_EW_ADD: want = sat(a + b, prec); break;
            case NPU_REF_EW_SUB: want = sat(a - b, prec); break;
            case NPU_REF_EW_MAX: want = a > b ? a : b; break;
            case NPU_REF_EW_MIN: want = a < b ? a : b; break;
            default:
                /* AB: with int32 the MUL operand is signed int16 */
                want = sat(a * (prec == NPU_PRECISION_INT32 ? (int16_t)(b & 0xffff) : b), prec);
                break;
            }
            if (got != want && bad++ < 3)
                fprintf(stderr, "int p%d %s(%lld, %lld) = %lld, expected %lld\n", prec,
                        op_names[op], (long long)a, (long long)b, (long long)got, (long long)want);
        }
    CHECK_EQ_INT(0, bad);
    for (int i = 0; i < N_BUFS; i++)
        npu_bo_destroy(buf[i]);
}

int
main(void)
{
    struct npu_device *dev = NULL;
    struct npu_device_options o = {.strict = 1};
    CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &dev));
    if (!dev)
        return npu_test_done("test-appendix-a");

    static const uint32_t shapes[][3] = {{1, 32, 16}, {4, 64, 32}, {64, 256, 48}, {1, 768, 64}};
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(shapes); i++) {
        test_matmul(dev, NPU_REF_MATMUL_FP16_FP32, shapes[i][0], shapes[i][1], shapes[i][2], true);
        test_matmul(dev, NPU_REF_MATMUL_FP16_FP16, shapes[i][0], shapes[i][1], shapes[i][2], true);
        test_matmul(dev, NPU_REF_MATMUL_INT8_INT32, shapes[i][0], shapes[i][1], shapes[i][2], true);
        test_matmul(dev, NPU_REF_MATMUL_FP16_FP32, shapes[i][0], shapes[i][1], shapes[i][2], false);
        test_matmul(dev, NPU_REF_MATMUL_FP16_FP16, shapes[i][0], shapes[i][1], shapes[i][2], false);
    }

    static const enum npu_ref_ew_op int_ops[] = {NPU_REF_EW_ADD, NPU_REF_EW_SUB, NPU_REF_EW_MUL,
                                                 NPU_REF_EW_MAX, NPU_REF_EW_MIN};
    static const enum npu_precision int_p[] = {NPU_PRECISION_INT8, NPU_PRECISION_INT16,
                                               NPU_PRECISION_INT32};
    for (unsigned pi = 0; pi < 3; pi++)
        for (unsigned oi = 0; oi < NPU_ARRAY_SIZE(int_ops); oi++)
            test_eltwise(dev, int_ops[oi], int_p[pi], -1);
    for (int op = NPU_REF_EW_ADD; op <= NPU_REF_EW_MIN; op++) {
        test_eltwise(dev, op, NPU_PRECISION_FP16, -1); /* what RKNN does */
        test_eltwise(dev, op, NPU_PRECISION_FP16, 0);  /* AB's A.2: fp16 inside */
    }
    printf("A.2 elementwise add/sub/mul/max/min int8/int16/int32 and fp16 (+div): done\n");
    npu_device_close(dev);
    return npu_test_done("test-appendix-a");
}
