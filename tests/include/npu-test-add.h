/* SPDX-License-Identifier: MIT */
/*
 * npu-test-add.h: the int8 add job of the device tests (test-device.c on the
 * simulator, test-backend.c through the kernel double): W pixels x 16
 * channels of int8 x and y, random from a trand() seed, their saturated sum
 * as the reference, BOs for x, y, z and a 4 KiB regcmd BO (and a task BO
 * where the test makes one). Each test writes its own register program into
 * regcmd (body: its qwords). Header-only, like npu-handprog.h it goes with.
 */
#ifndef NPU_TEST_ADD_H
#define NPU_TEST_ADD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu-handprog.h"
#include "npu-test.h"

struct npu_test_add {
    struct npu_bo *task, *regcmd, *x, *y, *z;
    uint32_t W, body;
    int8_t *ref;
};

/* The BOs (x, y and z with BO_FLAGS) and the data; a->task stays NULL. */
static inline void
npu_test_add_data(struct npu_device *dev, struct npu_test_add *a, uint32_t W, uint32_t seed,
                  uint32_t bo_flags)
{
    memset(a, 0, sizeof(*a));
    a->W = W;
    size_t bytes = (size_t)W * 16;
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, 4096, 0, &a->regcmd));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, bytes, bo_flags, &a->x));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, bytes, bo_flags, &a->y));
    CHECK_EQ_INT(NPU_OK, npu_bo_create(dev, bytes, bo_flags, &a->z));
    a->ref = malloc(bytes);
    if (!a->regcmd || !a->x || !a->y || !a->z || !a->ref) {
        CHECK(!"npu_test_add_data: out of memory");
        return;
    }
    int8_t *x = npu_bo_map(a->x), *y = npu_bo_map(a->y);
    for (size_t i = 0; i < bytes; i++) {
        x[i] = (int8_t)trand(&seed);
        y[i] = (int8_t)trand(&seed);
        int v = x[i] + y[i];
        a->ref[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
}

/* z read back from the device equals the reference */
static inline bool
npu_test_add_ok(struct npu_test_add *a)
{
    CHECK_EQ_INT(NPU_OK, npu_bo_sync(a->z, NPU_SYNC_FROM_DEVICE, 0, 0));
    return a->ref && !memcmp(npu_bo_map(a->z), a->ref, (size_t)a->W * 16);
}

static inline void
npu_test_add_free(struct npu_test_add *a)
{
    npu_bo_destroy(a->task);
    npu_bo_destroy(a->regcmd);
    npu_bo_destroy(a->x);
    npu_bo_destroy(a->y);
    npu_bo_destroy(a->z);
    free(a->ref);
    memset(a, 0, sizeof(*a));
}

#endif /* NPU_TEST_ADD_H */
