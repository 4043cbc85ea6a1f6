/* SPDX-License-Identifier: MIT */
/* npu-tensor.c: element-type tables, tensor size arithmetic (overflow-checked,
 * since dims come from untrusted model files) and element loads of any dtype. */
#include "npu/npu-tensor.h"

#include "npu/npu-fp16.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[NPU_DTYPE_COUNT] = {[NPU_DTYPE_UNDEFINED] = {"undef", 0},
#define NPU_DT_INFO(e, n, s) [NPU_DTYPE_##e] = {n, s},
                                 NPU_DTYPE_LIST(NPU_DT_INFO)
#undef NPU_DT_INFO
};

size_t
npu_dtype_size(enum npu_dtype t)
{
    return (unsigned)t < NPU_DTYPE_COUNT ? dtype_info[t].size : 0;
}

const char *
npu_dtype_name(enum npu_dtype t)
{
    return (unsigned)t < NPU_DTYPE_COUNT ? dtype_info[t].name : "undef";
}

enum npu_dtype
npu_dtype_from_name(const char *name)
{
    for (int i = 1; i < NPU_DTYPE_COUNT; i++)
        if (!strcmp(dtype_info[i].name, name))
            return (enum npu_dtype)i;
    return NPU_DTYPE_UNDEFINED;
}

bool
npu_dtype_is_float(enum npu_dtype t)
{
    return t == NPU_DTYPE_FP32 || t == NPU_DTYPE_FP16 || t == NPU_DTYPE_FP64;
}

bool
npu_dtype_is_int(enum npu_dtype t)
{
    switch (t) {
    case NPU_DTYPE_INT8:
    case NPU_DTYPE_UINT8:
    case NPU_DTYPE_INT16:
    case NPU_DTYPE_INT32:
    case NPU_DTYPE_INT64:
    case NPU_DTYPE_UINT16:
    case NPU_DTYPE_UINT32:
    case NPU_DTYPE_UINT64: return true;
    default: return false;
    }
}

int64_t
npu_tensor_numel(const struct npu_tensor *t)
{
    if (t->ndim < 0 || t->ndim > NPU_MAX_DIMS)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->dims[i] < 0)
            return -1;
        if (t->dims[i] && n > INT64_MAX / t->dims[i])
            return -1;
        n *= t->dims[i];
    }
    return n;
}

int64_t
npu_tensor_nbytes(const struct npu_tensor *t)
{
    int64_t n = npu_tensor_numel(t);
    size_t es = npu_dtype_size(t->dtype);
    if (n < 0 || es == 0 || n > INT64_MAX / (int64_t)es)
        return -1;
    return n * (int64_t)es;
}

double
npu_dtype_load_f64(enum npu_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case NPU_DTYPE_FP32: {
        /* through memcpy: the ONNX importer's fp32 constants may lie unaligned in the model
         * file's mapping (the same single load where the target allows it) */
        float f;
        memcpy(&f, (const char *)data + i * (int64_t)sizeof(float), sizeof(f));
        return f;
    }
    case NPU_DTYPE_FP16: return npu_fp16_to_fp32(((const uint16_t *)data)[i]);
    case NPU_DTYPE_FP64: return ((const double *)data)[i];
    case NPU_DTYPE_INT8: return ((const int8_t *)data)[i];
    case NPU_DTYPE_UINT8: return ((const uint8_t *)data)[i];
    case NPU_DTYPE_BOOL: return ((const uint8_t *)data)[i] != 0;
    case NPU_DTYPE_INT16: return ((const int16_t *)data)[i];
    case NPU_DTYPE_UINT16: return ((const uint16_t *)data)[i];
    case NPU_DTYPE_INT32: return ((const int32_t *)data)[i];
    case NPU_DTYPE_UINT32: return ((const uint32_t *)data)[i];
    case NPU_DTYPE_INT64: return (double)((const int64_t *)data)[i];
    case NPU_DTYPE_UINT64: return (double)((const uint64_t *)data)[i];
    default: return 0;
    }
}

int64_t
npu_dtype_load_i64(enum npu_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case NPU_DTYPE_INT64: return ((const int64_t *)data)[i];
    case NPU_DTYPE_UINT64: {
        uint64_t u = ((const uint64_t *)data)[i];
        return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    case NPU_DTYPE_INT32: return ((const int32_t *)data)[i];
    case NPU_DTYPE_UINT32: return ((const uint32_t *)data)[i];
    case NPU_DTYPE_INT16: return ((const int16_t *)data)[i];
    case NPU_DTYPE_UINT16: return ((const uint16_t *)data)[i];
    case NPU_DTYPE_INT8: return ((const int8_t *)data)[i];
    case NPU_DTYPE_UINT8: return ((const uint8_t *)data)[i];
    case NPU_DTYPE_BOOL: return ((const uint8_t *)data)[i] != 0;
    default: {
        /* floats: C leaves out-of-range conversion undefined; saturate, NaN -> 0 */
        double d = npu_dtype_load_f64(dt, data, i);
        if (!(d == d))
            return 0;
        if (d <= -9223372036854775808.0)
            return INT64_MIN;
        if (d >= 9223372036854775808.0)
            return INT64_MAX;
        return (int64_t)d;
    }
    }
}
