/* SPDX-License-Identifier: MIT */
/*
 * kd-rknpu.c: the vendor rknpu 0.9.8 DRM driver (facts §4.1), as the fake kernel runs it.
 *
 *   ACTION       the RK3588 answers of rknpu_action(): versions, frequency, voltage, IOMMU,
 *                nice; -EINVAL for what 0.9.8 does not implement there (POWER_ON/OFF, the
 *                bandwidth knobs on RK3588, SET_FREQ/SET_VOLT, unknown ids); the RW-amount
 *                queries log "not supported" and leave value untouched
 *   MEM_CREATE   handle != 0 naming an object of this file returns that object; size 0 is
 *                -EINVAL; size is rounded to pages; IOVAs near the top of 4 GiB growing down
 *                (the simulator's placement, facts §3); obj_addr is a kernel-pointer-like
 *                cookie; the 40-byte form below driver 0.9.0 (or with
 *                NPU_KDOUBLE_RKNPU_MEMCREATE=40)
 *   MEM_MAP      -ENOENT for an unknown handle (drm_gem_dumb_map_offset)
 *   MEM_DESTROY  -EINVAL for an unknown handle; memory lives on while mapped
 *   MEM_SYNC     obj_addr 0 or a non-cacheable object: -EINVAL; an obj_addr that is no
 *                object: -EFAULT (the real driver dereferences it: an oops)
 *   SUBMIT       task_number 0, core mask > 7: -EINVAL; no RKNPU_JOB_PC or no task object:
 *                -EINVAL after the driver's 100 ms abort; FENCE_OUT gives a pollable fd
 *                (an eventfd standing for the sync_file), -EINVAL when the fence config is
 *                off; NONBLOCK returns at once; core masks 5 and 6 are never committed by
 *                0.9.8 (rknpu_job_commit has no case for them) and time out; a job the
 *                hardware cannot finish (a fault, an interrupt that does not match int_mask,
 *                modeled time beyond timeout, strict-mode refusal) times out after `timeout`
 *                ms with the task counter, and its fence is never signalled.
 *
 * Execution: the simulator emulates the driver's per-core commit (subcore_task[i] with one
 * or two cores, [i + 2] with three, auto = least loaded core) and the PC chain walk, so a
 * submit is handed to it as it is. The descriptors are read through the kernel mapping
 * (the CPU view of a cached task BO), as rknpu reads them through kv_addr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "kd-priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define DRV "rknpu"

/* ------------------------------------------------------------------- ACTION */

static int
rknpu_action(struct kd_file *f, void *karg)
{
    struct npu_rknpu_action *a = karg;
    switch (a->flags) {
    case NPU_RKNPU_GET_HW_VERSION:
        a->value = 0x46495245u; /* what boards report (facts §2.2, ONPU) */
        return 0;
    case NPU_RKNPU_GET_DRV_VERSION: a->value = f->version; return 0;
    case NPU_RKNPU_GET_FREQ: a->value = 1000000000u; return 0;
    case NPU_RKNPU_GET_VOLT:
        a->value = 825000u; /* microvolts */
        return 0;
    case NPU_RKNPU_ACT_RESET: return 0;
    case NPU_RKNPU_ACT_CLR_TOTAL_RW_AMOUNT:
    case NPU_RKNPU_GET_DT_WR_AMOUNT:
    case NPU_RKNPU_GET_DT_RD_AMOUNT:
    case NPU_RKNPU_GET_WT_RD_AMOUNT:
    case NPU_RKNPU_GET_TOTAL_RW_AMOUNT:
        kd_dmesg(DRV, "Get rw_amount is not supported on this device!");
        return 0;
    case NPU_RKNPU_GET_IOMMU_EN: a->value = 1; return 0;
    case NPU_RKNPU_SET_PROC_NICE: return 0;
    case NPU_RKNPU_GET_TOTAL_SRAM_SIZE:
    case NPU_RKNPU_GET_FREE_SRAM_SIZE:
    case NPU_RKNPU_GET_IOMMU_DOMAIN_ID: a->value = 0; return 0;
    case NPU_RKNPU_SET_IOMMU_DOMAIN_ID:
        if (a->value == 0)
            return 0;
        kd_dmesg("kdouble", "IOMMU domains other than 0 are not emulated");
        return -EINVAL;
    default:
        /* SET_FREQ/SET_VOLT break out with ret still -EINVAL; the bandwidth actions have
         * no bw_priority base on RK3588; POWER_ON/OFF are not actions in 0.9.8. */
        return -EINVAL;
    }
}

/* --------------------------------------------------------------- memory ioctls */

static int
mem_create_common(struct kd_file *f, struct npu_rknpu_mem_create *a, bool v0)
{
    pthread_mutex_lock(&kd.lock);
    struct kd_obj *o = a->handle ? kd_handle_find(f, a->handle) : NULL;
    if (!o) {
        if (a->size == 0) {
            pthread_mutex_unlock(&kd.lock);
            kd_dmesg(DRV, "invalid buffer size: 0");
            return -EINVAL;
        }
        if (!v0 && a->iommu_domain_id != 0) {
            pthread_mutex_unlock(&kd.lock);
            kd_dmesg("kdouble", "IOMMU domains other than 0 are not emulated");
            return -EINVAL;
        }
        if (a->size > 0xffff0000ull) {
            pthread_mutex_unlock(&kd.lock);
            return -ENOMEM;
        }
        o = kd_fault_now(KD_FAULT_BO)
                ? NULL
                : kd_obj_new(f->npu, a->size, (a->flags & NPU_RKNPU_MEM_CACHEABLE) != 0, false, 0);
        if (!o) {
            pthread_mutex_unlock(&kd.lock);
            kd_dmesg(DRV, "failed to allocate %llu buffer.", (unsigned long long)a->size);
            return -ENOMEM;
        }
        o->flags = a->flags;
        uint32_t h = kd_handle_add(f, o);
        if (!h) {
            kd_obj_put(o);
            pthread_mutex_unlock(&kd.lock);
            return -ENOMEM;
        }
        a->handle = h;
        kd_obj_put(o); /* the handle holds it now */
    }
    a->size = o->size;
    a->sram_size = 0;
    a->obj_addr = o->cookie;
    a->dma_addr = o->iova;
    pthread_mutex_unlock(&kd.lock);
    return 0;
}

static int
rknpu_mem_create(struct kd_file *f, void *karg)
{
    return mem_create_common(f, karg, false);
}

static int
rknpu_mem_create_v0(struct kd_file *f, void *karg)
{
    return mem_create_common(f, karg, true);
}

static int
rknpu_mem_map(struct kd_file *f, void *karg)
{
    struct npu_rknpu_mem_map *a = karg;
    pthread_mutex_lock(&kd.lock);
    struct kd_obj *o = kd_handle_find(f, a->handle);
    int r = -ENOENT;
    if (o) {
        a->offset = kd_obj_mmap_offset(o);
        r = 0;
    }
    pthread_mutex_unlock(&kd.lock);
    return r;
}

static int
rknpu_mem_destroy(struct kd_file *f, void *karg)
{
    struct npu_rknpu_mem_destroy *a = karg;
    pthread_mutex_lock(&kd.lock);
    int r = kd_handle_del(f, a->handle);
    pthread_mutex_unlock(&kd.lock);
    return r;
}

static int
rknpu_mem_sync(struct kd_file *f, void *karg)
{
    (void)f;
    struct npu_rknpu_mem_sync *a = karg;
    if (!a->obj_addr)
        return -EINVAL;
    pthread_mutex_lock(&kd.lock);
    kd.stats.syncs++;
    struct kd_obj *o = kd_obj_by_cookie(a->obj_addr);
    int r = 0;
    if (!o || o->npu->drv != KD_DRV_RKNPU) {
        r = -EFAULT;
    } else if (!(o->flags & NPU_RKNPU_MEM_CACHEABLE)) {
        r = -EINVAL;
    } else {
        if (a->flags & NPU_RKNPU_MEM_SYNC_TO_DEVICE)
            kd_obj_clean(o, a->offset, a->size);
        if (a->flags & NPU_RKNPU_MEM_SYNC_FROM_DEVICE)
            kd_obj_invalidate(o, a->offset, a->size);
    }
    pthread_mutex_unlock(&kd.lock);
    if (r == -EFAULT)
        kd_dmesg("kdouble",
                 "MEM_SYNC obj_addr 0x%llx is no rknpu object: the real driver dereferences it "
                 "(kernel oops)",
                 (unsigned long long)a->obj_addr);
    return r;
}

/* ------------------------------------------------------------------- SUBMIT */

struct kd_kjob {
    struct kd_npu *npu;
    struct kd_obj *task; /* reference held */
    struct npu_rknpu_submit args;
    struct npu_sim_job *sj; /* NULL: the hardware never starts it */
    char why[400];          /* why it will hang */
    int fence;              /* the kernel's reference to the fence fd, or -1 */
    double t0;
    unsigned busy_mask;
    uint32_t ranges[NPU_MAX_CORES][2];
    unsigned n_ranges;
};

static void
kjob_free(struct kd_kjob *j)
{
    if (j->sj)
        npu_sim_job_destroy(j->sj);
    if (j->fence >= 0)
        kd.libc.close(j->fence);
    pthread_mutex_lock(&kd.lock);
    kd_cores_idle(j->busy_mask);
    kd_obj_put(j->task);
    kd_npu_put(j->npu);
    pthread_mutex_unlock(&kd.lock);
    free(j);
}

/* Runs to the end of the job: returns 0, or -ETIMEDOUT after the driver's wait. Fills the
 * outputs of j->args. */
static int
kjob_finish(struct kd_kjob *j, bool blocking)
{
    struct npu_job_result res;
    memset(&res, 0, sizeof(res));
    enum npu_status st = NPU_ERR_TIMEOUT;
    if (j->sj)
        st = npu_sim_wait(j->sj, -1, &res);
    if (st == NPU_OK) {
        /* The driver writes the interrupt status into the last descriptor through its
         * kernel mapping; the simulator wrote device memory. */
        if (j->task->cached) {
            pthread_mutex_lock(&kd.lock);
            for (unsigned i = 0; i < j->n_ranges; i++) {
                uint64_t off = (uint64_t)(j->ranges[i][0] + j->ranges[i][1] - 1) *
                                   sizeof(struct npu_rknpu_task) +
                               offsetof(struct npu_rknpu_task, int_status);
                uint32_t v;
                memcpy(&v, j->task->dev + off, 4);
                kd_obj_kernel_write(j->task, off, &v, 4);
            }
            pthread_mutex_unlock(&kd.lock);
        }
        j->args.task_counter = j->args.task_number;
        j->args.hw_elapse_time =
            res.timing_valid ? (int64_t)((res.modeled_end_s - res.modeled_start_s) * 1e9) : 0;
        pthread_mutex_lock(&kd.lock);
        kd.stats.jobs_done++;
        pthread_mutex_unlock(&kd.lock);
        if (j->fence >= 0) {
            uint64_t one = 1;
            if (write(j->fence, &one, sizeof(one)) != sizeof(one))
                kd_dmesg("kdouble", "cannot signal a fence");
        }
        return 0;
    }
    /* The hardware hangs: the driver waits `timeout` ms, reads the task counter and gives
     * up (rknpu_job_wait); a nonblocking job's fence is never signalled. */
    const char *why = j->sj ? res.message : j->why;
    if (blocking)
        kd_sleep_until(j->t0 + j->args.timeout * 1e-3);
    j->args.task_counter = j->sj ? res.task_counter : 0;
    kd_dmesg(DRV,
             "failed to wait job, task counter: %u, flags: %#x, ret = -110 (simulated "
             "hardware: %s)",
             j->args.task_counter, j->args.flags, why);
    pthread_mutex_lock(&kd.lock);
    kd.stats.jobs_failed++;
    pthread_mutex_unlock(&kd.lock);
    return -ETIMEDOUT;
}

static void *
kjob_thread(void *arg)
{
    struct kd_kjob *j = arg;
    kjob_finish(j, false);
    kjob_free(j);
    return NULL;
}

static int
rknpu_submit(struct kd_file *f, void *karg)
{
    struct npu_rknpu_submit *a = karg;
    /* NPU_KDOUBLE_FAULT submit: -EIO. The facts give rknpu no errno for a job that fails
     * other than by hanging (a hang is -ETIMEDOUT from the wait, the "wait" fault below;
     * commit failures are -EINVAL, the caller's fault): -EIO is the kernel's generic
     * hardware I/O error, and the backends report it as NPU_ERR_IO like NPU_SIM_FAULT. */
    if (kd_fault_now(KD_FAULT_SUBMIT))
        return -EIO;
    if (a->task_number == 0) {
        kd_dmesg(DRV, "invalid rknpu task number!");
        return -EINVAL;
    }
    if (a->core_mask > NPU_RKNPU_CORE_ALL) {
        kd_dmesg(DRV, "invalid rknpu core mask: %#x", a->core_mask);
        return -EINVAL;
    }
    if (a->flags & NPU_RKNPU_JOB_FENCE_IN) {
        kd_dmesg("kdouble", "FENCE_IN is not emulated");
        return -EINVAL;
    }
    if ((a->flags & NPU_RKNPU_JOB_FENCE_OUT) && !f->fence_ok) {
        kd_dmesg(DRV, "failed to use rknpu fence, please enable rknpu fence config!");
        return -EINVAL;
    }

    pthread_mutex_lock(&kd.lock);
    struct kd_obj *task = NULL;
    if (a->task_obj_addr) {
        task = kd_obj_by_cookie(a->task_obj_addr);
        if (!task || task->npu->drv != KD_DRV_RKNPU) {
            pthread_mutex_unlock(&kd.lock);
            kd_dmesg("kdouble",
                     "task_obj_addr 0x%llx is no rknpu object: the real driver dereferences "
                     "it (kernel oops)",
                     (unsigned long long)a->task_obj_addr);
            return -EFAULT;
        }
        if (!(task->flags & NPU_RKNPU_MEM_KERNEL_MAPPING)) {
            pthread_mutex_unlock(&kd.lock);
            kd_dmesg("kdouble",
                     "the task BO lacks RKNPU_MEM_KERNEL_MAPPING: the real driver reads its "
                     "NULL kernel mapping (kernel oops)");
            return -EFAULT;
        }
    }
    pthread_mutex_unlock(&kd.lock);
    if (!(a->flags & NPU_RKNPU_JOB_PC) || !task) {
        /* rknpu_job_commit fails with -EINVAL; rknpu_job_abort sleeps 100 ms. */
        kd_sleep_until(kd_now_s() + 0.1);
        kd_dmesg(DRV, "job abort, flags: %#x, ret: -22", a->flags);
        return -EINVAL;
    }

    struct kd_kjob *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->fence = -1;
    j->t0 = kd_now_s();
    j->args = *a;

    /* Which descriptor ranges the driver commits (rknpu_job_subcore_commit_pc). */
    unsigned mask = a->core_mask, n = (unsigned)__builtin_popcount(mask);
    bool never = false;
    if (mask == 5 || mask == 6) {
        never = true;
        snprintf(j->why, sizeof(j->why),
                 "core mask %#x: rknpu_job_commit has no case for it, nothing is committed", mask);
    }
    uint64_t n_desc = 0;
    pthread_mutex_lock(&kd.lock);
    n_desc = task->size / sizeof(struct npu_rknpu_task);
    /* The slots the committed cores read: [0..2] for auto (any core may be chosen), [i]
     * with one or two cores, [i + 2] with three. */
    for (unsigned c = 0; c < NPU_MAX_CORES && !never; c++) {
        if (mask && !(mask & (1u << c)))
            continue;
        unsigned slot = n == 3 ? c + 2 : c;
        uint32_t s0 = a->subcore_task[slot].task_start, sn = a->subcore_task[slot].task_number;
        if ((uint64_t)s0 + sn > n_desc) {
            pthread_mutex_unlock(&kd.lock);
            free(j);
            kd_dmesg("kdouble",
                     "subcore_task[%u] = %u+%u lies outside the %llu descriptors of the task "
                     "BO: the real driver reads past its kernel mapping",
                     slot, s0, sn, (unsigned long long)n_desc);
            return -EFAULT;
        }
    }
    /* The kernel reads descriptors through its (cached, coherent) mapping. */
    for (unsigned c = 0; c < NPU_SUBCORE_SLOTS; c++) {
        uint32_t s0 = a->subcore_task[c].task_start, sn = a->subcore_task[c].task_number;
        if (task->cached && sn && (uint64_t)s0 + sn <= n_desc)
            kd_obj_kernel_read(task, (uint64_t)s0 * 40, task->dev + (uint64_t)s0 * 40,
                               (size_t)sn * 40);
    }
    task->refs++;
    j->task = task;
    j->npu = task->npu;
    j->npu->refs++;
    kd.stats.jobs_submitted++;
    pthread_mutex_unlock(&kd.lock);

    if (!never) {
        struct npu_submit s;
        memset(&s, 0, sizeof(s));
        s.task_start = a->task_start;
        s.task_number = a->task_number;
        s.core_mask = mask;
        for (unsigned i = 0; i < NPU_SUBCORE_SLOTS; i++) {
            s.subcore_task[i].task_start = a->subcore_task[i].task_start;
            s.subcore_task[i].task_number = a->subcore_task[i].task_number;
        }
        s.flags = a->flags & (NPU_JOB_PC | NPU_JOB_NONBLOCK | NPU_JOB_PINGPONG);
        s.timeout_ms = a->timeout ? a->timeout : 1;
        s.task_base_addr = a->task_base_addr;
        s.priority = a->priority;
        if (npu_sim_submit(j->npu->sim, &s, task->sbo, &j->sj) != NPU_OK) {
            j->sj = NULL;
            snprintf(j->why, sizeof(j->why),
                     "the per-core ranges leave a committed core without tasks");
        }
        for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
            if (mask && !(mask & (1u << c)))
                continue;
            unsigned slot = n == 3 ? c + 2 : c;
            j->ranges[j->n_ranges][0] = a->subcore_task[slot].task_start;
            j->ranges[j->n_ranges][1] = a->subcore_task[slot].task_number;
            j->n_ranges++;
        }
        pthread_mutex_lock(&kd.lock);
        for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
            if (mask & (1u << c)) {
                unsigned slot = n == 3 ? c + 2 : c;
                kd.stats.launches[c] += NPU_DIV_ROUND_UP(a->subcore_task[slot].task_number,
                                                         NPU_RKNPU_MAX_SUBMIT_NUMBER);
            }
        }
        j->busy_mask = mask;
        kd_cores_busy(mask);
        pthread_mutex_unlock(&kd.lock);
    }

    if (a->flags & NPU_RKNPU_JOB_FENCE_OUT) {
        int efd = eventfd(0, EFD_CLOEXEC);
        int dup = efd >= 0 ? fcntl(efd, F_DUPFD_CLOEXEC, 3) : -1;
        if (efd < 0 || dup < 0) {
            if (efd >= 0)
                kd.libc.close(efd);
            a->fence_fd = -1;
        } else {
            a->fence_fd = efd;
            j->fence = dup;
        }
    }

    if (a->flags & NPU_RKNPU_JOB_NONBLOCK) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, kjob_thread, j) != 0) {
            pthread_attr_destroy(&attr);
            kjob_finish(j, false);
            kjob_free(j);
            return 0;
        }
        pthread_attr_destroy(&attr);
        return 0;
    }
    if (a->timeout == 0) {
        /* wait_event_timeout(.., 0) gives up at once; the job runs on. */
        a->task_counter = 0;
        kd_dmesg(DRV, "failed to wait job, task counter: 0, flags: %#x, ret = -110", a->flags);
        pthread_t t;
        if (pthread_create(&t, NULL, kjob_thread, j) == 0)
            pthread_detach(t);
        else
            kjob_thread(j);
        return -ETIMEDOUT;
    }
    int r = kjob_finish(j, true);
    /* NPU_KDOUBLE_FAULT wait (a blocking submit is rknpu's wait; a fence fd's poll is no
     * ioctl and is not counted): rknpu_job_wait giving up, -ETIMEDOUT (facts §4.1). The job
     * has run to its end here, so the next one starts at once. */
    if (!r && kd_fault_now(KD_FAULT_WAIT))
        r = -ETIMEDOUT;
    a->task_counter = j->args.task_counter;
    a->hw_elapse_time = j->args.hw_elapse_time;
    kjob_free(j);
    return r;
}

/* ------------------------------------------------------------------- table */

#define RK(nr, type, fn)                                                                           \
    {                                                                                              \
        0x40 + (nr), sizeof(type), NPU_IOC_READ | NPU_IOC_WRITE, fn, #fn                           \
    }

static const struct kd_ioctl rknpu_ioctls[] = {
    RK(0x00, struct npu_rknpu_action, rknpu_action),
    RK(0x01, struct npu_rknpu_submit, rknpu_submit),
    RK(0x02, struct npu_rknpu_mem_create, rknpu_mem_create),
    RK(0x03, struct npu_rknpu_mem_map, rknpu_mem_map),
    RK(0x04, struct npu_rknpu_mem_destroy, rknpu_mem_destroy),
    RK(0x05, struct npu_rknpu_mem_sync, rknpu_mem_sync),
};
static const struct kd_ioctl rknpu_mem_create_v0_desc =
    RK(0x02, struct npu_rknpu_mem_create_v1, rknpu_mem_create_v0);

const struct kd_ioctl *
kd_rknpu_ioctl(struct kd_file *f, unsigned nr)
{
    if (nr == 0x42 && f->mem_create_40)
        return &rknpu_mem_create_v0_desc;
    if (nr >= 0x40 && nr < 0x40 + NPU_ARRAY_SIZE(rknpu_ioctls))
        return &rknpu_ioctls[nr - 0x40];
    return NULL;
}

void
kd_rknpu_file_open(struct kd_file *f)
{
    (void)f;
}
