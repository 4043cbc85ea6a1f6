/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-gemm-packed.h: fp32 MatMul / Gemm whose B is a constant packed once by
 * npu_cpu_prepare (npu-cpu-gemm-packed.c), as seen by the MatMul and Gemm kernels
 * (npu-cpu-gemm.c) and the prepare step (npu-cpu-conv-direct.c).
 */
#ifndef NPU_CPU_GEMM_PACKED_H
#define NPU_CPU_GEMM_PACKED_H

#include "npu-cpu-internal.h"

struct npu_cpu_prep;
struct cpu_mm_pack;

/* npu_cpu_prepare for MatMul (B = in[1], 2-D) and Gemm (B = in[1], transB honoured): packs a
 * constant fp32 B into column panels. *out stays NULL when there is nothing to pack. */
enum npu_status cpu_mm_prepare(enum npu_op op, const struct npu_attrs *attrs,
                               const struct npu_tensor *const *in, int nin,
                               struct npu_cpu_prep **out);
void cpu_mm_pack_free(struct cpu_mm_pack *p);

/* C[M, N] (+)= A[M, K] . B with the B that `prep` packed, if prep holds a packed B made from
 * `b` (same data and shape, same transB) and this CPU has a kernel for M rows; then bias_col
 * ([N] or NULL) and act are applied. accumulate: C holds a value to add to. Returns false
 * (nothing done) otherwise. */
bool cpu_mm_packed_run(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *prep,
                       const struct npu_tensor *b, bool tb, int64_t M, const float *A, int64_t lda,
                       float *C, int64_t ldc, bool accumulate, const float *bias_col,
                       const struct cpu_act_spec *act);

/* Per-call packing for products whose B is not constant (attention's K^T and V), on one
 * thread: floats of the packed form of a K x N B; pack B (tb: stored [N, K], else [K, N],
 * row stride ldb) into dst; then C[M, N] = A[M, K] . packed B. cpu_mm_packed_gemm returns
 * false (nothing done) when this CPU has no wide kernel: the caller runs its own GEMM. */
size_t cpu_mm_pack_floats(int64_t K, int64_t N);
bool cpu_mm_pack_wanted(void);
void cpu_mm_pack_into(bool tb, const float *B, int64_t ldb, int64_t K, int64_t N, float *dst);
bool cpu_mm_packed_gemm(const float *bp, int64_t K, int64_t N, int64_t M, const float *A,
                        int64_t lda, float *C, int64_t ldc);

/* The packing budget (NPU_CPU_PACK_MB) shared with other packed constants (the int8 B of
 * npu-cpu-qgemm.c): take returns false, taking nothing, when `bytes` would pass it. */
bool cpu_mm_pack_budget_take(size_t bytes);
void cpu_mm_pack_budget_give(size_t bytes);

/* Tests: force (1) or forbid (0) the AVX-512 kernel for M > 4 (-1: decide by the CPU).
 * Returns whether it is used now. Not thread-safe against running products. */
bool cpu_mm_packed_wide(int want);

#endif /* NPU_CPU_GEMM_PACKED_H */
