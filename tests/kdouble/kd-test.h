/* SPDX-License-Identifier: MIT */
/*
 * kd-test.h: helpers of the raw-ioctl tests of the kernel double: opening a fake node,
 * DRM_IOCTL_VERSION, and an int8 add program (facts A.2 register set) at given IOVAs.
 */
#ifndef KD_TEST_H
#define KD_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "npu-handprog.h"
#include "npu-kdouble.h"
#include "npu-test.h"

static inline int
kt_open(const char *node)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", getenv("NPU_DEV_DIR"), node);
    return open(path, O_RDWR | O_CLOEXEC);
}

/* ioctl's result as 0 or -errno. */
static inline int
kt_ioctl(int fd, unsigned long req, void *arg)
{
    return ioctl(fd, req, arg) ? -errno : 0;
}

static inline double
kt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* struct drm_version and DRM_IOCTL_VERSION (include/uapi/drm/drm.h). */
struct kt_version {
    int major, minor, patch;
    size_t name_len;
    char *name;
    size_t date_len;
    char *date;
    size_t desc_len;
    char *desc;
};
#define KT_IOCTL_VERSION (0xC0000000ul | (unsigned long)sizeof(struct kt_version) << 16 | 0x6400ul)
#define KT_IOCTL_GEM_CLOSE 0x40086409ul

static inline int
kt_version(int fd, char *name, size_t n, int *maj, int *min, int *pat)
{
    struct kt_version v;
    memset(&v, 0, sizeof(v));
    v.name = name;
    v.name_len = n - 1;
    int r = kt_ioctl(fd, KT_IOCTL_VERSION, &v);
    if (!r) {
        name[v.name_len < n ? v.name_len : n - 1] = '\0';
        *maj = v.major;
        *min = v.minor;
        *pat = v.patch;
    }
    return r;
}

/* z = x + y, int8, W pixels x 16 channels; returns the body qwords written at rc. */
static inline uint32_t
kt_add_prog(uint8_t *rc, uint32_t x, uint32_t y, uint32_t z, uint32_t W, uint32_t next,
            uint32_t next_amount)
{
    struct tprog p;
    p.n = 0;
    struct fly f = {.prec = NPU_PRECISION_INT8, .W = W, .H = 1, .C = 16, .x = x, .y = y, .z = z};
    f.ew_cfg = DPU_EW_CFG_EW_DATA_MODE(1) | DPU_EW_CFG_EDATA_SIZE(NPU_ELEM_SIZE_8BIT) |
               DPU_EW_CFG_EW_ALU_ALGO(NPU_ALU_ALGO_ADD) | DPU_EW_CFG_EW_RELU_BYPASS(1) |
               DPU_EW_CFG_EW_LUT_BYPASS(1) | DPU_EW_CFG_EW_OP_SRC(1);
    tp_fly(&p, &f);
    tp_tail(&p, next, next_amount, NPU_OP_EN_DPU | NPU_OP_EN_DPU_RDMA);
    memcpy(rc, p.q, p.n * 8);
    return p.n - NPU_TASK_TAIL_QWORDS;
}

static inline void
kt_fill(int8_t *x, int8_t *y, int8_t *ref, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = (int8_t)trand(&seed);
        y[i] = (int8_t)trand(&seed);
        int v = x[i] + y[i];
        ref[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
}

#endif /* KD_TEST_H */
