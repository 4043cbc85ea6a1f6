/* SPDX-License-Identifier: MIT */
/*
 * calib-cpu-model: the offline calibration behind the relative constants of
 * "RK3588 CPU model v1" (compiler/partition/npu-cpumodel.c). It times our own
 * CPU kernels on THIS host, one thread, on B/16-sized operands that stay in
 * this host's caches (so that the figures are compute, not DRAM), and prints
 * each op's time per element as a ratio to Add's. The model takes those
 * ratios once, as constants with a note, and scales them by its own
 * anchor (cycles per element of Add on a Cortex-A76); the partitioner never
 * runs this (board mode measures nothing at compile time). Run it by hand:
 *
 *     build/tests/artifact/calib-cpu-model
 *
 * The timing itself is npu_cpu_cost() in measured mode (best of several
 * runs after a warm-up), the same harness the partitioner uses on a board.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-ir.h"
#include "npu/npu-partition.h"

#define ROWS 196
#define COLS 768

static double
time_node_t(struct npu_graph *g, struct npu_node *n, int threads)
{
    npu_graph_append(g, n);
    if (npu_infer_node(g, n)) {
        fprintf(stderr, "calib: %s: shape inference failed\n", npu_op_name(n->op));
        exit(1);
    }
    bool measured;
    double s = npu_cpu_cost(g, n, threads, NULL, &measured);
    if (!measured) {
        fprintf(stderr, "calib: %s: the kernel did not run\n", npu_op_name(n->op));
        exit(1);
    }
    return s;
}

static double
time_node(struct npu_graph *g, struct npu_node *n)
{
    return time_node_t(g, n, 1);
}

/* A [1, 8] Add: what one op costs beyond its elements (executor, kernel entry, and with
 * threads > 1 the pool's fork/join when the kernel splits its work). */
static double
tiny_add(int threads, int64_t cols)
{
    struct npu_graph *g = npu_graph_new("calib");
    int64_t d[2] = {1, cols};
    struct npu_value *in[2] = {npu_graph_add_input(g, "a", NPU_DTYPE_FP32, 2, d),
                               npu_graph_add_input(g, "b", NPU_DTYPE_FP32, 2, d)};
    struct npu_node *n = npu_node_new(g, NPU_OP_ADD, "add", in, 2, 1, NULL);
    double s = time_node_t(g, n, threads);
    npu_graph_free(g);
    return s;
}

/* One node of op on [ROWS, COLS] fp32 inputs (nin of them); time per output element. */
static double
per_elem(enum npu_op op, int nin, void (*attrs)(struct npu_graph *, struct npu_node *))
{
    struct npu_graph *g = npu_graph_new("calib");
    int64_t d[2] = {ROWS, COLS};
    struct npu_value *in[3];
    for (int i = 0; i < nin; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "x%d", i);
        in[i] = npu_graph_add_input(g, nm, NPU_DTYPE_FP32, 2, d);
    }
    struct npu_node *n = npu_node_new(g, op, "n", in, nin, 1, NULL);
    if (attrs)
        attrs(g, n);
    double s = time_node(g, n);
    double e = (double)npu_tensor_numel(&n->out[0]->t);
    npu_graph_free(g);
    return s / e;
}

static void
last_axis(struct npu_graph *g, struct npu_node *n)
{
    npu_node_set_int(g, n, "axis", -1);
}

/* ReduceMean over the last axis (axes as an input, opset 18); per input element. */
static double
reduce_mean(void)
{
    struct npu_graph *g = npu_graph_new("calib");
    int64_t d[2] = {ROWS, COLS}, ax = -1;
    struct npu_value *in[2] = {npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 2, d),
                               npu_graph_const_i64(g, "axes", &ax, 1, false)};
    struct npu_node *n = npu_node_new(g, NPU_OP_REDUCE_MEAN, "rm", in, 2, 1, NULL);
    double s = time_node(g, n) / (ROWS * COLS);
    npu_graph_free(g);
    return s;
}

static void
perm10(struct npu_graph *g, struct npu_node *n)
{
    int64_t p[2] = {1, 0};
    npu_node_set_ints(g, n, "perm", p, 2);
}

static void
to_fp16(struct npu_graph *g, struct npu_node *n)
{
    npu_node_set_int(g, n, "to", NPU_DTYPE_FP16);
}

/* LayerNormalization over the last axis with scale and bias constants. */
static double
layer_norm(void)
{
    struct npu_graph *g = npu_graph_new("calib");
    int64_t d[2] = {ROWS, COLS};
    float *w = calloc(COLS, sizeof(float));
    for (int i = 0; i < COLS; i++)
        w[i] = 1.0f;
    struct npu_tensor wt = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {COLS}, .data = w};
    struct npu_value *in[3] = {npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 2, d),
                               npu_graph_add_const(g, "s", &wt), npu_graph_add_const(g, "b", &wt)};
    struct npu_node *n = npu_node_new(g, NPU_OP_LAYER_NORMALIZATION, "ln", in, 3, 1, NULL);
    npu_node_set_int(g, n, "axis", -1);
    double s = time_node(g, n) / (ROWS * COLS);
    npu_graph_free(g);
    free(w);
    return s;
}

/* Seconds per FLOP of a [ROWS, COLS] x [COLS, COLS] MatMul. */
static double
gemm(void)
{
    struct npu_graph *g = npu_graph_new("calib");
    int64_t a[2] = {ROWS, COLS}, b[2] = {COLS, COLS};
    struct npu_value *in[2] = {npu_graph_add_input(g, "a", NPU_DTYPE_FP32, 2, a),
                               npu_graph_add_input(g, "b", NPU_DTYPE_FP32, 2, b)};
    struct npu_node *n = npu_node_new(g, NPU_OP_MATMUL, "mm", in, 2, 1, NULL);
    double s = time_node(g, n) / (2.0 * ROWS * COLS * COLS);
    npu_graph_free(g);
    return s;
}

int
main(void)
{
    static const struct {
        const char *label;
        enum npu_op op;
        int nin;
        void (*attrs)(struct npu_graph *, struct npu_node *);
    } ops[] = {
        {"Add", NPU_OP_ADD, 2, NULL},
        {"Mul", NPU_OP_MUL, 2, NULL},
        {"Div", NPU_OP_DIV, 2, NULL},
        {"Relu", NPU_OP_RELU, 1, NULL},
        {"Sqrt", NPU_OP_SQRT, 1, NULL},
        {"Cast fp16", NPU_OP_CAST, 1, to_fp16},
        {"Exp", NPU_OP_EXP, 1, NULL},
        {"Tanh", NPU_OP_TANH, 1, NULL},
        {"Erf", NPU_OP_ERF, 1, NULL},
        {"Sigmoid", NPU_OP_SIGMOID, 1, NULL},
        {"Gelu", NPU_OP_GELU, 1, NULL},
        {"npu.GeluTanh", NPU_OP_FUSED_GELU_TANH, 1, NULL},
        {"npu.SiLU", NPU_OP_FUSED_SILU, 1, NULL},
        {"Softmax", NPU_OP_SOFTMAX, 1, last_axis},
        {"Transpose", NPU_OP_TRANSPOSE, 1, perm10},
        {"Identity", NPU_OP_IDENTITY, 1, NULL},
    };
    double add = per_elem(NPU_OP_ADD, 2, NULL);
    printf("calib-cpu-model: our CPU kernels on this host, 1 thread, [%d, %d] fp32 (in cache);\n"
           "time per output element and ratio to Add\n",
           ROWS, COLS);
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        double t = per_elem(ops[i].op, ops[i].nin, ops[i].attrs);
        printf("  %-14s %8.3f ns/elem  %6.2f x Add\n", ops[i].label, t * 1e9, t / add);
    }
    double rm = reduce_mean();
    printf("  %-14s %8.3f ns/elem  %6.2f x Add   (per input element)\n", "ReduceMean", rm * 1e9,
           rm / add);
    double ln = layer_norm();
    printf("  %-14s %8.3f ns/elem  %6.2f x Add\n", "LayerNorm", ln * 1e9, ln / add);
    double conv = 4.0 / npu_convert_rate();
    printf("  %-14s %8.3f ns/elem  %6.2f x Add   (fp32 NCHW -> fp16 NC1HWC2, npu_convert_rate)\n",
           "conversion", conv * 1e9, conv / add);
    double f = gemm();
    printf("  %-14s %8.3f GFLOP/s (1 thread)  Add element = %.2f GEMM FLOPs\n", "MatMul", 1e-9 / f,
           add / f);
    printf("  %-14s %8.3f us (1 thread), [1, 8]; %.3f us (2 threads); [1, 65536]: %.3f us "
           "(1 thread), %.3f us (2 threads)\n",
           "tiny Add", tiny_add(1, 8) * 1e6, tiny_add(2, 8) * 1e6, tiny_add(1, 65536) * 1e6,
           tiny_add(2, 65536) * 1e6);
    return 0;
}
