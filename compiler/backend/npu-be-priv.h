/* SPDX-License-Identifier: MIT */
/*
 * npu-be-priv.h: be-conv's private declarations: the rows of the handler
 * table it owns, the rk.Conv task record and geometry shared by the tiler
 * (npu-conv.c) and the emitter (npu-conv-emit.c), the timing-model figures
 * both use, and the memory plan of codegen.
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
