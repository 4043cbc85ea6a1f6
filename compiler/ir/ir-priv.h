/* SPDX-License-Identifier: MIT */
/*
 * ir-priv.h: helpers shared by the IR files (not public): element load/store
 * for every dtype of npu-tensor.h (fp16 through npu/npu-fp16.h), and the node
 * diagnostic macro that names the node the way users see it in their model.
 */
#ifndef NPU_IR_PRIV_H
#define NPU_IR_PRIV_H

#include <math.h>
#include <string.h>

#include "npu/npu-fp16.h"
#include "npu/npu-ir.h"

#define ir_node_err(n, ...) ir_node_log(NPU_LOG_ERROR, n, __VA_ARGS__)
void ir_node_log(enum npu_log_level lvl, const struct npu_node *n, const char *fmt, ...)
    NPU_PRINTF(3, 4);

/* Saturating double -> int64 (NaN -> 0) so that untrusted constants never hit
 * undefined conversions. */
static inline int64_t
ir_f64_to_i64(double d)
{
    if (d != d)
        return 0;
    if (d >= 9.2233720368547758e18)
        return INT64_MAX;
    if (d <= -9.2233720368547758e18)
        return INT64_MIN;
    return (int64_t)d;
}

static inline int64_t
ir_sat(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Integer stores wrap like C casts (ONNX Cast of out-of-range ints is
 * implementation-defined; numpy wraps). */
static inline void
ir_store_i64(enum npu_dtype dt, void *p, int64_t i, int64_t v)
{
    switch (dt) {
    case NPU_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
    case NPU_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case NPU_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case NPU_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case NPU_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case NPU_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case NPU_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case NPU_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case NPU_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case NPU_DTYPE_FP32: ((float *)p)[i] = (float)v; break;
    case NPU_DTYPE_FP64: ((double *)p)[i] = (double)v; break;
    case NPU_DTYPE_FP16: ((uint16_t *)p)[i] = npu_fp32_to_fp16((float)v); break;
    default: break;
    }
}

static inline void
ir_store_f64(enum npu_dtype dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case NPU_DTYPE_FP32: ((float *)p)[i] = (float)v; break;
    case NPU_DTYPE_FP64: ((double *)p)[i] = v; break;
    case NPU_DTYPE_FP16: ((uint16_t *)p)[i] = npu_fp32_to_fp16((float)v); break;
    case NPU_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: ir_store_i64(dt, p, i, ir_f64_to_i64(v)); break;
    }
}

/* Broadcasts a and b (numpy rules) into out; false if incompatible. */
bool ir_broadcast(const struct npu_tensor *a, const struct npu_tensor *b, struct npu_tensor *out);
/* Row-major strides in elements. */
void ir_strides(const struct npu_tensor *t, int64_t *st);
/* Element offset in t of the out-index idx[] (out has rank ond >= t rank) under
 * broadcasting. */
int64_t ir_bcast_offset(const struct npu_tensor *t, const int64_t *idx, int ond);

/* Spatial geometry of Conv, ConvTranspose and pools: resolves auto_pad into
 * explicit pads (2*ns entries: begins then ends) and computes output sizes. */
enum npu_status ir_conv_geometry(const struct npu_node *n, int ns, const int64_t *in_sp,
                                 const int64_t *k, bool transposed, bool pool, int64_t *pads,
                                 int64_t *out_sp);
enum npu_status ir_infer_node(struct npu_graph *g, struct npu_node *n, bool eval);

#endif /* NPU_IR_PRIV_H */
