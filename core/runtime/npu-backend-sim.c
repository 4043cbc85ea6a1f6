/* SPDX-License-Identifier: MIT */
/*
 * npu-backend-sim.c: the "sim" device backend: a thin translation onto the
 * functional simulator of core/sim, which emulates the kernel driver's submit
 * handling and the three NPU cores (each on its own worker thread).
 */
#include "npu-device-backend.h"
#include "npu-sim.h"

static enum npu_status
sim_open(const struct npu_device_options *opts, void **priv)
{
    struct npu_sim_options so = {.strict = opts->strict,
                                 .n_cores = 0,
                                 .evidence = opts->evidence,
                                 .lut_index = opts->lut_index};
    struct npu_sim *sim = NULL;
    enum npu_status st = npu_sim_create(&so, &sim);
    *priv = sim;
    return st;
}

static void
sim_destroy(void *priv)
{
    npu_sim_destroy(priv);
}

static enum npu_status
sim_info(void *priv, struct npu_device_info *info)
{
    npu_sim_get_info(priv, info);
    return NPU_OK;
}

static enum npu_status
sim_bo_create(void *priv, size_t size, uint32_t flags, struct npu_bo *bo)
{
    struct npu_sim_bo *sb = NULL;
    enum npu_status st = npu_sim_bo_create(priv, size, &sb);
    if (st != NPU_OK)
        return st;
    bo->handle = sb;
    bo->iova = npu_sim_bo_iova(sb);
    return NPU_OK;
}

static enum npu_status
sim_bo_create_at(void *priv, uint32_t iova, size_t size, uint32_t flags, struct npu_bo *bo)
{
    struct npu_sim_bo *sb = NULL;
    enum npu_status st = npu_sim_bo_create_at(priv, iova, size, &sb);
    if (st != NPU_OK)
        return st;
    bo->handle = sb;
    bo->iova = npu_sim_bo_iova(sb);
    return NPU_OK;
}

static enum npu_status
sim_bo_map(void *priv, struct npu_bo *bo, void **cpu)
{
    *cpu = npu_sim_bo_cpu(bo->handle);
    return NPU_OK;
}

static void
sim_bo_destroy(void *priv, struct npu_bo *bo)
{
    npu_sim_bo_destroy(bo->handle);
}

static enum npu_status
sim_submit(void *priv, const struct npu_submit *submit, void **job)
{
    struct npu_sim_job *j = NULL;
    enum npu_status st = npu_sim_submit(priv, submit, submit->task_bo->handle, &j);
    *job = j;
    return st;
}

static enum npu_status
sim_wait(void *priv, void *job, int timeout_ms, struct npu_job_result *result)
{
    return npu_sim_wait(job, timeout_ms, result);
}

static void
sim_job_destroy(void *priv, void *job)
{
    npu_sim_job_destroy(job);
}

/* Host memory is the NPU's memory here, so bo_sync has nothing to do. */
const struct npu_device_ops npu_backend_sim = {
    .name = "sim",
    .probe = NULL,
    .open = sim_open,
    .destroy = sim_destroy,
    .info = sim_info,
    .bo_create = sim_bo_create,
    .bo_create_at = sim_bo_create_at,
    .bo_map = sim_bo_map,
    .bo_sync = NULL,
    .bo_destroy = sim_bo_destroy,
    .submit = sim_submit,
    .wait = sim_wait,
    .job_destroy = sim_job_destroy,
};
