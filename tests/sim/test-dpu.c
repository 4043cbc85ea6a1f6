/* SPDX-License-Identifier: MIT */
/*
 * test-dpu.c: DPU and PPU features against independent references: every EW
 * ALU algorithm and MUL in fp16 flying mode; the register-operand and
 * per-channel ERDMA variants (refused in strict mode, run in lenient); the LUT
 * uploaded by one task and used by the next (index, interpolation, the
 * priorities of RKNN's configuration; slope extrapolation lenient only); PPU
 * max/min/average pooling through PPU_RDMA with kernel, stride, padding and pad
 * value; fp16 average pooling (strict refuses the open RECIP format); and a
 * conv feeding the PPU directly (strict refuses, lenient runs).
 */
#include <math.h>

#include "npu-handconv.h"
#include "npu-test.h"

/* --------------------------------------------------------------- helpers */

struct rig {
    struct npu_device *dev;
    struct npu_bo *task, *regcmd, *a, *b, *c;
};

static void
rig_open(struct rig *r, int strict, size_t bytes)
{
    memset(r, 0, sizeof(*r));
    struct npu_device_options o = {.strict = strict};
    CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &r->dev));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, 40 * 8, NPU_BO_TASKS, &r->task));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, 131072, 0, &r->regcmd));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, bytes, 0, &r->a));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, bytes, 0, &r->b));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, bytes, 0, &r->c));
}

static void
rig_close(struct rig *r)
{
    npu_bo_destroy(r->task);
    npu_bo_destroy(r->regcmd);
    npu_bo_destroy(r->a);
    npu_bo_destroy(r->b);
    npu_bo_destroy(r->c);
    npu_device_close(r->dev);
}

/* Stores programs p[0..n-1] as one chain and runs it. */
static enum npu_status
rig_chain(struct rig *r, struct tprog *p, unsigned n, const uint32_t *enable, char *msg)
{
    uint32_t base = npu_bo_iova(r->regcmd);
    for (unsigned i = 0; i < n; i++) {
        uint32_t next = i + 1 < n ? base + (i + 1) * 0x3000 : 0;
        uint32_t amt = 0;
        if (i + 1 < n)
            amt = npu_pc_amount(p[i + 1].n + 4);
        tp_tail(&p[i], next, amt, enable[i]);
        uint32_t body = tp_store(r->regcmd, i * 0x3000, &p[i]);
        td_set(r->task, i, enable[i], body, base + i * 0x3000);
    }
    struct npu_submit s = ts_submit(r->task, 0, n, 1);
    return ts_run(r->dev, &s, NULL, msg, 512);
}

static float
h2f(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return npu_fp16_to_fp32(h);
}

static void
f2h(uint8_t *p, float v)
{
    uint16_t h = npu_fp32_to_fp16(v);
    memcpy(p, &h, 2);
}

/* ------------------------------------------------------------ EW stage */

static const char *const algo_names[] = {"max", "min", "add",   "div",  "minus",
                                         "abs", "neg", "floor", "ceil", "mul"};

static float
ew_ref(unsigned algo, float a, float b)
{
    switch (algo) {
    case NPU_ALU_ALGO_MAX: return a > b ? a : b;
    case NPU_ALU_ALGO_MIN: return a < b ? a : b;
    case NPU_ALU_ALGO_ADD: return a + b;
    case NPU_ALU_ALGO_DIV: return a / b;
    case NPU_ALU_ALGO_MINUS: return a - b;
    case NPU_ALU_ALGO_ABS: return fabsf(a);
    case NPU_ALU_ALGO_NEG: return -a;
    case NPU_ALU_ALGO_FLOOR: return floorf(a);
    case NPU_ALU_ALGO_CEIL: return ceilf(a);
    default: return a * b;
    }
}

static void
test_ew_algos(void)
{
    const uint32_t W = 9, H = 5, C = 16;
    size_t bytes = 2 * 9 * 5 * 16;
    struct rig r;
    rig_open(&r, 1, bytes);
    uint8_t *x = npu_bo_map(r.a), *y = npu_bo_map(r.b), *z = npu_bo_map(r.c);
    uint32_t seed = 1;
    for (size_t i = 0; i < bytes / 2; i++) {
        f2h(x + 2 * i, ((int)(trand(&seed) % 2001) - 1000) / 97.0f);
        float v = ((int)(trand(&seed) % 2001) - 1000) / 131.0f;
        f2h(y + 2 * i, fabsf(v) < 0.1f ? 0.75f : v);
    }
    for (unsigned algo = 0; algo <= 9; algo++) {
        struct fly f = {.prec = NPU_PRECISION_FP16,
                        .W = W,
                        .H = H,
                        .C = C,
                        .x = npu_bo_iova(r.a),
                        .y = npu_bo_iova(r.b),
                        .z = npu_bo_iova(r.c),
                        .f32 = true};
        f.ew_cfg = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) |
                   DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                   DPU_EW_CFG_EW_OP_SRC(1) |
                   (algo == 9 ? DPU_EW_CFG_EW_OP_TYPE(1) : DPU_EW_CFG_EW_ALU_ALGO(algo));
        struct tprog p = {.n = 0};
        tp_fly(&p, &f);
        char msg[512] = "";
        uint32_t en = NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA;
        memset(z, 0, bytes);
        enum npu_status st = rig_chain(&r, &p, 1, &en, msg);
        CHECK_EQ_INT(NPU_OK, st);
        if (st)
            fprintf(stderr, "ew %s: %s\n", algo_names[algo], msg);
        unsigned bad = 0;
        for (size_t i = 0; i < bytes / 2; i++) {
            /* compared as numbers: the sign of a zero result (ceil(-0.5),
             * then OUT_CVT's + 0 offset) is not modelled */
            float want =
                npu_fp16_to_fp32(npu_fp32_to_fp16(ew_ref(algo, h2f(x + 2 * i), h2f(y + 2 * i))));
            if (want != h2f(z + 2 * i) && bad++ < 3)
                fprintf(stderr, "ew %s: %g op %g = %g, expected %g\n", algo_names[algo],
                        h2f(x + 2 * i), h2f(y + 2 * i), h2f(z + 2 * i), want);
        }
        CHECK_EQ_INT(0, bad);
    }
    printf("EW max/min/add/div/minus/abs/neg/floor/ceil/mul (fp16, ERDMA per pixel): exact\n");

    /* register operands and per-channel ERDMA: unverified -> strict refuses */
    struct fly f = {.prec = NPU_PRECISION_FP16,
                    .W = W,
                    .H = H,
                    .C = C,
                    .x = npu_bo_iova(r.a),
                    .y = npu_bo_iova(r.b),
                    .z = npu_bo_iova(r.c),
                    .f32 = true};
    f.ew_cfg = DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) | DPU_EW_CFG_EW_RELU_BYPASS(1) |
               DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD);
    struct tprog p = {.n = 0};
    tp_fly(&p, &f);
    char msg[512] = "";
    uint32_t en = NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA;
    CHECK_EQ_INT(NPU_ERR_HW_REFUSED, rig_chain(&r, &p, 1, &en, msg));
    CHECK(strstr(msg, "EW_OP_VALUE") != NULL);
    f.ew_cfg |= DPU_EW_CFG_EW_OP_SRC(1) | DPU_EW_CFG_EW_DATA_MODE(0);
    p.n = 0;
    tp_fly(&p, &f);
    CHECK_EQ_INT(NPU_ERR_HW_REFUSED, rig_chain(&r, &p, 1, &en, msg));
    CHECK(strstr(msg, "per channel") != NULL);
    rig_close(&r);

    /* lenient: EW_OP_VALUE_0..7 taken per channel mod 8 */
    rig_open(&r, 0, bytes);
    x = npu_bo_map(r.a);
    z = npu_bo_map(r.c);
    for (size_t i = 0; i < bytes / 2; i++)
        f2h(x + 2 * i, (float)(i % 13));
    f.x = npu_bo_iova(r.a);
    f.y = npu_bo_iova(r.b);
    f.z = npu_bo_iova(r.c);
    f.ew_cfg = DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) | DPU_EW_CFG_EW_RELU_BYPASS(1) |
               DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD);
    p.n = 0;
    tp_fly(&p, &f);
    for (unsigned i = 0; i < 8; i++) {
        float v = 10.0f * (float)i;
        uint32_t b;
        memcpy(&b, &v, 4);
        tp_reg(&p, REG_DPU_EW_OP_VALUE_0 + 4 * i, b);
    }
    CHECK_EQ_INT(NPU_OK, rig_chain(&r, &p, 1, &en, msg));
    unsigned bad = 0;
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t i = 0; i < W * H; i++) {
            size_t o = (size_t)(c / 8) * W * H * 16 + i * 16 + (c % 8) * 2;
            if (h2f(z + o) != h2f(x + o) + 10.0f * (c % 8) && bad++ < 3)
                fprintf(stderr, "op value: c %u i %u: %g + %g = %g\n", c, i, h2f(x + o),
                        10.0f * (c % 8), h2f(z + o));
        }
    CHECK_EQ_INT(0, bad);
    rig_close(&r);
}

/* ------------------------------------------------------------------ LUT */

/* A task uploading LE and LO tables (NOTES S19 order: ACCESS_CFG write, 513
 * data words, second table). */
static void
tp_lut_upload(struct tprog *p, const int16_t *le, const int16_t *lo)
{
    tp_reg(p, REG_DPU_LUT_ACCESS_CFG,
           DPU_LUT_ACCESS_CFG_LUT_ACCESS_TYPE(NPU_LUT_ACCESS_WRITE) |
               DPU_LUT_ACCESS_CFG_LUT_TABLE_ID(NPU_LUT_TABLE_LE));
    for (int i = 0; i < 513; i++)
        tp_reg(p, REG_DPU_LUT_ACCESS_DATA, (uint32_t)(int32_t)le[i]); /* sign-extended */
    tp_reg(p, REG_DPU_LUT_ACCESS_CFG,
           DPU_LUT_ACCESS_CFG_LUT_ACCESS_TYPE(NPU_LUT_ACCESS_WRITE) |
               DPU_LUT_ACCESS_CFG_LUT_TABLE_ID(NPU_LUT_TABLE_LO));
    for (int i = 0; i < 513; i++)
        tp_reg(p, REG_DPU_LUT_ACCESS_DATA, (uint32_t)(int32_t)lo[i]);
}

static double
interp(const int16_t *t, double idx)
{
    if (idx >= 512)
        return t[512];
    int i = (int)floor(idx);
    return t[i] + (t[i + 1] - t[i]) * (idx - i);
}

static void
test_lut(void)
{
    const uint32_t W = 32, H = 4, C = 8;
    size_t bytes = 2 * W * H * C;
    struct rig r;
    rig_open(&r, 1, bytes);
    static int16_t le[513], lo[513];
    for (int i = 0; i < 513; i++) {
        le[i] = (int16_t)lrint(-20000.0 * sin((512 - i) / 512.0 * 1.5)); /* x in [-1024, 0] */
        lo[i] = (int16_t)lrint(30000.0 * (i / 512.0) * (i / 512.0));     /* x in [0, 1024] */
    }
    uint8_t *x = npu_bo_map(r.a), *z = npu_bo_map(r.c);
    uint32_t seed = 8;
    for (size_t i = 0; i < bytes / 2; i++)
        f2h(x + 2 * i, ((int)(trand(&seed) % 2801) - 1400) * 1.0f); /* +-1400: both overflows */

    /* task 0: upload; task 1: apply (the RKNN tanh configuration, NOTES S19) */
    struct tprog p[2] = {{.n = 0}, {.n = 0}};
    struct fly f = {.prec = NPU_PRECISION_FP16,
                    .W = W,
                    .H = H,
                    .C = C,
                    .x = npu_bo_iova(r.a),
                    .y = npu_bo_iova(r.b),
                    .z = npu_bo_iova(r.b),
                    .f32 = true,
                    .ew_cfg = 0x383};
    tp_fly(&p[0], &f); /* a plain copy into b while uploading */
    tp_lut_upload(&p[0], le, lo);
    f.z = npu_bo_iova(r.c);
    f.ew_cfg = DPU_EW_CFG_EW_OP_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
               DPU_EW_CFG_EW_RELU_BYPASS(1); /* LUT on */
    tp_fly(&p[1], &f);
    tp_reg(&p[1], REG_DPU_LUT_CFG, 0x68);
    tp_reg(&p[1], REG_DPU_LUT_INFO,
           DPU_LUT_INFO_LUT_LE_INDEX_SELECT(1) | DPU_LUT_INFO_LUT_LO_INDEX_SELECT(1));
    tp_reg(&p[1], REG_DPU_LUT_LE_START, (uint32_t)-1024);
    tp_reg(&p[1], REG_DPU_LUT_LE_END, 0);
    tp_reg(&p[1], REG_DPU_LUT_LO_START, 0);
    tp_reg(&p[1], REG_DPU_LUT_LO_END, 1024);
    for (uint16_t o = REG_DPU_LUT_LE_SLOPE_SCALE; o <= REG_DPU_LUT_LO_SLOPE_SHIFT; o += 4)
        tp_reg(&p[1], o, 0);
    uint32_t en[2] = {0x18, 0x18};
    char msg[512] = "";
    enum npu_status st = rig_chain(&r, p, 2, en, msg);
    CHECK_EQ_INT(NPU_OK, st);
    if (st)
        fprintf(stderr, "lut: %s\n", msg);
    unsigned bad = 0;
    for (size_t i = 0; i < bytes / 2; i++) {
        double xv = h2f(x + 2 * i), want;
        if (xv >= 0) /* LO wins the overlap at 0 (HYBRID_PRIORITY 1) and overflow */
            want = xv > 1024 ? lo[512] : interp(lo, xv / 2.0);
        else /* LE for underflow (UFLOW_PRIORITY 0) */
            want = xv < -1024 ? le[0] : interp(le, (xv + 1024) / 2.0);
        if (h2f(z + 2 * i) != npu_fp16_to_fp32(npu_fp32_to_fp16((float)want)) && bad++ < 3)
            fprintf(stderr, "lut(%g) = %g, expected %g\n", xv, h2f(z + 2 * i), want);
    }
    CHECK_EQ_INT(0, bad);
    printf("LUT upload in one task, lookup with interpolation and saturation in the next: exact\n");

    /* overflow slopes: unverified, strict refuses them by name */
    p[0].n = 0;
    tp_fly(&p[0], &f);
    tp_reg(&p[0], REG_DPU_LUT_CFG, 0x68);
    tp_reg(&p[0], REG_DPU_LUT_LO_SLOPE_SCALE, DPU_LUT_LO_SLOPE_SCALE_LUT_LO_SLOPE_OFLOW_SCALE(3));
    CHECK_EQ_INT(NPU_ERR_HW_REFUSED, rig_chain(&r, p, 1, en, msg));
    CHECK(strstr(msg, "LUT") != NULL);
    rig_close(&r);

    /* a LUT used before any upload is refused on a fresh device */
    rig_open(&r, 0, bytes);
    f.x = npu_bo_iova(r.a);
    f.z = npu_bo_iova(r.c);
    p[0].n = 0;
    tp_fly(&p[0], &f);
    CHECK_EQ_INT(NPU_ERR_HW_REFUSED, rig_chain(&r, p, 1, en, msg));
    CHECK(strstr(msg, "never fully uploaded") != NULL);
    rig_close(&r);
}

/* ------------------------------------------------------------------- PPU */

struct pool {
    unsigned prec, method;
    uint32_t W, H, C, OW, OH, kw, kh, sw, sh, pl, pr, pt, pb;
    int32_t pad;
    uint32_t recip_w, recip_h;
    uint32_t src, dst;
};

static void
tp_pool(struct tprog *p, const struct pool *q)
{
    unsigned es = q->prec == NPU_PRECISION_INT8 ? 1 : 2;
    tp_reg(p, REG_PPU_S_POINTER, 0x0e);
    tp_reg(p, REG_PPU_RDMA_S_POINTER, 0x0e);
    tp_reg(p, REG_PPU_DATA_CUBE_IN_WIDTH, q->W - 1);
    tp_reg(p, REG_PPU_DATA_CUBE_IN_HEIGHT, q->H - 1);
    tp_reg(p, REG_PPU_DATA_CUBE_IN_CHANNEL, q->C - 1);
    tp_reg(p, REG_PPU_DATA_CUBE_OUT_WIDTH, q->OW - 1);
    tp_reg(p, REG_PPU_DATA_CUBE_OUT_HEIGHT, q->OH - 1);
    tp_reg(p, REG_PPU_DATA_CUBE_OUT_CHANNEL, q->C - 1);
    tp_reg(p, REG_PPU_OPERATION_MODE_CFG,
           PPU_OPERATION_MODE_CFG_POOLING_METHOD(q->method) |
               PPU_OPERATION_MODE_CFG_FLYING_MODE(1));
    tp_reg(p, REG_PPU_POOLING_KERNEL_CFG,
           PPU_POOLING_KERNEL_CFG_KERNEL_WIDTH(q->kw - 1) |
               PPU_POOLING_KERNEL_CFG_KERNEL_HEIGHT(q->kh - 1) |
               PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_WIDTH(q->sw - 1) |
               PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_HEIGHT(q->sh - 1));
    tp_reg(p, REG_PPU_RECIP_KERNEL_WIDTH, q->recip_w);
    tp_reg(p, REG_PPU_RECIP_KERNEL_HEIGHT, q->recip_h);
    tp_reg(p, REG_PPU_POOLING_PADDING_CFG,
           PPU_POOLING_PADDING_CFG_PAD_LEFT(q->pl) | PPU_POOLING_PADDING_CFG_PAD_RIGHT(q->pr) |
               PPU_POOLING_PADDING_CFG_PAD_TOP(q->pt) | PPU_POOLING_PADDING_CFG_PAD_BOTTOM(q->pb));
    tp_reg(p, REG_PPU_PADDING_VALUE_1_CFG, (uint32_t)q->pad);
    tp_reg(p, REG_PPU_PADDING_VALUE_2_CFG, q->pad < 0 ? 7 : 0);
    tp_reg(p, REG_PPU_DST_BASE_ADDR, q->dst);
    tp_reg(p, REG_PPU_DST_SURF_STRIDE, PPU_DST_SURF_STRIDE_DST_SURF_STRIDE(q->OW * q->OH));
    tp_reg(p, REG_PPU_DATA_FORMAT,
           PPU_DATA_FORMAT_PROC_PRECISION(q->prec) | PPU_DATA_FORMAT_INDEX_ADD(q->OW * q->OH));
    tp_reg(p, REG_PPU_MISC_CTRL, PPU_MISC_CTRL_BURST_LEN(3));
    tp_reg(p, REG_PPU_RDMA_CUBE_IN_WIDTH, q->W - 1);
    tp_reg(p, REG_PPU_RDMA_CUBE_IN_HEIGHT, q->H - 1);
    tp_reg(p, REG_PPU_RDMA_CUBE_IN_CHANNEL, q->C - 1);
    tp_reg(p, REG_PPU_RDMA_SRC_BASE_ADDR, q->src);
    tp_reg(p, REG_PPU_RDMA_SRC_LINE_STRIDE, PPU_RDMA_SRC_LINE_STRIDE_SRC_LINE_STRIDE(q->W));
    tp_reg(p, REG_PPU_RDMA_SRC_SURF_STRIDE, PPU_RDMA_SRC_SURF_STRIDE_SRC_SURF_STRIDE(q->W * q->H));
    tp_reg(p, REG_PPU_RDMA_DATA_FORMAT,
           PPU_RDMA_DATA_FORMAT_IN_PRECISION(es == 1 ? NPU_ELEM_SIZE_8BIT : NPU_ELEM_SIZE_16BIT));
}

static double
pool_ref(const struct pool *q, const double *in, uint32_t c, uint32_t oy, uint32_t ox)
{
    double acc = q->method == NPU_POOLING_METHOD_MAX   ? -INFINITY
                 : q->method == NPU_POOLING_METHOD_MIN ? INFINITY
                                                       : 0;
    for (uint32_t ky = 0; ky < q->kh; ky++)
        for (uint32_t kx = 0; kx < q->kw; kx++) {
            int iy = (int)(oy * q->sh + ky) - (int)q->pt, ix = (int)(ox * q->sw + kx) - (int)q->pl;
            double v = (iy >= 0 && iy < (int)q->H && ix >= 0 && ix < (int)q->W)
                           ? in[((size_t)c * q->H + iy) * q->W + ix]
                           : q->pad;
            if (q->method == NPU_POOLING_METHOD_MAX)
                acc = fmax(acc, v);
            else if (q->method == NPU_POOLING_METHOD_MIN)
                acc = fmin(acc, v);
            else
                acc += v;
        }
    return acc;
}

static void
run_pool(struct pool *q, int strict, enum npu_status expect, const char *label)
{
    unsigned es = q->prec == NPU_PRECISION_INT8 ? 1 : 2, c2 = 16 / es;
    size_t in_bytes = (size_t)((q->C + c2 - 1) / c2) * q->H * q->W * 16;
    struct rig r;
    rig_open(&r, strict, in_bytes);
    q->src = npu_bo_iova(r.a);
    q->dst = npu_bo_iova(r.c);
    uint8_t *in = npu_bo_map(r.a), *out = npu_bo_map(r.c);
    double *ref_in = malloc(sizeof(double) * q->C * q->H * q->W);
    uint32_t seed = 21 + q->method;
    for (uint32_t c = 0; c < q->C; c++)
        for (uint32_t y = 0; y < q->H; y++)
            for (uint32_t x = 0; x < q->W; x++) {
                size_t o = (size_t)(c / c2) * q->H * q->W * 16 + ((size_t)y * q->W + x) * 16 +
                           (c % c2) * es;
                double v;
                if (es == 1) {
                    v = (int8_t)trand(&seed);
                    in[o] = (uint8_t)(int8_t)v;
                } else {
                    v = npu_fp16_to_fp32(
                        npu_fp32_to_fp16(((int)(trand(&seed) % 401) - 200) / 8.0f));
                    f2h(in + o, (float)v);
                }
                ref_in[((size_t)c * q->H + y) * q->W + x] = v;
            }
    struct tprog p = {.n = 0};
    tp_pool(&p, q);
    uint32_t en = NPU_OP_EN_PPU | NPU_OP_EN_PPU_RDMA;
    char msg[512] = "";
    enum npu_status st = rig_chain(&r, &p, 1, &en, msg);
    CHECK_EQ_INT(expect, st);
    if (st != expect)
        fprintf(stderr, "%s: %s\n", label, msg);
    if (st == NPU_OK) {
        unsigned bad = 0;
        for (uint32_t c = 0; c < q->C; c++)
            for (uint32_t y = 0; y < q->OH; y++)
                for (uint32_t x = 0; x < q->OW; x++) {
                    double want = pool_ref(q, ref_in, c, y, x), got;
                    size_t o = (size_t)(c / c2) * q->OH * q->OW * 16 +
                               ((size_t)y * q->OW + x) * 16 + (c % c2) * es;
                    if (es == 1) {
                        got = (int8_t)out[o];
                        if (q->method == NPU_POOLING_METHOD_AVERAGE) {
                            /* sum x 2^16/kw >> 16 then x 2^16/kh >> 16, half-even */
                            double s1 = nearbyint(want * q->recip_w / 65536.0);
                            want = nearbyint(s1 * q->recip_h / 65536.0);
                        }
                    } else {
                        got = h2f(out + o);
                        if (q->method == NPU_POOLING_METHOD_AVERAGE)
                            want = (float)((float)want * 0.5f) * 0.5f;
                        want = npu_fp16_to_fp32(npu_fp32_to_fp16((float)want));
                    }
                    if (got != want && bad++ < 3)
                        fprintf(stderr, "%s: out[%u][%u][%u] = %g, expected %g\n", label, c, y, x,
                                got, want);
                }
        CHECK_EQ_INT(0, bad);
        printf("%s: exact\n", label);
    } else if (expect != NPU_OK) {
        printf("%s: refused as expected: %s\n", label, msg);
    }
    free(ref_in);
    rig_close(&r);
}

static void
test_ppu(void)
{
    struct pool q = {.prec = NPU_PRECISION_INT8,
                     .method = NPU_POOLING_METHOD_MAX,
                     .W = 11,
                     .H = 9,
                     .C = 32,
                     .kw = 3,
                     .kh = 3,
                     .sw = 2,
                     .sh = 2,
                     .pl = 1,
                     .pr = 1,
                     .pt = 1,
                     .pb = 1,
                     .pad = -128};
    q.OW = (q.W + 2 - 3) / 2 + 1;
    q.OH = (q.H + 2 - 3) / 2 + 1;
    run_pool(&q, 1, NPU_OK, "PPU int8 max 3x3 s2 p1");
    q.method = NPU_POOLING_METHOD_MIN;
    q.pad = 127;
    run_pool(&q, 1, NPU_OK, "PPU int8 min 3x3 s2 p1");
    q = (struct pool){.prec = NPU_PRECISION_INT8,
                      .method = NPU_POOLING_METHOD_AVERAGE,
                      .W = 8,
                      .H = 6,
                      .C = 16,
                      .kw = 2,
                      .kh = 2,
                      .sw = 2,
                      .sh = 2,
                      .OW = 4,
                      .OH = 3,
                      .recip_w = 32768,
                      .recip_h = 32768};
    run_pool(&q, 1, NPU_OK, "PPU int8 average 2x2 (RECIP = 2^16/2)");
    q = (struct pool){.prec = NPU_PRECISION_FP16,
                      .method = NPU_POOLING_METHOD_MAX,
                      .W = 10,
                      .H = 10,
                      .C = 8,
                      .kw = 2,
                      .kh = 2,
                      .sw = 2,
                      .sh = 2,
                      .OW = 5,
                      .OH = 5};
    run_pool(&q, 1, NPU_OK, "PPU fp16 max 2x2 s2");
    /* fp16 average: AB's working program writes 30720 = fp16(32768) (facts §6.6) */
    q.method = NPU_POOLING_METHOD_AVERAGE;
    q.recip_w = q.recip_h = 30720;
    run_pool(&q, 1, NPU_ERR_HW_REFUSED, "PPU fp16 average, strict");
    run_pool(&q, 0, NPU_OK, "PPU fp16 average 2x2, lenient (RECIP read as fp16 x 2^-16)");
}

/* conv + on-the-fly max pooling (DPU OUTPUT_MODE to the PPU, op_en 0x2d) */
static void
test_conv_to_ppu(void)
{
    for (int strict = 1; strict >= 0; strict--) {
        struct npu_device *dev = NULL;
        struct npu_device_options o = {.strict = strict};
        CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &dev));
        struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                          .out_prec = NPU_PRECISION_FP16,
                          .C = 8,
                          .H = 8,
                          .W = 8,
                          .K = 16,
                          .kh = 3,
                          .kw = 3,
                          .sx = 1,
                          .sy = 1,
                          .out_h = 6,
                          .out_w = 6};
        struct npu_bo *task, *rc, *in, *wt, *out;
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 40, NPU_BO_TASKS, &task));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 8192, 0, &rc));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, tc_in_bytes(&t), 0, &in));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, tc_w_bytes(&t), 0, &wt));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 2 * 16 * 9, 0, &out));
        t.in = npu_bo_iova(in);
        t.wt = npu_bo_iova(wt);
        t.out = 0;
        uint32_t seed = 2;
        double xin[8 * 64], w[16 * 8 * 9];
        for (int i = 0; i < 8 * 64; i++)
            xin[i] = (int)(trand(&seed) % 7) - 3;
        for (int i = 0; i < 16 * 72; i++)
            w[i] = (int)(trand(&seed) % 5) - 2;
        tc_store(&t, npu_bo_map(in), npu_bo_map(wt), xin, w);
        struct tprog p = {.n = 0};
        tc_body(&p, &t);
        tp_reg(&p, REG_DPU_FEATURE_MODE_CFG,
               DPU_FEATURE_MODE_CFG_BURST_LEN(15) | DPU_FEATURE_MODE_CFG_OUTPUT_MODE(1));
        struct pool q = {.prec = NPU_PRECISION_FP16,
                         .method = NPU_POOLING_METHOD_MAX,
                         .W = 6,
                         .H = 6,
                         .C = 16,
                         .OW = 3,
                         .OH = 3,
                         .kw = 2,
                         .kh = 2,
                         .sw = 2,
                         .sh = 2,
                         .dst = npu_bo_iova(out)};
        tp_reg(&p, REG_PPU_S_POINTER, 0x0e);
        tp_reg(&p, REG_PPU_DATA_CUBE_IN_WIDTH, 5);
        tp_reg(&p, REG_PPU_DATA_CUBE_IN_HEIGHT, 5);
        tp_reg(&p, REG_PPU_DATA_CUBE_IN_CHANNEL, 15);
        tp_reg(&p, REG_PPU_DATA_CUBE_OUT_WIDTH, 2);
        tp_reg(&p, REG_PPU_DATA_CUBE_OUT_HEIGHT, 2);
        tp_reg(&p, REG_PPU_DATA_CUBE_OUT_CHANNEL, 15);
        tp_reg(&p, REG_PPU_OPERATION_MODE_CFG, PPU_OPERATION_MODE_CFG_POOLING_METHOD(q.method));
        tp_reg(&p, REG_PPU_POOLING_KERNEL_CFG,
               PPU_POOLING_KERNEL_CFG_KERNEL_WIDTH(1) | PPU_POOLING_KERNEL_CFG_KERNEL_HEIGHT(1) |
                   PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_WIDTH(1) |
                   PPU_POOLING_KERNEL_CFG_KERNEL_STRIDE_HEIGHT(1));
        tp_reg(&p, REG_PPU_POOLING_PADDING_CFG, 0);
        tp_reg(&p, REG_PPU_DST_BASE_ADDR, q.dst);
        tp_reg(&p, REG_PPU_DST_SURF_STRIDE, PPU_DST_SURF_STRIDE_DST_SURF_STRIDE(9));
        tp_reg(&p, REG_PPU_DATA_FORMAT,
               PPU_DATA_FORMAT_PROC_PRECISION(NPU_PRECISION_FP16) | PPU_DATA_FORMAT_DPU_FLYIN(1) |
                   PPU_DATA_FORMAT_INDEX_ADD(9));
        tp_reg(&p, REG_PPU_MISC_CTRL, PPU_MISC_CTRL_BURST_LEN(3));
        uint32_t en = NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU | NPU_OP_EN_PPU;
        tp_tail(&p, 0, 0, en);
        td_set(task, 0, en, tp_store(rc, 0, &p), npu_bo_iova(rc));
        struct npu_submit s = ts_submit(task, 0, 1, 1);
        char msg[512] = "";
        enum npu_status st = ts_run(dev, &s, NULL, msg, sizeof(msg));
        if (strict) {
            CHECK_EQ_INT(NPU_ERR_HW_REFUSED, st);
            CHECK(strstr(msg, "PPU fed directly by the DPU") != NULL);
        } else {
            CHECK_EQ_INT(NPU_OK, st);
            if (st)
                fprintf(stderr, "conv->ppu: %s\n", msg);
            unsigned bad = 0;
            const uint8_t *ob = npu_bo_map(out);
            for (uint32_t k = 0; k < 16; k++)
                for (uint32_t y = 0; y < 3; y++)
                    for (uint32_t x = 0; x < 3; x++) {
                        double m = -INFINITY;
                        for (int dy = 0; dy < 2; dy++)
                            for (int dx = 0; dx < 2; dx++)
                                m = fmax(m, npu_fp16_to_fp32(npu_fp32_to_fp16((float)tc_ref(
                                                &t, xin, w, k, 2 * y + dy, 2 * x + dx))));
                        if (h2f(ob + (size_t)(k / 8) * 9 * 16 + (y * 3 + x) * 16 + (k % 8) * 2) !=
                            m)
                            bad++;
                    }
            CHECK_EQ_INT(0, bad);
            printf("conv -> DPU -> PPU max pool on the fly (lenient): exact\n");
        }
        npu_bo_destroy(task);
        npu_bo_destroy(rc);
        npu_bo_destroy(in);
        npu_bo_destroy(wt);
        npu_bo_destroy(out);
        npu_device_close(dev);
    }
}

/* Two register groups per block (NOTES S1, S19): a delta task that writes only
 * S_POINTER and the output address runs with the registers of the task two
 * back; S_POINTER 0x30 (pointer/executer clear) resets the alternation. */
static void
tp_delta(struct tprog *p, uint32_t s_pointer, uint32_t z)
{
    p->n = 0;
    tp_reg(p, REG_DPU_S_POINTER, s_pointer);
    tp_reg(p, REG_DPU_RDMA_S_POINTER, s_pointer);
    tp_reg(p, REG_DPU_DST_BASE_ADDR, z);
}

static void
test_pingpong(void)
{
    const uint32_t W = 8, H = 2, C = 8;
    size_t bytes = 2 * W * H * C;
    struct rig r;
    rig_open(&r, 1, bytes);
    struct npu_bo *out[5];
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(NPU_OK, npu_bo_create(r.dev, bytes, 0, &out[i]));
    uint8_t *x = npu_bo_map(r.a), *y = npu_bo_map(r.b);
    for (size_t i = 0; i < bytes / 2; i++) {
        f2h(x + 2 * i, (float)(i % 17));
        f2h(y + 2 * i, (float)(i % 5) + 0.5f);
    }
    struct fly f = {.prec = NPU_PRECISION_FP16,
                    .W = W,
                    .H = H,
                    .C = C,
                    .x = npu_bo_iova(r.a),
                    .y = npu_bo_iova(r.b),
                    .f32 = true};
    uint32_t ew = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) |
                  DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                  DPU_EW_CFG_EW_OP_SRC(1);
    for (int clear = 0; clear < 2; clear++) {
        struct tprog p[5];
        p[0].n = p[1].n = 0;
        f.z = npu_bo_iova(out[0]);
        f.ew_cfg = ew | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD);
        tp_fly(&p[0], &f); /* A: add, one group */
        f.z = npu_bo_iova(out[1]);
        f.ew_cfg = ew | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MINUS);
        tp_fly(&p[1], &f);                          /* B: subtract, the other group */
        tp_delta(&p[2], 0x0e, npu_bo_iova(out[2])); /* C: A's group -> add */
        tp_delta(&p[3], clear ? 0x30 : 0x0e, npu_bo_iova(out[3]));
        tp_delta(&p[4], 0x0e, npu_bo_iova(out[4]));
        uint32_t en[5] = {0x18, 0x18, 0x18, 0x18, 0x18};
        char msg[512] = "";
        /* a fresh device each time: the groups start where power-on leaves them */
        enum npu_status cst = rig_chain(&r, p, 5, en, msg);
        CHECK_EQ_INT(NPU_OK, cst);
        if (cst)
            fprintf(stderr, "ping-pong: %s\n", msg);
        /* Groups: A g0 (add), B g1 (sub), C g0 -> add. Without the clear the
         * alternation goes on: D g1 (B's sub), E g0 (add). With 0x30 in D the
         * pointer returns to group 0 and stops alternating: D g0 (add), and E
         * (0x0E again) starts from group 0: add. */
        const bool want_add[5] = {true, false, true, clear ? true : false, true};
        unsigned bad = 0;
        for (int t = 0; t < 5; t++) {
            const uint8_t *z = npu_bo_map(out[t]);
            for (size_t i = 0; i < bytes / 2; i++) {
                float a = h2f(x + 2 * i), b = h2f(y + 2 * i);
                if (h2f(z + 2 * i) != (want_add[t] ? a + b : a - b))
                    bad++;
            }
        }
        CHECK_EQ_INT(0, bad);
        struct tdesc *d = npu_bo_map(r.task);
        /* E ran on DPU group 0 both ways: interrupt bit 0x100 (0x200 is group 1) */
        CHECK_EQ_HEX(0x100, d[4].int_status);
        printf("ping-pong groups: delta tasks inherit from two tasks back%s: exact\n",
               clear ? "; 0x30 clears the alternation" : "");
        for (int i = 0; i < 5; i++)
            memset(npu_bo_map(out[i]), 0, bytes);
        /* next round on a fresh device */
        for (int i = 0; i < 5; i++)
            npu_bo_destroy(out[i]);
        rig_close(&r);
        rig_open(&r, 1, bytes);
        for (int i = 0; i < 5; i++)
            CHECK_EQ_INT(NPU_OK, npu_bo_create(r.dev, bytes, 0, &out[i]));
        x = npu_bo_map(r.a);
        y = npu_bo_map(r.b);
        for (size_t i = 0; i < bytes / 2; i++) {
            f2h(x + 2 * i, (float)(i % 17));
            f2h(y + 2 * i, (float)(i % 5) + 0.5f);
        }
        f.x = npu_bo_iova(r.a);
        f.y = npu_bo_iova(r.b);
    }
    for (int i = 0; i < 5; i++)
        npu_bo_destroy(out[i]);
    rig_close(&r);
}

int
main(void)
{
    test_pingpong();
    test_ew_algos();
    test_lut();
    test_ppu();
    test_conv_to_ppu();
    return npu_test_done("test-dpu");
}
