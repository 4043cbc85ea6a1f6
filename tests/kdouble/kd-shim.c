/* SPDX-License-Identifier: MIT */
/*
 * kd-shim.c: the interposer half of the kernel double (npu-kdouble.h). It defines the libc
 * entry points a runtime uses on a device node and hands a call to the fake kernel only
 * when it concerns a node under $NPU_DEV_DIR, or an fd or mapping that came from one;
 * everything else goes straight to the next definition (libc, or ASan's interceptor ahead
 * of us). The kernel library is dlopen()ed on the first open of a fake node, so a process
 * that never touches one pays a getenv() per open() and nothing else.
 *
 * Why an interposer and not an in-process hook in the backends: the backends then run their
 * real code paths (open/ioctl/mmap on a file descriptor, libdrm's drmGetVersion) unchanged,
 * and any process (npu-run, gst-launch, a test) picks the double up with LD_PRELOAD. Tests
 * of the double link this library directly instead (it comes before libc in their search
 * order), which also works under ASan, whose runtime must come first (docs/hardware.md).
 */
/* Our open/mmap must keep their own names: no open64/mmap64 redirection. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npu-kdouble.h"

#define KD_EXPORT __attribute__((visibility("default")))
#define KD_MAX_FD 65536

static struct kd_libc real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static const struct kd_kernel_ops *kernel;
static pthread_mutex_t kernel_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char fake_fd[KD_MAX_FD]; /* 1 = fd is a fake node (atomic access) */

static void
resolve_real(void)
{
    real.open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    real.close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    real.ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    real.mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    real.munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
}

static inline void
need_real(void)
{
    pthread_once(&real_once, resolve_real);
}

static bool
is_fake_fd(int fd)
{
    return fd >= 0 && fd < KD_MAX_FD && __atomic_load_n(&fake_fd[fd], __ATOMIC_ACQUIRE);
}

/* The node name (path relative to $NPU_DEV_DIR) if path is under it, else NULL. */
static const char *
fake_node(const char *path)
{
    const char *dir = getenv("NPU_DEV_DIR");
    if (!path || !dir || !*dir)
        return NULL;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (strncmp(path, dir, n) || path[n] != '/')
        return NULL;
    const char *node = path + n;
    while (*node == '/')
        node++;
    return *node ? node : NULL;
}

static const struct kd_kernel_ops *
load_kernel(void)
{
    pthread_mutex_lock(&kernel_lock);
    if (!kernel) {
        char path[4096];
        const char *env = getenv("NPU_KDOUBLE_KERNEL");
        if (env && *env) {
            snprintf(path, sizeof(path), "%s", env);
        } else {
            Dl_info info;
            path[0] = '\0';
            if (dladdr((void *)load_kernel, &info) && info.dli_fname) {
                snprintf(path, sizeof(path), "%s", info.dli_fname);
                char *slash = strrchr(path, '/');
                if (slash)
                    slash[1] = '\0';
                else
                    path[0] = '\0';
            }
            strncat(path, "libnpu-kdouble-kernel.so", sizeof(path) - strlen(path) - 1);
        }
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "npu-kdouble: cannot load the fake kernel %s: %s\n", path, dlerror());
        } else {
            const struct kd_kernel_ops *(*init)(const struct kd_libc *) =
                (const struct kd_kernel_ops *(*)(const struct kd_libc *))dlsym(
                    h, "npu_kdouble_kernel_init");
            if (init)
                __atomic_store_n(&kernel, init(&real), __ATOMIC_RELEASE);
            if (!kernel)
                fprintf(stderr, "npu-kdouble: %s did not initialise\n", path);
        }
    }
    const struct kd_kernel_ops *k = kernel;
    pthread_mutex_unlock(&kernel_lock);
    return k;
}

static int
fake_open(const char *path, const char *node, int flags)
{
    const struct kd_kernel_ops *k = load_kernel();
    if (!k) {
        errno = ENXIO;
        return -1;
    }
    int fd = k->open(path, node, flags);
    if (fd < 0) {
        errno = -fd;
        return -1;
    }
    if (fd < KD_MAX_FD)
        __atomic_store_n(&fake_fd[fd], 1, __ATOMIC_RELEASE);
    return fd;
}

static int
open_common(int dirfd, const char *path, int flags, mode_t mode, bool at)
{
    need_real();
    const char *node =
        (!at || dirfd == AT_FDCWD || (path && path[0] == '/')) ? fake_node(path) : NULL;
    if (node)
        return fake_open(path, node, flags);
    if (at) {
        static int (*real_openat)(int, const char *, int, ...);
        if (!real_openat)
            real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
        return real_openat(dirfd, path, flags, mode);
    }
    return real.open(path, flags, mode);
}

#define MODE_ARG(flags, mode)                                                                      \
    do {                                                                                           \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                                                     \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            mode = (mode_t)va_arg(ap, int);                                                        \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

KD_EXPORT int
open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return open_common(AT_FDCWD, path, flags, mode, false);
}

KD_EXPORT int
open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return open_common(AT_FDCWD, path, flags | O_LARGEFILE, mode, false);
}

KD_EXPORT int
openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return open_common(dirfd, path, flags, mode, true);
}

KD_EXPORT int
openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return open_common(dirfd, path, flags | O_LARGEFILE, mode, true);
}

/* _FORTIFY_SOURCE variants (no O_CREAT: the fortified open checks that). */
KD_EXPORT int
__open_2(const char *path, int flags)
{
    return open_common(AT_FDCWD, path, flags, 0, false);
}

KD_EXPORT int
__open64_2(const char *path, int flags)
{
    return open_common(AT_FDCWD, path, flags | O_LARGEFILE, 0, false);
}

KD_EXPORT int
__openat_2(int dirfd, const char *path, int flags)
{
    return open_common(dirfd, path, flags, 0, true);
}

KD_EXPORT int
__openat64_2(int dirfd, const char *path, int flags)
{
    return open_common(dirfd, path, flags | O_LARGEFILE, 0, true);
}

KD_EXPORT int
close(int fd)
{
    need_real();
    if (is_fake_fd(fd)) {
        __atomic_store_n(&fake_fd[fd], 0, __ATOMIC_RELEASE);
        const struct kd_kernel_ops *k = __atomic_load_n(&kernel, __ATOMIC_ACQUIRE);
        if (k)
            k->close(fd);
    }
    return real.close(fd);
}

KD_EXPORT int
ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    need_real();
    const struct kd_kernel_ops *k = __atomic_load_n(&kernel, __ATOMIC_ACQUIRE);
    if (k && is_fake_fd(fd)) {
        int r = k->ioctl(fd, req, arg);
        if (r == KD_NOT_MINE) {
            __atomic_store_n(&fake_fd[fd], 0, __ATOMIC_RELEASE);
            return real.ioctl(fd, req, arg);
        }
        if (r < 0) {
            errno = -r;
            return -1;
        }
        return r;
    }
    return real.ioctl(fd, req, arg);
}

KD_EXPORT void *
mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    need_real();
    const struct kd_kernel_ops *k = __atomic_load_n(&kernel, __ATOMIC_ACQUIRE);
    if (k && is_fake_fd(fd)) {
        void *p = k->mmap(addr, len, prot, flags, fd, off);
        if (p != MAP_FAILED || errno != ENODEV)
            return p;
        __atomic_store_n(&fake_fd[fd], 0, __ATOMIC_RELEASE);
    }
    return real.mmap(addr, len, prot, flags, fd, off);
}

KD_EXPORT void *
mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

KD_EXPORT int
munmap(void *addr, size_t len)
{
    need_real();
    const struct kd_kernel_ops *k = __atomic_load_n(&kernel, __ATOMIC_ACQUIRE);
    if (k && k->munmap(addr, len))
        return 0;
    return real.munmap(addr, len);
}

KD_EXPORT bool
npu_kdouble_present(void)
{
    return true;
}

KD_EXPORT void
npu_kdouble_get_stats(struct npu_kdouble_stats *out)
{
    memset(out, 0, sizeof(*out));
    const struct kd_kernel_ops *k = __atomic_load_n(&kernel, __ATOMIC_ACQUIRE);
    if (k)
        k->get_stats(out);
}
