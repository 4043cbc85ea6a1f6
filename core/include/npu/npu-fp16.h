/* SPDX-License-Identifier: MIT */
/*
 * npu-fp16.h: IEEE 754 binary16 <-> binary32/binary64 conversion, the one implementation every
 * layer uses (NPU tensors, CPU kernels, simulator, compiler constants, tools, GStreamer
 * elements). fp32 -> fp16 rounds to nearest, ties to even; overflow gives +-inf; results below
 * the fp16 normal range become correctly rounded subnormals (or +-0). NaNs stay NaNs: they
 * come back quiet with the top payload bits preserved (the behaviour of x86 F16C and of gcc's
 * _Float16, which tests/util/test-fp16.c compares against exhaustively). fp16 -> fp32 is exact.
 *
 * The scalar conversions are inline (straight-line integer/float arithmetic with selects, no
 * branches), so they cost a few instructions in a caller's loop and vectorise there too. The
 * _n versions convert arrays (core/util/npu-fp16.c, built for the vectoriser) and give
 * bit-identical results. All of them assume the default FP environment (round-to-nearest),
 * which is what C programs run in unless they change it.
 */
#ifndef NPU_FP16_H
#define NPU_FP16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The bit pattern of a float and back (memcpy: the one aliasing-safe way; it compiles to a
 * register move). */
static inline uint32_t
npu_f32_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float
npu_bits_f32(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Branch-free c ? a : b for c in {0, 1} (an implementation detail of the conversions: it keeps
 * the array loops free of control flow). */
static inline uint32_t
npu_fp16_select(uint32_t c, uint32_t a, uint32_t b)
{
    uint32_t m = 0u - c;

    return (a & m) | (b & ~m);
}

/* fp32 bit pattern -> fp16. Normal range: rebias the exponent (127 -> 15), then round the 13
 * dropped bits to nearest even (a carry into the exponent is the right result, up to inf).
 * Below 2^-14 the FPU does the rounding: adding 0.5f to |x| < 2^-14 leaves a float whose ulp
 * is 2^-24 (the fp16 subnormal step), so round-to-nearest-even rounds exactly as binary16
 * needs. */
static inline uint16_t
npu_fp32_bits_to_fp16(uint32_t x)
{
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    uint32_t norm = (ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13;
    uint32_t sub = npu_f32_bits(npu_bits_f32(ax) + 0.5f) - 0x3f000000u;
    /* NaN: quiet bit set, top 10 payload bits kept. */
    uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
    uint32_t h;

    h = npu_fp16_select(ax < 0x38800000u, sub, norm);
    h = npu_fp16_select(ax >= 0x47800000u, 0x7c00u, h); /* >= 65536 and inf; 65520.. round up */
    h = npu_fp16_select(ax > 0x7f800000u, nan, h);
    return (uint16_t)(h | sign);
}

/* fp16 -> fp32 bit pattern, exact. Finite values (normal and subnormal): multiplying the
 * shifted fp16 bits by 2^112 rescales the exponent bias (15 -> 127) exactly. inf and NaN:
 * all-ones exponent, payload kept, NaN quieted. */
static inline uint32_t
npu_fp16_to_fp32_bits(uint16_t hv)
{
    uint32_t h = hv;
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    uint32_t fin = npu_f32_bits(npu_bits_f32(em << 13) * 0x1p112f);
    uint32_t spec = 0x7f800000u | (em << 13) | ((uint32_t)(em > 0x7c00u) << 22);

    return npu_fp16_select(em >= 0x7c00u, spec, fin) | sign;
}

static inline uint16_t
npu_fp32_to_fp16(float f)
{
    return npu_fp32_bits_to_fp16(npu_f32_bits(f));
}

static inline float
npu_fp16_to_fp32(uint16_t h)
{
    return npu_bits_f32(npu_fp16_to_fp32_bits(h));
}

/* fp64 -> fp16 in ONE rounding (to nearest even; going through fp32 could round twice), for
 * ONNX Cast from double and from the wide integers. Overflow gives +-inf; NaN gives the
 * canonical quiet NaN 0x7e00 with the sign kept (no payload). */
uint16_t npu_fp64_to_fp16(double d);

/* Bulk conversions; src and dst must not overlap. */
void npu_fp32_to_fp16_n(uint16_t *dst, const float *src, size_t n);
void npu_fp16_to_fp32_n(float *dst, const uint16_t *src, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* NPU_FP16_H */
