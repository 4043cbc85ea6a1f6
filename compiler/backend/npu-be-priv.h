/* SPDX-License-Identifier: MIT */
/*
 * npu-be-priv.h: the conv/matmul lowering's declarations for the rest of the
 * back end: its rows of the handler table (conv-supports.c, conv-lower.c) and
 * the pass that widens rk.Conv results read as f32 (npu-lower.c). The files of
 * the conv/matmul lowering share conv-priv.h.
 */
#ifndef NPU_BE_PRIV_H
#define NPU_BE_PRIV_H

#include "npu-be.h"

/* ---- handler rows ---------------------------------------------------------------- */

bool npu_conv_supports(const struct npu_graph *g, const struct npu_node *n,
                       const struct npu_backend_options *o, char *why, size_t why_len);
double npu_conv_cost(const struct npu_graph *g, const struct npu_node *n,
                     const struct npu_backend_options *o);
enum npu_status npu_conv_lower(struct npu_lower_ctx *cx, struct npu_node *n);

/* After lowering: convs whose result only goes to the host as f32 write f32
 * (a pass of the back-end pipeline). */
enum npu_status npu_rk_conv_widen_outputs(struct npu_graph *g);

#endif /* NPU_BE_PRIV_H */
