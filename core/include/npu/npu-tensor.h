/* SPDX-License-Identifier: MIT */
/*
 * npu-tensor.h: element types and a plain tensor view shared by the CPU
 * kernels, the compiler IR and the model API. A view does not own its data
 * unless the code that made it says so; dims are row-major (C order), as in
 * ONNX and NumPy.
 */
#ifndef NPU_TENSOR_H
#define NPU_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_MAX_DIMS 8

/* X(enum suffix, name in IR text and messages, element bytes) */
#define NPU_DTYPE_LIST(X)                                                                          \
    X(FP32, "f32", 4)                                                                              \
    X(FP16, "f16", 2)                                                                              \
    X(INT8, "i8", 1)                                                                               \
    X(UINT8, "u8", 1)                                                                              \
    X(INT16, "i16", 2)                                                                             \
    X(INT32, "i32", 4)                                                                             \
    X(INT64, "i64", 8)                                                                             \
    X(BOOL, "bool", 1)                                                                             \
    X(FP64, "f64", 8)                                                                              \
    X(UINT16, "u16", 2)                                                                            \
    X(UINT32, "u32", 4)                                                                            \
    X(UINT64, "u64", 8)

enum npu_dtype {
    NPU_DTYPE_UNDEFINED = 0,
#define NPU_DT_ENUM(e, n, s) NPU_DTYPE_##e,
    NPU_DTYPE_LIST(NPU_DT_ENUM)
#undef NPU_DT_ENUM
        NPU_DTYPE_COUNT
};

/* Element size in bytes (0 for UNDEFINED or out of range). */
size_t npu_dtype_size(enum npu_dtype t);
/* Short name ("f32", "i64", ...); "undef" for anything else. */
const char *npu_dtype_name(enum npu_dtype t);
/* Inverse of npu_dtype_name; NPU_DTYPE_UNDEFINED if unknown. */
enum npu_dtype npu_dtype_from_name(const char *name);
bool npu_dtype_is_float(enum npu_dtype t);
bool npu_dtype_is_int(enum npu_dtype t); /* signed or unsigned integer, not bool */

struct npu_tensor {
    enum npu_dtype dtype;
    int ndim; /* 0 = scalar */
    int64_t dims[NPU_MAX_DIMS];
    void *data; /* row-major elements, or NULL if not materialised */
    /* Quantisation (int8/uint8 tensors carrying QDQ parameters); scale 0 = none. */
    float qscale;
    int32_t qzero;
};

/* Number of elements (1 for a scalar). Returns -1 on overflow or negative dims. */
int64_t npu_tensor_numel(const struct npu_tensor *t);
/* Bytes of data (numel * element size), or -1 on overflow. */
int64_t npu_tensor_nbytes(const struct npu_tensor *t);

/* Element i of row-major data of dtype dt as a double: exact for every dtype but the 64-bit
 * integers (rounded to nearest), bool as 0 or 1, fp16 through npu-fp16.h; 0 for UNDEFINED.
 * fp32 data may be unaligned (loaded with memcpy). */
double npu_dtype_load_f64(enum npu_dtype dt, const void *data, int64_t i);
/* The same element as an int64: integers exact (uint64 above INT64_MAX saturates), bool 0 or 1,
 * floats truncated toward zero and saturated to the int64 range, NaN gives 0. */
int64_t npu_dtype_load_i64(enum npu_dtype dt, const void *data, int64_t i);

#ifdef __cplusplus
}
#endif

#endif /* NPU_TENSOR_H */
