/* SPDX-License-Identifier: MIT */
/*
 * kd-core.c: the DRM core half of the fake kernel: device nodes and files, GEM objects and
 * handles (lowest free id from 1, as the kernel's idr), fake mmap offsets (DRM hands out
 * page offsets from 4 GiB up on 64-bit), mmap checks (exact offset, length within the
 * object, a handle in the calling file, else -EINVAL / -EACCES), DRM_IOCTL_VERSION with the
 * kernel's truncation rules, DRM_IOCTL_GEM_CLOSE, and drm_ioctl()'s argument rules: the
 * driver's struct size decides what the kernel sees, a shorter user struct is zero-extended,
 * a longer one is copied as is, in/out copies follow the direction bits both sides share,
 * an unknown nr is -EINVAL and an unreadable argument -EFAULT.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "kd-priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct kd_state kd = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

/* ------------------------------------------------------------------ helpers */

double
kd_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
kd_sleep_until(double t)
{
    for (;;) {
        double d = t - kd_now_s();
        if (d <= 0)
            return;
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static pthread_mutex_t dmesg_lock = PTHREAD_MUTEX_INITIALIZER;
static char dmesg_last[512];

void
kd_dmesg(const char *drv, const char *fmt, ...)
{
    char line[448];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&dmesg_lock);
    snprintf(dmesg_last, sizeof(dmesg_last), "%s: %s", drv, line);
    pthread_mutex_unlock(&dmesg_lock);
    if (!__atomic_load_n(&kd.quiet, __ATOMIC_RELAXED))
        fprintf(stderr, "[kdouble] %s: %s\n", drv, line);
}

/* NPU_KDOUBLE_FAULT="submit:N,bo:M,wait:K" (the spec of NPU_SIM_FAULT): true when this
 * call is the Nth/Mth/Kth of its kind in the process, counted from when the variable last
 * changed; 1-based, 0 or absent = never. Logged as a kernel line. */
static long fault_seen[KD_FAULT_COUNT];
static char fault_spec[128];
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

bool
kd_fault_now(enum kd_fault kind)
{
    static const char *const names[KD_FAULT_COUNT] = {"submit:", "bo:", "wait:"};
    const char *spec = getenv("NPU_KDOUBLE_FAULT");
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
    kd_dmesg("kdouble", "NPU_KDOUBLE_FAULT: failing %s call %ld on purpose", names[kind], n);
    return true;
}

/* copy_from_user / copy_to_user: the kernel never faults on a bad user pointer, it returns
 * -EFAULT. process_vm_readv/writev on our own pid report an inaccessible range the same
 * way without touching it. */
int
kd_copy_from_user(void *dst, uint64_t uptr, size_t n)
{
    if (!n)
        return 0;
    if (uptr < KD_PAGE)
        return -EFAULT;
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)(uintptr_t)uptr, n};
    ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (r == (ssize_t)n)
        return 0;
    if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
        memcpy(dst, (const void *)(uintptr_t)uptr, n); /* cannot check (qemu-user) */
        return 0;
    }
    return -EFAULT;
}

int
kd_copy_to_user(uint64_t uptr, const void *src, size_t n)
{
    if (!n)
        return 0;
    if (uptr < KD_PAGE)
        return -EFAULT;
    struct iovec local = {(void *)src, n};
    struct iovec remote = {(void *)(uintptr_t)uptr, n};
    ssize_t r = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
    if (r == (ssize_t)n)
        return 0;
    if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
        memcpy((void *)(uintptr_t)uptr, src, n);
        return 0;
    }
    return -EFAULT;
}

void
kd_cores_busy(unsigned mask)
{
    kd.core_busy_mask |= mask;
    unsigned n = (unsigned)__builtin_popcount(kd.core_busy_mask);
    if (n > kd.stats.max_concurrent)
        kd.stats.max_concurrent = n;
}

void
kd_cores_idle(unsigned mask)
{
    kd.core_busy_mask &= ~mask;
}

/* -------------------------------------------------------------- NPU instances */

static struct kd_npu *
npu_new(enum kd_driver drv)
{
    struct kd_npu *npu = calloc(1, sizeof(*npu));
    if (!npu)
        return NULL;
    npu->drv = drv;
    struct npu_sim_options so = {.strict = -1, .n_cores = 0};
    if (npu_sim_create(&so, &npu->sim) != NPU_OK) {
        free(npu);
        return NULL;
    }
    npu->refs = 1;
    return npu;
}

struct kd_npu *
kd_npu_get_rknpu(void)
{
    if (kd.rknpu) {
        kd.rknpu->refs++;
        return kd.rknpu;
    }
    kd.rknpu = npu_new(KD_DRV_RKNPU);
    return kd.rknpu;
}

/* The top page of a rocket file's IOVA space holds the double's private descriptors; the
 * user allocator stops below it. */
#define KD_ROCKET_KTASK_IOVA 0xfffff000u

struct kd_npu *
kd_npu_new_rocket(void)
{
    struct kd_npu *npu = npu_new(KD_DRV_ROCKET);
    if (!npu)
        return NULL;
    if (npu_sim_bo_create_at(npu->sim, KD_ROCKET_KTASK_IOVA, KD_PAGE, &npu->ktask) != NPU_OK) {
        npu_sim_destroy(npu->sim);
        free(npu);
        return NULL;
    }
    npu->ktask_slots = KD_PAGE / sizeof(struct npu_rknpu_task);
    return npu;
}

void
kd_npu_put(struct kd_npu *npu)
{
    if (!npu || --npu->refs)
        return;
    if (npu == kd.rknpu)
        kd.rknpu = NULL;
    /* The simulator waits for its workers; nothing of ours runs on them. */
    if (npu->ktask)
        npu_sim_bo_destroy(npu->ktask);
    npu_sim_destroy(npu->sim);
    free(npu);
}

/* ------------------------------------------------------------------ objects */

struct kd_obj *
kd_obj_new(struct kd_npu *npu, uint64_t size, bool cached, bool fixed, uint64_t iova)
{
    struct kd_obj *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->size = NPU_ALIGN(size, (uint64_t)KD_PAGE);
    enum npu_status st = NPU_OK;
    if (fixed && iova < KD_PAGE) {
        /* The simulator never maps page 0 (an address-0 DMA must fault); rocket can hand IOVA
         * 0 to a file's first BO. Such a BO exists for the CPU but the NPU cannot see it. */
        o->own = aligned_alloc(KD_PAGE, o->size);
        if (!o->own)
            st = NPU_ERR_NOMEM;
        else
            memset(o->own, 0, o->size);
        o->dev = o->own;
        o->iova = iova;
        kd_dmesg("kdouble", "a BO at IOVA 0x%llx is not visible to the simulated NPU",
                 (unsigned long long)iova);
    } else if (fixed) {
        st = npu_sim_bo_create_at(npu->sim, (uint32_t)iova, o->size, &o->sbo);
    } else {
        st = npu_sim_bo_create(npu->sim, o->size, &o->sbo);
    }
    if (st != NPU_OK) {
        free(o);
        return NULL;
    }
    if (o->sbo) {
        o->dev = npu_sim_bo_cpu(o->sbo);
        o->iova = npu_sim_bo_iova(o->sbo);
    }
    o->cached = cached;
    if (cached) {
        o->cpu = aligned_alloc(KD_PAGE, o->size);
        o->shadow = malloc(o->size);
        if (!o->cpu || !o->shadow) {
            free(o->cpu);
            free(o->shadow);
            if (o->sbo)
                npu_sim_bo_destroy(o->sbo);
            free(o->own);
            free(o);
            return NULL;
        }
        memset(o->cpu, 0, o->size);
        memset(o->shadow, 0, o->size);
    } else {
        o->cpu = o->dev;
    }
    o->npu = npu;
    npu->refs++;
    o->refs = 1;
    o->cookie = 0xffffff8040000000ull + (++kd.next_cookie) * 0x400ull;
    o->next = kd.objs;
    kd.objs = o;
    kd.stats.bos_live++;
    return o;
}

void
kd_obj_put(struct kd_obj *o)
{
    if (!o || --o->refs)
        return;
    for (struct kd_obj **p = &kd.objs; *p; p = &(*p)->next) {
        if (*p == o) {
            *p = o->next;
            break;
        }
    }
    kd_fence_put(o->write_fence);
    if (o->sbo)
        npu_sim_bo_destroy(o->sbo);
    if (o->cached) {
        free(o->cpu);
        free(o->shadow);
    }
    free(o->own);
    kd.stats.bos_live--;
    kd_npu_put(o->npu);
    free(o);
}

struct kd_obj *
kd_obj_by_cookie(uint64_t cookie)
{
    for (struct kd_obj *o = kd.objs; o; o = o->next)
        if (o->cookie == cookie)
            return o;
    return NULL;
}

uint64_t
kd_obj_mmap_offset(struct kd_obj *o)
{
    if (!o->mmap_offset) {
        /* DRM_FILE_PAGE_OFFSET_START on 64-bit: page 0x100000 (byte offset 4 GiB). */
        if (!kd.next_pgoff)
            kd.next_pgoff = 0x100000;
        o->mmap_offset = kd.next_pgoff * KD_PAGE;
        kd.next_pgoff += o->size / KD_PAGE;
    }
    return o->mmap_offset;
}

static void
clip(const struct kd_obj *o, uint64_t *off, uint64_t *len)
{
    if (*off > o->size)
        *off = o->size;
    if (*len > o->size - *off)
        *len = o->size - *off;
}

void
kd_obj_clean(struct kd_obj *o, uint64_t off, uint64_t len)
{
    if (!o->cached)
        return;
    clip(o, &off, &len);
    uint64_t lo = off / KD_LINE * KD_LINE, hi = NPU_ALIGN(off + len, (uint64_t)KD_LINE);
    for (uint64_t a = lo; a < hi; a += KD_LINE) {
        /* A store dirties its line whatever the value; the double cannot see stores, so
         * besides lines that changed since the last maintenance it writes back those that
         * differ from device memory: the CPU re-storing the bytes its stale view already
         * held (the same input again, into arena memory the NPU has since reused) must
         * reach the device, as on a board. */
        if (memcmp(o->cpu + a, o->shadow + a, KD_LINE) || memcmp(o->cpu + a, o->dev + a, KD_LINE)) {
            memcpy(o->dev + a, o->cpu + a, KD_LINE);
            memcpy(o->shadow + a, o->cpu + a, KD_LINE);
        }
    }
}

void
kd_obj_invalidate(struct kd_obj *o, uint64_t off, uint64_t len)
{
    if (!o->cached)
        return;
    clip(o, &off, &len);
    uint64_t lo = off / KD_LINE * KD_LINE, hi = NPU_ALIGN(off + len, (uint64_t)KD_LINE);
    memcpy(o->cpu + lo, o->dev + lo, hi - lo);
    memcpy(o->shadow + lo, o->dev + lo, hi - lo);
}

void
kd_obj_kernel_write(struct kd_obj *o, uint64_t off, const void *src, size_t len)
{
    memcpy(o->dev + off, src, len);
    if (o->cached) {
        memcpy(o->cpu + off, src, len);
        memcpy(o->shadow + off, src, len);
    }
}

void
kd_obj_kernel_read(struct kd_obj *o, uint64_t off, void *dst, size_t len)
{
    memcpy(dst, o->cpu + off, len);
}

/* ------------------------------------------------------------------ handles */

uint32_t
kd_handle_add(struct kd_file *f, struct kd_obj *obj)
{
    if (f->n_handles == f->cap_handles) {
        size_t cap = f->cap_handles ? f->cap_handles * 2 : 16;
        struct kd_handle *n = realloc(f->handles, cap * sizeof(*n));
        if (!n)
            return 0;
        f->handles = n;
        f->cap_handles = cap;
    }
    /* idr_alloc(.., 1, 0): the lowest free id from 1; the array is kept sorted. */
    uint32_t h = 1;
    size_t i = 0;
    while (i < f->n_handles && f->handles[i].handle == h) {
        h++;
        i++;
    }
    memmove(&f->handles[i + 1], &f->handles[i], (f->n_handles - i) * sizeof(*f->handles));
    f->handles[i].handle = h;
    f->handles[i].obj = obj;
    f->n_handles++;
    obj->refs++; /* the handle's reference */
    return h;
}

struct kd_obj *
kd_handle_find(struct kd_file *f, uint32_t handle)
{
    for (size_t i = 0; i < f->n_handles; i++)
        if (f->handles[i].handle == handle)
            return f->handles[i].obj;
    return NULL;
}

int
kd_handle_del(struct kd_file *f, uint32_t handle)
{
    for (size_t i = 0; i < f->n_handles; i++) {
        if (f->handles[i].handle == handle) {
            struct kd_obj *o = f->handles[i].obj;
            memmove(&f->handles[i], &f->handles[i + 1],
                    (f->n_handles - i - 1) * sizeof(*f->handles));
            f->n_handles--;
            kd_obj_put(o);
            return 0;
        }
    }
    return -EINVAL;
}

static bool
file_has_obj(const struct kd_file *f, const struct kd_obj *o)
{
    for (size_t i = 0; i < f->n_handles; i++)
        if (f->handles[i].obj == o)
            return true;
    return false;
}

/* ------------------------------------------------------------------- fences */

struct kd_fence *
kd_fence_new(void)
{
    struct kd_fence *f = calloc(1, sizeof(*f));
    if (f)
        f->refs = 1;
    return f;
}

void
kd_fence_put(struct kd_fence *f)
{
    if (f && --f->refs == 0)
        free(f);
}

void
kd_fence_signal(struct kd_fence *f, int error)
{
    f->signaled = true;
    f->error = error;
    pthread_cond_broadcast(&kd.cond);
}

/* -------------------------------------------------------------------- files */

static struct kd_file *
file_get(int fd)
{
    for (struct kd_file *f = kd.files; f; f = f->next) {
        if (f->fd == fd && !f->closed) {
            f->refs++;
            return f;
        }
    }
    return NULL;
}

static void
file_put(struct kd_file *f)
{
    if (--f->refs)
        return;
    while (f->n_handles)
        kd_handle_del(f, f->handles[0].handle);
    free(f->handles);
    kd_npu_put(f->npu);
    free(f);
}

static bool
env_list_has(const char *var, const char *item)
{
    const char *v = getenv(var);
    if (!v)
        return false;
    size_t n = strlen(item);
    for (const char *p = v; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, item, n))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static bool
env_is(const char *var, const char *value)
{
    const char *v = getenv(var);
    return v && !strcmp(v, value);
}

static int
node_driver(const char *node, enum kd_driver *drv)
{
    if (!strcmp(node, "dri/card0") || !strcmp(node, "dri/renderD128"))
        *drv = KD_DRV_DISPLAY;
    else if (!strcmp(node, "dri/card1") || !strcmp(node, "dri/renderD129"))
        *drv = KD_DRV_RKNPU;
    else if (!strcmp(node, "accel/accel0"))
        *drv = KD_DRV_ROCKET;
    else
        return -ENXIO;
    if (*drv == KD_DRV_DISPLAY)
        return 0;
    const char *which = getenv("NPU_KDOUBLE");
    if (!which || !*which || !strcmp(which, "both"))
        return 0;
    if (*drv == KD_DRV_RKNPU && env_list_has("NPU_KDOUBLE", "rknpu"))
        return 0;
    if (*drv == KD_DRV_ROCKET && env_list_has("NPU_KDOUBLE", "rocket"))
        return 0;
    return -ENXIO; /* a node whose driver is not loaded */
}

static uint32_t
parse_version(const char *s, uint32_t def)
{
    unsigned a, b, c;
    if (s && sscanf(s, "%u.%u.%u", &a, &b, &c) == 3)
        return a * 10000 + b * 100 + c;
    return def;
}

static int
kd_open(const char *path, const char *node, int flags)
{
    enum kd_driver drv;
    int r = node_driver(node, &drv);
    if (r)
        return r;
    if (env_list_has("NPU_KDOUBLE_EACCES", node))
        return -EACCES;
    int fd = kd.libc.open(path, O_RDONLY | (flags & O_CLOEXEC));
    if (fd < 0)
        return -errno;
    struct kd_file *f = calloc(1, sizeof(*f));
    if (!f) {
        kd.libc.close(fd);
        return -ENOMEM;
    }
    f->fd = fd;
    f->refs = 1;
    f->drv = drv;
    f->last_core = -1;
    snprintf(f->node, sizeof(f->node), "%s", node);
    f->strict_size = env_is("NPU_KDOUBLE_STRICT_SIZE", "1");
    pthread_mutex_lock(&kd.lock);
    __atomic_store_n(&kd.quiet, env_is("NPU_KDOUBLE_QUIET", "1"), __ATOMIC_RELAXED);
    int err = 0;
    if (drv == KD_DRV_RKNPU) {
        f->version = parse_version(getenv("NPU_KDOUBLE_RKNPU_VERSION"), 908);
        f->fence_ok = !env_is("NPU_KDOUBLE_RKNPU_FENCE", "0");
        f->mem_create_40 = f->version < 900 || env_is("NPU_KDOUBLE_RKNPU_MEMCREATE", "40");
        f->npu = kd_npu_get_rknpu();
        if (!f->npu)
            err = -ENOMEM;
        else
            kd_rknpu_file_open(f);
    } else if (drv == KD_DRV_ROCKET) {
        f->old_uapi = env_is("NPU_KDOUBLE_ROCKET_UAPI", "1");
        f->npu = kd_npu_new_rocket();
        if (!f->npu)
            err = -ENOMEM;
    }
    if (!err) {
        f->next = kd.files;
        kd.files = f;
        kd.stats.opens++;
    }
    pthread_mutex_unlock(&kd.lock);
    if (!err && drv == KD_DRV_ROCKET)
        err = kd_rocket_file_open(f);
    if (err) {
        pthread_mutex_lock(&kd.lock);
        for (struct kd_file **p = &kd.files; *p; p = &(*p)->next) {
            if (*p == f) {
                *p = f->next;
                break;
            }
        }
        file_put(f);
        pthread_mutex_unlock(&kd.lock);
        kd.libc.close(fd);
        return err;
    }
    return fd;
}

static void
kd_close(int fd)
{
    pthread_mutex_lock(&kd.lock);
    struct kd_file *f = NULL;
    for (struct kd_file **p = &kd.files; *p; p = &(*p)->next) {
        if ((*p)->fd == fd && !(*p)->closed) {
            f = *p;
            *p = f->next;
            break;
        }
    }
    if (f)
        f->closed = true;
    pthread_mutex_unlock(&kd.lock);
    if (!f)
        return;
    if (f->drv == KD_DRV_ROCKET)
        kd_rocket_file_close(f);
    pthread_mutex_lock(&kd.lock);
    file_put(f);
    pthread_mutex_unlock(&kd.lock);
}

/* ----------------------------------------------------------- DRM core ioctls */

/* struct drm_version (include/uapi/drm/drm.h), LP64 layout. */
struct kd_drm_version {
    int version_major;
    int version_minor;
    int version_patchlevel;
    size_t name_len;
    uint64_t name; /* char __user * */
    size_t date_len;
    uint64_t date;
    size_t desc_len;
    uint64_t desc;
};
_Static_assert(sizeof(struct kd_drm_version) == 64, "drm_version is 64 bytes on LP64");

struct kd_drm_gem_close {
    uint32_t handle;
    uint32_t pad;
};

/* drm_copy_field(): copy at most *len bytes, report the full length. */
static int
copy_field(uint64_t buf, size_t *len, const char *value)
{
    size_t n = strlen(value);
    size_t c = n < *len ? n : *len;
    *len = n;
    if (c && buf)
        return kd_copy_to_user(buf, value, c);
    return 0;
}

static int
ioctl_version(struct kd_file *f, void *karg)
{
    struct kd_drm_version *v = karg;
    const char *name, *date, *desc;
    int maj, min, pat;
    switch (f->drv) {
    case KD_DRV_RKNPU:
        name = "rknpu";
        date = "20240424";
        desc = "RKNPU driver";
        maj = (int)(f->version / 10000);
        min = (int)(f->version / 100 % 100);
        pat = (int)(f->version % 100);
        break;
    case KD_DRV_ROCKET:
        /* rocket sets no version; kernels since 6.14 report the date as "0". */
        name = "rocket";
        date = "0";
        desc = "rocket DRM";
        maj = min = pat = 0;
        break;
    default:
        name = "rockchip";
        date = "20140818";
        desc = "RockChip Soc DRM";
        maj = 3;
        min = pat = 0;
        break;
    }
    v->version_major = maj;
    v->version_minor = min;
    v->version_patchlevel = pat;
    int r = copy_field(v->name, &v->name_len, name);
    if (!r)
        r = copy_field(v->date, &v->date_len, date);
    if (!r)
        r = copy_field(v->desc, &v->desc_len, desc);
    return r;
}

static int
ioctl_gem_close(struct kd_file *f, void *karg)
{
    struct kd_drm_gem_close *c = karg;
    pthread_mutex_lock(&kd.lock);
    int r = kd_handle_del(f, c->handle);
    pthread_mutex_unlock(&kd.lock);
    return r;
}

static const struct kd_ioctl core_ioctls[] = {
    {0x00, sizeof(struct kd_drm_version), NPU_IOC_READ | NPU_IOC_WRITE, ioctl_version, "VERSION"},
    {0x09, sizeof(struct kd_drm_gem_close), NPU_IOC_WRITE, ioctl_gem_close, "GEM_CLOSE"},
};

static int
kd_ioctl(int fd, unsigned long req, void *arg)
{
    pthread_mutex_lock(&kd.lock);
    struct kd_file *f = file_get(fd);
    kd.stats.ioctls++;
    pthread_mutex_unlock(&kd.lock);
    if (!f)
        return KD_NOT_MINE;

    unsigned nr = (unsigned)(req & 0xff);
    unsigned usize = (unsigned)((req >> 16) & 0x3fff);
    unsigned udir = (unsigned)((req >> 30) & 3);
    const struct kd_ioctl *d = NULL;
    if (nr < NPU_DRM_COMMAND_BASE) {
        for (size_t i = 0; i < NPU_ARRAY_SIZE(core_ioctls); i++)
            if (core_ioctls[i].nr == nr)
                d = &core_ioctls[i];
        /* GEM_CLOSE needs DRIVER_GEM, which the display double does not claim. */
        if (d && d->nr == 0x09 && f->drv == KD_DRV_DISPLAY)
            d = NULL;
    } else if (nr < 0xa0) {
        if (f->drv == KD_DRV_RKNPU)
            d = kd_rknpu_ioctl(f, nr);
        else if (f->drv == KD_DRV_ROCKET)
            d = kd_rocket_ioctl(f, nr);
    }
    int r = -EINVAL; /* drm_ioctl's answer to an nr it has no entry for */
    void *k = NULL;
    if (!d)
        goto out;
    if (f->strict_size && usize != d->size) {
        r = -ENOTTY;
        goto out;
    }
    unsigned in = (udir & d->dir & NPU_IOC_WRITE) ? usize : 0;
    unsigned out = (udir & d->dir & NPU_IOC_READ) ? usize : 0;
    unsigned ksize = NPU_MAX(NPU_MAX(in, out), d->size);
    k = calloc(1, ksize ? ksize : 1);
    if (!k) {
        r = -ENOMEM;
        goto out;
    }
    r = kd_copy_from_user(k, (uint64_t)(uintptr_t)arg, in);
    if (r)
        goto out;
    r = d->fn(f, k);
    /* drm_ioctl copies the struct back even when the handler failed. */
    if (out && kd_copy_to_user((uint64_t)(uintptr_t)arg, k, out))
        r = -EFAULT;
out:
    free(k);
    pthread_mutex_lock(&kd.lock);
    file_put(f);
    pthread_mutex_unlock(&kd.lock);
    return r;
}

/* -------------------------------------------------------------------- mmap */

static void *
kd_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    (void)prot;
    pthread_mutex_lock(&kd.lock);
    struct kd_file *f = file_get(fd);
    int err = 0;
    void *p = MAP_FAILED;
    struct kd_obj *o = NULL;
    if (!f) {
        err = ENODEV;
        goto out;
    }
    if (f->drv == KD_DRV_DISPLAY || (flags & MAP_FIXED) || addr) {
        err = EINVAL;
        if (f->drv != KD_DRV_DISPLAY)
            kd_dmesg("kdouble", "mmap at a fixed address is not emulated");
        goto out;
    }
    for (o = kd.objs; o; o = o->next)
        if (o->mmap_offset && o->mmap_offset == (uint64_t)off)
            break;
    if (!o || len == 0) {
        err = EINVAL; /* drm_gem_mmap: no vma node starts at this offset */
        goto out;
    }
    if (!file_has_obj(f, o)) {
        err = EACCES; /* drm_vma_node_is_allowed() */
        goto out;
    }
    if (len > o->size) {
        err = EINVAL;
        goto out;
    }
    struct kd_map *m = calloc(1, sizeof(*m));
    if (!m) {
        err = ENOMEM;
        goto out;
    }
    /* Until the CPU first maps a cached BO it holds no lines of it: its view starts as
     * memory is (the kernel cleaned the pages when it mapped them for the device). */
    if (o->cached && !o->ever_mapped)
        kd_obj_invalidate(o, 0, o->size);
    o->ever_mapped = true;
    m->addr = o->cpu;
    m->len = len;
    m->obj = o;
    o->refs++;
    m->next = kd.maps;
    kd.maps = m;
    kd.stats.mmaps_live++;
    p = m->addr;
out:
    if (f)
        file_put(f);
    pthread_mutex_unlock(&kd.lock);
    if (p == MAP_FAILED)
        errno = err;
    return p;
}

static int
kd_munmap(void *addr, size_t len)
{
    int handled = 0;
    pthread_mutex_lock(&kd.lock);
    for (struct kd_map **pm = &kd.maps; *pm; pm = &(*pm)->next) {
        struct kd_map *m = *pm;
        uintptr_t a = (uintptr_t)addr, b = (uintptr_t)m->addr;
        if (a + len > b && a < b + m->len) {
            if (a != b || len != m->len)
                kd_dmesg("kdouble", "partial munmap of a BO mapping is not emulated; the "
                                    "whole mapping goes");
            *pm = m->next;
            kd_obj_put(m->obj);
            free(m);
            kd.stats.mmaps_live--;
            handled = 1;
            break;
        }
    }
    pthread_mutex_unlock(&kd.lock);
    return handled;
}

static void
kd_get_stats(struct npu_kdouble_stats *out)
{
    pthread_mutex_lock(&kd.lock);
    *out = kd.stats;
    pthread_mutex_unlock(&kd.lock);
    pthread_mutex_lock(&dmesg_lock);
    snprintf(out->last_dmesg, sizeof(out->last_dmesg), "%s", dmesg_last);
    pthread_mutex_unlock(&dmesg_lock);
}

static const struct kd_kernel_ops ops = {
    .open = kd_open,
    .close = kd_close,
    .ioctl = kd_ioctl,
    .mmap = kd_mmap,
    .munmap = kd_munmap,
    .get_stats = kd_get_stats,
};

__attribute__((visibility("default"))) const struct kd_kernel_ops *
npu_kdouble_kernel_init(const struct kd_libc *libc)
{
    kd.libc = *libc;
    /* PREP_BO waits on absolute CLOCK_MONOTONIC deadlines. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&kd.cond);
    pthread_cond_init(&kd.cond, &ca);
    pthread_condattr_destroy(&ca);
    return &ops;
}
