/* SPDX-License-Identifier: MIT */
/*
 * npu-backend-rocket.c: the "rocket" device backend, over the upstream accel driver
 * (Linux >= 6.18, /dev/accel/accelN; ABI in facts §4.2 and core/hw/npu-abi.h).
 *
 * Buffers: DRM_IOCTL_ROCKET_CREATE_BO (size -> handle, IOVA in this fd's own IOMMU domain,
 * allocated from the bottom, and the mmap offset), mmap on the accel fd, GEM_CLOSE to free.
 * The first BO of a file may sit at IOVA 0; the backend takes one page there at open so no
 * real buffer has NPU address 0. Rocket BOs are shmem with cached CPU mappings: PREP_BO
 * (wait for the NPU's writes, then invalidate for the CPU, absolute timeout) and FINI_BO
 * (clean for the device) bracket CPU access, whole BOs at a time. BOs the caller did not
 * create NPU_BO_CACHEABLE are kept coherent by the backend: every mapped one is cleaned
 * before each submit and invalidated when a job is seen to end.
 *
 * Jobs: the device API's task array (rknpu_task descriptors in the task BO) is translated:
 * each core's range (the same slots the vendor driver reads: [i] for one or two cores,
 * [i + 2] for three, [0] for auto) becomes one drm_rocket_job whose tasks are
 * {regcmd = regcmd_addr, regcmd_count = regcfg_amount + 4 (body + tail)}. Rocket launches
 * every task on its own (TASK_NUMBER = 1, amount from regcmd_count), so the PC chain in the
 * regcmd tails and its PC_REGISTER_AMOUNTS values are never used: each descriptor must be
 * complete (on rknpu only the first of a range is read), and a task must end with a DPU
 * interrupt, because rocket's interrupt mask is DPU_0 | DPU_1 (a PPU-ending task would hang
 * the job; refused here with NPU_ERR_UNSUPPORTED). The kernel, not the core mask, picks the
 * core, and one file's jobs run one after another (one drm_sched entity): a mask-7 submit
 * runs its three ranges in turn, not at once.
 *
 * Completion: rocket has no job handle or fence fd; a job's end is seen by PREP_BO on a BO
 * it lists as an output. Each job gets a small "sync BO" as its only output (taken from a
 * pool), and wait = PREP_BO on it. Rocket reports no job errors to userspace: a hung job is
 * reset after 500 ms and its fence signalled anyway. The backend therefore only reports
 * NPU_ERR_TIMEOUT when PREP_BO itself times out (NPU_HW_WAIT_MS, default 3 x timeout + 1 s)
 * and warns when a job took longer than the kernel's 500 ms job limit
 * (NPU_ROCKET_JOB_TIMEOUT_MS, 0 = do not warn).
 */
#include "npu-device-backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "npu-abi.h"
#include "npu-backend-drm.h"

#define DOM "rocket"
#define RKT_PAGE 4096u
#define RKT_DEFAULT_TIMEOUT_MS 6000u
/* DRM_IOCTL_GEM_CLOSE = DRM_IOW(0x09, struct drm_gem_close {u32 handle, pad}). */
#define RKT_IOCTL_GEM_CLOSE 0x40086409u

struct rkt_bo {
    uint32_t handle;
    uint64_t iova, offset;
    uint64_t size; /* page-rounded */
    uint32_t flags;
    void *map;
    struct rkt_bo *next; /* device list (coherency sweep) or sync pool */
};

struct rkt_dev {
    struct npu_drm_node node;
    pthread_mutex_t lock;
    struct rkt_bo *bos;       /* BOs of the device API, for the coherency sweep */
    struct rkt_bo *sync_pool; /* idle sync BOs */
    struct rkt_bo *page0;     /* the reserved page at IOVA 0 */
    uint32_t job_timeout_ms;  /* the kernel's job limit, for the warning */
};

struct rkt_job {
    struct rkt_dev *dev;
    struct rkt_bo *sync;
    double t_submit, deadline;
    unsigned n_jobs;
    uint32_t n_tasks;
    uint32_t core_mask;
    bool finished;
    struct npu_job_result res;
};

static const char *const rkt_prefixes[] = {"accel"};

/* --------------------------------------------------------------- helpers */

/* rocket's waits (PREP_BO with a timeout) report an expired wait as EBUSY: a timeout here. */
static enum npu_status
errno_status(int r)
{
    return r == -EBUSY ? NPU_ERR_TIMEOUT : npu_drm_errno_status(r);
}

static int64_t
mono_ns(double delta_s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (int64_t)(delta_s * 1e9);
}

static int
raw_create(struct rkt_dev *d, uint64_t size, struct rkt_bo **out)
{
    *out = NULL;
    if (size > 0xffffffffull)
        return -EINVAL;
    struct npu_rocket_create_bo c = {.size = (uint32_t)size};
    int r = npu_drm_ioctl(d->node.fd, NPU_ROCKET_IOCTL_CREATE_BO, &c);
    if (r)
        return r;
    struct rkt_bo *b = calloc(1, sizeof(*b));
    if (!b) {
        struct {
            uint32_t handle, pad;
        } gc = {c.handle, 0};
        npu_drm_ioctl(d->node.fd, RKT_IOCTL_GEM_CLOSE, &gc);
        return -ENOMEM;
    }
    b->handle = c.handle;
    b->iova = c.dma_address;
    b->offset = c.offset;
    b->size = NPU_ALIGN(size, (uint64_t)RKT_PAGE);
    *out = b;
    return 0;
}

static void
raw_destroy(struct rkt_dev *d, struct rkt_bo *b)
{
    if (!b)
        return;
    if (b->map)
        munmap(b->map, b->size);
    struct {
        uint32_t handle, pad;
    } gc = {b->handle, 0};
    int r = npu_drm_ioctl(d->node.fd, RKT_IOCTL_GEM_CLOSE, &gc);
    if (r)
        npu_warn(DOM, "GEM_CLOSE of handle %u failed: %s", b->handle, strerror(-r));
    free(b);
}

static int
prep_bo(struct rkt_dev *d, uint32_t handle, int64_t abs_ns)
{
    struct npu_rocket_prep_bo p = {.handle = handle, .reserved = 0, .timeout_ns = abs_ns};
    return npu_drm_ioctl(d->node.fd, NPU_ROCKET_IOCTL_PREP_BO, &p);
}

static int
fini_bo(struct rkt_dev *d, uint32_t handle)
{
    struct npu_rocket_fini_bo f = {.handle = handle, .reserved = 0};
    return npu_drm_ioctl(d->node.fd, NPU_ROCKET_IOCTL_FINI_BO, &f);
}

/* ------------------------------------------------------------------ open */

static enum npu_status
rkt_connect(struct rkt_dev *d, char *why, size_t why_size)
{
    enum npu_status st = npu_drm_find_node("accel", rkt_prefixes, NPU_ARRAY_SIZE(rkt_prefixes),
                                           "rocket", &d->node, why, why_size);
    if (st != NPU_OK)
        return st;
    /* Rocket declares no version (0.0.0); a new major would mean a new ABI. */
    const char *allow = getenv("NPU_ROCKET_ALLOW_VERSION");
    if (d->node.major > 1 && !(allow && !strcmp(allow, "1"))) {
        snprintf(why, why_size,
                 "%s: rocket driver version %d.%d.%d is newer than the ABI this runtime knows "
                 "(NPU_ROCKET_ALLOW_VERSION=1 tries it anyway)",
                 d->node.path, d->node.major, d->node.minor, d->node.patch);
        close(d->node.fd);
        return NPU_ERR_VERSION;
    }
    /* The first BO of the file takes IOVA 0 (drm_mm from the bottom of the aperture). It
     * also tells whether PREP_BO exists: the first uapi revision had only CREATE_BO and
     * SUBMIT, and without PREP_BO a job's end cannot be waited for. */
    int r = raw_create(d, RKT_PAGE, &d->page0);
    if (r) {
        snprintf(why, why_size, "%s: DRM_IOCTL_ROCKET_CREATE_BO failed (%s)", d->node.path,
                 strerror(-r));
        close(d->node.fd);
        return errno_status(r);
    }
    r = prep_bo(d, d->page0->handle, 0);
    if (r == -EINVAL || r == -ENOTTY) {
        snprintf(why, why_size,
                 "%s: this rocket has no PREP_BO/FINI_BO (an early uapi revision); jobs "
                 "cannot be waited for: use Linux >= 6.18",
                 d->node.path);
        raw_destroy(d, d->page0);
        d->page0 = NULL;
        close(d->node.fd);
        return NPU_ERR_VERSION;
    }
    snprintf(why, why_size, "%s (rocket %d.%d.%d)", d->node.path, d->node.major, d->node.minor,
             d->node.patch);
    return NPU_OK;
}

static enum npu_status
rkt_probe(char *why, size_t why_size)
{
    struct rkt_dev d;
    memset(&d, 0, sizeof(d));
    enum npu_status st = rkt_connect(&d, why, why_size);
    if (st == NPU_OK) {
        raw_destroy(&d, d.page0);
        close(d.node.fd);
    }
    return st;
}

static enum npu_status
rkt_open(const struct npu_device_options *opts, void **priv)
{
    (void)opts;
    *priv = NULL;
    struct rkt_dev *d = calloc(1, sizeof(*d));
    if (!d)
        return NPU_ERR_NOMEM;
    char why[320];
    enum npu_status st = rkt_connect(d, why, sizeof(why));
    if (st != NPU_OK) {
        npu_err(DOM, "%s%s", st == NPU_ERR_NO_DEVICE ? "no NPU: " : "", why);
        free(d);
        return st;
    }
    if (d->page0->iova != 0)
        npu_dbg(DOM, "the reserved first page landed at 0x%llx, not 0",
                (unsigned long long)d->page0->iova);
    d->job_timeout_ms = npu_env_ms("NPU_ROCKET_JOB_TIMEOUT_MS", 500);
    pthread_mutex_init(&d->lock, NULL);
    npu_info(DOM, "opened %s", why);
    *priv = d;
    return NPU_OK;
}

static void
rkt_destroy(void *priv)
{
    struct rkt_dev *d = priv;
    while (d->sync_pool) {
        struct rkt_bo *b = d->sync_pool;
        d->sync_pool = b->next;
        raw_destroy(d, b);
    }
    raw_destroy(d, d->page0);
    close(d->node.fd);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static enum npu_status
rkt_info(void *priv, struct npu_device_info *info)
{
    struct rkt_dev *d = priv;
    memset(info, 0, sizeof(*info));
    snprintf(info->backend, sizeof(info->backend), "rocket");
    info->n_cores = NPU_MAX_CORES;
    info->drv_version = (uint32_t)(d->node.major * 10000 + d->node.minor * 100 + d->node.patch);
    snprintf(info->hw_version_str, sizeof(info->hw_version_str),
             "RK3588 NPU (rocket does not report a version)");
    snprintf(info->drv_version_str, sizeof(info->drv_version_str), "rocket %d.%d.%d (%.24s)",
             d->node.major, d->node.minor, d->node.patch, d->node.desc);
    snprintf(info->description, sizeof(info->description),
             "upstream rocket accel driver at %.150s, %u cores scheduled by the kernel, one task "
             "per launch",
             d->node.path, info->n_cores);
    return NPU_OK;
}

/* ------------------------------------------------------------------ BOs */

static enum npu_status
rkt_bo_create(void *priv, size_t size, uint32_t flags, struct npu_bo *bo)
{
    struct rkt_dev *d = priv;
    struct rkt_bo *b = NULL;
    int r = raw_create(d, size, &b);
    if (r) {
        npu_err(DOM, "DRM_IOCTL_ROCKET_CREATE_BO of %zu bytes failed: %s", size, strerror(-r));
        return errno_status(r);
    }
    if (b->iova + b->size > 0x100000000ull) {
        npu_err(DOM, "the driver placed a BO at IOVA 0x%llx, beyond the NPU's 32-bit reach",
                (unsigned long long)b->iova);
        raw_destroy(d, b);
        return NPU_ERR_NOMEM;
    }
    b->flags = flags;
    pthread_mutex_lock(&d->lock);
    b->next = d->bos;
    d->bos = b;
    pthread_mutex_unlock(&d->lock);
    bo->handle = b;
    bo->iova = (uint32_t)b->iova;
    return NPU_OK;
}

static enum npu_status
rkt_bo_map(void *priv, struct npu_bo *bo, void **cpu)
{
    struct rkt_dev *d = priv;
    struct rkt_bo *b = bo->handle;
    void *p = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, d->node.fd, (off_t)b->offset);
    if (p == MAP_FAILED) {
        npu_err(DOM, "mmap of BO handle %u failed: %s", b->handle, strerror(errno));
        return errno_status(-errno);
    }
    /* Published under the lock: the coherency sweep reads it. */
    pthread_mutex_lock(&d->lock);
    b->map = p;
    pthread_mutex_unlock(&d->lock);
    *cpu = p;
    return NPU_OK;
}

static enum npu_status
rkt_bo_sync(void *priv, struct npu_bo *bo, unsigned dir, size_t offset, size_t len)
{
    (void)offset;
    (void)len;
    struct rkt_dev *d = priv;
    struct rkt_bo *b = bo->handle;
    /* Rocket syncs whole BOs. */
    int r = 0;
    if (dir & NPU_SYNC_TO_DEVICE)
        r = fini_bo(d, b->handle);
    if (!r && (dir & NPU_SYNC_FROM_DEVICE))
        r = prep_bo(d, b->handle, mono_ns(npu_env_ms("NPU_HW_WAIT_MS", 10000) * 1e-3));
    if (r) {
        npu_err(DOM, "%s of BO 0x%08x failed: %s",
                r && (dir & NPU_SYNC_TO_DEVICE) ? "FINI_BO" : "PREP_BO", bo->iova, strerror(-r));
        return errno_status(r);
    }
    return NPU_OK;
}

static void
rkt_bo_destroy(void *priv, struct npu_bo *bo)
{
    struct rkt_dev *d = priv;
    struct rkt_bo *b = bo->handle;
    pthread_mutex_lock(&d->lock);
    for (struct rkt_bo **p = &d->bos; *p; p = &(*p)->next) {
        if (*p == b) {
            *p = b->next;
            break;
        }
    }
    pthread_mutex_unlock(&d->lock);
    raw_destroy(d, b);
}

/* Keeps non-cacheable BOs coherent: clean before a submit (to_device) or invalidate after
 * a job (from_device), every BO the CPU has mapped. */
static void
coherency_sweep(struct rkt_dev *d, bool to_device)
{
    pthread_mutex_lock(&d->lock);
    for (struct rkt_bo *b = d->bos; b; b = b->next) {
        if (!b->map || (b->flags & NPU_BO_CACHEABLE))
            continue;
        int r = to_device ? fini_bo(d, b->handle) : prep_bo(d, b->handle, 0);
        if (r && r != -EBUSY)
            npu_warn(DOM, "%s of BO 0x%08llx failed: %s", to_device ? "FINI_BO" : "PREP_BO",
                     (unsigned long long)b->iova, strerror(-r));
    }
    pthread_mutex_unlock(&d->lock);
}

/* ----------------------------------------------------------------- jobs */

static enum npu_status
rkt_submit(void *priv, const struct npu_submit *s, void **job)
{
    struct rkt_dev *d = priv;
    *job = NULL;
    if (!(s->flags & NPU_JOB_PC)) {
        npu_err(DOM, "submit: flags 0x%x lack NPU_JOB_PC", s->flags);
        return NPU_ERR_INVALID;
    }
    if (s->task_number == 0 || s->core_mask > 7) {
        npu_err(DOM, "submit: %s", s->task_number ? "core mask above 0x7" : "task_number is 0");
        return NPU_ERR_INVALID;
    }
    if (s->task_base_addr) {
        npu_err(DOM,
                "submit: rocket always programs TASK_DMA_BASE_ADDR 0; task_base_addr "
                "0x%llx cannot be honoured",
                (unsigned long long)s->task_base_addr);
        return NPU_ERR_UNSUPPORTED;
    }
    const struct npu_rknpu_task *desc = s->task_bo->cpu;
    if (!desc) {
        npu_err(DOM, "submit: the task BO was never mapped, so it holds no descriptors");
        return NPU_ERR_INVALID;
    }
    uint64_t n_desc = npu_bo_size(s->task_bo) / sizeof(struct npu_rknpu_task);

    /* The ranges the vendor driver would run, one rocket job each. */
    uint32_t start[NPU_MAX_CORES], count[NPU_MAX_CORES];
    unsigned n_jobs = 0, n = (unsigned)__builtin_popcount(s->core_mask);
    uint32_t total = 0;
    for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
        if (s->core_mask ? !(s->core_mask & (1u << c)) : c > 0)
            continue;
        unsigned slot = n == 3 ? c + 2 : c;
        if (!s->core_mask) {
            for (unsigned k = 0; k < NPU_MAX_CORES; k++) {
                if (s->subcore_task[k].task_number == 0) {
                    npu_err(DOM, "submit: core mask 0 (auto) needs subcore_task[0..2] filled");
                    return NPU_ERR_INVALID;
                }
            }
        }
        const struct npu_subcore_range *r = &s->subcore_task[slot];
        if (r->task_number == 0 || (uint64_t)r->task_start + r->task_number > n_desc) {
            npu_err(DOM,
                    "submit: subcore_task[%u] (tasks %u+%u) is empty or outside the %llu "
                    "descriptors of the task BO",
                    slot, r->task_start, r->task_number, (unsigned long long)n_desc);
            return NPU_ERR_INVALID;
        }
        start[n_jobs] = r->task_start;
        count[n_jobs] = r->task_number;
        total += r->task_number;
        n_jobs++;
    }

    struct npu_rocket_task *tasks = calloc(total, sizeof(*tasks));
    struct npu_rocket_job jobs[NPU_MAX_CORES];
    if (!tasks)
        return NPU_ERR_NOMEM;
    uint32_t k = 0;
    for (unsigned jn = 0; jn < n_jobs; jn++) {
        for (uint32_t t = start[jn]; t < start[jn] + count[jn]; t++, k++) {
            const struct npu_rknpu_task *td = &desc[t];
            if (td->regcmd_addr == 0 || td->regcmd_addr > 0xffffffffull ||
                (td->regcmd_addr & 0xf) || td->regcfg_amount == 0) {
                npu_err(DOM,
                        "submit: descriptor %u (regcmd 0x%llx, %u body qwords) is not complete: "
                        "rocket launches every task from its own descriptor",
                        t, (unsigned long long)td->regcmd_addr, td->regcfg_amount);
                free(tasks);
                return NPU_ERR_INVALID;
            }
            if (!(td->int_mask & 0x300u)) {
                npu_err(DOM,
                        "submit: task %u ends with interrupt mask 0x%x (not a DPU interrupt): "
                        "rocket completes a task only on DPU_0/DPU_1 (facts §4.2), so the job "
                        "would hang",
                        t, td->int_mask);
                free(tasks);
                return NPU_ERR_UNSUPPORTED;
            }
            tasks[k].regcmd = (uint32_t)td->regcmd_addr;
            tasks[k].regcmd_count = td->regcfg_amount + NPU_RKNPU_PC_DATA_EXTRA_AMOUNT;
        }
    }

    struct rkt_job *j = calloc(1, sizeof(*j));
    if (!j) {
        free(tasks);
        return NPU_ERR_NOMEM;
    }
    pthread_mutex_lock(&d->lock);
    j->sync = d->sync_pool;
    if (j->sync)
        d->sync_pool = j->sync->next;
    pthread_mutex_unlock(&d->lock);
    if (!j->sync) {
        int r = raw_create(d, RKT_PAGE, &j->sync);
        if (r) {
            npu_err(DOM, "cannot create a sync BO: %s", strerror(-r));
            free(tasks);
            free(j);
            return errno_status(r);
        }
    }
    j->sync->next = NULL;
    k = 0;
    for (unsigned jn = 0; jn < n_jobs; jn++) {
        memset(&jobs[jn], 0, sizeof(jobs[jn]));
        jobs[jn].tasks = (uint64_t)(uintptr_t)&tasks[k];
        jobs[jn].task_count = count[jn];
        jobs[jn].task_struct_size = sizeof(struct npu_rocket_task);
        jobs[jn].out_bo_handles = (uint64_t)(uintptr_t)&j->sync->handle;
        jobs[jn].out_bo_handle_count = 1;
        k += count[jn];
    }
    struct npu_rocket_submit sub = {
        .jobs = (uint64_t)(uintptr_t)jobs,
        .job_count = n_jobs,
        .job_struct_size = sizeof(struct npu_rocket_job),
        .reserved = 0,
    };
    coherency_sweep(d, true);
    j->t_submit = npu_drm_now_s();
    int r = npu_drm_ioctl(d->node.fd, NPU_ROCKET_IOCTL_SUBMIT, &sub);
    free(tasks);
    if (r) {
        npu_err(DOM, "DRM_IOCTL_ROCKET_SUBMIT failed: %s", strerror(-r));
        pthread_mutex_lock(&d->lock);
        j->sync->next = d->sync_pool;
        d->sync_pool = j->sync;
        pthread_mutex_unlock(&d->lock);
        free(j);
        return errno_status(r);
    }
    uint32_t timeout = s->timeout_ms ? s->timeout_ms : RKT_DEFAULT_TIMEOUT_MS;
    j->deadline = j->t_submit + npu_env_ms("NPU_HW_WAIT_MS", 3 * timeout + 1000) * 1e-3;
    j->dev = d;
    j->n_jobs = n_jobs;
    j->n_tasks = total;
    j->core_mask = s->core_mask;
    *job = j;
    return NPU_OK;
}

static enum npu_status
rkt_wait(void *priv, void *job, int timeout_ms, struct npu_job_result *result)
{
    struct rkt_dev *d = priv;
    struct rkt_job *j = job;
    if (!j->finished) {
        double now = npu_drm_now_s();
        double until = timeout_ms < 0 ? j->deadline : NPU_MIN(now + timeout_ms * 1e-3, j->deadline);
        int64_t abs_ns = timeout_ms == 0 && now < j->deadline ? 0 : mono_ns(until - now);
        int r = prep_bo(d, j->sync->handle, abs_ns);
        struct npu_job_result *res = &j->res;
        if (r == -EBUSY || r == -ETIMEDOUT) {
            if (npu_drm_now_s() < j->deadline)
                return NPU_ERR_TIMEOUT; /* still running */
            memset(res, 0, sizeof(*res));
            res->status = NPU_ERR_TIMEOUT;
            snprintf(res->message, sizeof(res->message),
                     "no completion within %.0f ms of the submit: the job is stuck in the "
                     "kernel's queue or on the NPU (rocket reports no task counter; see dmesg)",
                     (j->deadline - j->t_submit) * 1e3);
        } else {
            memset(res, 0, sizeof(*res));
            double took = npu_drm_now_s() - j->t_submit;
            if (r) {
                res->status = errno_status(r);
                snprintf(res->message, sizeof(res->message), "PREP_BO failed: %s", strerror(-r));
            } else {
                res->status = NPU_OK;
                res->task_counter = j->n_tasks;
                coherency_sweep(d, false);
                if (d->job_timeout_ms && took * 1e3 >= d->job_timeout_ms * j->n_jobs)
                    npu_warn(DOM,
                             "a job took %.0f ms, past rocket's %u ms job limit: if the NPU "
                             "hung, the kernel reset it and the outputs are not valid (rocket "
                             "reports no job errors; check dmesg)",
                             took * 1e3, d->job_timeout_ms);
            }
            res->host_s = took;
        }
        res->core_mask = 0; /* the kernel chose the cores and does not say which */
        j->finished = true;
    }
    if (result)
        *result = j->res;
    return j->res.status;
}

static void
rkt_job_destroy(void *priv, void *job)
{
    struct rkt_dev *d = priv;
    struct rkt_job *j = job;
    rkt_wait(priv, j, -1, NULL);
    pthread_mutex_lock(&d->lock);
    if (j->res.status == NPU_OK) {
        j->sync->next = d->sync_pool;
        d->sync_pool = j->sync;
        j->sync = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    /* A sync BO of a job that never finished may still get its fence: not reused. */
    raw_destroy(d, j->sync);
    free(j);
}

const struct npu_device_ops npu_backend_rocket = {
    .name = "rocket",
    .probe = rkt_probe,
    .open = rkt_open,
    .destroy = rkt_destroy,
    .info = rkt_info,
    .bo_create = rkt_bo_create,
    .bo_create_at = NULL,
    .bo_map = rkt_bo_map,
    .bo_sync = rkt_bo_sync,
    .bo_destroy = rkt_bo_destroy,
    .submit = rkt_submit,
    .wait = rkt_wait,
    .job_destroy = rkt_job_destroy,
};
