/* SPDX-License-Identifier: MIT */
/*
 * npu-handprog.h: hand-written register programs, for the bring-up tool
 * (npu-selftest) and the simulator and device tests: a
 * growable regcmd program (register writes through the generated register
 * header, tails per facts §1.3), rknpu_task descriptors in a task BO, and a
 * submit-and-wait wrapper. Header-only, so each test and the tool stay one executable each;
 * kept in core (not tests/) because an installed tool uses it.
 */
#ifndef NPU_HANDPROG_H
#define NPU_HANDPROG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-abi.h"
#include "npu-hw.h"
#include "npu/npu-device.h"

struct tprog {
    uint64_t q[4096];
    unsigned n;
};

static inline void
tp_reg(struct tprog *p, uint16_t off, uint32_t value)
{
    p->q[p->n++] = npu_regcmd_reg(off, value);
}

static inline void
tp_raw(struct tprog *p, uint64_t q)
{
    p->q[p->n++] = q;
}

/* Appends the 4-qword tail: next segment (addr/amount, 0 for none), marker,
 * op_en. */
static inline void
tp_tail(struct tprog *p, uint32_t next_addr, uint32_t next_amount, uint32_t enable)
{
    if (next_addr)
        tp_reg(p, REG_PC_BASE_ADDRESS, next_addr);
    else
        tp_raw(p, 0);
    tp_reg(p, REG_PC_REGISTER_AMOUNTS, next_amount);
    tp_raw(p, NPU_MARKER_QWORD);
    tp_raw(p, npu_regcmd_op_en(enable));
}

/* A task descriptor (facts §4.1 rknpu_task, 40 bytes). */
#define tdesc npu_rknpu_task

static inline void
td_set(struct npu_bo *task_bo, unsigned idx, uint32_t enable, uint32_t body_qwords,
       uint32_t regcmd_addr)
{
    struct tdesc *t = (struct tdesc *)npu_bo_map(task_bo) + idx;
    memset(t, 0, sizeof(*t));
    t->enable_mask = enable;
    t->int_mask = npu_int_mask_for_enable(enable);
    t->int_clear = NPU_INT_CLEAR_ALL;
    t->regcfg_amount = body_qwords;
    t->regcmd_addr = regcmd_addr;
}

/* Copies a one-task program into the regcmd BO at offset off; returns the
 * body qword count (total minus the tail). */
static inline uint32_t
tp_store(struct npu_bo *regcmd_bo, size_t off, const struct tprog *p)
{
    if (off + (size_t)p->n * 8 > npu_bo_size(regcmd_bo)) {
        fprintf(stderr, "tp_store: %u qwords at +0x%zx overflow the %zu-byte regcmd BO\n", p->n,
                off, npu_bo_size(regcmd_bo));
        abort();
    }
    memcpy((uint8_t *)npu_bo_map(regcmd_bo) + off, p->q, p->n * 8);
    return p->n - NPU_TASK_TAIL_QWORDS;
}

static inline struct npu_submit
ts_submit(struct npu_bo *task_bo, uint32_t start, uint32_t number, uint32_t core_mask)
{
    struct npu_submit s;
    memset(&s, 0, sizeof(s));
    s.task_bo = task_bo;
    s.task_start = start;
    s.task_number = number;
    s.core_mask = core_mask;
    s.flags = NPU_JOB_PC | NPU_JOB_PINGPONG;
    s.timeout_ms = 6000;
    for (unsigned i = 0; i < NPU_SUBCORE_SLOTS; i++) {
        s.subcore_task[i].task_start = start;
        s.subcore_task[i].task_number = number;
    }
    return s;
}

/* Submits, waits forever, returns the job status; *msg (optional) gets the
 * message. */
static inline enum npu_status
ts_run(struct npu_device *dev, const struct npu_submit *s, struct npu_job_result *out_res,
       char *msg, size_t msg_size)
{
    struct npu_job *job = NULL;
    enum npu_status st = npu_job_submit(dev, s, &job);
    if (st != NPU_OK)
        return st;
    struct npu_job_result r;
    st = npu_job_wait(job, -1, &r);
    if (msg && msg_size)
        snprintf(msg, msg_size, "%s", r.message);
    if (out_res) {
        *out_res = r;
        out_res->tasks = NULL; /* owned by the job, freed below */
    }
    npu_job_destroy(job);
    return st;
}

/* A DPU flying-mode task (facts Appendix A.2 register set, with height):
 * z = x EW y over a W x H x C cube, in = proc = out precision. */
struct fly {
    unsigned prec; /* in = proc = out */
    uint32_t W, H, C;
    uint32_t x, y, z; /* IOVAs */
    uint32_t ew_cfg;
    bool f32; /* fp16 computed in fp32 (RKNN templates) */
};

static inline void
tp_fly(struct tprog *p, const struct fly *f)
{
    unsigned es = f->prec == NPU_PRECISION_INT8 ? 1 : f->prec == NPU_PRECISION_INT32 ? 4 : 2;
    unsigned size = es == 1   ? NPU_ELEM_SIZE_8BIT
                    : es == 2 ? NPU_ELEM_SIZE_16BIT
                              : NPU_ELEM_SIZE_32BIT;
    uint32_t surf = f->W * f->H;
    tp_reg(p, REG_DPU_S_POINTER, 0x0e);
    tp_reg(p, REG_DPU_RDMA_S_POINTER, 0x0e);
    tp_reg(p, REG_DPU_FEATURE_MODE_CFG,
           DPU_FEATURE_MODE_CFG_BURST_LEN(15) | DPU_FEATURE_MODE_CFG_OUTPUT_MODE(2) |
               DPU_FEATURE_MODE_CFG_FLYING_MODE(1));
    tp_reg(p, REG_DPU_DATA_FORMAT,
           DPU_DATA_FORMAT_OUT_PRECISION(f->prec) | DPU_DATA_FORMAT_IN_PRECISION(f->prec) |
               DPU_DATA_FORMAT_PROC_PRECISION(f->prec));
    tp_reg(p, REG_DPU_OFFSET_PEND, 0);
    tp_reg(p, REG_DPU_DST_BASE_ADDR, f->z);
    tp_reg(p, REG_DPU_DST_SURF_STRIDE, DPU_DST_SURF_STRIDE_DST_SURF_STRIDE(surf));
    tp_reg(p, REG_DPU_DATA_CUBE_WIDTH, f->W - 1);
    tp_reg(p, REG_DPU_DATA_CUBE_HEIGHT, f->H - 1);
    tp_reg(p, REG_DPU_DATA_CUBE_NOTCH_ADDR, 0);
    tp_reg(p, REG_DPU_DATA_CUBE_CHANNEL,
           DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(f->C - 1) | DPU_DATA_CUBE_CHANNEL_CHANNEL(f->C - 1));
    tp_reg(p, REG_DPU_BS_CFG, 0x53);
    tp_reg(p, REG_DPU_BS_OW_CFG, DPU_BS_OW_CFG_OD_BYPASS(1));
    tp_reg(p, REG_DPU_WDMA_SIZE_0, f->C - 1);
    tp_reg(p, REG_DPU_WDMA_SIZE_1,
           DPU_WDMA_SIZE_1_HEIGHT_WDMA(f->H - 1) | DPU_WDMA_SIZE_1_WIDTH_WDMA(f->W - 1));
    tp_reg(p, REG_DPU_BN_CFG, 0x53);
    tp_reg(p, REG_DPU_EW_CFG, f->ew_cfg);
    tp_reg(p, REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    tp_reg(p, REG_DPU_EW_CVT_SCALE_VALUE, 1);
    tp_reg(p, REG_DPU_EW_RELUX_CMP_VALUE, 0);
    tp_reg(p, REG_DPU_OUT_CVT_OFFSET, 0);
    tp_reg(p, REG_DPU_OUT_CVT_SCALE, (f->f32 ? DPU_OUT_CVT_SCALE_FP32TOFP16_EN(1) : 0) | 1);
    tp_reg(p, REG_DPU_OUT_CVT_SHIFT, 0);
    tp_reg(p, REG_DPU_SURFACE_ADD, DPU_SURFACE_ADD_SURF_ADD(surf));
    tp_reg(p, REG_DPU_RDMA_DATA_CUBE_WIDTH, f->W - 1);
    tp_reg(p, REG_DPU_RDMA_DATA_CUBE_HEIGHT, f->H - 1);
    tp_reg(p, REG_DPU_RDMA_DATA_CUBE_CHANNEL, f->C - 1);
    tp_reg(p, REG_DPU_RDMA_SRC_BASE_ADDR, f->x);
    tp_reg(p, REG_DPU_RDMA_ERDMA_CFG,
           DPU_RDMA_ERDMA_CFG_ERDMA_DATA_MODE(DPU_EW_CFG_EW_DATA_MODE__GET(f->ew_cfg)) |
               DPU_RDMA_ERDMA_CFG_ERDMA_DATA_SIZE(size));
    tp_reg(p, REG_DPU_RDMA_EW_BASE_ADDR, f->y);
    tp_reg(p, REG_DPU_RDMA_EW_SURF_STRIDE, DPU_RDMA_EW_SURF_STRIDE_EW_SURF_STRIDE(surf));
    tp_reg(p, REG_DPU_RDMA_FEATURE_MODE_CFG,
           DPU_RDMA_FEATURE_MODE_CFG_IN_PRECISION(f->prec) |
               DPU_RDMA_FEATURE_MODE_CFG_BURST_LEN(15) |
               DPU_RDMA_FEATURE_MODE_CFG_PROC_PRECISION(f->prec) |
               DPU_RDMA_FEATURE_MODE_CFG_MRDMA_FP16TOFP32_EN(f->f32) |
               DPU_RDMA_FEATURE_MODE_CFG_FLYING_MODE(1));
    tp_reg(p, REG_DPU_RDMA_SRC_DMA_CFG, 0);
    tp_reg(p, REG_DPU_RDMA_SURF_NOTCH, 0);
    tp_reg(p, REG_DPU_RDMA_WEIGHT, 0x01010101);
}

/* Deterministic pseudo-random numbers for test data. */
static inline uint32_t
trand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

#endif /* NPU_HANDPROG_H */
