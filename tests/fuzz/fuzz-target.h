/* SPDX-License-Identifier: MIT */
/*
 * fuzz-target.h: what the fuzz targets of tests/fuzz share: the libFuzzer entry
 * point's declaration and the core's log silenced from the first input on
 * ($FUZZ_VERBOSE keeps it, to see why an input is refused).
 */
#ifndef FUZZ_TARGET_H
#define FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "npu/npu-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void
fuzz_quiet(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)level;
    (void)domain;
    (void)msg;
    (void)user;
}

/* Silences the core's log, once, unless $FUZZ_VERBOSE is set. */
static inline void
fuzz_quiet_log(void)
{
    static int init;
    if (!init) {
        if (!getenv("FUZZ_VERBOSE"))
            npu_log_set_handler(fuzz_quiet, NULL);
        init = 1;
    }
}

#endif /* FUZZ_TARGET_H */
