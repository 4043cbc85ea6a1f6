/* SPDX-License-Identifier: MIT */
/*
 * kd-priv.h: the fake kernel's internals (libnpu-kdouble-kernel.so): DRM files and GEM
 * objects with their CPU-cache model (kd-core.c), and the two drivers (kd-rknpu.c,
 * kd-rocket.c). One global lock guards every table; handlers that block (a blocking rknpu
 * SUBMIT, rocket PREP_BO) drop it while they wait.
 *
 * Memory model. A GEM object's device memory is a simulator BO (what the NPU reads and
 * writes). A write-combined rknpu BO is mapped to the user as that memory itself (coherent).
 * A cached BO (rknpu RKNPU_MEM_CACHEABLE, every rocket BO: shmem with cached mappings) gets
 * a separate CPU view plus a shadow of what the CPU view held after its last cache
 * maintenance: a 64-byte line whose CPU view differs from its shadow is dirty. Cleaning
 * (MEM_SYNC TO_DEVICE, rocket FINI_BO) writes dirty lines to device memory, and also lines
 * of the cleaned range whose CPU view differs from device memory (a store of unchanged
 * bytes dirties a line on a real CPU too; the double cannot see stores); invalidating
 * (MEM_SYNC FROM_DEVICE, rocket PREP_BO) reloads the CPU view from device memory. This is a
 * cache that never evicts: the worst case for a runtime that forgets a sync, so such a bug
 * shows up as wrong data in every run instead of now and then on a board.
 */
#ifndef KD_PRIV_H
#define KD_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "npu-abi.h"
#include "npu-kdouble.h"
#include "npu-sim.h"

#define KD_PAGE 4096u
#define KD_LINE 64u

enum kd_driver {
    KD_DRV_DISPLAY = 0, /* a non-NPU DRM driver (card0): answers DRM_IOCTL_VERSION only */
    KD_DRV_RKNPU,
    KD_DRV_ROCKET,
};

/* One simulated NPU with one IOVA space: shared by every rknpu file (the vendor driver has
 * one IOMMU domain), one per rocket file (rocket gives each file its own domain). */
struct kd_npu {
    enum kd_driver drv;
    struct npu_sim *sim;
    unsigned refs; /* files, objects and jobs using it */
    /* rocket: the kernel's private descriptor BO (rocket has no task BO; the double hands
     * each launch to the simulator as a one-task rknpu-style range) */
    struct npu_sim_bo *ktask;
    uint32_t ktask_slots;
    uint32_t ktask_next;
};

struct kd_fence {
    unsigned refs;
    bool signaled;
    int error; /* 0, or -ECANCELED after a reset */
};

struct kd_obj {
    unsigned refs; /* handles + mappings + jobs */
    struct kd_npu *npu;
    struct npu_sim_bo *sbo; /* NULL if not visible to the simulator (rocket IOVA page 0) */
    uint64_t iova;
    uint64_t size;                /* page-rounded */
    uint32_t flags;               /* rknpu MEM_* flags; rocket: 0 */
    bool cached;                  /* separate CPU view (see above) */
    uint8_t *dev;                 /* device memory */
    uint8_t *cpu, *shadow;        /* CPU view (== dev when !cached) and its shadow */
    uint8_t *own;                 /* device memory owned here when sbo is NULL */
    uint64_t mmap_offset;         /* DRM fake offset, 0 until created */
    bool ever_mapped;             /* the CPU has had a mapping (cache lines may exist) */
    uint64_t cookie;              /* rknpu obj_addr */
    struct kd_fence *write_fence; /* rocket: last job that listed it as an output */
    struct kd_obj *next;
};

struct kd_handle {
    uint32_t handle;
    struct kd_obj *obj;
};

struct kd_rjob;

struct kd_file {
    int fd;
    unsigned refs; /* the fd + ioctls in progress */
    bool closed;
    enum kd_driver drv;
    char node[64];
    struct kd_npu *npu; /* NULL for the display driver */
    uint32_t version;   /* rknpu: major*10000 + minor*100 + patch */
    bool strict_size;
    bool fence_ok;      /* rknpu: CONFIG_ROCKCHIP_RKNPU_FENCE */
    bool mem_create_40; /* rknpu: the driver's MEM_CREATE struct is the 40-byte one */
    bool old_uapi;      /* rocket: CREATE_BO and SUBMIT only */
    struct kd_handle *handles;
    size_t n_handles, cap_handles;
    /* rocket: the file's scheduler entity, run in order by one worker thread */
    struct kd_rjob *q_head, *q_tail;
    pthread_t worker;
    bool worker_started, stopping;
    int last_core; /* core of the entity's last job, -1 before any */
    uint64_t iova_hint;
    struct kd_file *next;
};

struct kd_map {
    void *addr;
    size_t len;
    struct kd_obj *obj;
    struct kd_map *next;
};

struct kd_state {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* any fence or job state change */
    struct kd_libc libc;
    struct kd_file *files;
    struct kd_obj *objs;
    struct kd_map *maps;
    struct kd_npu *rknpu; /* the shared rknpu NPU, while referenced */
    uint64_t next_pgoff;  /* DRM fake mmap offsets, in pages */
    uint64_t next_cookie;
    unsigned core_jobs[3]; /* jobs queued or running per core (rocket scheduling) */
    unsigned core_busy_mask;
    struct npu_kdouble_stats stats;
    bool quiet;
};

extern struct kd_state kd;

/* Kernel log ("dmesg"): printed to stderr unless NPU_KDOUBLE_QUIET=1, last line kept. */
void kd_dmesg(const char *drv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fault injection (NPU_KDOUBLE_FAULT, see kd-core.c): true when this submit / buffer
 * creation / wait is the one to fail. One count per kind for the process, both drivers. */
enum kd_fault { KD_FAULT_SUBMIT, KD_FAULT_BO, KD_FAULT_WAIT, KD_FAULT_COUNT };
bool kd_fault_now(enum kd_fault kind);

/* User memory access as copy_from_user/copy_to_user: -EFAULT when not accessible. */
int kd_copy_from_user(void *dst, uint64_t uptr, size_t n);
int kd_copy_to_user(uint64_t uptr, const void *src, size_t n);

/* NPU instances (caller holds kd.lock). */
struct kd_npu *kd_npu_get_rknpu(void);
struct kd_npu *kd_npu_new_rocket(void);
void kd_npu_put(struct kd_npu *npu);

/* Objects (caller holds kd.lock). kd_obj_new places it at iova (rocket) or lets the
 * simulator place it top-down (rknpu, iova ignored). */
struct kd_obj *kd_obj_new(struct kd_npu *npu, uint64_t size, bool cached, bool fixed,
                          uint64_t iova);
void kd_obj_put(struct kd_obj *obj);
struct kd_obj *kd_obj_by_cookie(uint64_t cookie);
uint32_t kd_handle_add(struct kd_file *f, struct kd_obj *obj);
struct kd_obj *kd_handle_find(struct kd_file *f, uint32_t handle);
int kd_handle_del(struct kd_file *f, uint32_t handle);
uint64_t kd_obj_mmap_offset(struct kd_obj *obj);
/* Cache maintenance on [off, off+len) clipped to the object. */
void kd_obj_clean(struct kd_obj *obj, uint64_t off, uint64_t len);
void kd_obj_invalidate(struct kd_obj *obj, uint64_t off, uint64_t len);
/* The kernel writing through a cached kernel mapping: both views and the shadow. */
void kd_obj_kernel_write(struct kd_obj *obj, uint64_t off, const void *src, size_t len);
/* The kernel reading through a cached kernel mapping (sees the CPU view). */
void kd_obj_kernel_read(struct kd_obj *obj, uint64_t off, void *dst, size_t len);

struct kd_fence *kd_fence_new(void);
void kd_fence_put(struct kd_fence *f);
void kd_fence_signal(struct kd_fence *f, int error);

/* Core occupancy for the max_concurrent statistic (caller holds kd.lock). */
void kd_cores_busy(unsigned mask);
void kd_cores_idle(unsigned mask);

double kd_now_s(void);
void kd_sleep_until(double t);

/* Drivers: ioctl tables and file hooks. */
struct kd_ioctl {
    unsigned nr;   /* full DRM nr (0x00.., 0x40..) */
    unsigned size; /* kernel struct size */
    unsigned dir;  /* NPU_IOC_WRITE (in) | NPU_IOC_READ (out) */
    int (*fn)(struct kd_file *f, void *karg);
    const char *name;
};

const struct kd_ioctl *kd_rknpu_ioctl(struct kd_file *f, unsigned nr);
const struct kd_ioctl *kd_rocket_ioctl(struct kd_file *f, unsigned nr);
void kd_rknpu_file_open(struct kd_file *f);
int kd_rocket_file_open(struct kd_file *f);
/* Drains and stops the file's entity (called without kd.lock held). */
void kd_rocket_file_close(struct kd_file *f);

#endif /* KD_PRIV_H */
