/* SPDX-License-Identifier: MIT */
/*
 * npu-exec.h: extras of the cpu backend beyond npu-model.h, for tools and
 * tests: the compiled graph a model runs and its activation memory.
 */
#ifndef NPU_EXEC_H
#define NPU_EXEC_H

#include <stdbool.h>
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

/* ---- NPU backends (sim, rknpu, rocket) ---------------------------------- */

struct npu_program;
struct npu_prog_run_stats; /* npu/npu-program-exec.h */

/* The compiled program the model runs (NULL on the cpu backend). */
const struct npu_program *npu_model_program(const struct npu_model *m);
/* Whether the program came from the compile cache, and how long compiling
 * took when it did not (0 for a cache hit or a .npub). */
bool npu_model_from_cache(const struct npu_model *m);
double npu_model_compile_seconds(const struct npu_model *m);
/* npu_session_run with the executor's per-step and per-task figures (NPU
 * backends only; NPU_ERR_UNSUPPORTED on cpu). */
enum npu_status npu_session_run_detailed(struct npu_session *s, const struct npu_tensor *inputs,
                                         int nin, struct npu_tensor *outputs, int nout,
                                         struct npu_prog_run_stats *rs);

/* npu_prog_session_write_state (npu-program-exec.h) on the session's program session: rows
 * of a state input (resident in device memory) written between runs. NPU backends only. */
enum npu_status npu_session_write_state(struct npu_session *s, int input,
                                        const struct npu_tensor *block, int axis, int64_t start);
/* npu_prog_session_route_output (npu-program-exec.h) on the sessions' program sessions: an
 * output copied as NPU bytes into another session's state input during each run (data NULL
 * after it), instead of converted to the host. NPU backends only. Destroying dst first makes
 * s's later runs fail until the route is set again or undone (as there). */
enum npu_status npu_session_route_output(struct npu_session *s, int output, struct npu_session *dst,
                                         int input, int axis, int64_t start);
/* npu_prog_session_raw_output and npu_prog_session_output_argmax (npu-program-exec.h) on the
 * session's program session: an output left in the NPU's layout (data NULL after a run)
 * and its argmax read there. NPU backends only. */
struct npu_prog_argmax;
enum npu_status npu_session_raw_output(struct npu_session *s, int output, bool raw);
enum npu_status npu_session_output_argmax(struct npu_session *s, int output, int64_t base,
                                          struct npu_prog_argmax *acc);

/* npu_prog_session_split_layers (npu-program-exec.h) on the session's program session:
 * every job split over cores 0 .. cores-1 where the timing model says it pays (simulator
 * only; the session must be on core 0; cores 1 undoes it). NPU_ERR_UNSUPPORTED on cpu. */
struct npu_prog_split_info;
enum npu_status npu_session_split_layers(struct npu_session *s, const struct npu_tensor *inputs,
                                         int nin, unsigned cores, struct npu_prog_split_info *info);

/* Flags for npu_model_from_graph (tests and debugging). */
enum npu_exec_flags {
    /* Run fused Conv/Gemm/MatMul as kernel + executor epilogue (bias Add and
     * activation kernels) even where the kernel could apply them itself. */
    NPU_EXEC_NO_KERNEL_FUSION = 1u << 0,
    /* Decompose npu.Attention / npu.SiLU / npu.GeluTanh into unfused kernels. */
    NPU_EXEC_DECOMPOSE_FUSED = 1u << 1,
    /* Do not run the pass pipeline (the graph is executed as given). */
    NPU_EXEC_NO_PASSES = 1u << 2,
};

/* Makes a cpu-backend model from a graph (taken: freed with the model, or on
 * failure). opts may be NULL; dim_values and backend are ignored. */
enum npu_status npu_model_from_graph(struct npu_graph *g, const struct npu_model_options *opts,
                                     unsigned flags, struct npu_model **out);

/* Makes a model of a graph built in memory on any backend (opts->backend):
 * cpu as npu_model_from_graph; the NPU backends compile it through the whole
 * pipeline (npu_build_graph, no compile cache). g is taken. name is for
 * messages. */
enum npu_status npu_model_load_graph(struct npu_graph *g, const char *name,
                                     const struct npu_model_options *opts, struct npu_model **out);

#ifdef __cplusplus
}
#endif

#endif /* NPU_EXEC_H */
