/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-elementwise.c: the elementwise kernels against references computed
 * here in double: numpy broadcasting over many shape pairs (scalar, empty,
 * per-channel, odd sizes), integer wrap/division/modulo rules, Pow's mixed
 * types, every unary activation including NaN/inf/-0, fp16 rounding (checked
 * exhaustively), Cast across all dtype pairs, Where, Clip, variadic ops,
 * PRelu, and error returns for bad shapes and dtypes.
 */
#include "cpu-test-util.h"
#include "npu-test.h"

/* ---- binary ops with broadcasting ---------------------------------------------------------- */

typedef double (*ref2)(double, double);
static double
r_add(double a, double b)
{
    return a + b;
}
static double
r_sub(double a, double b)
{
    return a - b;
}
static double
r_mul(double a, double b)
{
    return a * b;
}
static double
r_div(double a, double b)
{
    return a / b;
}
static double
r_max(double a, double b)
{
    return a != a || a > b ? a : b;
}
static double
r_min(double a, double b)
{
    return a != a || a < b ? a : b;
}
static double
r_pow(double a, double b)
{
    return pow(a, b);
}
static double
r_eq(double a, double b)
{
    return a == b;
}
static double
r_lt(double a, double b)
{
    return a < b;
}
static double
r_gt(double a, double b)
{
    return a > b;
}
static double
r_le(double a, double b)
{
    return a <= b;
}
static double
r_ge(double a, double b)
{
    return a >= b;
}

static void
broadcast_shape(const struct npu_tensor *a, const struct npu_tensor *b, int *nd, int64_t *d)
{
    *nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < *nd; i++) {
        int ia = i - (*nd - a->ndim), ib = i - (*nd - b->ndim);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        d[i] = da == 1 ? db : da;
    }
}

static void
check_binary(enum npu_op op, ref2 ref, bool cmp, int na, const int64_t *da, int nb,
             const int64_t *db, double lo, double hi)
{
    struct npu_tensor *a = tt_fill_rand(tt_new(NPU_DTYPE_FP32, na, da), lo, hi);
    struct npu_tensor *b = tt_fill_rand(tt_new(NPU_DTYPE_FP32, nb, db), lo, hi);
    int nd;
    int64_t od[NPU_MAX_DIMS];
    broadcast_shape(a, b, &nd, od);
    struct npu_tensor *y = tt_new(cmp ? NPU_DTYPE_BOOL : NPU_DTYPE_FP32, nd, od);
    struct npu_tensor *in[2] = {a, b}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(op, NULL, 2, in, 1, out));
    int64_t n = tt_n(y);
    double *want = malloc(sizeof(double) * (size_t)(n + 1));
    int64_t idx[NPU_MAX_DIMS];
    for (int64_t e = 0; e < n; e++) {
        tt_unravel(e, nd, od, idx);
        double x = tt_get(a, tt_bcast_index(a, nd, idx)), z = tt_get(b, tt_bcast_index(b, nd, idx));
        want[e] = cmp ? ref(x, z) : (double)(float)ref(x, z);
    }
    double err = tt_err(y, want, 1e-30, cmp ? 0 : 2e-7);
    if (!(err <= 1)) {
        fprintf(stderr, "%s: broadcast [%d dims] x [%d dims]: error %g\n", npu_op_name(op), na, nb,
                err);
    }
    CHECK(err <= 1);
    free(want);
    tt_free(a), tt_free(b), tt_free(y);
}

static void
test_broadcasting(void)
{
    static const struct {
        int na, nb;
        int64_t da[4], db[4];
    } shapes[] = {
        {3, 1, {2, 3, 4}, {4}},
        {3, 2, {2, 3, 4}, {3, 1}},
        {3, 3, {1, 3, 1}, {2, 1, 5}},
        {0, 2, {0}, {2, 3}},
        {2, 0, {2, 3}, {0}},
        {2, 2, {0, 3}, {1, 3}},
        {3, 3, {5, 1, 4}, {1, 6, 1}},
        {2, 1, {64, 257}, {257}},
        {1, 1, {1000}, {1000}},
        {4, 4, {3, 1, 1, 7}, {1, 4, 5, 1}},
        {2, 2, {33, 1}, {1, 129}},
        {1, 1, {1}, {9001}},
        {4, 1, {2, 3, 4, 5}, {1}},
        {3, 3, {7, 1, 9}, {7, 1, 9}},
        {2, 2, {1, 20000}, {3, 20000}},
        {4, 2, {2, 16, 9, 9}, {9, 1}},
    };
    struct {
        enum npu_op op;
        ref2 f;
        bool cmp;
        double lo, hi;
    } ops[] = {
        {NPU_OP_ADD, r_add, false, -10, 10},       {NPU_OP_SUB, r_sub, false, -10, 10},
        {NPU_OP_MUL, r_mul, false, -10, 10},       {NPU_OP_DIV, r_div, false, 0.5, 10},
        {NPU_OP_MAX, r_max, false, -10, 10},       {NPU_OP_MIN, r_min, false, -10, 10},
        {NPU_OP_POW, r_pow, false, 0.5, 3},        {NPU_OP_EQUAL, r_eq, true, -2, 2},
        {NPU_OP_LESS, r_lt, true, -10, 10},        {NPU_OP_GREATER, r_gt, true, -10, 10},
        {NPU_OP_LESS_OR_EQUAL, r_le, true, -2, 2}, {NPU_OP_GREATER_OR_EQUAL, r_ge, true, -2, 2},
    };
    for (size_t o = 0; o < NPU_ARRAY_SIZE(ops); o++)
        for (size_t s = 0; s < NPU_ARRAY_SIZE(shapes); s++) {
            check_binary(ops[o].op, ops[o].f, ops[o].cmp, shapes[s].na, shapes[s].da, shapes[s].nb,
                         shapes[s].db, ops[o].lo, ops[o].hi);
            /* and swapped */
            check_binary(ops[o].op, ops[o].f, ops[o].cmp, shapes[s].nb, shapes[s].db, shapes[s].na,
                         shapes[s].da, ops[o].lo, ops[o].hi);
        }
    /* Equal on integral floats actually hits equality; make sure some are true */
    int64_t d[1] = {4};
    double va[4] = {1, 2, 3, NAN}, vb[4] = {1, 5, 3, NAN};
    struct npu_tensor *a = tt_vals(NPU_DTYPE_FP32, 1, d, va),
                      *b = tt_vals(NPU_DTYPE_FP32, 1, d, vb);
    struct npu_tensor *y = tt_new(NPU_DTYPE_BOOL, 1, d), *in[2] = {a, b}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_EQUAL, NULL, 2, in, 1, out));
    CHECK(tt_get(y, 0) == 1 && tt_get(y, 1) == 0 && tt_get(y, 2) == 1 && tt_get(y, 3) == 0);
    /* NaN propagates through Max/Min (numpy maximum) */
    struct npu_tensor *z = tt_new(NPU_DTYPE_FP32, 1, d);
    out[0] = z;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MAX, NULL, 2, in, 1, out));
    CHECK(isnan(tt_get(z, 3)));
    tt_free(a), tt_free(b), tt_free(y), tt_free(z);
}

/* ---- integer rules ------------------------------------------------------------------------- */

static void
int_case(enum npu_op op, enum npu_dtype dt, struct alist *al, double x, double y, double want)
{
    int64_t one = 1;
    struct npu_tensor *a = tt_vals(dt, 1, &one, &x), *b = tt_vals(dt, 1, &one, &y);
    struct npu_tensor *o = tt_new(dt, 1, &one), *in[2] = {a, b}, *out[1] = {o};
    CHECK_EQ_INT(NPU_OK, run2(op, al, 2, in, 1, out));
    if (tt_get(o, 0) != want)
        fprintf(stderr, "%s %s(%g, %g) = %g, want %g\n", npu_op_name(op), npu_dtype_name(dt), x, y,
                tt_get(o, 0), want);
    CHECK(tt_get(o, 0) == want);
    tt_free(a), tt_free(b), tt_free(o);
}

static void
test_integers(void)
{
    int_case(NPU_OP_ADD, NPU_DTYPE_INT8, NULL, 127, 1, -128);
    int_case(NPU_OP_SUB, NPU_DTYPE_UINT8, NULL, 3, 5, 254);
    int_case(NPU_OP_MUL, NPU_DTYPE_INT32, NULL, 65536, 65536, 0);
    int_case(NPU_OP_MUL, NPU_DTYPE_UINT16, NULL, 65535, 65535, 1);
    int_case(NPU_OP_ADD, NPU_DTYPE_INT64, NULL, 4611686018427387904.0, 4611686018427387904.0,
             -9223372036854775808.0);
    int_case(NPU_OP_DIV, NPU_DTYPE_INT32, NULL, 7, -2, -3); /* truncation */
    int_case(NPU_OP_DIV, NPU_DTYPE_INT32, NULL, -7, 2, -3);
    int_case(NPU_OP_DIV, NPU_DTYPE_INT32, NULL, 5, 0, 0); /* defined: 0 */
    int_case(NPU_OP_DIV, NPU_DTYPE_INT32, NULL, -2147483648.0, -1, -2147483648.0);
    int_case(NPU_OP_DIV, NPU_DTYPE_UINT8, NULL, 200, 7, 28);
    struct alist fm = {0};
    al_int(&fm, "fmod", 1);
    /* Mod: fmod=0 takes the divisor's sign (Python), fmod=1 the dividend's (C fmod) */
    int_case(NPU_OP_MOD, NPU_DTYPE_INT32, NULL, -7, 3, 2);
    int_case(NPU_OP_MOD, NPU_DTYPE_INT32, NULL, 7, -3, -2);
    int_case(NPU_OP_MOD, NPU_DTYPE_INT32, NULL, -7, -3, -1);
    int_case(NPU_OP_MOD, NPU_DTYPE_INT32, &fm, -7, 3, -1);
    int_case(NPU_OP_MOD, NPU_DTYPE_INT32, &fm, 7, -3, 1);
    int_case(NPU_OP_MOD, NPU_DTYPE_INT8, NULL, -128, -1, 0);
    int_case(NPU_OP_MOD, NPU_DTYPE_INT16, NULL, 5, 0, 0);
    int_case(NPU_OP_MOD, NPU_DTYPE_FP32, &fm, -7.5, 2, -1.5);
    int_case(NPU_OP_MOD, NPU_DTYPE_FP32, NULL, -7.5, 2, 0.5);
    int_case(NPU_OP_MOD, NPU_DTYPE_FP64, NULL, 7.5, -2, -0.5);
    int_case(NPU_OP_MOD, NPU_DTYPE_UINT32, NULL, 4000000000.0, 7, fmod(4000000000.0, 7));
    /* Pow with integers: exact, wrapping; negative exponents truncate */
    int_case(NPU_OP_POW, NPU_DTYPE_INT32, NULL, 3, 4, 81);
    int_case(NPU_OP_POW, NPU_DTYPE_INT32, NULL, -3, 3, -27);
    int_case(NPU_OP_POW, NPU_DTYPE_INT64, NULL, 3, 39, 4052555153018976267.0);
    int_case(NPU_OP_POW, NPU_DTYPE_INT32, NULL, 2, -1, 0);
    int_case(NPU_OP_POW, NPU_DTYPE_INT32, NULL, -1, -3, -1);
    int_case(NPU_OP_POW, NPU_DTYPE_INT32, NULL, 1, -5, 1);
    int_case(NPU_OP_POW, NPU_DTYPE_UINT8, NULL, 2, 9, 0);
    int_case(NPU_OP_AND, NPU_DTYPE_BOOL, NULL, 1, 0, 0);
    int_case(NPU_OP_OR, NPU_DTYPE_BOOL, NULL, 1, 0, 1);
    int_case(NPU_OP_XOR, NPU_DTYPE_BOOL, NULL, 1, 1, 0);
    int_case(NPU_OP_MAX, NPU_DTYPE_UINT64, NULL, 18446744073709549568.0, 5, 18446744073709549568.0);
    int_case(NPU_OP_MIN, NPU_DTYPE_INT16, NULL, -32768, 5, -32768);

    /* Pow with mixed types: X float / Y int, X int / Y float */
    int64_t d3 = 3;
    double xv[3] = {2, -1.5, 9}, yv[3] = {3, 2, -1};
    struct npu_tensor *x = tt_vals(NPU_DTYPE_FP32, 1, &d3, xv),
                      *y = tt_vals(NPU_DTYPE_INT64, 1, &d3, yv);
    struct npu_tensor *o = tt_new(NPU_DTYPE_FP32, 1, &d3), *in[2] = {x, y}, *out[1] = {o};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_POW, NULL, 2, in, 1, out));
    CHECK_NEAR(8, tt_get(o, 0), 0);
    CHECK_NEAR(2.25, tt_get(o, 1), 0);
    CHECK_NEAR(1.0 / 9, tt_get(o, 2), 1e-7);
    tt_free(x), tt_free(y), tt_free(o);
    double xi[3] = {4, 9, 2}, yf[3] = {0.5, 0.5, 3.5};
    x = tt_vals(NPU_DTYPE_INT32, 1, &d3, xi);
    y = tt_vals(NPU_DTYPE_FP32, 1, &d3, yf);
    o = tt_new(NPU_DTYPE_INT32, 1, &d3);
    in[0] = x, in[1] = y, out[0] = o;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_POW, NULL, 2, in, 1, out));
    CHECK(tt_get(o, 0) == 2 && tt_get(o, 1) == 3 && tt_get(o, 2) == 11); /* 2^3.5 = 11.31 */
    tt_free(x), tt_free(y), tt_free(o);
}

/* ---- unary ops ----------------------------------------------------------------------------- */

typedef double (*ref1)(double);
static double
u_relu(double x)
{
    return x < 0 ? 0 : x;
}
static double
u_sigmoid(double x)
{
    return 1 / (1 + exp(-x));
}
static double
u_neg(double x)
{
    return -x;
}
static double
u_recip(double x)
{
    return 1 / x;
}
static double
u_hsig(double x)
{
    return fmin(1, fmax(0, (double)0.2f * x + 0.5));
}
static double
u_hswish(double x)
{
    return x * fmin(1, fmax(0, x / 6 + 0.5));
}
static double
u_elu(double x)
{
    return x < 0 ? expm1(x) : x;
}
static double
u_selu(double x)
{
    return 1.05070102214813232421875 * (x > 0 ? x : 1.67326319217681884765625 * expm1(x));
}
static double
u_gelu(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0));
}
/* 0.5 x (1 + tanh u) written as x / (1 + exp(-2u)), which double evaluates without the
 * cancellation of 1 + tanh(u) for very negative u */
static double
u_gelu_tanh(double x)
{
    return x / (1 + exp(-2 * sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double
u_softplus(double x)
{
    return x > 30 ? x : log1p(exp(x));
}
static double
u_lrelu(double x)
{
    return x < 0 ? 0.01 * x : x;
}
static double
u_sign(double x)
{
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}
static double
u_silu(double x)
{
    return x / (1 + exp(-x));
}
static double
u_round(double x)
{
    return nearbyint(x);
}

static void
check_unary(enum npu_op op, struct alist *al, ref1 f, double lo, double hi, double rtol,
            double atol)
{
    int64_t n = 4099;
    struct npu_tensor *x = tt_fill_rand(tt_new(NPU_DTYPE_FP32, 1, &n), lo, hi);
    /* specials at the front */
    float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.5f, -2.5f, 1e-6f, -1e-6f};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(sp); i++)
        if (sp[i] >= lo && sp[i] <= hi)
            ((float *)x->data)[i] = sp[i];
    struct npu_tensor *y = tt_new(NPU_DTYPE_FP32, 1, &n), *in[1] = {x}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(op, al, 1, in, 1, out));
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        want[i] = f(tt_get(x, i));
    double err = tt_err(y, want, atol, rtol);
    if (!(err <= 1))
        fprintf(stderr, "%s: error %g of tolerance\n", npu_op_name(op), err);
    CHECK(err <= 1);
    free(want);
    tt_free(x), tt_free(y);
}

static void
check_special(enum npu_op op, struct alist *al, float x, double want)
{
    struct npu_tensor *t = tt(NPU_DTYPE_FP32, 0), *y = tt(NPU_DTYPE_FP32, 0);
    *(float *)t->data = x;
    struct npu_tensor *in[1] = {t}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(op, al, 1, in, 1, out));
    double g = tt_get(y, 0);
    bool ok = (want != want) ? g != g : (g == want && signbit(g) == signbit(want));
    if (!ok)
        fprintf(stderr, "%s(%g) = %g, want %g\n", npu_op_name(op), x, g, want);
    CHECK(ok);
    tt_free(t), tt_free(y);
}

static void
test_unary(void)
{
    const double r = 3e-7; /* a few ulp */
    check_unary(NPU_OP_EXP, NULL, exp, -87, 88, r, 0);
    check_unary(NPU_OP_LOG, NULL, log, 1e-3, 1e4, r, 0);
    check_unary(NPU_OP_SQRT, NULL, sqrt, 0, 1e4, r, 0);
    check_unary(NPU_OP_TANH, NULL, tanh, -12, 12, r, 0);
    check_unary(NPU_OP_TANH, NULL, tanh, -0.3, 0.3, r, 0);
    check_unary(NPU_OP_SIGMOID, NULL, u_sigmoid, -87, 30, r, 0);
    check_unary(NPU_OP_SIGMOID, NULL, u_sigmoid, -110, 30, r, 1e-38); /* denormal tail */
    check_unary(NPU_OP_ERF, NULL, erf, -5, 5, r, 1e-30);
    check_unary(NPU_OP_ERF, NULL, erf, -0.2, 0.2, r, 0);
    /* far in the negative tails (|y| < 1e-9) the rounding of x^2 or of u in fp32 grows the
     * relative error to ~1e-5; an absolute 1e-9 covers that */
    check_unary(NPU_OP_GELU, NULL, u_gelu, -5, 5, 4e-6, 1e-30);
    check_unary(NPU_OP_GELU, NULL, u_gelu, -12, 12, 1e-6, 1e-9);
    check_unary(NPU_OP_GELU, NULL, u_gelu, -1, 1, 3e-7, 1e-30);
    check_unary(NPU_OP_FUSED_GELU_TANH, NULL, u_gelu_tanh, -3, 3, 1e-6, 1e-30);
    check_unary(NPU_OP_FUSED_GELU_TANH, NULL, u_gelu_tanh, -12, 12, 1e-6, 1e-9);
    struct alist gt = {0};
    al_str(&gt, "approximate", "tanh");
    check_unary(NPU_OP_GELU, &gt, u_gelu_tanh, -12, 12, 1e-6, 1e-9);
    check_unary(NPU_OP_FUSED_SILU, NULL, u_silu, -80, 30, 1e-6, 1e-30);
    check_unary(NPU_OP_SOFTPLUS, NULL, u_softplus, -20, 40, r, 0);
    check_unary(NPU_OP_ELU, NULL, u_elu, -10, 10, r, 0);
    check_unary(NPU_OP_SELU, NULL, u_selu, -10, 10, r, 0);
    check_unary(NPU_OP_RELU, NULL, u_relu, -10, 10, 0, 0);
    check_unary(NPU_OP_LEAKY_RELU, NULL, u_lrelu, -10, 10, r, 0);
    check_unary(NPU_OP_HARD_SIGMOID, NULL, u_hsig, -6, 6, r, 1e-7);
    check_unary(NPU_OP_HARD_SWISH, NULL, u_hswish, -6, 6, r, 1e-6);
    check_unary(NPU_OP_ABS, NULL, fabs, -10, 10, 0, 0);
    check_unary(NPU_OP_NEG, NULL, u_neg, -10, 10, 0, 0);
    check_unary(NPU_OP_RECIPROCAL, NULL, u_recip, 0.1, 10, r, 0);
    check_unary(NPU_OP_FLOOR, NULL, floor, -10, 10, 0, 0);
    check_unary(NPU_OP_CEIL, NULL, ceil, -10, 10, 0, 0);
    check_unary(NPU_OP_ROUND, NULL, u_round, -10, 10, 0, 0);
    check_unary(NPU_OP_SIGN, NULL, u_sign, -10, 10, 0, 0);
    check_unary(NPU_OP_SIN, NULL, sin, -10, 10, r, 1e-7);
    check_unary(NPU_OP_COS, NULL, cos, -10, 10, r, 1e-7);
    struct alist hs = {0};
    al_float(&hs, "alpha", 0.5f);
    al_float(&hs, "beta", 0.25f);

    /* round half to even, NaN/inf/-0 behaviour */
    check_special(NPU_OP_ROUND, NULL, 0.5f, 0);
    check_special(NPU_OP_ROUND, NULL, 1.5f, 2);
    check_special(NPU_OP_ROUND, NULL, 2.5f, 2);
    check_special(NPU_OP_ROUND, NULL, -2.5f, -2);
    check_special(NPU_OP_RELU, NULL, NAN, NAN);
    check_special(NPU_OP_SIGMOID, NULL, NAN, NAN);
    check_special(NPU_OP_SIGMOID, NULL, -INFINITY, 0);
    check_special(NPU_OP_SIGMOID, NULL, INFINITY, 1);
    check_special(NPU_OP_EXP, NULL, -INFINITY, 0);
    check_special(NPU_OP_EXP, NULL, INFINITY, INFINITY);
    check_special(NPU_OP_EXP, NULL, 89.0f, INFINITY);
    check_special(NPU_OP_EXP, NULL, NAN, NAN);
    check_special(NPU_OP_TANH, NULL, -0.0f, -0.0);
    check_special(NPU_OP_TANH, NULL, INFINITY, 1);
    check_special(NPU_OP_TANH, NULL, NAN, NAN);
    check_special(NPU_OP_ERF, NULL, -INFINITY, -1);
    check_special(NPU_OP_GELU, NULL, INFINITY, INFINITY);
    check_special(NPU_OP_GELU, NULL, -INFINITY, -0.0);
    check_special(NPU_OP_GELU, NULL, NAN, NAN);
    check_special(NPU_OP_FUSED_SILU, NULL, -INFINITY, -0.0);
    check_special(NPU_OP_SIGN, NULL, NAN, NAN);
    check_special(NPU_OP_HARD_SIGMOID, &hs, 1.0f, 0.75);
    check_special(NPU_OP_SOFTPLUS, NULL, 100.0f, 100);
    check_special(NPU_OP_SQRT, NULL, -1.0f, NAN);

    /* integer unary: abs wraps at INT_MIN like numpy */
    int64_t two = 2;
    double iv[2] = {-128, -5};
    struct npu_tensor *x = tt_vals(NPU_DTYPE_INT8, 1, &two, iv),
                      *y = tt_new(NPU_DTYPE_INT8, 1, &two);
    struct npu_tensor *in[1] = {x}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_ABS, NULL, 1, in, 1, out));
    CHECK(tt_get(y, 0) == -128 && tt_get(y, 1) == 5);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_NEG, NULL, 1, in, 1, out));
    CHECK(tt_get(y, 0) == -128 && tt_get(y, 1) == 5);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_RELU, NULL, 1, in, 1, out));
    CHECK(tt_get(y, 0) == 0);
    tt_free(x), tt_free(y);

    /* fp64 path */
    int64_t n = 257;
    x = tt_fill_rand(tt_new(NPU_DTYPE_FP64, 1, &n), -3, 3);
    y = tt_new(NPU_DTYPE_FP64, 1, &n);
    in[0] = x, out[0] = y;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_GELU, NULL, 1, in, 1, out));
    double worst = 0;
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(tt_get(y, i) - u_gelu(tt_get(x, i))));
    CHECK(worst < 1e-15);
    tt_free(x), tt_free(y);
}

/* ---- fp16 ---------------------------------------------------------------------------------- */

static void
test_fp16(void)
{
    /* every half -> f32 -> half is the identity (NaNs stay NaN) */
    int64_t n = 65536;
    struct npu_tensor *h = tt_new(NPU_DTYPE_FP16, 1, &n), *f = tt_new(NPU_DTYPE_FP32, 1, &n);
    struct npu_tensor *h2 = tt_new(NPU_DTYPE_FP16, 1, &n);
    for (int64_t i = 0; i < n; i++)
        ((uint16_t *)h->data)[i] = (uint16_t)i;
    struct npu_tensor *in[1] = {h}, *out[1] = {f};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CAST, NULL, 1, in, 1, out));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = tt_f16_to((uint16_t)i), got = tt_get(f, i);
        if (!(want == got || (want != want && got != got)))
            bad++;
    }
    CHECK_EQ_INT(0, bad);
    in[0] = f, out[0] = h2;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CAST, NULL, 1, in, 1, out));
    bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t a = (uint16_t)i, b = ((uint16_t *)h2->data)[i];
        bool nan = (a & 0x7c00) == 0x7c00 && (a & 0x3ff);
        if (nan ? !((b & 0x7c00) == 0x7c00 && (b & 0x3ff)) : a != b)
            bad++;
    }
    CHECK_EQ_INT(0, bad);
    tt_free(h), tt_free(f), tt_free(h2);

    /* f32 -> f16 rounding: random values over the whole range, and the edges */
    n = 200000;
    f = tt_new(NPU_DTYPE_FP32, 1, &n);
    h = tt_new(NPU_DTYPE_FP16, 1, &n);
    float edges[] = {65504.0f,       65519.996f,    65520.0f,       5.9604645e-08f, 2.9802322e-08f,
                     2.9802326e-08f, 8.940697e-08f, 6.1035156e-05f, 6.1035152e-05f, 1.0009766f,
                     1.0004883f,     1.0014648f,    -0.0f,          1e-10f};
    for (int64_t i = 0; i < n; i++) {
        float v = (float)ldexp(tt_uniform(1, 2), (int)tt_uniform(-27, 17));
        ((float *)f->data)[i] = i & 1 ? -v : v;
    }
    memcpy(f->data, edges, sizeof(edges));
    in[0] = f, out[0] = h;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CAST, NULL, 1, in, 1, out));
    bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (((uint16_t *)h->data)[i] != tt_f16_from(tt_get(f, i))) {
            if (bad++ < 5)
                fprintf(stderr, "f32->f16 %.9g: got 0x%04x want 0x%04x\n", tt_get(f, i),
                        ((uint16_t *)h->data)[i], tt_f16_from(tt_get(f, i)));
        }
    CHECK_EQ_INT(0, bad);
    tt_free(f), tt_free(h);

    /* f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the halfway point */
    int64_t one = 1;
    double v = 1 + ldexp(1, -11) + ldexp(1, -40);
    struct npu_tensor *d = tt_vals(NPU_DTYPE_FP64, 1, &one, &v);
    h = tt_new(NPU_DTYPE_FP16, 1, &one);
    in[0] = d, out[0] = h;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CAST, NULL, 1, in, 1, out));
    CHECK_EQ_HEX(0x3c01, ((uint16_t *)h->data)[0]);
    tt_free(d), tt_free(h);

    /* fp16 Add: computed in fp32, rounded once; equals the double reference rounded */
    n = 3000;
    struct npu_tensor *a = tt_fill_rand(tt_new(NPU_DTYPE_FP16, 1, &n), -100, 100);
    struct npu_tensor *b = tt_fill_rand(tt_new(NPU_DTYPE_FP16, 1, &n), -100, 100);
    struct npu_tensor *y = tt_new(NPU_DTYPE_FP16, 1, &n), *in2[2] = {a, b}, *out2[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MUL, NULL, 2, in2, 1, out2));
    bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (((uint16_t *)y->data)[i] != tt_f16_from(tt_get(a, i) * tt_get(b, i)))
            bad++;
    CHECK_EQ_INT(0, bad);
    tt_free(a), tt_free(b), tt_free(y);
}

/* ---- Cast ---------------------------------------------------------------------------------- */

static double
cast_ref(double v, enum npu_dtype to, enum npu_dtype from)
{
    if (to == NPU_DTYPE_BOOL)
        return v != 0;
    if (npu_dtype_is_float(to)) {
        if (to == NPU_DTYPE_FP32)
            return (float)v;
        if (to == NPU_DTYPE_FP16)
            return tt_f16_to(tt_f16_from(v));
        return v;
    }
    /* to integer */
    double lo, hi;
    switch (to) {
    case NPU_DTYPE_INT8: lo = -128, hi = 127; break;
    case NPU_DTYPE_UINT8: lo = 0, hi = 255; break;
    case NPU_DTYPE_INT16: lo = -32768, hi = 32767; break;
    case NPU_DTYPE_UINT16: lo = 0, hi = 65535; break;
    case NPU_DTYPE_INT32: lo = -2147483648.0, hi = 2147483647.0; break;
    case NPU_DTYPE_UINT32: lo = 0, hi = 4294967295.0; break;
    case NPU_DTYPE_INT64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
    default: lo = 0, hi = 18446744073709551615.0; break;
    }
    if (npu_dtype_is_float(from)) {
        if (v != v)
            return 0;
        v = trunc(v);
        return v < lo ? lo : v > hi ? hi : v; /* saturate */
    }
    /* integer to integer: two's complement wrap */
    if (v >= lo && v <= hi)
        return v;
    double span = hi - lo + 1;
    double w = fmod(v - lo, span);
    if (w < 0)
        w += span;
    return w + lo;
}

static void
test_cast(void)
{
    static const enum npu_dtype all[] = {
        NPU_DTYPE_FP32,   NPU_DTYPE_FP16,  NPU_DTYPE_FP64,   NPU_DTYPE_INT8,
        NPU_DTYPE_UINT8,  NPU_DTYPE_INT16, NPU_DTYPE_UINT16, NPU_DTYPE_INT32,
        NPU_DTYPE_UINT32, NPU_DTYPE_INT64, NPU_DTYPE_UINT64, NPU_DTYPE_BOOL,
    };
    /* values representable in every source type, chosen to hit wrap and saturation */
    static const double fvals[] = {0,    1,    -1,    127.7, -128.9,   300.5,     -70000.25, 3e9,
                                   -3e9, 1e20, -1e20, NAN,   INFINITY, -INFINITY, 0.49};
    static const double ivals[] = {0, 1, 2, 100, 127, 200, 255};
    static const double svals[] = {0, -1, -128, 127, 100, -100};
    static const double wide[] = {0, 1, 300, 70000, 3000000000.0, 4294967295.0};
    static const double swide[] = {0, -1, -300, -70000, 2000000000, -2147483648.0};
    int bad = 0;
    for (size_t s = 0; s < NPU_ARRAY_SIZE(all); s++)
        for (size_t t = 0; t < NPU_ARRAY_SIZE(all); t++) {
            enum npu_dtype from = all[s], to = all[t];
            const double *vals;
            int64_t n;
            if (npu_dtype_is_float(from)) {
                vals = fvals;
                n = NPU_ARRAY_SIZE(fvals);
            } else if (from == NPU_DTYPE_BOOL) {
                vals = ivals;
                n = 2;
            } else if (from == NPU_DTYPE_UINT8 || from == NPU_DTYPE_UINT16) {
                vals = ivals;
                n = NPU_ARRAY_SIZE(ivals);
            } else if (from == NPU_DTYPE_INT8 || from == NPU_DTYPE_INT16) {
                vals = svals;
                n = NPU_ARRAY_SIZE(svals);
            } else if (from == NPU_DTYPE_UINT32 || from == NPU_DTYPE_UINT64) {
                vals = wide;
                n = NPU_ARRAY_SIZE(wide);
            } else {
                vals = swide;
                n = NPU_ARRAY_SIZE(swide);
            }
            struct npu_tensor *x = tt_vals(from, 1, &n, vals), *y = tt_new(to, 1, &n);
            struct npu_tensor *in[1] = {x}, *out[1] = {y};
            if (run2(NPU_OP_CAST, NULL, 1, in, 1, out) != NPU_OK) {
                bad++;
                continue;
            }
            for (int64_t i = 0; i < n; i++) {
                double src = tt_get(x, i); /* the value as the source type holds it */
                double want = cast_ref(src, to, from), got = tt_get(y, i);
                if (!(got == want || (got != got && want != want))) {
                    if (bad++ < 10)
                        fprintf(stderr, "cast %s->%s of %g: got %.17g want %.17g\n",
                                npu_dtype_name(from), npu_dtype_name(to), src, got, want);
                }
            }
            tt_free(x), tt_free(y);
        }
    CHECK_EQ_INT(0, bad);

    /* CastLike takes the target dtype from its second input; Cast's `to` must agree */
    int64_t one = 1;
    double v = 2.75;
    struct npu_tensor *x = tt_vals(NPU_DTYPE_FP32, 1, &one, &v),
                      *like = tt_new(NPU_DTYPE_INT32, 1, &one);
    struct npu_tensor *y = tt_new(NPU_DTYPE_INT32, 1, &one);
    struct npu_tensor *in[2] = {x, like}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CAST_LIKE, NULL, 2, in, 1, out));
    CHECK(tt_get(y, 0) == 2);
    struct alist al = {0};
    al_int(&al, "to", 1); /* FLOAT, but the output is int32 */
    npu_log_set_level((enum npu_log_level) - 1);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_CAST, &al, 1, in, 1, out));
    npu_log_set_level(NPU_LOG_WARN);
    tt_free(x), tt_free(like), tt_free(y);
}

/* ---- Where, Clip, variadic, PRelu ----------------------------------------------------------- */

static void
test_where_clip_variadic(void)
{
    /* Where over every element size, three-way broadcast */
    static const enum npu_dtype dts[] = {NPU_DTYPE_UINT8, NPU_DTYPE_FP16, NPU_DTYPE_FP32,
                                         NPU_DTYPE_INT64};
    for (size_t k = 0; k < NPU_ARRAY_SIZE(dts); k++) {
        struct npu_tensor *c = tt_fill_rand(tt(NPU_DTYPE_BOOL, 3, D(4), D(1), D(5)), 0, 2);
        struct npu_tensor *x = tt_fill_rand(tt(dts[k], 2, D(3), D(5)), 0, 100);
        struct npu_tensor *yv = tt_fill_rand(tt(dts[k], 1, D(1)), 0, 100);
        struct npu_tensor *o = tt(dts[k], 3, D(4), D(3), D(5));
        struct npu_tensor *in[3] = {c, x, yv}, *out[1] = {o};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_WHERE, NULL, 3, in, 1, out));
        int bad = 0;
        int64_t idx[3];
        for (int64_t e = 0; e < tt_n(o); e++) {
            tt_unravel(e, 3, o->dims, idx);
            double want = tt_get(c, tt_bcast_index(c, 3, idx))
                              ? tt_get(x, tt_bcast_index(x, 3, idx))
                              : tt_get(yv, 0);
            bad += tt_get(o, e) != want;
        }
        CHECK_EQ_INT(0, bad);
        tt_free(c), tt_free(x), tt_free(yv), tt_free(o);
    }

    /* Clip: int8 with one bound, float with both, NaN passes, absent bounds */
    int64_t n = 6;
    double iv[6] = {-128, -5, 0, 5, 100, 127};
    struct npu_tensor *x = tt_vals(NPU_DTYPE_INT8, 1, &n, iv), *y = tt_new(NPU_DTYPE_INT8, 1, &n);
    double lo = -3;
    int64_t s0 = 0;
    struct npu_tensor *mn = tt_vals(NPU_DTYPE_INT8, 0, &s0, &lo);
    struct npu_tensor *in[3] = {x, mn, NULL}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CLIP, NULL, 3, in, 1, out));
    CHECK(tt_get(y, 0) == -3 && tt_get(y, 1) == -3 && tt_get(y, 5) == 127);
    tt_free(x), tt_free(y), tt_free(mn);
    double fv[6] = {-5, -1, 0.5, NAN, 3, INFINITY}, l = -1, h = 2;
    x = tt_vals(NPU_DTYPE_FP32, 1, &n, fv);
    y = tt_new(NPU_DTYPE_FP32, 1, &n);
    struct npu_tensor *lt = tt_vals(NPU_DTYPE_FP32, 0, &s0, &l),
                      *ht = tt_vals(NPU_DTYPE_FP32, 0, &s0, &h);
    in[0] = x, in[1] = lt, in[2] = ht, out[0] = y;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CLIP, NULL, 3, in, 1, out));
    CHECK(tt_get(y, 0) == -1 && tt_get(y, 2) == 0.5 && isnan(tt_get(y, 3)) && tt_get(y, 5) == 2);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CLIP, NULL, 1, in, 1, out));
    CHECK(tt_get(y, 0) == -5 && isinf(tt_get(y, 5)));
    tt_free(x), tt_free(y), tt_free(lt), tt_free(ht);

    /* Sum / Mean / Max / Min of three broadcasting inputs */
    struct npu_tensor *a = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(3), D(1)), -5, 5);
    struct npu_tensor *b = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(4)), -5, 5);
    struct npu_tensor *c = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(2), D(1), D(4)), -5, 5);
    struct npu_tensor *o = tt(NPU_DTYPE_FP32, 3, D(2), D(3), D(4));
    struct npu_tensor *v3[3] = {a, b, c}, *vo[1] = {o};
    enum npu_op vops[4] = {NPU_OP_SUM, NPU_OP_MEAN, NPU_OP_MAX, NPU_OP_MIN};
    for (int k = 0; k < 4; k++) {
        CHECK_EQ_INT(NPU_OK, run2(vops[k], NULL, 3, v3, 1, vo));
        double worst = 0;
        int64_t idx[3];
        for (int64_t e = 0; e < tt_n(o); e++) {
            tt_unravel(e, 3, o->dims, idx);
            double p = tt_get(a, tt_bcast_index(a, 3, idx)),
                   q = tt_get(b, tt_bcast_index(b, 3, idx));
            double r = tt_get(c, tt_bcast_index(c, 3, idx)), w;
            switch (k) {
            case 0: w = p + q + r; break;
            case 1: w = (p + q + r) / 3; break;
            case 2: w = fmax(p, fmax(q, r)); break;
            default: w = fmin(p, fmin(q, r)); break;
            }
            worst = fmax(worst, fabs(tt_get(o, e) - w));
        }
        CHECK(worst < 1e-5);
    }
    /* a single input is a copy; an output that is not the broadcast is rejected */
    struct npu_tensor *o1 = tt(NPU_DTYPE_FP32, 2, D(3), D(1)), *v1[1] = {a}, *vo1[1] = {o1};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SUM, NULL, 1, v1, 1, vo1));
    CHECK(tt_same_bytes(a, o1));
    struct npu_tensor *bad_o = tt(NPU_DTYPE_FP32, 3, D(2), D(3), D(5)), *vb[1] = {bad_o};
    npu_log_set_level((enum npu_log_level) - 1);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_SUM, NULL, 3, v3, 1, vb));
    npu_log_set_level(NPU_LOG_WARN);
    tt_free(a), tt_free(b), tt_free(c), tt_free(o), tt_free(o1), tt_free(bad_o);

    /* Sum of four fp32 operands of the output's shape (the decode step's residual Sum, one
     * pass): added in the operands' order, ((x0 + x1) + x2) + x3 in fp32, as the pairwise
     * passes were (1e8 + 1 rounds to 1e8, so other orders give 0 or 2 where this gives 1);
     * Mean of such operands still divides */
    {
        const float sv[4][5] = {{1e8f, 1, 2, -3, 0.1f},
                                {1, 1e8f, 0.5f, 4, 0.2f},
                                {-1e8f, -1e8f, 0.25f, -1, 0.3f},
                                {1, 1, 0.125f, 7, 0.4f}};
        struct npu_tensor *s4[4], *so = tt(NPU_DTYPE_FP32, 2, D(1), D(5)), *svo[1] = {so};
        for (int i = 0; i < 4; i++) {
            s4[i] = tt(NPU_DTYPE_FP32, 2, D(1), D(5));
            memcpy(s4[i]->data, sv[i], sizeof(sv[i]));
        }
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SUM, NULL, 4, s4, 1, svo));
        int wrong = 0;
        for (int e = 0; e < 5; e++) {
            float w = sv[0][e];
            for (int i = 1; i < 4; i++)
                w += sv[i][e];
            wrong += ((const float *)so->data)[e] != w;
        }
        CHECK_EQ_INT(0, wrong);
        CHECK(((const float *)so->data)[0] == 1 && ((const float *)so->data)[1] == 1);
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_MEAN, NULL, 4, s4, 1, svo));
        CHECK(fabs(((const float *)so->data)[4] - 0.25) < 1e-6);
        for (int i = 0; i < 4; i++)
            tt_free(s4[i]);
        tt_free(so);
    }

    /* PRelu with a per-channel slope [C,1,1] */
    x = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(2), D(3), D(4), D(5)), -5, 5);
    struct npu_tensor *sl = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(3), D(1), D(1)), 0, 1);
    y = tt(NPU_DTYPE_FP32, 4, D(2), D(3), D(4), D(5));
    struct npu_tensor *pin[2] = {x, sl}, *pout[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_PRELU, NULL, 2, pin, 1, pout));
    int bad = 0;
    for (int64_t e = 0; e < tt_n(x); e++) {
        double v = tt_get(x, e), s = tt_get(sl, (e / 20) % 3);
        bad += tt_get(y, e) != (double)(float)(v < 0 ? (float)v * (float)s : v);
    }
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(sl), tt_free(y);
}

/* ---- errors -------------------------------------------------------------------------------- */

static void
test_errors(void)
{
    struct npu_tensor *a = tt(NPU_DTYPE_FP32, 2, D(2), D(3)),
                      *b = tt(NPU_DTYPE_FP32, 2, D(2), D(4));
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 2, D(2), D(3));
    struct npu_tensor *in[2] = {a, b}, *out[1] = {y};
    npu_log_set_level((enum npu_log_level) - 1); /* the errors below are expected */
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_ADD, NULL, 2, in, 1, out));
    in[1] = a;
    struct npu_tensor *wrong = tt(NPU_DTYPE_FP32, 2, D(3), D(2));
    out[0] = wrong;
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_ADD, NULL, 2, in, 1, out));
    /* And on floats is not a thing */
    out[0] = tt(NPU_DTYPE_BOOL, 2, D(2), D(3));
    CHECK_EQ_INT(NPU_ERR_UNSUPPORTED, run_op(tctx1, NPU_OP_AND, NULL, 2, in, 1, out));
    tt_free(out[0]);
    /* missing required input, too many inputs, NULL context, unknown op */
    struct npu_tensor *nul[2] = {a, NULL};
    out[0] = y;
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_ADD, NULL, 2, nul, 1, out));
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_RELU, NULL, 2, in, 1, out));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_cpu_run(NULL, NPU_OP_ADD, NULL,
                                              (const struct npu_tensor *const *)in, 2, out, 1));
    CHECK_EQ_INT(NPU_ERR_UNSUPPORTED, run_op(tctx1, NPU_OP_NONE, NULL, 2, in, 1, out));
    CHECK(!npu_cpu_supports(NPU_OP_COUNT));
    for (int op = 1; op < NPU_OP_COUNT; op++)
        if (strncmp(npu_op_name((enum npu_op)op), "rk.", 3)) /* NPU back end's lowered ops */
            CHECK(npu_cpu_supports((enum npu_op)op));
    /* negative dims and missing data are refused before any kernel runs */
    a->dims[0] = -1;
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_RELU, NULL, 1, in, 1, out));
    a->dims[0] = 2;
    void *keep = a->data;
    a->data = NULL;
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_RELU, NULL, 1, in, 1, out));
    a->data = keep;
    npu_log_set_level(NPU_LOG_WARN);
    tt_free(a), tt_free(b), tt_free(y), tt_free(wrong);
}

int
main(void)
{
    tctx_init();
    test_broadcasting();
    test_integers();
    test_unary();
    test_fp16();
    test_cast();
    test_where_clip_variadic();
    test_errors();
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-elementwise");
}
