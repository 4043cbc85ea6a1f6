// SPDX-License-Identifier: MIT
/*
 * fuzz-npy.c: libFuzzer target for the .npy reader (core/util/npu-npy.c) that
 * npu-run, npuc's calibration lists, npu-generate and pjrt-run read their
 * inputs with: bytes -> npu_npy_decode; what decodes must encode again and
 * decode to the same dtype, shape and bytes. Replayed over tests/fuzz/corpus-npy
 * by the normal suite (fuzz-npy-corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "npu/npu-npy.h"
#include "npu/npu-tensor.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_log();
    struct npu_tensor t;
    if (npu_npy_decode(data, size, "fuzz.npy", &t) != NPU_OK)
        return 0;
    int64_t nb = npu_tensor_nbytes(&t);
    if (nb < 0 || (size_t)nb > size)
        abort(); /* the data came from the input */
    void *buf = NULL;
    size_t len = 0;
    if (npu_npy_encode(&t, &buf, &len) == NPU_OK) {
        struct npu_tensor u;
        if (npu_npy_decode(buf, len, "re-encoded", &u) != NPU_OK)
            abort();
        if (u.dtype != t.dtype || u.ndim != t.ndim ||
            memcmp(u.dims, t.dims, sizeof(t.dims[0]) * (size_t)t.ndim) ||
            (nb && memcmp(u.data, t.data, (size_t)nb)))
            abort();
        npu_npy_free(&u);
        free(buf);
    }
    npu_npy_free(&t);
    return 0;
}
