/* SPDX-License-Identifier: MIT */
/*
 * sim-num.c: the binary16 decode table of sim-num.h, built once per process.
 */
#include "sim-num.h"

#include <pthread.h>

float sim_f16_table[65536];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static float
decode(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (!man) {
            bits = sign;
        } else {
            /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp - 15 + 127) << 23 | man << 13;
    }
    return sim_bits_f32(bits);
}

static void
build(void)
{
    for (uint32_t i = 0; i < 65536; i++)
        sim_f16_table[i] = decode((uint16_t)i);
}

void
sim_num_init(void)
{
    pthread_once(&table_once, build);
}
