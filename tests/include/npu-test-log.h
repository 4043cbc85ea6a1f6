/* SPDX-License-Identifier: MIT */
/*
 * npu-test-log.h: log sinks for the tests (npu_log_set_handler): one that
 * drops every message, for the tests whose error paths log on purpose, and
 * one that appends the warnings and errors to npu_test_log, for the tests
 * that check an error names its problem.
 */
#ifndef NPU_TEST_LOG_H
#define NPU_TEST_LOG_H

#include <stdio.h>
#include <string.h>

#include "npu/npu-common.h"

static inline void
npu_test_log_quiet(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)level, (void)domain, (void)msg, (void)user;
}

/* the warnings and errors logged through npu_test_log_capture since the caller
 * last emptied it (npu_test_log[0] = 0) */
static char npu_test_log[8192];

static inline void
npu_test_log_capture(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)user;
    size_t n = strlen(npu_test_log);
    if (level <= NPU_LOG_WARN && n < sizeof(npu_test_log) - 2)
        snprintf(npu_test_log + n, sizeof(npu_test_log) - n, "%s: %s\n", domain, msg);
}

#endif /* NPU_TEST_LOG_H */
