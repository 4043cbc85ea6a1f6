/* SPDX-License-Identifier: MIT */
/*
 * infer-priv.h: what the shape/dtype inference files share (not public): the
 * failure macros of per-op inference, the helpers of infer-util.c and the
 * per-family inference functions that the dispatch in npu-infer.c calls. Each
 * per-op inference sets the node's output types, or logs what is wrong with the
 * node and returns NPU_ERR_INVALID.
 */
#ifndef NPU_INFER_PRIV_H
#define NPU_INFER_PRIV_H

#include "ir-priv.h"

/* These expect the node in `n`. FAIL logs the error and returns. */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        ir_node_err(n, __VA_ARGS__);                                                               \
        return NPU_ERR_INVALID;                                                                    \
    } while (0)

#define NEED_IN(i)                                                                                 \
    do {                                                                                           \
        if ((i) >= n->nin || !n->in[i])                                                            \
            FAIL("missing input %d", (i));                                                         \
    } while (0)

#define NEED_DATA(i, what)                                                                         \
    do {                                                                                           \
        NEED_IN(i);                                                                                \
        if (!npu_value_data(n->in[i]))                                                             \
            FAIL("%s (input %d '%s') is not a compile-time constant; shapes that depend on "       \
                 "run-time values are not supported",                                              \
                 what, (i), n->in[i]->name);                                                       \
    } while (0)

/* ---- infer-util.c ---------------------------------------------------------- */

/* Input i's tensor, NULL if the node has no input i. */
const struct npu_tensor *ir_T(const struct npu_node *n, int i);
/* Sets output i's dtype and shape (nothing if the node has no output i); fails
 * on a bad rank, a negative dim or an absurd size. */
enum npu_status ir_set_out(const struct npu_node *n, int i, enum npu_dtype dt, int ndim,
                           const int64_t *dims);
/* Output o takes input i's dtype and shape. */
enum npu_status ir_same_as(const struct npu_node *n, int o, int i);
/* Normalizes axis a (negative counts from the end) for a rank; false if out of range. */
bool ir_norm_axis(int64_t a, int rank, int64_t *out);
/* Reads up to max entries of an integer vector input with data; -1 if it is
 * not an integer tensor of at most max entries. */
int ir_read_ints(const struct npu_value *v, int64_t *buf, int max);

/* ---- infer-shape-ops.c: data movement and indexing ------------------------- */

enum npu_status ir_infer_reshape(struct npu_node *n);
enum npu_status ir_infer_slice(struct npu_node *n);
enum npu_status ir_infer_concat(struct npu_node *n);
enum npu_status ir_infer_split(struct npu_node *n);
/* Squeeze, or Unsqueeze when unsq. */
enum npu_status ir_infer_squeeze(struct npu_node *n, bool unsq);
/* Gather and GatherElements. */
enum npu_status ir_infer_gather(struct npu_node *n);
enum npu_status ir_infer_pad(struct npu_node *n);
enum npu_status ir_infer_expand(struct npu_node *n);
/* DepthToSpace and SpaceToDepth. */
enum npu_status ir_infer_depth_space(struct npu_node *n);
/* ScatterND and ScatterElements. */
enum npu_status ir_infer_scatter(struct npu_node *n);
enum npu_status ir_infer_state_write(struct npu_node *n);
enum npu_status ir_infer_topk(struct npu_node *n);
enum npu_status ir_infer_one_hot(struct npu_node *n);
enum npu_status ir_infer_gather_nd(struct npu_node *n);
enum npu_status ir_infer_tile(struct npu_node *n);
enum npu_status ir_infer_range(struct npu_node *n);
/* Shape and Size; with eval, their contents too (the node's `known` output). */
enum npu_status ir_infer_shape_ops(struct npu_graph *g, struct npu_node *n, bool eval);

/* ---- infer-nn.c: conv, pools, reductions, RNNs, Resize, Einsum, attention -- */

/* Conv, ConvTranspose (transposed), ConvInteger and QLinearConv: input xi,
 * weight wi, output dtype dt. */
enum npu_status ir_infer_conv(struct npu_node *n, int xi, int wi, enum npu_dtype dt,
                              bool transposed);
/* MaxPool and AveragePool. */
enum npu_status ir_infer_pool(struct npu_node *n);
/* The Reduce* ops. */
enum npu_status ir_infer_reduce(struct npu_node *n);
/* ArgMax and ArgMin. */
enum npu_status ir_infer_argminmax(struct npu_node *n);
/* RNN, GRU and LSTM. */
enum npu_status ir_infer_rnn(struct npu_node *n);
enum npu_status ir_infer_resize(struct npu_node *n);
enum npu_status ir_infer_einsum(struct npu_node *n);
/* npu.Attention, our fused attention (docs/ir.md). */
enum npu_status ir_infer_attention(struct npu_node *n);

/* ---- infer-opset18.c: ops added in opsets 18-23 ------------------------------ */
enum npu_status ir_infer_rms_norm(struct npu_node *n);
enum npu_status ir_infer_center_crop_pad(struct npu_node *n);
enum npu_status ir_infer_col2im(struct npu_node *n);
enum npu_status ir_infer_affine_grid(struct npu_node *n);

#endif /* NPU_INFER_PRIV_H */
