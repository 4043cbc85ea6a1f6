/* SPDX-License-Identifier: MIT */
/*
 * kd-rocket.c: the upstream rocket accel driver (facts §4.2), as the fake kernel runs it.
 *
 *   CREATE_BO  shmem BO (cached CPU mappings) in the file's own IOMMU domain: drm_mm best
 *              fit from the bottom of the aperture, page aligned (IOVA 0 included); returns
 *              handle, dma_address and the mmap offset
 *   SUBMIT     job_count 0 is a no-op; job_struct_size < 40 or reserved != 0: -EINVAL; an
 *              unreadable jobs array: -EFAULT. Each job's own errors (task_count 0,
 *              task_struct_size < 8, regcmd_count 0, unreadable arrays, unknown handles) drop
 *              that job and are NOT returned: rocket_ioctl_submit ignores them
 *   PREP_BO    reserved != 0: -EINVAL; unknown handle: -ENOENT; waits for the BO's write
 *              fence until the absolute timeout (-ETIMEDOUT, or -EBUSY for a zero/past
 *              timeout), then syncs the CPU view from memory whatever the wait gave
 *   FINI_BO    reserved != 0: -EINVAL; unknown handle: -ENOENT; syncs the CPU's writes out
 *   GEM_CLOSE  (DRM core) drops the handle
 *
 * Scheduling as drm_sched gives it to one file: one entity, so the file's jobs run one after
 * another in submission order, each on the core with the fewest jobs when it starts. A job's
 * tasks run on that core one launch each (TASK_NUMBER = 1, amount = (regcmd_count + 1) / 2 -
 * 1, INTERRUPT_MASK = DPU_0 | DPU_1): the regcmd tails' chain is never followed. A task the
 * hardware cannot finish (fault, a PPU-only end that raises no DPU interrupt, strict-mode
 * refusal) or a job whose modeled time passes the 500 ms JOB_TIMEOUT_MS stops the job: after
 * 500 ms of wall time the scheduler resets the core and signals the job's fence with an
 * error that userspace cannot see (PREP_BO succeeds). The double logs it ("dmesg") and
 * counts it in npu_kdouble_stats.jobs_failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "kd-priv.h"
#include "npu/npu-timing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DRV "rocket"
#define ROCKET_JOB_TIMEOUT_S 0.5
#define ROCKET_APERTURE_END 0xfffff000ull /* the top page holds the double's descriptors */

struct kd_rjob {
    struct npu_rocket_task *tasks;
    uint32_t n_tasks;
    struct kd_obj **bos; /* in, then out */
    uint32_t n_in, n_out;
    struct kd_fence *done;
    struct kd_rjob *next;
};

static void
rjob_free_locked(struct kd_rjob *j)
{
    for (uint32_t i = 0; i < j->n_in + j->n_out; i++)
        kd_obj_put(j->bos[i]);
    free(j->bos);
    kd_fence_put(j->done);
    free(j->tasks);
    free(j);
}

/* --------------------------------------------------------------- CREATE_BO */

/* drm_mm_insert_node_generic(.., PAGE_SIZE, 0, DRM_MM_INSERT_BEST): the smallest hole that
 * fits, lowest address among equals. */
static bool
iova_alloc(struct kd_npu *npu, uint64_t size, uint64_t *out)
{
    size_t n = 0;
    for (struct kd_obj *o = kd.objs; o; o = o->next)
        n += o->npu == npu;
    struct kd_obj **v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return false;
    n = 0;
    for (struct kd_obj *o = kd.objs; o; o = o->next)
        if (o->npu == npu)
            v[n++] = o;
    for (size_t i = 1; i < n; i++) { /* insertion sort by IOVA */
        struct kd_obj *x = v[i];
        size_t k = i;
        while (k > 0 && v[k - 1]->iova > x->iova) {
            v[k] = v[k - 1];
            k--;
        }
        v[k] = x;
    }
    bool found = false;
    uint64_t best = 0, best_len = UINT64_MAX, lo = 0;
    for (size_t i = 0; i <= n; i++) {
        uint64_t hi = i < n ? v[i]->iova : ROCKET_APERTURE_END;
        if (hi > lo && hi - lo >= size && hi - lo < best_len) {
            best = lo;
            best_len = hi - lo;
            found = true;
        }
        if (i < n)
            lo = v[i]->iova + v[i]->size;
    }
    free(v);
    *out = best;
    return found;
}

static int
rocket_create_bo(struct kd_file *f, void *karg)
{
    struct npu_rocket_create_bo *a = karg;
    if (a->size == 0)
        return -EINVAL; /* [GUESS] shmem/drm_mm refuse an empty object */
    uint64_t size = NPU_ALIGN((uint64_t)a->size, (uint64_t)KD_PAGE);
    pthread_mutex_lock(&kd.lock);
    uint64_t iova;
    int r = 0;
    if (!iova_alloc(f->npu, size, &iova)) {
        r = -ENOSPC;
    } else {
        struct kd_obj *o =
            kd_fault_now(KD_FAULT_BO) ? NULL : kd_obj_new(f->npu, size, true, true, iova);
        if (!o) {
            r = -ENOMEM;
        } else {
            uint32_t h = kd_handle_add(f, o);
            if (!h) {
                r = -ENOMEM;
            } else {
                a->handle = h;
                a->dma_address = o->iova;
                a->offset = kd_obj_mmap_offset(o);
            }
            kd_obj_put(o);
        }
    }
    pthread_mutex_unlock(&kd.lock);
    if (r == -ENOMEM)
        kd_dmesg(DRV, "failed to map buffer: request_size=%u", a->size);
    return r;
}

/* ------------------------------------------------------------------ SUBMIT */

static int
lookup_handles(struct kd_file *f, uint64_t uptr, uint32_t count, struct kd_obj **out)
{
    if (!count)
        return 0;
    uint32_t *h = malloc((size_t)count * 4);
    if (!h)
        return -ENOMEM;
    int r = kd_copy_from_user(h, uptr, (size_t)count * 4);
    if (r) {
        free(h);
        return r;
    }
    for (uint32_t i = 0; i < count; i++) {
        out[i] = kd_handle_find(f, h[i]);
        if (!out[i]) {
            free(h);
            return -ENOENT;
        }
    }
    free(h);
    return 0;
}

static int
submit_job(struct kd_file *f, const struct npu_rocket_job *job)
{
    if (job->task_count == 0)
        return -EINVAL;
    if (job->task_struct_size < sizeof(struct npu_rocket_task))
        return -EINVAL;
    if (job->task_count > (1u << 24) || job->in_bo_handle_count > (1u << 24) ||
        job->out_bo_handle_count > (1u << 24))
        return -ENOMEM;
    struct kd_rjob *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->tasks = calloc(job->task_count, sizeof(*j->tasks));
    j->bos =
        calloc((size_t)job->in_bo_handle_count + job->out_bo_handle_count + 1, sizeof(*j->bos));
    int r = (!j->tasks || !j->bos) ? -ENOMEM : 0;
    for (uint32_t i = 0; !r && i < job->task_count; i++) {
        r = kd_copy_from_user(&j->tasks[i], job->tasks + (uint64_t)i * job->task_struct_size,
                              sizeof(j->tasks[i]));
        if (!r && j->tasks[i].regcmd_count == 0)
            r = -EINVAL;
    }
    j->n_tasks = job->task_count;
    pthread_mutex_lock(&kd.lock);
    if (!r)
        r = lookup_handles(f, job->in_bo_handles, job->in_bo_handle_count, j->bos);
    if (!r)
        r = lookup_handles(f, job->out_bo_handles, job->out_bo_handle_count,
                           j->bos + job->in_bo_handle_count);
    if (!r)
        j->done = kd_fence_new();
    if (!r && !j->done)
        r = -ENOMEM;
    if (r) {
        pthread_mutex_unlock(&kd.lock);
        free(j->tasks);
        free(j->bos);
        free(j);
        return r;
    }
    j->n_in = job->in_bo_handle_count;
    j->n_out = job->out_bo_handle_count;
    for (uint32_t i = 0; i < j->n_in + j->n_out; i++)
        j->bos[i]->refs++;
    /* rocket_attach_object_fences: the job's fence becomes each output's write fence. */
    for (uint32_t i = 0; i < j->n_out; i++) {
        struct kd_obj *o = j->bos[j->n_in + i];
        kd_fence_put(o->write_fence);
        o->write_fence = j->done;
        j->done->refs++;
    }
    if (f->q_tail)
        f->q_tail->next = j;
    else
        f->q_head = j;
    f->q_tail = j;
    kd.stats.jobs_submitted++;
    pthread_cond_broadcast(&kd.cond);
    pthread_mutex_unlock(&kd.lock);
    return 0;
}

static int
rocket_submit(struct kd_file *f, void *karg)
{
    struct npu_rocket_submit *a = karg;
    if (a->job_count == 0)
        return 0;
    if (a->job_struct_size < sizeof(struct npu_rocket_job)) {
        kd_dmesg(DRV, "job_struct_size field in drm_rocket_submit struct is too small.");
        return -EINVAL;
    }
    if (a->reserved != 0) {
        kd_dmesg(DRV, "Reserved field in drm_rocket_submit struct should be 0.");
        return -EINVAL;
    }
    if (a->job_count > (1u << 20))
        return -ENOMEM;
    /* NPU_KDOUBLE_FAULT submit: -EIO before any job is queued. Rocket reports no job's
     * failure to userspace (facts §4.2: SUBMIT drops a job's errors, a hung job is reset and
     * its fence signalled), so there is no rocket errno to copy: -EIO, the kernel's generic
     * hardware I/O error, which the backends report as NPU_ERR_IO like NPU_SIM_FAULT. */
    if (kd_fault_now(KD_FAULT_SUBMIT))
        return -EIO;
    struct npu_rocket_job *jobs = calloc(a->job_count, sizeof(*jobs));
    if (!jobs)
        return -ENOMEM;
    for (uint32_t i = 0; i < a->job_count; i++) {
        if (kd_copy_from_user(&jobs[i], a->jobs + (uint64_t)i * a->job_struct_size,
                              sizeof(*jobs))) {
            free(jobs);
            kd_dmesg(DRV, "Failed to copy incoming job array");
            return -EFAULT;
        }
    }
    for (uint32_t i = 0; i < a->job_count; i++) {
        int r = submit_job(f, &jobs[i]);
        if (r) {
            /* rocket_ioctl_submit does not look at the job's result. */
            kd_dmesg("kdouble",
                     "rocket job %u of %u dropped by the kernel (error %d), and "
                     "SUBMIT still returns 0",
                     i, a->job_count, r);
            pthread_mutex_lock(&kd.lock);
            kd.stats.jobs_dropped++;
            pthread_mutex_unlock(&kd.lock);
        }
    }
    free(jobs);
    return 0;
}

/* ------------------------------------------------------------- the entity */

/* One launch: what rocket_job_hw_submit programs, handed to the simulator as a one-task
 * range on a private descriptor. Returns NPU_OK and adds the task's modeled time. */
static enum npu_status
launch(struct kd_file *f, unsigned core, const struct npu_rocket_task *t, double *modeled,
       char *msg, size_t msg_size)
{
    struct npu_rknpu_task d;
    memset(&d, 0, sizeof(d));
    d.regcmd_addr = t->regcmd;
    /* The simulator derives AMOUNT = ceil((regcfg_amount + 4) / 2) - 1 as rknpu does; rocket
     * writes (regcmd_count + 1) / 2 - 1. They agree for regcmd_count >= 3. */
    if (t->regcmd_count >= 4)
        d.regcfg_amount = t->regcmd_count - 4;
    else
        d.regcfg_amount = 0;
    if (t->regcmd_count < 3)
        kd_dmesg("kdouble", "regcmd_count %u < 3: the double fetches 4 qwords, rocket 2",
                 t->regcmd_count);
    d.int_mask = 0x300; /* PC_INTERRUPT_MASK_DPU_0 | DPU_1 */
    d.int_clear = 0x300;
    memcpy(npu_sim_bo_cpu(f->npu->ktask), &d, sizeof(d));
    struct npu_submit s;
    memset(&s, 0, sizeof(s));
    s.task_start = 0;
    s.task_number = 1;
    s.core_mask = 1u << core;
    s.subcore_task[core].task_start = 0;
    s.subcore_task[core].task_number = 1;
    s.flags = NPU_JOB_PC | NPU_JOB_PINGPONG;
    s.timeout_ms = 3600000; /* the 500 ms job limit is checked on the sum below */
    struct npu_sim_job *sj = NULL;
    enum npu_status st = npu_sim_submit(f->npu->sim, &s, f->npu->ktask, &sj);
    if (st != NPU_OK) {
        snprintf(msg, msg_size, "the simulator refused the launch");
        return st;
    }
    struct npu_job_result res;
    st = npu_sim_wait(sj, -1, &res);
    if (st != NPU_OK)
        snprintf(msg, msg_size, "%s", res.message);
    else if (res.timing_valid)
        *modeled += res.modeled_end_s - res.modeled_start_s;
    npu_sim_job_destroy(sj);
    return st;
}

static void *
entity_main(void *arg)
{
    struct kd_file *f = arg;
    pthread_mutex_lock(&kd.lock);
    for (;;) {
        while (!f->q_head && !f->stopping)
            pthread_cond_wait(&kd.cond, &kd.lock);
        struct kd_rjob *j = f->q_head;
        if (!j)
            break;
        f->q_head = j->next;
        if (!f->q_head)
            f->q_tail = NULL;
        /* drm_sched_entity_select_rq: the least loaded scheduler. */
        unsigned core = 0;
        for (unsigned c = 1; c < NPU_MAX_CORES; c++)
            if (kd.core_jobs[c] < kd.core_jobs[core])
                core = c;
        kd.core_jobs[core]++;
        kd_cores_busy(1u << core);
        f->last_core = (int)core;
        pthread_mutex_unlock(&kd.lock);

        double t0 = kd_now_s(), modeled = 0;
        enum npu_status st = NPU_OK;
        char msg[512] = "";
        uint32_t done = 0;
        for (; done < j->n_tasks && st == NPU_OK; done++) {
            pthread_mutex_lock(&kd.lock);
            kd.stats.launches[core]++;
            pthread_mutex_unlock(&kd.lock);
            st = launch(f, core, &j->tasks[done], &modeled, msg, sizeof(msg));
            if (st == NPU_OK && modeled > ROCKET_JOB_TIMEOUT_S) {
                st = NPU_ERR_TIMEOUT;
                snprintf(msg, sizeof(msg),
                         "%.1f ms modeled (%s) after %u tasks, past the 500 ms "
                         "job timeout",
                         modeled * 1e3, npu_timing_model()->label, done + 1);
            }
        }
        int err = 0;
        if (st != NPU_OK) {
            kd_sleep_until(t0 + ROCKET_JOB_TIMEOUT_S);
            kd_dmesg(DRV, "NPU job timed out (core %u, task %u of %u; simulated hardware: %s)",
                     core, done, j->n_tasks, msg);
            err = -ECANCELED;
        }
        pthread_mutex_lock(&kd.lock);
        kd.core_jobs[core]--;
        kd_cores_idle(1u << core);
        if (err)
            kd.stats.jobs_failed++;
        else
            kd.stats.jobs_done++;
        kd_fence_signal(j->done, err);
        rjob_free_locked(j);
    }
    pthread_mutex_unlock(&kd.lock);
    return NULL;
}

int
kd_rocket_file_open(struct kd_file *f)
{
    if (pthread_create(&f->worker, NULL, entity_main, f) != 0)
        return -ENOMEM;
    f->worker_started = true;
    return 0;
}

void
kd_rocket_file_close(struct kd_file *f)
{
    /* drm_sched_entity_destroy: the entity's queued jobs still run. */
    pthread_mutex_lock(&kd.lock);
    f->stopping = true;
    pthread_cond_broadcast(&kd.cond);
    pthread_mutex_unlock(&kd.lock);
    if (f->worker_started)
        pthread_join(f->worker, NULL);
    f->worker_started = false;
}

/* ---------------------------------------------------------- PREP / FINI */

static int
rocket_prep_bo(struct kd_file *f, void *karg)
{
    struct npu_rocket_prep_bo *a = karg;
    if (a->reserved != 0) {
        kd_dmesg(DRV, "Reserved field in drm_rocket_prep_bo struct should be 0.");
        return -EINVAL;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    /* drm_timeout_abs_to_jiffies: zero or past means "do not wait". */
    bool poll = a->timeout_ns <= now_ns;
    struct timespec dl = {(time_t)(a->timeout_ns / 1000000000), (long)(a->timeout_ns % 1000000000)};
    pthread_mutex_lock(&kd.lock);
    kd.stats.syncs++;
    struct kd_obj *o = kd_handle_find(f, a->handle);
    if (!o) {
        pthread_mutex_unlock(&kd.lock);
        return -ENOENT;
    }
    o->refs++;
    int r = 0;
    /* NPU_KDOUBLE_FAULT wait: PREP_BO's -ETIMEDOUT as when the deadline passes (facts
     * §4.2), at once; the job runs on. Counted: a PREP_BO that may wait (a timeout ahead)
     * on a BO some job wrote, i.e. a wait for a job, not a plain cache sync. */
    if (!poll && o->write_fence && kd_fault_now(KD_FAULT_WAIT))
        r = -ETIMEDOUT;
    while (!r && o->write_fence && !o->write_fence->signaled) {
        if (poll) {
            r = -EBUSY;
            break;
        }
        if (pthread_cond_timedwait(&kd.cond, &kd.lock, &dl) == ETIMEDOUT &&
            !o->write_fence->signaled) {
            r = -ETIMEDOUT;
            break;
        }
    }
    kd_obj_invalidate(o, 0, o->size); /* dma_sync_sgtable_for_cpu, whatever the wait gave */
    kd_obj_put(o);
    pthread_mutex_unlock(&kd.lock);
    return r;
}

static int
rocket_fini_bo(struct kd_file *f, void *karg)
{
    struct npu_rocket_fini_bo *a = karg;
    if (a->reserved != 0) {
        kd_dmesg(DRV, "Reserved field in drm_rocket_fini_bo struct should be 0.");
        return -EINVAL;
    }
    pthread_mutex_lock(&kd.lock);
    kd.stats.syncs++;
    struct kd_obj *o = kd_handle_find(f, a->handle);
    int r = -ENOENT;
    if (o) {
        kd_obj_clean(o, 0, o->size);
        r = 0;
    }
    pthread_mutex_unlock(&kd.lock);
    return r;
}

/* ------------------------------------------------------------------- table */

static const struct kd_ioctl rocket_ioctls[] = {
    {0x40, sizeof(struct npu_rocket_create_bo), NPU_IOC_READ | NPU_IOC_WRITE, rocket_create_bo,
     "CREATE_BO"},
    {0x41, sizeof(struct npu_rocket_submit), NPU_IOC_WRITE, rocket_submit, "SUBMIT"},
    {0x42, sizeof(struct npu_rocket_prep_bo), NPU_IOC_WRITE, rocket_prep_bo, "PREP_BO"},
    {0x43, sizeof(struct npu_rocket_fini_bo), NPU_IOC_WRITE, rocket_fini_bo, "FINI_BO"},
};

const struct kd_ioctl *
kd_rocket_ioctl(struct kd_file *f, unsigned nr)
{
    unsigned n = f->old_uapi ? 2 : (unsigned)NPU_ARRAY_SIZE(rocket_ioctls);
    if (nr >= 0x40 && nr < 0x40 + n)
        return &rocket_ioctls[nr - 0x40];
    return NULL;
}
