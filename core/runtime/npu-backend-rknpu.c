/* SPDX-License-Identifier: MIT */
/*
 * npu-backend-rknpu.c: the "rknpu" device backend, over Rockchip's vendor DRM driver
 * (rknpu 0.8/0.9 on the 6.1 vendor kernels; ABI in facts §4.1 and core/hw/npu-abi.h).
 *
 * Open: the DRM node (card or render) whose driver name is "rknpu" (npu-backend-drm.c),
 * then the ACTION queries the vendor runtime makes: driver version (refused unless 0.8.x
 * or 0.9.x, NPU_ERR_VERSION), hardware version, clock, IOMMU, and POWER_ON, which 0.9.8
 * does not implement (it answers -1/EINVAL and powers the NPU around every ioctl itself).
 *
 * Buffers: RKNPU_MEM_CREATE with the flags librknnrt uses (facts §4.1: 0x403 data, 0x40b
 * task BO = NON_CONTIGUOUS | CACHEABLE | IOMMU_LIMIT_IOVA_ALIGNMENT [| KERNEL_MAPPING]),
 * plus ZEROING because the device API promises zeroed contents. A BO the caller did not ask
 * to be cacheable is WRITE_COMBINE instead: coherent, no sync needed. The task BO is always
 * cacheable with a kernel mapping, like librknnrt's: only the driver reads it, through that
 * (coherent) mapping, never the NPU's DMA. The 48-byte MEM_CREATE of 0.9.x is tried first;
 * drivers below 0.9.0, or one that refuses it with EINVAL/ENOTTY, get the 40-byte form.
 * RKNPU_MEM_MAP gives the offset to mmap on the DRM fd; MEM_SYNC does cache maintenance of
 * cacheable BOs (the driver refuses it on others); MEM_DESTROY frees.
 *
 * Jobs: RKNPU_SUBMIT with PC | PINGPONG (facts §4.1), the caller's timeout (6000 ms by
 * default, as librknnrt), core mask and subcore_task ranges as they are (one or two cores:
 * core i reads slot i; all three: slot i + 2; auto: the chosen core reads its own slot).
 * Masks 5 and 6 are refused here: 0.9.8's rknpu_job_commit has no case for them and the
 * job would never start. Completion: where the driver has fences, the submit is
 * NONBLOCK | FENCE_OUT and the wait polls the fence fd; a driver built without
 * CONFIG_ROCKCHIP_RKNPU_FENCE answers EINVAL, and from then on each job is a blocking
 * submit on its own thread (which also brings back the task counter and hw_elapse_time).
 * NPU_RKNPU_FENCE=0 forces the blocking mode.
 *
 * A hung job: a blocking submit comes back with ETIMEDOUT and the task counter
 * (NPU_ERR_TIMEOUT naming it); a fence is never signalled, so the wait gives up after
 * NPU_HW_WAIT_MS (default 3 x timeout + 1 s, the driver's own "wait up to 3 times").
 */
#include "npu-device-backend.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npu-abi.h"
#include "npu-backend-drm.h"

#define DOM "rknpu"
#define RK_DEFAULT_TIMEOUT_MS 6000u

struct rk_dev {
    struct npu_drm_node node;
    uint32_t hw_version, drv_version, freq_hz;
    bool iommu;
    pthread_mutex_t lock;
    bool mem_create_v1; /* use the 40-byte RKNPU_MEM_CREATE */
    bool mem_create_known;
    int fence_mode; /* 1 fences, 0 blocking submits on threads, -1 not known yet */
};

struct rk_bo {
    uint32_t handle;
    uint64_t obj_addr;
    uint64_t size; /* page-rounded, as the driver returns it */
    uint32_t flags;
    void *map;
};

struct rk_job {
    struct rk_dev *dev;
    struct npu_rknpu_submit args;
    struct npu_bo *task_bo;
    int fence_fd;
    bool threaded;
    pthread_t thread;
    pthread_mutex_t m;
    pthread_cond_t c;
    bool ioctl_done;
    int ioctl_ret;
    double t_submit, deadline;
    bool finished;
    struct npu_job_result res;
};

static const char *const rk_prefixes[] = {"renderD", "card"};

/* ---------------------------------------------------------------- open */

static int
rk_action(int fd, uint32_t id, uint32_t *value)
{
    struct npu_rknpu_action a = {.flags = id, .value = value ? *value : 0};
    int r = npu_drm_ioctl(fd, NPU_RKNPU_IOCTL_ACTION, &a);
    if (!r && value)
        *value = a.value;
    return r;
}

static void
version_str(uint32_t v, char *buf, size_t n)
{
    snprintf(buf, n, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
}

/* Opens the node and checks the driver version; *fd_out stays open on NPU_OK. */
static enum npu_status
rk_connect(struct rk_dev *d, char *why, size_t why_size)
{
    enum npu_status st = npu_drm_find_node("dri", rk_prefixes, NPU_ARRAY_SIZE(rk_prefixes), "rknpu",
                                           &d->node, why, why_size);
    if (st != NPU_OK)
        return st;
    uint32_t v = 0;
    int r = rk_action(d->node.fd, NPU_RKNPU_GET_DRV_VERSION, &v);
    if (r) {
        snprintf(why, why_size, "%s: RKNPU_ACTION GET_DRV_VERSION failed (%s)", d->node.path,
                 strerror(-r));
        close(d->node.fd);
        return NPU_ERR_VERSION;
    }
    d->drv_version = v;
    char vs[32];
    version_str(v, vs, sizeof(vs));
    bool known = v / 10000 == 0 && (v / 100 % 100 == 8 || v / 100 % 100 == 9);
    const char *allow = getenv("NPU_RKNPU_ALLOW_VERSION");
    if (!known && !(allow && !strcmp(allow, "1"))) {
        snprintf(why, why_size,
                 "%s: rknpu driver %s is not a version this runtime knows (0.8.x, 0.9.x); "
                 "NPU_RKNPU_ALLOW_VERSION=1 tries it anyway",
                 d->node.path, vs);
        close(d->node.fd);
        return NPU_ERR_VERSION;
    }
    snprintf(why, why_size, "%s (rknpu %s)", d->node.path, vs);
    return NPU_OK;
}

static enum npu_status
rk_probe(char *why, size_t why_size)
{
    struct rk_dev d;
    memset(&d, 0, sizeof(d));
    enum npu_status st = rk_connect(&d, why, why_size);
    if (st == NPU_OK)
        close(d.node.fd);
    return st;
}

static enum npu_status
rk_open(const struct npu_device_options *opts, void **priv)
{
    (void)opts;
    *priv = NULL;
    struct rk_dev *d = calloc(1, sizeof(*d));
    if (!d)
        return NPU_ERR_NOMEM;
    char why[320];
    enum npu_status st = rk_connect(d, why, sizeof(why));
    if (st != NPU_OK) {
        if (st == NPU_ERR_PERMISSION)
            npu_err(DOM, "%s", why);
        else if (st == NPU_ERR_VERSION)
            npu_err(DOM, "%s", why);
        else
            npu_err(DOM, "no NPU: %s", why);
        free(d);
        return st;
    }
    int fd = d->node.fd;
    rk_action(fd, NPU_RKNPU_GET_HW_VERSION, &d->hw_version);
    if (rk_action(fd, NPU_RKNPU_GET_FREQ, &d->freq_hz))
        d->freq_hz = 0;
    uint32_t iommu = 0;
    if (!rk_action(fd, NPU_RKNPU_GET_IOMMU_EN, &iommu))
        d->iommu = iommu != 0;
    /* librknnrt sends POWER_ON; 0.9.8 has no such action (-1/EINVAL, facts §4.1) and powers
     * the NPU around each ioctl by itself, so a refusal is expected and harmless. */
    int r = rk_action(fd, NPU_RKNPU_POWER_ON, NULL);
    if (r && r != -EINVAL)
        npu_warn(DOM, "POWER_ON action failed (%s); continuing", strerror(-r));
    if (!d->iommu)
        npu_warn(DOM, "%s: the driver runs without IOMMU; buffers are physically contiguous",
                 d->node.path);
    d->mem_create_v1 = d->drv_version < 900;
    d->mem_create_known = d->mem_create_v1;
    const char *fm = getenv("NPU_RKNPU_FENCE");
    d->fence_mode = fm && !strcmp(fm, "0") ? 0 : -1;
    pthread_mutex_init(&d->lock, NULL);
    npu_info(DOM, "opened %s", why);
    *priv = d;
    return NPU_OK;
}

static void
rk_destroy(void *priv)
{
    struct rk_dev *d = priv;
    close(d->node.fd);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static enum npu_status
rk_info(void *priv, struct npu_device_info *info)
{
    struct rk_dev *d = priv;
    memset(info, 0, sizeof(*info));
    snprintf(info->backend, sizeof(info->backend), "rknpu");
    info->n_cores = NPU_MAX_CORES;
    info->hw_version = d->hw_version;
    info->drv_version = d->drv_version;
    snprintf(info->hw_version_str, sizeof(info->hw_version_str), "RK3588 NPU, version 0x%08x",
             d->hw_version);
    char vs[32];
    version_str(d->drv_version, vs, sizeof(vs));
    snprintf(info->drv_version_str, sizeof(info->drv_version_str), "rknpu %s", vs);
    snprintf(info->description, sizeof(info->description),
             "vendor rknpu driver %s at %.150s, %u cores, NPU clock %u MHz, IOMMU %s", vs,
             d->node.path, info->n_cores, d->freq_hz / 1000000, d->iommu ? "on" : "off");
    info->flags = 0;
    return NPU_OK;
}

/* ----------------------------------------------------------------- BOs */

static int
mem_create(struct rk_dev *d, uint32_t flags, uint64_t size, struct npu_rknpu_mem_create *out)
{
    memset(out, 0, sizeof(*out));
    out->flags = flags;
    out->size = size;
    pthread_mutex_lock(&d->lock);
    bool v1 = d->mem_create_v1, known = d->mem_create_known;
    pthread_mutex_unlock(&d->lock);
    int r;
    if (!v1) {
        r = npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_MEM_CREATE, out);
        if (!r || known || (r != -EINVAL && r != -ENOTTY)) {
            if (!r && !known) {
                pthread_mutex_lock(&d->lock);
                d->mem_create_known = true;
                pthread_mutex_unlock(&d->lock);
            }
            return r;
        }
        npu_info(DOM, "the 48-byte RKNPU_MEM_CREATE was refused (%s); using the 40-byte form",
                 strerror(-r));
    }
    struct npu_rknpu_mem_create_v1 o1;
    memset(&o1, 0, sizeof(o1));
    o1.flags = flags;
    o1.size = size;
    r = npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_MEM_CREATE_V1, &o1);
    if (!r) {
        pthread_mutex_lock(&d->lock);
        d->mem_create_v1 = true;
        d->mem_create_known = true;
        pthread_mutex_unlock(&d->lock);
        out->handle = o1.handle;
        out->size = o1.size;
        out->obj_addr = o1.obj_addr;
        out->dma_addr = o1.dma_addr;
    }
    return r;
}

static enum npu_status
rk_bo_create(void *priv, size_t size, uint32_t flags, struct npu_bo *bo)
{
    struct rk_dev *d = priv;
    /* facts §4.1: librknnrt's 0x403 / 0x40b, plus ZEROING (zeroed contents promised). */
    uint32_t mf = NPU_RKNPU_MEM_NON_CONTIGUOUS | NPU_RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT |
                  NPU_RKNPU_MEM_ZEROING;
    if (flags & (NPU_BO_CACHEABLE | NPU_BO_TASKS))
        mf |= NPU_RKNPU_MEM_CACHEABLE;
    else
        mf |= NPU_RKNPU_MEM_WRITE_COMBINE;
    if (flags & NPU_BO_TASKS)
        mf |= NPU_RKNPU_MEM_KERNEL_MAPPING;
    struct npu_rknpu_mem_create mc;
    int r = mem_create(d, mf, size, &mc);
    if (r) {
        npu_err(DOM, "RKNPU_MEM_CREATE of %zu bytes (flags 0x%x) failed: %s", size, mf,
                strerror(-r));
        return npu_drm_errno_status(r);
    }
    if (mc.dma_addr + mc.size > 0x100000000ull) {
        struct npu_rknpu_mem_destroy md = {.handle = mc.handle, .obj_addr = mc.obj_addr};
        npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &md);
        npu_err(DOM, "the driver placed a BO at IOVA 0x%llx, beyond the NPU's 32-bit reach",
                (unsigned long long)mc.dma_addr);
        return NPU_ERR_NOMEM;
    }
    struct rk_bo *b = calloc(1, sizeof(*b));
    if (!b) {
        struct npu_rknpu_mem_destroy md = {.handle = mc.handle, .obj_addr = mc.obj_addr};
        npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &md);
        return NPU_ERR_NOMEM;
    }
    b->handle = mc.handle;
    b->obj_addr = mc.obj_addr;
    b->size = mc.size;
    b->flags = mf;
    bo->handle = b;
    bo->iova = (uint32_t)mc.dma_addr;
    return NPU_OK;
}

static enum npu_status
rk_bo_map(void *priv, struct npu_bo *bo, void **cpu)
{
    struct rk_dev *d = priv;
    struct rk_bo *b = bo->handle;
    struct npu_rknpu_mem_map mm = {.handle = b->handle};
    int r = npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_MEM_MAP, &mm);
    if (r) {
        npu_err(DOM, "RKNPU_MEM_MAP of handle %u failed: %s", b->handle, strerror(-r));
        return npu_drm_errno_status(r);
    }
    void *p = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, d->node.fd, (off_t)mm.offset);
    if (p == MAP_FAILED) {
        npu_err(DOM, "mmap of BO handle %u (offset 0x%llx) failed: %s", b->handle,
                (unsigned long long)mm.offset, strerror(errno));
        return npu_drm_errno_status(-errno);
    }
    b->map = p;
    *cpu = p;
    return NPU_OK;
}

static enum npu_status
rk_bo_sync(void *priv, struct npu_bo *bo, unsigned dir, size_t offset, size_t len)
{
    struct rk_dev *d = priv;
    struct rk_bo *b = bo->handle;
    /* Write-combined BOs are coherent; the driver refuses MEM_SYNC on them (-EINVAL). */
    if (!(b->flags & NPU_RKNPU_MEM_CACHEABLE))
        return NPU_OK;
    struct npu_rknpu_mem_sync ms = {
        .flags = ((dir & NPU_SYNC_TO_DEVICE) ? NPU_RKNPU_MEM_SYNC_TO_DEVICE : 0) |
                 ((dir & NPU_SYNC_FROM_DEVICE) ? NPU_RKNPU_MEM_SYNC_FROM_DEVICE : 0),
        .obj_addr = b->obj_addr,
        .offset = offset,
        .size = len,
    };
    int r = npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_MEM_SYNC, &ms);
    if (r) {
        npu_err(DOM, "RKNPU_MEM_SYNC of BO 0x%08x failed: %s", bo->iova, strerror(-r));
        return npu_drm_errno_status(r);
    }
    return NPU_OK;
}

static void
rk_bo_destroy(void *priv, struct npu_bo *bo)
{
    struct rk_dev *d = priv;
    struct rk_bo *b = bo->handle;
    if (b->map)
        munmap(b->map, b->size);
    struct npu_rknpu_mem_destroy md = {.handle = b->handle, .obj_addr = b->obj_addr};
    int r = npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_MEM_DESTROY, &md);
    if (r)
        npu_warn(DOM, "RKNPU_MEM_DESTROY of handle %u failed: %s", b->handle, strerror(-r));
    free(b);
}

/* ---------------------------------------------------------------- jobs */

/* Checks as the driver would, plus what 0.9.8 accepts but never runs. */
static enum npu_status
check_submit(const struct npu_submit *s, uint64_t n_desc)
{
    if (!(s->flags & NPU_JOB_PC)) {
        npu_err(DOM, "submit: flags 0x%x lack RKNPU_JOB_PC (the driver returns -EINVAL)", s->flags);
        return NPU_ERR_INVALID;
    }
    if (s->task_number == 0) {
        npu_err(DOM, "submit: task_number is 0 (the driver returns -EINVAL)");
        return NPU_ERR_INVALID;
    }
    if (s->core_mask > 7) {
        npu_err(DOM, "submit: core mask 0x%x is above 0x7 (the driver returns -EINVAL)",
                s->core_mask);
        return NPU_ERR_INVALID;
    }
    if (s->core_mask == 5 || s->core_mask == 6) {
        npu_err(DOM,
                "submit: core mask 0x%x: rknpu 0.9.8 commits only masks 1, 2, 4, 3 and 7 "
                "(rknpu_job_commit); this job would never start",
                s->core_mask);
        return NPU_ERR_INVALID;
    }
    if (s->task_base_addr > 0xffffffffull || (s->task_base_addr & 0xf)) {
        npu_err(DOM, "submit: task_base_addr 0x%llx is not a 16-byte aligned 32-bit address",
                (unsigned long long)s->task_base_addr);
        return NPU_ERR_INVALID;
    }
    unsigned n = (unsigned)__builtin_popcount(s->core_mask);
    for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
        if (s->core_mask && !(s->core_mask & (1u << c)))
            continue;
        unsigned slot = n == 3 ? c + 2 : c;
        const struct npu_subcore_range *r = &s->subcore_task[slot];
        if (r->task_number == 0) {
            npu_err(DOM, "submit: core %u would run subcore_task[%u], which is empty%s", c, slot,
                    s->core_mask ? "" : " (with core mask 0 the driver may pick any core)");
            return NPU_ERR_INVALID;
        }
        if ((uint64_t)r->task_start + r->task_number > n_desc) {
            npu_err(DOM,
                    "submit: subcore_task[%u] = tasks %u..%u, but the task BO holds %llu "
                    "descriptors",
                    slot, r->task_start, r->task_start + r->task_number - 1,
                    (unsigned long long)n_desc);
            return NPU_ERR_INVALID;
        }
    }
    return NPU_OK;
}

static void *
rk_job_thread(void *arg)
{
    struct rk_job *j = arg;
    int r = npu_drm_ioctl(j->dev->node.fd, NPU_RKNPU_IOCTL_SUBMIT, &j->args);
    pthread_mutex_lock(&j->m);
    j->ioctl_ret = r;
    j->ioctl_done = true;
    pthread_cond_broadcast(&j->c);
    pthread_mutex_unlock(&j->m);
    return NULL;
}

static void
rk_job_free(struct rk_job *j)
{
    if (j->fence_fd >= 0)
        close(j->fence_fd);
    pthread_mutex_destroy(&j->m);
    pthread_cond_destroy(&j->c);
    free(j);
}

static enum npu_status
rk_submit(void *priv, const struct npu_submit *s, void **job)
{
    struct rk_dev *d = priv;
    *job = NULL;
    struct rk_bo *tb = s->task_bo->handle;
    if (!(tb->flags & NPU_RKNPU_MEM_KERNEL_MAPPING)) {
        npu_err(DOM, "submit: the task BO was not created with NPU_BO_TASKS (the driver reads "
                     "descriptors through a kernel mapping)");
        return NPU_ERR_INVALID;
    }
    enum npu_status st = check_submit(s, npu_bo_size(s->task_bo) / sizeof(struct npu_rknpu_task));
    if (st != NPU_OK)
        return st;

    struct rk_job *j = calloc(1, sizeof(*j));
    if (!j)
        return NPU_ERR_NOMEM;
    j->dev = d;
    j->task_bo = s->task_bo;
    j->fence_fd = -1;
    pthread_mutex_init(&j->m, NULL);
    pthread_cond_init(&j->c, NULL);
    struct npu_rknpu_submit *a = &j->args;
    a->flags = NPU_RKNPU_JOB_PC | (s->flags & NPU_JOB_PINGPONG ? NPU_RKNPU_JOB_PINGPONG : 0);
    a->timeout = s->timeout_ms ? s->timeout_ms : RK_DEFAULT_TIMEOUT_MS;
    a->task_start = s->task_start;
    a->task_number = s->task_number;
    a->priority = s->priority;
    a->task_obj_addr = tb->obj_addr;
    a->task_base_addr = s->task_base_addr;
    a->core_mask = s->core_mask;
    a->fence_fd = -1;
    for (unsigned i = 0; i < NPU_SUBCORE_SLOTS; i++) {
        a->subcore_task[i].task_start = s->subcore_task[i].task_start;
        a->subcore_task[i].task_number = s->subcore_task[i].task_number;
    }
    j->t_submit = npu_drm_now_s();
    uint32_t wait_ms = npu_env_ms("NPU_HW_WAIT_MS", 3 * a->timeout + 1000);
    j->deadline = j->t_submit + wait_ms * 1e-3;

    pthread_mutex_lock(&d->lock);
    int mode = d->fence_mode;
    pthread_mutex_unlock(&d->lock);
    if (mode != 0) {
        struct npu_rknpu_submit fa = *a;
        fa.flags |= NPU_RKNPU_JOB_NONBLOCK | NPU_RKNPU_JOB_FENCE_OUT;
        int r = npu_drm_ioctl(d->node.fd, NPU_RKNPU_IOCTL_SUBMIT, &fa);
        if (!r && fa.fence_fd >= 0) {
            if (mode < 0) {
                pthread_mutex_lock(&d->lock);
                d->fence_mode = 1;
                pthread_mutex_unlock(&d->lock);
            }
            j->fence_fd = fa.fence_fd;
            *job = j;
            return NPU_OK;
        }
        if (r != -EINVAL || mode > 0) {
            npu_err(DOM, "RKNPU_SUBMIT failed: %s", r ? strerror(-r) : "no fence fd returned");
            rk_job_free(j);
            return r ? npu_drm_errno_status(r) : NPU_ERR_INTERNAL;
        }
        /* The driver was built without fences (or refused them): blocking submits. */
        npu_info(DOM, "the driver refuses FENCE_OUT (EINVAL); jobs become blocking submits on "
                      "worker threads");
        pthread_mutex_lock(&d->lock);
        d->fence_mode = 0;
        pthread_mutex_unlock(&d->lock);
    }
    j->threaded = true;
    if (pthread_create(&j->thread, NULL, rk_job_thread, j) != 0) {
        rk_job_free(j);
        return NPU_ERR_NOMEM;
    }
    *job = j;
    return NPU_OK;
}

/* Fills the job's final result once the kernel says it ended (ret 0 or -errno). */
static void
rk_job_complete(struct rk_job *j, int ret, bool from_fence)
{
    struct npu_job_result *r = &j->res;
    memset(r, 0, sizeof(*r));
    const struct npu_rknpu_submit *a = &j->args;
    r->core_mask = a->core_mask;
    r->host_s = npu_drm_now_s() - j->t_submit;
    unsigned n = (unsigned)__builtin_popcount(a->core_mask);
    uint32_t total = 0;
    const struct npu_rknpu_task *desc = j->task_bo->cpu;
    for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
        if (a->core_mask ? !(a->core_mask & (1u << c)) : c > 0)
            continue;
        unsigned slot = n == 3 ? c + 2 : c;
        uint32_t s0 = a->subcore_task[slot].task_start, sn = a->subcore_task[slot].task_number;
        total += sn;
        if (desc && sn) /* the driver writes the status into the last descriptor */
            r->int_status[c] = desc[s0 + sn - 1].int_status;
    }
    if (ret == 0) {
        r->status = NPU_OK;
        r->task_counter = total;
        r->hw_elapsed_s = from_fence ? 0 : (double)a->hw_elapse_time * 1e-9;
    } else if (ret == -ETIMEDOUT) {
        r->status = NPU_ERR_TIMEOUT;
        r->task_counter = from_fence ? 0 : a->task_counter;
        if (from_fence)
            snprintf(r->message, sizeof(r->message),
                     "no completion within %.0f ms of the submit (timeout %u ms): the job hung "
                     "on the NPU; a nonblocking submit gets no task counter (see dmesg)",
                     (j->deadline - j->t_submit) * 1e3, a->timeout);
        else
            snprintf(r->message, sizeof(r->message),
                     "the driver gave up after the %u ms timeout: task counter %u of %u (the "
                     "NPU stopped there; see dmesg)",
                     a->timeout, a->task_counter, total);
    } else {
        r->status = npu_drm_errno_status(ret);
        snprintf(r->message, sizeof(r->message), "RKNPU_SUBMIT failed: %s", strerror(-ret));
    }
    j->finished = true;
}

static enum npu_status
rk_wait(void *priv, void *job, int timeout_ms, struct npu_job_result *result)
{
    (void)priv;
    struct rk_job *j = job;
    double now = npu_drm_now_s();
    double until = timeout_ms < 0 ? 1e300 : now + timeout_ms * 1e-3;
    while (!j->finished) {
        now = npu_drm_now_s();
        if (!j->threaded) {
            double stop = NPU_MIN(until, j->deadline);
            int ms = stop > now ? (int)((stop - now) * 1e3 + 0.999) : 0;
            if (ms > 3600000)
                ms = 3600000;
            struct pollfd p = {.fd = j->fence_fd, .events = POLLIN};
            int r = poll(&p, 1, ms);
            if (r > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP))) {
                rk_job_complete(j, 0, true);
            } else if (r < 0 && errno == EINTR) {
                continue;
            } else if (npu_drm_now_s() >= j->deadline) {
                rk_job_complete(j, -ETIMEDOUT, true);
            } else if (npu_drm_now_s() >= until) {
                return NPU_ERR_TIMEOUT;
            }
        } else {
            pthread_mutex_lock(&j->m);
            while (!j->ioctl_done) {
                if (timeout_ms < 0) {
                    pthread_cond_wait(&j->c, &j->m);
                    continue;
                }
                double left = until - npu_drm_now_s();
                if (left <= 0)
                    break;
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double t = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + left;
                ts.tv_sec = (time_t)t;
                ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
                pthread_cond_timedwait(&j->c, &j->m, &ts);
            }
            bool done = j->ioctl_done;
            int ret = j->ioctl_ret;
            pthread_mutex_unlock(&j->m);
            if (!done)
                return NPU_ERR_TIMEOUT;
            pthread_join(j->thread, NULL);
            j->threaded = false;
            j->fence_fd = -1;
            rk_job_complete(j, ret, false);
        }
    }
    if (result)
        *result = j->res;
    return j->res.status;
}

static void
rk_job_destroy(void *priv, void *job)
{
    struct rk_job *j = job;
    rk_wait(priv, j, -1, NULL);
    rk_job_free(j);
}

const struct npu_device_ops npu_backend_rknpu = {
    .name = "rknpu",
    .probe = rk_probe,
    .open = rk_open,
    .destroy = rk_destroy,
    .info = rk_info,
    .bo_create = rk_bo_create,
    .bo_create_at = NULL,
    .bo_map = rk_bo_map,
    .bo_sync = rk_bo_sync,
    .bo_destroy = rk_bo_destroy,
    .submit = rk_submit,
    .wait = rk_wait,
    .job_destroy = rk_job_destroy,
};
