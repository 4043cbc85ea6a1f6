/* SPDX-License-Identifier: MIT */
/*
 * test-robust.c: malformed programs must end in a clear error, never in a
 * crash, a hang or an out-of-bounds host access (run it under ASan/UBSan).
 * Valid conv, elementwise and pooling programs are mutated at random (bit
 * flips in register values, registers moved to other offsets, random
 * qwords, other op_en masks) and run in strict and lenient mode; every
 * result must be OK or one of the documented error statuses with a message.
 */
#include "npu-handconv.h"
#include "npu-test.h"

static const uint32_t masks[] = {0x0d, 0x1d, 0x18, 0x60, 0x2d, 0x7d, 0x08, 0x01, 0x7f, 0x02};

int
main(int argc, char **argv)
{
    unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
    uint32_t seed = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 0x1234567;
    unsigned counts[16] = {0};
    for (int strict = 1; strict >= 0; strict--) {
        struct npu_device *dev = NULL;
        struct npu_device_options o = {.strict = strict};
        CHECK_EQ_INT(NPU_OK, npu_device_open_ex("sim", &o, &dev));
        struct npu_bo *task, *rc, *a, *b, *c;
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 40 * 2, NPU_BO_TASKS, &task));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 16384, 0, &rc));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 65536, 0, &a));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 65536, 0, &b));
        CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 65536, 0, &c));
        for (int i = 0; i < 65536; i++) {
            ((uint8_t *)npu_bo_map(a))[i] = (uint8_t)trand(&seed);
            ((uint8_t *)npu_bo_map(b))[i] = (uint8_t)trand(&seed);
        }
        struct tprog base[3];
        /* conv */
        struct tconv t = {.prec = NPU_CNA_PRECISION_FP16,
                          .out_prec = NPU_PRECISION_FP16,
                          .C = 16,
                          .H = 8,
                          .W = 8,
                          .K = 16,
                          .kh = 3,
                          .kw = 3,
                          .sx = 1,
                          .sy = 1,
                          .pad_t = 1,
                          .pad_l = 1,
                          .out_h = 8,
                          .out_w = 8,
                          .in = npu_bo_iova(a),
                          .wt = npu_bo_iova(b),
                          .out = npu_bo_iova(c)};
        base[0].n = 0;
        tc_body(&base[0], &t);
        /* elementwise */
        struct fly f = {.prec = NPU_PRECISION_INT8,
                        .W = 32,
                        .H = 4,
                        .C = 16,
                        .x = npu_bo_iova(a),
                        .y = npu_bo_iova(b),
                        .z = npu_bo_iova(c)};
        f.ew_cfg = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_8BIT) |
                   DPU_EW_CFG_EW_RELU_BYPASS(1) | DPU_EW_CFG_EW_LUT_BYPASS(1) |
                   DPU_EW_CFG_EW_OP_SRC(1) | DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD);
        base[1].n = 0;
        tp_fly(&base[1], &f);
        /* pooling: PPU registers with PPU_RDMA */
        base[2].n = 0;
        tp_reg(&base[2], REG_PPU_S_POINTER, 0x0e);
        tp_reg(&base[2], REG_PPU_RDMA_S_POINTER, 0x0e);
        uint16_t ppu_regs[] = {REG_PPU_DATA_CUBE_IN_WIDTH,   REG_PPU_DATA_CUBE_IN_HEIGHT,
                               REG_PPU_DATA_CUBE_IN_CHANNEL, REG_PPU_DATA_CUBE_OUT_WIDTH,
                               REG_PPU_DATA_CUBE_OUT_HEIGHT, REG_PPU_DATA_CUBE_OUT_CHANNEL};
        uint32_t ppu_vals[] = {7, 7, 15, 3, 3, 15};
        for (unsigned i = 0; i < 6; i++)
            tp_reg(&base[2], ppu_regs[i], ppu_vals[i]);
        tp_reg(&base[2], REG_PPU_OPERATION_MODE_CFG,
               PPU_OPERATION_MODE_CFG_POOLING_METHOD(1) | PPU_OPERATION_MODE_CFG_FLYING_MODE(1));
        tp_reg(&base[2], REG_PPU_POOLING_KERNEL_CFG, 0x00110101);
        tp_reg(&base[2], REG_PPU_RECIP_KERNEL_WIDTH, 0);
        tp_reg(&base[2], REG_PPU_RECIP_KERNEL_HEIGHT, 0);
        tp_reg(&base[2], REG_PPU_POOLING_PADDING_CFG, 0);
        tp_reg(&base[2], REG_PPU_PADDING_VALUE_1_CFG, 0);
        tp_reg(&base[2], REG_PPU_PADDING_VALUE_2_CFG, 0);
        tp_reg(&base[2], REG_PPU_DST_BASE_ADDR, npu_bo_iova(c));
        tp_reg(&base[2], REG_PPU_DST_SURF_STRIDE, 16 << 4);
        tp_reg(&base[2], REG_PPU_DATA_FORMAT, PPU_DATA_FORMAT_INDEX_ADD(16));
        tp_reg(&base[2], REG_PPU_MISC_CTRL, 3);
        tp_reg(&base[2], REG_PPU_RDMA_CUBE_IN_WIDTH, 7);
        tp_reg(&base[2], REG_PPU_RDMA_CUBE_IN_HEIGHT, 7);
        tp_reg(&base[2], REG_PPU_RDMA_CUBE_IN_CHANNEL, 15);
        tp_reg(&base[2], REG_PPU_RDMA_SRC_BASE_ADDR, npu_bo_iova(a));
        tp_reg(&base[2], REG_PPU_RDMA_SRC_LINE_STRIDE, 8 << 4);
        tp_reg(&base[2], REG_PPU_RDMA_SRC_SURF_STRIDE, 64 << 4);
        tp_reg(&base[2], REG_PPU_RDMA_DATA_FORMAT, 1);
        const uint32_t base_mask[3] = {0x0d, 0x18, 0x60};

        for (unsigned it = 0; it < iters; it++) {
            unsigned which = trand(&seed) % 3;
            struct tprog p = base[which];
            uint32_t mask = base_mask[which];
            unsigned n_mut = 1 + trand(&seed) % 3;
            for (unsigned m = 0; m < n_mut; m++) {
                unsigned i = trand(&seed) % p.n;
                switch (trand(&seed) % 5) {
                case 0: /* flip a low value bit */
                case 1: p.q[i] ^= (uint64_t)1 << (16 + trand(&seed) % 16); break;
                case 2: { /* move the write to another register of the database */
                    const struct npu_reg_info *r =
                        &npu_rk3588_regs[trand(&seed) % npu_rk3588_n_regs];
                    uint16_t tgt = npu_target_for_offset(r->offset);
                    if (tgt)
                        p.q[i] = npu_regcmd_pack(tgt, r->offset, npu_regcmd_value(p.q[i]));
                    break;
                }
                case 3: /* a random qword */
                    p.q[i] = (uint64_t)trand(&seed) << 32 | trand(&seed);
                    break;
                default: mask = masks[trand(&seed) % NPU_ARRAY_SIZE(masks)]; break;
                }
            }
            tp_tail(&p, 0, 0, mask);
            td_set(task, 0, mask, tp_store(rc, 0, &p), npu_bo_iova(rc));
            struct npu_submit s = ts_submit(task, 0, 1, 1);
            char msg[512] = "";
            enum npu_status st = ts_run(dev, &s, NULL, msg, sizeof(msg));
            bool known = st == NPU_OK || st == NPU_ERR_FAULT || st == NPU_ERR_HW_REFUSED ||
                         st == NPU_ERR_UNSUPPORTED || st == NPU_ERR_TIMEOUT;
            if (!known)
                fprintf(stderr, "iteration %u: status %d: %s\n", it, st, msg);
            CHECK(known);
            if (st != NPU_OK)
                CHECK(msg[0] != 0);
            counts[-st]++;
        }
        npu_bo_destroy(task);
        npu_bo_destroy(rc);
        npu_bo_destroy(a);
        npu_bo_destroy(b);
        npu_bo_destroy(c);
        npu_device_close(dev);
    }
    printf("%u mutated programs: %u ran, %u faults, %u refused, %u unsupported, %u timeouts\n",
           2 * iters, counts[0], counts[-NPU_ERR_FAULT], counts[-NPU_ERR_HW_REFUSED],
           counts[-NPU_ERR_UNSUPPORTED], counts[-NPU_ERR_TIMEOUT]);
    return npu_test_done("test-robust");
}
