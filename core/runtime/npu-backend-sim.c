/* SPDX-License-Identifier: MIT */
/*
 * npu-backend-sim.c: the "sim" device backend: a thin translation onto the
 * functional simulator of core/sim, which emulates the kernel driver's submit
 * handling and the three NPU cores (each on its own worker thread).
 *
 * Fault injection for tests (issue 17): NPU_SIM_FAULT="submit:N,bo:M,wait:K"
 * makes the Nth submit fail (NPU_ERR_IO, as a driver error), the Mth buffer
 * creation (NPU_ERR_NOMEM) and the Kth wait (NPU_ERR_TIMEOUT), counted from
 * when the variable last changed; counts are 1-based, 0 or absent = never. A
 * warning says when it is active.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-device-backend.h"
#include "npu-sim.h"

#define DOM "sim"

enum { F_SUBMIT, F_BO, F_WAIT, F_COUNT };
static long fault_seen[F_COUNT];
static char fault_spec[128];
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

/* True when this call (the next of its kind) is the one NPU_SIM_FAULT names. */
static bool
fault_now(int kind)
{
    static const char *const names[F_COUNT] = {"submit:", "bo:", "wait:"};
    const char *spec = getenv("NPU_SIM_FAULT");
    if (!spec || !*spec)
        return false;
    const char *p = strstr(spec, names[kind]);
    long at = p ? strtol(p + strlen(names[kind]), NULL, 10) : 0;
    pthread_mutex_lock(&fault_lock);
    if (strncmp(spec, fault_spec, sizeof(fault_spec) - 1)) {
        snprintf(fault_spec, sizeof(fault_spec), "%s", spec);
        memset(fault_seen, 0, sizeof(fault_seen));
    }
    long n = ++fault_seen[kind];
    pthread_mutex_unlock(&fault_lock);
    if (at <= 0 || n != at)
        return false;
    npu_warn(DOM, "NPU_SIM_FAULT: failing %s call %ld on purpose", names[kind], n);
    return true;
}

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
    if (fault_now(F_BO))
        return NPU_ERR_NOMEM;
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
    if (fault_now(F_BO))
        return NPU_ERR_NOMEM;
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
    if (fault_now(F_SUBMIT)) {
        *job = NULL;
        return NPU_ERR_IO;
    }
    enum npu_status st = npu_sim_submit(priv, submit, submit->task_bo->handle, &j);
    *job = j;
    return st;
}

static enum npu_status
sim_wait(void *priv, void *job, int timeout_ms, struct npu_job_result *result)
{
    if (fault_now(F_WAIT))
        return NPU_ERR_TIMEOUT;
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
