/* SPDX-License-Identifier: MIT */
/*
 * sim-num.h: the number formats the simulated blocks read and write: IEEE
 * binary16 <-> binary32 (decode through a 64 Ki-entry table built once,
 * encode with round-to-nearest-even, as the DPU's FP32TOFP16 converter is
 * taken to do), integer shifts with the two rounding modes the converters
 * name (half-even, half-up), and saturation. Inline so the inner loops of
 * the blocks stay vectorisable.
 */
#ifndef SIM_NUM_H
#define SIM_NUM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

extern float sim_f16_table[65536];
void sim_num_init(void); /* builds the table; idempotent, thread-safe */

static inline float
sim_f16_to_f32(uint16_t h)
{
    return sim_f16_table[h];
}

static inline uint32_t
sim_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float
sim_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* binary32 -> binary16, round to nearest even; overflow gives infinity, NaN
 * stays NaN (quiet). */
static inline uint16_t
sim_f32_to_f16(float f)
{
    uint32_t x = sim_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        uint32_t half = 1u << (shift - 1);
        uint32_t rest = man & ((1u << shift) - 1);
        uint32_t q = man >> shift;
        if (rest > half || (rest == half && (q & 1)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (q & 1)))
        q++; /* may carry into the exponent, up to infinity: correct */
    return (uint16_t)(sign | q);
}

/* x >> s (s >= 0) rounded: half_up != 0 rounds halves up (towards +inf),
 * else halves to even. */
static inline int64_t
sim_shift_round(int64_t x, unsigned s, int half_up)
{
    if (s == 0)
        return x;
    if (s >= 63)
        return 0; /* |x| < 2^63: the quotient rounds to 0 */
    int64_t q = x >> s; /* floor */
    int64_t rem = x - q * ((int64_t)1 << s);
    int64_t half = (int64_t)1 << (s - 1);
    if (rem > half || (rem == half && (half_up || (q & 1))))
        q++;
    return q;
}

static inline int64_t
sim_sat(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

#endif /* SIM_NUM_H */
