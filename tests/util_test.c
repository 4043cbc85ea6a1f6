/* SPDX-License-Identifier: MIT */
/* util_test.c: status names, dtype tables, tensor size overflow checks, element loads, op
 * and attribute lookup, the per-thread last-error record (core/util). */
#include <string.h>

#include "npu-test.h"
#include "npu/npu-common.h"
#include "npu/npu-ops.h"
#include "npu/npu-tensor.h"

static void
quiet_sink(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
}

int
main(void)
{
    CHECK_STR("ok", npu_status_str(NPU_OK));
    CHECK_STR("timed out", npu_status_str(NPU_ERR_TIMEOUT));

    CHECK_EQ_INT(2, npu_dtype_size(NPU_DTYPE_FP16));
    CHECK_EQ_INT(8, npu_dtype_size(NPU_DTYPE_INT64));
    CHECK_EQ_INT(0, npu_dtype_size(NPU_DTYPE_COUNT));
    CHECK_STR("i64", npu_dtype_name(NPU_DTYPE_INT64));
    CHECK_EQ_INT(NPU_DTYPE_UINT8, npu_dtype_from_name("u8"));
    CHECK_EQ_INT(NPU_DTYPE_UNDEFINED, npu_dtype_from_name("f8"));

    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {2, 3, 4}};
    CHECK_EQ_INT(24, npu_tensor_numel(&t));
    CHECK_EQ_INT(96, npu_tensor_nbytes(&t));
    t.dims[1] = INT64_MAX / 2;
    CHECK_EQ_INT(-1, npu_tensor_numel(&t));
    t.dims[1] = -1;
    CHECK_EQ_INT(-1, npu_tensor_numel(&t));
    struct npu_tensor s = {.dtype = NPU_DTYPE_INT8, .ndim = 0};
    CHECK_EQ_INT(1, npu_tensor_numel(&s));

    /* element loads: exact values, bool as 0/1, saturating float -> int64, NaN -> 0 */
    const uint64_t u64[] = {UINT64_MAX, 5};
    const uint8_t b8[] = {0, 2};
    const uint16_t h16[] = {0x3c00, 0xc100, 0x0001};
    const double f64[] = {-1e300, 1e300, -2.75, __builtin_nan("")};
    const int16_t i16[] = {-32768};
    CHECK_EQ_INT(INT64_MAX, npu_dtype_load_i64(NPU_DTYPE_UINT64, u64, 0));
    CHECK_EQ_INT(5, npu_dtype_load_i64(NPU_DTYPE_UINT64, u64, 1));
    CHECK(npu_dtype_load_f64(NPU_DTYPE_UINT64, u64, 0) == 18446744073709551616.0);
    CHECK(npu_dtype_load_f64(NPU_DTYPE_BOOL, b8, 1) == 1.0);
    CHECK_EQ_INT(1, npu_dtype_load_i64(NPU_DTYPE_BOOL, b8, 1));
    CHECK(npu_dtype_load_f64(NPU_DTYPE_FP16, h16, 0) == 1.0);
    CHECK(npu_dtype_load_f64(NPU_DTYPE_FP16, h16, 1) == -2.5);
    CHECK(npu_dtype_load_f64(NPU_DTYPE_FP16, h16, 2) == 0x1p-24);
    CHECK_EQ_INT(-2, npu_dtype_load_i64(NPU_DTYPE_FP16, h16, 1));
    CHECK_EQ_INT(INT64_MIN, npu_dtype_load_i64(NPU_DTYPE_FP64, f64, 0));
    CHECK_EQ_INT(INT64_MAX, npu_dtype_load_i64(NPU_DTYPE_FP64, f64, 1));
    CHECK_EQ_INT(-2, npu_dtype_load_i64(NPU_DTYPE_FP64, f64, 2));
    CHECK_EQ_INT(0, npu_dtype_load_i64(NPU_DTYPE_FP64, f64, 3));
    CHECK(npu_dtype_load_f64(NPU_DTYPE_INT16, i16, 0) == -32768.0);
    CHECK(npu_dtype_load_f64(NPU_DTYPE_UNDEFINED, i16, 0) == 0.0);

    CHECK_STR("Conv", npu_op_name(NPU_OP_CONV));
    CHECK_EQ_INT(NPU_OP_FUSED_ATTENTION, npu_op_from_name("npu.Attention"));
    CHECK_EQ_INT(NPU_OP_NONE, npu_op_from_name("conv"));

    int64_t perm[] = {0, 2, 1};
    struct npu_attr av[] = {
        {.name = "axis", .type = NPU_ATTR_INT, .i = -1},
        {.name = "alpha", .type = NPU_ATTR_FLOAT, .f = 0.5f},
        {.name = "perm", .type = NPU_ATTR_INTS, .ints = perm, .n = 3},
        {.name = "mode", .type = NPU_ATTR_STRING, .s = "linear"},
    };
    struct npu_attrs a = {av, 4};
    size_t n;
    CHECK_EQ_INT(-1, npu_attrs_int(&a, "axis", 0));
    CHECK_EQ_INT(7, npu_attrs_int(&a, "missing", 7));
    CHECK_NEAR(0.5, npu_attrs_float(&a, "alpha", 1), 0);
    CHECK_NEAR(-1, npu_attrs_float(&a, "axis", 1), 0);
    CHECK(npu_attrs_ints(&a, "perm", &n) == perm && n == 3);
    CHECK(npu_attrs_ints(&a, "axis", &n) == NULL && n == 0);
    CHECK_STR("linear", npu_attrs_string(&a, "mode", "nearest"));
    CHECK(npu_attrs_tensor(&a, "value") == NULL);

    /* npu_last_error: errors only, whatever the level, oldest first */
    npu_log_set_handler(quiet_sink, NULL);
    npu_clear_last_error();
    CHECK_STR("", npu_last_error());
    npu_warn("test", "not an error");
    CHECK_STR("", npu_last_error());
    npu_err("test", "first %d", 1);
    npu_err("other", "second");
    CHECK_STR("test: first 1\nother: second", npu_last_error());
    for (int i = 0; i < 200; i++)
        npu_err("fill", "message number %d", i);
    CHECK(strlen(npu_last_error()) < 2048);
    CHECK(strstr(npu_last_error(), "message number 199") != NULL);
    CHECK(strstr(npu_last_error(), "first 1") == NULL);
    npu_clear_last_error();
    CHECK_STR("", npu_last_error());
    npu_log_set_handler(NULL, NULL);
    return npu_test_done("util_test");
}
