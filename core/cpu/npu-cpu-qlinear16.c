// SPDX-License-Identifier: MIT
/*
 * npu-cpu-qlinear16.c: the int16 forms of QLinearConv / QLinearMatMul that the w16a16i
 * quantiser writes (docs/quantisation.md): int16 activations and weights, an exact
 * integer sum (double holds it exactly: |sum| < 2^53 for every shape the NPU takes),
 * the int32 bias added, then y = saturate16(rint(acc * scale) + zp) with scale =
 * x_scale * w_scale / y_scale in float, as the int8 kernels do (the ONNX reference).
 * QLinearConv shares its geometry with the int8 kernel (npu-cpu-conv.c calls
 * cpu_requantize_i16 with the sums); QLinearMatMul is here whole: A [..., M, K] by a
 * 2-D B [K, N], which is what the quantiser produces.
 */
#include <math.h>
#include <stdlib.h>

#include "npu-cpu-internal.h"

void
cpu_requantize_i16(const double *acc, int64_t rows, int64_t cols, const float *scale, bool per_col,
                   int32_t zp, int16_t *y)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double v = rint(acc[i * cols + j] * (double)scale[per_col ? j : i]) + zp;
            v = v != v ? zp : v; /* NaN scale: the zero point, never an UB cast */
            y[i * cols + j] = (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);
        }
}

enum npu_status
cpu_qlinear_matmul_i16(CPU_KERNEL_ARGS)
{
    (void)attrs;
    (void)nout;
    const struct npu_tensor *a = in[0], *as = in[1], *azp = in[2], *b = in[3], *bs = in[4],
                            *bzp = in[5], *ys = in[6], *yzp = nin > 7 ? in[7] : NULL;
    struct npu_tensor *y = out[0];
    if (a->dtype != NPU_DTYPE_INT16 || b->dtype != NPU_DTYPE_INT16 || y->dtype != NPU_DTYPE_INT16)
        return KUNSUP("int16 QLinearMatMul needs int16 A, B and result");
    if (as->dtype != NPU_DTYPE_FP32 || bs->dtype != NPU_DTYPE_FP32 || ys->dtype != NPU_DTYPE_FP32)
        return KINVAL("scales must be float");
    if (cpu_numel(as) != 1 || cpu_numel(ys) != 1 || (!cpu_absent(yzp) && cpu_numel(yzp) != 1))
        return KUNSUP("a_scale, y_scale and y_zero_point must be scalars");
    if (b->ndim != 2 || a->ndim < 1)
        return KUNSUP("int16 QLinearMatMul takes a 2-D B");
    int64_t K = b->dims[0], N = b->dims[1];
    if (a->dims[a->ndim - 1] != K)
        return KINVAL("A's last dimension %lld differs from B's rows %lld",
                      (long long)a->dims[a->ndim - 1], (long long)K);
    int64_t nbs = cpu_numel(bs);
    if (nbs != 1 && nbs != N)
        return KINVAL("b_scale has %lld entries, expected 1 or N", (long long)nbs);
    for (const struct npu_tensor *z = azp; z; z = z == azp ? bzp : NULL)
        if (!cpu_absent(z) && z->dtype != NPU_DTYPE_INT16)
            return KINVAL("zero point dtype differs from its operand");
    if (!cpu_absent(yzp) && yzp->dtype != NPU_DTYPE_INT16)
        return KINVAL("y_zero_point dtype differs from the output");
    int64_t dims[NPU_MAX_DIMS];
    for (int i = 0; i < a->ndim; i++)
        dims[i] = a->dims[i];
    dims[a->ndim - 1] = N;
    CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_INT16, a->ndim, dims));
    int64_t M = K ? cpu_numel(a) / K : 0;
    int64_t nbz = cpu_absent(bzp) ? 0 : cpu_numel(bzp);
    if (nbz > 1 && nbz != N)
        return KINVAL("b_zero_point has %lld entries, expected 1 or N", (long long)nbz);
    double az = cpu_absent(azp) ? 0 : (double)cpu_scalar_i64(azp, 0);
    double *acc = malloc(sizeof(double) * (size_t)NPU_MAX(M * N, (int64_t)1));
    double *bd = malloc(sizeof(double) * (size_t)NPU_MAX(K * N, (int64_t)1));
    float *scale = malloc(sizeof(float) * (size_t)NPU_MAX(N, (int64_t)1));
    enum npu_status st = NPU_OK;
    if (!acc || !bd || !scale) {
        st = KNOMEM();
        goto out;
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            bd[k * N + j] = (double)((const int16_t *)b->data)[k * N + j] -
                            (nbz ? (double)cpu_scalar_i64(bzp, nbz == 1 ? 0 : j) : 0);
    const int16_t *ad = a->data;
    for (int64_t i = 0; i < M; i++) {
        double *r = acc + i * N;
        for (int64_t j = 0; j < N; j++)
            r[j] = 0;
        for (int64_t k = 0; k < K; k++) {
            double av = (double)ad[i * K + k] - az;
            if (av == 0)
                continue;
            const double *br = bd + k * N;
            for (int64_t j = 0; j < N; j++)
                r[j] += av * br[j]; /* |products| < 2^32, sums < 2^53: exact */
        }
    }
    float a_s = ((const float *)as->data)[0], y_s = ((const float *)ys->data)[0];
    for (int64_t j = 0; j < N; j++)
        scale[j] = a_s * ((const float *)bs->data)[nbs == 1 ? 0 : j] / y_s;
    cpu_requantize_i16(acc, M, N, scale, true,
                       cpu_absent(yzp) ? 0 : (int32_t)cpu_scalar_i64(yzp, 0), y->data);
out:
    free(acc);
    free(bd);
    free(scale);
    return st;
}
