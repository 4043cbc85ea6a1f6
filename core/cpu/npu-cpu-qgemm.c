/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-qgemm.c: the exact int8 product behind MatMulInteger, QLinearMatMul and
 * QLinearConv (npu-cpu-qgemm.h).
 *
 * Both operands are recoded so that one multiply-add instruction takes them whole: B as
 * signed bytes B' = B - cb (cb = 128 for uint8 B, else 0), packed in panels of 48 columns,
 * k in groups of 4 (panel p, group g: 48 columns x 4 bytes), with its column sums; A per
 * call as A' = A + ca in the byte type the kernel multiplies (unsigned on x86, signed for
 * NEON sdot), rows padded to a multiple of 4 with zeros. Then
 *     sum_k (A - azp)(B - bzp) = dot(A', B') - zb * rowsum(A') - za * colsum(B') + K za zb
 * with za = azp + ca and zb = bzp - cb, everything in uint32 (wrapping like the reference's
 * sums). Kernels, picked at run time by what the CPU has:
 *  - AVX-512 VNNI: vpdpbusd (u8 x s8, 4 products per lane, no saturation), 8 rows x 48
 *    columns in 24 registers, k in chunks of 512 so a panel's chunk (24 KB) stays in L1;
 *  - AVX-VNNI (VEX vpdpbusd on ymm, CPUs without AVX-512): 2 rows x 48 columns;
 *  - AVX2: bytes widened to int16 and vpmaddwd (exact; vpmaddubsw would saturate);
 *  - aarch64 with the dot-product extension: NEON sdot (s8 x s8);
 *  - portable C that the compiler vectorises, everywhere else.
 * Integer sums are exact, so every kernel and every thread count gives the same bytes.
 */
#include "npu-cpu-qgemm.h"
#include "npu-cpu-conv-direct.h"
#include "npu-cpu-gemm-packed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(NPU_CPU_NO_CLONES)
#define QG_X86 1
#include <cpuid.h>
#endif
#if defined(__x86_64__) || defined(__SSE2__)
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__GNUC__) && !defined(NPU_CPU_NO_CLONES)
#define QG_SDOT 1
#include <arm_neon.h>
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

#define QNR 48        /* panel width (columns) */
#define QGB (QNR * 4) /* bytes per group of 4 k in a panel */
#define QKC 128       /* groups per k chunk (512 k) */
#define QMB 64        /* rows per task */

struct cpu_qpack {
    int64_t K, N, kg, npanels;
    int32_t cb;      /* B' = B - cb */
    size_t bytes;    /* counted against the budget (0: not counted) */
    int8_t *p;       /* [npanels][kg][QNR][4] */
    int32_t *colsum; /* [N] sums of B' over k */
};

/* ---- kernels: t[mr][48] (+)= A'[mr][0..4 kc) . panel chunk -------------------------------- */

typedef void (*qk_fn)(int mr, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b,
                      int32_t *t, bool load);

CPU_HOT static void
qk_portable(int mr, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t,
            bool load)
{
    for (int r = 0; r < mr; r++) {
        uint32_t acc[QNR];
        if (load)
            memcpy(acc, t + r * QNR, sizeof(acc));
        else
            memset(acc, 0, sizeof(acc));
        const uint8_t *ar = a + r * lda;
        const int8_t *bp = b;
        for (int64_t g = 0; g < kc; g++, bp += QGB) {
            const int32_t a0 = ar[4 * g], a1 = ar[4 * g + 1], a2 = ar[4 * g + 2],
                          a3 = ar[4 * g + 3];
            for (int c = 0; c < QNR; c++)
                acc[c] += (uint32_t)(a0 * bp[4 * c] + a1 * bp[4 * c + 1] + a2 * bp[4 * c + 2] +
                                     a3 * bp[4 * c + 3]);
        }
        memcpy(t + r * QNR, acc, sizeof(acc));
    }
}

#ifdef QG_X86
#define QV_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))
/* one row's three accumulators: named variables (an array of vectors ended up partly on the
 * stack), rows past MR folded away after inlining */
#define QV_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define QV_DECL(r) __m512i c##r##0, c##r##1, c##r##2;
#define QV_INIT(r)                                                                                 \
    if (MR > r) {                                                                                  \
        if (load) {                                                                                \
            c##r##0 = _mm512_loadu_si512(t + r * QNR);                                             \
            c##r##1 = _mm512_loadu_si512(t + r * QNR + 16);                                        \
            c##r##2 = _mm512_loadu_si512(t + r * QNR + 32);                                        \
        } else {                                                                                   \
            c##r##0 = c##r##1 = c##r##2 = _mm512_setzero_si512();                                  \
        }                                                                                          \
    }
#define QV_STEP(r)                                                                                 \
    if (MR > r) {                                                                                  \
        int32_t av;                                                                                \
        memcpy(&av, ag + r * lda, 4);                                                              \
        const __m512i x = _mm512_set1_epi32(av);                                                   \
        c##r##0 = _mm512_dpbusd_epi32(c##r##0, x, b0);                                             \
        c##r##1 = _mm512_dpbusd_epi32(c##r##1, x, b1);                                             \
        c##r##2 = _mm512_dpbusd_epi32(c##r##2, x, b2);                                             \
    }
#define QV_STORE(r)                                                                                \
    if (MR > r) {                                                                                  \
        _mm512_storeu_si512(t + r * QNR, c##r##0);                                                 \
        _mm512_storeu_si512(t + r * QNR + 16, c##r##1);                                            \
        _mm512_storeu_si512(t + r * QNR + 32, c##r##2);                                            \
    }

QV_TARGET static inline __attribute__((always_inline)) void
qv_tile(const int MR, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t,
        bool load)
{
    QV_ROWS(QV_DECL)
    QV_ROWS(QV_INIT)
    const uint8_t *ag = a;
    for (int64_t g = 0; g < kc; g++, b += QGB, ag += 4) {
        const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64),
                      b2 = _mm512_loadu_si512(b + 128);
        QV_ROWS(QV_STEP)
    }
    QV_ROWS(QV_STORE)
}

#define QV_TILE(MR)                                                                                \
    QV_TARGET static void qv_tile##MR(int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b,  \
                                      int32_t *t, bool load)                                       \
    {                                                                                              \
        qv_tile(MR, kc, a, lda, b, t, load);                                                       \
    }
QV_TILE(8)
QV_TILE(4)
QV_TILE(2)
QV_TILE(1)

static void
qk_vnni(int mr, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    while (mr > 0) {
        int m = mr >= 8 ? 8 : mr >= 4 ? 4 : mr >= 2 ? 2 : 1;
        switch (m) {
        case 8: qv_tile8(kc, a, lda, b, t, load); break;
        case 4: qv_tile4(kc, a, lda, b, t, load); break;
        case 2: qv_tile2(kc, a, lda, b, t, load); break;
        default: qv_tile1(kc, a, lda, b, t, load); break;
        }
        mr -= m, a += m * lda, t += m * QNR;
    }
}

/* AVX2: 4 bytes of A widened to int16 and repeated over the register; 16 bytes of the panel
 * (4 columns x 4 k) widened likewise; vpmaddwd leaves each column's sum in two lanes. Two
 * rows share each widened piece of B, over half a panel (24 columns) at a time: 12
 * accumulators. */
#define QA_ACC(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define QA_DECL(v) __m256i c0##v = _mm256_setzero_si256(), c1##v = _mm256_setzero_si256();
#define QA_STEP(v)                                                                                 \
    {                                                                                              \
        const __m256i bw = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16 * v)));   \
        c0##v = _mm256_add_epi32(c0##v, _mm256_madd_epi16(x0, bw));                                \
        if (MR > 1)                                                                                \
            c1##v = _mm256_add_epi32(c1##v, _mm256_madd_epi16(x1, bw));                            \
    }
#define QA_STORE(v)                                                                                \
    _mm256_storeu_si256((__m256i *)(s0 + 8 * v), c0##v);                                           \
    if (MR > 1)                                                                                    \
        _mm256_storeu_si256((__m256i *)(s1 + 8 * v), c1##v);

__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
qa_half(const int MR, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t,
        bool load)
{
    QA_ACC(QA_DECL)
    for (int64_t g = 0; g < kc; g++, b += QGB) {
        int32_t av;
        memcpy(&av, a + 4 * g, 4);
        const __m256i x0 = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(av)));
        __m256i x1 = x0;
        if (MR > 1) {
            memcpy(&av, a + lda + 4 * g, 4);
            x1 = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(av)));
        }
        QA_ACC(QA_STEP)
    }
    uint32_t s0[QNR], s1[QNR];
    QA_ACC(QA_STORE)
    for (int r = 0; r < MR; r++) {
        const uint32_t *sr = r ? s1 : s0;
        uint32_t *tr = (uint32_t *)t + r * QNR;
        for (int c = 0; c < QNR / 2; c++)
            tr[c] = (load ? tr[c] : 0u) + sr[2 * c] + sr[2 * c + 1];
    }
}

__attribute__((target("avx2"))) static void
qa_half2(int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    qa_half(2, kc, a, lda, b, t, load);
}

__attribute__((target("avx2"))) static void
qa_half1(int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    qa_half(1, kc, a, lda, b, t, load);
}

static void
qk_avx2(int mr, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    for (int r = 0; r < mr; r += 2)
        for (int h = 0; h < 2; h++) {
            if (r + 1 < mr)
                qa_half2(kc, a + r * lda, lda, b + 96 * h, t + r * QNR + 24 * h, load);
            else
                qa_half1(kc, a + r * lda, lda, b + 96 * h, t + r * QNR + 24 * h, load);
        }
}

/* AVX-VNNI (VEX vpdpbusd on ymm, CPUs without AVX-512): two rows x 48 columns in 12
 * accumulators */
#define QW_ACC(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define QW_INIT(v)                                                                                 \
    __m256i c0##v =                                                                                \
        load ? _mm256_loadu_si256((const __m256i *)(t + 8 * v)) : _mm256_setzero_si256();          \
    __m256i c1##v = MR > 1 && load ? _mm256_loadu_si256((const __m256i *)(t + QNR + 8 * v))        \
                                   : _mm256_setzero_si256();
#define QW_STEP(v)                                                                                 \
    {                                                                                              \
        const __m256i bv = _mm256_loadu_si256((const __m256i *)(b + 32 * v));                      \
        c0##v = _mm256_dpbusd_avx_epi32(c0##v, x0, bv);                                            \
        if (MR > 1)                                                                                \
            c1##v = _mm256_dpbusd_avx_epi32(c1##v, x1, bv);                                        \
    }
#define QW_STORE(v)                                                                                \
    _mm256_storeu_si256((__m256i *)(t + 8 * v), c0##v);                                            \
    if (MR > 1)                                                                                    \
        _mm256_storeu_si256((__m256i *)(t + QNR + 8 * v), c1##v);

__attribute__((target("avx2,avxvnni"))) static inline __attribute__((always_inline)) void
qw_rows(const int MR, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t,
        bool load)
{
    QW_ACC(QW_INIT)
    for (int64_t g = 0; g < kc; g++, b += QGB) {
        int32_t av;
        memcpy(&av, a + 4 * g, 4);
        const __m256i x0 = _mm256_set1_epi32(av);
        __m256i x1 = x0;
        if (MR > 1) {
            memcpy(&av, a + lda + 4 * g, 4);
            x1 = _mm256_set1_epi32(av);
        }
        QW_ACC(QW_STEP)
    }
    QW_ACC(QW_STORE)
}

__attribute__((target("avx2,avxvnni"))) static void
qw_rows2(int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    qw_rows(2, kc, a, lda, b, t, load);
}

__attribute__((target("avx2,avxvnni"))) static void
qw_rows1(int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    qw_rows(1, kc, a, lda, b, t, load);
}

static void
qk_avxvnni(int mr, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t,
           bool load)
{
    for (int r = 0; r < mr; r += 2) {
        if (r + 1 < mr)
            qw_rows2(kc, a + r * lda, lda, b, t + r * QNR, load);
        else
            qw_rows1(kc, a + r * lda, lda, b, t + r * QNR, load);
    }
}
#endif

#ifdef QG_SDOT
/* NEON sdot: 4 signed bytes of A repeated over the register against 16 bytes of the panel
 * (4 columns x 4 k); two rows of 48 columns in 24 named accumulators */
#define QS_ACC(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define QS_INIT(v)                                                                                 \
    int32x4_t c0_##v = load ? vld1q_s32(t + 4 * v) : vdupq_n_s32(0);                               \
    int32x4_t c1_##v = MR > 1 && load ? vld1q_s32(t + QNR + 4 * v) : vdupq_n_s32(0);
#define QS_STEP(v)                                                                                 \
    {                                                                                              \
        const int8x16_t bv = vld1q_s8(b + 16 * v);                                                 \
        c0_##v = vdotq_s32(c0_##v, bv, x0);                                                        \
        if (MR > 1)                                                                                \
            c1_##v = vdotq_s32(c1_##v, bv, x1);                                                    \
    }
#define QS_STORE(v)                                                                                \
    vst1q_s32(t + 4 * v, c0_##v);                                                                  \
    if (MR > 1)                                                                                    \
        vst1q_s32(t + QNR + 4 * v, c1_##v);

__attribute__((target("arch=armv8.2-a+dotprod"))) static inline __attribute__((always_inline)) void
qs_rows(const int MR, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t,
        bool load)
{
    QS_ACC(QS_INIT)
    for (int64_t g = 0; g < kc; g++, b += QGB) {
        int32_t av;
        memcpy(&av, a + 4 * g, 4);
        const int8x16_t x0 = vreinterpretq_s8_s32(vdupq_n_s32(av));
        int8x16_t x1 = x0;
        if (MR > 1) {
            memcpy(&av, a + lda + 4 * g, 4);
            x1 = vreinterpretq_s8_s32(vdupq_n_s32(av));
        }
        QS_ACC(QS_STEP)
    }
    QS_ACC(QS_STORE)
}

__attribute__((target("arch=armv8.2-a+dotprod"))) static void
qs_rows2(int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    qs_rows(2, kc, a, lda, b, t, load);
}

__attribute__((target("arch=armv8.2-a+dotprod"))) static void
qs_rows1(int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    qs_rows(1, kc, a, lda, b, t, load);
}

static void
qk_sdot(int mr, int64_t kc, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *t, bool load)
{
    for (int r = 0; r < mr; r += 2) {
        if (r + 1 < mr)
            qs_rows2(kc, a + r * lda, lda, b, t + r * QNR, load);
        else
            qs_rows1(kc, a + r * lda, lda, b, t + r * QNR, load);
    }
}
#endif

/* ---- dispatch ---------------------------------------------------------------------------- */

enum { QL_PORTABLE, QL_AVX2, QL_VNNI, QL_SDOT, QL_AVXVNNI, QL_REF = 9 };
static int q_level = -1;

/* whether this CPU runs kernel `level` */
static bool
q_has(int level)
{
    switch (level) {
    case QL_PORTABLE: return true;
#ifdef QG_X86
    case QL_AVX2: __builtin_cpu_init(); return __builtin_cpu_supports("avx2");
    case QL_VNNI:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
    case QL_AVXVNNI: {
        /* CPUID.(7,1):EAX bit 4 (GCC 12's __builtin_cpu_supports("avxvnni") misses it) */
        unsigned a = 0, b = 0, c = 0, d = 0;
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
               (a & (1u << 4));
    }
#endif
#ifdef QG_SDOT
    case QL_SDOT: return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
    default: return false;
    }
}

static int
q_hw(void)
{
    static const int order[] = {QL_VNNI, QL_AVXVNNI, QL_SDOT, QL_AVX2};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (q_has(order[i]))
            return order[i];
    return QL_PORTABLE;
}

/* what npu-info prints: the kernel, and the variable when NPU_CPU_QGEMM chose it or was not
 * honoured (an unknown value, or a kernel this CPU lacks), so the line never hides a setting */
static char q_note[96];
static char q_name[160];

/* what the CPU has, lowered by NPU_CPU_QGEMM=ref|portable|avx2|avxvnni (benchmarks, checks) */
static int
q_best(void)
{
    const char *e = getenv("NPU_CPU_QGEMM");
    int lv = -1;
    if (e && !strcmp(e, "ref"))
        lv = QL_REF;
    else if (e && !strcmp(e, "portable"))
        lv = QL_PORTABLE;
    else if (e && !strcmp(e, "avx2") && q_has(QL_AVX2))
        lv = QL_AVX2;
    else if (e && !strcmp(e, "avxvnni") && q_has(QL_AVXVNNI))
        lv = QL_AVXVNNI;
    if (lv >= 0)
        snprintf(q_note, sizeof(q_note), "NPU_CPU_QGEMM=%.40s", e);
    else if (e && *e)
        snprintf(q_note, sizeof(q_note), "NPU_CPU_QGEMM=%.40s ignored: not a kernel this CPU has",
                 e);
    return lv >= 0 ? lv : q_hw();
}

static const char *
q_level_name(int lv)
{
    switch (lv) {
    case QL_VNNI: return "AVX-512 VNNI (vpdpbusd)";
    case QL_AVX2: return "AVX2 (vpmaddwd)";
    case QL_AVXVNNI: return "AVX-VNNI (256-bit vpdpbusd)";
    case QL_SDOT: return "NEON sdot";
    case QL_REF: return "reference loops";
    default: return "portable C";
    }
}

int
cpu_qgemm_force(int level)
{
    q_note[0] = 0;
    if (level < 0)
        q_level = q_best();
    else if (level == QL_REF)
        q_level = QL_REF;
    else
        q_level = q_has(level) ? level : QL_PORTABLE;
    if (q_note[0])
        snprintf(q_name, sizeof(q_name), "%s (%s)", q_level_name(q_level), q_note);
    else
        snprintf(q_name, sizeof(q_name), "%s", q_level_name(q_level));
    return q_level;
}

static pthread_once_t q_once = PTHREAD_ONCE_INIT;

static void
q_init(void)
{
    if (q_level < 0)
        cpu_qgemm_force(-1);
}

static int
q_cur(void)
{
    pthread_once(&q_once, q_init);
    return q_level;
}

const char *
cpu_qgemm_path(void)
{
    q_cur();
    return q_name;
}

const char *
npu_cpu_int8_path(void)
{
    return cpu_qgemm_path();
}

bool
cpu_qgemm_on(void)
{
    return q_cur() != QL_REF;
}

static qk_fn
q_kernel(bool *a_signed)
{
    *a_signed = false;
    switch (q_cur()) {
#ifdef QG_X86
    case QL_VNNI: return qk_vnni;
    case QL_AVX2: return qk_avx2;
    case QL_AVXVNNI: return qk_avxvnni;
#endif
#ifdef QG_SDOT
    case QL_SDOT: *a_signed = true; return qk_sdot;
#endif
    default: return qk_portable;
    }
}

/* ---- packing ------------------------------------------------------------------------------ */

static struct cpu_qpack *
qpack_alloc(int64_t K, int64_t N, bool b_s8, bool budget)
{
    int64_t kg = NPU_DIV_ROUND_UP(K, (int64_t)4), np = NPU_DIV_ROUND_UP(N, (int64_t)QNR);
    size_t bytes = (size_t)(np * kg * QGB);
    if (budget && !cpu_mm_pack_budget_take(bytes + sizeof(int32_t) * (size_t)N))
        return NULL;
    struct cpu_qpack *p = calloc(1, sizeof(*p));
    void *d = NULL;
    int32_t *cs = calloc((size_t)NPU_MAX(N, (int64_t)1), sizeof(int32_t));
    if (!p || !cs || posix_memalign(&d, 64, NPU_MAX(bytes, (size_t)64))) {
        free(p);
        free(cs);
        if (budget)
            cpu_mm_pack_budget_give(bytes + sizeof(int32_t) * (size_t)N);
        return NULL;
    }
    p->K = K, p->N = N, p->kg = kg, p->npanels = np, p->cb = b_s8 ? 0 : 128;
    p->bytes = budget ? bytes + sizeof(int32_t) * (size_t)N : 0;
    p->p = d;
    p->colsum = cs;
    return p;
}

struct cpu_qpack *
cpu_qpack_new(const void *b, bool b_s8, int64_t sk, int64_t sn, int64_t K, int64_t N, bool budget)
{
    if (K < 1 || N < 1)
        return NULL;
    struct cpu_qpack *p = qpack_alloc(K, N, b_s8, budget);
    if (!p)
        return NULL;
    const int8_t *bs = b;
    const uint8_t *bu = b;
    for (int64_t jp = 0; jp < p->npanels; jp++) {
        int64_t j0 = jp * QNR, nc = NPU_MIN((int64_t)QNR, N - j0);
        int8_t *d = p->p + jp * p->kg * QGB;
        memset(d, 0, (size_t)(p->kg * QGB));
        for (int64_t k = 0; k < K; k++) {
            int8_t *dk = d + (k / 4) * QGB + (k % 4);
            const int64_t o = k * sk + j0 * sn;
            for (int64_t q = 0; q < nc; q++) {
                int32_t v = b_s8 ? bs[o + q * sn] : (int32_t)bu[o + q * sn] - 128;
                dk[4 * q] = (int8_t)v;
                p->colsum[j0 + q] += v;
            }
        }
    }
    return p;
}

void
cpu_qpack_free(struct cpu_qpack *p)
{
    if (!p)
        return;
    if (p->bytes)
        cpu_mm_pack_budget_give(p->bytes);
    free(p->p);
    free(p->colsum);
    free(p);
}

/* ---- driver --------------------------------------------------------------------------------- */

struct qg_job {
    const struct cpu_qpack *pk;
    qk_fn fn;
    int mr;
    int64_t M, lda, mblocks, ldc;
    const uint8_t *A;    /* A' [M][lda], lda = 4 kg */
    const int32_t *rs;   /* row sums of A' */
    const int32_t *za;   /* [M] */
    const int32_t *zb;   /* [N] */
    const int32_t *bias; /* [M] added with int32 saturation (QLinearConv), or NULL */
    int32_t *C;
};

/* c = dot - zb rowsum(A') - za colsum(B') + K za zb, modulo 2^32 */
CPU_HOT static void
qg_epilogue(const uint32_t *restrict tr, int64_t nc, uint32_t rs, uint32_t za, uint32_t K,
            const uint32_t *restrict zb, const uint32_t *restrict cs, uint32_t *restrict c)
{
    const uint32_t kza = K * za;
    for (int64_t q = 0; q < nc; q++)
        c[q] = tr[q] - zb[q] * rs - za * cs[q] + kza * zb[q];
}

/* the same, then + b with int32 saturation (overflow: the result's sign differs from both
 * operands'), as the reference adds a bias to the finished sum */
CPU_HOT static void
qg_epilogue_bias(const uint32_t *restrict tr, int64_t nc, uint32_t rs, uint32_t za, uint32_t K,
                 const uint32_t *restrict zb, const uint32_t *restrict cs, int32_t b,
                 int32_t *restrict c)
{
    const uint32_t kza = K * za;
    for (int64_t q = 0; q < nc; q++) {
        const int32_t x = (int32_t)(tr[q] - zb[q] * rs - za * cs[q] + kza * zb[q]);
        const int32_t r = (int32_t)((uint32_t)x + (uint32_t)b);
        c[q] = ((x ^ r) & (b ^ r)) < 0 ? (x < 0 ? INT32_MIN : INT32_MAX) : r;
    }
}

static void
qg_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct qg_job *j = arg;
    const struct cpu_qpack *pk = j->pk;
    int32_t t[QMB * QNR] __attribute__((aligned(64)));
    for (int64_t task = begin; task < end; task++) {
        int64_t p = task / j->mblocks, r0 = (task % j->mblocks) * QMB;
        int64_t r1 = NPU_MIN(r0 + QMB, j->M);
        int64_t j0 = p * QNR, nc = NPU_MIN((int64_t)QNR, pk->N - j0);
        const int8_t *pan = pk->p + p * pk->kg * QGB;
        for (int64_t gc = 0; gc < pk->kg; gc += QKC) {
            int64_t kc = NPU_MIN((int64_t)QKC, pk->kg - gc);
            for (int64_t i = r0; i < r1; i += j->mr) {
                int mr = (int)NPU_MIN((int64_t)j->mr, r1 - i);
                j->fn(mr, kc, j->A + i * j->lda + 4 * gc, j->lda, pan + gc * QGB,
                      t + (i - r0) * QNR, gc > 0);
            }
        }
        for (int64_t i = r0; i < r1; i++)
            if (j->bias)
                qg_epilogue_bias((const uint32_t *)t + (i - r0) * QNR, nc, (uint32_t)j->rs[i],
                                 (uint32_t)j->za[i], (uint32_t)pk->K, (const uint32_t *)j->zb + j0,
                                 (const uint32_t *)pk->colsum + j0, j->bias[i],
                                 j->C + i * j->ldc + j0);
            else
                qg_epilogue((const uint32_t *)t + (i - r0) * QNR, nc, (uint32_t)j->rs[i],
                            (uint32_t)j->za[i], (uint32_t)pk->K, (const uint32_t *)j->zb + j0,
                            (const uint32_t *)pk->colsum + j0, (uint32_t *)j->C + i * j->ldc + j0);
    }
}

/* A as the kernel reads it: A' = A + ca rows of Kp = 4 kg bytes (zero past K), row sums */
struct cpu_qa {
    int64_t M, K, Kp;
    bool k_signed; /* the kernel byte type it was made for */
    int32_t ca;
    size_t bytes; /* counted against the budget (0: not counted) */
    uint8_t *a;   /* [M][Kp] */
    int32_t *rs;  /* [M] */
};

static void
qa_convert(const void *A, bool a_s8, int64_t lda, int64_t M, int64_t K, int64_t Kp, int32_t ca,
           uint8_t *ab, int32_t *rs)
{
    for (int64_t i = 0; i < M; i++) {
        const int8_t *as = (const int8_t *)A + i * lda;
        const uint8_t *au = (const uint8_t *)A + i * lda;
        uint8_t *d = ab + i * Kp;
        int32_t s = 0;
        for (int64_t k = 0; k < K; k++) {
            int32_t v = (a_s8 ? (int32_t)as[k] : (int32_t)au[k]) + ca;
            d[k] = (uint8_t)v;
            s += v;
        }
        for (int64_t k = K; k < Kp; k++)
            d[k] = 0;
        rs[i] = s;
    }
}

static int32_t
qa_offset(bool k_signed, bool a_s8)
{
    return k_signed ? (a_s8 ? 0 : -128) : (a_s8 ? 128 : 0);
}

/* the product on A' (ab, row sums rs, offset ca), plus a saturating bias per row (or NULL) */
static enum npu_status
qgemm_run(struct npu_cpu_ctx *ctx, qk_fn fn, const struct cpu_qpack *pk, int64_t M,
          const uint8_t *ab, const int32_t *rs, int32_t ca, const int32_t *azp, const int32_t *bzp,
          const int32_t *bias, int32_t *C, int64_t ldc)
{
    int32_t *za = malloc(sizeof(int32_t) * (size_t)(M + pk->N));
    if (!za)
        return KNOMEM();
    int32_t *zb = za + M;
    for (int64_t i = 0; i < M; i++)
        za[i] = azp[i] + ca;
    for (int64_t n = 0; n < pk->N; n++)
        zb[n] = bzp[n] - pk->cb;
    int64_t Kp = pk->kg * 4;
    struct qg_job j = {pk,  fn, fn == qk_portable ? 4 : 8,
                       M,   Kp, NPU_DIV_ROUND_UP(M, (int64_t)QMB),
                       ldc, ab, rs,
                       za,  zb, bias,
                       C};
    /* tasks of about a million multiply-adds or more */
    double task_mac = (double)NPU_MIN(M, (int64_t)QMB) * QNR * (double)Kp;
    cpu_parallel_for(ctx, pk->npanels * j.mblocks, (int64_t)(1e6 / task_mac) + 1, qg_task, &j);
    free(za);
    return NPU_OK;
}

/* cpu_qgemm plus a saturating bias per row (NULL: none) */
static enum npu_status
qgemm_bias(struct npu_cpu_ctx *ctx, const struct cpu_qpack *pk, int64_t M, const void *A, bool a_s8,
           int64_t lda, const int32_t *azp, const int32_t *bzp, const int32_t *bias, int32_t *C,
           int64_t ldc)
{
    if (M < 1 || pk->N < 1)
        return NPU_OK;
    bool k_signed;
    qk_fn fn = q_kernel(&k_signed);
    int64_t Kp = pk->kg * 4;
    int32_t ca = qa_offset(k_signed, a_s8);
    uint8_t *ab = NULL;
    int32_t *rs = malloc(sizeof(int32_t) * (size_t)M);
    if (!rs || posix_memalign((void **)&ab, 64, (size_t)(M * Kp))) {
        free(rs);
        return KNOMEM();
    }
    qa_convert(A, a_s8, lda, M, pk->K, Kp, ca, ab, rs);
    enum npu_status st = qgemm_run(ctx, fn, pk, M, ab, rs, ca, azp, bzp, bias, C, ldc);
    free(ab);
    free(rs);
    return st;
}

enum npu_status
cpu_qgemm(struct npu_cpu_ctx *ctx, const struct cpu_qpack *pk, int64_t M, const void *A, bool a_s8,
          int64_t lda, const int32_t *azp, const int32_t *bzp, int32_t *C, int64_t ldc)
{
    return qgemm_bias(ctx, pk, M, A, a_s8, lda, azp, bzp, NULL, C, ldc);
}

static struct cpu_qa *
qa_new(const void *A, bool a_s8, int64_t M, int64_t K)
{
    bool k_signed;
    (void)q_kernel(&k_signed);
    int64_t Kp = NPU_DIV_ROUND_UP(K, (int64_t)4) * 4;
    size_t bytes = (size_t)(M * Kp) + sizeof(int32_t) * (size_t)M;
    if (!cpu_mm_pack_budget_take(bytes))
        return NULL;
    struct cpu_qa *q = calloc(1, sizeof(*q));
    int32_t *rs = malloc(sizeof(int32_t) * (size_t)M);
    void *ab = NULL;
    if (!q || !rs || posix_memalign(&ab, 64, (size_t)(M * Kp))) {
        free(q);
        free(rs);
        cpu_mm_pack_budget_give(bytes);
        return NULL;
    }
    q->M = M, q->K = K, q->Kp = Kp, q->k_signed = k_signed, q->bytes = bytes;
    q->ca = qa_offset(k_signed, a_s8);
    q->a = ab;
    q->rs = rs;
    qa_convert(A, a_s8, K, M, K, Kp, q->ca, q->a, q->rs);
    return q;
}

void
cpu_qa_free(struct cpu_qa *q)
{
    if (!q)
        return;
    cpu_mm_pack_budget_give(q->bytes);
    free(q->a);
    free(q->rs);
    free(q);
}

/* ---- QLinearConv ------------------------------------------------------------------------------
 */

struct qc_pack_job {
    struct cpu_qpack *pk;
    const int8_t *xp;   /* one image, zero-point padded, as B' bytes: [C][Hp][Wp] */
    const int64_t *tap; /* [K]: offset of tap k = (c, kh, kw) in xp */
    int64_t Hp, Wp, KH, KW, OW, s0, s1, d0, d1;
};

/* 16 pixels of one tap as 16 bytes: byte i = s[base + i * st] (st 1 or 2), SSE2 or NEON */
#if defined(__SSE2__)
#define QC_VEC 1
typedef __m128i qc_v;
static inline qc_v
qc_ld16(const int8_t *s, int st)
{
    if (st == 1)
        return _mm_loadu_si128((const __m128i *)s);
    const __m128i lo = _mm_loadu_si128((const __m128i *)s);
    const __m128i hi = _mm_loadu_si128((const __m128i *)(s + 16));
    const __m128i m = _mm_set1_epi16(0xff);
    return _mm_packus_epi16(_mm_and_si128(lo, m), _mm_and_si128(hi, m));
}
/* m ? a : b per byte (m bytes all ones or zero) */
static inline qc_v
qc_sel(qc_v m, qc_v a, qc_v b)
{
    return _mm_or_si128(_mm_and_si128(m, a), _mm_andnot_si128(m, b));
}
static inline qc_v
qc_load(const int8_t *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}
/* 4 taps' 16 bytes interleaved to 16 columns x 4 bytes at d */
static inline void
qc_store4(int8_t *d, qc_v x0, qc_v x1, qc_v x2, qc_v x3)
{
    __m128i l01 = _mm_unpacklo_epi8(x0, x1), h01 = _mm_unpackhi_epi8(x0, x1);
    __m128i l23 = _mm_unpacklo_epi8(x2, x3), h23 = _mm_unpackhi_epi8(x2, x3);
    _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(l01, l23));
    _mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(l01, l23));
    _mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(h01, h23));
    _mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(h01, h23));
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define QC_VEC 1
#include <arm_neon.h>
typedef int8x16_t qc_v;
static inline qc_v
qc_ld16(const int8_t *s, int st)
{
    return st == 1 ? vld1q_s8(s) : vld2q_s8(s).val[0]; /* vld2: even bytes in val[0] */
}
static inline qc_v
qc_sel(qc_v m, qc_v a, qc_v b)
{
    return vbslq_s8(vreinterpretq_u8_s8(m), a, b);
}
static inline qc_v
qc_load(const int8_t *p)
{
    return vld1q_s8(p);
}
static inline void
qc_store4(int8_t *d, qc_v x0, qc_v x1, qc_v x2, qc_v x3)
{
    int16x8_t l01 = vreinterpretq_s16_s8(vzip1q_s8(x0, x1));
    int16x8_t h01 = vreinterpretq_s16_s8(vzip2q_s8(x0, x1));
    int16x8_t l23 = vreinterpretq_s16_s8(vzip1q_s8(x2, x3));
    int16x8_t h23 = vreinterpretq_s16_s8(vzip2q_s8(x2, x3));
    vst1q_s16((int16_t *)(void *)d, vzip1q_s16(l01, l23));
    vst1q_s16((int16_t *)(void *)(d + 16), vzip2q_s16(l01, l23));
    vst1q_s16((int16_t *)(void *)(d + 32), vzip1q_s16(h01, h23));
    vst1q_s16((int16_t *)(void *)(d + 48), vzip2q_s16(h01, h23));
}
#endif

#ifdef QC_VEC
#define QC_MAXSEG 4 /* blocks of 16 pixels made of up to this many runs go through vectors */

struct qc_block {
    int nseg;                /* 0: the scalar path */
    int64_t base[QC_MAXSEG]; /* offset of the run's byte 0 (may lie before the run) */
    qc_v mask[QC_MAXSEG];    /* bytes taken from run k (k >= 1) */
};

/* one tap's 16 pixels: run 0 loaded whole, each later run blended over the bytes it owns */
static inline qc_v
qc_gather(const int8_t *s, const struct qc_block *b, int st)
{
    qc_v v = qc_ld16(s + b->base[0], st);
    for (int k = 1; k < b->nseg; k++)
        v = qc_sel(b->mask[k], qc_ld16(s + b->base[k], st), v);
    return v;
}
#endif

/* packs panels [begin, end) of the K x P matrix B'[(c, kh, kw)][(oh, ow)] from the padded
 * image (column sums come after, from the kernel: qpack_colsums). Pixels go 16 at a time:
 * where the pixel step along a row (the stride s1) is 1 or 2 bytes, the 16 pixels are at
 * most QC_MAXSEG runs of that step (one per output row they touch), each loaded as one 16-byte
 * vector (a stride-2 run as 32 bytes, even bytes kept) and blended; then 4 taps are interleaved
 * with byte/word unpacks into the panel's 4-bytes-per-column layout. The image buffer has 64 bytes
 * of slack on both sides for the loads that reach past a run. Other steps, and blocks of more runs,
 * copy byte by byte. */
static void
qc_pack_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct qc_pack_job *j = arg;
    struct cpu_qpack *pk = j->pk;
    const int64_t K = pk->K;
    for (int64_t jp = begin; jp < end; jp++) {
        int64_t j0 = jp * QNR, nc = NPU_MIN((int64_t)QNR, pk->N - j0);
        int64_t off[QNR], oh = j0 / j->OW, ow = j0 % j->OW;
        for (int64_t q = 0; q < nc; q++) {
            off[q] = oh * j->s0 * j->Wp + ow * j->s1;
            if (++ow == j->OW)
                ow = 0, oh++;
        }
#ifdef QC_VEC
        const int st = (int)j->s1;
        struct qc_block blk[QNR / 16];
        for (int64_t q0 = 0; q0 < QNR; q0 += 16) {
            struct qc_block *b = &blk[q0 / 16];
            b->nseg = 0;
            if (q0 >= nc || (st != 1 && st != 2))
                continue;
            int64_t qe = NPU_MIN(q0 + 16, nc);
            int ns = 0;
            for (int64_t q = q0; q < qe && ns <= QC_MAXSEG; q++) {
                if (q > q0 && off[q] - off[q - 1] == st)
                    continue;
                if (ns < QC_MAXSEG) {
                    b->base[ns] = off[q] - (q - q0) * st;
                    int8_t mb[16];
                    for (int i = 0; i < 16; i++)
                        mb[i] = (int8_t)(i >= q - q0 ? -1 : 0);
                    b->mask[ns] = qc_load(mb);
                }
                ns++;
            }
            b->nseg = ns <= QC_MAXSEG ? ns : 0;
        }
#endif
        int8_t *d = pk->p + jp * pk->kg * QGB;
        if (nc < QNR || K % 4)
            memset(d, 0, (size_t)(pk->kg * QGB));
        for (int64_t g = 0; g < pk->kg; g++) {
            const int8_t *src[4];
            int nt = (int)NPU_MIN((int64_t)4, K - 4 * g);
            for (int t = 0; t < nt; t++)
                src[t] = j->xp + j->tap[4 * g + t];
            int8_t *dg = d + g * QGB;
            if (nt < 4) {
                for (int t = 0; t < nt; t++)
                    for (int64_t q = 0; q < nc; q++)
                        dg[4 * q + t] = src[t][off[q]];
                continue;
            }
            const int8_t *s0 = src[0], *s1 = src[1], *s2 = src[2], *s3 = src[3];
            for (int64_t q = 0; q < nc;) {
#ifdef QC_VEC
                const struct qc_block *b = &blk[q / 16];
                if (q % 16 == 0 && b->nseg) {
                    /* columns past nc get bytes too: the panel is 48 wide, they are unused */
                    qc_store4(dg + 4 * q, qc_gather(s0, b, st), qc_gather(s1, b, st),
                              qc_gather(s2, b, st), qc_gather(s3, b, st));
                    q += 16;
                    continue;
                }
#endif
                const int64_t o = off[q];
                dg[4 * q] = s0[o], dg[4 * q + 1] = s1[o], dg[4 * q + 2] = s2[o],
                       dg[4 * q + 3] = s3[o];
                q++;
            }
        }
    }
}

struct qcs_job {
    struct cpu_qpack *pk;
    qk_fn fn;
    const uint8_t *ones; /* [4 kg]: 1 up to K */
};

/* colsum of B' = a row of ones times B', by the product's own kernel */
static void
qcs_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct qcs_job *j = arg;
    struct cpu_qpack *pk = j->pk;
    int32_t t[QNR] __attribute__((aligned(64)));
    for (int64_t p = begin; p < end; p++) {
        const int8_t *pan = pk->p + p * pk->kg * QGB;
        for (int64_t gc = 0; gc < pk->kg; gc += QKC)
            j->fn(1, NPU_MIN((int64_t)QKC, pk->kg - gc), j->ones + 4 * gc, 0, pan + gc * QGB, t,
                  gc > 0);
        int64_t j0 = p * QNR, nc = NPU_MIN((int64_t)QNR, pk->N - j0);
        memcpy(pk->colsum + j0, t, sizeof(int32_t) * (size_t)nc);
    }
}

static enum npu_status
qpack_colsums(struct npu_cpu_ctx *ctx, struct cpu_qpack *pk)
{
    bool k_signed;
    struct qcs_job j = {pk, q_kernel(&k_signed), calloc((size_t)pk->kg * 4, 1)};
    if (!j.ones)
        return KNOMEM();
    memset((uint8_t *)j.ones, 1, (size_t)pk->K);
    cpu_parallel_for(ctx, pk->npanels, 1 + (1 << 18) / (pk->kg * QGB), qcs_task, &j);
    free((uint8_t *)j.ones);
    return NPU_OK;
}

enum npu_status
cpu_qconv2d(struct npu_cpu_ctx *ctx, const struct cpu_win *w, const struct npu_tensor *x,
            int32_t xzp, const struct npu_tensor *wt, const int32_t *wzp, const int32_t *bias,
            const struct cpu_qa *qa, int32_t *acc)
{
    if (w->nsp != 2 || x->ndim != 4 || wt->ndim != 4 || wt->dims[1] != x->dims[1])
        return NPU_ERR_UNSUPPORTED;
    bool xs8 = x->dtype == NPU_DTYPE_INT8, ws8 = wt->dtype == NPU_DTYPE_INT8;
    if ((!xs8 && x->dtype != NPU_DTYPE_UINT8) || (!ws8 && wt->dtype != NPU_DTYPE_UINT8))
        return NPU_ERR_UNSUPPORTED;
    int64_t N = x->dims[0], C = x->dims[1], M = wt->dims[0];
    int64_t H = w->in[0], W = w->in[1];
    int64_t K = C * wt->dims[2] * wt->dims[3], P = w->out[0] * w->out[1];
    if (M < 1 || K < 1 || P < 1 || w->pb[0] < 0 || w->pb[1] < 0)
        return NPU_ERR_UNSUPPORTED;
    /* the padded image covers every tap of every output (ends may be cut: pe < 0) */
    int64_t Hp = NPU_MAX(H + w->pb[0], (w->out[0] - 1) * w->s[0] + (w->k[0] - 1) * w->d[0] + 1);
    int64_t Wp = NPU_MAX(W + w->pb[1], (w->out[1] - 1) * w->s[1] + (w->k[1] - 1) * w->d[1] + 1);
    struct cpu_qpack *pk = qpack_alloc(K, P, xs8, false);
    int32_t *zb = malloc(sizeof(int32_t) * (size_t)P);
    int64_t *tap = malloc(sizeof(int64_t) * (size_t)K);
    /* 64 bytes of slack before and after (qc_pack_task's loads) */
    int8_t *xbuf = malloc((size_t)(C * Hp * Wp + 128)), *xp = xbuf ? xbuf + 64 : NULL;
    if (!pk || !zb || !tap || !xbuf) {
        cpu_qpack_free(pk);
        free(zb);
        free(tap);
        free(xbuf);
        return KNOMEM();
    }
    for (int64_t p = 0; p < P; p++)
        zb[p] = xzp;
    const int64_t KH = w->k[0], KW = w->k[1];
    for (int64_t c = 0, k = 0; c < C; c++)
        for (int64_t a = 0; a < KH; a++)
            for (int64_t b = 0; b < KW; b++, k++)
                tap[k] = (c * Hp + a * w->d[0]) * Wp + b * w->d[1];
    /* B' = X - cb; padding holds the zero point, which the correction cancels */
    const int32_t cb = pk->cb;
    const int8_t padv = (int8_t)(xzp - cb);
    enum npu_status st = NPU_OK;
    for (int64_t n = 0; n < N && st == NPU_OK; n++) {
        const uint8_t *xu = (const uint8_t *)x->data + n * C * H * W;
        memset(xbuf, padv, (size_t)(C * Hp * Wp + 128));
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H && h + w->pb[0] < Hp; h++) {
                const uint8_t *sr = xu + (c * H + h) * W;
                int8_t *dr = xp + (c * Hp + h + w->pb[0]) * Wp + w->pb[1];
                int64_t wn = NPU_MIN(W, Wp - w->pb[1]);
                if (xs8)
                    memcpy(dr, sr, (size_t)wn);
                else
                    for (int64_t i = 0; i < wn; i++)
                        dr[i] = (int8_t)(sr[i] ^ 0x80); /* u8 - 128 */
            }
        struct qc_pack_job pj = {pk, xp,        tap,     Hp,      Wp,      KH,
                                 KW, w->out[1], w->s[0], w->s[1], w->d[0], w->d[1]};
        /* pack tasks of at least 64 KB */
        cpu_parallel_for(ctx, pk->npanels, 1 + 65536 / (pk->kg * QGB), qc_pack_task, &pj);
        int32_t *y = acc + n * M * P;
        st = qpack_colsums(ctx, pk);
        bool k_signed;
        qk_fn fn = q_kernel(&k_signed);
        if (st == NPU_OK && qa && qa->M == M && qa->K == K && qa->k_signed == k_signed)
            st = qgemm_run(ctx, fn, pk, M, qa->a, qa->rs, qa->ca, wzp, zb, bias, y, P);
        else if (st == NPU_OK)
            st = qgemm_bias(ctx, pk, M, wt->data, ws8, K, wzp, zb, bias, y, P);
    }
    free(xbuf);
    free(tap);
    free(zb);
    cpu_qpack_free(pk);
    return st;
}

/* ---- prepare ------------------------------------------------------------------------------------
 */

enum npu_status
cpu_qgemm_prepare(enum npu_op op, const struct npu_attrs *attrs, const struct npu_tensor *const *in,
                  int nin, struct npu_cpu_prep **out)
{
    *out = NULL;
    if (op == NPU_OP_QLINEAR_CONV || op == NPU_OP_CONV_INTEGER) {
        /* the weights W [M, C, kh, kw] (group 1) as the product's A side, converted once */
        int wi = op == NPU_OP_QLINEAR_CONV ? 3 : 1;
        const struct npu_tensor *wt = nin > wi ? in[wi] : NULL;
        if (!wt || !wt->data || wt->ndim != 4 || npu_attrs_int(attrs, "group", 1) != 1 ||
            (wt->dtype != NPU_DTYPE_INT8 && wt->dtype != NPU_DTYPE_UINT8))
            return NPU_OK;
        int64_t M = wt->dims[0], K = wt->dims[1] * wt->dims[2] * wt->dims[3];
        if (M < 1 || K < 1)
            return NPU_OK;
        struct cpu_qa *qa = qa_new(wt->data, wt->dtype == NPU_DTYPE_INT8, M, K);
        if (!qa) /* over the budget (or no memory): converted per call */
            return NPU_OK;
        struct npu_cpu_prep *p = cpu_prep_new(op, wt);
        if (!p) {
            cpu_qa_free(qa);
            return NPU_ERR_NOMEM;
        }
        p->qa = qa;
        *out = p;
        return NPU_OK;
    }
    int bi = op == NPU_OP_MATMUL_INTEGER ? 1 : op == NPU_OP_QLINEAR_MATMUL ? 3 : -1;
    if (bi < 0 || nin <= bi || !in[bi] || !in[bi]->data)
        return NPU_OK;
    const struct npu_tensor *b = in[bi];
    if ((b->dtype != NPU_DTYPE_INT8 && b->dtype != NPU_DTYPE_UINT8) || b->ndim != 2)
        return NPU_OK;
    int64_t K = b->dims[0], N = b->dims[1];
    if (K < 4 || N < 16 || K * N < 4096) /* small products gain nothing from a copy */
        return NPU_OK;
    struct cpu_qpack *pk = cpu_qpack_new(b->data, b->dtype == NPU_DTYPE_INT8, N, 1, K, N, true);
    if (!pk) /* over the budget (or no memory): runs packed per call */
        return NPU_OK;
    struct npu_cpu_prep *p = cpu_prep_new(op, b);
    if (!p) {
        cpu_qpack_free(pk);
        return NPU_ERR_NOMEM;
    }
    p->qp = pk;
    *out = p;
    return NPU_OK;
}

const struct cpu_qpack *
cpu_qgemm_prepared(const struct npu_cpu_prep *prep, const struct npu_tensor *b)
{
    if (!prep || !prep->qp || !b || prep->w_data != b->data || prep->w_ndim != b->ndim ||
        memcmp(prep->w_dims, b->dims, sizeof(int64_t) * (size_t)b->ndim))
        return NULL;
    if (prep->qp->cb != (b->dtype == NPU_DTYPE_INT8 ? 0 : 128))
        return NULL;
    return prep->qp;
}

const struct cpu_qa *
cpu_qa_prepared(const struct npu_cpu_prep *prep, const struct npu_tensor *w)
{
    if (!prep || !prep->qa || !w || prep->w_data != w->data || prep->w_ndim != w->ndim ||
        memcmp(prep->w_dims, w->dims, sizeof(int64_t) * (size_t)w->ndim))
        return NULL;
    if (prep->qa->ca != qa_offset(prep->qa->k_signed, w->dtype == NPU_DTYPE_INT8))
        return NULL;
    return prep->qa;
}
