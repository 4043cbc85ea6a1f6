/* SPDX-License-Identifier: MIT */
/*
 * sim-device.c: the simulated NPU as a device, and the part of the vendor
 * kernel driver (rknpu 0.9.8, facts §4.1) that sits between a submit and the
 * cores: submit checks, core selection (auto mask = least-loaded core),
 * per-core task ranges (subcore_task[i], or [i + 2] when all three cores are
 * used), completion of a job when every core it used has finished.
 *
 * Each core has its own worker thread and FIFO queue, so jobs on different
 * cores run at the same time. Workers own their core's hardware state (the
 * register groups and LUT RAM); everything shared (queues, job state, the
 * modeled timeline) is under sim->lock.
 *
 * Modeled time: a finished job is placed on the device's modeled timeline
 * (sim-timing.c) in per-core FIFO order, so that jobs on one core never
 * overlap in modeled time. A job may not start, in modeled time, before the
 * end of any job the host had already waited for when it submitted it.
 */
#include "sim-priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu-abi.h"

/* rknpu_task is 40 bytes (facts §4.1). */
#define SIM_TASK_DESC_BYTES ((uint32_t)sizeof(struct npu_rknpu_task))
_Static_assert(sizeof(struct npu_rknpu_task) == 40, "rknpu_task is 40 bytes");
_Static_assert(NPU_JOB_PC == NPU_RKNPU_JOB_PC && NPU_JOB_NONBLOCK == NPU_RKNPU_JOB_NONBLOCK &&
                   NPU_JOB_PINGPONG == NPU_RKNPU_JOB_PINGPONG,
               "public job flags carry the vendor values");

double
sim_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- placement */

static bool
job_at_head_everywhere(const struct npu_sim *sim, const struct npu_sim_job *job)
{
    for (unsigned i = 0; i < job->n_sub; i++)
        if (sim->fifo_head[job->sub[i].core] != job)
            return false;
    return true;
}

static void
fifo_pop(struct npu_sim *sim, struct npu_sim_job *job)
{
    for (unsigned i = 0; i < job->n_sub; i++) {
        unsigned c = job->sub[i].core;
        sim->fifo_head[c] = job->fifo_next[c];
        if (!sim->fifo_head[c])
            sim->fifo_tail[c] = NULL;
        job->fifo_next[c] = NULL;
    }
}

/* Builds the job's result from its sub-jobs and places it on the modeled
 * timeline; caller holds sim->lock. */
static void
finish_job_locked(struct npu_sim *sim, struct npu_sim_job *job)
{
    struct npu_job_result *r = &job->res;
    r->status = NPU_OK;
    r->message[0] = '\0';
    r->core_mask = 0;
    r->task_counter = 0;
    for (unsigned i = 0; i < job->n_sub; i++) {
        struct sim_subjob *s = &job->sub[i];
        r->core_mask |= 1u << s->core;
        r->int_status[s->core] = s->int_status;
        r->task_counter += s->tasks_done;
        if (s->status != NPU_OK && r->status == NPU_OK) {
            r->status = s->status;
            snprintf(r->message, sizeof(r->message), "core %u: %s", s->core, s->msg);
        }
    }
    enum npu_status ts = sim_timing_place(&sim->ledger, job);
    if (ts != NPU_OK && r->status == NPU_OK) {
        r->status = ts;
        snprintf(r->message, sizeof(r->message), "%s",
                 ts == NPU_ERR_NOMEM ? "out of memory while placing modeled times"
                                     : "modeled time placement failed");
    }
    /* The vendor driver gives up after submit.timeout ms (waited up to three
     * times, facts §3); the hardware is at least as slow as the model (a lower
     * bound), so a chain whose modeled time exceeds the timeout would time out
     * on the board too. */
    if (r->status == NPU_OK && r->timing_valid) {
        double limit = job->timeout_ms * 1e-3;
        const struct npu_timing_model *tm = npu_timing_model();
        double chain = r->modeled_s - tm->submit_overhead_s;
        if (chain > limit) {
            r->status = NPU_ERR_TIMEOUT;
            snprintf(r->message, sizeof(r->message),
                     "job needs %.3f ms modeled (%s), more than the submit timeout "
                     "of %u ms: the driver would time out",
                     chain * 1e3, tm->label, job->timeout_ms);
        }
    }
    r->host_s = sim_now_s() - job->host_t0;
    job->placed = true;
}

static void
try_place_locked(struct npu_sim *sim)
{
    bool progress = true;
    while (progress) {
        progress = false;
        for (unsigned c = 0; c < sim->n_cores; c++) {
            struct npu_sim_job *job = sim->fifo_head[c];
            if (!job || job->remaining || !job_at_head_everywhere(sim, job))
                continue;
            fifo_pop(sim, job);
            finish_job_locked(sim, job);
            progress = true;
        }
    }
    pthread_cond_broadcast(&sim->done_cond);
}

/* ---------------------------------------------------------------- workers */

static void *
worker_main(void *arg)
{
    struct sim_worker *w = arg;
    struct npu_sim *sim = w->sim;
    pthread_mutex_lock(&sim->lock);
    for (;;) {
        while (!w->head && !sim->stopping)
            pthread_cond_wait(&sim->work_cond, &sim->lock);
        if (!w->head)
            break; /* stopping and drained */
        struct sim_subjob *sub = w->head;
        w->head = sub->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&sim->lock);

        sim_exec_subjob(sim, w->state, sub);

        pthread_mutex_lock(&sim->lock);
        w->queued--;
        if (--sub->job->remaining == 0)
            try_place_locked(sim);
    }
    pthread_mutex_unlock(&sim->lock);
    return NULL;
}

/* ------------------------------------------------------------ create etc */

enum npu_status
npu_sim_create(const struct npu_sim_options *opts, struct npu_sim **out)
{
    *out = NULL;
    struct npu_sim *sim = calloc(1, sizeof(*sim));
    if (!sim)
        return NPU_ERR_NOMEM;
    int strict = opts ? opts->strict : -1;
    if (strict < 0)
        strict = !(npu_debug_flags() & NPU_DEBUG_LENIENT);
    sim->strict = strict != 0;
    if (opts && opts->evidence < 0)
        sim->evidence = -1;
    else if (sim_evidence_threshold(opts ? opts->evidence : 0, &sim->evidence) != NPU_OK) {
        free(sim);
        return NPU_ERR_INVALID;
    }
    int li = opts ? opts->lut_index : NPU_LUT_INDEX_DEFAULT;
    if (li == NPU_LUT_INDEX_DEFAULT) {
        const char *env = getenv("NPU_SIM_LUT");
        li = env && !strcmp(env, "fixed") ? NPU_LUT_INDEX_FIXED : NPU_LUT_INDEX_DOUBLE;
        if (env && strcmp(env, "fixed") && strcmp(env, "double"))
            npu_warn("sim", "NPU_SIM_LUT=%s: expected double or fixed; using double", env);
    }
    if (li != NPU_LUT_INDEX_DOUBLE && li != NPU_LUT_INDEX_FIXED) {
        free(sim);
        npu_err("sim", "LUT index model %d: expected double (1) or fixed (2)", li);
        return NPU_ERR_INVALID;
    }
    sim->lut_fixed = li == NPU_LUT_INDEX_FIXED;
    /* A what-if, not a model of the board: the facts file does not say whether the CNA keeps
     * fp16 subnormals (the simulator does by default); NPU_SIM_CNA_FTZ=1 reads them as signed
     * zeros, so a test can show that a lowering does not depend on them (docs/simulator.md). */
    const char *ftz = getenv("NPU_SIM_CNA_FTZ");
    sim->cna_ftz = ftz && *ftz && strcmp(ftz, "0");
    sim->n_cores = opts && opts->n_cores ? opts->n_cores : NPU_MAX_CORES;
    if (sim->n_cores > NPU_MAX_CORES) {
        free(sim);
        npu_err("sim", "the RK3588 NPU has %d cores, not %u", NPU_MAX_CORES, opts->n_cores);
        return NPU_ERR_INVALID;
    }
    sim_mem_init(&sim->mem);
    pthread_mutex_init(&sim->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sim->work_cond, NULL);
    pthread_cond_init(&sim->done_cond, &ca);
    pthread_condattr_destroy(&ca);

    enum npu_status st = NPU_OK;
    for (unsigned c = 0; c < sim->n_cores; c++) {
        struct sim_worker *w = &sim->workers[c];
        w->sim = sim;
        w->core = c;
        w->state = sim_core_new(c);
        if (!w->state) {
            st = NPU_ERR_NOMEM;
            break;
        }
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            npu_err("sim", "cannot start the worker thread of core %u", c);
            st = NPU_ERR_NOMEM;
            break;
        }
        w->started = true;
    }
    if (st != NPU_OK) {
        npu_sim_destroy(sim);
        return st;
    }
    npu_info("sim", "simulator %s up: %u cores, %s mode, LUT index %s%s", NPU_SIM_VERSION_STR,
             sim->n_cores, sim->strict ? "strict" : "lenient", sim->lut_fixed ? "fixed" : "double",
             sim->cna_ftz ? ", CNA flushes fp16 subnormals (NPU_SIM_CNA_FTZ)" : "");
    *out = sim;
    return NPU_OK;
}

void
npu_sim_destroy(struct npu_sim *sim)
{
    if (!sim)
        return;
    pthread_mutex_lock(&sim->lock);
    sim->stopping = true;
    pthread_cond_broadcast(&sim->work_cond);
    pthread_mutex_unlock(&sim->lock);
    for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
        struct sim_worker *w = &sim->workers[c];
        if (w->started)
            pthread_join(w->thread, NULL);
        sim_core_free(w->state);
    }
    if (sim->jobs_alive)
        npu_warn("sim", "%u job handle(s) not destroyed before the device closed", sim->jobs_alive);
    sim_ledger_fini(&sim->ledger);
    sim_mem_fini(&sim->mem);
    pthread_cond_destroy(&sim->work_cond);
    pthread_cond_destroy(&sim->done_cond);
    pthread_mutex_destroy(&sim->lock);
    free(sim);
}

bool
npu_sim_is_strict(const struct npu_sim *sim)
{
    return sim->strict;
}

unsigned
npu_sim_n_cores(const struct npu_sim *sim)
{
    return sim->n_cores;
}

void
npu_sim_get_info(const struct npu_sim *sim, struct npu_device_info *info)
{
    memset(info, 0, sizeof(*info));
    snprintf(info->backend, sizeof(info->backend), "sim");
    info->n_cores = sim->n_cores;
    info->hw_version = 0;
    info->drv_version =
        NPU_SIM_VERSION_MAJOR * 10000 + NPU_SIM_VERSION_MINOR * 100 + NPU_SIM_VERSION_PATCH;
    snprintf(info->hw_version_str, sizeof(info->hw_version_str),
             "simulated RK3588 NPU (no hardware)");
    snprintf(info->drv_version_str, sizeof(info->drv_version_str),
             "simulator %s (rknpu 0.9.8 submit semantics)", NPU_SIM_VERSION_STR);
    snprintf(info->description, sizeof(info->description),
             "OpenNPU functional simulator %s, %u cores, %s mode, %s", NPU_SIM_VERSION_STR,
             sim->n_cores, sim->strict ? "strict" : "lenient", npu_timing_model()->label);
    snprintf(info->timing_model, sizeof(info->timing_model), "%s", npu_timing_model()->label);
    info->flags = NPU_DEVICE_SIMULATED | NPU_DEVICE_MODELED_TIMING | NPU_DEVICE_FIXED_IOVA |
                  (sim->strict ? NPU_DEVICE_STRICT : 0);
}

/* ------------------------------------------------------------------ jobs */

/* Checks one core's range against the task BO; logs and returns false if bad. */
static bool
range_ok(const struct npu_sim_bo *task_bo, unsigned core, const struct npu_subcore_range *r,
         unsigned slot)
{
    uint64_t n_desc = task_bo->size / SIM_TASK_DESC_BYTES;
    if (r->task_number == 0) {
        npu_err("sim", "submit: core %u would run subcore_task[%u], which is empty", core, slot);
        return false;
    }
    if ((uint64_t)r->task_start + r->task_number > n_desc) {
        npu_err("sim",
                "submit: subcore_task[%u] = tasks %u..%u for core %u, but the task BO holds "
                "only %llu descriptors",
                slot, r->task_start, r->task_start + r->task_number - 1, core,
                (unsigned long long)n_desc);
        return false;
    }
    return true;
}

enum npu_status
npu_sim_submit(struct npu_sim *sim, const struct npu_submit *s, struct npu_sim_bo *task_bo,
               struct npu_sim_job **out)
{
    *out = NULL;
    /* The checks rknpu 0.9.8 makes before it queues a job (facts §4.1). */
    if (!(s->flags & NPU_JOB_PC)) {
        npu_err("sim", "submit: flags 0x%x lack RKNPU_JOB_PC (the vendor driver returns -EINVAL)",
                s->flags);
        return NPU_ERR_INVALID;
    }
    if (s->task_number == 0) {
        npu_err("sim", "submit: task_number is 0");
        return NPU_ERR_INVALID;
    }
    if (s->core_mask > 0x7 || (s->core_mask >> sim->n_cores)) {
        npu_err("sim", "submit: core mask 0x%x names a core this device does not have",
                s->core_mask);
        return NPU_ERR_INVALID;
    }
    if (!task_bo) {
        npu_err("sim", "submit: no task BO");
        return NPU_ERR_INVALID;
    }
    if (s->task_base_addr > 0xffffffffull || (s->task_base_addr & 0xf)) {
        /* TASK_DMA_BASE_ADDR keeps bits 31:4 (facts §2.2). */
        npu_err("sim", "submit: task_base_addr 0x%llx is not a 16-byte aligned 32-bit address",
                (unsigned long long)s->task_base_addr);
        return NPU_ERR_INVALID;
    }

    struct npu_sim_job *job = calloc(1, sizeof(*job));
    if (!job)
        return NPU_ERR_NOMEM;
    job->sim = sim;
    job->timeout_ms = s->timeout_ms ? s->timeout_ms : 6000;
    job->task_base = (uint32_t)s->task_base_addr;
    job->flags = s->flags;
    job->host_t0 = sim_now_s();

    pthread_mutex_lock(&sim->lock);
    unsigned cores[NPU_MAX_CORES], n = 0;
    unsigned slot[NPU_MAX_CORES];
    if (s->core_mask == 0) {
        /* Auto: the least-loaded core; it reads subcore_task[core]. Which core
         * that is depends on load, so every one must have a range (RKNN fills
         * [0..2] with the same range, NOTES S7). */
        unsigned best = 0;
        for (unsigned c = 0; c < sim->n_cores; c++)
            if (sim->workers[c].queued < sim->workers[best].queued)
                best = c;
        for (unsigned c = 0; c < sim->n_cores; c++) {
            if (s->subcore_task[c].task_number == 0) {
                pthread_mutex_unlock(&sim->lock);
                free(job);
                npu_err("sim",
                        "submit: core mask 0 (auto) needs subcore_task[0..%u] filled: the driver "
                        "may pick any core and core %u's range is empty",
                        sim->n_cores - 1, c);
                return NPU_ERR_INVALID;
            }
        }
        cores[n] = best;
        slot[n++] = best;
    } else {
        unsigned count = __builtin_popcount(s->core_mask);
        for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
            if (!(s->core_mask & (1u << c)))
                continue;
            cores[n] = c;
            slot[n++] = count == 3 ? c + 2 : c;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        if (!range_ok(task_bo, cores[i], &s->subcore_task[slot[i]], slot[i])) {
            pthread_mutex_unlock(&sim->lock);
            free(job);
            return NPU_ERR_INVALID;
        }
    }
    if (!sim_bo_ref_if_mapped(task_bo)) {
        pthread_mutex_unlock(&sim->lock);
        free(job);
        npu_err("sim", "submit: the task BO has been destroyed");
        return NPU_ERR_INVALID;
    }
    job->task_bo = task_bo;
    job->n_sub = n;
    job->remaining = n;
    job->min_start = sim->ledger.observed;
    for (unsigned i = 0; i < n; i++) {
        struct sim_subjob *sub = &job->sub[i];
        sub->job = job;
        sub->core = cores[i];
        sub->task_start = s->subcore_task[slot[i]].task_start;
        sub->task_number = s->subcore_task[slot[i]].task_number;
        struct sim_worker *w = &sim->workers[cores[i]];
        if (w->tail)
            w->tail->next = sub;
        else
            w->head = sub;
        w->tail = sub;
        w->queued++;
        unsigned c = cores[i];
        if (sim->fifo_tail[c])
            sim->fifo_tail[c]->fifo_next[c] = job;
        else
            sim->fifo_head[c] = job;
        sim->fifo_tail[c] = job;
    }
    sim->jobs_alive++;
    pthread_cond_broadcast(&sim->work_cond);
    pthread_mutex_unlock(&sim->lock);
    *out = job;
    return NPU_OK;
}

/* Earliest modeled time any unplaced or future job may start at. */
static double
prune_horizon_locked(const struct npu_sim *sim)
{
    double t = sim->ledger.observed;
    for (unsigned c = 0; c < sim->n_cores; c++)
        for (const struct npu_sim_job *j = sim->fifo_head[c]; j; j = j->fifo_next[c])
            if (j->min_start < t)
                t = j->min_start;
    return t;
}

enum npu_status
npu_sim_wait(struct npu_sim_job *job, int timeout_ms, struct npu_job_result *result)
{
    struct npu_sim *sim = job->sim;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (timeout_ms > 0) {
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&sim->lock);
    while (!job->placed) {
        if (timeout_ms == 0) {
            pthread_mutex_unlock(&sim->lock);
            return NPU_ERR_TIMEOUT;
        }
        if (timeout_ms < 0) {
            pthread_cond_wait(&sim->done_cond, &sim->lock);
        } else if (pthread_cond_timedwait(&sim->done_cond, &sim->lock, &deadline) == ETIMEDOUT &&
                   !job->placed) {
            pthread_mutex_unlock(&sim->lock);
            return NPU_ERR_TIMEOUT;
        }
    }
    /* The host has now seen this job end: later submits start after it. */
    if (job->res.timing_valid && job->res.modeled_end_s > sim->ledger.observed)
        sim->ledger.observed = job->res.modeled_end_s;
    sim_ledger_prune(&sim->ledger, prune_horizon_locked(sim));
    if (result)
        *result = job->res;
    enum npu_status st = job->res.status;
    pthread_mutex_unlock(&sim->lock);
    return st;
}

void
npu_sim_job_destroy(struct npu_sim_job *job)
{
    if (!job)
        return;
    struct npu_sim *sim = job->sim;
    pthread_mutex_lock(&sim->lock);
    while (!job->placed)
        pthread_cond_wait(&sim->done_cond, &sim->lock);
    /* The host knows the job ended: later submits start after it. */
    if (job->res.timing_valid && job->res.modeled_end_s > sim->ledger.observed)
        sim->ledger.observed = job->res.modeled_end_s;
    sim->jobs_alive--;
    pthread_mutex_unlock(&sim->lock);
    for (unsigned i = 0; i < job->n_sub; i++)
        free(job->sub[i].recs);
    free(job->timings);
    sim_bo_unref(job->task_bo);
    free(job);
}
