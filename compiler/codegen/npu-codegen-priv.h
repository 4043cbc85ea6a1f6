/* SPDX-License-Identifier: MIT */
/*
 * npu-codegen-priv.h: the state of one codegen run (struct npu_cg, per-value placement in
 * struct vinfo), shared by program generation (npu-codegen.c) and memory planning
 * (npu-memplan.c).
 */
#ifndef NPU_CODEGEN_PRIV_H
#define NPU_CODEGEN_PRIV_H

#include "npu-rk.h"

/* Where a value lives: its program tensors, lifetime and offsets (by value id). */
struct vinfo {
    int host;        /* program tensor index on the host, -1 */
    int npu;         /* program tensor index in NPU memory, -1 */
    int first, last; /* positions (node order) */
    bool npu_val;    /* rk.* value (NPU_BUF_ACT) */
    bool npu_const;  /* constant the NPU reads (NPU_BUF_WEIGHTS) */
    bool host_val;   /* non-constant host value */
    bool host_const; /* constant a CPU step or conversion reads */
    /* the NPU side of a state graph input (npu_value.is_state) whose only reader is its
     * conversion: kept in NPU_BUF_STATE at state_off as program input state_input, the
     * conversion left out (the runtime converts it only when the caller gives data) */
    bool state;
    int state_input;
    /* the result of an in-place state write (rk.Dpu "inplace", dpu-state.c): the bytes of
     * the state value it updates, in NPU_BUF_STATE at state_off (no program input of its own) */
    bool state_alias;
    uint64_t act_off, w_off, host_off, state_off;
    int job; /* job that writes (npu) or -1 */
    int ord; /* first mention in node order (inputs, then outputs): the
                planning order, independent of value ids, so that a
                graph parsed from its text plans identically */
};

/* One codegen run: the graph, the program being built, the open job's stream. */
struct npu_cg {
    const struct npu_graph *g;
    bool release_consts; /* NPU_CODEGEN_RELEASE_CONSTS */
    const struct npu_backend_options *o;
    struct npu_program *p;
    struct vinfo *vi; /* by value id */
    int nvi;
    struct npu_stream s;
    enum npu_status err;
    /* program lists being built */
    struct npu_prog_tensor *tensors;
    int n_tensors, cap_tensors;
    struct npu_prog_step *steps;
    int n_steps, cap_steps;
    struct npu_prog_job *jobs;
    int n_jobs, cap_jobs;
    double job_s;
    /* the IR node of each task of the open job, in stream order (npu_prog_task.name):
     * pointers to node names of the graph, copied into the program at close_job */
    const char **task_node;
    int n_task_node, cap_task_node;
    /* run-time positioned writes of the open job (rk.Dpu "dyn"), made into the job's
     * npu_prog_dynreloc at close_job: the task, the address it writes and the position */
    struct cg_dyn {
        uint32_t task; /* hardware task index in the job's stream */
        uint32_t buffer, offset;
        struct npu_prog_dynreloc d; /* reloc filled in at close_job */
    } * dyn;
    int n_dyn, cap_dyn;
};

/* ---- npu-codegen.c --------------------------------------------------------------------------- */

/* Whether n is an rk.* node that emits tasks (not a conversion). */
bool cg_is_compute(const struct npu_node *n);

/* ---- npu-memplan.c --------------------------------------------------------------------------- */

/* Positions, jobs and lifetimes; fills cg->vi and returns each node position's job (-1 for
 * none) in *pos_job_out (the caller frees it). */
enum npu_status cg_analyse(struct npu_cg *cg, int **pos_job_out);
/* Offsets of NPU values (NPU_BUF_ACT), NPU constants (NPU_BUF_WEIGHTS, copied into the
 * program) and host values (the host arena); needs cg_analyse first. */
enum npu_status cg_plan_memory(struct npu_cg *cg);

#endif /* NPU_CODEGEN_PRIV_H */
