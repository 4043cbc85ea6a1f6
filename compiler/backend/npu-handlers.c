/* SPDX-License-Identifier: MIT */
/*
 * npu-handlers.c: THE table of the lowering stage's op handlers
 * (docs/npu-backend-contracts.md contract 3, docs/npu-backend.md): one row per
 * source op (ONNX / npu.*) the NPU can run, with supports, cost and lower.
 * The rk.* ops lowering produces are codegen's (codegen/npu-rk.h: inference,
 * emitters). The lookup does not depend on the order of rows.
 */
#include "npu-be-priv.h"
#include "npu-dpu-ops.h"

static const struct npu_op_handler handlers[] = {
    /* ---- convolution and matrix products */
    {.op = NPU_OP_MATMUL,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    {.op = NPU_OP_GEMM,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    {.op = NPU_OP_CONV,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    {.op = NPU_OP_CONV_TRANSPOSE,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    {.op = NPU_OP_MATMUL_INTEGER,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    {.op = NPU_OP_CONV_INTEGER,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    {.op = NPU_OP_QLINEAR_MATMUL,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    {.op = NPU_OP_QLINEAR_CONV,
     .supports = npu_conv_supports,
     .cost = npu_conv_cost,
     .lower = npu_conv_lower},
    /* ---- DPU / PPU ops: one supports / cost / lower triple dispatching on the op
     * (dpu-ops.c) */
    {.op = NPU_OP_ADD, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_SUB, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_MUL, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_DIV, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_MAX, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_MIN, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_POW, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_RELU, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_LEAKY_RELU,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_PRELU,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_CLIP, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_SIGMOID,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_TANH, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_ERF, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_GELU, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_FUSED_GELU_TANH,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_FUSED_SILU,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_HARD_SIGMOID,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_HARD_SWISH,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_NEG, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_ABS, .supports = npu_dpu_supports, .cost = npu_dpu_cost, .lower = npu_dpu_lower},
    {.op = NPU_OP_IDENTITY,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_DROPOUT,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_MAX_POOL,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_GLOBAL_MAX_POOL,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_AVERAGE_POOL,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_GLOBAL_AVERAGE_POOL,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_RESHAPE,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_FLATTEN,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SQUEEZE,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_UNSQUEEZE,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_TRANSPOSE,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SLICE,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_CONCAT,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_STATE_WRITE,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SPLIT,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_GATHER,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_LAYER_NORMALIZATION,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_RMS_NORMALIZATION,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_SOFTMAX,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_FUSED_ATTENTION,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_QUANTIZE_LINEAR,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
    {.op = NPU_OP_DEQUANTIZE_LINEAR,
     .supports = npu_dpu_supports,
     .cost = npu_dpu_cost,
     .lower = npu_dpu_lower},
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
