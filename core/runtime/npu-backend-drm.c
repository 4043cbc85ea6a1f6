/* SPDX-License-Identifier: MIT */
/*
 * npu-backend-drm.c: device-node discovery and the ioctl wrapper shared by the rknpu and
 * rocket backends (npu-backend-drm.h). The driver name comes from DRM_IOCTL_VERSION through
 * libdrm's drmGetVersion; builds without libdrm issue the same ioctl themselves (the struct
 * is the kernel's uapi, include/uapi/drm/drm.h).
 */
#include "npu-backend-drm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#ifdef NPU_HAVE_LIBDRM
#include <xf86drm.h>
#endif

const char *
npu_drm_dev_dir(void)
{
    const char *d = getenv("NPU_DEV_DIR");
    return d && *d ? d : "/dev";
}

int
npu_drm_ioctl(int fd, unsigned long request, void *arg)
{
    int r;
    do {
        r = ioctl(fd, request, arg);
    } while (r == -1 && (errno == EINTR || errno == EAGAIN));
    return r == -1 ? -errno : 0;
}

enum npu_status
npu_drm_errno_status(int r)
{
    switch (r) {
    case -ENOMEM:
    case -ENOSPC: return NPU_ERR_NOMEM;
    case -EACCES:
    case -EPERM: return NPU_ERR_PERMISSION;
    case -ETIMEDOUT: return NPU_ERR_TIMEOUT;
    case -EIO: return NPU_ERR_IO;
    case -EBUSY: return NPU_ERR_BUSY;
    case -ENODEV:
    case -ENXIO: return NPU_ERR_NO_DEVICE;
    default: return NPU_ERR_INVALID;
    }
}

uint32_t
npu_env_ms(const char *name, uint32_t def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (*end || x > 0xffffffffu)
        return def;
    return (uint32_t)x;
}

double
npu_drm_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The node's DRM driver name and version; false if it does not answer DRM_IOCTL_VERSION. */
static bool
drm_version(int fd, char *name, size_t name_size, struct npu_drm_node *node)
{
#ifdef NPU_HAVE_LIBDRM
    drmVersionPtr v = drmGetVersion(fd);
    if (!v)
        return false;
    snprintf(name, name_size, "%.*s", v->name_len, v->name ? v->name : "");
    snprintf(node->desc, sizeof(node->desc), "%.*s", v->desc_len, v->desc ? v->desc : "");
    node->major = v->version_major;
    node->minor = v->version_minor;
    node->patch = v->version_patchlevel;
    drmFreeVersion(v);
    return true;
#else
    /* struct drm_version (include/uapi/drm/drm.h); DRM_IOCTL_VERSION = DRM_IOWR(0x00, ..). */
    struct {
        int major, minor, patch;
        size_t name_len;
        char *name;
        size_t date_len;
        char *date;
        size_t desc_len;
        char *desc;
    } v;
    char nbuf[64] = "", dbuf[64] = "";
    memset(&v, 0, sizeof(v));
    v.name = nbuf;
    v.name_len = sizeof(nbuf) - 1;
    v.desc = dbuf;
    v.desc_len = sizeof(dbuf) - 1;
    unsigned long req = 0xC0000000ul | (unsigned long)sizeof(v) << 16 | 0x64u << 8 | 0x00u;
    if (npu_drm_ioctl(fd, req, &v))
        return false;
    nbuf[NPU_MIN(v.name_len, sizeof(nbuf) - 1)] = '\0';
    dbuf[NPU_MIN(v.desc_len, sizeof(dbuf) - 1)] = '\0';
    snprintf(name, name_size, "%s", nbuf);
    snprintf(node->desc, sizeof(node->desc), "%s", dbuf);
    node->major = v.major;
    node->minor = v.minor;
    node->patch = v.patch;
    return true;
#endif
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

enum npu_status
npu_drm_find_node(const char *subdir, const char *const *prefixes, size_t n_prefixes,
                  const char *driver, struct npu_drm_node *node, char *why, size_t why_size)
{
    memset(node, 0, sizeof(*node));
    node->fd = -1;
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/%s", npu_drm_dev_dir(), subdir);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, why_size, "no %s (%s)", dir, strerror(errno));
        return NPU_ERR_NO_DEVICE;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        bool want = false;
        for (size_t p = 0; p < n_prefixes; p++)
            want |= !strncmp(e->d_name, prefixes[p], strlen(prefixes[p]));
        if (!want)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            char **nn = realloc(names, cap * sizeof(*nn));
            if (!nn)
                break;
            names = nn;
        }
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_str);

    enum npu_status st = NPU_ERR_NO_DEVICE;
    char denied[320] = "", others[160] = "";
    for (size_t p = 0; p < n_prefixes && st != NPU_OK; p++) {
        for (size_t i = 0; i < n && st != NPU_OK; i++) {
            if (strncmp(names[i], prefixes[p], strlen(prefixes[p])))
                continue;
            char path[320];
            snprintf(path, sizeof(path), "%.200s/%.100s", dir, names[i]);
            int fd = open(path, O_RDWR | O_CLOEXEC);
            if (fd < 0) {
                if ((errno == EACCES || errno == EPERM) && !denied[0])
                    snprintf(denied, sizeof(denied), "%s", path);
                continue; /* ENXIO/ENODEV: a node without a driver */
            }
            char name[64] = "";
            if (!drm_version(fd, name, sizeof(name), node)) {
                close(fd);
                continue;
            }
            if (strcmp(name, driver)) {
                size_t l = strlen(others);
                snprintf(others + l, sizeof(others) - l, "%s%s=%s", l ? ", " : "", names[i], name);
                close(fd);
                continue;
            }
            node->fd = fd;
            snprintf(node->path, sizeof(node->path), "%.300s", path);
            st = NPU_OK;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);

    if (st == NPU_OK) {
        snprintf(why, why_size, "%.200s (driver %s %d.%d.%d)", node->path, driver, node->major,
                 node->minor, node->patch);
    } else if (denied[0]) {
        snprintf(why, why_size,
                 "%.200s permission denied (no accessible node with driver %s; a udev rule can "
                 "give your group access, see docs/hardware.md)",
                 denied, driver);
        st = NPU_ERR_PERMISSION;
    } else {
        snprintf(why, why_size, "no %.150s node with driver %s%s%s%s", dir, driver,
                 others[0] ? " (found " : "", others, others[0] ? ")" : "");
    }
    return st;
}
