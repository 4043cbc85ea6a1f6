/* SPDX-License-Identifier: MIT */
/*
 * npu-backend-drm.h: what the two kernel backends share (internal to core/runtime):
 * finding the device node of a DRM driver by name, an ioctl wrapper and its errno mapping.
 *
 * Nodes are looked up under $NPU_DEV_DIR (default /dev): the rknpu driver registers a DRM
 * device (a card and a render node, /dev/dri/card1 and renderD129 on the vendor kernels,
 * but the numbers depend on what else is loaded), rocket an accel node (/dev/accel/accelN).
 * Every candidate is opened and asked DRM_IOCTL_VERSION (libdrm's drmGetVersion) for its
 * driver name; nothing is assumed from the node's number.
 */
#ifndef NPU_BACKEND_DRM_H
#define NPU_BACKEND_DRM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"

struct npu_drm_node {
    int fd;
    char path[320];
    int major, minor, patch; /* the DRM driver version */
    char desc[64];
};

/* The directory holding dri/ and accel/: $NPU_DEV_DIR or "/dev". */
const char *npu_drm_dev_dir(void);

/*
 * Opens the first node under <dev dir>/<subdir> whose name starts with one of the
 * prefixes (tried in that order, names sorted within a prefix) and whose DRM driver name is
 * `driver`. Returns NPU_OK with *node filled and its fd open (O_RDWR | O_CLOEXEC);
 * NPU_ERR_PERMISSION if no node matched but some could not be opened for lack of access;
 * NPU_ERR_NO_DEVICE otherwise. why (one line) says what was found or why nothing was.
 */
enum npu_status npu_drm_find_node(const char *subdir, const char *const *prefixes,
                                  size_t n_prefixes, const char *driver, struct npu_drm_node *node,
                                  char *why, size_t why_size);

/* ioctl() retried on EINTR/EAGAIN as drmIoctl does; returns 0 or -errno. */
int npu_drm_ioctl(int fd, unsigned long request, void *arg);

/* The status for a failed ioctl's -errno: ENOMEM/ENOSPC no memory, EACCES/EPERM permission,
 * ETIMEDOUT timeout, EIO I/O error, EBUSY busy, ENODEV/ENXIO no device, anything else
 * invalid. */
enum npu_status npu_drm_errno_status(int r);

/* Milliseconds from the environment variable name, or def if unset or malformed. */
uint32_t npu_env_ms(const char *name, uint32_t def);

/* Monotonic seconds. */
double npu_drm_now_s(void);

#endif /* NPU_BACKEND_DRM_H */
