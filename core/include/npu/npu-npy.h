/* SPDX-License-Identifier: MIT */
/*
 * npu-npy.h: NumPy .npy files, the format every command-line tool (npu-run,
 * the tests, the conformance runner) uses for tensors in and out
 * (docs/architecture.md: "Tensors in and out of command-line tools: NumPy").
 *
 * Reading accepts format versions 1.0, 2.0 and 3.0, C order, little-endian
 * (or byte-order-free '|') dtypes f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, up to
 * NPU_MAX_DIMS dims. Fortran order, big-endian data, object and structured
 * dtypes are refused with a message naming the problem. The header and the
 * data size are validated against the buffer: a truncated or corrupt file is
 * an error (NPU_ERR_CORRUPT), never a crash. fp16 data is kept as raw IEEE
 * half bits, as in struct npu_tensor.
 *
 * Writing produces version 1.0, or 2.0 when the header would not fit 1.0's
 * 16-bit length, padded so that the data starts on a 64-byte boundary.
 */
#ifndef NPU_NPY_H
#define NPU_NPY_H

#include <stddef.h>

#include "npu/npu-common.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest header we parse (numpy's own default limit is 10000 bytes). */
#define NPU_NPY_MAX_HEADER (1u << 20)

/*
 * Decodes an .npy image of len bytes. On success *out gets dtype and shape and
 * a newly allocated, 64-byte aligned copy of the data (at least 1 byte even
 * for empty arrays), which the caller frees with npu_npy_free(). `what` names
 * the source in error messages (a file name; may be NULL). On failure *out is
 * zeroed and the reason is logged.
 */
enum npu_status npu_npy_decode(const void *buf, size_t len, const char *what,
                               struct npu_tensor *out);

/* Reads and decodes the file at path (as npu_npy_decode). */
enum npu_status npu_npy_read(const char *path, struct npu_tensor *out);

/*
 * Encodes t (dtype, shape, t->data row-major; t->data may be NULL only when t
 * has no elements) as an .npy image in a new malloc'd buffer (*buf, *len;
 * caller frees with free()). UNDEFINED dtypes and ndim outside 0..NPU_MAX_DIMS
 * are refused.
 */
enum npu_status npu_npy_encode(const struct npu_tensor *t, void **buf, size_t *len);

/* Encodes t and writes it to path (created or truncated). */
enum npu_status npu_npy_write(const char *path, const struct npu_tensor *t);

/* Frees the data of a tensor that npu_npy_decode/npu_npy_read filled, and
 * zeroes it. NULL and zeroed tensors are accepted. */
void npu_npy_free(struct npu_tensor *t);

/* NumPy's descr string for a dtype ("<f4", "|b1", ...); NULL if none. */
const char *npu_npy_descr(enum npu_dtype t);

#ifdef __cplusplus
}
#endif

#endif /* NPU_NPY_H */
