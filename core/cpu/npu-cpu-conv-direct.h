/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-conv-direct.h: the direct fp32 convolution (npu-cpu-conv-direct.c) as seen by
 * the Conv kernel (npu-cpu-conv.c) and the prepare step (npu_cpu_prepare, npu-cpu.h).
 * Dense 2-D convolutions (group 1) run as a register-blocked product of weights packed in
 * blocks of 8 output channels and the input read in place (1x1, stride 1, unpadded) or from
 * a zero-padded copy split into stride phases, so that every tap of 48 consecutive outputs
 * is one contiguous run of the input: no im2col.
 */
#ifndef NPU_CPU_CONV_DIRECT_H
#define NPU_CPU_CONV_DIRECT_H

#include "npu-cpu-internal.h"

/* What npu_cpu_prepare made for one node (opaque in npu-cpu.h). */
struct npu_cpu_prep {
    enum npu_op op;
    const void *w_data; /* the weights it was made from (checked at run time) */
    int w_ndim;
    int64_t w_dims[NPU_MAX_DIMS];
    int64_t M, K;
    float *wp;              /* [ceil(M / 8)][K][8], rows past M zero */
    float *wt48;            /* small planes: [ceil(M / 48)][K][48], channels past M zero */
    float *wu;              /* 3x3 stride 1 (Winograd F(2x2, 3x3)): [16][ceil(M / 64)][C][64] */
    struct cpu_mm_pack *mm; /* MatMul/Gemm: B in panels (npu-cpu-gemm-packed.c) */
    struct cpu_qpack *qp;   /* MatMulInteger/QLinearMatMul: int8 B (npu-cpu-qgemm.c) */
    struct cpu_qa *qa;      /* QLinearConv/ConvInteger: int8 W as the product's A side */
};

struct cpu_cd_args {
    const struct cpu_win *w; /* 2-D window, already set up */
    int64_t N, C, M;
    const float *x, *wt, *bias; /* wt: [M, C, KH, KW]; bias [M] or NULL */
    float *y;
    const struct cpu_act_spec *act;
    const struct npu_cpu_prep *prep; /* packed weights or NULL (packed per call) */
    const float
        *res; /* [N, M, OH, OW] added before the activation (a fused residual Add), or NULL */
};

/* A prepared node made from the constant weights w (op, the weights' address and shape set,
 * the rest zero), or NULL with "out of memory" logged. */
struct npu_cpu_prep *cpu_prep_new(enum npu_op op, const struct npu_tensor *w);

/* True if the direct path handles this fp32 Conv (and is the faster one for its shape on
 * this CPU). NPU_CPU_CONV=gemm|direct forces the choice where the shape allows it. */
bool cpu_conv_direct_wanted(const struct cpu_win *w, int64_t C, int64_t M, int64_t G);
enum npu_status cpu_conv_direct(struct npu_cpu_ctx *ctx, const struct cpu_cd_args *a);

/* The fused activation of the direct path on n floats (AVX-512 SiLU/Sigmoid/Clip where the
 * direct kernels are AVX-512, else cpu_act_apply). */
void cpu_cd_act(const struct cpu_act_spec *act, float *x, int64_t n);

/* Winograd F(2x2, 3x3) (npu-cpu-conv-wino.c) for 3x3 stride-1 undilated dense convs on
 * AVX-512: wanted by shape (NPU_CPU_CONV_WINO=0 never, =1 wherever it applies); the weights
 * transformed into cpu_conv_wino_wsize(C, M) floats; the convolution with those (u) or, with
 * u NULL, transformed for this call. */
bool cpu_conv_wino_wanted(int64_t KH, int64_t KW, int64_t s0, int64_t s1, int64_t d0, int64_t d1,
                          int64_t C, int64_t M, int64_t OH, int64_t OW);
size_t cpu_conv_wino_wsize(int64_t C, int64_t M);
void cpu_conv_wino_pack(const float *w, int64_t C, int64_t M, float *u);
enum npu_status cpu_conv_wino(struct npu_cpu_ctx *ctx, const struct cpu_cd_args *a, const float *u);

/* The expand of a fused 1x1 -> depthwise pair (npu-cpu-pwdw.c), one band on the calling thread.
 * Usable: a 1x1 conv of C -> M channels over a plane of P positions is one that
 * cpu_conv_direct runs in the flat form, in place, with one chunk of k and no 1-2 output
 * tail, so that cpu_cd_pw_rows sums every output in the same order (the same bits). */
bool cpu_cd_pw_usable(int64_t P, int64_t C, int64_t M);
/* The packed weights: the prepared ones if pr was made from w, else packed into *own (free it;
 * NULL returned when out of memory). */
float *cpu_cd_pw_pack(const struct npu_cpu_prep *pr, const float *w, int64_t M, int64_t K,
                      float **own);
/* Floats of scratch cpu_cd_pw_rows needs for a sum of K. */
size_t cpu_cd_pw_scratch(int64_t K);
/* t[m - m0][q] (rows ld apart) = act(sum_k W[m][k] x[k * cs + p0 + q] + bias[m]) for q in
 * [0, L) and m in [m0, m1), m0 a multiple of 8; wp from cpu_cd_pw_pack, K <= 1024. */
void cpu_cd_pw_rows(const float *wp, int64_t K, int64_t M, const float *x, int64_t cs, int64_t p0,
                    int64_t L, int64_t m0, int64_t m1, const float *bias,
                    const struct cpu_act_spec *act, float *t, int64_t ld, float *scr);

#endif /* NPU_CPU_CONV_DIRECT_H */
