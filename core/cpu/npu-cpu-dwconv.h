/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-dwconv.h: the fp32 depthwise and small-channel Conv fast paths
 * (npu-cpu-dwconv.c) that npu-cpu-conv.c tries before its portable ones.
 */
#ifndef NPU_CPU_DWCONV_H
#define NPU_CPU_DWCONV_H

#include "npu-cpu-internal.h"

/* Depthwise: X [N][C][H][W], W [M][1][KH][KW] with M a multiple of C, Y [N][M][OH][OW]; bias
 * [M] or NULL, then act. False (nothing written) if this CPU or shape has no fast path. */
bool cpu_conv_dw_fast(struct npu_cpu_ctx *ctx, const struct cpu_win *w, int64_t N, int64_t C,
                      int64_t M, const float *x, const float *wt, const float *bias,
                      const struct cpu_act_spec *act, float *y);
/* One group, few input taps per output (C <= 4, C * KH * KW <= 32, the 3-channel stem). */
bool cpu_conv_small_c_fast(struct npu_cpu_ctx *ctx, const struct cpu_win *w, int64_t N, int64_t C,
                           int64_t M, const float *x, const float *wt, const float *bias,
                           const struct cpu_act_spec *act, float *y);
/* A 1x1 conv (stride 1, no padding, one group) over a 1x1 plane, X [N][C][1][1],
 * W [M][C][1][1]: M dot products of length C per image (the squeeze-and-excitation blocks'
 * FCs, which the direct path ran one useful lane in 16). */
bool cpu_conv_1x1_vec_fast(struct npu_cpu_ctx *ctx, int64_t N, int64_t C, int64_t M, const float *x,
                           const float *wt, const float *bias, const struct cpu_act_spec *act,
                           float *y);
/* One band of a depthwise plane, on the calling thread (the fused 1x1 -> depthwise of
 * npu-cpu-pwdw.c): output rows [oh0, oh1) of one channel of multiplier 1, from the `rows`
 * input rows starting at image row h0 held at xb (rows of W floats), into the channel's
 * output plane yc; the same sums, bias and activation as cpu_conv_dw_fast. Usable: the window
 * is one the fast path takes on this CPU. */
bool cpu_dw_band_usable(const struct cpu_win *w);
void cpu_dw_band(const struct cpu_win *w, const float *xb, int64_t h0, int64_t rows, int64_t oh0,
                 int64_t oh1, const float *k, float bias, const struct cpu_act_spec *act,
                 float *yc);
/* The instruction set these use: 0 none (the portable paths), 2 AVX2+FMA, 3 AVX-512F. `want`
 * -1 only reports; otherwise at most what the CPU has (tests and benchmarks only: not
 * thread-safe against running convolutions). */
int cpu_dwconv_isa(int want);

#endif /* NPU_CPU_DWCONV_H */
