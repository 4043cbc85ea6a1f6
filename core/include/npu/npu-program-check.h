/* SPDX-License-Identifier: MIT */
/*
 * npu-program-check.h: the parts of the program executor that do not touch a
 * device: whole-program validation and the layout/dtype conversions. Kept
 * apart from npu-program-exec.h (which includes npu-device.h) so that code
 * that checks or converts programs without running them needs no device API:
 * the artifact loader (npu_program_validate), the compile driver
 * (compiler/driver/npu-build.c) and the CPU cost measurement
 * (compiler/partition/npu-cpucost.c, the conversions) include this.
 */
#ifndef NPU_PROGRAM_CHECK_H
#define NPU_PROGRAM_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"
#include "npu/npu-program.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Checks every count, index, enum value, offset, size and relocation of a
 * program against the others (the arrays it points to must exist for the
 * counts it gives: the caller guarantees the pointers, this function the
 * consistency). On failure writes a message naming the field to msg (may be
 * NULL) and returns NPU_ERR_CORRUPT. npu_prog_model_create calls it; the
 * artifact loader calls it too, after its own file-level checks.
 */
enum npu_status npu_program_validate(const struct npu_program *p, char *msg, size_t msg_len);

/* ---- conversions (also used by the compiler's tests and tools) --------- */

/* Memory dtype of a program tensor (mem_dtype, or t.dtype when undefined). */
enum npu_dtype npu_prog_mem_dtype(const struct npu_prog_tensor *t);
/* Bytes the tensor's layout needs; UINT64_MAX if its description is inconsistent
 * (dims vs npu_c/npu_h/npu_w, npu_order, dtype, layout). */
uint64_t npu_prog_tensor_need(const struct npu_prog_tensor *t);
/* Whether a CONVERT from src to dst is supported (dtype pair, layouts, equal
 * element counts); if not, *why (may be NULL) says what is wrong. */
bool npu_prog_convert_ok(const struct npu_prog_tensor *src, const struct npu_prog_tensor *dst,
                         const char **why);
/*
 * Converts src's contents (laid out as src describes) into dst (as dst
 * describes). Both must satisfy npu_prog_convert_ok and be large enough;
 * tmp is scratch of npu_prog_convert_scratch(src, dst) bytes (may be NULL
 * when that is 0). Padding channels of NC1HWC2 destinations are zeroed.
 */
size_t npu_prog_convert_scratch(const struct npu_prog_tensor *src,
                                const struct npu_prog_tensor *dst);
enum npu_status npu_prog_convert(const struct npu_prog_tensor *src, const void *src_data,
                                 const struct npu_prog_tensor *dst, void *dst_data, void *tmp);

/* A running argmax: the first maximum (a later element wins only when strictly greater), as a
 * scan over floats from index 0 does; index -1 before any element. NaN is never greater, so a
 * NaN is kept only where it is the first element. */
struct npu_prog_argmax {
    int64_t index;
    float value;
};
/* Whether npu_prog_argmax reads t's memory dtype: fp16, fp32, or int8 with a finite positive
 * scale and an int8 zero point (a w8a8 LM head's logits, which its conversion dequantises). */
bool npu_prog_argmax_dtype_ok(const struct npu_prog_tensor *t);
/*
 * Continues acc's scan over t's elements in logical (row-major) order, element i numbered
 * base + i, read from data laid out as t describes (fp16, fp32 or int8 memory dtype, row-major
 * or NC1HWC2; the padding channels are not read): fp16 values are read as their exact fp32,
 * int8 ones as their dequantised fp32 (q - qzero) x qscale computed as the conversion to fp32
 * does, so the result is the one a scan over the converted tensor gives. Scanning several tensors
 * in turn with increasing bases gives the argmax of their concatenation.
 */
enum npu_status npu_prog_argmax(const struct npu_prog_tensor *t, const void *data, int64_t base,
                                struct npu_prog_argmax *acc);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PROGRAM_CHECK_H */
