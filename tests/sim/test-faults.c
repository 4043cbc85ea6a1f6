/* SPDX-License-Identifier: MIT */
/*
 * test-faults.c: everything the simulator must refuse, each with its own
 * clear error naming the task, the block and (for DMA) the address: DMA to
 * an unmapped address or past the end of a BO, a misaligned regcmd address,
 * a task count larger than the chain, a CBUF overflow, an unknown register in
 * strict mode (a warning in lenient mode), target 0x3001, a write to a
 * read-only register, op_en without its marker, entries after op_en, a
 * segment without op_en, an int_mask that does not match the last task's
 * interrupt, a read of a register no regcmd ever wrote, TASK_DMA_BASE_ADDR
 * (refused strict; added to block DMA addresses lenient), and a job whose
 * modeled time exceeds the submit timeout. Strict mode's allow-list (the
 * evidence ledger): a stream with one register value no ledger entry covers is
 * refused naming the task, register, value and nearest entry; at threshold O a
 * T-only pattern is refused; NPU_SIM_EVIDENCE=off runs both.
 */
#include "npu-handconv.h"
#include "npu-test.h"
#include "npu/npu-evidence.h"

#define W_ 16
#define C_ 8

struct rig {
    struct npu_device *dev;
    struct npu_bo *task, *regcmd, *x, *y, *z;
};

static void
rig_open_ev(struct rig *r, int strict, int evidence)
{
    memset(r, 0, sizeof(*r));
    struct npu_device_options o = {.strict = strict, .evidence = evidence};
    CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &r->dev));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, 40 * 4, NPU_BO_TASKS, &r->task));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, 16384, 0, &r->regcmd));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, W_ * 16, 0, &r->x));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, W_ * 16, 0, &r->y));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(r->dev, W_ * 16, 0, &r->z));
}

static void
rig_open(struct rig *r, int strict)
{
    rig_open_ev(r, strict, 0);
}

static void
rig_close(struct rig *r)
{
    npu_bo_destroy(r->task);
    npu_bo_destroy(r->regcmd);
    npu_bo_destroy(r->x);
    npu_bo_destroy(r->y);
    npu_bo_destroy(r->z);
    npu_device_close(r->dev);
}

/* An fp16 elementwise add over W_ pixels x C_ channels. */
static void
add_body(struct rig *r, struct tprog *p, uint32_t x, uint32_t y, uint32_t z)
{
    struct fly f = {
        .prec = NPU_PRECISION_FP16, .W = W_, .H = 1, .C = C_, .x = x, .y = y, .z = z, .f32 = true};
    f.ew_cfg = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) |
               DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
               DPU_EW_CFG_EW_OP_SRC(1) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD);
    p->n = 0;
    tp_fly(p, &f);
}

/* Runs programs (tails already appended) stored at 0x1000 steps; descriptor
 * addresses and amounts from `addr_off` / the program lengths. */
static enum npu_status
run(struct rig *r, struct tprog *p, unsigned n_prog, unsigned task_number, uint32_t addr_off,
    uint32_t int_mask, char *msg)
{
    uint32_t base = npu_bo_iova(r->regcmd);
    for (unsigned i = 0; i < n_prog; i++) {
        uint32_t body = tp_store(r->regcmd, i * 0x1000, &p[i]);
        td_set(r->task, i, 0x18, body, base + i * 0x1000 + (i == 0 ? addr_off : 0));
        if (int_mask)
            ((struct tdesc *)npu_bo_map(r->task))[i].int_mask = int_mask;
    }
    for (unsigned i = n_prog; i < task_number; i++)
        td_set(r->task, i, 0x18, p[0].n - 4, base);
    struct npu_submit s = ts_submit(r->task, 0, task_number, 1);
    memset(msg, 0, 512);
    return ts_run(r->dev, &s, NULL, msg, 512);
}

static void
expect(enum npu_status want, enum npu_status got, const char *msg, const char *const *needles,
       const char *label)
{
    CHECK_EQ_INT(want, got);
    for (const char *const *n = needles; *n; n++)
        if (!strstr(msg, *n)) {
            fprintf(stderr, "%s: \"%s\" missing from: %s\n", label, *n, msg);
            CHECK(0);
        }
    printf("%-34s %s\n", label, msg);
}

static void
test_dma_faults(void)
{
    struct rig r;
    rig_open(&r, 1);
    char msg[512], a[32];
    struct tprog p;
    uint32_t X = npu_bo_iova(r.x), Y = npu_bo_iova(r.y), Z = npu_bo_iova(r.z);

    /* unmapped input address */
    add_body(&r, &p, 0x00800000, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    snprintf(a, sizeof(a), "0x%08x", 0x00800000);
    expect(NPU_ERR_FAULT, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "DPU_RDMA", a, "not mapped", NULL}, "unmapped address");

    /* output past the end of its BO (z + 64: the cube needs W_*16 bytes) */
    add_body(&r, &p, X, Y, Z + 64);
    tp_tail(&p, 0, 0, 0x18);
    snprintf(a, sizeof(a), "0x%08x", Z + 64);
    expect(NPU_ERR_FAULT, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "DPU", "WDMA", a, "past the end", NULL}, "write past a BO");

    /* regcmd address not 16-byte aligned */
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    snprintf(a, sizeof(a), "0x%08x", npu_bo_iova(r.regcmd) + 8);
    expect(NPU_ERR_FAULT, run(&r, &p, 1, 1, 8, 0, msg), msg,
           (const char *[]){"task 0", "PC", a, "16-byte", NULL}, "misaligned regcmd address");

    /* task_number larger than the chain: two descriptors, one segment */
    expect(NPU_ERR_FAULT, run(&r, &p, 1, 2, 0, 0, msg), msg,
           (const char *[]){"task 0", "chain ends", "1 of task_number 2", NULL},
           "task count beyond the chain");

    /* a fault in the second task of a chain names task 1 */
    struct tprog q[2];
    add_body(&r, &q[1], X, 0x00900000, Z);
    tp_tail(&q[1], 0, 0, 0x18);
    add_body(&r, &q[0], X, Y, Z);
    tp_tail(&q[0], npu_bo_iova(r.regcmd) + 0x1000, npu_pc_amount(q[1].n), 0x18);
    expect(NPU_ERR_FAULT, run(&r, q, 2, 2, 0, 0, msg), msg,
           (const char *[]){"task 1", "ERDMA", "0x00900000", NULL}, "fault in the second task");

    /* the vendor driver completes a job only if the last interrupt matches */
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    expect(NPU_ERR_TIMEOUT, run(&r, &p, 1, 1, 0, 0xc00, msg), msg,
           (const char *[]){"task 0", "int_mask is 0xc00", "time", NULL}, "int_mask mismatch");
    rig_close(&r);
}

static void
test_stream_faults(void)
{
    struct rig r;
    rig_open(&r, 1);
    char msg[512];
    struct tprog p;
    uint32_t X = npu_bo_iova(r.x), Y = npu_bo_iova(r.y), Z = npu_bo_iova(r.z);

    /* unknown register in strict mode */
    add_body(&r, &p, X, Y, Z);
    tp_raw(&p, npu_regcmd_pack(NPU_TARGET_DPU, 0x4200, 1));
    tp_tail(&p, 0, 0, 0x18);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "unknown register 0x4200", "DPU", NULL},
           "unknown register (strict)");

    /* target 0x3001 */
    add_body(&r, &p, X, Y, Z);
    tp_raw(&p, npu_regcmd_pack(0x3001, 0x4070, 0x383));
    tp_tail(&p, 0, 0, 0x18);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "0x3001", NULL}, "target 0x3001");

    /* unknown target */
    add_body(&r, &p, X, Y, Z);
    tp_raw(&p, npu_regcmd_pack(0x0401, 0x2000, 1));
    tp_tail(&p, 0, 0, 0x18);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "unknown regcmd target 0x0401", NULL}, "unknown target");

    /* target and offset in different blocks */
    add_body(&r, &p, X, Y, Z);
    tp_raw(&p, npu_regcmd_pack(NPU_TARGET_CNA, REG_DPU_EW_CFG, 0x383));
    tp_tail(&p, 0, 0, 0x18);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "does not match", NULL}, "target/offset mismatch");

    /* read-only register */
    add_body(&r, &p, X, Y, Z);
    tp_raw(&p, npu_regcmd_pack(NPU_TARGET_DPU, REG_DPU_S_STATUS, 0));
    tp_tail(&p, 0, 0, 0x18);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "read-only", "S_STATUS", NULL}, "read-only register");

    /* op_en without the 0x0041 marker */
    add_body(&r, &p, X, Y, Z);
    tp_raw(&p, 0);
    tp_reg(&p, REG_PC_REGISTER_AMOUNTS, 0);
    tp_raw(&p, 0);
    tp_raw(&p, npu_regcmd_op_en(0x18));
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "marker", NULL}, "op_en without marker");

    /* a register write after op_en inside the fetched amount */
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    tp_reg(&p, REG_DPU_EW_CFG, 0x383);
    tp_raw(&p, 0);
    {
        uint32_t body = tp_store(r.regcmd, 0, &p);
        td_set(r.task, 0, 0x18, body, npu_bo_iova(r.regcmd));
        struct npu_submit s = ts_submit(r.task, 0, 1, 1);
        enum npu_status st = ts_run(r.dev, &s, NULL, msg, 512);
        expect(NPU_ERR_HW_REFUSED, st, msg, (const char *[]){"task 0", "last entry", NULL},
               "entry after op_en");
    }

    /* descriptor amount too small: the fetch ends before op_en */
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    {
        tp_store(r.regcmd, 0, &p);
        td_set(r.task, 0, 0x18, 10, npu_bo_iova(r.regcmd));
        struct npu_submit s = ts_submit(r.task, 0, 1, 1);
        enum npu_status st = ts_run(r.dev, &s, NULL, msg, 512);
        expect(NPU_ERR_FAULT, st, msg, (const char *[]){"task 0", "no op_en", NULL},
               "segment without op_en");
    }
    rig_close(&r);

    /* lenient: the unknown register is ignored with a warning; the add runs */
    rig_open(&r, 0);
    add_body(&r, &p, npu_bo_iova(r.x), npu_bo_iova(r.y), npu_bo_iova(r.z));
    tp_raw(&p, npu_regcmd_pack(NPU_TARGET_DPU, 0x4200, 1));
    tp_tail(&p, 0, 0, 0x18);
    CHECK_EQ_INT(NPU_OK, run(&r, &p, 1, 1, 0, 0, msg));
    rig_close(&r);
}

static void
test_cbuf_overflow(void)
{
    struct npu_device *dev = NULL;
    struct npu_device_options o = {.strict = 1};
    CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &dev));
    struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                      .out_prec = NPU_PRECISION_FP16,
                      .C = 64,
                      .H = 40,
                      .W = 40,
                      .K = 16,
                      .kh = 1,
                      .kw = 1,
                      .sx = 1,
                      .sy = 1,
                      .out_h = 40,
                      .out_w = 40};
    struct npu_bo *task, *rc, *in, *wt, *out;
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 40, NPU_BO_TASKS, &task));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 4096, 0, &rc));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, tc_in_bytes(&t), 0, &in));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, tc_w_bytes(&t), 0, &wt));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, tc_out_bytes(&t), 0, &out));
    t.in = npu_bo_iova(in);
    t.wt = npu_bo_iova(wt);
    t.out = npu_bo_iova(out);
    struct tprog p = {.n = 0};
    tc_body(&p, &t); /* 40 rows x 40 x 64 x 2 B = 200 KiB: needs 7 banks */
    tp_reg(&p, REG_CNA_CBUF_CON0, CNA_CBUF_CON0_DATA_BANK(4) | CNA_CBUF_CON0_WEIGHT_BANK(8));
    tp_tail(&p, 0, 0, 0x0d);
    td_set(task, 0, 0x0d, tp_store(rc, 0, &p), npu_bo_iova(rc));
    struct npu_submit s = ts_submit(task, 0, 1, 1);
    char msg[512];
    expect(NPU_ERR_HW_REFUSED, ts_run(dev, &s, NULL, msg, sizeof(msg)), msg,
           (const char *[]){"task 0", "CNA", "CBUF overflow", "DATA_BANK 4", NULL},
           "CBUF overflow");
    /* 13 banks */
    p.n = 0;
    tc_body(&p, &t);
    tp_reg(&p, REG_CNA_CBUF_CON0, CNA_CBUF_CON0_DATA_BANK(8) | CNA_CBUF_CON0_WEIGHT_BANK(5));
    tp_tail(&p, 0, 0, 0x0d);
    td_set(task, 0, 0x0d, tp_store(rc, 0, &p), npu_bo_iova(rc));
    expect(NPU_ERR_HW_REFUSED, ts_run(dev, &s, NULL, msg, sizeof(msg)), msg,
           (const char *[]){"task 0", "12 banks", NULL}, "CBUF banks > 12");
    /* weights at an unaligned address */
    p.n = 0;
    tc_body(&p, &t);
    tp_reg(&p, REG_CNA_DCOMP_ADDR0, t.wt + 8);
    tp_tail(&p, 0, 0, 0x0d);
    td_set(task, 0, 0x0d, tp_store(rc, 0, &p), npu_bo_iova(rc));
    expect(NPU_ERR_FAULT, ts_run(dev, &s, NULL, msg, sizeof(msg)), msg,
           (const char *[]){"task 0", "CNA", "DCOMP_ADDR0", "16-byte", NULL}, "unaligned weights");
    npu_bo_destroy(task);
    npu_bo_destroy(rc);
    npu_bo_destroy(in);
    npu_bo_destroy(wt);
    npu_bo_destroy(out);
    npu_device_close(dev);
}

static void
test_state_faults(void)
{
    /* a register no regcmd ever wrote (fresh device): strict refuses */
    struct rig r;
    rig_open(&r, 1);
    char msg[512];
    struct tprog p;
    add_body(&r, &p, npu_bo_iova(r.x), npu_bo_iova(r.y), npu_bo_iova(r.z));
    /* drop the OUT_CVT_SHIFT write */
    unsigned k = 0;
    for (unsigned i = 0; i < p.n; i++)
        if (npu_regcmd_offset(p.q[i]) != REG_DPU_OUT_CVT_SHIFT)
            p.q[k++] = p.q[i];
    p.n = k;
    tp_tail(&p, 0, 0, 0x18);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "DPU.OUT_CVT_SHIFT", "no regcmd has written", NULL},
           "never-written register");
    rig_close(&r);

    /* TASK_DMA_BASE_ADDR: strict refuses (facts §6.10) */
    rig_open(&r, 1);
    add_body(&r, &p, npu_bo_iova(r.x), npu_bo_iova(r.y), npu_bo_iova(r.z));
    tp_tail(&p, 0, 0, 0x18);
    tp_store(r.regcmd, 0, &p);
    td_set(r.task, 0, 0x18, p.n - 4, npu_bo_iova(r.regcmd));
    struct npu_submit s = ts_submit(r.task, 0, 1, 1);
    s.task_base_addr = 0x1000;
    expect(NPU_ERR_HW_REFUSED, ts_run(r.dev, &s, NULL, msg, sizeof(msg)), msg,
           (const char *[]){"6.10", NULL}, "TASK_DMA_BASE_ADDR (strict)");
    rig_close(&r);

    /* lenient: block addresses are offsets from the base, the PC fetch is not */
    rig_open(&r, 0);
    uint32_t base = npu_bo_iova(r.z) - 0x100000;
    uint16_t *x = npu_bo_map(r.x), *y = npu_bo_map(r.y);
    for (int i = 0; i < W_ * C_; i++) {
        x[i] = npu_fp32_to_fp16((float)i);
        y[i] = npu_fp32_to_fp16(0.5f);
    }
    add_body(&r, &p, npu_bo_iova(r.x) - base, npu_bo_iova(r.y) - base, npu_bo_iova(r.z) - base);
    tp_tail(&p, 0, 0, 0x18);
    tp_store(r.regcmd, 0, &p);
    td_set(r.task, 0, 0x18, p.n - 4, npu_bo_iova(r.regcmd));
    s = ts_submit(r.task, 0, 1, 1);
    s.task_base_addr = base;
    CHECK_EQ_INT(NPU_OK, ts_run(r.dev, &s, NULL, msg, sizeof(msg)));
    uint16_t *z = npu_bo_map(r.z);
    unsigned bad = 0;
    for (int i = 0; i < W_ * C_; i++)
        if (npu_fp16_to_fp32(z[i]) != (float)i + 0.5f)
            bad++;
    CHECK_EQ_INT(0, bad);
    printf("%-34s block DMA = base + register value (lenient)\n", "TASK_DMA_BASE_ADDR");
    rig_close(&r);
}

static void
test_submit_timeout(void)
{
    /* 15 MiB through the DPU: ~2.0 ms modeled (timing model v2: 15.7 MB of line traffic at
     * 12 GB/s x 0.65), ~1.6 ms under v1 (10 GB/s); either is > 1 ms */
    struct npu_device *dev = NULL;
    CHECK_EQ_INT(NPU_OK, npu_device_open("sim", &dev));
    const uint32_t W = 8192, H = 40, C = 8;
    size_t bytes = (size_t)W * H * 16;
    struct npu_bo *task, *rc, *x, *y, *z;
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 40, NPU_BO_TASKS, &task));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 4096, 0, &rc));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, bytes, 0, &x));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, bytes, 0, &y));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, bytes, 0, &z));
    struct fly f = {.prec = NPU_PRECISION_FP16,
                    .W = W,
                    .H = H,
                    .C = C,
                    .x = npu_bo_iova(x),
                    .y = npu_bo_iova(y),
                    .z = npu_bo_iova(z),
                    .f32 = true};
    f.ew_cfg = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) |
               DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
               DPU_EW_CFG_EW_OP_SRC(1) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD);
    struct tprog p = {.n = 0};
    tp_fly(&p, &f);
    tp_tail(&p, 0, 0, 0x18);
    td_set(task, 0, 0x18, tp_store(rc, 0, &p), npu_bo_iova(rc));
    struct npu_submit s = ts_submit(task, 0, 1, 1);
    s.timeout_ms = 1;
    char msg[512];
    expect(NPU_ERR_TIMEOUT, ts_run(dev, &s, NULL, msg, sizeof(msg)), msg,
           (const char *[]){"modeled (timing model v2)", "timeout", NULL}, "submit timeout");
    s.timeout_ms = 100;
    CHECK_EQ_INT(NPU_OK, ts_run(dev, &s, NULL, msg, sizeof(msg)));
    npu_bo_destroy(task);
    npu_bo_destroy(rc);
    npu_bo_destroy(x);
    npu_bo_destroy(y);
    npu_bo_destroy(z);
    npu_device_close(dev);
}

/* Index of the first write of register off in p, or p->n. */
static unsigned
find_reg(const struct tprog *p, uint16_t off)
{
    for (unsigned i = 0; i < p->n; i++) {
        struct npu_qword_info q;
        if (npu_qword_classify(p->q[i], &q) == NPU_QW_REG && q.offset == off)
            return i;
    }
    return p->n;
}

static void
test_evidence(void)
{
    struct rig r;
    char msg[512], a[64];
    struct tprog p;

    /* The fp16 add as the hand builder writes it: covered at T. */
    rig_open_ev(&r, 1, NPU_EVIDENCE_T);
    uint32_t X = npu_bo_iova(r.x), Y = npu_bo_iova(r.y), Z = npu_bo_iova(r.z);
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    enum npu_evidence_level lv = NPU_EVIDENCE_NONE;
    CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(p.q, p.n, NULL, 0, NULL, &lv));
    CHECK(lv >= NPU_EVIDENCE_T);
    CHECK_EQ_INT(NPU_OK, run(&r, &p, 1, 1, 0, 0, msg));

    /* One value mutated to one no entry covers: DPU FEATURE_MODE_CFG with a
     * burst length of 4 (every source uses 16). */
    unsigned i = find_reg(&p, REG_DPU_FEATURE_MODE_CFG);
    CHECK(i < p.n);
    uint32_t v = (uint32_t)(p.q[i] >> 16);
    v = (v & ~DPU_FEATURE_MODE_CFG_BURST_LEN__MASK) |
        DPU_FEATURE_MODE_CFG_BURST_LEN(NPU_BURST_LEN_BURST4);
    CHECK(!npu_evidence_lookup(REG_DPU_FEATURE_MODE_CFG, v));
    p.q[i] = npu_regcmd_pack(NPU_TARGET_DPU, REG_DPU_FEATURE_MODE_CFG, v);
    snprintf(a, sizeof(a), "0x%08x", v);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "evidence", "DPU.FEATURE_MODE_CFG", a, "no ledger entry",
                            "nearest: DPU.FEATURE_MODE_CFG.", NULL},
           "value outside the ledger");
    rig_close(&r);

    /* Threshold O: the builder's add is the onpu-add pattern (O) and runs;
     * with the EW ALU switched to MAX (a pattern only OpenNPU writes, T) it is
     * refused. */
    rig_open_ev(&r, 1, NPU_EVIDENCE_O);
    X = npu_bo_iova(r.x), Y = npu_bo_iova(r.y), Z = npu_bo_iova(r.z);
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(p.q, p.n, NULL, 0, NULL, &lv));
    CHECK_EQ_INT(NPU_EVIDENCE_O, lv);
    CHECK_EQ_INT(NPU_OK, run(&r, &p, 1, 1, 0, 0, msg));
    unsigned e = find_reg(&p, REG_DPU_EW_CFG);
    CHECK(e < p.n);
    uint32_t ew = (uint32_t)(p.q[e] >> 16);
    ew = (ew & ~DPU_EW_CFG_EW_ALU_ALGO__MASK) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_MAX);
    p.q[e] = npu_regcmd_pack(NPU_TARGET_DPU, REG_DPU_EW_CFG, ew);
    const struct npu_evidence_entry *te = npu_evidence_lookup(REG_DPU_EW_CFG, ew);
    CHECK(te && te->level == NPU_EVIDENCE_T);
    struct npu_evidence_write w[256];
    size_t n = 0;
    CHECK_EQ_INT(NPU_OK, npu_evidence_classify_task(p.q, p.n, w, 256, &n, &lv));
    CHECK_EQ_INT(NPU_EVIDENCE_T, lv);
    CHECK(n == p.n - 2); /* every qword but the NOP and the marker */
    CHECK(e < n && w[e].entry == te && w[e].value == ew);
    if (te) {
        snprintf(a, sizeof(a), "0x%08x", ew);
        expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
               (const char *[]){"task 0", "evidence", "DPU.EW_CFG", a, te->id, "level T",
                                "below the threshold O", NULL},
               "T pattern at threshold O");
    }
    rig_close(&r);

    /* -1: no allow-list; the mutated stream runs (the deny-list accepts it). */
    rig_open_ev(&r, 1, -1);
    X = npu_bo_iova(r.x), Y = npu_bo_iova(r.y), Z = npu_bo_iova(r.z);
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    p.q[i] = npu_regcmd_pack(NPU_TARGET_DPU, REG_DPU_FEATURE_MODE_CFG, v);
    CHECK_EQ_INT(NPU_OK, run(&r, &p, 1, 1, 0, 0, msg));
    rig_close(&r);

    /* The default without $NPU_SIM_EVIDENCE: no allow-list (a user's model the
     * ledger has not seen still runs); the variable, as the test setup sets it,
     * turns it on. */
    const char *env = getenv("NPU_SIM_EVIDENCE");
    char saved[16] = "";
    if (env)
        snprintf(saved, sizeof(saved), "%s", env);
    unsetenv("NPU_SIM_EVIDENCE");
    rig_open(&r, 1);
    X = npu_bo_iova(r.x), Y = npu_bo_iova(r.y), Z = npu_bo_iova(r.z);
    add_body(&r, &p, X, Y, Z);
    tp_tail(&p, 0, 0, 0x18);
    p.q[i] = npu_regcmd_pack(NPU_TARGET_DPU, REG_DPU_FEATURE_MODE_CFG, v);
    CHECK_EQ_INT(NPU_OK, run(&r, &p, 1, 1, 0, 0, msg));
    rig_close(&r);
    setenv("NPU_SIM_EVIDENCE", "T", 1);
    rig_open(&r, 1);
    expect(NPU_ERR_HW_REFUSED, run(&r, &p, 1, 1, 0, 0, msg), msg,
           (const char *[]){"task 0", "DPU.FEATURE_MODE_CFG", "no ledger entry", NULL},
           "NPU_SIM_EVIDENCE=T");
    rig_close(&r);
    if (env)
        setenv("NPU_SIM_EVIDENCE", saved, 1);
    else
        unsetenv("NPU_SIM_EVIDENCE");

    /* A threshold out of range is refused at open. */
    struct npu_device *dev = NULL;
    struct npu_device_options o = {.strict = 1, .evidence = 9};
    CHECK(npu_device_open_ex("sim", &o, &dev) != NPU_OK);
    CHECK(dev == NULL);
}

int
main(void)
{
    test_evidence();
    test_dma_faults();
    test_stream_faults();
    test_cbuf_overflow();
    test_state_faults();
    test_submit_timeout();
    return npu_test_done("test-faults");
}
