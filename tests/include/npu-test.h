/* SPDX-License-Identifier: MIT */
/*
 * npu-test.h: the tiny check macros every plain-C unit test uses (chibicc
 * style): a failed check prints the expression, file and line and counts a
 * failure; npu_test_done() turns the count into the exit status meson reads.
 */
#ifndef NPU_TEST_H
#define NPU_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int npu_test_failures;
static int npu_test_checks;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        npu_test_checks++;                                                                         \
        if (!(cond)) {                                                                             \
            npu_test_failures++;                                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(expected, actual)                                                             \
    do {                                                                                           \
        long long e_ = (long long)(expected), a_ = (long long)(actual);                            \
        npu_test_checks++;                                                                         \
        if (e_ != a_) {                                                                            \
            npu_test_failures++;                                                                   \
            fprintf(stderr, "%s:%d: %s => %lld, expected %lld\n", __FILE__, __LINE__, #actual, a_, \
                    e_);                                                                           \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_HEX(expected, actual)                                                             \
    do {                                                                                           \
        unsigned long long e_ = (unsigned long long)(expected);                                    \
        unsigned long long a_ = (unsigned long long)(actual);                                      \
        npu_test_checks++;                                                                         \
        if (e_ != a_) {                                                                            \
            npu_test_failures++;                                                                   \
            fprintf(stderr, "%s:%d: %s => 0x%llx, expected 0x%llx\n", __FILE__, __LINE__, #actual, \
                    a_, e_);                                                                       \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(expected, actual, tol)                                                          \
    do {                                                                                           \
        double e_ = (double)(expected), a_ = (double)(actual);                                     \
        npu_test_checks++;                                                                         \
        if (!(fabs(e_ - a_) <= (tol))) {                                                           \
            npu_test_failures++;                                                                   \
            fprintf(stderr, "%s:%d: %s => %.9g, expected %.9g (tol %g)\n", __FILE__, __LINE__,     \
                    #actual, a_, e_, (double)(tol));                                               \
        }                                                                                          \
    } while (0)

#define CHECK_STR(expected, actual)                                                                \
    do {                                                                                           \
        const char *e_ = (expected), *a_ = (actual);                                               \
        npu_test_checks++;                                                                         \
        if (!a_ || strcmp(e_, a_)) {                                                               \
            npu_test_failures++;                                                                   \
            fprintf(stderr, "%s:%d: %s => \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #actual, \
                    a_ ? a_ : "(null)", e_);                                                       \
        }                                                                                          \
    } while (0)

static inline int
npu_test_done(const char *name)
{
    if (npu_test_failures) {
        fprintf(stderr, "%s: %d of %d checks failed\n", name, npu_test_failures, npu_test_checks);
        return 1;
    }
    printf("%s: %d checks passed\n", name, npu_test_checks);
    return 0;
}

#endif /* NPU_TEST_H */
