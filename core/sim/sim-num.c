/* SPDX-License-Identifier: MIT */
/*
 * sim-num.c: the binary16 decode table of sim-num.h, built once per process from
 * npu/npu-fp16.h's scalar conversion.
 */
#include "sim-num.h"

#include <pthread.h>

float sim_f16_table[65536];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void
build(void)
{
    for (uint32_t i = 0; i < 65536; i++)
        sim_f16_table[i] = npu_fp16_to_fp32((uint16_t)i);
}

void
sim_num_init(void)
{
    pthread_once(&table_once, build);
}
