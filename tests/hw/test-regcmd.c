/* SPDX-License-Identifier: MIT */
/*
 * test-regcmd.c: the regcmd codec and the register database against the facts file's own
 * numbers (worked examples of facts 1.1, target table 1.2, op_en bits, the relocation set of
 * the golden README, register values of Appendix A.1), never against the code's output.
 */
#include "npu-hw.h"
#include "npu-test.h"

static void
test_codec(void)
{
    /* facts 1.1 worked examples: qword, target, value, offset. */
    static const struct {
        uint64_t q;
        uint16_t t, o;
        uint32_t v;
    } ex[] = {
        {0x0201ffca10001070ull, 0x0201, 0x1070, 0xffca1000},
        {0x1001000c08404024ull, 0x1001, 0x4024, 0x000c0840},
        {0x0101ffffaa800010ull, 0x0101, 0x0010, 0xffffaa80},
        {0x0101000100350014ull, 0x0101, 0x0014, 0x00010035},
        {0x00810000000d0008ull, 0x0081, 0x0008, 0x0000000d},
    };
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(ex); i++) {
        CHECK_EQ_HEX(ex[i].q, npu_regcmd_pack(ex[i].t, ex[i].o, ex[i].v));
        CHECK_EQ_HEX(ex[i].t, npu_regcmd_target(ex[i].q));
        CHECK_EQ_HEX(ex[i].o, npu_regcmd_offset(ex[i].q));
        CHECK_EQ_HEX(ex[i].v, npu_regcmd_value(ex[i].q));
    }
    CHECK_EQ_HEX(0x0201ffca10001070ull, npu_regcmd_reg(0x1070, 0xffca1000));
    CHECK_EQ_HEX(0x00810000000d0008ull, npu_regcmd_op_en(0x0d));
    CHECK_EQ_HEX(0x0041000000000000ull, NPU_MARKER_QWORD);
    /* DDMA is not reachable by regcmd: no target, npu_regcmd_reg gives the no-op 0. */
    CHECK_EQ_HEX(0, npu_regcmd_reg(0x8000, 1));
    /* The byte view of facts 1.1: bytes 0-1 offset, 2-5 value, 6-7 target. */
    uint64_t q = npu_regcmd_pack(0x1001, 0x4024, 0x000c0840);
    uint8_t b[8];
    memcpy(b, &q, 8);
    if (b[0] == 0x24) { /* little-endian host */
        CHECK_EQ_HEX(0x24, b[0]);
        CHECK_EQ_HEX(0x40, b[1]);
        CHECK_EQ_HEX(0x40, b[2]);
        CHECK_EQ_HEX(0x08, b[3]);
        CHECK_EQ_HEX(0x0c, b[4]);
        CHECK_EQ_HEX(0x10, b[7]);
    }
}

static void
test_targets(void)
{
    /* facts 1.2 target table. */
    static const struct {
        uint32_t off;
        uint16_t target;
        const char *block;
    } t[] = {
        {0x0010, 0x0101, "PC"},       {0x1070, 0x0201, "CNA"},      {0x3010, 0x0801, "CORE"},
        {0x4020, 0x1001, "DPU"},      {0x5018, 0x2001, "DPU_RDMA"}, {0x6070, 0x4001, "PPU"},
        {0x701c, 0x8001, "PPU_RDMA"}, {0x8000, 0, "DDMA"},          {0x9000, 0, "SDMA"},
        {0xf008, 0, "GLOBAL"},
    };
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(t); i++) {
        CHECK_EQ_HEX(t[i].target, npu_target_for_offset(t[i].off));
        CHECK_STR(t[i].block, npu_block_name(npu_block_for_offset(t[i].off)));
        if (t[i].target)
            CHECK_EQ_INT(npu_block_for_offset(t[i].off), npu_block_for_target(t[i].target));
    }
    CHECK_EQ_INT(-1, npu_block_for_offset(0x2000)); /* unassigned range */
    CHECK_EQ_INT(0, npu_target_for_offset(0x2004));
    CHECK_EQ_INT(-1, npu_block_for_target(0x3001)); /* DPU|DPU_RDMA: must be rejected */
    CHECK_EQ_HEX(0x0101, NPU_TARGET_PC);
    CHECK_EQ_HEX(0x0201, NPU_TARGET_CNA);
    CHECK_EQ_HEX(0x0801, NPU_TARGET_CORE);
    CHECK_EQ_HEX(0x1001, NPU_TARGET_DPU);
    CHECK_EQ_HEX(0x2001, NPU_TARGET_DPU_RDMA);
    CHECK_EQ_HEX(0x4001, NPU_TARGET_PPU);
    CHECK_EQ_HEX(0x8001, NPU_TARGET_PPU_RDMA);
    CHECK_EQ_HEX(0x0081, NPU_TARGET_OP_EN);
    CHECK_EQ_HEX(0x0041, NPU_TARGET_MARKER);
    /* op_en bits, facts 1.2: conv 0x0D, flying EW 0x18, pooling 0x60, all 0x7D. */
    CHECK_EQ_HEX(0x0d, NPU_OP_EN_CNA | NPU_OP_EN_CORE | NPU_OP_EN_DPU);
    CHECK_EQ_HEX(0x18, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA);
    CHECK_EQ_HEX(0x60, NPU_OP_EN_PPU | NPU_OP_EN_PPU_RDMA);
    CHECK_EQ_HEX(0x7d, NPU_OP_EN_ALL);
    CHECK_EQ_HEX(0x300, npu_int_mask_for_enable(0x0d));
    CHECK_EQ_HEX(0x300, npu_int_mask_for_enable(0x18));
    CHECK_EQ_HEX(0xc00, npu_int_mask_for_enable(0x60));
    /* The op_en layout is GLOBAL OPERATION_ENABLE (facts 2.8). */
    CHECK_EQ_HEX(NPU_OP_EN_DPU_RDMA, GLOBAL_OPERATION_ENABLE_DPU_RDMA_OP_EN(1));
    CHECK_EQ_HEX(NPU_OP_EN_CORE, GLOBAL_OPERATION_ENABLE_CORE_OP_EN(1));
}

static void
test_addr_set(void)
{
    /* The relocation set of the golden README recipe, step 3. */
    static const uint32_t addr[] = {0x1070, 0x1110, 0x4020, 0x5018, 0x5020,
                                    0x502c, 0x5038, 0x6070, 0x701c, 0x0010};
    unsigned n = 0;

    for (unsigned i = 0; i < NPU_ARRAY_SIZE(addr); i++) {
        const struct npu_reg_info *r = npu_reg_lookup(addr[i]);
        CHECK(r && (r->flags & NPU_REG_ADDR));
    }
    for (unsigned i = 0; i < npu_rk3588_n_regs; i++)
        n += !!(npu_rk3588_regs[i].flags & NPU_REG_ADDR);
    CHECK_EQ_INT(NPU_ARRAY_SIZE(addr), n);
    CHECK_EQ_INT(NPU_ARRAY_SIZE(addr), NPU_ADDR_REG_COUNT);
    /* Undocumented but written (facts 6.9). */
    CHECK(npu_reg_lookup(0x3030) && (npu_reg_lookup(0x3030)->flags & NPU_REG_UNDOCUMENTED));
    CHECK(npu_reg_lookup(0x40c4) && (npu_reg_lookup(0x40c4)->flags & NPU_REG_UNDOCUMENTED));
    /* Read-only and MMIO-only. */
    CHECK(npu_reg_lookup(0x0000)->flags & NPU_REG_RO);
    CHECK(npu_reg_lookup(0x0028)->flags & NPU_REG_RO);
    CHECK(npu_reg_lookup(0x0024)->flags & NPU_REG_W1C);
    CHECK(npu_reg_lookup(0x0030)->flags & NPU_REG_NO_REGCMD);
    CHECK(!(npu_reg_lookup(0x0014)->flags & NPU_REG_NO_REGCMD));
    /* Unverified patterns (facts 6): CNA strides, CBUF entries, dilation. */
    CHECK(npu_reg_lookup(0x107c)->flags & NPU_REG_UNVERIFIED);
    CHECK(npu_reg_lookup(0x1080)->flags & NPU_REG_UNVERIFIED);
    CHECK(npu_reg_lookup(0x1044)->flags & NPU_REG_UNVERIFIED);
    CHECK(npu_reg_lookup(0x1014)->flags & NPU_REG_UNVERIFIED);
    CHECK(!(npu_reg_lookup(0x4020)->flags & NPU_REG_UNVERIFIED));
}

static void
test_lookup(void)
{
    const struct npu_reg_info *r;

    CHECK(npu_reg_lookup(0x1018) == NULL);
    CHECK(npu_reg_lookup(0x2000) == NULL);
    CHECK(npu_reg_lookup(0x12345) == NULL);
    r = npu_reg_lookup(0x1014);
    CHECK(r != NULL);
    if (r) {
        CHECK_STR("CNA.CONV_CON3", r->full_name);
        CHECK_STR("CONV_CON3", r->name);
        CHECK_EQ_INT(NPU_BLOCK_CNA, r->block);
    }
    CHECK(npu_reg_by_name("CNA.CONV_CON3") == r);
    CHECK(npu_reg_by_name("CNA_CONV_CON3") == r);
    CHECK(npu_reg_by_name("REG_CNA_CONV_CON3") == r);
    CHECK(npu_reg_by_name("DPU_RDMA_SRC_BASE_ADDR") == npu_reg_lookup(0x5018));
    CHECK(npu_reg_by_name("DPU_RDMA.S_POINTER") == npu_reg_lookup(0x5004));
    CHECK(npu_reg_by_name("CNA.NOPE") == NULL);
    /* Table sorted, every offset in its block, targets as facts 1.2. */
    for (unsigned i = 0; i < npu_rk3588_n_regs; i++) {
        const struct npu_reg_info *ri = &npu_rk3588_regs[i];
        if (i)
            CHECK(npu_rk3588_regs[i - 1].offset < ri->offset);
        CHECK_EQ_INT(ri->block, npu_block_for_offset(ri->offset));
        CHECK(npu_reg_lookup(ri->offset) == ri);
    }
    /* Arrays expand. */
    CHECK_EQ_HEX(0x1140, REG_CNA_DCOMP_AMOUNT0);
    CHECK_EQ_HEX(0x117c, REG_CNA_DCOMP_AMOUNT15);
    CHECK_EQ_HEX(0x117c, REG_CNA_DCOMP_AMOUNT(15));
    CHECK_EQ_HEX(0x40ac, REG_DPU_EW_OP_VALUE_7);
    CHECK_EQ_HEX(0x40ac, REG_DPU_EW_OP_VALUE(7));
    CHECK_STR("DPU.EW_OP_VALUE_3", npu_reg_lookup(0x409c)->full_name);
    CHECK_STR("SDMA.CFG_STATUS", npu_reg_lookup(0x9030)->full_name);
}

/* npu_reg_lookup_target (npu_emit's check and target, from tables) agrees with
 * npu_reg_lookup and npu_target_for_offset at every offset, registers or not. */
static void
test_lookup_target(void)
{
    unsigned bad = 0, regs = 0;
    for (uint32_t o = 0; o <= 0x10004; o++) {
        uint16_t t = 0xbeef;
        const struct npu_reg_info *r = npu_reg_lookup_target(o, &t);
        const struct npu_reg_info *want = npu_reg_lookup(o);
        bad += r != want || t != (want ? npu_target_for_offset(o) : 0);
        regs += r != NULL;
    }
    CHECK_EQ_INT(0, bad);
    CHECK_EQ_INT(npu_rk3588_n_regs, regs);
    uint16_t t = 0;
    CHECK(npu_reg_lookup_target(0x1014, &t) == npu_reg_lookup(0x1014));
    CHECK(t != 0 && t == npu_target_for_offset(0x1014));
}

static void
test_fields(void)
{
    /* Appendix A.1 values, built from fields. */
    CHECK_EQ_HEX(0x120, CNA_CONV_CON1_PROC_PRECISION(NPU_CNA_PRECISION_FP16) |
                            CNA_CONV_CON1_IN_PRECISION(NPU_CNA_PRECISION_FP16));
    CHECK_EQ_HEX(0x9, CNA_CONV_CON3_CONV_X_STRIDE(1) | CNA_CONV_CON3_CONV_Y_STRIDE(1));
    CHECK_EQ_HEX(0xb,
                 CNA_CVT_CON0_DATA_SIGN(1) | CNA_CVT_CON0_CVT_TYPE(1) | CNA_CVT_CON0_CVT_BYPASS(1));
    CHECK_EQ_HEX(0x000f000f, CNA_DMA_CON0_WEIGHT_BURST_LEN(NPU_BURST_LEN_BURST16) |
                                 CNA_DMA_CON0_DATA_BURST_LEN(NPU_BURST_LEN_BURST16));
    CHECK_EQ_HEX(0x201, CORE_MISC_CFG_PROC_PRECISION(2) | CORE_MISC_CFG_QD_EN(1));
    CHECK_EQ_HEX(0x1e4, DPU_FEATURE_MODE_CFG_BURST_LEN(15) |
                            DPU_FEATURE_MODE_CFG_OUTPUT_MODE(NPU_DPU_OUTPUT_MODE_MEMORY));
    CHECK_EQ_HEX(0x53, DPU_BS_CFG_BS_RELU_BYPASS(1) | DPU_BS_CFG_BS_MUL_BYPASS(1) |
                           DPU_BS_CFG_BS_ALU_BYPASS(1) | DPU_BS_CFG_BS_BYPASS(1));
    CHECK_EQ_HEX(0x36e, DPU_BS_OW_CFG_SIZE_E_2(3) | DPU_BS_OW_CFG_SIZE_E_1(3) |
                            DPU_BS_OW_CFG_SIZE_E_0(3) | DPU_BS_OW_CFG_OD_BYPASS(1));
    CHECK_EQ_HEX(0x383, DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_OP_CVT_BYPASS(1) |
                            DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_BYPASS(1) |
                            DPU_EW_CFG_EW_BYPASS(1));
    CHECK_EQ_HEX(0xa8000002, DPU_DATA_FORMAT_OUT_PRECISION(NPU_PRECISION_FP32) |
                                 DPU_DATA_FORMAT_IN_PRECISION(NPU_PRECISION_FP16) |
                                 DPU_DATA_FORMAT_PROC_PRECISION(NPU_PRECISION_FP16));
    /* ONPU add EW_CFG 0x108202c0 (NOTES S18) = per-pixel, 16-bit, ADD, ERDMA, bypasses. */
    CHECK_EQ_HEX(0x108202c0, DPU_EW_CFG_EW_DATA_MODE(NPU_EW_DATA_MODE_PER_PIXEL) |
                                 DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_16BIT) |
                                 DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) |
                                 DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                                 DPU_EW_CFG_EW_OP_SRC(NPU_OPERAND_SRC_MEMORY));
    /* Negative CNA surface stride wraps in 28 bits (facts 2.3: RKNN 0x0FFFFFFD). */
    CHECK_EQ_HEX(0x0ffffffd, CNA_DMA_CON2_SURF_STRIDE((uint32_t)-3));
    CHECK_EQ_INT(-3, CNA_DMA_CON2_SURF_STRIDE__GET_SIGNED(0x0ffffffd));
    CHECK_EQ_INT(-2304, CNA_DMA_CON2_SURF_STRIDE__GET_SIGNED(CNA_DMA_CON2_SURF_STRIDE(-2304)));
    CHECK_EQ_INT(49952, CNA_DMA_CON2_SURF_STRIDE__GET_SIGNED(49952));
    CHECK_EQ_HEX(0x3f, CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL__GET(0x003f0300));
    CHECK_EQ_HEX(768, CNA_DATA_SIZE1_DATAIN_CHANNEL__GET(0x003f0300));
    CHECK_EQ_INT(1, CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT__MINUS_ONE);
    CHECK_EQ_HEX(0x1fff, DPU_DATA_CUBE_WIDTH_WIDTH__MAX);
    /* Errata S3: amounts bits 17:16 = cores - 1. */
    CHECK_EQ_HEX(0x00010035,
                 PC_REGISTER_AMOUNTS_PC_DATA_AMOUNT(53) | PC_REGISTER_AMOUNTS_CORE_NUM(2 - 1));
    /* Enumerations as facts 2.9 / 2.5 / 2.7. */
    CHECK_EQ_INT(5, NPU_PRECISION_FP32);
    CHECK_EQ_INT(4, NPU_PRECISION_INT32);
    CHECK_EQ_INT(7, NPU_CNA_PRECISION_TF32);
    CHECK_EQ_INT(3, NPU_ELEM_SIZE_32BIT);
    CHECK_EQ_INT(3, NPU_CONV_MODE_DEPTHWISE);
    CHECK_EQ_INT(8, NPU_ALU_ALGO_CEIL);
    CHECK_EQ_INT(2, NPU_POOLING_METHOD_MIN);
    CHECK_EQ_INT(10, NPU_ARGB_IN_3CH);
    CHECK_EQ_INT(5, NPU_NN_MODE_KERNELS3);
    /* Field metadata. */
    const struct npu_field_info *f = npu_reg_field(npu_reg_lookup(0x3014), "DATAOUT_HEIGHT");
    CHECK(f && (f->flags & NPU_FIELD_MINUS_ONE) && f->low == 16 && f->high == 31);
    f = npu_reg_field(npu_reg_lookup(0x1080), "SURF_STRIDE");
    CHECK(f && (f->flags & NPU_FIELD_SIGNED));
    if (f)
        CHECK_EQ_INT(-3, npu_field_get_signed(f, 0x0ffffffd));
    f = npu_reg_field(npu_reg_lookup(0x1010), "MC_SPLIT");
    CHECK(f && (f->flags & NPU_FIELD_UNVERIFIED) && f->type);
    CHECK_EQ_HEX(0x80000000, npu_reg_reserved_bits(npu_reg_lookup(0x4084), 0x80010001));
}

static void
test_classify_format(void)
{
    struct npu_qword_info qi;
    char buf[256];

    CHECK_EQ_INT(NPU_QW_REG, npu_qword_classify(0x0201ffca10001070ull, &qi));
    CHECK(qi.reg == npu_reg_lookup(0x1070));
    CHECK_EQ_INT(NPU_QW_NOP, npu_qword_classify(0, &qi));
    CHECK_EQ_INT(NPU_QW_MARKER, npu_qword_classify(NPU_MARKER_QWORD, &qi));
    CHECK_EQ_INT(NPU_QW_OP_EN, npu_qword_classify(0x00810000000d0008ull, &qi));
    CHECK_EQ_INT(NPU_QW_UNKNOWN_TARGET, npu_qword_classify(0x3001000000004004ull, &qi));
    CHECK_EQ_INT(NPU_QW_TARGET_MISMATCH, npu_qword_classify(0x1001000000005004ull, &qi));
    CHECK_EQ_INT(NPU_QW_UNKNOWN_REG, npu_qword_classify(0x0201000000001018ull, &qi));
    CHECK_EQ_INT(NPU_QW_BAD_SPECIAL, npu_qword_classify(0x0081000000800008ull, &qi));

    npu_format_reg(buf, sizeof(buf), npu_reg_lookup(0x100c), 0x6000a120, 0);
    CHECK_STR("IN_PRECISION=FP16 PROC_PRECISION=FP16 ARGB_IN=3CH GROUP_LINE_OFF=1 "
              "NONALIGN_DMA=1",
              buf);
    npu_format_reg(buf, sizeof(buf), npu_reg_lookup(0x4030), 0, 0);
    CHECK_STR("WIDTH=1(0)", buf);
    npu_format_reg(buf, sizeof(buf), npu_reg_lookup(0x1080), 0x0ffffffd, 0);
    CHECK_STR("SURF_STRIDE=-3", buf);
    npu_format_reg(buf, sizeof(buf), npu_reg_lookup(0x1060), 0, 0);
    CHECK_STR("0", buf);
    CHECK_EQ_INT(strlen("IN_PRECISION=FP16 PROC_PRECISION=FP16 ARGB_IN=3CH GROUP_LINE_OFF=1 "
                        "NONALIGN_DMA=1"),
                 npu_format_reg(buf, 4, npu_reg_lookup(0x100c), 0x6000a120, 0));
    CHECK_EQ_INT(3, strlen(buf));
    npu_format_op_en(buf, sizeof(buf), 0x1d);
    CHECK_STR("CNA|CORE|DPU|DPU_RDMA", buf);
    npu_format_op_en(buf, sizeof(buf), 0x2);
    CHECK_STR("bit1", buf);
}

int
main(void)
{
    test_codec();
    test_targets();
    test_addr_set();
    test_lookup();
    test_lookup_target();
    test_fields();
    test_classify_format();
    return npu_test_done("test-regcmd");
}
