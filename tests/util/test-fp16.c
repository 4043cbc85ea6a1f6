/* SPDX-License-Identifier: MIT */
/*
 * test-fp16.c: npu/npu-fp16.h against an independent reference, the compiler's _Float16
 * (gcc 12 on x86_64: libgcc's soft-fp conversions; aarch64: the FPU). fp16 -> fp32 is checked
 * for all 65536 inputs; fp32 -> fp16 for every fp16 value, every midpoint between neighbours
 * and the floats on either side of it, the specials, and a few million random bit patterns;
 * fp64 -> fp16 (one rounding) likewise at every midpoint and on random doubles. The bulk
 * conversions must agree bit for bit with the scalar ones. Prints bulk/scalar speed figures
 * (not asserted).
 */
#include <time.h>

#include "npu-test.h"
#include "npu/npu-common.h"
#include "npu/npu-fp16.h"

#ifdef __FLT16_MAX__
#define HAVE_FLOAT16 1
#endif

#ifdef HAVE_FLOAT16
static uint16_t
ref_to_half(uint32_t bits)
{
    volatile float f = npu_bits_f32(bits);
    _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static uint16_t
ref_f64_to_half(double d)
{
    volatile double v = d;
    _Float16 h = (_Float16)v;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static uint32_t
ref_to_single(uint16_t hb)
{
    _Float16 h;
    memcpy(&h, &hb, 2);
    volatile float f = (float)h;
    return npu_f32_bits(f);
}
#endif

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rng(void)
{
    /* xorshift64*: deterministic, so a failure reproduces. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

#ifdef HAVE_FLOAT16
static int fails_reported;
#endif

static void
check_to_half(uint32_t bits)
{
#ifdef HAVE_FLOAT16
    uint16_t want = ref_to_half(bits), got = npu_fp32_bits_to_fp16(bits);

    npu_test_checks++;
    if (want != got) {
        npu_test_failures++;
        if (fails_reported++ < 20)
            fprintf(stderr, "fp32 0x%08x -> fp16 0x%04x, reference 0x%04x\n", bits, got, want);
    }
#else
    (void)bits;
#endif
}

static void
test_known_values(void)
{
    /* Textbook encodings (IEEE 754 binary16), independent of any implementation. */
    CHECK_EQ_HEX(0x3c00, npu_fp32_to_fp16(1.0f));
    CHECK_EQ_HEX(0xc000, npu_fp32_to_fp16(-2.0f));
    CHECK_EQ_HEX(0x7bff, npu_fp32_to_fp16(65504.0f));
    CHECK_EQ_HEX(0x7c00, npu_fp32_to_fp16(65520.0f)); /* tie to even overflows */
    CHECK_EQ_HEX(0x7bff, npu_fp32_to_fp16(65519.996f));
    CHECK_EQ_HEX(0x0001, npu_fp32_to_fp16(0x1p-24f));
    CHECK_EQ_HEX(0x0000, npu_fp32_to_fp16(0x1p-25f)); /* tie to even: 0 */
    CHECK_EQ_HEX(0x0001, npu_fp32_to_fp16(0x1.000002p-25f));
    CHECK_EQ_HEX(0x0002, npu_fp32_to_fp16(0x1.8p-24f)); /* 1.5 ulp ties to 2 */
    CHECK_EQ_HEX(0x0400, npu_fp32_to_fp16(0x1p-14f));
    CHECK_EQ_HEX(0x03ff, npu_fp32_to_fp16(0x1.ff8p-15f));
    CHECK_EQ_HEX(0x8000, npu_fp32_to_fp16(-0.0f));
    CHECK_EQ_HEX(0xfc00, npu_fp32_to_fp16(-__builtin_inff()));
    CHECK_EQ_HEX(0x3555, npu_fp32_to_fp16(1.0f / 3.0f));
    CHECK_EQ_HEX(0x3c01, npu_fp32_to_fp16(1.0f + 0x1.8p-11f)); /* tie, odd -> up */
    CHECK_EQ_HEX(0x3c00, npu_fp32_to_fp16(1.0f + 0x1p-11f));   /* tie, even -> stay */
    /* NaN: quiet, payload top bits kept, sign kept. */
    CHECK_EQ_HEX(0x7e00, npu_fp32_bits_to_fp16(0x7f800001));
    CHECK_EQ_HEX(0x7e01, npu_fp32_bits_to_fp16(0x7f802000));
    CHECK_EQ_HEX(0xff2d, npu_fp32_bits_to_fp16(0xffa5a5a5));
    CHECK_EQ_HEX(0x3f800000, npu_f32_bits(npu_fp16_to_fp32(0x3c00)));
    CHECK_EQ_HEX(0x33800000, npu_f32_bits(npu_fp16_to_fp32(0x0001))); /* 2^-24 */
    CHECK_EQ_HEX(0x477fe000, npu_f32_bits(npu_fp16_to_fp32(0x7bff)));
    CHECK_EQ_HEX(0xff800000, npu_f32_bits(npu_fp16_to_fp32(0xfc00)));
    CHECK_EQ_HEX(0x7fc02000, npu_fp16_to_fp32_bits(0x7c01)); /* sNaN quieted */
    CHECK_EQ_HEX(0xffeaa000, npu_fp16_to_fp32_bits(0xfd55));
}

static void
test_exhaustive(void)
{
    static float bulk32[65536];
    static uint16_t in16[65536], bulk16[65536];

    for (uint32_t h = 0; h < 65536; h++)
        in16[h] = (uint16_t)h;
    npu_fp16_to_fp32_n(bulk32, in16, 65536);
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t got = npu_fp16_to_fp32_bits((uint16_t)h);
        CHECK_EQ_HEX(got, npu_f32_bits(bulk32[h]));
#ifdef HAVE_FLOAT16
        CHECK_EQ_HEX(ref_to_single((uint16_t)h), got);
#endif
        /* Round trip of every fp16 value (NaNs come back quiet). */
        uint16_t back = npu_fp32_to_fp16(npu_bits_f32(got));
        if ((h & 0x7fff) > 0x7c00)
            CHECK_EQ_HEX(h | 0x200, back);
        else
            CHECK_EQ_HEX(h, back);
    }
    npu_fp32_to_fp16_n(bulk16, bulk32, 65536);
    for (uint32_t h = 0; h < 65536; h++)
        CHECK_EQ_HEX(npu_fp32_to_fp16(bulk32[h]), bulk16[h]);

    /* Every fp16 value, the midpoints to its upper neighbour and one float either side. */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        uint32_t lo = npu_fp16_to_fp32_bits((uint16_t)h);
        uint32_t hi = npu_fp16_to_fp32_bits((uint16_t)(h + 1));
        float mid = (npu_bits_f32(lo) + npu_bits_f32(hi)) / 2; /* exact in fp32 */
        uint32_t m = npu_f32_bits(mid);
        for (int neg = 0; neg < 2; neg++) {
            uint32_t s = neg ? 0x80000000u : 0;
            check_to_half(lo | s);
            check_to_half(m | s);
            check_to_half((m - 1) | s);
            check_to_half((m + 1) | s);
        }
    }
    /* Specials and range edges. */
    static const uint32_t edge[] = {
        0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7f800001, 0x7fbfffff, 0x7fc00000,
        0x7fffffff, 0xffffffff, 0x00000001, 0x007fffff, 0x00800000, 0x33000000, 0x33000001,
        0x337fffff, 0x33800000, 0x387fe000, 0x387ff000, 0x387fffff, 0x38800000, 0x477fe000,
        0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, 0x4f800000, 0x7f7fffff,
    };
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(edge); i++) {
        check_to_half(edge[i]);
        check_to_half(edge[i] ^ 0x80000000u);
    }
}

static void
check_f64_to_half(double d)
{
#ifdef HAVE_FLOAT16
    uint16_t want = ref_f64_to_half(d), got = npu_fp64_to_fp16(d);

    npu_test_checks++;
    if (want != got) {
        npu_test_failures++;
        if (fails_reported++ < 20)
            fprintf(stderr, "fp64 %a -> fp16 0x%04x, reference 0x%04x\n", d, got, want);
    }
#else
    (void)d;
#endif
}

/* fp64 -> fp16 rounds once: the double just above a midpoint rounds up where going through
 * fp32 would land on the midpoint and tie to even. NaN is the canonical quiet NaN. */
static void
test_fp64(void)
{
    CHECK_EQ_HEX(0x3c01, npu_fp64_to_fp16(1 + 0x1p-11 + 0x1p-40));
    CHECK_EQ_HEX(0x3c00, npu_fp32_to_fp16((float)(1 + 0x1p-11 + 0x1p-40))); /* twice: wrong */
    CHECK_EQ_HEX(0x7e00, npu_fp64_to_fp16(__builtin_nan("")));
    CHECK_EQ_HEX(0xfe00, npu_fp64_to_fp16(-__builtin_nan("0x123456789")));
    CHECK_EQ_HEX(0x7c00, npu_fp64_to_fp16(__builtin_inf()));
    CHECK_EQ_HEX(0x7c00, npu_fp64_to_fp16(65520.0));
    CHECK_EQ_HEX(0x7bff, npu_fp64_to_fp16(65519.99999999));
    CHECK_EQ_HEX(0x0000, npu_fp64_to_fp16(0x1p-25));
    CHECK_EQ_HEX(0x0001, npu_fp64_to_fp16(0x1.0000000000001p-25));
    CHECK_EQ_HEX(0x8000, npu_fp64_to_fp16(-1e-300));
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double lo = npu_fp16_to_fp32((uint16_t)h), hi = npu_fp16_to_fp32((uint16_t)(h + 1));
        double mid = (lo + hi) / 2; /* exact in fp64 */
        for (int neg = 0; neg < 2; neg++) {
            double s = neg ? -1 : 1;
            check_f64_to_half(s * lo);
            check_f64_to_half(s * mid);
            check_f64_to_half(s * nextafter(mid, 0));
            check_f64_to_half(s * nextafter(mid, 1e300));
        }
    }
    for (int i = 0; i < (1 << 20); i++) {
        uint64_t r = (uint64_t)rng() << 32 | rng();
        /* exponents around the fp16 range (2^-30 .. 2^17), either sign */
        r = (r & 0x800fffffffffffffull) | (uint64_t)(0x3e1u + (r >> 52) % 48u) << 52;
        double d;
        memcpy(&d, &r, sizeof(d));
        check_f64_to_half(d);
        /* a double that is a float converts as the float does */
        float f = (float)d;
        if (npu_fp64_to_fp16(f) != npu_fp32_to_fp16(f)) {
            CHECK_EQ_HEX(npu_fp32_to_fp16(f), npu_fp64_to_fp16(f));
            break;
        }
    }
}

static void
test_random(void)
{
    enum { N = 1 << 22 };
    float *src = malloc(N * sizeof(float));
    uint16_t *dst = malloc(N * sizeof(uint16_t));

    if (!src || !dst) {
        CHECK(!"out of memory");
        goto out;
    }
    for (size_t i = 0; i < N; i++) {
        uint32_t r = rng();
        /* Half uniformly random bits, half concentrated in the fp16 range. */
        if (i & 1)
            r = (r & 0x80ffffffu) | ((0x30u + (r >> 24) % 0x20u) << 23);
        src[i] = npu_bits_f32(r);
    }
    npu_fp32_to_fp16_n(dst, src, N);
    for (size_t i = 0; i < N; i++) {
        uint16_t s = npu_fp32_to_fp16(src[i]);
        if (s != dst[i]) {
            CHECK_EQ_HEX(s, dst[i]);
            break;
        }
        check_to_half(npu_f32_bits(src[i]));
    }
out:
    free(src);
    free(dst);
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Keeps the scalar loop from being vectorised or hoisted: one call per element. */
static uint16_t (*volatile to_half_fn)(float) = npu_fp32_to_fp16;
static float (*volatile to_single_fn)(uint16_t) = npu_fp16_to_fp32;

static void
bench(void)
{
    enum { N = 1 << 20, REP = 8 };
    float *f = malloc(N * sizeof(float));
    uint16_t *h = malloc(N * sizeof(uint16_t));
    double t0, ts, tb, ts2, tb2;

    if (!f || !h)
        goto out;
    for (size_t i = 0; i < N; i++)
        f[i] = (float)(int)(rng() % 20000) * 0.37f;
    t0 = now();
    for (int r = 0; r < REP; r++)
        for (size_t i = 0; i < N; i++)
            h[i] = to_half_fn(f[i]);
    ts = now() - t0;
    t0 = now();
    for (int r = 0; r < REP; r++)
        npu_fp32_to_fp16_n(h, f, N);
    tb = now() - t0;
    t0 = now();
    for (int r = 0; r < REP; r++)
        for (size_t i = 0; i < N; i++)
            f[i] = to_single_fn(h[i]);
    ts2 = now() - t0;
    t0 = now();
    for (int r = 0; r < REP; r++)
        npu_fp16_to_fp32_n(f, h, N);
    tb2 = now() - t0;
    printf("fp32->fp16: scalar %.2f ns/elem, bulk %.2f ns/elem (bulk is %.1fx)\n",
           ts * 1e9 / (N * REP), tb * 1e9 / (N * REP), ts / tb);
    printf("fp16->fp32: scalar %.2f ns/elem, bulk %.2f ns/elem (bulk is %.1fx)\n",
           ts2 * 1e9 / (N * REP), tb2 * 1e9 / (N * REP), ts2 / tb2);
out:
    free(f);
    free(h);
}

/* The bulk conversion (F16C on x86 where the CPU has it) against the scalar kernel over a
 * sweep of bit patterns touching every exponent, sign and NaN payload range, and the
 * specials, in blocks of odd lengths so that the vector loop's tails are covered too. */
static void
test_bulk_sweep(void)
{
    enum { N = 4096 };
    static float src[N];
    static uint16_t dst[N];
    static const uint32_t edge[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7f800001,
                                    0x7fbfffff, 0x7fc00000, 0x7fffffff, 0xffffffff, 0x00000001,
                                    0x33000000, 0x33000001, 0x387ff000, 0x38800000, 0x477ff000,
                                    0x477fefff, 0x47800000, 0xffc00001, 0x807fffff, 0xb3800000};
    uint32_t bits = 0;
    for (int block = 0; block < 300; block++) {
        size_t n = (size_t)(N - (block % 29));
        for (size_t i = 0; i < n; i++, bits += 3499u) /* 300 x ~4080 x 3499 > 2^32 */
            src[i] = npu_bits_f32(i < NPU_ARRAY_SIZE(edge) && block == 0 ? edge[i] : bits);
        npu_fp32_to_fp16_n(dst, src, n);
        for (size_t i = 0; i < n; i++)
            if (npu_fp32_to_fp16(src[i]) != dst[i]) {
                CHECK_EQ_HEX(npu_fp32_to_fp16(src[i]), dst[i]);
                return;
            }
    }
}

int
main(void)
{
#ifndef HAVE_FLOAT16
    printf("test-fp16: no _Float16 in this compiler; reference comparisons skipped\n");
#endif
    test_known_values();
    test_exhaustive();
    test_random();
    test_bulk_sweep();
    test_fp64();
    bench();
    return npu_test_done("test-fp16");
}
