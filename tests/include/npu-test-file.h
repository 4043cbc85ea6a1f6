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

/* The file at path (text or binary) with a NUL after it, *len bytes without
 * it (free()); NULL when it cannot be read. */
static inline char *
npu_test_slurp(const char *path, size_t *len)
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

#endif /* NPU_TEST_FILE_H */
