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

#endif /* NPU_PROGRAM_PRIV_H */
