/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-attn16.c: a decode step's attention over an fp16 NC1HWC2 KV cache read in
 * place (declared in npu/npu-cpu.h). Per K / V head: the scores are one dot product per key,
 * each summing head_dim / 8 atoms (one atom = 8 channels of one key, 16 bytes, the
 * atoms of one key a surface apart); the softmax is over the slots in fp32; the
 * product with V walks each surface once, the probabilities times 8 channels of a
 * key added into 8 accumulators, so it needs no horizontal sums. The widening of the
 * fp16 values is the only per-ISA part: F16C (VCVTPH2PS) on x86-64 when the CPU has
 * it, NEON's FCVTL on aarch64, npu_fp16_to_fp32 elsewhere; all three are exact (every
 * fp16 value is an fp32 value), so they differ only in the order of the fp32 sums.
 *
 * Each query row reads only the slots up to its last one the mask leaves on
 * (npu_cpu_attn16_read_slots): the trailing slots a decode step's mask switches off
 * (NPU_ATTN16_MASK_OFF, the empty part of a static cache) are neither read nor summed. Their
 * softmax weights would be exp(score - 10000 - max), which is exactly 0 in fp32 unless the
 * scores differ by more than about 9,900, and 0 x V adds nothing to the accumulators: the
 * result is the same bits as over all the slots (the sums run in the same order over the
 * same prefix), and a NaN or garbage row in an empty slot no longer reaches it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-cpu.h"
#include "npu/npu-fp16.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#define DOM "cpu"
#define C2 8 /* fp16 channels per 16-byte atom */

/* ---- scalar ----------------------------------------------------------------------------- */

static void
dot_scalar(const struct npu_attn16_cache *k, int64_t row0, int64_t n, const float *q, int64_t hd,
           float *s)
{
    for (int64_t j = 0; j < n; j++) {
        float acc = 0.0f;
        for (int64_t c1 = 0; c1 < hd / C2; c1++) {
            const uint16_t *a = k->base + c1 * k->surf + (row0 + j) * C2;
            for (int e = 0; e < C2; e++)
                acc += q[c1 * C2 + e] * npu_fp16_to_fp32(a[e]);
        }
        s[j] = acc;
    }
}

static void
axpy_scalar(const struct npu_attn16_cache *v, int64_t row0, int64_t n, const float *p, int64_t hd,
            float *y)
{
    for (int64_t c1 = 0; c1 < hd / C2; c1++) {
        float acc[C2] = {0};
        for (int64_t j = 0; j < n; j++) {
            const uint16_t *a = v->base + c1 * v->surf + (row0 + j) * C2;
            for (int e = 0; e < C2; e++)
                acc[e] += p[j] * npu_fp16_to_fp32(a[e]);
        }
        memcpy(y + c1 * C2, acc, sizeof(acc));
    }
}

/* ---- x86-64: F16C ------------------------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_F16C_PATH 1
__attribute__((target("avx,f16c"))) static void
dot_f16c(const struct npu_attn16_cache *k, int64_t row0, int64_t n, const float *q, int64_t hd,
         float *s)
{
    for (int64_t j = 0; j < n; j++) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t c1 = 0; c1 < hd / C2; c1++) {
            const uint16_t *a = k->base + c1 * k->surf + (row0 + j) * C2;
            __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)a));
            acc = _mm256_add_ps(acc, _mm256_mul_ps(kv, _mm256_loadu_ps(q + c1 * C2)));
        }
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
        s[j] = _mm_cvtss_f32(h);
    }
}

__attribute__((target("avx,f16c"))) static void
axpy_f16c(const struct npu_attn16_cache *v, int64_t row0, int64_t n, const float *p, int64_t hd,
          float *y)
{
    for (int64_t c1 = 0; c1 < hd / C2; c1++) {
        const uint16_t *a = v->base + c1 * v->surf + row0 * C2;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t j = 0;
        for (; j + 2 <= n; j += 2) {
            __m256 v0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + j * C2)));
            __m256 v1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + (j + 1) * C2)));
            acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_set1_ps(p[j]), v0));
            acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_set1_ps(p[j + 1]), v1));
        }
        for (; j < n; j++) {
            __m256 v0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + j * C2)));
            acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_set1_ps(p[j]), v0));
        }
        _mm256_storeu_ps(y + c1 * C2, _mm256_add_ps(acc0, acc1));
    }
}

static int
have_f16c(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}
#endif

/* ---- aarch64: NEON ------------------------------------------------------------------------ */

#if defined(__aarch64__)
#define HAVE_NEON_PATH 1
static void
dot_neon(const struct npu_attn16_cache *k, int64_t row0, int64_t n, const float *q, int64_t hd,
         float *s)
{
    for (int64_t j = 0; j < n; j++) {
        float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
        for (int64_t c1 = 0; c1 < hd / C2; c1++) {
            const uint16_t *a = k->base + c1 * k->surf + (row0 + j) * C2;
            float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(a));
            lo = vfmaq_f32(lo, vcvt_f32_f16(vget_low_f16(h)), vld1q_f32(q + c1 * C2));
            hi = vfmaq_f32(hi, vcvt_high_f32_f16(h), vld1q_f32(q + c1 * C2 + 4));
        }
        s[j] = vaddvq_f32(vaddq_f32(lo, hi));
    }
}

static void
axpy_neon(const struct npu_attn16_cache *v, int64_t row0, int64_t n, const float *p, int64_t hd,
          float *y)
{
    for (int64_t c1 = 0; c1 < hd / C2; c1++) {
        const uint16_t *a = v->base + c1 * v->surf + row0 * C2;
        float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
        for (int64_t j = 0; j < n; j++) {
            float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(a + j * C2));
            lo = vfmaq_n_f32(lo, vcvt_f32_f16(vget_low_f16(h)), p[j]);
            hi = vfmaq_n_f32(hi, vcvt_high_f32_f16(h), p[j]);
        }
        vst1q_f32(y + c1 * C2, lo);
        vst1q_f32(y + c1 * C2 + 4, hi);
    }
}
#endif

/* ---- dispatch ----------------------------------------------------------------------------- */

enum isa { ISA_UNSET = -1, ISA_SCALAR, ISA_F16C, ISA_NEON };

static enum isa
pick_isa(void)
{
    static int chosen = ISA_UNSET; /* benign race: every thread computes the same answer */
    if (chosen != ISA_UNSET)
        return (enum isa)chosen;
    const char *e = getenv("NPU_CPU_ATTN16");
    enum isa isa = ISA_SCALAR;
    if (!e || strcmp(e, "scalar")) {
#ifdef HAVE_F16C_PATH
        if (have_f16c())
            isa = ISA_F16C;
#endif
#ifdef HAVE_NEON_PATH
        isa = ISA_NEON;
#endif
    }
    chosen = isa;
    return isa;
}

const char *
npu_cpu_attn16_isa(void)
{
    switch (pick_isa()) {
    case ISA_F16C: return "f16c";
    case ISA_NEON: return "neon";
    default: return "scalar";
    }
}

static void
dot(enum isa isa, const struct npu_attn16_cache *k, int64_t row0, int64_t n, const float *q,
    int64_t hd, float *s)
{
#ifdef HAVE_F16C_PATH
    if (isa == ISA_F16C) {
        dot_f16c(k, row0, n, q, hd, s);
        return;
    }
#endif
#ifdef HAVE_NEON_PATH
    if (isa == ISA_NEON) {
        dot_neon(k, row0, n, q, hd, s);
        return;
    }
#endif
    (void)isa;
    dot_scalar(k, row0, n, q, hd, s);
}

static void
axpy(enum isa isa, const struct npu_attn16_cache *v, int64_t row0, int64_t n, const float *p,
     int64_t hd, float *y)
{
#ifdef HAVE_F16C_PATH
    if (isa == ISA_F16C) {
        axpy_f16c(v, row0, n, p, hd, y);
        return;
    }
#endif
#ifdef HAVE_NEON_PATH
    if (isa == ISA_NEON) {
        axpy_neon(v, row0, n, p, hd, y);
        return;
    }
#endif
    (void)isa;
    axpy_scalar(v, row0, n, p, hd, y);
}

int64_t
npu_cpu_attn16_read_slots(const float *mask_row, int64_t slots)
{
    int64_t n = slots;
    while (n > 0 && mask_row[n - 1] <= NPU_ATTN16_MASK_OFF)
        n--;
    return n ? n : slots; /* every slot off: all of them, as a softmax over the row would */
}

enum npu_status
npu_cpu_attn16_decode(const struct npu_attn16_shape *sh, const float *q, const float *mask,
                      const struct npu_attn16_cache *k, const struct npu_attn16_cache *v,
                      int64_t h0, int64_t h1, float *work, float *y)
{
    return npu_cpu_attn16_decode_read(sh, q, mask, k, v, h0, h1, work, y, NULL);
}

enum npu_status
npu_cpu_attn16_decode_read(const struct npu_attn16_shape *sh, const float *q, const float *mask,
                           const struct npu_attn16_cache *k, const struct npu_attn16_cache *v,
                           int64_t h0, int64_t h1, float *work, float *y, int64_t *read)
{
    if (!sh || !q || !mask || !k || !v || !k->base || !v->base || !work || !y) {
        npu_err(DOM, "attn16: an argument is NULL");
        return NPU_ERR_INVALID;
    }
    const int64_t hd = sh->head_dim, T = sh->slots, G = sh->group, KVH = sh->kv_heads;
    if (hd <= 0 || hd % C2 || T <= 0 || G <= 0 || KVH <= 0) {
        npu_err(DOM,
                "attn16: head_dim %lld must be a positive multiple of %d; slots %lld, "
                "group %lld and kv heads %lld positive",
                (long long)hd, C2, (long long)T, (long long)G, (long long)KVH);
        return NPU_ERR_INVALID;
    }
    if (h0 < 0 || h1 <= h0 || h1 > KVH) {
        npu_err(DOM, "attn16: head range %lld..%lld outside 0..%lld", (long long)h0, (long long)h1,
                (long long)KVH);
        return NPU_ERR_INVALID;
    }
    if (k->surf < KVH * T * C2 || v->surf < KVH * T * C2) {
        npu_err(DOM, "attn16: surface strides %lld / %lld below the %lld x %lld rows' %lld",
                (long long)k->surf, (long long)v->surf, (long long)KVH, (long long)T,
                (long long)(KVH * T * C2));
        return NPU_ERR_INVALID;
    }
    const enum isa isa = pick_isa();
    int64_t most = 0;
    /* query rows outside, heads inside: each mask row scanned once for its slots, not once a
     * head (each (head, row) is its own sum: the same bits in either order) */
    for (int64_t g = 0; g < G; g++) {
        const float *mr = mask + g * T;
        const int64_t n = npu_cpu_attn16_read_slots(mr, T);
        most = NPU_MAX(most, n);
        for (int64_t h = h0; h < h1; h++) {
            const float *qr = q + (h * G + g) * hd;
            dot(isa, k, h * T, n, qr, hd, work);
            float mx = -INFINITY;
            for (int64_t j = 0; j < n; j++) {
                work[j] = work[j] * sh->scale + mr[j];
                mx = work[j] > mx ? work[j] : mx;
            }
            float sum = 0.0f;
            for (int64_t j = 0; j < n; j++) {
                work[j] = expf(work[j] - mx);
                sum += work[j];
            }
            const float inv = 1.0f / sum;
            for (int64_t j = 0; j < n; j++)
                work[j] *= inv;
            axpy(isa, v, h * T, n, work, hd, y + (h * G + g) * hd);
        }
    }
    if (read)
        *read = most;
    return NPU_OK;
}
