/* SPDX-License-Identifier: MIT */
/*
 * sim-num.h: the number formats the simulated blocks read and write: IEEE
 * binary16 <-> binary32 (npu/npu-fp16.h, the project's one implementation:
 * encode with round-to-nearest-even, as the DPU's FP32TOFP16 converter is
 * taken to do; decode through a 64 Ki-entry table built once from it),
 * integer shifts with the two rounding modes the converters name (half-even,
 * half-up), and saturation. Inline so the inner loops of the blocks stay
 * vectorisable.
 */
#ifndef SIM_NUM_H
#define SIM_NUM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "npu/npu-fp16.h"

extern float sim_f16_table[65536];
void sim_num_init(void); /* builds the table; idempotent, thread-safe */

static inline float
sim_f16_to_f32(uint16_t h)
{
    return sim_f16_table[h];
}

/* x >> s (s >= 0) rounded: half_up != 0 rounds halves up (towards +inf),
 * else halves to even. */
static inline int64_t
sim_shift_round(int64_t x, unsigned s, int half_up)
{
    if (s == 0)
        return x;
    if (s >= 63)
        return 0;       /* |x| < 2^63: the quotient rounds to 0 */
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
