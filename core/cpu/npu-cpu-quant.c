/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-quant.c: QuantizeLinear and DequantizeLinear, per tensor, per axis
 * or blocked (opset 21 block_size), for int8/uint8/int16/uint16 (and int32
 * for Dequantize).
 *
 * Quantize: y = saturate(round_half_even(x / scale) + zero_point), with the
 * division done in fp32 as the ONNX reference does (not a multiplication by
 * 1/scale, which differs in the last bit). NaN quantises to the zero point.
 * Dequantize: y = (x - zero_point) * scale, in fp32. INT4/UINT4 tensors
 * arrive widened to int8/uint8 (the ONNX importer unpacks them); a Quantize
 * to 4 bits carries qbits = 4 and saturates to [-8, 7] / [0, 15].
 */
#include "npu-cpu-internal.h"

/* Maps element index -> scale index for per-tensor, per-axis or blocked parameters. */
struct qmap {
    int64_t outer, D, inner; /* x viewed as [outer, D, inner] around axis */
    int64_t block;           /* 0: per-axis or per-tensor */
    int64_t sD;              /* scale's extent along the axis */
    bool scalar;
};

static enum npu_status
qmap_setup(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
           const struct npu_tensor *scale, const struct npu_tensor *zp, struct qmap *m)
{
    memset(m, 0, sizeof(*m));
    if (zp && !cpu_same_dims(zp, scale) && cpu_numel(zp) != cpu_numel(scale))
        return KINVAL("zero point and scale shapes differ");
    if (cpu_numel(scale) == 1 && scale->ndim <= 1) {
        m->scalar = true;
        return NPU_OK;
    }
    int axis;
    if (x->ndim == 0)
        return KINVAL("per-axis parameters need a tensor input");
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 1), x->ndim, &axis));
    m->outer = cpu_dims_prod(x->dims, 0, axis);
    m->D = x->dims[axis];
    m->inner = cpu_dims_prod(x->dims, axis + 1, x->ndim);
    int64_t bs = npu_attrs_int(attrs, "block_size", 0);
    if (bs <= 0) {
        if (scale->ndim != 1 || scale->dims[0] != m->D)
            return KINVAL("per-axis scale must be 1-D with %lld entries", (long long)m->D);
        m->sD = m->D;
        return NPU_OK;
    }
    /* blocked: scale has x's shape except ceil(D / block_size) along the axis */
    if (scale->ndim != x->ndim)
        return KINVAL("blocked scale must have the input's rank");
    for (int d = 0; d < x->ndim; d++) {
        int64_t want = d == axis ? NPU_DIV_ROUND_UP(x->dims[d], bs) : x->dims[d];
        if (scale->dims[d] != want)
            return KINVAL("blocked scale dim %d is %lld, expected %lld", d,
                          (long long)scale->dims[d], (long long)want);
    }
    m->block = bs;
    m->sD = NPU_DIV_ROUND_UP(m->D, bs);
    return NPU_OK;
}

static inline int64_t
qmap_index(const struct qmap *m, int64_t e)
{
    if (m->scalar)
        return 0;
    int64_t l = e % m->inner, dd = (e / m->inner) % m->D, o = e / (m->inner * m->D);
    if (!m->block)
        return dd;
    return (o * m->sD + dd / m->block) * m->inner + l;
}

static bool
qrange(enum npu_dtype dt, float *lo, float *hi)
{
    switch (dt) {
    case NPU_DTYPE_INT8:
        *lo = -128;
        *hi = 127;
        return true;
    case NPU_DTYPE_UINT8:
        *lo = 0;
        *hi = 255;
        return true;
    case NPU_DTYPE_INT16:
        *lo = -32768;
        *hi = 32767;
        return true;
    case NPU_DTYPE_UINT16:
        *lo = 0;
        *hi = 65535;
        return true;
    default: return false;
    }
}

/* the common case, one scale for fp32 to 8 bits, as a loop that vectorises: the same float
 * operations as the general loop below (a division, rintf, the zero point, the clamp); the
 * runtime's conversions quantise by it too (npu-program-convert.c), so that a conversion the
 * back end folded a QuantizeLinear into gives the kernel's values */
CPU_HOT void
npu_cpu_quantize_f32_8(const float *x, int64_t n, float s, float z, float lo, float hi, bool u8,
                       void *y)
{
    if (u8) {
        uint8_t *o = y;
        for (int64_t e = 0; e < n; e++) {
            float v = rintf(x[e] / s) + z;
            v = v != v ? z : v < lo ? lo : v > hi ? hi : v;
            o[e] = (uint8_t)(int32_t)v;
        }
    } else {
        int8_t *o = y;
        for (int64_t e = 0; e < n; e++) {
            float v = rintf(x[e] / s) + z;
            v = v != v ? z : v < lo ? lo : v > hi ? hi : v;
            o[e] = (int8_t)(int32_t)v;
        }
    }
}

/* dequantize of 8-bit values with one scale: (x - zp) * scale in fp32, vectorised */
CPU_HOT static void
dequant_i8_f32(const void *x, bool u8, int64_t n, int32_t z, float s, float *o)
{
    if (u8)
        for (int64_t e = 0; e < n; e++)
            o[e] = (float)((int32_t)((const uint8_t *)x)[e] - z) * s;
    else
        for (int64_t e = 0; e < n; e++)
            o[e] = (float)((int32_t)((const int8_t *)x)[e] - z) * s;
}

enum npu_status
cpu_k_quantize_linear(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *scale = in[1];
    const struct npu_tensor *zp = nin > 2 && !cpu_absent(in[2]) ? in[2] : NULL;
    struct npu_tensor *y = out[0];
    float lo, hi;
    if (!qrange(y->dtype, &lo, &hi))
        return KUNSUP("output dtype %s is not supported", npu_dtype_name(y->dtype));
    /* INT4/UINT4 results held one a byte (the ONNX importer sets qbits) */
    int64_t bits = npu_attrs_int(attrs, "qbits", 0);
    if (bits == 4 && (y->dtype == NPU_DTYPE_INT8 || y->dtype == NPU_DTYPE_UINT8)) {
        lo = y->dtype == NPU_DTYPE_INT8 ? -8.0f : 0.0f;
        hi = y->dtype == NPU_DTYPE_INT8 ? 7.0f : 15.0f;
    } else if (bits) {
        return KINVAL("qbits %lld is not supported for %s (4 with int8/uint8 is)", (long long)bits,
                      npu_dtype_name(y->dtype));
    }
    if (zp && zp->dtype != y->dtype)
        return KINVAL("zero point dtype %s differs from the output's %s", npu_dtype_name(zp->dtype),
                      npu_dtype_name(y->dtype));
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_INT32)
        return KUNSUP("input dtype %s is not supported", npu_dtype_name(x->dtype));
    if (scale->dtype != NPU_DTYPE_FP32)
        return KINVAL("scale must be float");
    CPU_TRY(cpu_check_out(ctx, y, y->dtype, x->ndim, x->dims));
    struct qmap m;
    CPU_TRY(qmap_setup(ctx, attrs, x, scale, zp, &m));
    int64_t n = cpu_numel(x);
    const float *s = scale->data;
    if (m.scalar && x->dtype == NPU_DTYPE_FP32 &&
        (y->dtype == NPU_DTYPE_UINT8 || y->dtype == NPU_DTYPE_INT8)) {
        npu_cpu_quantize_f32_8(x->data, n, s[0], zp ? (float)cpu_scalar_i64(zp, 0) : 0.0f, lo, hi,
                               y->dtype == NPU_DTYPE_UINT8, y->data);
        return NPU_OK;
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t qi = qmap_index(&m, e);
        float xv = x->dtype == NPU_DTYPE_FP32 ? ((const float *)x->data)[e]
                                              : (float)((const int32_t *)x->data)[e];
        float z = zp ? (float)cpu_scalar_i64(zp, qi) : 0.0f;
        float v = rintf(xv / s[qi]) + z;
        v = v != v ? z : v < lo ? lo : v > hi ? hi : v;
        switch (y->dtype) {
        case NPU_DTYPE_INT8: ((int8_t *)y->data)[e] = (int8_t)v; break;
        case NPU_DTYPE_UINT8: ((uint8_t *)y->data)[e] = (uint8_t)v; break;
        case NPU_DTYPE_INT16: ((int16_t *)y->data)[e] = (int16_t)v; break;
        default: ((uint16_t *)y->data)[e] = (uint16_t)v; break;
        }
    }
    return NPU_OK;
}

enum npu_status
cpu_k_dequantize_linear(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *scale = in[1];
    const struct npu_tensor *zp = nin > 2 && !cpu_absent(in[2]) ? in[2] : NULL;
    struct npu_tensor *y = out[0];
    switch (x->dtype) {
    case NPU_DTYPE_INT8:
    case NPU_DTYPE_UINT8:
    case NPU_DTYPE_INT16:
    case NPU_DTYPE_UINT16:
    case NPU_DTYPE_INT32: break;
    default: return KUNSUP("input dtype %s is not supported", npu_dtype_name(x->dtype));
    }
    if (zp && zp->dtype != x->dtype)
        return KINVAL("zero point dtype differs from the input's");
    if (scale->dtype != NPU_DTYPE_FP32)
        return KINVAL("scale must be float");
    CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_FP32, x->ndim, x->dims));
    struct qmap m;
    CPU_TRY(qmap_setup(ctx, attrs, x, scale, zp, &m));
    int64_t n = cpu_numel(x);
    const float *s = scale->data;
    float *o = y->data;
    if (m.scalar && (x->dtype == NPU_DTYPE_UINT8 || x->dtype == NPU_DTYPE_INT8)) {
        dequant_i8_f32(x->data, x->dtype == NPU_DTYPE_UINT8, n,
                       zp ? (int32_t)cpu_scalar_i64(zp, 0) : 0, s[0], o);
        return NPU_OK;
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t qi = qmap_index(&m, e);
        int64_t v = cpu_scalar_i64(x, e) - (zp ? cpu_scalar_i64(zp, qi) : 0);
        o[e] = (float)v * s[qi];
    }
    return NPU_OK;
}
