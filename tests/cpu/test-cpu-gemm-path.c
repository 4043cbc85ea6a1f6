// SPDX-License-Identifier: MIT
/*
 * test-cpu-gemm-path.c: the fp32 GEMM path is chosen by what the CPU can do, never a
 * generic BLAS kernel silently (issue 16). Checks the table of OpenBLAS core names, that
 * npu_cpu_gemm_path() names a path and a reason, and - run by meson a second time with
 * OPENBLAS_CORETYPE=Prescott, which makes OpenBLAS load its SSE3 kernels as it does on a CPU
 * it does not know - that an AVX2 or AVX-512 CPU then runs our own micro-kernels. Either
 * way a 67x300x45 product through npu_cpu_run agrees with a double-precision loop. Also that
 * the int8 path's name shows NPU_CPU_QGEMM when it is set, honoured or not, that an unknown
 * NPU_CPU_GEMM value is said to be ignored, and that the constant-B line names the packed
 * kernels or says packing is off (NPU_CPU_PACK_MB=0).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/cpu/npu-cpu-internal.h"
#include "cpu-test-util.h"
#include "npu-test.h"

static void
test_core_table(void)
{
    CHECK_EQ_INT(0, cpu_openblas_core_level("Prescott"));
    CHECK_EQ_INT(0, cpu_openblas_core_level("Core2"));
    CHECK_EQ_INT(0, cpu_openblas_core_level("Nehalem"));
    CHECK_EQ_INT(1, cpu_openblas_core_level("Sandybridge"));
    CHECK_EQ_INT(2, cpu_openblas_core_level("Haswell"));
    CHECK_EQ_INT(2, cpu_openblas_core_level("zen"));
    CHECK_EQ_INT(3, cpu_openblas_core_level("SkylakeX"));
    CHECK_EQ_INT(3, cpu_openblas_core_level("Cooperlake"));
    CHECK_EQ_INT(-1, cpu_openblas_core_level("NotACore"));
    CHECK_EQ_INT(-1, cpu_openblas_core_level(NULL));
}

static void
test_path(void)
{
    const char *why = NULL;
    const char *path = npu_cpu_gemm_path(&why);
    CHECK(path && *path);
    CHECK(why && *why);
    printf("fp32 GEMM path: %s (%s)\n", path ? path : "?", why ? why : "?");
    if (!path)
        return;
    if (!cpu_have_blas())
        CHECK(!strncmp(path, "own ", 4));
    const char *ct = getenv("OPENBLAS_CORETYPE");
    const char *force = getenv("NPU_CPU_GEMM");
    bool wide = false;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    wide = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    if (cpu_have_blas() && ct && !strcmp(ct, "Prescott") && wide && !force) {
        /* the situation of issue 16: OpenBLAS on its generic kernels, our own take over */
        CHECK(!strncmp(path, "own ", 4));
        CHECK(strstr(why, "Prescott") != NULL);
    }
    /* a value it does not know is said to be ignored, not dropped without a word */
    if (force && *force && strcmp(force, "own") && strcmp(force, "openblas"))
        CHECK(strstr(why, "ignored") != NULL);
}

/* npu-info's line for products with a constant B (packed once per model): names the packed
 * kernels, or says packing is off (meson runs this with NPU_CPU_PACK_MB=0 too) */
static void
test_const_path(void)
{
    const char *p = npu_cpu_gemm_const_path();
    CHECK(p && *p);
    printf("constant-B path: %s\n", p ? p : "?");
    if (!p)
        return;
    const char *e = getenv("NPU_CPU_PACK_MB");
    if (e && !strcmp(e, "0")) {
        CHECK(!strncmp(p, "not packed", 10));
        return;
    }
    CHECK(strstr(p, "packed once per model") != NULL);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        CHECK(strstr(p, "AVX-512 8x48") != NULL);
#endif
}

/* the int8 line of npu-info names NPU_CPU_QGEMM whenever it is set: honoured or ignored
 * (meson runs this with =portable and with a value no CPU has) */
static void
test_int8_path(void)
{
    const char *p = npu_cpu_int8_path();
    CHECK(p && *p);
    printf("int8 path: %s\n", p ? p : "?");
    const char *e = getenv("NPU_CPU_QGEMM");
    if (!p || !e || !*e)
        return;
    CHECK(strstr(p, "NPU_CPU_QGEMM=") != NULL);
    if (!strcmp(e, "portable"))
        CHECK(!strncmp(p, "portable C", 10));
    if (strcmp(e, "ref") && strcmp(e, "portable") && strcmp(e, "avx2") && strcmp(e, "avxvnni"))
        CHECK(strstr(p, "ignored") != NULL);
}

static void
test_product(void)
{
    const int64_t M = 67, K = 300, N = 45;
    struct npu_tensor *a = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(M), D(K)), -1, 1);
    struct npu_tensor *b = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(K), D(N)), -1, 1);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 2, D(M), D(N));
    struct npu_tensor *in[2] = {a, b}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MATMUL, NULL, 2, in, 1, out));
    double worst = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += tt_get(a, i * K + k) * tt_get(b, k * N + j);
            double e = fabs(acc - tt_get(y, i * N + j));
            worst = e > worst ? e : worst;
        }
    CHECK(worst < 1e-3);
    tt_free(a), tt_free(b), tt_free(y);
}

int
main(void)
{
    tctx_init();
    test_core_table();
    test_path();
    test_const_path();
    test_int8_path();
    test_product();
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-gemm-path");
}
