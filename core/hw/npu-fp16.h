/* SPDX-License-Identifier: MIT */
/*
 * npu-fp16.h: IEEE 754 binary16 <-> binary32 conversion for packing NPU tensors and reading
 * them back. fp32 -> fp16 rounds to nearest, ties to even; overflow gives +-inf; results
 * below the fp16 normal range become correctly rounded subnormals (or +-0). NaNs stay NaNs:
 * they come back quiet with the top payload bits preserved (the behaviour of x86 F16C and
 * of gcc's _Float16, which the tests compare against exhaustively).
 * The _n versions convert arrays with branch-free loops the compiler vectorises; they give
 * bit-identical results to the scalar ones. They assume the default FP environment
 * (round-to-nearest), which is what C programs run in unless they change it.
 */
#ifndef NPU_FP16_H
#define NPU_FP16_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint16_t npu_fp32_to_fp16(float f);
float npu_fp16_to_fp32(uint16_t h);
/* Same conversions on raw fp32 bit patterns. */
uint16_t npu_fp32_bits_to_fp16(uint32_t bits);
uint32_t npu_fp16_to_fp32_bits(uint16_t h);

/* Bulk conversions; src and dst must not overlap. */
void npu_fp32_to_fp16_n(uint16_t *dst, const float *src, size_t n);
void npu_fp16_to_fp32_n(float *dst, const uint16_t *src, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* NPU_FP16_H */
