/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-qgemm.c: the fast int8 products (core/cpu/npu-cpu-qgemm.c) behind MatMulInteger,
 * QLinearMatMul, QLinearConv and ConvInteger must give the same bytes as the reference loops
 * (NPU_CPU_QGEMM=ref, forced here) with every kernel this CPU has (portable C, AVX2,
 * AVX-VNNI, AVX-512 VNNI; NEON sdot on aarch64), on 1 and 3 threads, with B prepared once
 * (npu_cpu_prepare) and packed per call: odd shapes (M 1..5 and past one 64-row block, K not
 * a multiple of 4 or 64, N not a multiple of 16 or 48), int8 and uint8 operands, zero points
 * per tensor, per row of A and per column of B, per-channel scales, a bias, a batched B,
 * and 2-D convolutions with padding, strides and dilations (weights prepared once and
 * converted per call; planes narrow and wide for the input packing's vector paths).
 */
#include "../../core/cpu/npu-cpu-qgemm.h"
#include "cpu-test-util.h"
#include "npu-test.h"

static int n_cases, n_kernel_runs;

static struct npu_tensor *
like(const struct npu_tensor *t)
{
    return tt_new(t->dtype, t->ndim, t->dims);
}

static void
report_diff(const char *what, int level, const struct npu_tensor *got,
            const struct npu_tensor *want)
{
    for (int64_t i = 0; i < tt_n(got); i++)
        if (tt_get(got, i) != tt_get(want, i)) {
            fprintf(stderr, "%s, kernel %d: element %lld is %g, reference %g\n", what, level,
                    (long long)i, tt_get(got, i), tt_get(want, i));
            return;
        }
}

/* runs op with the reference loops, then with every kernel (1 and 3 threads, and prepared
 * when prep_b >= 0: input prep_b is the constant B, or a convolution's W), and compares bytes */
static void
check_op(enum npu_op op, struct alist *al, int nin, struct npu_tensor **in,
         const struct npu_tensor *yshape, int prep_b, const char *what)
{
    n_cases++;
    struct npu_tensor *ref = like(yshape), *got = like(yshape);
    cpu_qgemm_force(9);
    CHECK_EQ_INT(NPU_OK, run_op(tctx1, op, al, nin, in, 1, &ref));
    struct npu_cpu_prep *prep = NULL;
    if (prep_b >= 0) {
        const struct npu_tensor *pin[9];
        struct npu_tensor shapes[9];
        for (int i = 0; i < nin; i++) {
            pin[i] = in[i];
            if (i != prep_b && in[i]) { /* only B is a constant */
                shapes[i] = *in[i];
                shapes[i].data = NULL;
                pin[i] = &shapes[i];
            }
        }
        CHECK_EQ_INT(NPU_OK, npu_cpu_prepare(op, al_done(al), pin, nin, &prep));
        /* a convolution's int8 weights are always converted once (no size threshold) */
        if (op == NPU_OP_QLINEAR_CONV || op == NPU_OP_CONV_INTEGER)
            CHECK(prep != NULL);
    }
    for (int lv = 0; lv <= 4; lv++) {
        if (cpu_qgemm_force(lv) != lv)
            continue;
        for (int pass = 0; pass < 3; pass++) {
            if (pass == 2 && !prep)
                break;
            memset(got->data, 0xA5, (size_t)tt_n(got) * npu_dtype_size(got->dtype));
            if (pass < 2)
                CHECK_EQ_INT(NPU_OK, run_op(pass ? tctxn : tctx1, op, al, nin, in, 1, &got));
            else
                CHECK_EQ_INT(NPU_OK,
                             npu_cpu_run_prep(tctxn, prep, op, al_done(al),
                                              (const struct npu_tensor *const *)in, nin, &got, 1));
            n_kernel_runs++;
            if (!tt_same_bytes(got, ref)) {
                report_diff(what, lv, got, ref);
                fprintf(stderr, "  (pass %d: %s)\n", pass,
                        pass == 0   ? "1 thread"
                        : pass == 1 ? "3 threads"
                                    : "prepared B or W, 3 threads");
                CHECK(false);
            }
        }
    }
    cpu_qgemm_force(-1);
    npu_cpu_prep_free(prep);
    tt_free(ref);
    tt_free(got);
}

static int64_t
pick(const int64_t *v, int n)
{
    return v[tt_rand_u64() % (uint64_t)n];
}

static struct npu_tensor *
rand_q(enum npu_dtype dt, int ndim, const int64_t *dims)
{
    struct npu_tensor *t = tt_new(dt, ndim, dims);
    return dt == NPU_DTYPE_INT8 ? tt_fill_rand(t, -128, 128) : tt_fill_rand(t, 0, 256);
}

/* a zero point: absent (kind 0), one value (1) or `len` values (2) */
static struct npu_tensor *
rand_zp(enum npu_dtype dt, int kind, int64_t len)
{
    if (kind == 0)
        return NULL;
    int64_t d = kind == 1 ? 1 : len;
    return rand_q(dt, 1, &d);
}

static enum npu_dtype
rand_i8(void)
{
    return tt_rand_u64() & 1 ? NPU_DTYPE_INT8 : NPU_DTYPE_UINT8;
}

static const int64_t Ks[] = {1, 3, 4, 5, 63, 64, 67, 130, 515, 600};
static const int64_t Ns[] = {1, 15, 16, 17, 47, 48, 49, 97, 100};
static const int64_t Ms[] = {1, 2, 3, 4, 5, 1, 2, 3, 9, 17, 70};

static void
matmul_integer_case(int64_t batch, int64_t M, int64_t K, int64_t N, bool batched_b)
{
    enum npu_dtype at = rand_i8(), bt = rand_i8();
    int64_t ad[3] = {batch, M, K}, bd[3] = {batch, K, N}, yd[3] = {batch, M, N};
    int ar = batch > 1 ? 3 : 2, br = batched_b ? 3 : 2;
    struct npu_tensor *a = rand_q(at, ar, ad + 3 - ar), *b = rand_q(bt, br, bd + 3 - br);
    /* per-row A zero points only where the ONNX shape allows them ([M]) */
    struct npu_tensor *azp = rand_zp(at, (int)(tt_rand_u64() % 3), M);
    struct npu_tensor *bzp =
        rand_zp(bt, batched_b ? (int)(tt_rand_u64() % 2) : (int)(tt_rand_u64() % 3), N);
    struct npu_tensor *y = tt_new(NPU_DTYPE_INT32, ar, yd + 3 - ar);
    struct npu_tensor *in[4] = {a, b, azp, bzp};
    char what[160];
    snprintf(what, sizeof(what), "MatMulInteger %s x %s batch %lld M %lld K %lld N %lld%s",
             npu_dtype_name(at), npu_dtype_name(bt), (long long)batch, (long long)M, (long long)K,
             (long long)N, batched_b ? " batched B" : "");
    struct alist al = {0};
    check_op(NPU_OP_MATMUL_INTEGER, &al, 4, in, y, batched_b ? -1 : 1, what);
    for (int i = 0; i < 4; i++)
        tt_free(in[i]);
    tt_free(y);
}

static struct npu_tensor *
scalar_f(float v)
{
    int64_t d = 1;
    double x = v;
    return tt_vals(NPU_DTYPE_FP32, 0, &d, &x);
}

static void
qlinear_matmul_case(int64_t M, int64_t K, int64_t N)
{
    enum npu_dtype at = rand_i8(), bt = rand_i8(), yt = rand_i8();
    int64_t ad[2] = {M, K}, bd[2] = {K, N}, yd[2] = {M, N};
    struct npu_tensor *a = rand_q(at, 2, ad), *b = rand_q(bt, 2, bd);
    float as = 0.02f, ys = as * 0.005f * (float)sqrt((double)K) * 100.0f;
    bool per_col = tt_rand_u64() & 1;
    int64_t nbs = per_col ? N : 1;
    struct npu_tensor *bs = tt_new(NPU_DTYPE_FP32, 1, &nbs);
    tt_fill_rand(bs, 0.001, 0.01);
    struct npu_tensor *bias = NULL;
    if (tt_rand_u64() & 1) {
        bias = tt_new(NPU_DTYPE_INT32, 1, &N);
        tt_fill_rand(bias, -20000, 20000);
    }
    int64_t one = 1;
    struct npu_tensor *in[9] = {a,
                                scalar_f(as),
                                rand_zp(at, 1, 1),
                                b,
                                bs,
                                rand_zp(bt, per_col ? 2 : 1, N),
                                scalar_f(ys),
                                rand_q(yt, 1, &one),
                                bias};
    struct npu_tensor *y = tt_new(yt, 2, yd);
    char what[160];
    snprintf(what, sizeof(what), "QLinearMatMul %s x %s -> %s M %lld K %lld N %lld%s%s",
             npu_dtype_name(at), npu_dtype_name(bt), npu_dtype_name(yt), (long long)M, (long long)K,
             (long long)N, per_col ? " per-column" : "", bias ? " bias" : "");
    struct alist al = {0};
    check_op(NPU_OP_QLINEAR_MATMUL, &al, bias ? 9 : 8, in, y, 3, what);
    for (int i = 0; i < 9; i++)
        tt_free(in[i]);
    tt_free(y);
}

/* a random QLinearConv (and ConvInteger of its operands) with H < 3 + hr, W < 3 + wr: small
 * planes make 16-pixel blocks of many short rows; wide ones one or two runs per block */
static void
qlinear_conv_case(uint64_t hr, uint64_t wr)
{
    enum npu_dtype xt = rand_i8(), wt = rand_i8(), yt = rand_i8();
    int64_t N = 1 + (int64_t)(tt_rand_u64() % 2), C = 1 + (int64_t)(tt_rand_u64() % 9);
    int64_t M = 1 + (int64_t)(tt_rand_u64() % 20), H = 3 + (int64_t)(tt_rand_u64() % hr),
            W = 3 + (int64_t)(tt_rand_u64() % wr);
    int64_t kh = 1 + (int64_t)(tt_rand_u64() % 3), kw = 1 + (int64_t)(tt_rand_u64() % 3);
    int64_t s = 1 + (int64_t)(tt_rand_u64() % 2), d = 1 + (int64_t)(tt_rand_u64() % 2);
    int64_t pd[4]; /* top, left, bottom, right: 0..2 each */
    for (int i = 0; i < 4; i++)
        pd[i] = (int64_t)(tt_rand_u64() % 3);
    if ((H + pd[0] + pd[2] - d * (kh - 1) - 1) < 0 || (W + pd[1] + pd[3] - d * (kw - 1) - 1) < 0)
        d = 1;
    int64_t OH = (H + pd[0] + pd[2] - d * (kh - 1) - 1) / s + 1,
            OW = (W + pd[1] + pd[3] - d * (kw - 1) - 1) / s + 1;
    int64_t xd[4] = {N, C, H, W}, wd[4] = {M, C, kh, kw}, yd[4] = {N, M, OH, OW};
    bool per_ch = tt_rand_u64() & 1;
    int64_t nws = per_ch ? M : 1;
    struct npu_tensor *ws = tt_new(NPU_DTYPE_FP32, 1, &nws);
    tt_fill_rand(ws, 0.001, 0.01);
    float xs = 0.02f, ys = xs * 0.005f * (float)sqrt((double)(C * kh * kw)) * 100.0f;
    struct npu_tensor *bias = NULL;
    if (tt_rand_u64() & 1) {
        bias = tt_new(NPU_DTYPE_INT32, 1, &M);
        tt_fill_rand(bias, -20000, 20000);
    }
    int64_t one = 1;
    struct npu_tensor *in[9] = {rand_q(xt, 4, xd),
                                scalar_f(xs),
                                rand_zp(xt, 1, 1),
                                rand_q(wt, 4, wd),
                                ws,
                                rand_zp(wt, per_ch ? 2 : 1, M),
                                scalar_f(ys),
                                rand_q(yt, 1, &one),
                                bias};
    struct npu_tensor *y = tt_new(yt, 4, yd);
    struct alist al = {0};
    int64_t st[2] = {s, s}, dl[2] = {d, d};
    al_ints(&al, "pads", pd, 4); /* ONNX order: begins then ends */
    al_ints(&al, "strides", st, 2);
    al_ints(&al, "dilations", dl, 2);
    char what[200];
    snprintf(what, sizeof(what),
             "QLinearConv %s x %s -> %s N%lld C%lld %lldx%lld M%lld k%lldx%lld s%lld d%lld "
             "pads %lld,%lld,%lld,%lld",
             npu_dtype_name(xt), npu_dtype_name(wt), npu_dtype_name(yt), (long long)N, (long long)C,
             (long long)H, (long long)W, (long long)M, (long long)kh, (long long)kw, (long long)s,
             (long long)d, (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)pd[3]);
    check_op(NPU_OP_QLINEAR_CONV, &al, bias ? 9 : 8, in, y, 3, what);
    /* ConvInteger of the same operands: the int32 sums */
    struct npu_tensor *yi = tt_new(NPU_DTYPE_INT32, 4, yd);
    struct npu_tensor *ci[4] = {in[0], in[3], in[2], in[5]};
    char what_ci[240];
    snprintf(what_ci, sizeof(what_ci), "ConvInteger (operands of %s)", what);
    check_op(NPU_OP_CONV_INTEGER, &al, 4, ci, yi, 1, what_ci);
    tt_free(yi);
    for (int i = 0; i < 9; i++)
        tt_free(in[i]);
    tt_free(y);
}

/* cpu_requantize (vectorised) against the scalar formula it must equal, over sums and scales
 * that reach the clamps, ties of the rounding, NaN and infinite scales */
static void
requantize_check(void)
{
    enum { R = 3, C = 37 };
    int32_t acc[R * C];
    float scale[C];
    for (int i = 0; i < R * C; i++)
        acc[i] = (int32_t)(tt_rand_u64() % 200001) - 100000;
    acc[0] = INT32_MAX, acc[1] = INT32_MIN, acc[2] = 0, acc[3] = 5, acc[4] = -5;
    for (int j = 0; j < C; j++)
        scale[j] = (float)tt_uniform(0.0001, 0.01);
    scale[3] = 0.5f, scale[4] = 0.5f, scale[5] = NAN, scale[6] = INFINITY, scale[7] = 0.0f;
    for (int dt = 0; dt < 2; dt++)
        for (int pc = 0; pc < 2; pc++) {
            enum npu_dtype t = dt ? NPU_DTYPE_INT8 : NPU_DTYPE_UINT8;
            int32_t zp = dt ? -3 : 130;
            uint8_t got[R * C], want[R * C];
            cpu_requantize(acc, R, C, scale, pc, zp, t, got);
            for (int i = 0; i < R; i++)
                for (int j = 0; j < C; j++) {
                    float v = rintf((float)acc[i * C + j] * scale[pc ? j : i]) + (float)zp;
                    v = v != v ? (float)zp : v;
                    want[i * C + j] = dt ? (uint8_t)(int8_t)(v < -128  ? -128
                                                             : v > 127 ? 127
                                                                       : v)
                                         : (uint8_t)(v < 0     ? 0
                                                     : v > 255 ? 255
                                                               : v);
                }
            CHECK(!memcmp(got, want, sizeof(got)));
        }
}

/* QuantizeLinear / DequantizeLinear with one scale (the vectorised loops) against the same
 * scale given per channel (the general loop) */
static void
quant_check(void)
{
    for (int dt = 0; dt < 2; dt++) {
        enum npu_dtype t = dt ? NPU_DTYPE_INT8 : NPU_DTYPE_UINT8;
        int64_t xd[2] = {5, 203}, one = 1, D = 5;
        struct npu_tensor *x = tt_fill_rand(tt_new(NPU_DTYPE_FP32, 2, xd), -9, 9);
        ((float *)x->data)[0] = NAN, ((float *)x->data)[1] = 0.125f, ((float *)x->data)[2] = 1e9f;
        ((float *)x->data)[3] = -0.375f;
        struct npu_tensor *s1 = scalar_f(0.25f), *z1 = tt_new(t, 1, &one);
        struct npu_tensor *sD = tt_new(NPU_DTYPE_FP32, 1, &D), *zD = tt_new(t, 1, &D);
        tt_set(z1, 0, dt ? -7 : 121);
        for (int i = 0; i < D; i++)
            tt_set(sD, i, 0.25), tt_set(zD, i, dt ? -7 : 121);
        struct npu_tensor *q1 = tt_new(t, 2, xd), *qD = tt_new(t, 2, xd);
        struct alist al = {0};
        al_int(&al, "axis", 0);
        struct npu_tensor *in1[3] = {x, s1, z1}, *inD[3] = {x, sD, zD};
        CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_QUANTIZE_LINEAR, &al, 3, in1, 1, &q1));
        CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_QUANTIZE_LINEAR, &al, 3, inD, 1, &qD));
        CHECK(tt_same_bytes(q1, qD));
        struct npu_tensor *f1 = tt_new(NPU_DTYPE_FP32, 2, xd), *fD = tt_new(NPU_DTYPE_FP32, 2, xd);
        in1[0] = inD[0] = q1;
        CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_DEQUANTIZE_LINEAR, &al, 3, in1, 1, &f1));
        CHECK_EQ_INT(NPU_OK, run_op(tctx1, NPU_OP_DEQUANTIZE_LINEAR, &al, 3, inD, 1, &fD));
        CHECK(tt_same_bytes(f1, fD));
        struct npu_tensor *all[] = {x, s1, z1, sD, zD, q1, qD, f1, fD};
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
            tt_free(all[i]);
    }
}

int
main(void)
{
    tctx_init();
    cpu_qgemm_force(-1);
    printf("int8 kernel: %s\n", cpu_qgemm_path());
    requantize_check();
    quant_check();
    for (int64_t M = 1; M <= 5; M++) /* every small M with awkward K and N */
        matmul_integer_case(1, M, 67, 49, false);
    for (int i = 0; i < 40; i++)
        matmul_integer_case(1, pick(Ms, 11), pick(Ks, 10), pick(Ns, 9), false);
    for (int i = 0; i < 6; i++) /* A's batch folded into rows; a batched B */
        matmul_integer_case(2, pick(Ms, 11), pick(Ks, 10), pick(Ns, 9), i & 1);
    for (int i = 0; i < 30; i++)
        qlinear_matmul_case(pick(Ms, 11), pick(Ks, 10), pick(Ns, 9));
    /* a decoder step's shape */
    qlinear_matmul_case(1, 2048, 200);
    for (int i = 0; i < 40; i++)
        qlinear_conv_case(9, 12);
    for (int i = 0; i < 16; i++) /* rows of 16-60 pixels: the packing's long runs */
        qlinear_conv_case(6, 58);
    printf("%d cases, %d kernel runs compared with the reference\n", n_cases, n_kernel_runs);
    CHECK(n_kernel_runs >= 2 * n_cases);
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-qgemm");
}
