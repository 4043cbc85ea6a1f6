/* SPDX-License-Identifier: MIT */
/*
 * shlo-test-util.h: what the StableHLO reader's tests (test-stablehlo.c,
 * test-vhlo.c) share: a log sink that keeps the error messages of the last
 * call in `last` ("; "-joined, cleared by the caller), and reading a whole
 * file (text or bytecode) into a NUL-terminated buffer.
 */
#ifndef SHLO_TEST_UTIL_H
#define SHLO_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-common.h"

static char last[16384];

static inline void
sink(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)user;
    (void)domain;
    size_t n = strlen(last);
    if (level == NPU_LOG_ERROR && n + 2 < sizeof last)
        snprintf(last + n, sizeof last - n, "%s%s", n ? "; " : "", msg);
}

/* The file at path with a NUL after it (*len bytes without it); NULL when it
 * cannot be read. */
static inline char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            char *b = realloc(buf, cap + 1);
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        if (!r)
            break;
        n += r;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

#endif /* SHLO_TEST_UTIL_H */
