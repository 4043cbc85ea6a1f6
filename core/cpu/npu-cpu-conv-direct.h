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

/* True if the direct path handles this fp32 Conv (and is the faster one for its shape on
 * this CPU). NPU_CPU_CONV=gemm|direct forces the choice where the shape allows it. */
bool cpu_conv_direct_wanted(const struct cpu_win *w, int64_t C, int64_t M, int64_t G);
enum npu_status cpu_conv_direct(struct npu_cpu_ctx *ctx, const struct cpu_cd_args *a);

#endif /* NPU_CPU_CONV_DIRECT_H */
