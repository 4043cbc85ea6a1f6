/* SPDX-License-Identifier: MIT */
/*
 * npu-ir-align.c: constants whose data is not aligned for their element type. The ONNX
 * importer borrows fp32 initializers from the model file's mapping wherever they lie
 * (npu-onnx.c), most of them at byte offsets 1-3 mod 4 (protobuf does not align payloads).
 * The readers that load with memcpy take them as they are; a reader that needs typed
 * pointers (a CPU kernel) gets an aligned copy here, made once and kept by the value.
 */
#include <string.h>

#include "npu/npu-ir.h"

#define DOM "ir"

bool
npu_value_data_aligned(const struct npu_value *v)
{
    const void *d = npu_value_data(v);
    size_t es = v ? npu_dtype_size(v->t.dtype) : 0;
    return !d || !es || (uintptr_t)d % es == 0;
}

const void *
npu_value_aligned_data(struct npu_graph *g, struct npu_value *v)
{
    if (npu_value_data_aligned(v))
        return npu_value_data(v);
    if (v->kind != NPU_VALUE_CONST) {
        /* compile-time-known contents are always the graph's own, aligned allocations */
        npu_err(DOM, "value '%s': unaligned known contents", v->name);
        return NULL;
    }
    int64_t nb = npu_tensor_nbytes(&v->t);
    void *d = nb > 0 ? npu_graph_alloc(g, (size_t)nb) : NULL;
    if (!d)
        return NULL;
    memcpy(d, v->t.data, (size_t)nb);
    v->t.data = d; /* same bytes: v->hash stays valid */
    return d;
}

enum npu_status
npu_graph_align_consts(struct npu_graph *g)
{
    for (int i = 0; i < g->nvalues; i++) {
        struct npu_value *v = g->values[i];
        if (v->kind == NPU_VALUE_CONST && !npu_value_data_aligned(v) &&
            !npu_value_aligned_data(g, v))
            return NPU_ERR_NOMEM;
    }
    return NPU_OK;
}
