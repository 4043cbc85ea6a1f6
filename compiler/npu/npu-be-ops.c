/* SPDX-License-Identifier: MIT */
/*
 * npu-be-ops.c: THE table of NPU back-end op handlers (BACKEND.md contract 3,
 * docs/npu-backend.md). One row per op:
 *   source ops (ONNX / npu.*): supports, cost, lower;
 *   rk.* ops: infer, emit.
 * be-conv owns this file and the conv/matmul rows; be-dpu adds its rows below
 * its marker (declarations in compiler/dpu). Keep rows sorted by owner, then
 * by op; the lookup does not depend on the order.
 */
#include "npu-be-priv.h"

static const struct npu_op_handler handlers[] = {
    /* ---- be-conv: boundaries */
    {.op = NPU_OP_RK_TO_NPU, .owner = "be-conv", .infer = npu_rk_infer_to_npu},
    {.op = NPU_OP_RK_TO_HOST, .owner = "be-conv", .infer = npu_rk_infer_to_host},
    /* ---- be-conv: convolution and matrix products */
    {.op = NPU_OP_MATMUL, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_GEMM, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_CONV, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_CONV_TRANSPOSE, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_MATMUL_INTEGER, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_CONV_INTEGER, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_QLINEAR_MATMUL, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_QLINEAR_CONV, .owner = "be-conv", .supports = npu_conv_supports,
     .cost = npu_conv_cost, .lower = npu_conv_lower},
    {.op = NPU_OP_RK_CONV, .owner = "be-conv", .infer = npu_rk_conv_infer,
     .emit = npu_rk_conv_emit},
    /* ---- be-dpu: rows below */
};

const struct npu_op_handler *
npu_op_handler(enum npu_op op)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(handlers); i++)
        if (handlers[i].op == op)
            return &handlers[i];
    return NULL;
}

const struct npu_op_handler *
npu_op_handlers(size_t *count)
{
    *count = NPU_ARRAY_SIZE(handlers);
    return handlers;
}
