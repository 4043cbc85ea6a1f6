/* SPDX-License-Identifier: MIT */
/*
 * npu-program-priv.h: what the files of the program executor share
 * (core/runtime/npu-program-*.c).
 */
#ifndef NPU_PROGRAM_PRIV_H
#define NPU_PROGRAM_PRIV_H

#include "npu-fp16.h"
#include "npu/npu-cpu.h"
#include "npu/npu-program-exec.h"

#define PROG_DOM "program"

/* Runs CPU step st on host tensors (npu-program-cpu.c): the kernel, plus the
 * fused bias / activation epilogue when the kernel does not apply them. */
enum npu_status prog_cpu_step(struct npu_cpu_ctx *ctx, const struct npu_prog_step *st,
                              const struct npu_cpu_prep *prep, const struct npu_tensor *const *in,
                              struct npu_tensor *const *out);
/* Load-time work for CPU step st (npu_cpu_prepare over its constant inputs: host tensors whose
 * data is in the program), so that e.g. a Conv's weights are packed once per session instead
 * of at every run. *out is NULL when there is nothing to prepare. */
enum npu_status prog_cpu_prepare(const struct npu_program *p, const struct npu_prog_step *st,
                                 const struct npu_tensor *views, struct npu_cpu_prep **out);

/* Whether input k of CPU step st may be read where the NPU holds it (npu-program-cpu.c):
 * K (1) or V (2) of an npu.Attention without is_causal, fp32 [kv_heads, slots, head_dim]
 * held as fp16 NC1HWC2 rows (view (head_dim, kv_heads x slots, 1), head_dim a multiple of
 * 8), Q a host fp32 [kv_heads, G, head_dim], the mask a host fp32 of G x slots elements with
 * slots last, Y a host fp32 [kv_heads, G, head_dim]. NULL when it may, else why not. */
const char *prog_cpu_in_place_why(const struct npu_program *p, const struct npu_prog_step *st,
                                  int k);
/* Whether CPU step st reads any input in NPU memory (validated by the above). */
bool prog_cpu_reads_npu(const struct npu_program *p, const struct npu_prog_step *st);
/* Runs such a step: the attention over K and V in place (core/cpu/npu-cpu-attn16.c). The
 * caller has synced K and V from the device. */
/* *slots: the most slots a query row read (npu_cpu_attn16_read_slots) */
enum npu_status prog_cpu_attn_in_place(const struct npu_program *p, const struct npu_prog_step *st,
                                       const struct npu_tensor *const *in,
                                       struct npu_tensor *const *out, int64_t *slots);

#endif /* NPU_PROGRAM_PRIV_H */
