/* SPDX-License-Identifier: MIT */
/*
 * npu-sim.h: the functional simulator of the RK3588 NPU, as the runtime's
 * "sim" backend sees it. One struct npu_sim is one NPU: a 32-bit IOVA space
 * with its buffer objects, three cores each run by its own worker thread, and
 * the part of the vendor kernel driver that turns a submit into per-core PC
 * launches (core mask, subcore_task ranges, interrupt mask check).
 *
 * The simulator executes the exact bytes that would reach the kernel: the
 * rknpu_task descriptors in the task BO, the regcmd segments they point at
 * and the data at the IOVAs the registers name. It refuses what the hardware
 * would refuse, and (strict mode, the default) every register pattern that
 * shared/hw/rk3588-npu-facts.md marks unverified or open. docs/simulator.md
 * describes the model and lists the open questions it flags.
 *
 * Thread safety: every function may be called from any thread; a job handle
 * is waited on by one thread at a time.
 */
#ifndef NPU_SIM_H
#define NPU_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"
#include "npu/npu-device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_SIM_VERSION_MAJOR 0
#define NPU_SIM_VERSION_MINOR 1
#define NPU_SIM_VERSION_PATCH 0
#define NPU_SIM_VERSION_STR NPU_PROJECT_VERSION /* meson.build: the project's version */

struct npu_sim;
struct npu_sim_bo;
struct npu_sim_job;

struct npu_sim_options {
    int strict;       /* 1 strict, 0 lenient, -1 default (strict unless NPU_DEBUG=lenient) */
    unsigned n_cores; /* 1..3; 0 = 3 */
    /* Strict mode's allow-list threshold (docs/evidence.md): an enum
     * npu_evidence_level from NPU_EVIDENCE_T to NPU_EVIDENCE_V; 0 = default
     * ($NPU_SIM_EVIDENCE = V, M, O, T or off; unset: none); -1 = no allow-list. */
    int evidence;
    int lut_index; /* enum npu_lut_index; 0 = NPU_SIM_LUT (double|fixed), else double */
};

enum npu_status npu_sim_create(const struct npu_sim_options *opts, struct npu_sim **out);
/* Waits for queued jobs, stops the workers and frees everything. */
void npu_sim_destroy(struct npu_sim *sim);
bool npu_sim_is_strict(const struct npu_sim *sim);
unsigned npu_sim_n_cores(const struct npu_sim *sim);
void npu_sim_get_info(const struct npu_sim *sim, struct npu_device_info *info);

/* ---- IOVA space. BOs are page aligned and placed top-down below 4 GiB with a
 * one-page gap between neighbours (vendor-like placement, facts §3). */
enum npu_status npu_sim_bo_create(struct npu_sim *sim, size_t size, struct npu_sim_bo **out);
enum npu_status npu_sim_bo_create_at(struct npu_sim *sim, uint32_t iova, size_t size,
                                     struct npu_sim_bo **out);
void *npu_sim_bo_cpu(const struct npu_sim_bo *bo);
uint32_t npu_sim_bo_iova(const struct npu_sim_bo *bo);
size_t npu_sim_bo_size(const struct npu_sim_bo *bo);
/* Unmaps the BO from the IOVA space at once; its memory is freed when the last
 * job that started while it was mapped ends. */
void npu_sim_bo_destroy(struct npu_sim_bo *bo);

/* ---- Jobs. The submit is checked as the vendor kernel checks it; task_bo is
 * the simulator BO behind submit->task_bo (the caller resolves it). */
enum npu_status npu_sim_submit(struct npu_sim *sim, const struct npu_submit *submit,
                               struct npu_sim_bo *task_bo, struct npu_sim_job **out);
enum npu_status npu_sim_wait(struct npu_sim_job *job, int timeout_ms,
                             struct npu_job_result *result);
void npu_sim_job_destroy(struct npu_sim_job *job);

#ifdef __cplusplus
}
#endif

#endif /* NPU_SIM_H */
