/* SPDX-License-Identifier: MIT */
/*
 * test-conv.c: CNA/CORE and DPU features beyond the golden streams, each
 * against an independent double-precision reference: fp16/int8/int16
 * convolution with stride, padding and pad value, depthwise, dilation (strict
 * refuses it, lenient runs it), the Mesa small-channel uint8 input converter,
 * WEIGHT_REUSE / DATA_REUSE across tasks, per-channel bias through BRDMA with
 * ReLU and OUT_CVT to int8, register operands (BS ALU fp32, BN MUL fp16,
 * ReLU-X), and the timing model figures of a conv task.
 */
#include <math.h>

#include "npu-handconv.h"
#include "npu-test.h"
#include "npu/npu-timing.h"

struct rig {
    struct npu_device *dev;
    struct npu_bo *task, *regcmd, *in, *wt, *out, *aux;
};

static void
rig_open(struct rig *r, int strict)
{
    memset(r, 0, sizeof(*r));
    struct npu_device_options o = {.strict = strict};
    CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &r->dev));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, 40 * 4, NPU_BO_TASKS, &r->task));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, 16384, 0, &r->regcmd));
}

static void
rig_bufs(struct rig *r, struct tconv *t)
{
    npu_bo_destroy(r->in);
    npu_bo_destroy(r->wt);
    npu_bo_destroy(r->out);
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, tc_in_bytes(t), 0, &r->in));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, tc_w_bytes(t), 0, &r->wt));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, tc_out_bytes(t), 0, &r->out));
    t->in = npu_bo_iova(r->in);
    t->wt = npu_bo_iova(r->wt);
    t->out = npu_bo_iova(r->out);
}

static void
rig_close(struct rig *r)
{
    npu_bo_destroy(r->task);
    npu_bo_destroy(r->regcmd);
    npu_bo_destroy(r->in);
    npu_bo_destroy(r->wt);
    npu_bo_destroy(r->out);
    npu_bo_destroy(r->aux);
    npu_device_close(r->dev);
}

/* Runs program p as one task (op_en mask `enable`). */
static enum npu_status
rig_run1(struct rig *r, struct tprog *p, uint32_t enable, struct npu_job_result *res, char *msg)
{
    tp_tail(p, 0, 0, enable);
    uint32_t body = tp_store(r->regcmd, 0, p);
    td_set(r->task, 0, enable, body, npu_bo_iova(r->regcmd));
    struct npu_submit s = ts_submit(r->task, 0, 1, 1);
    return ts_run(r->dev, &s, res, msg, msg ? 512 : 0);
}

static void
fill(double *v, size_t n, int lo, int hi, uint32_t *seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = lo + (int)(trand(seed) % (uint32_t)(hi - lo + 1));
}

/* conv with everything but the DPU bypassed; checks every output. */
static void
check_conv(struct rig *r, struct tconv *t, int in_lo, int in_hi, int w_lo, int w_hi,
           const char *label)
{
    uint32_t seed = 4242 + t->C + t->K;
    size_t n_in = (size_t)t->C * t->H * t->W;
    size_t n_w = (size_t)(t->depthwise ? 1 : t->K) * t->C * t->kh * t->kw;
    double *in = malloc(n_in * sizeof(double)), *w = malloc(n_w * sizeof(double));
    fill(in, n_in, in_lo, in_hi, &seed);
    fill(w, n_w, w_lo, w_hi, &seed);
    rig_bufs(r, t);
    tc_store(t, npu_bo_map(r->in), npu_bo_map(r->wt), in, w);
    struct tprog p = {.n = 0};
    tc_body(&p, t);
    char msg[512] = "";
    struct npu_job_result res;
    enum npu_status st = rig_run1(r, &p, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU, &res, msg);
    CHECK_EQ_INT(NPU_OK, st);
    if (st != NPU_OK) {
        fprintf(stderr, "%s: %s\n", label, msg);
    } else {
        const uint8_t *o = npu_bo_map(r->out);
        unsigned bad = 0;
        uint32_t K = t->depthwise ? t->C : t->K;
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t y = 0; y < t->out_h; y++)
                for (uint32_t x = 0; x < t->out_w; x++) {
                    double ref = tc_ref(t, in, w, k, y, x), got;
                    const uint8_t *q = o + tc_out_off(t, k, y, x);
                    if (t->out_prec == NPU_PRECISION_FP16) {
                        uint16_t h;
                        memcpy(&h, q, 2);
                        got = npu_fp16_to_fp32(h);
                        ref = npu_fp16_to_fp32(npu_fp32_to_fp16((float)ref));
                    } else if (t->out_prec == NPU_PRECISION_FP32) {
                        float f;
                        memcpy(&f, q, 4);
                        got = f;
                    } else {
                        int32_t i;
                        memcpy(&i, q, 4);
                        got = i;
                    }
                    if (got != ref && bad++ < 3)
                        fprintf(stderr, "%s: out[%u][%u][%u] = %g, expected %g\n", label, k, y, x,
                                got, ref);
                }
        CHECK_EQ_INT(0, bad);
        printf("%s: %u x %u x %u outputs exact\n", label, K, t->out_h, t->out_w);
    }
    free(in);
    free(w);
}

static void
test_conv_shapes(void)
{
    struct rig r;
    rig_open(&r, 1);
    /* fp16 3x3, stride 2, pad 1 on both sides (bottom/right implied) */
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
    check_conv(&r, &t, -3, 3, -2, 2, "fp16 3x3 s2 p1");
    /* fp16 5x3 kernel, stride 1x2, fp32 output */
    t = (struct tconv){.prec = NPU_CNA_PRECISION_FP16,
                       .out_prec = NPU_PRECISION_FP32,
                       .C = 40,
                       .H = 11,
                       .W = 12,
                       .K = 20,
                       .kh = 5,
                       .kw = 3,
                       .sx = 2,
                       .sy = 1,
                       .out_h = 7,
                       .out_w = 5};
    check_conv(&r, &t, -4, 4, -3, 3, "fp16 5x3 s(2,1) -> fp32");
    /* int8 3x3 with padding and a non-zero pad value (Mesa's izp - 128) -> int32 */
    t = (struct tconv){.prec = NPU_CNA_PRECISION_INT8,
                       .out_prec = NPU_PRECISION_INT32,
                       .C = 32,
                       .H = 8,
                       .W = 10,
                       .K = 40,
                       .kh = 3,
                       .kw = 3,
                       .sx = 1,
                       .sy = 1,
                       .pad_t = 1,
                       .pad_l = 1,
                       .pad_value = -5,
                       .out_h = 8,
                       .out_w = 10};
    check_conv(&r, &t, -128, 127, -128, 127, "int8 3x3 p1 pad-value -5 -> int32");
    /* int16 1x1 -> int32 */
    t = (struct tconv){.prec = NPU_CNA_PRECISION_INT16,
                       .out_prec = NPU_PRECISION_INT32,
                       .C = 24,
                       .H = 6,
                       .W = 7,
                       .K = 16,
                       .kh = 1,
                       .kw = 1,
                       .sx = 1,
                       .sy = 1,
                       .out_h = 6,
                       .out_w = 7};
    check_conv(&r, &t, -3000, 3000, -3000, 3000, "int16 1x1 -> int32");
    /* depthwise fp16 3x3 pad 1 */
    t = (struct tconv){.prec = NPU_CNA_PRECISION_FP16,
                       .out_prec = NPU_PRECISION_FP16,
                       .C = 32,
                       .H = 12,
                       .W = 12,
                       .kh = 3,
                       .kw = 3,
                       .sx = 1,
                       .sy = 1,
                       .pad_t = 1,
                       .pad_l = 1,
                       .out_h = 12,
                       .out_w = 12,
                       .depthwise = true};
    check_conv(&r, &t, -4, 4, -3, 3, "depthwise fp16 3x3 p1");
    /* non-integer fp16 data: within fp32 accumulation rounding of the exact sum */
    rig_close(&r);
}

static void
test_fp16_rounding(void)
{
    /* C = 256 products of random fp16 values: every product is exact in fp32,
     * the sum is rounded per addition; the result differs from the exact sum
     * by at most n * 2^-24 * sum|terms| (worst-case fp32 summation bound). */
    struct rig r;
    rig_open(&r, 1);
    struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                      .out_prec = NPU_PRECISION_FP32,
                      .C = 256,
                      .H = 4,
                      .W = 4,
                      .K = 16,
                      .kh = 1,
                      .kw = 1,
                      .sx = 1,
                      .sy = 1,
                      .out_h = 4,
                      .out_w = 4};
    rig_bufs(&r, &t);
    uint32_t seed = 5;
    size_t n_in = 256 * 16, n_w = 16 * 256;
    double *in = malloc(n_in * sizeof(double)), *w = malloc(n_w * sizeof(double));
    for (size_t i = 0; i < n_in; i++)
        in[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(((int)(trand(&seed) % 20001) - 10000) / 3001.0f));
    for (size_t i = 0; i < n_w; i++)
        w[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(((int)(trand(&seed) % 20001) - 10000) / 7001.0f));
    tc_store(&t, npu_bo_map(r.in), npu_bo_map(r.wt), in, w);
    struct tprog p = {.n = 0};
    tc_body(&p, &t);
    CHECK_EQ_INT(NPU_OK, rig_run1(&r, &p, 0x0d, NULL, NULL));
    const uint8_t *o = npu_bo_map(r.out);
    double worst = 0;
    unsigned bad = 0;
    for (uint32_t k = 0; k < 16; k++)
        for (uint32_t y = 0; y < 4; y++)
            for (uint32_t x = 0; x < 4; x++) {
                double ref = tc_ref(&t, in, w, k, y, x), mag = 0;
                for (uint32_t c = 0; c < 256; c++)
                    mag += fabs(in[((size_t)c * 4 + y) * 4 + x] * w[(size_t)k * 256 + c]);
                float f;
                memcpy(&f, o + tc_out_off(&t, k, y, x), 4);
                double err = fabs(f - ref), bound = 256 * ldexp(1.0, -24) * mag;
                worst = fmax(worst, err / bound);
                if (err > bound)
                    bad++;
            }
    CHECK_EQ_INT(0, bad);
    printf("fp16 products, fp32 sums: worst error %.3f of the summation bound\n", worst);
    free(in);
    free(w);
    rig_close(&r);
}

static void
test_dilation(void)
{
    struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                      .out_prec = NPU_PRECISION_FP16,
                      .C = 8,
                      .H = 9,
                      .W = 9,
                      .K = 16,
                      .kh = 3,
                      .kw = 3,
                      .sx = 1,
                      .sy = 1,
                      .dil = 1,
                      .out_h = 5,
                      .out_w = 5};
    struct rig r;
    rig_open(&r, 1);
    rig_bufs(&r, &t);
    struct tprog p = {.n = 0};
    tc_body(&p, &t);
    char msg[512] = "";
    CHECK_EQ_INT(NPU_ERR_HW_REFUSED,
                 rig_run1(&r, &p, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU, NULL, msg));
    CHECK(strstr(msg, "6.14") != NULL);
    CHECK(strstr(msg, "task 0") != NULL);
    rig_close(&r);
    rig_open(&r, 0); /* lenient: dilation taken as value + 1 */
    check_conv(&r, &t, -3, 3, -2, 2, "dilated 3x3 (lenient)");
    rig_close(&r);
}

/* Mesa's 1-channel uint8 input path: ARGB_IN 1 channel, NONALIGN, the
 * converter x' = ((x + offset) * scale) >> truncate with scale 16384, offset
 * -128, truncate 14 = x - 128 (facts §5.2). */
static void
test_input_converter(void)
{
    struct rig r;
    rig_open(&r, 1);
    struct tconv t = {.prec = NPU_CNA_PRECISION_INT8,
                      .out_prec = NPU_PRECISION_INT32,
                      .C = 16,
                      .H = 6,
                      .W = 16,
                      .K = 32,
                      .kh = 3,
                      .kw = 3,
                      .sx = 1,
                      .sy = 1,
                      .out_h = 4,
                      .out_w = 14};
    rig_bufs(&r, &t);
    uint32_t seed = 77;
    uint8_t *img = npu_bo_map(r.in);
    double in[16 * 6 * 16] = {0};
    for (uint32_t h = 0; h < 6; h++)
        for (uint32_t x = 0; x < 16; x++) {
            uint8_t v = (uint8_t)trand(&seed);
            img[h * 16 + x] = v;        /* packed: one byte per pixel */
            in[h * 16 + x] = v - 128.0; /* channel 0 after the converter */
        }
    double w[32 * 16 * 9];
    fill(w, 32 * 16 * 9, -128, 127, &seed);
    for (uint32_t k = 0; k < 32; k++) /* channels 1..15 are padding */
        for (uint32_t c = 1; c < 16; c++)
            for (int i = 0; i < 9; i++)
                w[((size_t)k * 16 + c) * 9 + i] = 0;
    uint8_t *pw = npu_bo_map(r.wt);
    for (uint32_t k = 0; k < 32; k++)
        for (uint32_t c = 0; c < 16; c++)
            for (uint32_t i = 0; i < 9; i++)
                tc_put(pw + tc_w_index(&t, k, c, i / 3, i % 3), t.prec,
                       w[((size_t)k * 16 + c) * 9 + i]);
    struct tprog p = {.n = 0};
    tc_body(&p, &t);
    tp_reg(&p, REG_CNA_CONV_CON1,
           CNA_CONV_CON1_NONALIGN_DMA(1) | CNA_CONV_CON1_GROUP_LINE_OFF(1) |
               CNA_CONV_CON1_ARGB_IN(NPU_ARGB_IN_1CH) | CNA_CONV_CON1_PROC_PRECISION(0) |
               CNA_CONV_CON1_IN_PRECISION(0));
    tp_reg(&p, REG_CNA_DATA_SIZE1,
           CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(0) | CNA_DATA_SIZE1_DATAIN_CHANNEL(16));
    tp_reg(&p, REG_CNA_CBUF_CON1, 16 * 6); /* W x H in small-channel mode */
    tp_reg(&p, REG_CNA_DMA_CON1, 16);      /* Mesa: max(W, 16) and that x (H - 1) */
    tp_reg(&p, REG_CNA_DMA_CON2, 16 * 5);
    tp_reg(&p, REG_CNA_CVT_CON0,
           CNA_CVT_CON0_CVT_TYPE(1) | CNA_CVT_CON0_CVT_TRUNCATE_0(14) |
               CNA_CVT_CON0_CVT_TRUNCATE_1(14) | CNA_CVT_CON0_CVT_TRUNCATE_2(14) |
               CNA_CVT_CON0_CVT_TRUNCATE_3(14));
    for (unsigned i = 0; i < 4; i++)
        tp_reg(&p, REG_CNA_CVT_CON1 + 4 * i, 16384u << 16 | 0xff80u);
    tp_reg(&p, REG_CNA_CVT_CON5, 0xffff);
    char msg[512] = "";
    enum npu_status st = rig_run1(&r, &p, 0x0d, NULL, msg);
    CHECK_EQ_INT(NPU_OK, st);
    if (st)
        fprintf(stderr, "converter: %s\n", msg);
    const uint8_t *o = npu_bo_map(r.out);
    unsigned bad = 0;
    for (uint32_t k = 0; k < 32; k++)
        for (uint32_t y = 0; y < 4; y++)
            for (uint32_t x = 0; x < 14; x++) {
                int32_t got;
                memcpy(&got, o + tc_out_off(&t, k, y, x), 4);
                if (got != (int32_t)tc_ref(&t, in, w, k, y, x))
                    bad++;
            }
    CHECK_EQ_INT(0, bad);
    printf("uint8 small-channel input through the converter (x - 128): exact\n");
    rig_close(&r);
}

/* Two tasks in one chain: the second reuses the CBUF weights (its
 * DCOMP_ADDR0 points at zeroed memory) and, in a second run, the data. */
static void
test_reuse(void)
{
    struct rig r;
    rig_open(&r, 1);
    struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                      .out_prec = NPU_PRECISION_FP16,
                      .C = 16,
                      .H = 6,
                      .W = 6,
                      .K = 16,
                      .kh = 3,
                      .kw = 3,
                      .sx = 1,
                      .sy = 1,
                      .out_h = 4,
                      .out_w = 4};
    rig_bufs(&r, &t);
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r.dev, tc_w_bytes(&t) + 4096, 0, &r.aux));
    uint32_t seed = 31;
    double in[16 * 36], w[16 * 16 * 9];
    fill(in, 16 * 36, -3, 3, &seed);
    fill(w, 16 * 16 * 9, -2, 2, &seed);
    tc_store(&t, npu_bo_map(r.in), npu_bo_map(r.wt), in, w);

    for (int mode = 0; mode < 3; mode++) {
        /* mode 0: WEIGHT_REUSE; 1: DATA_REUSE; 2: WEIGHT_REUSE as the first
         * conv a fresh core ever runs (refused) */
        struct tprog p = {.n = 0};
        uint32_t seg = npu_bo_iova(r.regcmd);
        struct tconv t2 = t;
        t2.wt = npu_bo_iova(r.aux); /* zeros */
        struct tprog q = {.n = 0};
        tc_body(&q, &t2);
        uint32_t reuse = mode == 1 ? CNA_CBUF_CON0_DATA_REUSE(1) : CNA_CBUF_CON0_WEIGHT_REUSE(1);
        if (mode == 1)
            tp_reg(&q, REG_CNA_DCOMP_ADDR0, t.wt);
        if (mode == 1)
            tp_reg(&q, REG_CNA_FEATURE_DATA_ADDR, npu_bo_iova(r.aux)); /* zeros */
        tp_reg(&q, REG_CNA_CBUF_CON0,
               CNA_CBUF_CON0_DATA_BANK(1) | CNA_CBUF_CON0_WEIGHT_BANK(11) | reuse);
        tp_tail(&q, 0, 0, 0x0d);
        tc_body(&p, &t);
        tp_tail(&p, seg + 0x2000, npu_pc_amount(q.n), 0x0d);
        uint32_t b0 = tp_store(r.regcmd, 0, &p);
        uint32_t b1 = tp_store(r.regcmd, 0x2000, &q);
        td_set(r.task, 0, 0x0d, b0, seg);
        td_set(r.task, 1, 0x0d, b1, seg + 0x2000);
        memset(npu_bo_map(r.out), 0, tc_out_bytes(&t));
        struct npu_submit s = ts_submit(r.task, mode == 2 ? 1 : 0, mode == 2 ? 1 : 2, 1);
        struct npu_device *fresh = NULL;
        char msg[512] = "";
        struct npu_job_result res;
        enum npu_status st;
        if (mode == 2) {
            /* a fresh device: its CBUF holds nothing */
            rig_close(&r);
            rig_open(&r, 1);
            rig_bufs(&r, &t);
            CHECK_EQ_INT(NPU_OK, npu_bo_create(r.dev, tc_w_bytes(&t) + 4096, 0, &r.aux));
            t2.wt = npu_bo_iova(r.aux);
            t2.in = t.in = npu_bo_iova(r.in);
            t2.out = t.out = npu_bo_iova(r.out);
            q.n = 0;
            tc_body(&q, &t2);
            tp_reg(&q, REG_CNA_CBUF_CON0,
                   CNA_CBUF_CON0_DATA_BANK(1) | CNA_CBUF_CON0_WEIGHT_BANK(11) | reuse);
            tp_tail(&q, 0, 0, 0x0d);
            td_set(r.task, 0, 0x0d, tp_store(r.regcmd, 0, &q), npu_bo_iova(r.regcmd));
            s = ts_submit(r.task, 0, 1, 1);
            st = ts_run(r.dev, &s, &res, msg, sizeof(msg));
            CHECK_EQ_INT(NPU_ERR_HW_REFUSED, st);
            CHECK(strstr(msg, "WEIGHT_REUSE") != NULL);
            break;
        }
        (void)fresh;
        st = ts_run(r.dev, &s, &res, msg, sizeof(msg));
        CHECK_EQ_INT(NPU_OK, st);
        if (st)
            fprintf(stderr, "reuse mode %d: %s\n", mode, msg);
        const uint8_t *o = npu_bo_map(r.out);
        unsigned bad = 0;
        for (uint32_t k = 0; k < 16; k++)
            for (uint32_t y = 0; y < 4; y++)
                for (uint32_t x = 0; x < 4; x++) {
                    uint16_t h;
                    memcpy(&h, o + tc_out_off(&t, k, y, x), 2);
                    if (h != npu_fp32_to_fp16((float)tc_ref(&t, in, w, k, y, x)))
                        bad++;
                }
        CHECK_EQ_INT(0, bad);
        CHECK_EQ_INT(2, res.task_counter);
        /* timing: the second task reads no weights (or no features) */
        printf("%s: second task reads %s from the CBUF: exact\n",
               mode ? "DATA_REUSE" : "WEIGHT_REUSE", mode ? "the input" : "the weights");
    }
    rig_close(&r);
}

/* int8 conv + per-channel int32 bias through BRDMA + ReLU + OUT_CVT to int8
 * (Mesa's quantised conv, facts §5.3, op_en 0x1D). */
static void
test_bias_relu_requant(void)
{
    struct rig r;
    rig_open(&r, 1);
    struct tconv t = {.prec = NPU_CNA_PRECISION_INT8,
                      .out_prec = NPU_PRECISION_INT8,
                      .C = 16,
                      .H = 5,
                      .W = 5,
                      .K = 32,
                      .kh = 3,
                      .kw = 3,
                      .sx = 1,
                      .sy = 1,
                      .pad_t = 1,
                      .pad_l = 1,
                      .out_h = 5,
                      .out_w = 5};
    rig_bufs(&r, &t);
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r.dev, 32 * 4, 0, &r.aux));
    uint32_t seed = 9;
    double in[16 * 25], w[32 * 16 * 9];
    fill(in, 16 * 25, -128, 127, &seed);
    fill(w, 32 * 16 * 9, -128, 127, &seed);
    int32_t *bias = npu_bo_map(r.aux);
    for (int k = 0; k < 32; k++)
        bias[k] = (int32_t)(trand(&seed) % 400001) - 200000;
    tc_store(&t, npu_bo_map(r.in), npu_bo_map(r.wt), in, w);
    const unsigned scale = 19661, shift = 22; /* ~ 0.0047 */
    const int32_t zp = -3;
    struct tprog p = {.n = 0};
    tc_body(&p, &t);
    tp_reg(&p, REG_DPU_RDMA_S_POINTER, 0x0e);
    tp_reg(&p, REG_DPU_BS_CFG,
           DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD) | DPU_BS_CFG_BS_ALU_SRC(1) |
               DPU_BS_CFG_BS_MUL_BYPASS(1));
    tp_reg(&p, REG_DPU_RDMA_BRDMA_CFG, DPU_RDMA_BRDMA_CFG_BRDMA_DATA_USE(1));
    tp_reg(&p, REG_DPU_RDMA_BS_BASE_ADDR, npu_bo_iova(r.aux));
    tp_reg(&p, REG_DPU_OUT_CVT_SCALE, scale);
    tp_reg(&p, REG_DPU_OUT_CVT_SHIFT, DPU_OUT_CVT_SHIFT_OUT_CVT_SHIFT(shift));
    tp_reg(&p, REG_DPU_OUT_CVT_OFFSET, (uint32_t)zp);
    char msg[512] = "";
    unsigned body_n = p.n;
    enum npu_status st = rig_run1(
        &r, &p, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA, NULL, msg);
    CHECK_EQ_INT(NPU_OK, st);
    if (st)
        fprintf(stderr, "bias: %s\n", msg);
    const int8_t *o = npu_bo_map(r.out);
    unsigned bad = 0;
    for (uint32_t k = 0; k < 32; k++)
        for (uint32_t y = 0; y < 5; y++)
            for (uint32_t x = 0; x < 5; x++) {
                int64_t acc = (int64_t)tc_ref(&t, in, w, k, y, x) + bias[k];
                acc = acc < 0 ? 0 : acc; /* BS ReLU */
                double q = (double)acc * scale / (double)(1u << shift);
                int64_t v = (int64_t)nearbyint(q) + zp; /* half-to-even */
                v = v > 127 ? 127 : v < -128 ? -128 : v;
                if (o[tc_out_off(&t, k, y, x)] != (int8_t)v && bad++ < 3)
                    fprintf(stderr, "requant out[%u][%u][%u] = %d, expected %lld\n", k, y, x,
                            o[tc_out_off(&t, k, y, x)], (long long)v);
            }
    CHECK_EQ_INT(0, bad);
    printf("int8 conv + BRDMA bias + ReLU + OUT_CVT requantisation: exact\n");

    /* the same with DPU_RDMA missing from op_en is refused by name */
    p.n = body_n;
    CHECK_EQ_INT(NPU_ERR_HW_REFUSED, rig_run1(&r, &p, 0x0d, NULL, msg));
    CHECK(strstr(msg, "DPU_RDMA") != NULL);
    rig_close(&r);
}

/* fp pipeline register operands: BS ALU add (fp32 bits), BN MUL (fp16 bits),
 * BN ReLU-X clamp (fp32 bits); BS orders ALU then MUL, BN MUL then ALU. */
static void
test_fp_operands(void)
{
    struct rig r;
    rig_open(&r, 1);
    struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                      .out_prec = NPU_PRECISION_FP32,
                      .C = 8,
                      .H = 4,
                      .W = 4,
                      .K = 16,
                      .kh = 1,
                      .kw = 1,
                      .sx = 1,
                      .sy = 1,
                      .out_h = 4,
                      .out_w = 4};
    rig_bufs(&r, &t);
    uint32_t seed = 3;
    double in[8 * 16], w[16 * 8];
    fill(in, 8 * 16, -4, 4, &seed);
    fill(w, 16 * 8, -3, 3, &seed);
    tc_store(&t, npu_bo_map(r.in), npu_bo_map(r.wt), in, w);
    const float add = 1.5f, mul = -0.75f, cap = 6.0f;
    uint32_t addb, capb;
    memcpy(&addb, &add, 4);
    memcpy(&capb, &cap, 4);
    struct tprog p = {.n = 0};
    tc_body(&p, &t);
    tp_reg(&p, REG_DPU_BS_CFG,
           DPU_BS_CFG_BS_ALU_ALGO(NPU_ALU_ALGO_ADD) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
               DPU_BS_CFG_BS_RELU_BYPASS(1));
    tp_reg(&p, REG_DPU_BS_ALU_CFG, addb);
    tp_reg(&p, REG_DPU_BN_CFG, DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_RELUX_EN(1));
    tp_reg(&p, REG_DPU_BN_MUL_CFG, DPU_BS_MUL_CFG_BS_MUL_OPERAND(npu_fp32_to_fp16(mul)));
    tp_reg(&p, REG_DPU_BN_RELUX_CMP_VALUE, capb);
    char msg[512] = "";
    enum npu_status st = rig_run1(&r, &p, 0x0d, NULL, msg);
    CHECK_EQ_INT(NPU_OK, st);
    if (st)
        fprintf(stderr, "fp operands: %s\n", msg);
    const uint8_t *o = npu_bo_map(r.out);
    unsigned bad = 0;
    for (uint32_t k = 0; k < 16; k++)
        for (uint32_t y = 0; y < 4; y++)
            for (uint32_t x = 0; x < 4; x++) {
                float v = (float)tc_ref(&t, in, w, k, y, x) + add;
                v = v * mul;
                v = v < 0 ? 0 : v > cap ? cap : v;
                float got;
                memcpy(&got, o + tc_out_off(&t, k, y, x), 4);
                if (got != v)
                    bad++;
            }
    CHECK_EQ_INT(0, bad);
    printf("fp32 register operands (BS add, BN mul, ReLU-X): exact\n");
    rig_close(&r);
}

static void
test_conv_timing(void)
{
    struct rig r;
    rig_open(&r, 1);
    struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                      .out_prec = NPU_PRECISION_FP16,
                      .C = 40,
                      .H = 10,
                      .W = 10,
                      .K = 20,
                      .kh = 3,
                      .kw = 3,
                      .sx = 1,
                      .sy = 1,
                      .out_h = 8,
                      .out_w = 8};
    rig_bufs(&r, &t);
    struct tprog p = {.n = 0};
    tc_body(&p, &t);
    tp_tail(&p, 0, 0, 0x0d);
    uint32_t body = tp_store(r.regcmd, 0, &p);
    td_set(r.task, 0, 0x0d, body, npu_bo_iova(r.regcmd));
    struct npu_submit s = ts_submit(r.task, 0, 1, 1);
    struct npu_job *job = NULL;
    CHECK_EQ_INT(NPU_OK, npu_job_submit(r.dev, &s, &job));
    struct npu_job_result res;
    CHECK_EQ_INT(NPU_OK, npu_job_wait(job, -1, &res));
    const struct npu_task_timing *tt = &res.tasks[0];
    /* MAC steps (timing models v1 and v2): ceil(K/16) * ceil(C/32) * H_out * W_out * kh * kw;
     * compute_s = steps / clock_hz, over cna_efficiency under v2 (the default model; 1 in v1) */
    const struct npu_timing_model *tm = npu_timing_model();
    uint64_t steps = 2 * 2 * 8 * 8 * 9;
    CHECK_EQ_INT(steps, tt->mac_steps);
    CHECK_EQ_INT(20ull * 40 * 64 * 9, tt->macs);
    CHECK_NEAR(steps / tm->clock_hz / (tm->per_mechanism ? tm->cna_efficiency : 1.0), tt->compute_s,
               1e-15);
    CHECK_EQ_INT(tc_in_bytes(&t), tt->feature_bytes);
    CHECK_EQ_INT(tc_w_bytes(&t), tt->weight_bytes);
    CHECK_EQ_INT(3 * 8 * 8 * 16, tt->output_bytes); /* 24 padded channels / 8 per atom */
    double util = (double)tt->macs / (512.0 * 1e9 * tt->task_s);
    CHECK_NEAR(util, tt->mac_utilisation, 1e-12);
    CHECK_NEAR(tt->macs / (512.0 * 1e9 * res.modeled_s), res.mac_utilisation, 1e-12);
    npu_job_destroy(job);
    rig_close(&r);
}

int
main(void)
{
    test_conv_shapes();
    test_fp16_rounding();
    test_dilation();
    test_input_converter();
    test_reuse();
    test_bias_relu_requant();
    test_fp_operands();
    test_conv_timing();
    return npu_test_done("test-conv");
}
