/* SPDX-License-Identifier: MIT */
/*
 * npu-be-ops.c: THE table of NPU back-end op handlers (docs/npu-backend-contracts.md contract 3,
 * docs/npu-backend.md). One row per op:
 *   source ops (ONNX / npu.*): supports, cost, lower;
 *   rk.* ops: infer, emit.
 * be-conv owns this file and the conv/matmul rows; be-dpu adds its rows below
 * its marker (declarations in compiler/dpu). Keep rows sorted by owner, then
 * by op; the lookup does not depend on the order.
 */
#include "npu-be-priv.h"
#include "../dpu/npu-dpu-ops.h"

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
    /* be-dpu: one supports / cost / lower triple dispatching on the op (compiler/dpu) */
    {.op = NPU_OP_ADD, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SUB, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_MUL, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_DIV, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_MAX, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_MIN, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_POW, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_RELU, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_LEAKY_RELU, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_PRELU, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_CLIP, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SIGMOID, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_TANH, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_ERF, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_GELU, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_FUSED_GELU_TANH, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_FUSED_SILU, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_HARD_SIGMOID, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_HARD_SWISH, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_NEG, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_ABS, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_IDENTITY, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_DROPOUT, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_MAX_POOL, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_GLOBAL_MAX_POOL, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_AVERAGE_POOL, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_GLOBAL_AVERAGE_POOL, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_RESHAPE, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_FLATTEN, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SQUEEZE, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_UNSQUEEZE, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_TRANSPOSE, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SLICE, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_CONCAT, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SPLIT, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_GATHER, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_LAYER_NORMALIZATION, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SOFTMAX, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_FUSED_ATTENTION, .owner = "be-dpu", .supports = npu_dpu_supports, .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_RK_DPU, .owner = "be-dpu", .infer = npu_rk_dpu_infer, .emit = npu_rk_dpu_emit},
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

void
npu_backend_register(void)
{
    npu_ir_register_rk_infer(npu_rk_infer_node);
}

/* Loading the back end is enough for rk.* nodes to infer (IR text and .npub
 * readers included); the entry points register again, for static links that
 * leave this object out until they call into the back end. */
__attribute__((constructor)) static void
backend_ctor(void)
{
    npu_backend_register();
}
