/* SPDX-License-Identifier: MIT */
/*
 * quant-rewrite.h: the quantiser's graph edits (quant-rewrite.c) and the
 * record each candidate layer leaves for the accuracy analysis.
 */
#ifndef NPU_QUANT_REWRITE_H
#define NPU_QUANT_REWRITE_H

#include "quant-priv.h"

struct quant_layer_rec {
    char name[128], op[24], why[160];
    char x_name[256], y_name[256];
    bool quantised;
    float sx, sy; /* input / output scales */
    int8_t zx, zy;
    /* valid right after the rewrite only (DCE may drop y) */
    struct npu_node *ql;
    struct npu_value *y, *yq;
    struct npu_value *xq; /* the int8 input (another layer's result or a QuantizeLinear) */
    /* w16a16i: the conv bias added after the DequantizeLinear ([K, 1, 1] f32) or NULL */
    struct npu_value *post_bias;
    /* accuracy accumulators: single and entire */
    double s_xy, s_xx, s_yy, s_dd;
    double e_xy, e_xx, e_yy, e_dd;
    double single_cos, single_rel, entire_cos, entire_rel;
};

struct quant_layers {
    struct quant_layer_rec *l;
    int n, nquantised;
};

/* Gemm -> MatMul (+ bias), fused biases of MatMul and non-saturating fused
 * activations split off, so calibration sees each product's own output. */
enum npu_status quant_prepare(struct npu_graph *g, bool symmetric);
/* Whether n is a layer the rewrite would quantise. */
bool quant_candidate(const struct npu_node *n);
/* Quantises g's candidates except those named in exclude and, with
 * hybrid_out, those whose single cosine there is under the threshold. */
enum npu_status quant_rewrite(struct npu_graph *g, const struct quant_stats *st,
                              const struct npu_quant_options *o, const char *exclude,
                              const struct quant_layers *hybrid_out, struct quant_layers *L);

/* A copy of n (not inserted) with its first nin inputs and without its fused
 * activation, defining a new value "<y>_pre". */
struct npu_node *quant_bare_copy(struct npu_graph *g, struct npu_node *n, int nin, enum npu_op op);
/* The node (not inserted) of n's fused activation, reading x and defining y. */
struct npu_node *quant_act_node(struct npu_graph *g, struct npu_node *n, struct npu_value *x,
                                struct npu_value *y);

/* quant-outputs.c: graph outputs that dequantise a quantised layer's integer result
 * become that result (Identity, same name) carrying qscale / qzero; count says how many. */
enum npu_status quant_quantised_outputs(struct npu_graph *g, int *count);

#endif /* NPU_QUANT_REWRITE_H */
