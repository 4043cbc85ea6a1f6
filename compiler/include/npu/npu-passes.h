/* SPDX-License-Identifier: MIT */
/*
 * npu-passes.h: the compiler's passes and the pipeline that runs them. A pass
 * is a function `enum npu_status npu_pass_<name>(struct npu_graph *g)` that
 * rewrites the graph in place and leaves it valid (the pipeline verifies after
 * every pass in debug builds). npu_compile() (compiler/passes/npu-pipeline.c)
 * is the one list of passes, in order; NPU back-end passes (partitioning,
 * tiling, lowering) are added there.
 *
 * Fused-op conventions (attributes and extra inputs the fusions create) are
 * documented in docs/ir.md.
 */
#ifndef NPU_PASSES_H
#define NPU_PASSES_H

#include <stdbool.h>
#include <stdio.h>

#include "npu/npu-ir.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_compile_options {
    /* Print the IR after these passes: "all" or a comma list of pass names
     * ("input" prints the graph before the first pass). NULL: all passes when
     * NPU_DEBUG=dump_ir is set, none otherwise. */
    const char *dump_after;
    FILE *dump_file; /* NULL = stderr */
    bool no_fusion;  /* skip the pattern fusions (for tests and debugging) */
    int verify;      /* 1 = verify after each pass, 0 = never, -1 = default
                        (on in debug builds) */
    /* Skip fuse_bias and fuse_activation: biases and activations stay nodes of
     * their own (the verified hw profile: the captured conv/matmul tasks have
     * neither, docs/evidence.md "Compile profiles"). */
    bool no_epilogue_fusion;
};

/* The pipeline: shape simplification, constant folding, dead-code elimination
 * and the fusions, in that order. */
enum npu_status npu_compile(struct npu_graph *g, const struct npu_compile_options *opts);

/* Names of the passes npu_compile runs, NULL-terminated (for --dump-after help). */
const char *const *npu_compile_pass_names(void);
/* True when pass is named in list: "all", or a comma list of pass names (NULL: false).
 * The front end's and the back end's pass lists read --dump-after with it. */
bool npu_pass_listed(const char *list, const char *pass);

/* Shape arithmetic: nodes whose outputs inference could compute (Shape,
 * Gather on shapes, Concat, Cast chains...) become constants; identity-like
 * nodes (Identity, Dropout, same-shape Reshape/Expand, no-op Cast/Slice/Pad/
 * Transpose) are removed; Reshape-family chains collapse to one Reshape;
 * lossless Cast round trips vanish. */
enum npu_status npu_pass_simplify_shapes(struct npu_graph *g);
/* Evaluates nodes whose inputs are all constant (CPU kernels, or the
 * compiler's evaluator when no kernel exists) and replaces them by constants. */
enum npu_status npu_pass_fold_constants(struct npu_graph *g);
/* Removes nodes whose outputs nobody uses and values nobody references. */
enum npu_status npu_pass_dce(struct npu_graph *g);
/* ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div (+Mul/Add affine) -> LayerNormalization. */
enum npu_status npu_pass_fuse_layernorm(struct npu_graph *g);
/* x*0.5*(1+erf(x/sqrt2)) -> Gelu; 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) -> npu.GeluTanh. */
enum npu_status npu_pass_fuse_gelu(struct npu_graph *g);
/* x*Sigmoid(x) -> npu.SiLU. */
enum npu_status npu_pass_fuse_silu(struct npu_graph *g);
/* MatMul(Q, K^T) [/ or * scale] [+ mask] -> Softmax(last) -> MatMul(., V) -> npu.Attention. */
enum npu_status npu_pass_fuse_attention(struct npu_graph *g);
/* Conv -> BatchNormalization with constant parameters: folded into the Conv. */
enum npu_status npu_pass_fold_conv_bn(struct npu_graph *g);
/* Constant bias Add after Conv / Gemm / MatMul: folded into the producer. */
enum npu_status npu_pass_fuse_bias(struct npu_graph *g);
/* Activation after Conv / Gemm / MatMul: recorded as npu_act on the producer. */
enum npu_status npu_pass_fuse_activation(struct npu_graph *g);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PASSES_H */
