/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-robust.c: every kernel fed random, mostly inconsistent operands:
 * random ranks, dims, dtypes, output shapes and attribute values (including
 * INT64_MIN/MAX, NaN and inf). Whatever a kernel returns, it must return: no
 * crash, no hang, and (in the sanitizer build) no out-of-bounds access, no
 * signed overflow and no undefined float-to-int conversion. Deterministic
 * (fixed seed), a few thousand calls per op.
 */
#include "cpu-test-util.h"
#include "npu-test.h"

static const enum npu_dtype dtypes[] = {
    NPU_DTYPE_FP32,  NPU_DTYPE_FP16,   NPU_DTYPE_FP64,   NPU_DTYPE_INT8,
    NPU_DTYPE_UINT8, NPU_DTYPE_INT16,  NPU_DTYPE_INT32,  NPU_DTYPE_INT64,
    NPU_DTYPE_BOOL,  NPU_DTYPE_UINT16, NPU_DTYPE_UINT32, NPU_DTYPE_UINT64,
};

static int64_t
pick_int(void)
{
    static const int64_t vals[] = {0,
                                   1,
                                   2,
                                   3,
                                   -1,
                                   -2,
                                   -3,
                                   4,
                                   7,
                                   INT64_MAX,
                                   INT64_MIN,
                                   (int64_t)1 << 40,
                                   -((int64_t)1 << 40),
                                   65535};
    return vals[tt_rand_u64() % NPU_ARRAY_SIZE(vals)];
}

static struct npu_tensor *
rand_tensor(enum npu_dtype dt, int maxrank)
{
    int r = (int)(tt_rand_u64() % (uint64_t)(maxrank + 1));
    int64_t d[NPU_MAX_DIMS];
    for (int i = 0; i < r; i++)
        d[i] = (int64_t)(tt_rand_u64() % 5); /* 0..4, empty dims included */
    struct npu_tensor *t = tt_new(dt, r, d);
    int64_t n = tt_n(t);
    size_t es = npu_dtype_size(dt);
    unsigned char *p = t->data;
    for (int64_t i = 0; i < n * (int64_t)es; i++)
        p[i] = (unsigned char)tt_rand_u64();
    /* index-like integer tensors: mostly small values, so that kernels get past the checks */
    if (dt == NPU_DTYPE_INT64 && tt_rand_u64() % 4)
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)t->data)[i] = (int64_t)(tt_rand_u64() % 7) - 2;
    if (dt == NPU_DTYPE_FP32 && tt_rand_u64() % 2)
        for (int64_t i = 0; i < n; i++)
            ((float *)t->data)[i] = (float)tt_uniform(-4, 4);
    return t;
}

static const char *int_names[] = {"axis",
                                  "keepdims",
                                  "group",
                                  "transA",
                                  "transB",
                                  "upper",
                                  "exclusive",
                                  "reverse",
                                  "select_last_index",
                                  "to",
                                  "ceil_mode",
                                  "count_include_pad",
                                  "storage_order",
                                  "noop_with_empty_axes",
                                  "allowzero",
                                  "fmod",
                                  "block_size",
                                  "num_outputs",
                                  "start",
                                  "end",
                                  "is_causal",
                                  "training_mode",
                                  "exclude_outside"};
static const char *ints_names[] = {"perm",           "pads",         "strides",
                                   "dilations",      "kernel_shape", "axes",
                                   "output_padding", "output_shape", "split"};
static const char *float_names[] = {"alpha",        "beta",          "gamma",
                                    "epsilon",      "scale",         "npu_act_alpha",
                                    "npu_act_beta", "cubic_coeff_a", "extrapolation_value",
                                    "momentum"};
static const char *str_vals[][6] = {
    {"mode", "constant", "reflect", "edge", "wrap", "linear"},
    {"auto_pad", "SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET", "bogus"},
    {"coordinate_transformation_mode", "half_pixel", "align_corners", "asymmetric",
     "tf_crop_and_resize", "pytorch_half_pixel"},
    {"npu_act", "relu", "gelu", "clip", "silu", "nope"},
    {"equation", "ij,jk->ik", "ii->i", "...i,...i", "i,j", "ab->ba"},
    {"approximate", "none", "tanh", "x", "none", "tanh"},
};

int
main(void)
{
    tctx_init();
    npu_log_set_level((enum npu_log_level) - 1); /* thousands of expected refusals */
    float fvals[] = {NAN, INFINITY, -INFINITY, -1.0f, 0.0f, 0.5f, 1e30f, 2.0f};
    int64_t ibuf[16][8];
    long calls = 0, ok = 0;
    for (int op = 1; op < NPU_OP_COUNT; op++) {
        for (int it = 0; it < 4000; it++) {
            struct alist al = {0};
            int na = (int)(tt_rand_u64() % 6);
            if (it % 4 == 0)
                na = 0;
            for (int a = 0; a < na; a++) {
                switch (tt_rand_u64() % 4) {
                case 0:
                    al_int(&al, int_names[tt_rand_u64() % NPU_ARRAY_SIZE(int_names)], pick_int());
                    break;
                case 1: {
                    int n = (int)(tt_rand_u64() % 7);
                    for (int k = 0; k < n; k++)
                        ibuf[a][k] =
                            tt_rand_u64() % 3 ? (int64_t)(tt_rand_u64() % 5) - 1 : pick_int();
                    al_ints(&al, ints_names[tt_rand_u64() % NPU_ARRAY_SIZE(ints_names)], ibuf[a],
                            (size_t)n);
                    break;
                }
                case 2:
                    al_float(&al, float_names[tt_rand_u64() % NPU_ARRAY_SIZE(float_names)],
                             fvals[tt_rand_u64() % NPU_ARRAY_SIZE(fvals)]);
                    break;
                default: {
                    size_t k = tt_rand_u64() % NPU_ARRAY_SIZE(str_vals);
                    al_str(&al, str_vals[k][0], str_vals[k][1 + tt_rand_u64() % 5]);
                }
                }
            }
            /* operands: usually one dtype throughout, sometimes mixed */
            enum npu_dtype dt = dtypes[tt_rand_u64() % NPU_ARRAY_SIZE(dtypes)];
            int nin = (int)(tt_rand_u64() % 6), nout = 1 + (int)(tt_rand_u64() % 3);
            struct npu_tensor *in[8] = {0}, *out[4] = {0};
            /* half the cases are coherent (one shape and dtype throughout) so that kernels get
             * past their checks and into the arithmetic */
            bool coherent = tt_rand_u64() % 2;
            for (int i = 0; i < nin; i++) {
                enum npu_dtype d =
                    tt_rand_u64() % 3 ? dt : dtypes[tt_rand_u64() % NPU_ARRAY_SIZE(dtypes)];
                if (!coherent && tt_rand_u64() % 3 == 0)
                    d = NPU_DTYPE_INT64; /* shapes, axes, indices */
                if (coherent && i > 0 && in[0]) {
                    in[i] =
                        tt_new(i == 1 && tt_rand_u64() % 4 == 0 ? NPU_DTYPE_INT64 : in[0]->dtype,
                               in[0]->ndim, in[0]->dims);
                    size_t b0 = (size_t)tt_n(in[0]) * npu_dtype_size(in[0]->dtype);
                    size_t bi = (size_t)tt_n(in[0]) * npu_dtype_size(in[i]->dtype);
                    memcpy(in[i]->data, in[0]->data, bi < b0 ? bi : b0);
                    continue;
                }
                in[i] = tt_rand_u64() % 8 ? rand_tensor(d, 4) : NULL;
            }
            for (int i = 0; i < nout; i++) {
                enum npu_dtype d =
                    tt_rand_u64() % 2 ? dt : dtypes[tt_rand_u64() % NPU_ARRAY_SIZE(dtypes)];
                if ((coherent || tt_rand_u64() % 2) && in[0]) /* often the input's shape */
                    out[i] =
                        tt_new(coherent && i == 0 ? in[0]->dtype : d, in[0]->ndim, in[0]->dims);
                else
                    out[i] = rand_tensor(d, 4);
            }
            struct npu_cpu_ctx *c = it & 1 ? tctxn : tctx1;
            enum npu_status st = run_op(c, (enum npu_op)op, &al, nin, in, nout, out);
            calls++;
            ok += st == NPU_OK;
            for (int i = 0; i < 8; i++)
                tt_free(in[i]);
            for (int i = 0; i < 4; i++)
                tt_free(out[i]);
        }
    }
    npu_log_set_level(NPU_LOG_WARN);
    printf("robustness: %ld calls, %ld accepted, none crashed\n", calls, ok);
    CHECK(calls > 0);
    tctx_fini();
    return npu_test_done("test-cpu-robust");
}
