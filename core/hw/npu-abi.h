/* SPDX-License-Identifier: MIT */
/*
 * npu-abi.h: the two kernel ABIs an RK3588 NPU runtime talks to, written from the facts
 * file (section 4), with a compile-time check on every size and field offset so that a
 * layout slip breaks the build on x86_64 and aarch64 alike:
 *   - the vendor rknpu driver 0.9.8 (DRM device, usually /dev/dri/card1), facts 4.1;
 *   - the upstream rocket accel driver (/dev/accel/accel*), facts 4.2.
 * Names carry our prefix (npu_rknpu_*, npu_rocket_*) so this header can sit next to the
 * kernel's own uapi headers. Fields the kernel ignores are marked so.
 */
#ifndef NPU_ABI_H
#define NPU_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* DRM ioctl encoding (Linux asm-generic): dir<<30 | size<<16 | type<<8 | nr. */
#define NPU_DRM_IOCTL_BASE 0x64u /* 'd' */
#define NPU_DRM_COMMAND_BASE 0x40u
#define NPU_IOC_WRITE 1u
#define NPU_IOC_READ 2u
#define NPU_DRM_IOC(dir, nr, size)                                                                 \
    ((uint32_t)(dir) << 30 | (uint32_t)(size) << 16 | NPU_DRM_IOCTL_BASE << 8 |                    \
     (NPU_DRM_COMMAND_BASE + (uint32_t)(nr)))
#define NPU_DRM_IOWR(nr, type) NPU_DRM_IOC(NPU_IOC_READ | NPU_IOC_WRITE, nr, sizeof(type))
#define NPU_DRM_IOW(nr, type) NPU_DRM_IOC(NPU_IOC_WRITE, nr, sizeof(type))

/* ------------------------------------------------------------ vendor rknpu 0.9.8 (facts 4.1) */

/* Job flags (rknpu_submit.flags). PC is mandatory in 0.9.8; 0x5 = PC|PINGPONG, blocking. */
#define NPU_RKNPU_JOB_PC (1u << 0)
#define NPU_RKNPU_JOB_BLOCK 0u
#define NPU_RKNPU_JOB_NONBLOCK (1u << 1)
#define NPU_RKNPU_JOB_PINGPONG (1u << 2)
#define NPU_RKNPU_JOB_FENCE_IN (1u << 3)
#define NPU_RKNPU_JOB_FENCE_OUT (1u << 4)

/* Core masks (rknpu_submit.core_mask). */
#define NPU_RKNPU_CORE_AUTO 0x0u
#define NPU_RKNPU_CORE0 0x1u
#define NPU_RKNPU_CORE1 0x2u
#define NPU_RKNPU_CORE2 0x4u
#define NPU_RKNPU_CORE_ALL 0x7u

/* Memory flags (rknpu_mem_create.flags); RKNN uses 0x403 (data) and 0x40b (task BO). */
#define NPU_RKNPU_MEM_CONTIGUOUS 0u
#define NPU_RKNPU_MEM_NON_CONTIGUOUS (1u << 0)
#define NPU_RKNPU_MEM_NON_CACHEABLE 0u
#define NPU_RKNPU_MEM_CACHEABLE (1u << 1)
#define NPU_RKNPU_MEM_WRITE_COMBINE (1u << 2)
#define NPU_RKNPU_MEM_KERNEL_MAPPING (1u << 3)
#define NPU_RKNPU_MEM_IOMMU (1u << 4)
#define NPU_RKNPU_MEM_ZEROING (1u << 5)
#define NPU_RKNPU_MEM_SECURE (1u << 6)
#define NPU_RKNPU_MEM_DMA32 (1u << 7)
#define NPU_RKNPU_MEM_TRY_ALLOC_SRAM (1u << 8)
#define NPU_RKNPU_MEM_TRY_ALLOC_NBUF (1u << 9)
#define NPU_RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT (1u << 10)

/* rknpu_mem_sync.flags */
#define NPU_RKNPU_MEM_SYNC_TO_DEVICE (1u << 0)
#define NPU_RKNPU_MEM_SYNC_FROM_DEVICE (1u << 1)

/* Action ids (rknpu_action.flags). */
enum npu_rknpu_action_id {
    NPU_RKNPU_GET_HW_VERSION = 0,
    NPU_RKNPU_GET_DRV_VERSION = 1, /* major*10000 + minor*100 + patch: 908 for 0.9.8 */
    NPU_RKNPU_GET_FREQ = 2,
    NPU_RKNPU_SET_FREQ = 3,
    NPU_RKNPU_GET_VOLT = 4,
    NPU_RKNPU_SET_VOLT = 5,
    NPU_RKNPU_ACT_RESET = 6,
    NPU_RKNPU_GET_BW_PRIORITY = 7,
    NPU_RKNPU_SET_BW_PRIORITY = 8,
    NPU_RKNPU_GET_BW_EXPECT = 9,
    NPU_RKNPU_SET_BW_EXPECT = 10,
    NPU_RKNPU_GET_BW_TW = 11,
    NPU_RKNPU_SET_BW_TW = 12,
    NPU_RKNPU_ACT_CLR_TOTAL_RW_AMOUNT = 13,
    NPU_RKNPU_GET_DT_WR_AMOUNT = 14,
    NPU_RKNPU_GET_DT_RD_AMOUNT = 15,
    NPU_RKNPU_GET_WT_RD_AMOUNT = 16,
    NPU_RKNPU_GET_TOTAL_RW_AMOUNT = 17,
    NPU_RKNPU_GET_IOMMU_EN = 18,
    NPU_RKNPU_SET_PROC_NICE = 19,
    NPU_RKNPU_POWER_ON = 20,
    NPU_RKNPU_POWER_OFF = 21,
    NPU_RKNPU_GET_TOTAL_SRAM_SIZE = 22,
    NPU_RKNPU_GET_FREE_SRAM_SIZE = 23,
    NPU_RKNPU_GET_IOMMU_DOMAIN_ID = 24,
    NPU_RKNPU_SET_IOMMU_DOMAIN_ID = 25,
};

/* Driver constants. */
#define NPU_RKNPU_PC_DATA_EXTRA_AMOUNT 4u /* tail qwords the driver adds to regcfg_amount */
#define NPU_RKNPU_INT_CLEAR 0x1ffffu
#define NPU_RKNPU_MAX_SUBMIT_NUMBER 4095u /* TASK_NUMBER is 12 bits */
#define NPU_RKNPU_MAX_CORES 3u
#define NPU_RKNPU_SUBCORE_TASKS 5u

struct npu_rknpu_action {
    uint32_t flags; /* Input: enum npu_rknpu_action_id */
    uint32_t value; /* Input/Output */
};

struct npu_rknpu_mem_create {
    uint32_t handle;         /* Output */
    uint32_t flags;          /* Input: NPU_RKNPU_MEM_* */
    uint64_t size;           /* Input */
    uint64_t obj_addr;       /* Output: kernel object cookie (task BO goes to submit by this) */
    uint64_t dma_addr;       /* Output: NPU IOVA */
    uint64_t sram_size;      /* Input */
    int32_t iommu_domain_id; /* Input (0.9.x only) */
    uint32_t core_mask;      /* Input (0.9.x only) */
};

/* The older 40-byte form (e.g. MTX's header): ends after sram_size. The DRM core zero-extends
 * a shorter user struct, so both work against 0.9.8. */
struct npu_rknpu_mem_create_v1 {
    uint32_t handle;
    uint32_t flags;
    uint64_t size;
    uint64_t obj_addr;
    uint64_t dma_addr;
    uint64_t sram_size;
};

struct npu_rknpu_mem_map {
    uint32_t handle; /* Input */
    uint32_t reserved;
    uint64_t offset; /* Output: pass to mmap() on the DRM fd */
};

struct npu_rknpu_mem_destroy {
    uint32_t handle; /* Input */
    uint32_t reserved;
    uint64_t obj_addr; /* Input */
};

struct npu_rknpu_mem_sync {
    uint32_t flags; /* Input: NPU_RKNPU_MEM_SYNC_* */
    uint32_t reserved;
    uint64_t obj_addr; /* Input */
    uint64_t offset;   /* Input */
    uint64_t size;     /* Input */
};

/* One task descriptor in the task BO (40 bytes, packed). 0.9.8 reads int_mask (last task ->
 * INTERRUPT_MASK, first -> INTERRUPT_CLEAR), regcfg_amount and regcmd_addr (first task of a
 * launch); the hardware reaches later tasks only through the PC chain (facts 4.1). */
struct npu_rknpu_task {
    uint32_t flags;         /* ignored by 0.9.8 */
    uint32_t op_idx;        /* ignored (RKNN bookkeeping) */
    uint32_t enable_mask;   /* ignored; by convention the op_en mask (0xd, 0x18, 0x60) */
    uint32_t int_mask;      /* used: 0x300 ending in DPU, 0xc00 ending in PPU */
    uint32_t int_clear;     /* ignored; everyone writes 0x1ffff */
    uint32_t int_status;    /* Output (last task) */
    uint32_t regcfg_amount; /* used: body qwords, excluding the 4-qword tail */
    uint32_t regcfg_offset; /* ignored */
    uint64_t regcmd_addr;   /* used: IOVA of the segment (low 32 bits) */
} __attribute__((packed));

struct npu_rknpu_subcore_task {
    uint32_t task_start;
    uint32_t task_number;
};

/* Submit (104 bytes). subcore_task indexing in 0.9.8: with 1 or 2 cores core i takes [i];
 * with all 3 (mask 7) core i takes [i + 2]; with auto mask the chosen core i takes [i]. */
struct npu_rknpu_submit {
    uint32_t flags;           /* Input: NPU_RKNPU_JOB_* (PC mandatory) */
    uint32_t timeout;         /* Input: ms, waited up to 3 times */
    uint32_t task_start;      /* Input */
    uint32_t task_number;     /* Input: > 0 */
    uint32_t task_counter;    /* Output: tasks completed */
    int32_t priority;         /* Input */
    uint64_t task_obj_addr;   /* Input: obj_addr of the task BO (needs KERNEL_MAPPING) */
    uint32_t iommu_domain_id; /* Input (older headers: regcfg_obj_addr u64 at 32..39) */
    uint32_t reserved;
    uint64_t task_base_addr; /* Input: -> PC TASK_DMA_BASE_ADDR, normally 0 */
    int64_t hw_elapse_time;  /* Output (older headers: user_data u64) */
    uint32_t core_mask;      /* Input: NPU_RKNPU_CORE_*, <= 7 */
    int32_t fence_fd;        /* Input/Output: -1 when unused */
    struct npu_rknpu_subcore_task subcore_task[NPU_RKNPU_SUBCORE_TASKS];
};

#define NPU_RKNPU_IOCTL_ACTION NPU_DRM_IOWR(0x00, struct npu_rknpu_action)
#define NPU_RKNPU_IOCTL_SUBMIT NPU_DRM_IOWR(0x01, struct npu_rknpu_submit)
#define NPU_RKNPU_IOCTL_MEM_CREATE NPU_DRM_IOWR(0x02, struct npu_rknpu_mem_create)
#define NPU_RKNPU_IOCTL_MEM_CREATE_V1 NPU_DRM_IOWR(0x02, struct npu_rknpu_mem_create_v1)
#define NPU_RKNPU_IOCTL_MEM_MAP NPU_DRM_IOWR(0x03, struct npu_rknpu_mem_map)
#define NPU_RKNPU_IOCTL_MEM_DESTROY NPU_DRM_IOWR(0x04, struct npu_rknpu_mem_destroy)
#define NPU_RKNPU_IOCTL_MEM_SYNC NPU_DRM_IOWR(0x05, struct npu_rknpu_mem_sync)

/* ----------------------------------------------------------------- rocket (facts 4.2) */

struct npu_rocket_create_bo {
    uint32_t size;        /* Input */
    uint32_t handle;      /* Output */
    uint64_t dma_address; /* Output: per-fd IOVA */
    uint64_t offset;      /* Output: mmap offset */
};

/* Waits for NPU writes and syncs the cache for the CPU. */
struct npu_rocket_prep_bo {
    uint32_t handle;    /* Input */
    uint32_t reserved;  /* must be 0 */
    int64_t timeout_ns; /* Input: absolute */
};

/* Syncs the cache for the device. */
struct npu_rocket_fini_bo {
    uint32_t handle;   /* Input */
    uint32_t reserved; /* must be 0 */
};

struct npu_rocket_task {
    uint32_t regcmd;       /* IOVA of the segment */
    uint32_t regcmd_count; /* qwords including the tail, > 0 */
};

struct npu_rocket_job {
    uint64_t tasks;          /* pointer to npu_rocket_task[] */
    uint64_t in_bo_handles;  /* pointer to uint32_t[] */
    uint64_t out_bo_handles; /* pointer to uint32_t[] */
    uint32_t task_count;
    uint32_t task_struct_size;
    uint32_t in_bo_handle_count;
    uint32_t out_bo_handle_count;
};

struct npu_rocket_submit {
    uint64_t jobs; /* pointer to npu_rocket_job[] */
    uint32_t job_count;
    uint32_t job_struct_size;
    uint64_t reserved; /* must be 0 */
};

#define NPU_ROCKET_IOCTL_CREATE_BO NPU_DRM_IOWR(0x00, struct npu_rocket_create_bo)
#define NPU_ROCKET_IOCTL_SUBMIT NPU_DRM_IOW(0x01, struct npu_rocket_submit)
#define NPU_ROCKET_IOCTL_PREP_BO NPU_DRM_IOW(0x02, struct npu_rocket_prep_bo)
#define NPU_ROCKET_IOCTL_FINI_BO NPU_DRM_IOW(0x03, struct npu_rocket_fini_bo)

/* ------------------------------------------------------- layout checks (facts 4.1, 4.2) */

#define NPU_ABI_SIZE(t, n) _Static_assert(sizeof(struct t) == (n), #t " must be " #n " bytes")
#define NPU_ABI_OFF(t, f, n)                                                                       \
    _Static_assert(offsetof(struct t, f) == (n), #t "." #f " must be at offset " #n)

NPU_ABI_SIZE(npu_rknpu_action, 8);
NPU_ABI_OFF(npu_rknpu_action, flags, 0);
NPU_ABI_OFF(npu_rknpu_action, value, 4);

NPU_ABI_SIZE(npu_rknpu_mem_create, 48);
NPU_ABI_OFF(npu_rknpu_mem_create, handle, 0);
NPU_ABI_OFF(npu_rknpu_mem_create, flags, 4);
NPU_ABI_OFF(npu_rknpu_mem_create, size, 8);
NPU_ABI_OFF(npu_rknpu_mem_create, obj_addr, 16);
NPU_ABI_OFF(npu_rknpu_mem_create, dma_addr, 24);
NPU_ABI_OFF(npu_rknpu_mem_create, sram_size, 32);
NPU_ABI_OFF(npu_rknpu_mem_create, iommu_domain_id, 40);
NPU_ABI_OFF(npu_rknpu_mem_create, core_mask, 44);

NPU_ABI_SIZE(npu_rknpu_mem_create_v1, 40);
NPU_ABI_OFF(npu_rknpu_mem_create_v1, sram_size, 32);

NPU_ABI_SIZE(npu_rknpu_mem_map, 16);
NPU_ABI_OFF(npu_rknpu_mem_map, handle, 0);
NPU_ABI_OFF(npu_rknpu_mem_map, reserved, 4);
NPU_ABI_OFF(npu_rknpu_mem_map, offset, 8);

NPU_ABI_SIZE(npu_rknpu_mem_destroy, 16);
NPU_ABI_OFF(npu_rknpu_mem_destroy, handle, 0);
NPU_ABI_OFF(npu_rknpu_mem_destroy, reserved, 4);
NPU_ABI_OFF(npu_rknpu_mem_destroy, obj_addr, 8);

NPU_ABI_SIZE(npu_rknpu_mem_sync, 32);
NPU_ABI_OFF(npu_rknpu_mem_sync, flags, 0);
NPU_ABI_OFF(npu_rknpu_mem_sync, reserved, 4);
NPU_ABI_OFF(npu_rknpu_mem_sync, obj_addr, 8);
NPU_ABI_OFF(npu_rknpu_mem_sync, offset, 16);
NPU_ABI_OFF(npu_rknpu_mem_sync, size, 24);

NPU_ABI_SIZE(npu_rknpu_task, 40);
NPU_ABI_OFF(npu_rknpu_task, flags, 0);
NPU_ABI_OFF(npu_rknpu_task, op_idx, 4);
NPU_ABI_OFF(npu_rknpu_task, enable_mask, 8);
NPU_ABI_OFF(npu_rknpu_task, int_mask, 12);
NPU_ABI_OFF(npu_rknpu_task, int_clear, 16);
NPU_ABI_OFF(npu_rknpu_task, int_status, 20);
NPU_ABI_OFF(npu_rknpu_task, regcfg_amount, 24);
NPU_ABI_OFF(npu_rknpu_task, regcfg_offset, 28);
NPU_ABI_OFF(npu_rknpu_task, regcmd_addr, 32);

NPU_ABI_SIZE(npu_rknpu_subcore_task, 8);
NPU_ABI_OFF(npu_rknpu_subcore_task, task_start, 0);
NPU_ABI_OFF(npu_rknpu_subcore_task, task_number, 4);

NPU_ABI_SIZE(npu_rknpu_submit, 104);
NPU_ABI_OFF(npu_rknpu_submit, flags, 0);
NPU_ABI_OFF(npu_rknpu_submit, timeout, 4);
NPU_ABI_OFF(npu_rknpu_submit, task_start, 8);
NPU_ABI_OFF(npu_rknpu_submit, task_number, 12);
NPU_ABI_OFF(npu_rknpu_submit, task_counter, 16);
NPU_ABI_OFF(npu_rknpu_submit, priority, 20);
NPU_ABI_OFF(npu_rknpu_submit, task_obj_addr, 24);
NPU_ABI_OFF(npu_rknpu_submit, iommu_domain_id, 32);
NPU_ABI_OFF(npu_rknpu_submit, reserved, 36);
NPU_ABI_OFF(npu_rknpu_submit, task_base_addr, 40);
NPU_ABI_OFF(npu_rknpu_submit, hw_elapse_time, 48);
NPU_ABI_OFF(npu_rknpu_submit, core_mask, 56);
NPU_ABI_OFF(npu_rknpu_submit, fence_fd, 60);
NPU_ABI_OFF(npu_rknpu_submit, subcore_task, 64);

NPU_ABI_SIZE(npu_rocket_create_bo, 24);
NPU_ABI_OFF(npu_rocket_create_bo, size, 0);
NPU_ABI_OFF(npu_rocket_create_bo, handle, 4);
NPU_ABI_OFF(npu_rocket_create_bo, dma_address, 8);
NPU_ABI_OFF(npu_rocket_create_bo, offset, 16);

NPU_ABI_SIZE(npu_rocket_prep_bo, 16);
NPU_ABI_OFF(npu_rocket_prep_bo, handle, 0);
NPU_ABI_OFF(npu_rocket_prep_bo, reserved, 4);
NPU_ABI_OFF(npu_rocket_prep_bo, timeout_ns, 8);

NPU_ABI_SIZE(npu_rocket_fini_bo, 8);
NPU_ABI_OFF(npu_rocket_fini_bo, handle, 0);
NPU_ABI_OFF(npu_rocket_fini_bo, reserved, 4);

NPU_ABI_SIZE(npu_rocket_task, 8);
NPU_ABI_OFF(npu_rocket_task, regcmd, 0);
NPU_ABI_OFF(npu_rocket_task, regcmd_count, 4);

NPU_ABI_SIZE(npu_rocket_job, 40);
NPU_ABI_OFF(npu_rocket_job, tasks, 0);
NPU_ABI_OFF(npu_rocket_job, in_bo_handles, 8);
NPU_ABI_OFF(npu_rocket_job, out_bo_handles, 16);
NPU_ABI_OFF(npu_rocket_job, task_count, 24);
NPU_ABI_OFF(npu_rocket_job, task_struct_size, 28);
NPU_ABI_OFF(npu_rocket_job, in_bo_handle_count, 32);
NPU_ABI_OFF(npu_rocket_job, out_bo_handle_count, 36);

NPU_ABI_SIZE(npu_rocket_submit, 24);
NPU_ABI_OFF(npu_rocket_submit, jobs, 0);
NPU_ABI_OFF(npu_rocket_submit, job_count, 8);
NPU_ABI_OFF(npu_rocket_submit, job_struct_size, 12);
NPU_ABI_OFF(npu_rocket_submit, reserved, 16);

/* ioctl numbers as facts 4.1 / 4.2 list them. */
_Static_assert(NPU_RKNPU_IOCTL_ACTION == 0xC0086440u, "RKNPU_ACTION ioctl");
_Static_assert(NPU_RKNPU_IOCTL_SUBMIT == 0xC0686441u, "RKNPU_SUBMIT ioctl");
_Static_assert(NPU_RKNPU_IOCTL_MEM_CREATE == 0xC0306442u, "RKNPU_MEM_CREATE ioctl");
_Static_assert(NPU_RKNPU_IOCTL_MEM_CREATE_V1 == 0xC0286442u, "RKNPU_MEM_CREATE (40 B) ioctl");
_Static_assert(NPU_RKNPU_IOCTL_MEM_MAP == 0xC0106443u, "RKNPU_MEM_MAP ioctl");
_Static_assert(NPU_RKNPU_IOCTL_MEM_DESTROY == 0xC0106444u, "RKNPU_MEM_DESTROY ioctl");
_Static_assert(NPU_RKNPU_IOCTL_MEM_SYNC == 0xC0206445u, "RKNPU_MEM_SYNC ioctl");
_Static_assert(NPU_ROCKET_IOCTL_CREATE_BO == 0xC0186440u, "ROCKET_CREATE_BO ioctl");
_Static_assert(NPU_ROCKET_IOCTL_SUBMIT == 0x40186441u, "ROCKET_SUBMIT ioctl");
_Static_assert(NPU_ROCKET_IOCTL_PREP_BO == 0x40106442u, "ROCKET_PREP_BO ioctl");
_Static_assert(NPU_ROCKET_IOCTL_FINI_BO == 0x40086443u, "ROCKET_FINI_BO ioctl");

#undef NPU_ABI_SIZE
#undef NPU_ABI_OFF

#ifdef __cplusplus
}
#endif

#endif /* NPU_ABI_H */
