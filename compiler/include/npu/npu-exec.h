/* SPDX-License-Identifier: MIT */
/*
 * npu-exec.h: extras of the cpu backend beyond npu-model.h, for tools and
 * tests: the compiled graph a model runs and its activation memory.
 */
#ifndef NPU_EXEC_H
#define NPU_EXEC_H

#include <stddef.h>

#include "npu/npu-ir.h"
#include "npu/npu-model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Peak bytes of activation memory one session holds (buffers of dead tensors
 * are reused). */
size_t npu_model_activation_bytes(const struct npu_model *m);
/* The graph after the pass pipeline (read-only, valid while m lives). */
const struct npu_graph *npu_model_graph(const struct npu_model *m);

#ifdef __cplusplus
}
#endif

#endif /* NPU_EXEC_H */
