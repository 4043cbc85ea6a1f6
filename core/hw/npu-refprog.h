/* SPDX-License-Identifier: MIT */
/*
 * npu-refprog.h: the hardware-proven reference programs of facts Appendix A, emitted with the
 * task builder and the generated register header. They are what the simulator is first
 * checked against and what the compiler's emitters are compared with.
 *
 *   A.1 matmul C[M][N] = A[M][K] . B[K][N] as one 1x1-conv task (MTX gen_matmul_fp16/int8):
 *       fp16 -> fp32, fp16 -> fp16, int8 -> int32. Constraints (MTX): K % 32 == 0,
 *       N % 16 == 0, M % 4 == 0 or M == 1, the input fits the 11 data banks of CBUF.
 *       Reproduces every mtx-matmul-* golden file byte for byte.
 *   A.2 DPU flying-mode elementwise z = x OP y over W pixels x C channels (AB
 *       elementwise_int.py; ONPU/RKNN fp16 add/sub/mul/div templates), full DPU + DPU_RDMA
 *       register set in RKNN's order. Reproduces the EW task of the onpu-{add,sub,mul,div}
 *       golden files.
 */
#ifndef NPU_REFPROG_H
#define NPU_REFPROG_H

#include "npu-task.h"

#ifdef __cplusplus
extern "C" {
#endif

enum npu_ref_matmul_kind {
    NPU_REF_MATMUL_FP16_FP32 = 0,
    NPU_REF_MATMUL_FP16_FP16,
    NPU_REF_MATMUL_INT8_INT32,
};

/* A buffer reference: relocation buffer id and byte offset (npu-task.h). */
struct npu_ref_buf {
    uint32_t buffer;
    uint32_t offset;
};

struct npu_ref_matmul {
    enum npu_ref_matmul_kind kind;
    uint32_t m, k, n;
    struct npu_ref_buf input;  /* A as NC1HWC2, W = 1, H = M, C = K */
    struct npu_ref_buf weight; /* B packed with npu_weight_pack_matmul() */
    struct npu_ref_buf output; /* C as NC1HWC2, W = 1, H = M, C = N (C2 = 4 fp32/int32, 8 fp16) */
};

/* Emits one whole task (begin .. end, op_en 0x0d). Errors (shape constraints) are logged,
 * set the stream's sticky error and are returned. */
enum npu_status npu_ref_matmul_emit(struct npu_stream *s, const struct npu_ref_matmul *p);

enum npu_ref_ew_op {
    NPU_REF_EW_ADD = 0,
    NPU_REF_EW_SUB,
    NPU_REF_EW_MUL,
    NPU_REF_EW_DIV,
    NPU_REF_EW_MAX,
    NPU_REF_EW_MIN,
};

struct npu_ref_eltwise {
    enum npu_ref_ew_op op;
    enum npu_precision precision; /* INT8, INT16, FP16, INT32 (p of facts A.2) */
    uint32_t w, c;                /* pixels, channels; tensors are [ceil(C/C2)][W][C2] */
    /* fp16 only: compute in fp32 (MRDMA_FP16TOFP32_EN + FP32TOFP16_EN). -1 = what RKNN does
     * (add/sub/mul yes, div no; NOTES S18), 0 = no (AB's A.2), 1 = yes. */
    int fp32_internal;
    struct npu_ref_buf x, y, z;
};

/* Emits one whole task (op_en 0x18). */
enum npu_status npu_ref_eltwise_emit(struct npu_stream *s, const struct npu_ref_eltwise *p);

#ifdef __cplusplus
}
#endif

#endif /* NPU_REFPROG_H */
