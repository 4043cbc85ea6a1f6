/* SPDX-License-Identifier: MIT */
/*
 * npu-device-backend.h: the table a device backend fills in (internal to
 * core/runtime). The public functions of npu-device.h check their arguments,
 * keep the bookkeeping (BO and job wrappers, mapping once, leak reports) and
 * call these slots. A backend only translates: the simulator hands the submit
 * to core/sim; "rknpu" (npu-backend-rknpu.c) copies the same task array and
 * ranges into struct rknpu_submit and calls DRM_IOCTL_RKNPU_SUBMIT; "rocket"
 * (npu-backend-rocket.c) turns each task into a drm_rocket_task (regcmd IOVA
 * + qword count) and each core's range into one rocket job.
 *
 * Adding a backend: write npu-backend-<name>.c defining a const struct
 * npu_device_ops, and list it in backends[] in npu-device.c.
 */
#ifndef NPU_DEVICE_BACKEND_H
#define NPU_DEVICE_BACKEND_H

#include <pthread.h>

#include "npu/npu-device.h"

struct npu_device_ops;

struct npu_device {
    const struct npu_device_ops *ops;
    void *priv; /* the backend's state */
    pthread_mutex_t lock;
    unsigned n_bos, n_jobs; /* live wrappers, for the leak report at close */
};

struct npu_bo {
    struct npu_device *dev;
    void *handle; /* backend BO (sim: struct npu_sim_bo *) */
    uint32_t iova;
    size_t size;
    uint32_t flags;
    void *cpu; /* mapping, made on first npu_bo_map (under dev->lock) */
};

struct npu_job {
    struct npu_device *dev;
    void *handle; /* backend job */
};

struct npu_device_ops {
    /* Backend name as given to npu_device_open ("sim", "rknpu", "rocket"). */
    const char *name;

    /* (optional) Whether the backend can run on this machine (device node
     * present, accessible, driver version accepted). why (one line) says what
     * was found or why not; the return is NPU_OK or the status open() would
     * give. Used by "auto" and npu_device_probe_backends(); NULL = always. */
    enum npu_status (*probe)(char *why, size_t why_size);

    /* Input: options (never NULL; strict already resolved to 0/1 for the
     * simulator). Output: *priv = backend state. Returns NPU_ERR_NO_DEVICE
     * when the hardware or driver is missing. */
    enum npu_status (*open)(const struct npu_device_options *opts, void **priv);

    /* Frees the backend state. All BOs and jobs are gone by then. */
    void (*destroy)(void *priv);

    /* Output: *info fully filled (backend, cores, versions, flags). */
    enum npu_status (*info)(void *priv, struct npu_device_info *info);

    /* Input: size (> 0), flags (enum npu_bo_flags). Output: bo->handle and
     * bo->iova (32-bit NPU address). Contents must start zeroed. */
    enum npu_status (*bo_create)(void *priv, size_t size, uint32_t flags, struct npu_bo *bo);

    /* (optional) As bo_create at a fixed IOVA; NULL = NPU_ERR_UNSUPPORTED. */
    enum npu_status (*bo_create_at)(void *priv, uint32_t iova, size_t size, uint32_t flags,
                                    struct npu_bo *bo);

    /* Output: *cpu = CPU address of the whole BO. Called once per BO; the
     * mapping lives until bo_destroy. */
    enum npu_status (*bo_map)(void *priv, struct npu_bo *bo, void **cpu);

    /* (optional) Cache maintenance of a checked, non-empty range; dir is
     * enum npu_sync_dir. NULL = coherent memory, nothing to do. */
    enum npu_status (*bo_sync)(void *priv, struct npu_bo *bo, unsigned dir, size_t offset,
                               size_t len);

    /* Unmaps and frees the backend BO. */
    void (*bo_destroy)(void *priv, struct npu_bo *bo);

    /* Input: a submit whose task_bo belongs to this device (checked).
     * Output: *job = backend job handle. Must not block on the job's
     * execution; kernel-style argument checks return NPU_ERR_INVALID. */
    enum npu_status (*submit)(void *priv, const struct npu_submit *submit, void **job);

    /* Waits up to timeout_ms (< 0 forever, 0 poll). Returns NPU_ERR_TIMEOUT
     * while running, else the job's status with *result filled (result
     * pointers owned by the backend job). result may be NULL. */
    enum npu_status (*wait)(void *priv, void *job, int timeout_ms, struct npu_job_result *result);

    /* Frees a job, waiting for it first if it still runs. */
    void (*job_destroy)(void *priv, void *job);
};

extern const struct npu_device_ops npu_backend_sim;
extern const struct npu_device_ops npu_backend_rknpu;
extern const struct npu_device_ops npu_backend_rocket;

#endif /* NPU_DEVICE_BACKEND_H */
