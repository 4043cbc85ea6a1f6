/* SPDX-License-Identifier: MIT */
/*
 * npu-device.h: the device layer. A device is one RK3588 NPU (three cores)
 * reached through a backend: "sim" (the built-in functional simulator, the
 * default where no NPU exists), "rknpu" (vendor DRM driver 0.8/0.9, Rockchip's
 * 6.1 kernels) and "rocket" (upstream accel driver, Linux >= 6.18); see
 * docs/hardware.md. Every backend takes the same inputs the
 * vendor kernel takes: buffer objects at 32-bit NPU addresses (IOVAs), a task
 * buffer holding the rknpu_task descriptor array (facts §4.1, 40 bytes each),
 * regcmd segments chained through their tails (facts §1.3), and a submit
 * naming the task range, core mask and per-core ranges (subcore_task).
 *
 * Ownership: every object has a create/destroy pair. A BO must outlive the
 * jobs that use it; destroying a BO that a running job still reads is safe
 * on the simulator (the memory stays until the job ends) but is a bug.
 * Threads: a device may be used from several threads at once; one job handle
 * is waited on by one thread at a time.
 *
 * Timing: the simulator returns figures from timing model v1
 * (shared/hw/timing-model-v1.md). They are a model, not a measurement, and
 * must be printed as "modeled (timing model v1)".
 */
#ifndef NPU_DEVICE_H
#define NPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_MAX_CORES 3
/* Entries of rknpu_submit.subcore_task (facts §4.1). */
#define NPU_SUBCORE_SLOTS 5

struct npu_device;
struct npu_bo;
struct npu_job;

/* ---------------------------------------------------------------- device */

enum npu_device_info_flags {
    NPU_DEVICE_SIMULATED = 1u << 0,      /* no hardware: results come from the simulator */
    NPU_DEVICE_STRICT = 1u << 1,         /* simulator refuses unverified register patterns */
    NPU_DEVICE_MODELED_TIMING = 1u << 2, /* job results carry modeled times */
    NPU_DEVICE_FIXED_IOVA = 1u << 3,     /* npu_bo_create_at() is available */
};

struct npu_device_info {
    char backend[16];        /* "sim", "rknpu", "rocket" */
    unsigned n_cores;        /* NPU cores jobs may use */
    uint32_t hw_version;     /* vendor GET_HW_VERSION value; 0 if unknown or simulated */
    uint32_t drv_version;    /* major*10000 + minor*100 + patch (driver or simulator) */
    char hw_version_str[64]; /* human-readable forms of the two versions */
    char drv_version_str[64];
    char description[256]; /* one line for logs and npu-info */
    char timing_model[32]; /* "timing model v1" when MODELED_TIMING, else "" */
    uint32_t flags;        /* enum npu_device_info_flags */
};

struct npu_device_options {
    /* Simulator only: 1 strict (refuse unknown registers and unverified register
     * patterns), 0 lenient (warn and continue), -1 default = strict unless
     * NPU_DEBUG contains "lenient". */
    int strict;
    /* Simulator strict mode only: the evidence threshold of the allow-list, an
     * enum npu_evidence_level (npu/npu-evidence.h) from 1 (T) to 4 (V): every
     * register write must be covered by a ledger entry at that level or above.
     * 0 = default ($NPU_SIM_EVIDENCE = V, M, O, T or off; unset: no
     * allow-list); -1 = no allow-list (the deny-list checks only). */
    int evidence;
    /* Simulator only: how the DPU LUT forms its index (enum npu_lut_index; 0 = the
     * environment's NPU_SIM_LUT=double|fixed, else double). docs/simulator.md. */
    int lut_index;
};

/* The simulator's models of the DPU LUT index (docs/simulator.md, "LUT"): DOUBLE takes the
 * fractional index (u - START) / 2^INDEX_SELECT of the exact value; FIXED first rounds the
 * value to an integer, so only the low INDEX_SELECT bits interpolate. */
enum npu_lut_index {
    NPU_LUT_INDEX_DEFAULT = 0,
    NPU_LUT_INDEX_DOUBLE = 1,
    NPU_LUT_INDEX_FIXED = 2,
};

/*
 * Opens a device. backend: "sim", "rknpu", "rocket", or "auto"/NULL (the first
 * hardware backend that finds an NPU, else "sim"). opts may be NULL (defaults).
 * Returns NPU_ERR_NO_DEVICE for an unknown or unavailable backend; *out is
 * NULL on failure.
 */
enum npu_status npu_device_open(const char *backend, struct npu_device **out);
enum npu_status npu_device_open_ex(const char *backend, const struct npu_device_options *opts,
                                   struct npu_device **out);
/* Why "auto" would take or pass over each backend, in its order of preference
 * (rknpu, rocket, sim). */
struct npu_backend_probe {
    char name[16];
    enum npu_status status; /* NPU_OK, or what opening it would return */
    char reason[320];       /* the node found, or why not ("no /dev/dri node ...") */
};

/* Fills up to max entries; returns how many there are. */
unsigned npu_device_probe_backends(struct npu_backend_probe *out, unsigned max);

/* Waits for the device's jobs to finish, then frees it. The caller must have
 * destroyed its BOs and jobs first (leftovers are reported and freed). */
void npu_device_close(struct npu_device *dev);
/* Fills *info (borrowed device). */
enum npu_status npu_device_get_info(struct npu_device *dev, struct npu_device_info *info);

/* ------------------------------------------------------ buffer objects */

enum npu_bo_flags {
    NPU_BO_CACHEABLE = 1u << 0, /* CPU-cached mapping; needs npu_bo_sync around device use */
    NPU_BO_TASKS = 1u << 1,     /* holds rknpu_task descriptors (kernel-mapped on rknpu) */
};

enum npu_sync_dir {
    NPU_SYNC_TO_DEVICE = 1,   /* CPU writes become visible to the NPU */
    NPU_SYNC_FROM_DEVICE = 2, /* NPU writes become visible to the CPU */
};

/*
 * Creates a BO of size bytes (rounded up to 4 KiB) mapped at a page-aligned
 * 32-bit IOVA. Contents start zeroed. flags: enum npu_bo_flags.
 */
enum npu_status npu_bo_create(struct npu_device *dev, size_t size, uint32_t flags,
                              struct npu_bo **out);
/*
 * As npu_bo_create, but at a caller-chosen IOVA (page aligned, must not overlap
 * another BO). For replaying captured streams; only backends with
 * NPU_DEVICE_FIXED_IOVA (the simulator) support it, others return
 * NPU_ERR_UNSUPPORTED.
 */
enum npu_status npu_bo_create_at(struct npu_device *dev, uint32_t iova, size_t size, uint32_t flags,
                                 struct npu_bo **out);
/* The BO's NPU address (what regcmd address registers hold). */
uint32_t npu_bo_iova(const struct npu_bo *bo);
/* Size in bytes as requested (the mapping itself is page-rounded). */
size_t npu_bo_size(const struct npu_bo *bo);
/* CPU pointer to the BO (mapped on first call; stays valid until destroy).
 * NULL on failure, reason logged. */
void *npu_bo_map(struct npu_bo *bo);
/* Cache maintenance for [offset, offset+len) (len 0 = to the end). dir: enum
 * npu_sync_dir (may be OR-ed). Bad ranges return NPU_ERR_INVALID. */
enum npu_status npu_bo_sync(struct npu_bo *bo, unsigned dir, size_t offset, size_t len);
/* Unmaps and frees the BO (NULL is allowed). */
void npu_bo_destroy(struct npu_bo *bo);

/* ------------------------------------------------------------------ jobs */

/* Job flags, with the vendor driver's values (facts §4.1). */
enum npu_job_flags {
    NPU_JOB_PC = 1u << 0,       /* mandatory: the PC fetches regcmds by DMA */
    NPU_JOB_NONBLOCK = 1u << 1, /* vendor: ioctl returns at once (the API is always async) */
    NPU_JOB_PINGPONG = 1u << 2, /* TASK_PP_EN: prefetch the next task's registers */
};

struct npu_subcore_range {
    uint32_t task_start;  /* first descriptor index this core runs */
    uint32_t task_number; /* how many tasks (chained through regcmd tails) */
};

/*
 * One job, as the vendor RKNPU_SUBMIT ioctl takes it. In PC mode the hardware
 * reaches tasks 2..n only through the regcmd tails; descriptors after the
 * first of each range matter only for the last one's int_mask.
 *
 * core_mask 0 = auto (one core picked; it runs subcore_task[core]); masks with
 * 1 or 2 cores: core i runs subcore_task[i]; mask 7: core i runs
 * subcore_task[i + 2] (vendor 0.9.8 indexing, facts §4.1).
 */
struct npu_submit {
    struct npu_bo *task_bo; /* rknpu_task array (borrowed; must outlive the job) */
    uint32_t task_start;    /* used when the device takes the whole range on one core */
    uint32_t task_number;   /* > 0 */
    uint32_t core_mask;     /* 0 auto, or bits 0..2 */
    struct npu_subcore_range subcore_task[NPU_SUBCORE_SLOTS];
    uint32_t flags;          /* enum npu_job_flags; NPU_JOB_PC is required */
    uint32_t timeout_ms;     /* kernel-side timeout; 0 = backend default (6000 ms) */
    uint64_t task_base_addr; /* TASK_DMA_BASE_ADDR (normally 0) */
    int32_t priority;
};

/* Modeled figures of one task (timing model v1). */
/* One DRAM range a task touched, [lo, hi) in IOVA (the simulator's record, for
 * ordering checks and the layer split of npu_prog_session_split_layers()). */
struct npu_task_access {
    uint32_t lo, hi;
    uint32_t write; /* 1: written (DPU WDMA / PPU output), 0: read */
};
#define NPU_TASK_ACCESS_MAX 8

#define NPU_TASK_LUT_READ 1u
#define NPU_TASK_LUT_UPLOAD 2u
struct npu_task_timing {
    uint32_t task;          /* descriptor index in the task BO */
    uint32_t core;          /* core that ran it */
    uint32_t enable;        /* op_en block mask of the task */
    double start_s;         /* modeled start, seconds after the job's modeled start */
    double compute_s;       /* MAC-array (or DPU/PPU atom) time */
    double dma_s;           /* DMA time after any multi-core bandwidth stretch */
    double task_s;          /* max(compute_s, dma_s) + task overhead */
    uint64_t dma_bytes;     /* sum of the five below */
    uint64_t feature_bytes; /* CNA feature reads */
    uint64_t weight_bytes;  /* CNA weight reads (0 when reused from CBUF) */
    uint64_t rdma_bytes;    /* DPU_RDMA / PPU_RDMA reads */
    uint64_t output_bytes;  /* DPU / PPU writes */
    uint64_t regcmd_bytes;  /* regcmd fetch: 16 * (AMOUNT + 1) */
    uint64_t mac_steps;     /* full-array steps */
    uint64_t macs;          /* useful multiply-accumulates */
    double mac_utilisation; /* macs / (mac_per_cycle * clock * task_s) */
    /* Simulator only (n_access 0 elsewhere): the DRAM the task read and wrote, as at most
     * NPU_TASK_ACCESS_MAX ranges (merged, widened when there are more: a superset), and
     * whether it uploaded or used the core's LUT (state that stays in the core):
     * uses_lut has NPU_TASK_LUT_READ when the task's DPU read the table and
     * NPU_TASK_LUT_UPLOAD when it wrote it, 0 when it did neither. */
    uint32_t n_access;
    struct npu_task_access access[NPU_TASK_ACCESS_MAX];
    uint32_t uses_lut;
    /* DATA_REUSE / WEIGHT_REUSE: the descriptor index of the task whose CBUF contents it
     * used (the earliest, if both), UINT32_MAX if none; it must run on the same core,
     * after that task, with no other CBUF load in between. */
    uint32_t cbuf_from;
};

struct npu_job_result {
    enum npu_status status;             /* NPU_OK, or why the job failed */
    char message[512];                  /* fault / refusal text naming task, block, address */
    uint32_t core_mask;                 /* cores the job ran on */
    uint32_t int_status[NPU_MAX_CORES]; /* interrupt status written back per core */
    uint32_t task_counter;              /* tasks completed, all cores */
    double host_s;                      /* host wall time the backend spent (simulation time) */
    double hw_elapsed_s;                /* hardware backends: measured time; 0 on the simulator */

    /* modeled (the timing model in use, v2 by default); only when timing_valid */
    bool timing_valid;
    const char *timing_model; /* "timing model v2" */
    double modeled_s;         /* submit overhead + longest core chain */
    double modeled_start_s;   /* on the device's modeled timeline */
    double modeled_end_s;
    double compute_s; /* sums over tasks */
    double dma_s;
    uint64_t dma_bytes;
    uint64_t macs;
    double mac_utilisation; /* macs / (mac_per_cycle * cores used * clock * modeled_s) */
    uint32_t n_tasks;
    const struct npu_task_timing *tasks; /* owned by the job; valid until npu_job_destroy */
};

/*
 * Queues a job. Returns NPU_ERR_INVALID for a malformed submit (checked as the
 * vendor kernel checks it: PC flag, task_number > 0, core mask <= 7, ranges
 * inside the task BO); faults found while running are reported by
 * npu_job_wait. *out must be freed with npu_job_destroy.
 */
enum npu_status npu_job_submit(struct npu_device *dev, const struct npu_submit *submit,
                               struct npu_job **out);
/*
 * Waits up to timeout_ms (< 0: forever, 0: poll). Returns NPU_ERR_TIMEOUT if
 * the job is still running (it keeps running; wait again), otherwise the job's
 * final status, with *result (may be NULL) filled in. Result pointers stay
 * valid until npu_job_destroy.
 */
enum npu_status npu_job_wait(struct npu_job *job, int timeout_ms, struct npu_job_result *result);
/* Frees a job; a job still running is waited for first. NULL is allowed. */
void npu_job_destroy(struct npu_job *job);

#ifdef __cplusplus
}
#endif

#endif /* NPU_DEVICE_H */
