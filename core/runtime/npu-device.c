/* SPDX-License-Identifier: MIT */
/*
 * npu-device.c: the public device API of npu-device.h. It checks arguments,
 * keeps the wrappers for BOs and jobs, and dispatches to the backend table
 * (npu-device-backend.h). Backend choice: a name, or "auto": rknpu, then rocket,
 * then the simulator; a hardware backend is passed over when its probe fails
 * (no node with its driver, no access, unknown driver version), and the
 * reasons are logged (npu-info prints them).
 */
#include "npu-device-backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In the order "auto" tries them; the simulator last (no probe). */
static const struct npu_device_ops *const backends[] = {
    &npu_backend_rknpu,
    &npu_backend_rocket,
    &npu_backend_sim,
};

static const struct npu_device_ops *
find_backend(const char *name)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(backends); i++)
        if (!strcmp(backends[i]->name, name))
            return backends[i];
    return NULL;
}

enum npu_status
npu_device_open(const char *backend, struct npu_device **out)
{
    return npu_device_open_ex(backend, NULL, out);
}

enum npu_status
npu_device_open_ex(const char *backend, const struct npu_device_options *opts,
                   struct npu_device **out)
{
    if (!out)
        return NPU_ERR_INVALID;
    *out = NULL;
    struct npu_device_options o = {.strict = -1};
    if (opts)
        o = *opts;
    if (o.strict < 0)
        o.strict = !(npu_debug_flags() & NPU_DEBUG_LENIENT);

    const struct npu_device_ops *ops = NULL;
    if (!backend || !strcmp(backend, "auto")) {
        for (size_t i = 0; i < NPU_ARRAY_SIZE(backends) && !ops; i++) {
            if (!backends[i]->probe)
                continue;
            char why[320];
            enum npu_status ps = backends[i]->probe(why, sizeof(why));
            if (ps == NPU_OK) {
                npu_info("device", "auto: %s: %s", backends[i]->name, why);
                ops = backends[i];
            } else {
                npu_info("device", "auto: passing over %s: %s", backends[i]->name, why);
            }
        }
        if (!ops) {
            npu_info("device", "auto: no NPU found, using the simulator");
            ops = &npu_backend_sim;
        }
    } else {
        ops = find_backend(backend);
        if (!ops) {
            npu_err("device", "unknown backend '%s' (known: sim, rknpu, rocket, auto)", backend);
            return NPU_ERR_NO_DEVICE;
        }
    }

    struct npu_device *dev = calloc(1, sizeof(*dev));
    if (!dev)
        return NPU_ERR_NOMEM;
    dev->ops = ops;
    pthread_mutex_init(&dev->lock, NULL);
    enum npu_status st = ops->open(&o, &dev->priv);
    if (st != NPU_OK) {
        pthread_mutex_destroy(&dev->lock);
        free(dev);
        return st;
    }
    *out = dev;
    return NPU_OK;
}

unsigned
npu_device_probe_backends(struct npu_backend_probe *out, unsigned max)
{
    unsigned n = 0;
    for (size_t i = 0; i < NPU_ARRAY_SIZE(backends); i++, n++) {
        if (n >= max || !out)
            continue;
        struct npu_backend_probe *p = &out[n];
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "%s", backends[i]->name);
        if (backends[i]->probe) {
            p->status = backends[i]->probe(p->reason, sizeof(p->reason));
        } else {
            p->status = NPU_OK;
            snprintf(p->reason, sizeof(p->reason), "always available (no hardware needed)");
        }
    }
    return n;
}

void
npu_device_close(struct npu_device *dev)
{
    if (!dev)
        return;
    if (dev->n_bos || dev->n_jobs)
        npu_warn("device", "closing with %u BO(s) and %u job(s) not destroyed", dev->n_bos,
                 dev->n_jobs);
    dev->ops->destroy(dev->priv);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

enum npu_status
npu_device_get_info(struct npu_device *dev, struct npu_device_info *info)
{
    if (!dev || !info)
        return NPU_ERR_INVALID;
    return dev->ops->info(dev->priv, info);
}

/* ------------------------------------------------------------------ BOs */

static enum npu_status
bo_create_common(struct npu_device *dev, bool fixed, uint32_t iova, size_t size, uint32_t flags,
                 struct npu_bo **out)
{
    if (!out)
        return NPU_ERR_INVALID;
    *out = NULL;
    if (!dev || size == 0) {
        npu_err("device", "npu_bo_create: %s", dev ? "size is 0" : "no device");
        return NPU_ERR_INVALID;
    }
    if (size > 0xffffffffull) {
        npu_err("device", "npu_bo_create: %zu bytes do not fit the 32-bit NPU address space", size);
        return NPU_ERR_INVALID;
    }
    if (fixed && !dev->ops->bo_create_at) {
        npu_err("device", "backend '%s' cannot place BOs at fixed addresses", dev->ops->name);
        return NPU_ERR_UNSUPPORTED;
    }
    struct npu_bo *bo = calloc(1, sizeof(*bo));
    if (!bo)
        return NPU_ERR_NOMEM;
    bo->dev = dev;
    bo->size = size;
    bo->flags = flags;
    enum npu_status st = fixed ? dev->ops->bo_create_at(dev->priv, iova, size, flags, bo)
                               : dev->ops->bo_create(dev->priv, size, flags, bo);
    if (st != NPU_OK) {
        free(bo);
        return st;
    }
    pthread_mutex_lock(&dev->lock);
    dev->n_bos++;
    pthread_mutex_unlock(&dev->lock);
    *out = bo;
    return NPU_OK;
}

enum npu_status
npu_bo_create(struct npu_device *dev, size_t size, uint32_t flags, struct npu_bo **out)
{
    return bo_create_common(dev, false, 0, size, flags, out);
}

enum npu_status
npu_bo_create_at(struct npu_device *dev, uint32_t iova, size_t size, uint32_t flags,
                 struct npu_bo **out)
{
    return bo_create_common(dev, true, iova, size, flags, out);
}

uint32_t
npu_bo_iova(const struct npu_bo *bo)
{
    return bo ? bo->iova : 0;
}

size_t
npu_bo_size(const struct npu_bo *bo)
{
    return bo ? bo->size : 0;
}

void *
npu_bo_map(struct npu_bo *bo)
{
    if (!bo)
        return NULL;
    struct npu_device *dev = bo->dev;
    pthread_mutex_lock(&dev->lock);
    if (!bo->cpu) {
        void *p = NULL;
        enum npu_status st = dev->ops->bo_map(dev->priv, bo, &p);
        if (st != NPU_OK)
            npu_err("device", "cannot map the BO at 0x%08x: %s", bo->iova, npu_status_str(st));
        else
            bo->cpu = p;
    }
    void *cpu = bo->cpu;
    pthread_mutex_unlock(&dev->lock);
    return cpu;
}

enum npu_status
npu_bo_sync(struct npu_bo *bo, unsigned dir, size_t offset, size_t len)
{
    if (!bo)
        return NPU_ERR_INVALID;
    if (!dir || (dir & ~(unsigned)(NPU_SYNC_TO_DEVICE | NPU_SYNC_FROM_DEVICE))) {
        npu_err("device", "npu_bo_sync: direction 0x%x is not TO_DEVICE and/or FROM_DEVICE", dir);
        return NPU_ERR_INVALID;
    }
    if (offset > bo->size || (len && len > bo->size - offset)) {
        npu_err("device", "npu_bo_sync: range %zu+%zu is outside the %zu-byte BO", offset, len,
                bo->size);
        return NPU_ERR_INVALID;
    }
    if (!len)
        len = bo->size - offset;
    if (!len || !bo->dev->ops->bo_sync)
        return NPU_OK;
    return bo->dev->ops->bo_sync(bo->dev->priv, bo, dir, offset, len);
}

void
npu_bo_destroy(struct npu_bo *bo)
{
    if (!bo)
        return;
    struct npu_device *dev = bo->dev;
    dev->ops->bo_destroy(dev->priv, bo);
    pthread_mutex_lock(&dev->lock);
    dev->n_bos--;
    pthread_mutex_unlock(&dev->lock);
    free(bo);
}

/* ----------------------------------------------------------------- jobs */

enum npu_status
npu_job_submit(struct npu_device *dev, const struct npu_submit *submit, struct npu_job **out)
{
    if (!out)
        return NPU_ERR_INVALID;
    *out = NULL;
    if (!dev || !submit || !submit->task_bo) {
        npu_err("device", "npu_job_submit: %s", !dev ? "no device" : "no submit or task BO");
        return NPU_ERR_INVALID;
    }
    if (submit->task_bo->dev != dev) {
        npu_err("device", "npu_job_submit: the task BO belongs to another device");
        return NPU_ERR_INVALID;
    }
    struct npu_job *job = calloc(1, sizeof(*job));
    if (!job)
        return NPU_ERR_NOMEM;
    job->dev = dev;
    enum npu_status st = dev->ops->submit(dev->priv, submit, &job->handle);
    if (st != NPU_OK) {
        free(job);
        return st;
    }
    pthread_mutex_lock(&dev->lock);
    dev->n_jobs++;
    pthread_mutex_unlock(&dev->lock);
    *out = job;
    return NPU_OK;
}

enum npu_status
npu_job_wait(struct npu_job *job, int timeout_ms, struct npu_job_result *result)
{
    if (!job)
        return NPU_ERR_INVALID;
    return job->dev->ops->wait(job->dev->priv, job->handle, timeout_ms, result);
}

void
npu_job_destroy(struct npu_job *job)
{
    if (!job)
        return;
    struct npu_device *dev = job->dev;
    dev->ops->job_destroy(dev->priv, job->handle);
    pthread_mutex_lock(&dev->lock);
    dev->n_jobs--;
    pthread_mutex_unlock(&dev->lock);
    free(job);
}
