// SPDX-License-Identifier: MIT
/*
 * quant-outputs.c: graph outputs left quantised (npu_quant_options.quantised_outputs,
 * npuc --quantized-outputs). A graph output that is the DequantizeLinear of a quantised
 * layer's int8 / int16 result (per-tensor scale and zero point, constants) becomes that
 * integer result under the output's own name, with the scale and zero point on the
 * value (npu_tensor qscale / qzero): the program's output tensor records them, the
 * .npub stores them in its tensor record, and the GStreamer meta (GstNpuTensor scale,
 * zero_point) hands them to the application, as for IR models that declare them. The
 * DequantizeLinear becomes an Identity of the integer value (the name stays).
 */
#include <string.h>

#include "npu/npu-passes.h"
#include "quant-rewrite.h"

static bool
scalar_const(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST && npu_value_numel(v) == 1 && v->t.data;
}

enum npu_status
quant_quantised_outputs(struct npu_graph *g, int *count)
{
    *count = 0;
    for (int i = 0; i < g->noutputs; i++) {
        struct npu_value *y = g->outputs[i];
        struct npu_node *d = y && y->kind == NPU_VALUE_NODE ? y->producer : NULL;
        if (!d || d->op != NPU_OP_DEQUANTIZE_LINEAR || d->nin < 2 || d->nout != 1)
            continue;
        struct npu_value *x = d->in[0], *s = d->in[1], *z = d->nin > 2 ? d->in[2] : NULL;
        struct npu_node *p = x->kind == NPU_VALUE_NODE ? x->producer : NULL;
        if (!p || (p->op != NPU_OP_QLINEAR_CONV && p->op != NPU_OP_QLINEAR_MATMUL) ||
            (x->t.dtype != NPU_DTYPE_INT8 && x->t.dtype != NPU_DTYPE_INT16) || !scalar_const(s) ||
            s->t.dtype != NPU_DTYPE_FP32 || (z && !scalar_const(z)) ||
            npu_node_int(d, "block_size", 0))
            continue;
        float scale = (float)npu_value_get_f64(s, 0);
        int32_t zero = z ? (int32_t)npu_value_get_i64(z, 0) : 0;
        if (!(scale > 0))
            continue;
        struct npu_node *next = d->next;
        npu_graph_remove(g, d);
        struct npu_node *id = npu_node_new_v(g, NPU_OP_IDENTITY, d->name, &x, 1, &y, 1);
        if (!id)
            return NPU_ERR_NOMEM;
        if (next)
            npu_graph_insert_before(g, next, id);
        else
            npu_graph_append(g, id);
        enum npu_status st = npu_infer_node(g, id);
        if (st)
            return st;
        y->t.qscale = scale;
        y->t.qzero = zero;
        (*count)++;
    }
    enum npu_status st = npu_graph_update_uses(g);
    return st ? st : npu_pass_dce(g);
}
