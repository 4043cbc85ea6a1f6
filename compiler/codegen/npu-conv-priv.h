/* SPDX-License-Identifier: MIT */
/*
 * npu-conv-priv.h: what codegen's rk.Conv files (npu-conv-rk.c, npu-conv-time.c,
 * npu-conv-emit.c) share beyond npu-rk.h: facts about one task that decoding, timing and
 * register emission all use (defined in npu-conv-time.c).
 */
#ifndef NPU_CONV_PRIV_H
#define NPU_CONV_PRIV_H

#include "npu-rk.h"

/* Output channels CORE and DPU carry for nk kernels: padded to the kernel group (16 fp16,
 * 32 int8; the channel block for depthwise). */
uint32_t conv_kout_of(const struct rk_conv_geom *g, uint32_t nk, enum npu_dtype out);
/* The dtype task t writes: the partial-sum type when it writes a partial, else the result's. */
enum npu_dtype conv_tile_out_dt(const struct rk_conv_geom *g, const struct rk_tile *t);
/* Whether task t adds the residual (the first channel block's tasks do). */
bool conv_res_here(const struct rk_conv_geom *g, const struct rk_tile *t);
/* Whether task t reads through DPU_RDMA (bias, partial sum, multipliers or residual). */
bool conv_uses_rdma(const struct rk_conv_geom *g, const struct rk_tile *t);

#endif /* NPU_CONV_PRIV_H */
