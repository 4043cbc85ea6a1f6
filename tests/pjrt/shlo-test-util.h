/* SPDX-License-Identifier: MIT */
/*
 * shlo-test-util.h: what the StableHLO reader's tests (test-stablehlo.c,
 * test-vhlo.c) share: a log sink that keeps the error messages of the last
 * call in `last` ("; "-joined, cleared by the caller); files are read with
 * npu_test_slurp (tests/include/npu-test-file.h).
 */
#ifndef SHLO_TEST_UTIL_H
#define SHLO_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-test-file.h"
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

#endif /* SHLO_TEST_UTIL_H */
