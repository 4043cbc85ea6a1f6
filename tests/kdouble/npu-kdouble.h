/* SPDX-License-Identifier: MIT */
/*
 * npu-kdouble.h: the kernel double of the two NPU drivers, as a test sees it.
 *
 * The double is two libraries. libnpu-kdouble.so is a thin interposer of the libc calls a
 * runtime makes on a device node (open/openat/close/ioctl/mmap/munmap). Loaded with
 * LD_PRELOAD, or linked into a test ahead of libc, it passes every call through untouched
 * unless the path lies under $NPU_DEV_DIR (or the fd came from such a path). The first time
 * it sees such a path it dlopen()s libnpu-kdouble-kernel.so, the fake kernel: the DRM core
 * behaviour the drivers rely on (DRM_IOCTL_VERSION, GEM handles, mmap offsets, the ioctl
 * size rules), the vendor rknpu 0.9.8 driver and the upstream rocket driver, byte for byte
 * as facts §4 and their sources describe them, with jobs executed by the simulator (core/sim,
 * strict mode unless NPU_DEBUG=lenient). Processes that never open a fake node never load
 * the kernel, its simulator or BLAS.
 *
 * Environment (read at every open() of a fake node):
 *   NPU_DEV_DIR              the fake /dev: placeholder files dri/card0 (display, driver
 *                            "rockchip"), dri/card1 + dri/renderD129 (rknpu),
 *                            dri/renderD128 (display), accel/accel0 (rocket)
 *   NPU_KDOUBLE              which NPU drivers are "loaded": rknpu, rocket, both (default
 *                            both); nodes of a driver that is not loaded fail with ENXIO
 *   NPU_KDOUBLE_EACCES       comma-separated node names whose open() fails with EACCES
 *   NPU_KDOUBLE_RKNPU_VERSION  driver version the rknpu double reports (default 0.9.8);
 *                            below 0.9.0 its MEM_CREATE struct is the 40-byte form
 *   NPU_KDOUBLE_RKNPU_MEMCREATE  40: the driver's MEM_CREATE struct is the 40-byte form
 *                            whatever its version
 *   NPU_KDOUBLE_STRICT_SIZE  1: ioctls whose size differs from the driver's struct fail
 *                            with -ENOTTY (a misc-device style build), instead of the DRM
 *                            core's zero-extension
 *   NPU_KDOUBLE_RKNPU_FENCE  0: SUBMIT with FENCE_OUT fails with -EINVAL (a vendor kernel
 *                            built without CONFIG_ROCKCHIP_RKNPU_FENCE)
 *   NPU_KDOUBLE_ROCKET_UAPI  1: the first rocket uapi (CREATE_BO and SUBMIT only)
 *   NPU_KDOUBLE_QUIET        1: do not print the kernel log ("dmesg") lines to stderr
 *   NPU_KDOUBLE_KERNEL       path of libnpu-kdouble-kernel.so (default: next to the shim)
 */
#ifndef NPU_KDOUBLE_H
#define NPU_KDOUBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the fake kernel has done so far in this process (test hooks). */
struct npu_kdouble_stats {
    uint64_t opens;          /* successful opens of fake nodes */
    uint64_t ioctls;         /* ioctls on fake fds */
    uint64_t jobs_submitted; /* rknpu submits queued / rocket jobs accepted */
    uint64_t jobs_done;      /* jobs that completed normally */
    uint64_t jobs_failed;    /* jobs that hung (timed out) on the "hardware" */
    uint64_t jobs_dropped;   /* rocket jobs the kernel rejected silently (errors ignored) */
    uint64_t launches[3];    /* hardware launches per core (rocket: one per task) */
    uint64_t syncs;          /* MEM_SYNC / PREP_BO / FINI_BO calls */
    uint64_t bos_live;       /* GEM objects alive (handles, mappings or jobs hold them) */
    uint64_t mmaps_live;     /* user mappings of fake BOs */
    unsigned max_concurrent; /* most jobs running on distinct cores at the same time */
    char last_dmesg[512];    /* last kernel log line */
};

/* True when the interposer is in the process (it always is, if this links). */
bool npu_kdouble_present(void);
/* Copies the kernel's counters; all zero if no fake node was ever opened. */
void npu_kdouble_get_stats(struct npu_kdouble_stats *out);

/* ---- internal: the interface between the shim and the kernel library ---- */

struct kd_libc {
    int (*open)(const char *path, int flags, ...);
    int (*close)(int fd);
    int (*ioctl)(int fd, unsigned long req, ...);
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    int (*munmap)(void *addr, size_t len);
};

#define KD_NOT_MINE (1 << 30)

struct kd_kernel_ops {
    /* Opens a fake node (path under $NPU_DEV_DIR; node = path relative to it). Returns the
     * new fd, or -errno. */
    int (*open)(const char *path, const char *node, int flags);
    /* The fd was a fake node: releases its DRM file (the shim then closes the fd). */
    void (*close)(int fd);
    /* Returns 0 or -errno, or KD_NOT_MINE if fd is no (longer a) fake node: closed behind
     * the shim's back (close_range, a raw syscall) and its number reused. */
    int (*ioctl)(int fd, unsigned long req, void *arg);
    /* Returns the mapping, or MAP_FAILED with errno set (ENODEV: fd is not a fake node). */
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    /* 1 if [addr, addr+len) was a fake mapping (now released), 0 otherwise. */
    int (*munmap)(void *addr, size_t len);
    void (*get_stats)(struct npu_kdouble_stats *out);
};

/* The kernel library's one exported symbol. */
const struct kd_kernel_ops *npu_kdouble_kernel_init(const struct kd_libc *libc);

#ifdef __cplusplus
}
#endif

#endif /* NPU_KDOUBLE_H */
