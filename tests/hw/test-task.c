/* SPDX-License-Identifier: MIT */
/*
 * test-task.c: the task segment builder. Expected placements, tails and amounts are worked
 * out by hand from facts 1.3 (AMOUNT(N) = ceil(N/2) - 1, N = body + 4) and errata S3/S6, and
 * written here as numbers.
 */
#include "npu-hw.h"
#include "npu-test-log.h"
#include "npu-test.h"

/* A body of n writes to DPU registers (any harmless DPU register will do). */
static void
dpu_body(struct npu_stream *s, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        npu_emit(s, REG_DPU_EW_OP_VALUE(i % 8), i);
}

static void
test_layout_chain(void)
{
    struct npu_stream s;
    struct npu_regcmd_image img;
    static const unsigned body[3] = {5, 8, 13};

    npu_stream_init(&s);
    for (int t = 0; t < 3; t++) {
        CHECK_EQ_INT(NPU_OK, npu_stream_begin_task(&s));
        dpu_body(&s, body[t]);
        CHECK_EQ_INT(NPU_OK, npu_stream_end_task(&s, 0));
    }
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, 0x10000, 0, &img));
    /* 64-byte placement: 9 qwords -> 128 B, 12 -> 128 B, 17 -> 192 B. */
    CHECK_EQ_INT(3, img.n_tasks);
    CHECK_EQ_INT(0, img.tasks[0].start);
    CHECK_EQ_INT(16, img.tasks[1].start);
    CHECK_EQ_INT(32, img.tasks[2].start);
    CHECK_EQ_INT(56, img.n_qwords);
    CHECK_EQ_HEX(0x10080, npu_image_task_iova(&img, 1));
    /* Unchained: every tail is a last-task tail. */
    for (int t = 0; t < 3; t++) {
        const uint64_t *tail = &img.qwords[img.tasks[t].start + body[t]];
        CHECK_EQ_HEX(0, tail[0]);
        CHECK_EQ_HEX(0x0101000000000014ull, tail[1]);
        CHECK_EQ_HEX(0x0041000000000000ull, tail[2]);
        CHECK_EQ_HEX(0x0081000000080008ull, tail[3]); /* only DPU written: op_en 0x08 */
    }
    /* Padding between segments is zero. */
    CHECK_EQ_HEX(0, img.qwords[9]);
    CHECK_EQ_HEX(0, img.qwords[15]);

    /* Chain all three as a 2-core plan: amounts of N = 12 and 17: 5 and 8, bit 16 set. */
    CHECK_EQ_INT(NPU_OK, npu_image_chain(&img, 0, 3, 2));
    CHECK_EQ_HEX(0x0101000100800010ull, img.qwords[5]);
    CHECK_EQ_HEX(0x0101000100050014ull, img.qwords[6]);
    CHECK_EQ_HEX(0x0101000101000010ull, img.qwords[16 + 8]);
    CHECK_EQ_HEX(0x0101000100080014ull, img.qwords[16 + 9]);
    CHECK_EQ_HEX(0, img.qwords[32 + 13]); /* last keeps the zero tail */
    CHECK_EQ_HEX(0x0101000000000014ull, img.qwords[32 + 14]);

    struct npu_tail tail;
    npu_tail_parse(&img.qwords[0], 9, &tail);
    CHECK(tail.well_formed && tail.has_next);
    CHECK_EQ_HEX(0x10080, tail.next_addr);
    CHECK_EQ_INT(5, tail.next_amount);
    CHECK_EQ_INT(2, tail.cores);
    CHECK_EQ_INT(12, npu_pc_amount_qwords(tail.next_amount));
    npu_tail_parse(&img.qwords[32], 17, &tail);
    CHECK(tail.well_formed && !tail.has_next);

    /* Re-basing moves the chain addresses with the image. */
    img.iova = 0x200000;
    CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, NULL, 0));
    CHECK_EQ_HEX(0x0101002000800010ull, img.qwords[5]);
    CHECK_EQ_HEX(0x0101002001000010ull, img.qwords[24]);

    /* Descriptors. */
    struct npu_rknpu_task d[3];
    struct npu_rocket_task r[3];
    CHECK_EQ_INT(NPU_OK, npu_image_fill_rknpu_tasks(&img, d, 3));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_image_fill_rknpu_tasks(&img, d, 2));
    CHECK_EQ_INT(8, d[1].regcfg_amount);
    CHECK_EQ_HEX(0x200080, d[1].regcmd_addr);
    CHECK_EQ_HEX(0x300, d[1].int_mask);
    CHECK_EQ_HEX(0x1ffff, d[1].int_clear);
    CHECK_EQ_HEX(0x08, d[1].enable_mask);
    CHECK_EQ_INT(NPU_OK, npu_image_fill_rocket_tasks(&img, r, 3));
    CHECK_EQ_INT(17, r[2].regcmd_count);
    CHECK_EQ_HEX(0x200100, r[2].regcmd);

    /* Chain arguments. */
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_image_chain(&img, 2, 2, 1));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_image_chain(&img, 0, 0, 1));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_image_chain(&img, 0, 3, 4));
    npu_image_fini(&img);

    /* 16-byte alignment (hardware minimum): 9 qwords -> 80 B. */
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, 0x10000, 16, &img));
    CHECK_EQ_INT(10, img.tasks[1].start);
    CHECK_EQ_INT(NPU_OK, npu_image_chain(&img, 0, 3, 1));
    CHECK_EQ_HEX(0x0101000100500010ull, img.qwords[5]);
    CHECK_EQ_HEX(0x0101000000050014ull, img.qwords[6]);
    npu_image_fini(&img);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_layout(&s, 0x10010, 64, &img));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_layout(&s, 0x10000, 24, &img));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_layout(&s, 0xffffff00u, 64, &img));
    npu_stream_fini(&s);
}

static void
test_enable_masks(void)
{
    struct npu_stream s;
    struct npu_regcmd_image img;

    npu_stream_init(&s);
    /* conv-like: CNA + CORE + DPU -> 0x0d (facts 1.2). */
    npu_stream_begin_task(&s);
    npu_emit(&s, REG_DPU_S_POINTER, 0xe);
    npu_emit(&s, REG_CNA_CONV_CON1, 0x120);
    npu_emit(&s, REG_CORE_MISC_CFG, 0x200);
    npu_stream_end_task(&s, 0);
    /* pooling: PPU + PPU_RDMA -> 0x60, int_mask 0xc00. */
    npu_stream_begin_task(&s);
    npu_emit(&s, REG_PPU_S_POINTER, 0xe);
    npu_emit(&s, REG_PPU_RDMA_S_POINTER, 0xe);
    npu_stream_end_task(&s, 0);
    /* explicit mask wins: conv + bias 0x1d. */
    npu_stream_begin_task(&s);
    npu_emit(&s, REG_CNA_CONV_CON1, 0x120);
    npu_stream_end_task(&s, 0x1d);
    CHECK_EQ_INT(NPU_OK, npu_stream_status(&s));
    CHECK_EQ_HEX(0x0d, s.tasks[0].enable_mask);
    CHECK_EQ_HEX(0x300, s.tasks[0].int_mask);
    CHECK_EQ_HEX(0x60, s.tasks[1].enable_mask);
    CHECK_EQ_HEX(0xc00, s.tasks[1].int_mask);
    CHECK_EQ_HEX(0x1d, s.tasks[2].enable_mask);
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, 0, 0, &img));
    CHECK_EQ_HEX(0x00810000000d0008ull, img.qwords[3 + 3]);
    npu_image_fini(&img);
    npu_stream_fini(&s);
}

static void
test_relocs(void)
{
    struct npu_stream s;
    struct npu_regcmd_image img;
    uint32_t bases[3] = {0x100000, 0x200000, 0x300010};

    npu_stream_init(&s);
    npu_stream_begin_task(&s);
    npu_emit(&s, REG_DPU_S_POINTER, 0xe);
    npu_emit_reloc(&s, REG_CNA_FEATURE_DATA_ADDR, 0, 0x40);
    npu_emit_reloc(&s, REG_CNA_DCOMP_ADDR0, 1, 0x100);
    npu_emit_reloc(&s, REG_DPU_DST_BASE_ADDR, 2, 0x20);
    npu_stream_end_task(&s, 0);
    npu_stream_begin_task(&s);
    npu_emit_reloc(&s, REG_DPU_RDMA_SRC_BASE_ADDR, 2, 0x20);                /* output of task 0 */
    npu_emit_reloc(&s, REG_DPU_RDMA_EW_BASE_ADDR, NPU_RELOC_REGCMD, 0x3c0); /* constants */
    npu_emit_reloc(&s, REG_DPU_DST_BASE_ADDR, 0, 0);
    npu_stream_end_task(&s, 0);
    CHECK_EQ_INT(NPU_OK, npu_stream_status(&s));
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, 0x8000, 0, &img));
    CHECK_EQ_INT(6, img.n_relocs);
    CHECK_EQ_INT(1, img.relocs[0].qword);
    CHECK_EQ_INT(8, img.relocs[3].qword); /* task 1 starts at qword 8 (8 qwords = 64 B) */
    CHECK_EQ_INT(NPU_OK, npu_image_chain(&img, 0, 2, 1));
    CHECK_EQ_INT(7, img.n_relocs); /* + the chain address */
    CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, bases, 3));
    CHECK_EQ_HEX(0x0201001000401070ull, img.qwords[1]);
    CHECK_EQ_HEX(0x0201002001001110ull, img.qwords[2]);
    CHECK_EQ_HEX(0x1001003000304020ull, img.qwords[3]);
    CHECK_EQ_HEX(0x2001003000305018ull, img.qwords[8]);
    CHECK_EQ_HEX(0x2001000083c05038ull, img.qwords[9]);
    CHECK_EQ_HEX(0x1001001000004020ull, img.qwords[10]);
    CHECK_EQ_HEX(0x0101000080400010ull, img.qwords[4]);
    /* Template replay: new buffers, new regcmd address; nothing else changes. */
    uint32_t bases2[3] = {0x500000, 0x600000, 0x700000};
    img.iova = 0x9000;
    CHECK_EQ_INT(NPU_OK, npu_image_relocate(&img, bases2, 3));
    CHECK_EQ_HEX(0x0201005000401070ull, img.qwords[1]);
    CHECK_EQ_HEX(0x2001000093c05038ull, img.qwords[9]);
    CHECK_EQ_HEX(0x0101000090400010ull, img.qwords[4]);
    /* Errors: missing buffer, unaligned 31:4 register, past 4 GiB. */
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_image_relocate(&img, bases2, 2));
    uint32_t bad_align[3] = {0x500000, 0x600000, 0x700008};
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_image_relocate(&img, bad_align, 3));
    uint32_t bad_high[3] = {0xfffffff0u, 0x600000, 0x700000};
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_image_relocate(&img, bad_high, 3));
    npu_image_fini(&img);
    npu_stream_fini(&s);
}

static void
test_errors(void)
{
    struct npu_stream s;
    struct npu_regcmd_image img;

    /* Write outside a task. */
    npu_stream_init(&s);
    npu_emit(&s, REG_DPU_S_POINTER, 0xe);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_status(&s));
    CHECK(strstr(npu_stream_error(&s), "outside a task") != NULL);
    npu_stream_fini(&s);
    /* Unknown register, sticky afterwards. */
    npu_stream_init(&s);
    npu_stream_begin_task(&s);
    npu_emit(&s, 0x1018, 1);
    npu_emit(&s, REG_DPU_S_POINTER, 0xe);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_end_task(&s, 0));
    CHECK(strstr(npu_stream_error(&s), "0x1018") != NULL);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_layout(&s, 0, 0, &img));
    npu_stream_fini(&s);
    /* Read-only, MMIO-only, chain registers, non-address relocation. */
    static const uint16_t bad[] = {REG_PC_VERSION,           REG_PC_TASK_CON,
                                   REG_PC_BASE_ADDRESS,      REG_GLOBAL_OPERATION_ENABLE,
                                   REG_DDMA_CFG_OUTSTANDING, REG_CNA_S_STATUS};
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(bad); i++) {
        npu_stream_init(&s);
        npu_stream_begin_task(&s);
        npu_emit(&s, bad[i], 0);
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_status(&s));
        npu_stream_fini(&s);
    }
    npu_stream_init(&s);
    npu_stream_begin_task(&s);
    npu_emit_reloc(&s, REG_DPU_DST_SURF_STRIDE, 0, 0);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_status(&s));
    npu_stream_fini(&s);
    /* Begin while open, end with an empty body, layout with an open task. */
    npu_stream_init(&s);
    npu_stream_begin_task(&s);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_begin_task(&s));
    npu_stream_fini(&s);
    npu_stream_init(&s);
    npu_stream_begin_task(&s);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_end_task(&s, 0));
    npu_stream_fini(&s);
    npu_stream_init(&s);
    npu_stream_begin_task(&s);
    npu_emit(&s, REG_DPU_S_POINTER, 0xe);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_layout(&s, 0, 0, &img));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_end_task(&s, 0x80)); /* unknown op_en bit */
    npu_stream_fini(&s);
    npu_stream_init(&s);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_layout(&s, 0, 0, &img)); /* no tasks */
    npu_stream_fini(&s);
}

/* npu_emit packs with the table's target exactly as npu_regcmd_reg does, and
 * npu_emit_raw_n appends what as many npu_emit_raw calls would (across body growth); both
 * do nothing once the stream has failed. */
static void
test_emit_same_qwords(void)
{
    struct npu_stream a, b;
    uint64_t q[300];

    npu_stream_init(&a);
    npu_stream_init(&b);
    npu_stream_begin_task(&a);
    npu_stream_begin_task(&b);
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(q); i++)
        q[i] = npu_regcmd_reg(REG_DPU_LUT_ACCESS_DATA, i * 2654435761u);
    npu_emit(&a, REG_DPU_S_POINTER, 0xe);
    npu_emit_raw(&b, npu_regcmd_reg(REG_DPU_S_POINTER, 0xe));
    npu_emit(&a, REG_DPU_LUT_ACCESS_DATA, 7);
    npu_emit_raw(&b, npu_regcmd_reg(REG_DPU_LUT_ACCESS_DATA, 7));
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(q); i++)
        npu_emit_raw(&a, q[i]);
    npu_emit_raw_n(&b, q, 5);
    npu_emit_raw_n(&b, q + 5, NPU_ARRAY_SIZE(q) - 5);
    npu_emit_raw_n(&b, q, 0);
    CHECK_EQ_INT(NPU_OK, npu_stream_status(&a));
    CHECK_EQ_INT(NPU_OK, npu_stream_status(&b));
    CHECK_EQ_INT(NPU_ARRAY_SIZE(q) + 2, a.tasks[0].n_body);
    CHECK_EQ_INT(a.tasks[0].n_body, b.tasks[0].n_body);
    CHECK(!memcmp(a.tasks[0].body, b.tasks[0].body, a.tasks[0].n_body * sizeof(uint64_t)));
    CHECK(a.tasks[0].body[0] == npu_regcmd_reg(REG_DPU_S_POINTER, 0xe));
    npu_stream_fini(&a);
    npu_stream_fini(&b);
    /* a failed stream takes nothing more */
    npu_stream_init(&a);
    npu_stream_begin_task(&a);
    npu_emit(&a, 0x1018, 1);
    npu_emit_raw_n(&a, q, 10);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_stream_status(&a));
    CHECK_EQ_INT(0, a.tasks[0].n_body);
    npu_stream_fini(&a);
}

static void
test_many_tasks(void)
{
    /* A long chain: 300 tasks of growing bodies; every tail points at the next segment. */
    struct npu_stream s;
    struct npu_regcmd_image img;

    npu_stream_init(&s);
    for (unsigned t = 0; t < 300; t++) {
        npu_stream_begin_task(&s);
        dpu_body(&s, 1 + t % 37);
        npu_stream_end_task(&s, 0);
    }
    CHECK_EQ_INT(NPU_OK, npu_stream_layout(&s, 0x40000, 0, &img));
    CHECK_EQ_INT(NPU_OK, npu_image_chain(&img, 0, 300, 3));
    int bad = 0;
    for (unsigned t = 0; t + 1 < 300; t++) {
        struct npu_tail tl;
        uint32_t n = img.tasks[t].n_body + 4, nn = img.tasks[t + 1].n_body + 4;
        npu_tail_parse(&img.qwords[img.tasks[t].start], n, &tl);
        bad += !tl.well_formed || tl.next_addr != npu_image_task_iova(&img, t + 1) ||
               tl.next_amount != (nn + 1) / 2 - 1 || tl.cores != 3 || img.tasks[t].start % 8 != 0;
    }
    CHECK_EQ_INT(0, bad);
    npu_image_fini(&img);
    npu_stream_fini(&s);
}

int
main(void)
{
    npu_log_set_handler(npu_test_log_quiet, NULL); /* the error paths below log on purpose */
    test_layout_chain();
    test_enable_masks();
    test_relocs();
    test_errors();
    test_many_tasks();
    test_emit_same_qwords();
    return npu_test_done("test-task");
}
