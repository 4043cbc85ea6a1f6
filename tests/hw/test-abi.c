/* SPDX-License-Identifier: MIT */
/*
 * test-abi.c: the kernel ABI structs. npu-abi.h already refuses to compile when a size or
 * field offset differs from facts 4.1/4.2; this test states the same numbers again at run
 * time (so a change to the header's own assertions is caught too) and checks the byte image
 * of one task descriptor as the kernel would read it. The meson file also compiles the header
 * for aarch64 when a cross compiler is present.
 */
#include <stddef.h>

#include "npu-abi.h"
#include "npu-test.h"

int
main(void)
{
    CHECK_EQ_INT(40, sizeof(struct npu_rknpu_task));
    CHECK_EQ_INT(104, sizeof(struct npu_rknpu_submit));
    CHECK_EQ_INT(48, sizeof(struct npu_rknpu_mem_create));
    CHECK_EQ_INT(40, sizeof(struct npu_rknpu_mem_create_v1));
    CHECK_EQ_INT(16, sizeof(struct npu_rknpu_mem_map));
    CHECK_EQ_INT(16, sizeof(struct npu_rknpu_mem_destroy));
    CHECK_EQ_INT(32, sizeof(struct npu_rknpu_mem_sync));
    CHECK_EQ_INT(8, sizeof(struct npu_rknpu_action));
    CHECK_EQ_INT(8, sizeof(struct npu_rknpu_subcore_task));
    CHECK_EQ_INT(24, sizeof(struct npu_rocket_create_bo));
    CHECK_EQ_INT(16, sizeof(struct npu_rocket_prep_bo));
    CHECK_EQ_INT(8, sizeof(struct npu_rocket_fini_bo));
    CHECK_EQ_INT(8, sizeof(struct npu_rocket_task));
    CHECK_EQ_INT(40, sizeof(struct npu_rocket_job));
    CHECK_EQ_INT(24, sizeof(struct npu_rocket_submit));
    CHECK_EQ_INT(32, offsetof(struct npu_rknpu_task, regcmd_addr));
    CHECK_EQ_INT(64, offsetof(struct npu_rknpu_submit, subcore_task));
    CHECK_EQ_INT(40, offsetof(struct npu_rknpu_submit, task_base_addr));
    CHECK_EQ_INT(44, offsetof(struct npu_rknpu_mem_create, core_mask));

    CHECK_EQ_HEX(0xC0686441u, NPU_RKNPU_IOCTL_SUBMIT);
    CHECK_EQ_HEX(0xC0306442u, NPU_RKNPU_IOCTL_MEM_CREATE);
    CHECK_EQ_HEX(0xC0286442u, NPU_RKNPU_IOCTL_MEM_CREATE_V1);
    CHECK_EQ_HEX(0x40186441u, NPU_ROCKET_IOCTL_SUBMIT);
    CHECK_EQ_HEX(0x5, NPU_RKNPU_JOB_PC | NPU_RKNPU_JOB_PINGPONG);
    CHECK_EQ_HEX(0x403, NPU_RKNPU_MEM_NON_CONTIGUOUS | NPU_RKNPU_MEM_CACHEABLE |
                            NPU_RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT);
    CHECK_EQ_HEX(0x40b, 0x403 | NPU_RKNPU_MEM_KERNEL_MAPPING);
    CHECK_EQ_INT(6, NPU_RKNPU_ACT_RESET);
    CHECK_EQ_INT(25, NPU_RKNPU_SET_IOMMU_DOMAIN_ID);

    /* Byte image of the A.1 task descriptor (little-endian, packed). */
    struct npu_rknpu_task t = {
        .enable_mask = 0xd,
        .int_mask = 0x300,
        .int_clear = 0x1ffff,
        .regcfg_amount = 104,
        .regcmd_addr = 0x10000,
    };
    uint8_t b[40];
    memcpy(b, &t, sizeof(b));
    if (b[8] == 0xd) { /* little-endian host */
        CHECK_EQ_HEX(0x00, b[12]);
        CHECK_EQ_HEX(0x03, b[13]);
        CHECK_EQ_HEX(0xff, b[16]);
        CHECK_EQ_HEX(0x01, b[18]);
        CHECK_EQ_HEX(104, b[24]);
        CHECK_EQ_HEX(0x01, b[34]);
    }
    return npu_test_done("test-abi");
}
