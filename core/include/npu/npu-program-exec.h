/* SPDX-License-Identifier: MIT */
/*
 * npu-program-exec.h: running a compiled program (npu-program.h) on a device
 * (npu-device.h). This is the runtime half of the model API's NPU backends
 * ("sim", "rknpu", "rocket"): compiler/driver/npu-model.c compiles or loads a
 * program and runs it through these calls.
 *
 * A loaded program (struct npu_prog_model) owns the model's one weights BO,
 * shared read-only by every session. A session (struct npu_prog_session) is
 * one execution slot bound to one NPU core: its own activation BO, host arena,
 * CPU kernel context, and per job a regcmd BO (the job's image relocated to
 * this session's BO addresses with npu_image_relocate) and a task BO (vendor
 * descriptors from npu_image_fill_rknpu_tasks). Relocation happens once, when
 * the session is made; a run only converts inputs, submits and waits.
 *
 * Threads: sessions of one model may run concurrently from different threads
 * (the model is read-only after creation); one session is used by one thread
 * at a time.
 */
#ifndef NPU_PROGRAM_EXEC_H
#define NPU_PROGRAM_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"
#include "npu/npu-device.h"
#include "npu/npu-program-check.h"
#include "npu/npu-program.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_prog_model;
struct npu_prog_session;

struct npu_prog_options {
    /* Host-side wait for one job, ms: < 0 forever, 0 = default (10 s on
     * hardware, 600 s on the simulator, which may be slow without being
     * stuck). On expiry the run fails with NPU_ERR_TIMEOUT and the session
     * keeps the job until it ends (its BOs stay alive). */
    int job_timeout_ms;
    /* Kernel-side submit timeout, ms (npu_submit.timeout_ms); 0 = 6000. */
    uint32_t submit_timeout_ms;
    /* Give p->weights' memory back as it is uploaded: the whole pages of each piece copied
     * into the weights BO leave the process (MADV_DONTNEED), so that the host copy and the
     * BO are never both resident (LLM weights: gigabytes). Only for weights in a private
     * mapping of their own: anonymous (whose pages then read as zero: the caller must read
     * the weights through npu_prog_model_weights() afterwards) or a read-only file mapping
     * (refaulted from the file if read again). Ignored below 1 MiB of weights. */
    bool release_host_weights;
};

/*
 * Validates p and uploads its weights. dev may be NULL only for a program
 * without NPU jobs or NPU tensors. p must outlive the model (its steps,
 * tensors and constants are used in place). opts may be NULL.
 */
enum npu_status npu_prog_model_create(struct npu_device *dev, const struct npu_program *p,
                                      const struct npu_prog_options *opts,
                                      struct npu_prog_model **out);
/* Sessions must be destroyed first. NULL is allowed. */
void npu_prog_model_destroy(struct npu_prog_model *m);
const struct npu_program *npu_prog_model_program(const struct npu_prog_model *m);
/* The weights BO's host mapping (a copy of p->weights), NULL without weights. */
const void *npu_prog_model_weights(struct npu_prog_model *m);

/* core: 0..n_cores-1, or -1 for the driver's choice (core mask 0).
 * cpu_threads: threads of this session's CPU kernel context (<= 0: all). */
enum npu_status npu_prog_session_create(struct npu_prog_model *m, int core, int cpu_threads,
                                        struct npu_prog_session **out);
void npu_prog_session_destroy(struct npu_prog_session *s);

/* Figures of one step of a run. */
struct npu_prog_step_stats {
    double host_s;    /* measured wall time (CPU op, conversion, or submit to end of wait) */
    double modeled_s; /* NPU jobs: modeled (timing model v1), submit overhead included */
    uint32_t tasks;
    uint64_t dma_bytes;     /* modeled */
    uint64_t macs;          /* useful multiply-accumulates */
    double mac_utilisation; /* modeled */
};

/* Figures of one task of an NPU job (for per-op breakdowns). */
struct npu_prog_task_stats {
    int step;         /* the job's step */
    uint32_t task;    /* index in the job */
    const char *name; /* npu_prog_task.name, else the step's name */
    double modeled_s; /* task_s of timing model v1 */
    uint64_t dma_bytes;
    uint64_t macs;
    double mac_utilisation; /* the task's, timing model v1 */
    /* (added later) where it ran: the run's submit index (0 ..), that submit's modeled
     * time (its overhead included), the core, the start after the submit's start, and the
     * weight bytes of its DMA (CNA weight reads) */
    uint32_t submit;
    double submit_s;
    uint32_t core;
    double start_s;
    uint64_t weight_bytes;
};

struct npu_prog_run_stats {
    double wall_s;        /* whole run */
    double cpu_s;         /* CPU steps (measured, host-dependent) */
    double convert_s;     /* CONVERT steps and I/O conversions (measured) */
    double npu_wait_s;    /* submit to end of wait (simulation time on the simulator) */
    bool timing_valid;    /* every job reported modeled figures */
    double npu_modeled_s; /* sum of the jobs' modeled times (timing model v1) */
    unsigned submits, tasks;
    uint32_t core_mask; /* cores the jobs ran on (OR of the job results) */
    uint64_t dma_bytes;
    uint64_t macs;
    double mac_utilisation; /* time-weighted over the jobs (each job's own peak) */
    /* Optional, caller's arrays: per step (n_steps entries) and per task
     * (task_cap entries; n_task_stats is set to how many were filled). */
    struct npu_prog_step_stats *steps;
    struct npu_prog_task_stats *task_stats;
    size_t task_cap, n_task_stats;
    /* The device's modeled timeline (timing_valid): the start of the run's first job and
     * the end of its last; with several sessions at once, their spans overlap. */
    double npu_modeled_start_s, npu_modeled_end_s;
    /* After npu_prog_session_split_layers: task pairs of a job that touch the same bytes
     * (one writing) and overlap on the modeled timeline, or that left no record; 0 when
     * every task's inputs were written before it ran. */
    uint32_t order_violations;
    /* Graph inputs in NPU memory: how many this run converted from the caller's data and
     * their bytes in NPU memory, and how many state inputs it left resident (data NULL). */
    unsigned inputs_converted, inputs_resident;
    uint64_t input_convert_bytes;
    /* CONVERT steps of this run and the bytes they wrote (host <-> NPU layouts). */
    unsigned convert_steps;
    uint64_t convert_step_bytes;
    /* CPU npu.Attention steps over a cache read in place (npu_cpu_attn16_decode) in this run,
     * and the most slots one of them read for a query row (npu_cpu_attn16_read_slots: up to
     * the mask's last valid slot, not the compiled slots); 0 when none ran. */
    unsigned cpu_attn_steps;
    int64_t cpu_attn_slots;
};

/*
 * Runs the program once. inputs[i] must match the program's input i (dtype,
 * dims; data row-major). A state input (a graph input in NPU_BUF_STATE) may
 * have data NULL: the run then uses what the buffer holds (zeros after
 * npu_prog_session_create, then whatever earlier runs left or wrote there) and
 * converts nothing; with data it is uploaded as any input. The position inputs
 * of dynamic relocations (npu_prog_dynreloc) are checked against their limits
 * before anything runs: a bad position fails the run with NPU_ERR_INVALID. On success outputs[i]
 * are views of session memory (or of the program's constants), valid until the next run or destroy.
 * stats may be NULL. A failing NPU job returns its status (NPU_ERR_FAULT,
 * NPU_ERR_HW_REFUSED, NPU_ERR_TIMEOUT, ...) after logging the step, the job
 * and the device's fault text; npu_prog_session_error() returns that text.
 */
enum npu_status npu_prog_session_run(struct npu_prog_session *s, const struct npu_tensor *inputs,
                                     int nin, struct npu_tensor *outputs, int nout,
                                     struct npu_prog_run_stats *stats);
/*
 * Writes a block of state input `input` (a graph input in NPU_BUF_STATE, fp32 held as fp16
 * or fp32 NC1HWC2) between runs, without converting the rest: block has the input's dtype
 * and dims except along `axis`, where it has n elements that go to positions start ..
 * start + n - 1; only the bytes written are synced to the device. This is how a KV cache
 * resident in device memory gets its new rows. Positions outside the axis are refused
 * (NPU_ERR_INVALID) before anything is written.
 */
enum npu_status npu_prog_session_write_state(struct npu_prog_session *s, int input,
                                             const struct npu_tensor *block, int axis,
                                             int64_t start);
/*
 * Routes graph output `output` into state input `input` of dst (another session, of another
 * program; NULL undoes it): later runs of s, where the CONVERT step that makes the output
 * would convert it to the host, copy its NPU bytes into dst's state instead (no conversion:
 * from the tensor's NC1HWC2 layout to the state's, the same element type) and return the
 * output with data NULL. The output's elements, row-major, are the state's dims with n
 * entries along `axis`, written at positions start .. start + n - 1 (checked here and at
 * each run, before anything is written). NPU_ERR_UNSUPPORTED unless the output is made by
 * one CONVERT step from a tensor held as fp16 / fp32 NC1HWC2 that no other step reads.
 * The route ties the two sessions: a run of s writes dst's memory, so the two must not be
 * used (run, routed, destroyed) at the same time on different threads. Destroying s ends its
 * routes. Destroying dst while s still routes into it is allowed: nothing is written into the freed
 * session, and every later run of s fails (NPU_ERR_INVALID, naming the output) until that output is
 * routed again or the route undone (dst NULL), so that a run never reports success for a copy it
 * did not make.
 */
enum npu_status npu_prog_session_route_output(struct npu_prog_session *s, int output,
                                              struct npu_prog_session *dst, int input, int axis,
                                              int64_t start);
/*
 * raw: later runs of s leave graph output `output` in the NPU layout, its CONVERT step not run
 * (no conversion to the host; the output returned with data NULL), for
 * npu_prog_session_output_argmax to read after each run; false undoes it. NPU_ERR_UNSUPPORTED
 * unless the output is made by one CONVERT step from an fp16 / fp32 NC1HWC2 tensor that no
 * other step reads; NPU_ERR_INVALID where the output is routed (npu_prog_session_route_output; a
 * raw output cannot be routed either).
 */
enum npu_status npu_prog_session_raw_output(struct npu_prog_session *s, int output, bool raw);
/* After a run, raw output `output` as the NPU left it: *layout describes its bytes (the NPU
 * tensor: dtype, NC1HWC2 view; its offset is not into *bytes), *bytes a copy of them taken at
 * the step that would have converted it (valid until the next run or the output is converted
 * again). npu_prog_session_output_argmax continues acc's scan (npu_prog_argmax,
 * npu-program-check.h) over its values, element i numbered base + i. */
enum npu_status npu_prog_session_output_raw(struct npu_prog_session *s, int output,
                                            const struct npu_prog_tensor **layout,
                                            const void **bytes);
struct npu_prog_argmax;
enum npu_status npu_prog_session_output_argmax(struct npu_prog_session *s, int output, int64_t base,
                                               struct npu_prog_argmax *acc);
/* The message of the last failed run ("" after a success). */
const char *npu_prog_session_error(const struct npu_prog_session *s);

/* What npu_prog_session_split_layers planned (per run of the program). */
struct npu_prog_split_info {
    unsigned cores;
    uint32_t jobs_split;     /* jobs with at least one multi-core submit */
    uint32_t submits;        /* NPU submits of one run */
    uint32_t parallel_segs;  /* of them, multi-core */
    uint32_t tasks;          /* all NPU tasks */
    uint32_t parallel_tasks; /* tasks in multi-core submits */
};

/*
 * Layer split (one frame over several cores): runs the program once with the inputs on
 * the session's core (which must be 0), recording each task's DRAM reads and writes
 * (simulator backend only; elsewhere NPU_ERR_UNSUPPORTED), then splits every job into
 * submits: runs of consecutive tasks that are pairwise independent and use no LUT go to
 * cores 0 .. cores-1 as contiguous shares of one submit (one chain per core, as
 * npu-mc-matmul.h); the rest runs in order on core 0. A submit is the barrier: the next
 * starts when every core of the last one is done. Later runs use the split and count
 * order violations (npu_prog_run_stats.order_violations). cores 1 undoes the split.
 * The inputs only steer the recording: addresses do not depend on data.
 */
enum npu_status npu_prog_session_split_layers(struct npu_prog_session *s,
                                              const struct npu_tensor *inputs, int nin,
                                              unsigned cores, struct npu_prog_split_info *info);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PROGRAM_EXEC_H */
