/* SPDX-License-Identifier: MIT */
/*
 * npu-test-file.h: a whole file read into memory, for the tests that compare
 * or parse files (npy fixtures, tokenizer corpora, StableHLO programs and
 * bytecode).
 */
#ifndef NPU_TEST_FILE_H
#define NPU_TEST_FILE_H

#include <stdio.h>
#include <stdlib.h>

#include "npu/npu-common.h"

/* The file at path (text or binary) with a NUL after it, *len bytes without
 * it (free()); NULL when it cannot be read (npu_read_file, quietly). */
static inline char *
npu_test_slurp(const char *path, size_t *len)
{
    char *buf;
    return npu_read_file(path, NULL, &buf, len) ? NULL : buf;
}

#endif /* NPU_TEST_FILE_H */
