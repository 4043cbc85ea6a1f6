/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-attn16.h: one decode step's attention on the CPU over a KV cache held
 * where and as the NPU holds it: fp16 in the NPU's NC1HWC2 feature layout
 * (facts §2.10: element (c, h, w) at (c / 8) x surface + (h x W + w) x 8 + c % 8
 * fp16 elements, 16-byte atoms), K and V each logical [kv_heads, slots, head_dim]
 * under the canonical view (C = head_dim, H = kv_heads x slots, W = 1), the form
 * the GPT-2 decode step's state inputs `past_k.L` / `past_v.L` have
 * (compiler/llm/llm-graph.c, "cache3"). The cache is read in place: nothing is
 * converted per step.
 *
 * It computes what the decode graph's CPU attention computes (MatMul of Q with the
 * transposed K, times the scale, plus the mask, Softmax over the keys, MatMul with
 * V), in fp32 with the cache's fp16 values widened on load: F16C on x86-64 (chosen at
 * run time), NEON on aarch64, a scalar loop elsewhere.
 *
 * Not wired into the program runtime yet (docs/llm.md, "GPT-2 small's decode cache
 * under the default partition"): a CPU step reading an NPU state tensor in place is
 * the missing piece. The caller owns the backend's cache maintenance (a CPU read of
 * a device BO needs its sync from the device first: rknpu MEM_SYNC, rocket PREP_BO).
 */
#ifndef NPU_CPU_ATTN16_H
#define NPU_CPU_ATTN16_H

#include <stdint.h>

#include "npu/npu-common.h"

/* One cache tensor in the NPU layout: fp16, C2 = 8, W = 1. */
struct npu_attn16_cache {
    const uint16_t *base; /* element (c = 0, row 0) */
    int64_t surf;         /* elements from one 8-channel surface to the next (>= rows x 8) */
};

struct npu_attn16_shape {
    int64_t kv_heads; /* K / V heads */
    int64_t group;    /* query rows per K / V head (GQA group x new tokens; GPT-2: 1) */
    int64_t slots;    /* keys per head, the cache's rows of one head */
    int64_t head_dim; /* channels of K and V, a multiple of 8 */
    float scale;      /* 1 / sqrt(head_dim) */
};

/* y[kvh][g][d] = sum_j softmax_j(scale x q[kvh][g] . K[kvh][j] + mask[g][j]) V[kvh][j][d]
 * for kv heads h0 .. h1 - 1. q and y are row-major fp32 [kv_heads, group, head_dim], mask
 * fp32 [group, slots] (shared by every head). work: slots floats. Refuses (NPU_ERR_INVALID)
 * a head_dim not a multiple of 8, a surface stride below the rows, an empty head range or
 * NULL arrays. */
enum npu_status npu_cpu_attn16_decode(const struct npu_attn16_shape *sh, const float *q,
                                      const float *mask, const struct npu_attn16_cache *k,
                                      const struct npu_attn16_cache *v, int64_t h0, int64_t h1,
                                      float *work, float *y);

/* Which widening loop npu_cpu_attn16_decode runs here: "f16c", "neon" or "scalar".
 * NPU_CPU_ATTN16=scalar forces the scalar one (the tests compare both). */
const char *npu_cpu_attn16_isa(void);

#endif
