/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-cast.c: conversion between every pair of the twelve dtypes, used by
 * Cast/CastLike and by kernels that need an operand in another type.
 *
 * Rules (ONNX Cast, with the cases ONNX leaves open defined here):
 *  - to float types: C conversion (round to nearest even); to fp16 in one
 *    rounding from either fp32 or fp64;
 *  - float to integer: truncation toward zero, saturating to the type's range,
 *    NaN -> 0 (ONNX calls out-of-range undefined; C would make it UB);
 *  - integer to narrower integer: two's-complement wrap (as numpy astype);
 *  - anything to bool: x != 0 (NaN -> true); bool to anything: 0 or 1.
 */
#include "npu-cpu-internal.h"

/* Source element i as the widest exact type for its class. */
#define SRC_CASES(DST_T, CONV_F, CONV_I, CONV_U, CONV_B)                                           \
    case NPU_DTYPE_FP32: LOOP(float, CONV_F); break;                                               \
    case NPU_DTYPE_FP64: LOOP(double, CONV_F); break;                                              \
    case NPU_DTYPE_INT8: LOOP(int8_t, CONV_I); break;                                              \
    case NPU_DTYPE_INT16: LOOP(int16_t, CONV_I); break;                                            \
    case NPU_DTYPE_INT32: LOOP(int32_t, CONV_I); break;                                            \
    case NPU_DTYPE_INT64: LOOP(int64_t, CONV_I); break;                                            \
    case NPU_DTYPE_UINT8: LOOP(uint8_t, CONV_U); break;                                            \
    case NPU_DTYPE_UINT16: LOOP(uint16_t, CONV_U); break;                                          \
    case NPU_DTYPE_UINT32: LOOP(uint32_t, CONV_U); break;                                          \
    case NPU_DTYPE_UINT64: LOOP(uint64_t, CONV_U); break;                                          \
    case NPU_DTYPE_BOOL:                                                                           \
        LOOP(uint8_t, CONV_B);                                                                     \
        break;

#define LOOP(ST, CONV)                                                                             \
    do {                                                                                           \
        const ST *s = src;                                                                         \
        for (int64_t i = 0; i < n; i++) {                                                          \
            ST x = s[i];                                                                           \
            d[i] = CONV;                                                                           \
        }                                                                                          \
    } while (0)

/* to a float type (T = float or double) */
#define TO_FLOAT_FN(name, T)                                                                       \
    static void name(const void *src, enum npu_dtype sdt, T *d, int64_t n)                         \
    {                                                                                              \
        switch (sdt) {                                                                             \
            SRC_CASES(T, (T)x, (T)x, (T)x, (T)(x != 0))                                            \
        case NPU_DTYPE_FP16: LOOP(uint16_t, (T)npu_fp16_to_fp32(x)); break;                        \
        default: break;                                                                            \
        }                                                                                          \
    }
TO_FLOAT_FN(to_f32, float)
TO_FLOAT_FN(to_f64, double)

/* to an integer type: floats saturate, integers wrap */
#define TO_INT_FN(name, T, SAT)                                                                    \
    static void name(const void *src, enum npu_dtype sdt, T *d, int64_t n)                         \
    {                                                                                              \
        switch (sdt) {                                                                             \
            SRC_CASES(T, SAT((double)x), (T)x, (T)x, (T)(x != 0))                                  \
        case NPU_DTYPE_FP16: LOOP(uint16_t, SAT((double)npu_fp16_to_fp32(x))); break;              \
        default: break;                                                                            \
        }                                                                                          \
    }
TO_INT_FN(to_i8, int8_t, cpu_sat_i8)
TO_INT_FN(to_i16, int16_t, cpu_sat_i16)
TO_INT_FN(to_i32, int32_t, cpu_sat_i32)
TO_INT_FN(to_i64, int64_t, cpu_sat_i64)
TO_INT_FN(to_u8, uint8_t, cpu_sat_u8)
TO_INT_FN(to_u16, uint16_t, cpu_sat_u16)
TO_INT_FN(to_u32, uint32_t, cpu_sat_u32)
TO_INT_FN(to_u64, uint64_t, cpu_sat_u64)

static void
to_bool(const void *src, enum npu_dtype sdt, uint8_t *d, int64_t n)
{
    switch (sdt) {
        SRC_CASES(uint8_t, (uint8_t)(x != 0), (uint8_t)(x != 0), (uint8_t)(x != 0),
                  (uint8_t)(x != 0))
    case NPU_DTYPE_FP16: LOOP(uint16_t, (uint8_t)((x & 0x7fff) != 0)); break;
    default: break;
    }
}

static void
to_f16(const void *src, enum npu_dtype sdt, uint16_t *d, int64_t n)
{
    switch (sdt) {
    case NPU_DTYPE_FP32:
        npu_fp32_to_fp16_n(d, src, (size_t)n); /* the vectorised bulk conversion */
        break;
    case NPU_DTYPE_FP64: LOOP(double, npu_fp64_to_fp16(x)); break;
    case NPU_DTYPE_FP16: memcpy(d, src, (size_t)n * 2); break;
    case NPU_DTYPE_INT8: LOOP(int8_t, npu_fp32_to_fp16((float)x)); break;
    case NPU_DTYPE_INT16: LOOP(int16_t, npu_fp32_to_fp16((float)x)); break;
    case NPU_DTYPE_UINT8: LOOP(uint8_t, npu_fp32_to_fp16((float)x)); break;
    case NPU_DTYPE_UINT16: LOOP(uint16_t, npu_fp32_to_fp16((float)x)); break;
    /* wide integers: through double, exact below 2^53; above that fp16 is inf anyway */
    case NPU_DTYPE_INT32: LOOP(int32_t, npu_fp64_to_fp16((double)x)); break;
    case NPU_DTYPE_INT64: LOOP(int64_t, npu_fp64_to_fp16((double)x)); break;
    case NPU_DTYPE_UINT32: LOOP(uint32_t, npu_fp64_to_fp16((double)x)); break;
    case NPU_DTYPE_UINT64: LOOP(uint64_t, npu_fp64_to_fp16((double)x)); break;
    case NPU_DTYPE_BOOL: LOOP(uint8_t, (uint16_t)(x ? 0x3c00 : 0)); break;
    default: break;
    }
}

/* Converts n elements; src and dst must not overlap unless the dtypes are equal. */
void
cpu_convert(const void *src, enum npu_dtype sdt, void *dst, enum npu_dtype ddt, int64_t n)
{
    if (n <= 0)
        return;
    if (sdt == ddt) {
        if (src != dst)
            memmove(dst, src, (size_t)n * npu_dtype_size(sdt));
        return;
    }
    switch (ddt) {
    case NPU_DTYPE_FP32:
        if (sdt == NPU_DTYPE_FP16)
            npu_fp16_to_fp32_n(dst, src, (size_t)n); /* the vectorised bulk conversion */
        else
            to_f32(src, sdt, dst, n);
        break;
    case NPU_DTYPE_FP64: to_f64(src, sdt, dst, n); break;
    case NPU_DTYPE_FP16: to_f16(src, sdt, dst, n); break;
    case NPU_DTYPE_INT8: to_i8(src, sdt, dst, n); break;
    case NPU_DTYPE_INT16: to_i16(src, sdt, dst, n); break;
    case NPU_DTYPE_INT32: to_i32(src, sdt, dst, n); break;
    case NPU_DTYPE_INT64: to_i64(src, sdt, dst, n); break;
    case NPU_DTYPE_UINT8: to_u8(src, sdt, dst, n); break;
    case NPU_DTYPE_UINT16: to_u16(src, sdt, dst, n); break;
    case NPU_DTYPE_UINT32: to_u32(src, sdt, dst, n); break;
    case NPU_DTYPE_UINT64: to_u64(src, sdt, dst, n); break;
    case NPU_DTYPE_BOOL: to_bool(src, sdt, dst, n); break;
    default: npu_die("cpu_convert to dtype %d", (int)ddt);
    }
}

void *
cpu_convert_alloc(const struct npu_tensor *t, enum npu_dtype ddt)
{
    int64_t n = cpu_numel(t);
    void *p = malloc((size_t)(n ? n : 1) * npu_dtype_size(ddt));
    if (p)
        cpu_convert(t->data, t->dtype, p, ddt, n);
    return p;
}

struct cast_job {
    const char *src;
    char *dst;
    enum npu_dtype sdt, ddt;
};

static void
cast_task(void *arg, int64_t b, int64_t e, int tid)
{
    const struct cast_job *j = arg;
    cpu_convert(j->src + (size_t)b * npu_dtype_size(j->sdt), j->sdt,
                j->dst + (size_t)b * npu_dtype_size(j->ddt), j->ddt, e - b);
}

static enum npu_status
cast_to(struct npu_cpu_ctx *ctx, const struct npu_tensor *x, struct npu_tensor *y,
        enum npu_dtype to)
{
    CPU_TRY(cpu_check_out(ctx, y, to, x->ndim, x->dims));
    struct cast_job j = {x->data, y->data, x->dtype, to};
    cpu_parallel_for(ctx, cpu_numel(x), 32768, cast_task, &j);
    return NPU_OK;
}

/* ONNX TensorProto.DataType codes, for Cast's `to` attribute. */
enum npu_dtype
cpu_dtype_from_onnx(int64_t code)
{
    switch (code) {
    case 1: return NPU_DTYPE_FP32;
    case 2: return NPU_DTYPE_UINT8;
    case 3: return NPU_DTYPE_INT8;
    case 4: return NPU_DTYPE_UINT16;
    case 5: return NPU_DTYPE_INT16;
    case 6: return NPU_DTYPE_INT32;
    case 7: return NPU_DTYPE_INT64;
    case 9: return NPU_DTYPE_BOOL;
    case 10: return NPU_DTYPE_FP16;
    case 11: return NPU_DTYPE_FP64;
    case 12: return NPU_DTYPE_UINT32;
    case 13: return NPU_DTYPE_UINT64;
    default: return NPU_DTYPE_UNDEFINED;
    }
}

enum npu_status
cpu_k_cast(CPU_KERNEL_ARGS)
{
    /* `to` is advisory: the caller allocated the output with the inferred dtype; if the
     * attribute is there it must agree */
    int64_t to = npu_attrs_int(attrs, "to", -1);
    enum npu_dtype dt = out[0]->dtype;
    if (to >= 0 && cpu_dtype_from_onnx(to) != dt) {
        if (cpu_dtype_from_onnx(to) == NPU_DTYPE_UNDEFINED)
            return KUNSUP("cast to ONNX data type %lld is not supported", (long long)to);
        return KINVAL("attribute to=%lld disagrees with output dtype %s", (long long)to,
                      npu_dtype_name(dt));
    }
    return cast_to(ctx, in[0], out[0], dt);
}

enum npu_status
cpu_k_cast_like(CPU_KERNEL_ARGS)
{
    return cast_to(ctx, in[0], out[0], in[1]->dtype);
}
