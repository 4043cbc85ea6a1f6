/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-qgemm.h: the fast exact int8 product (npu-cpu-qgemm.c) as seen by MatMulInteger
 * and QLinearMatMul (npu-cpu-gemm.c), QLinearConv (npu-cpu-conv.c) and the prepare step
 * (npu_cpu_prepare, npu-cpu-conv-direct.c). It computes int32 sums
 * C[i][n] = sum_k (A[i][k] - azp[i]) (B[k][n] - bzp[n]) for int8 or uint8 A and B, exactly
 * as the reference loops do (modulo 2^32, like them), with B packed in 48-column panels of
 * signed bytes, once per model when it is a constant.
 */
#ifndef NPU_CPU_QGEMM_H
#define NPU_CPU_QGEMM_H

#include "npu-cpu-internal.h"

struct npu_cpu_prep;
struct cpu_qpack;
struct cpu_qa;

/* B[k][n] at b[k * sk + n * sn] (int8 when b_s8, else uint8), K x N: packed (signed bytes,
 * 48-column panels, k in groups of 4) with its column sums. budget: count it against the
 * packing budget NPU_CPU_PACK_MB (NULL when over it). NULL on no memory too. */
struct cpu_qpack *cpu_qpack_new(const void *b, bool b_s8, int64_t sk, int64_t sn, int64_t K,
                                int64_t N, bool budget);
void cpu_qpack_free(struct cpu_qpack *p);

/* C[M][N] (row stride ldc) = (A - azp[i]) (B - bzp[n]) with A [M][K] (row stride lda, int8
 * when a_s8 else uint8), azp [M], bzp [N] (already widened). */
enum npu_status cpu_qgemm(struct npu_cpu_ctx *ctx, const struct cpu_qpack *pk, int64_t M,
                          const void *A, bool a_s8, int64_t lda, const int32_t *azp,
                          const int32_t *bzp, int32_t *C, int64_t ldc);

/* 2-D convolution, group 1, of X [N, C, H, W] (int8/uint8, zero point xzp) with W [M, C, kh,
 * kw] (w_s8, zero points wzp [M]) over the window w: acc [N, M, OH * OW] as int32 sums,
 * plus bias [M] (NULL: none) with int32 saturation like the reference. W is the product's
 * A side (rows = output channels): qa when prepared (cpu_qa_prepared), else converted per
 * call; the input is packed per call straight from X (no separate im2col copy). */
enum npu_status cpu_qconv2d(struct npu_cpu_ctx *ctx, const struct cpu_win *w,
                            const struct npu_tensor *x, int32_t xzp, const struct npu_tensor *wt,
                            const int32_t *wzp, const int32_t *bias, const struct cpu_qa *qa,
                            int32_t *acc);

/* npu_cpu_prepare for MatMulInteger (B = in[1]) and QLinearMatMul (B = in[3]) with a
 * constant 2-D int8/uint8 B, and for QLinearConv / ConvInteger (below). *out stays NULL when there
 * is nothing to do. */
enum npu_status cpu_qgemm_prepare(enum npu_op op, const struct npu_attrs *attrs,
                                  const struct npu_tensor *const *in, int nin,
                                  struct npu_cpu_prep **out);
/* QLinearConv (W = in[3]) and ConvInteger (W = in[1]) with constant 4-D int8/uint8 weights
 * and group 1 go through cpu_qgemm_prepare too: W converted once to the product's A side.
 * The converted W that prep holds for w (same data, shape and kernel byte type), or NULL. */
const struct cpu_qa *cpu_qa_prepared(const struct npu_cpu_prep *prep, const struct npu_tensor *w);
void cpu_qa_free(struct cpu_qa *q);
/* the packed B that prep holds for b (same data and shape), or NULL */
const struct cpu_qpack *cpu_qgemm_prepared(const struct npu_cpu_prep *prep,
                                           const struct npu_tensor *b);

/* The int8 kernel in use ("AVX-512 VNNI (vpdpbusd)", "AVX-VNNI (256-bit vpdpbusd)",
 * "AVX2 (vpmaddwd)", "NEON sdot", "portable C", "reference loops"), followed by
 * "(NPU_CPU_QGEMM=X)" when that variable chose it, or "(NPU_CPU_QGEMM=X ignored: ...)". */
const char *cpu_qgemm_path(void);
/* False when the reference loops run instead (NPU_CPU_QGEMM=ref, or forced). */
bool cpu_qgemm_on(void);
/* Tests: force a kernel (0 portable, 1 AVX2, 2 AVX-512 VNNI, 3 NEON sdot, 4 AVX-VNNI, 9 the
 * reference loops; -1 the best this CPU has, as lowered by
 * NPU_CPU_QGEMM=ref|portable|avx2|avxvnni). Returns the level used (portable if the CPU lacks
 * the one asked). Not thread-safe against running products. */
int cpu_qgemm_force(int level);

#endif /* NPU_CPU_QGEMM_H */
