/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-elementwise.c: the elementwise ops (binary with numpy broadcasting,
 * variadic Sum/Mean/Max/Min, Where, PRelu, and the unary activations), the
 * vector exp helpers that Softmax and Attention share, and the fused
 * activations of Conv/Gemm/MatMul.
 *
 * Every op is a table of typed inner loops indexed by dtype; the loops are
 * written so that GCC vectorises them (stride-0/1 variants, no calls in the
 * fp32 hot loops except where libm is the accurate choice). Integer
 * arithmetic wraps (computed in unsigned types: no UB), integer division and
 * remainder by zero give 0, INT_MIN / -1 wraps to INT_MIN.
 */
#include "npu-cpu-internal.h"

struct ew_param {
    double alpha, beta, gamma;
    int flag;
};

/* X(suffix, C type, wrap type, dtype) */
#define FLOAT_TYPES(X, ...)                                                                        \
    X(f32, float, float, FP32, __VA_ARGS__) X(f64, double, double, FP64, __VA_ARGS__)
#define SINT_TYPES(X, ...)                                                                         \
    X(i8, int8_t, uint32_t, INT8, __VA_ARGS__)                                                     \
    X(i16, int16_t, uint32_t, INT16, __VA_ARGS__)                                                  \
    X(i32, int32_t, uint32_t, INT32, __VA_ARGS__) X(i64, int64_t, uint64_t, INT64, __VA_ARGS__)
#define UINT_TYPES(X, ...)                                                                         \
    X(u8, uint8_t, uint32_t, UINT8, __VA_ARGS__)                                                   \
    X(u16, uint16_t, uint32_t, UINT16, __VA_ARGS__)                                                \
    X(u32, uint32_t, uint32_t, UINT32, __VA_ARGS__)                                                \
    X(u64, uint64_t, uint64_t, UINT64, __VA_ARGS__)
#define INT_TYPES(X, ...) SINT_TYPES(X, __VA_ARGS__) UINT_TYPES(X, __VA_ARGS__)
#define NUM_TYPES(X, ...) FLOAT_TYPES(X, __VA_ARGS__) INT_TYPES(X, __VA_ARGS__)

/* ---- binary inner loops --------------------------------------------------------------------- */

#define BIN_FN(name, TI, WI, TO, EXPR)                                                             \
    static void name(void *out, const void *const *ins, const int64_t *str, int64_t n,             \
                     const void *param)                                                            \
    {                                                                                              \
        typedef TI T_;                                                                             \
        typedef WI W_ __attribute__((unused));                                                     \
        const struct ew_param *p = param;                                                          \
        (void)p;                                                                                   \
        TO *o = out;                                                                               \
        const T_ *a = ins[0], *b = ins[1];                                                         \
        if (str[0] && str[1]) {                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T_ x = a[i], y = b[i];                                                             \
                o[i] = (TO)(EXPR);                                                                 \
            }                                                                                      \
        } else if (str[1]) {                                                                       \
            T_ x = a[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T_ y = b[i];                                                                       \
                o[i] = (TO)(EXPR);                                                                 \
            }                                                                                      \
        } else if (str[0]) {                                                                       \
            T_ y = b[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T_ x = a[i];                                                                       \
                o[i] = (TO)(EXPR);                                                                 \
            }                                                                                      \
        } else {                                                                                   \
            T_ x = a[0], y = b[0];                                                                 \
            TO v = (TO)(EXPR);                                                                     \
            for (int64_t i = 0; i < n; i++)                                                        \
                o[i] = v;                                                                          \
        }                                                                                          \
    }

#define BIN_INST(sfx, T, W, DT, op, EXPR) BIN_FN(op##_##sfx, T, W, T, EXPR)
#define CMP_INST(sfx, T, W, DT, op, EXPR) BIN_FN(op##_##sfx, T, W, uint8_t, EXPR)
#define BIN_ROW(sfx, T, W, DT, op, ...) [NPU_DTYPE_##DT] = op##_##sfx,

static inline double
mod_floored(double x, double y)
{
    double r = fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}

/* add/sub/mul wrap for integers (unsigned arithmetic), plain for floats */
NUM_TYPES(BIN_INST, add, (W_)x + (W_)y)
NUM_TYPES(BIN_INST, sub, (W_)x - (W_)y)
NUM_TYPES(BIN_INST, mul, (W_)x *(W_)y)
FLOAT_TYPES(BIN_INST, div, x / y)
SINT_TYPES(BIN_INST, div, y == 0 ? 0 : y == -1 ? (T_)(0 - (W_)x) : (T_)(x / y))
UINT_TYPES(BIN_INST, div, y == 0 ? 0 : x / y)
FLOAT_TYPES(BIN_INST, mod, p->flag ? fmod(x, y) : mod_floored(x, y))
SINT_TYPES(BIN_INST, mod,
           (y == 0 || y == -1) ? 0
           : p->flag           ? x % y
                               : ((x % y != 0 && ((x % y < 0) != (y < 0))) ? x % y + y : x % y))
UINT_TYPES(BIN_INST, mod, y == 0 ? 0 : x % y)
/* numpy maximum/minimum: NaN wins */
NUM_TYPES(BIN_INST, max, (x != x || x > y) ? x : y)
NUM_TYPES(BIN_INST, min, (x != x || x < y) ? x : y)
FLOAT_TYPES(BIN_INST, prelu, x < 0 ? (T_)((W_)x * (W_)y) : x)
SINT_TYPES(BIN_INST, prelu, x < 0 ? (T_)((W_)x * (W_)y) : x)
UINT_TYPES(BIN_INST, prelu, ((void)y, x))
NUM_TYPES(CMP_INST, eq, x == y)
NUM_TYPES(CMP_INST, lt, x < y)
NUM_TYPES(CMP_INST, gt, x > y)
NUM_TYPES(CMP_INST, le, x <= y)
NUM_TYPES(CMP_INST, ge, x >= y)
INT_TYPES(BIN_INST, band, x &y)
INT_TYPES(BIN_INST, bor, x | y)
INT_TYPES(BIN_INST, bxor, x ^ y)
BIN_FN(and_b, uint8_t, uint8_t, uint8_t, (x != 0) & (y != 0))
BIN_FN(or_b, uint8_t, uint8_t, uint8_t, (x != 0) | (y != 0))
BIN_FN(xor_b, uint8_t, uint8_t, uint8_t, (x != 0) ^ (y != 0))
BIN_FN(eq_b, uint8_t, uint8_t, uint8_t, (x != 0) == (y != 0))

#define BIN_TABLE(op, TYPES)                                                                       \
    static const cpu_bc_fn op##_tab[NPU_DTYPE_COUNT] = {TYPES(BIN_ROW, op)};
BIN_TABLE(add, NUM_TYPES)
BIN_TABLE(sub, NUM_TYPES)
BIN_TABLE(mul, NUM_TYPES)
BIN_TABLE(div, NUM_TYPES)
BIN_TABLE(mod, NUM_TYPES)
BIN_TABLE(max, NUM_TYPES)
BIN_TABLE(min, NUM_TYPES)
BIN_TABLE(prelu, NUM_TYPES)
BIN_TABLE(lt, NUM_TYPES)
BIN_TABLE(gt, NUM_TYPES)
BIN_TABLE(le, NUM_TYPES)
BIN_TABLE(ge, NUM_TYPES)
static const cpu_bc_fn eq_tab[NPU_DTYPE_COUNT] = {NUM_TYPES(BIN_ROW, eq)[NPU_DTYPE_BOOL] = eq_b};
static const cpu_bc_fn and_tab[NPU_DTYPE_COUNT] = {[NPU_DTYPE_BOOL] = and_b};
BIN_TABLE(band, INT_TYPES)
BIN_TABLE(bor, INT_TYPES)
BIN_TABLE(bxor, INT_TYPES)
static const cpu_bc_fn or_tab[NPU_DTYPE_COUNT] = {[NPU_DTYPE_BOOL] = or_b};
static const cpu_bc_fn xor_tab[NPU_DTYPE_COUNT] = {[NPU_DTYPE_BOOL] = xor_b};

/* out = a (op) b with full numpy broadcasting; out dtype is `odt`. */
static enum npu_status
binary(struct npu_cpu_ctx *ctx, const cpu_bc_fn *tab, const struct npu_tensor *a,
       const struct npu_tensor *b, struct npu_tensor *o, enum npu_dtype odt,
       const struct ew_param *p, bool exact)
{
    if (a->dtype != b->dtype)
        return KINVAL("operand dtypes differ (%s and %s)", npu_dtype_name(a->dtype),
                      npu_dtype_name(b->dtype));
    cpu_bc_fn fn = tab[a->dtype];
    if (!fn)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(a->dtype));
    if (o->dtype != odt)
        return KINVAL("output dtype %s, expected %s", npu_dtype_name(o->dtype),
                      npu_dtype_name(odt));
    struct cpu_bcast bc;
    const struct npu_tensor *ins[2] = {a, b};
    CPU_TRY(cpu_bcast_plan(ctx, &bc, o, ins, 2, exact));
    const void *ip[2] = {a->data, b->data};
    size_t sz[2] = {cpu_esize(a), cpu_esize(b)};
    cpu_bcast_run(ctx, &bc, o->data, cpu_esize(o), ip, sz, fn, p);
    return NPU_OK;
}

#define SIMPLE_BINARY(kname, tab, odt_expr)                                                        \
    enum npu_status kname(CPU_KERNEL_ARGS)                                                         \
    {                                                                                              \
        struct ew_param p = {0};                                                                   \
        return binary(ctx, tab, in[0], in[1], out[0], odt_expr, &p, true);                         \
    }
SIMPLE_BINARY(cpu_k_add, add_tab, in[0]->dtype)
SIMPLE_BINARY(cpu_k_sub, sub_tab, in[0]->dtype)
SIMPLE_BINARY(cpu_k_mul, mul_tab, in[0]->dtype)
SIMPLE_BINARY(cpu_k_div, div_tab, in[0]->dtype)
SIMPLE_BINARY(cpu_k_equal, eq_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_less, lt_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_greater, gt_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_less_equal, le_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_greater_equal, ge_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_and, and_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_or, or_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_xor, xor_tab, NPU_DTYPE_BOOL)
SIMPLE_BINARY(cpu_k_bitwise_and, band_tab, in[0]->dtype)
SIMPLE_BINARY(cpu_k_bitwise_or, bor_tab, in[0]->dtype)
SIMPLE_BINARY(cpu_k_bitwise_xor, bxor_tab, in[0]->dtype)

enum npu_status
cpu_k_mod(CPU_KERNEL_ARGS)
{
    struct ew_param p = {.flag = npu_attrs_int(attrs, "fmod", 0) != 0};
    return binary(ctx, mod_tab, in[0], in[1], out[0], in[0]->dtype, &p, true);
}

enum npu_status
cpu_k_prelu(CPU_KERNEL_ARGS)
{
    /* slope broadcasts to X (unidirectional), so Y has X's shape */
    if (!cpu_same_dims(in[0], out[0]))
        return KINVAL("output shape differs from X");
    struct ew_param p = {0};
    return binary(ctx, prelu_tab, in[0], in[1], out[0], in[0]->dtype, &p, false);
}

/* ---- Pow: X and Y may differ in type; the result has X's type ------------------------------- */

#define POWI_FN(sfx, T, W, DT, SIGNED)                                                             \
    static void powi_##sfx(void *out, const void *const *ins, const int64_t *str, int64_t n,       \
                           const void *param)                                                      \
    {                                                                                              \
        T *o = out;                                                                                \
        const T *a = ins[0];                                                                       \
        const int64_t *b = ins[1];                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = a[i * str[0]];                                                                   \
            int64_t e = b[i * str[1]];                                                             \
            if (e < 0) {                                                                           \
                /* 1/x^|e| truncates to 0 except for x = 1 or -1 (x = 0: defined as 0) */          \
                o[i] = (T)(x == 1 ? 1 : (SIGNED && x == (T)-1) ? ((e & 1) ? x : 1) : 0);           \
                continue;                                                                          \
            }                                                                                      \
            W r = 1, base = (W)x;                                                                  \
            uint64_t u = (uint64_t)e;                                                              \
            while (u) {                                                                            \
                if (u & 1)                                                                         \
                    r *= base;                                                                     \
                base *= base;                                                                      \
                u >>= 1;                                                                           \
            }                                                                                      \
            o[i] = (T)r;                                                                           \
        }                                                                                          \
    }
SINT_TYPES(POWI_FN, 1)
UINT_TYPES(POWI_FN, 0)

#define POWF_FN(sfx, T, W, DT, ...)                                                                \
    static void powf_##sfx(void *out, const void *const *ins, const int64_t *str, int64_t n,       \
                           const void *param)                                                      \
    {                                                                                              \
        T *o = out;                                                                                \
        const T *a = ins[0], *b = ins[1];                                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = (T)pow(a[i * str[0]], b[i * str[1]]);                                           \
    }
static void
powf_f32(void *out, const void *const *ins, const int64_t *str, int64_t n, const void *param)
{
    float *o = out;
    const float *a = ins[0], *b = ins[1];
    if (!str[1] && b[0] == 2.0f) {
        for (int64_t i = 0; i < n; i++)
            o[i] = a[i * str[0]] * a[i * str[0]];
        return;
    }
    for (int64_t i = 0; i < n; i++)
        o[i] = powf(a[i * str[0]], b[i * str[1]]);
}
POWF_FN(f64, double, double, FP64)

/* integer base, floating exponent: through double, saturated back */
#define POWIF_FN(sfx, T, W, DT, SAT)                                                               \
    static void powif_##sfx(void *out, const void *const *ins, const int64_t *str, int64_t n,      \
                            const void *param)                                                     \
    {                                                                                              \
        T *o = out;                                                                                \
        const T *a = ins[0];                                                                       \
        const double *b = ins[1];                                                                  \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = SAT(pow((double)a[i * str[0]], b[i * str[1]]));                                 \
    }
POWIF_FN(i8, int8_t, , , cpu_sat_i8)
POWIF_FN(i16, int16_t, , , cpu_sat_i16)
POWIF_FN(i32, int32_t, , , cpu_sat_i32)
POWIF_FN(i64, int64_t, , , cpu_sat_i64)
POWIF_FN(u8, uint8_t, , , cpu_sat_u8)
POWIF_FN(u16, uint16_t, , , cpu_sat_u16)
POWIF_FN(u32, uint32_t, , , cpu_sat_u32)
POWIF_FN(u64, uint64_t, , , cpu_sat_u64)

#define POW_ROW(sfx, T, W, DT, pre) [NPU_DTYPE_##DT] = pre##_##sfx,
static const cpu_bc_fn powi_tab[NPU_DTYPE_COUNT] = {INT_TYPES(POW_ROW, powi)};
static const cpu_bc_fn powif_tab[NPU_DTYPE_COUNT] = {INT_TYPES(POW_ROW, powif)};
static const cpu_bc_fn powf_tab[NPU_DTYPE_COUNT] = {FLOAT_TYPES(POW_ROW, powf)};

enum npu_status
cpu_k_pow(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *y = in[1];
    struct npu_tensor *o = out[0];
    if (o->dtype != x->dtype)
        return KINVAL("output dtype must be X's (%s)", npu_dtype_name(x->dtype));
    if (y->dtype == NPU_DTYPE_BOOL || x->dtype == NPU_DTYPE_BOOL)
        return KUNSUP("bool operands are not supported");
    /* exponent in the type the inner loop wants */
    enum npu_dtype edt;
    const cpu_bc_fn *tab;
    if (npu_dtype_is_float(x->dtype)) {
        edt = x->dtype;
        tab = powf_tab;
    } else if (npu_dtype_is_float(y->dtype)) {
        edt = NPU_DTYPE_FP64;
        tab = powif_tab;
    } else {
        edt = NPU_DTYPE_INT64;
        tab = powi_tab;
    }
    if (!tab[x->dtype])
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    struct npu_tensor ye = *y;
    void *tmp = NULL;
    if (y->dtype != edt) {
        tmp = cpu_convert_alloc(y, edt);
        if (!tmp)
            return KNOMEM();
        ye.dtype = edt;
        ye.data = tmp;
    }
    struct cpu_bcast bc;
    const struct npu_tensor *ins[2] = {x, &ye};
    enum npu_status st = cpu_bcast_plan(ctx, &bc, o, ins, 2, true);
    if (st == NPU_OK) {
        const void *ip[2] = {x->data, ye.data};
        size_t sz[2] = {cpu_esize(x), npu_dtype_size(edt)};
        cpu_bcast_run(ctx, &bc, o->data, cpu_esize(o), ip, sz, tab[x->dtype], NULL);
    }
    free(tmp);
    return st;
}

/* ---- variadic Max/Min/Sum/Mean -------------------------------------------------------------- */

/* whether every input has the output's dims (no broadcast) */
static bool
same_shape_all(const struct npu_tensor *const *in, int nin, const struct npu_tensor *o)
{
    for (int i = 0; i < nin; i++) {
        if (in[i]->ndim != o->ndim)
            return false;
        for (int d = 0; d < o->ndim; d++)
            if (in[i]->dims[d] != o->dims[d])
                return false;
    }
    return true;
}

static enum npu_status
variadic(struct npu_cpu_ctx *ctx, const cpu_bc_fn *tab, const struct npu_tensor *const *in, int nin,
         struct npu_tensor *o, bool mean)
{
    for (int i = 0; i < nin; i++) {
        if (!in[i])
            return KINVAL("input %d is missing", i);
        if (in[i]->dtype != o->dtype)
            return KINVAL("input %d has dtype %s, output %s", i, npu_dtype_name(in[i]->dtype),
                          npu_dtype_name(o->dtype));
    }
    if (!tab[o->dtype])
        return KUNSUP("dtype %s is not supported", npu_dtype_name(o->dtype));
    /* the output must be the multidirectional broadcast of all inputs */
    for (int d = 0; d < o->ndim; d++) {
        int64_t bd = 1;
        for (int i = 0; i < nin; i++) {
            int id = d - (o->ndim - in[i]->ndim);
            int64_t dim = id >= 0 ? in[i]->dims[id] : 1;
            if (id >= 0 && in[i]->ndim > o->ndim)
                return KINVAL("input %d has a higher rank than the output", i);
            if (dim != 1) {
                if (bd != 1 && bd != dim)
                    return KINVAL("inputs do not broadcast (dim %d)", d);
                bd = dim;
            }
        }
        if (bd != o->dims[d])
            return KINVAL("output dim %d is %lld, the inputs broadcast to %lld", d,
                          (long long)o->dims[d], (long long)bd);
    }
    struct ew_param p = {0};
    struct cpu_bcast bc;
    if (tab == add_tab && !mean && o->dtype == NPU_DTYPE_FP32 && nin > 2 &&
        same_shape_all(in, nin, o)) {
        /* Sum of fp32 operands of the output's shape (a residual stream and a split
         * product's partial sums): one pass that reads every operand once, added in the
         * operands' order as the pairwise passes below would */
        const int64_t n = cpu_numel(o);
        float *y = o->data;
        for (int64_t e = 0; e < n; e++) {
            float acc = ((const float *)in[0]->data)[e];
            for (int i = 1; i < nin; i++)
                acc += ((const float *)in[i]->data)[e];
            y[e] = acc;
        }
        return NPU_OK;
    }
    if (nin == 1) {
        CPU_TRY(cpu_bcast_plan(ctx, &bc, o, in, 1, true));
        memcpy(o->data, in[0]->data, (size_t)cpu_numel(o) * cpu_esize(o));
    } else {
        CPU_TRY(cpu_bcast_plan(ctx, &bc, o, in, 2, false));
        const void *ip[2] = {in[0]->data, in[1]->data};
        size_t sz[2] = {cpu_esize(o), cpu_esize(o)};
        cpu_bcast_run(ctx, &bc, o->data, cpu_esize(o), ip, sz, tab[o->dtype], &p);
        for (int i = 2; i < nin; i++) {
            const struct npu_tensor *pair[2] = {o, in[i]};
            CPU_TRY(cpu_bcast_plan(ctx, &bc, o, pair, 2, false));
            ip[0] = o->data;
            ip[1] = in[i]->data;
            cpu_bcast_run(ctx, &bc, o->data, cpu_esize(o), ip, sz, tab[o->dtype], &p);
        }
    }
    if (mean) {
        int64_t n = cpu_numel(o);
        if (o->dtype == NPU_DTYPE_FP32) {
            float *v = o->data;
            for (int64_t i = 0; i < n; i++)
                v[i] /= (float)nin;
        } else if (o->dtype == NPU_DTYPE_FP64) {
            double *v = o->data;
            for (int64_t i = 0; i < n; i++)
                v[i] /= nin;
        } else {
            return KUNSUP("Mean needs a float dtype, not %s", npu_dtype_name(o->dtype));
        }
    }
    return NPU_OK;
}

enum npu_status
cpu_k_max(CPU_KERNEL_ARGS)
{
    return variadic(ctx, max_tab, in, nin, out[0], false);
}
enum npu_status
cpu_k_min(CPU_KERNEL_ARGS)
{
    return variadic(ctx, min_tab, in, nin, out[0], false);
}
enum npu_status
cpu_k_sum(CPU_KERNEL_ARGS)
{
    return variadic(ctx, add_tab, in, nin, out[0], false);
}
enum npu_status
cpu_k_mean(CPU_KERNEL_ARGS)
{
    return variadic(ctx, add_tab, in, nin, out[0], true);
}

/* ---- Where: element-size based, any dtype --------------------------------------------------- */

#define WHERE_FN(bits)                                                                             \
    static void where_##bits(void *out, const void *const *ins, const int64_t *str, int64_t n,     \
                             const void *param)                                                    \
    {                                                                                              \
        uint##bits##_t *o = out;                                                                   \
        const uint8_t *c = ins[0];                                                                 \
        const uint##bits##_t *x = ins[1], *y = ins[2];                                             \
        if (str[0] && str[1] && str[2]) {                                                          \
            for (int64_t i = 0; i < n; i++)                                                        \
                o[i] = c[i] ? x[i] : y[i];                                                         \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                o[i] = c[i * str[0]] ? x[i * str[1]] : y[i * str[2]];                              \
        }                                                                                          \
    }
WHERE_FN(8)
WHERE_FN(16)
WHERE_FN(32)
WHERE_FN(64)

enum npu_status
cpu_k_where(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *c = in[0], *x = in[1], *y = in[2];
    struct npu_tensor *o = out[0];
    if (c->dtype != NPU_DTYPE_BOOL)
        return KINVAL("condition must be bool, not %s", npu_dtype_name(c->dtype));
    if (x->dtype != y->dtype || o->dtype != x->dtype)
        return KINVAL("X, Y and output dtypes differ");
    cpu_bc_fn fn;
    switch (cpu_esize(x)) {
    case 1: fn = where_8; break;
    case 2: fn = where_16; break;
    case 4: fn = where_32; break;
    default: fn = where_64; break;
    }
    struct cpu_bcast bc;
    CPU_TRY(cpu_bcast_plan(ctx, &bc, o, in, 3, true));
    const void *ip[3] = {c->data, x->data, y->data};
    size_t sz[3] = {1, cpu_esize(x), cpu_esize(x)};
    cpu_bcast_run(ctx, &bc, o->data, cpu_esize(o), ip, sz, fn, NULL);
    return NPU_OK;
}

/* ---- vector helpers (Softmax, Attention, activations) --------------------------------------- */

CPU_HOT void
cpu_vexp(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = cpu_expf(x[i]);
}

CPU_HOT float
cpu_vexp_sum(const float *x, float *y, int64_t n, float m)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            float e = cpu_expf(x[i + k] - m);
            y[i + k] = e;
            acc[k] += e;
        }
    for (int k = 0; i < n; i++, k++) {
        float e = cpu_expf(x[i] - m);
        y[i] = e;
        acc[k] += e;
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

CPU_HOT float
cpu_vmax(const float *x, int64_t n)
{
    float acc[8];
    int64_t i = 0;
    for (int k = 0; k < 8; k++)
        acc[k] = -INFINITY;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
    float m = -INFINITY;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    for (int k = 0; k < 8; k++)
        m = acc[k] > m ? acc[k] : m;
    return m;
}

CPU_HOT void
cpu_vscale(float *x, int64_t n, float s)
{
    for (int64_t i = 0; i < n; i++)
        x[i] *= s;
}

/* ---- unary ---------------------------------------------------------------------------------- */

typedef void (*un_fn)(void *out, const void *x, int64_t n, const struct ew_param *p);

#define UN_FNW(name, TI, WI, TO, EXPR)                                                             \
    static void name(void *out, const void *in_, int64_t n, const struct ew_param *p)              \
    {                                                                                              \
        typedef TI T_;                                                                             \
        typedef WI W_ __attribute__((unused));                                                     \
        (void)p;                                                                                   \
        const TI *a = in_;                                                                         \
        TO *o = out;                                                                               \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T_ x = a[i];                                                                           \
            o[i] = (TO)(EXPR);                                                                     \
        }                                                                                          \
    }
#define UN_FN(name, TI, TO, EXPR) UN_FNW(name, TI, TI, TO, EXPR)
#define UN_HOT_FN(name, TI, TO, EXPR) CPU_HOT UN_FN(name, TI, TO, EXPR)
#define UN_ROW(sfx, T, W, DT, op) [NPU_DTYPE_##DT] = op##_##sfx,
#define UN_INST(sfx, T, W, DT, op, EXPR) UN_FNW(op##_##sfx, T, W, T, EXPR)

/* x * sigmoid(x); -inf gives -0 (the limit) rather than -inf * 0 */
static inline float
siluf_(float x)
{
    float y = x * cpu_sigmoidf(x);
    return x < -200.0f ? -0.0f : y;
}

/* tanh-form GELU as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): algebraically equal to
 * 0.5 x (1 + tanh u) and free of the cancellation near x = 0 */
static inline float
gelu_tanhf_(float x)
{
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x / (1.0f + cpu_expf(-2.0f * u));
}
static inline double
gelu_tanh_d(double x)
{
    double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

/* fp32 */
UN_FN(sqrt_f32, float, float, sqrtf(x))
UN_HOT_FN(exp_f32, float, float, cpu_expf(x))
UN_FN(log_f32, float, float, logf(x))
UN_FN(abs_f32, float, float, fabsf(x))
UN_FN(neg_f32, float, float, -x)
UN_FN(recip_f32, float, float, 1.0f / x)
UN_FN(relu_f32, float, float, x < 0 ? 0.0f : x)
UN_FN(lrelu_f32, float, float, x < 0 ? (float)p->alpha * x : x)
UN_HOT_FN(sigmoid_f32, float, float, cpu_sigmoidf(x))
UN_HOT_FN(tanh_f32, float, float, cpu_tanhf(x))
UN_FN(hsig_f32, float, float,
      ((float)p->alpha * x + (float)p->beta) < 0   ? 0.0f
      : ((float)p->alpha * x + (float)p->beta) > 1 ? 1.0f
                                                   : (float)p->alpha * x + (float)p->beta)
UN_FN(hswish_f32, float, float,
      x <= -3.0f  ? -0.0f * x
      : x >= 3.0f ? x
                  : x * (x * (1.0f / 6.0f) + 0.5f))
UN_FN(elu_f32, float, float, x < 0 ? (float)p->alpha * expm1f(x) : x)
UN_FN(selu_f32, float, float,
      x > 0 ? (float)p->gamma * x : (float)p->gamma * ((float)p->alpha * expm1f(x)))
UN_HOT_FN(gelu_f32, float, float, cpu_geluf(x))
UN_HOT_FN(gelutanh_f32, float, float, gelu_tanhf_(x))
UN_FN(softplus_f32, float, float, x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)))
/* Mish: x * tanh(softplus(x)), the softplus in double so large x stay exact */
UN_FN(mish_f32, float, float,
      (float)((double)x *tanh(x > 0 ? x + log1p(exp(-(double)x)) : log1p(exp((double)x)))))
UN_HOT_FN(erf_f32, float, float, cpu_erff(x))
UN_FN(floor_f32, float, float, floorf(x))
UN_FN(ceil_f32, float, float, ceilf(x))
UN_FN(round_f32, float, float, rintf(x)) /* default rounding mode: half to even */
UN_FN(sign_f32, float, float, x > 0 ? 1.0f : x < 0 ? -1.0f : x)
UN_FN(sin_f32, float, float, sinf(x))
UN_FN(cos_f32, float, float, cosf(x))
UN_HOT_FN(silu_f32, float, float, siluf_(x))

/* fp64 */
UN_FN(sqrt_f64, double, double, sqrt(x))
UN_FN(exp_f64, double, double, exp(x))
UN_FN(log_f64, double, double, log(x))
UN_FN(abs_f64, double, double, fabs(x))
UN_FN(neg_f64, double, double, -x)
UN_FN(recip_f64, double, double, 1.0 / x)
UN_FN(relu_f64, double, double, x < 0 ? 0.0 : x)
UN_FN(lrelu_f64, double, double, x < 0 ? p->alpha * x : x)
UN_FN(sigmoid_f64, double, double, x < 0 ? exp(x) / (1.0 + exp(x)) : 1.0 / (1.0 + exp(-x)))
UN_FN(tanh_f64, double, double, tanh(x))
UN_FN(hsig_f64, double, double,
      (p->alpha * x + p->beta) < 0   ? 0.0
      : (p->alpha * x + p->beta) > 1 ? 1.0
                                     : p->alpha * x + p->beta)
UN_FN(hswish_f64, double, double, x <= -3.0 ? -0.0 * x : x >= 3.0 ? x : x * (x / 6.0 + 0.5))
UN_FN(elu_f64, double, double, x < 0 ? p->alpha * expm1(x) : x)
UN_FN(selu_f64, double, double, x > 0 ? p->gamma * x : p->gamma * (p->alpha * expm1(x)))
UN_FN(gelu_f64, double, double, 0.5 * x * erfc(-x * 0.70710678118654752440))
UN_FN(gelutanh_f64, double, double, gelu_tanh_d(x))
UN_FN(softplus_f64, double, double, x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)))
UN_FN(mish_f64, double, double, x *tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))))
UN_FN(erf_f64, double, double, erf(x))
UN_FN(floor_f64, double, double, floor(x))
UN_FN(ceil_f64, double, double, ceil(x))
UN_FN(round_f64, double, double, rint(x))
UN_FN(sign_f64, double, double, x > 0 ? 1.0 : x < 0 ? -1.0 : x)
UN_FN(sin_f64, double, double, sin(x))
UN_FN(cos_f64, double, double, cos(x))
UN_FN(silu_f64, double, double,
      x < -750 ? -0.0
      : x < 0  ? x * exp(x) / (1.0 + exp(x))
               : x / (1.0 + exp(-x)))

/* integers: Abs, Neg, Relu, Sign (wrapping: abs(INT_MIN) = INT_MIN as in numpy) */
SINT_TYPES(UN_INST, abs, x < 0 ? (T_)(0 - (W_)x) : x)
UINT_TYPES(UN_INST, abs, x)
SINT_TYPES(UN_INST, neg, (T_)(0 - (W_)x))
SINT_TYPES(UN_INST, relu, x < 0 ? 0 : x)
UINT_TYPES(UN_INST, relu, x)
SINT_TYPES(UN_INST, sign, x > 0 ? 1 : x < 0 ? -1 : 0)
UINT_TYPES(UN_INST, sign, x > 0 ? 1 : 0)
UN_FN(not_b, uint8_t, uint8_t, x == 0)
INT_TYPES(UN_INST, bnot, (T_)~x)

#define F_ROWS(op) [NPU_DTYPE_FP32] = op##_f32, [NPU_DTYPE_FP64] = op##_f64
static const un_fn sqrt_tab[NPU_DTYPE_COUNT] = {F_ROWS(sqrt)};
static const un_fn exp_tab[NPU_DTYPE_COUNT] = {F_ROWS(exp)};
static const un_fn log_tab[NPU_DTYPE_COUNT] = {F_ROWS(log)};
static const un_fn abs_tab[NPU_DTYPE_COUNT] = {F_ROWS(abs), INT_TYPES(UN_ROW, abs)};
static const un_fn neg_tab[NPU_DTYPE_COUNT] = {F_ROWS(neg), SINT_TYPES(UN_ROW, neg)};
static const un_fn recip_tab[NPU_DTYPE_COUNT] = {F_ROWS(recip)};
static const un_fn relu_tab[NPU_DTYPE_COUNT] = {F_ROWS(relu), INT_TYPES(UN_ROW, relu)};
static const un_fn lrelu_tab[NPU_DTYPE_COUNT] = {F_ROWS(lrelu)};
static const un_fn sigmoid_tab[NPU_DTYPE_COUNT] = {F_ROWS(sigmoid)};
static const un_fn tanh_tab[NPU_DTYPE_COUNT] = {F_ROWS(tanh)};
static const un_fn hsig_tab[NPU_DTYPE_COUNT] = {F_ROWS(hsig)};
static const un_fn hswish_tab[NPU_DTYPE_COUNT] = {F_ROWS(hswish)};
static const un_fn elu_tab[NPU_DTYPE_COUNT] = {F_ROWS(elu)};
static const un_fn selu_tab[NPU_DTYPE_COUNT] = {F_ROWS(selu)};
static const un_fn gelu_tab[NPU_DTYPE_COUNT] = {F_ROWS(gelu)};
static const un_fn gelutanh_tab[NPU_DTYPE_COUNT] = {F_ROWS(gelutanh)};
static const un_fn softplus_tab[NPU_DTYPE_COUNT] = {F_ROWS(softplus)};
static const un_fn erf_tab[NPU_DTYPE_COUNT] = {F_ROWS(erf)};
static const un_fn floor_tab[NPU_DTYPE_COUNT] = {F_ROWS(floor)};
static const un_fn ceil_tab[NPU_DTYPE_COUNT] = {F_ROWS(ceil)};
static const un_fn round_tab[NPU_DTYPE_COUNT] = {F_ROWS(round)};
static const un_fn sign_tab[NPU_DTYPE_COUNT] = {F_ROWS(sign), INT_TYPES(UN_ROW, sign)};
static const un_fn sin_tab[NPU_DTYPE_COUNT] = {F_ROWS(sin)};
static const un_fn cos_tab[NPU_DTYPE_COUNT] = {F_ROWS(cos)};
static const un_fn silu_tab[NPU_DTYPE_COUNT] = {F_ROWS(silu)};
static const un_fn not_tab[NPU_DTYPE_COUNT] = {[NPU_DTYPE_BOOL] = not_b};
static const un_fn bnot_tab[NPU_DTYPE_COUNT] = {INT_TYPES(UN_ROW, bnot)};
static const un_fn mish_tab[NPU_DTYPE_COUNT] = {F_ROWS(mish)};

struct un_job {
    un_fn fn;
    const char *x;
    char *o;
    size_t isz, osz;
    const struct ew_param *p;
};

static void
un_task(void *arg, int64_t b, int64_t e, int tid)
{
    const struct un_job *j = arg;
    j->fn(j->o + (size_t)b * j->osz, j->x + (size_t)b * j->isz, e - b, j->p);
}

static enum npu_status
unary(struct npu_cpu_ctx *ctx, const un_fn *tab, const struct npu_tensor *x, struct npu_tensor *o,
      const struct ew_param *p, int64_t grain)
{
    un_fn fn = tab[x->dtype];
    if (!fn)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    CPU_TRY(cpu_check_out(ctx, o, x->dtype, x->ndim, x->dims));
    struct un_job j = {fn, x->data, o->data, cpu_esize(x), cpu_esize(o), p};
    cpu_parallel_for(ctx, cpu_numel(x), grain, un_task, &j);
    return NPU_OK;
}

/* grains: cheap ops need long chunks before a thread pays off, libm calls shorter ones */
#define CHEAP 32768
#define COSTLY 4096
#define UNARY(kname, tab, grain)                                                                   \
    enum npu_status kname(CPU_KERNEL_ARGS)                                                         \
    {                                                                                              \
        struct ew_param p = {0};                                                                   \
        return unary(ctx, tab, in[0], out[0], &p, grain);                                          \
    }
UNARY(cpu_k_sqrt, sqrt_tab, CHEAP)
UNARY(cpu_k_exp, exp_tab, COSTLY)
UNARY(cpu_k_log, log_tab, COSTLY)
UNARY(cpu_k_abs, abs_tab, CHEAP)
UNARY(cpu_k_neg, neg_tab, CHEAP)
UNARY(cpu_k_reciprocal, recip_tab, CHEAP)
UNARY(cpu_k_relu, relu_tab, CHEAP)
UNARY(cpu_k_sigmoid, sigmoid_tab, COSTLY)
UNARY(cpu_k_tanh, tanh_tab, COSTLY)
UNARY(cpu_k_hard_swish, hswish_tab, CHEAP)
UNARY(cpu_k_softplus, softplus_tab, COSTLY)
UNARY(cpu_k_erf, erf_tab, COSTLY)
UNARY(cpu_k_not, not_tab, CHEAP)
UNARY(cpu_k_bitwise_not, bnot_tab, CHEAP)
UNARY(cpu_k_mish, mish_tab, COSTLY)
UNARY(cpu_k_floor, floor_tab, CHEAP)
UNARY(cpu_k_ceil, ceil_tab, CHEAP)
UNARY(cpu_k_round, round_tab, CHEAP)
UNARY(cpu_k_sign, sign_tab, CHEAP)
UNARY(cpu_k_sin, sin_tab, COSTLY)
UNARY(cpu_k_cos, cos_tab, COSTLY)
UNARY(cpu_k_silu, silu_tab, COSTLY)
UNARY(cpu_k_gelu_tanh, gelutanh_tab, COSTLY)

enum npu_status
cpu_k_leaky_relu(CPU_KERNEL_ARGS)
{
    struct ew_param p = {.alpha = npu_attrs_float(attrs, "alpha", 0.01f)};
    return unary(ctx, lrelu_tab, in[0], out[0], &p, CHEAP);
}

enum npu_status
cpu_k_hard_sigmoid(CPU_KERNEL_ARGS)
{
    struct ew_param p = {.alpha = npu_attrs_float(attrs, "alpha", 0.2f),
                         .beta = npu_attrs_float(attrs, "beta", 0.5f)};
    return unary(ctx, hsig_tab, in[0], out[0], &p, CHEAP);
}

enum npu_status
cpu_k_elu(CPU_KERNEL_ARGS)
{
    struct ew_param p = {.alpha = npu_attrs_float(attrs, "alpha", 1.0f)};
    return unary(ctx, elu_tab, in[0], out[0], &p, COSTLY);
}

enum npu_status
cpu_k_selu(CPU_KERNEL_ARGS)
{
    struct ew_param p = {.alpha = npu_attrs_float(attrs, "alpha", 1.67326319217681884765625f),
                         .gamma = npu_attrs_float(attrs, "gamma", 1.05070102214813232421875f)};
    return unary(ctx, selu_tab, in[0], out[0], &p, COSTLY);
}

enum npu_status
cpu_k_gelu(CPU_KERNEL_ARGS)
{
    const char *approx = npu_attrs_string(attrs, "approximate", "none");
    struct ew_param p = {0};
    if (!strcmp(approx, "none"))
        return unary(ctx, gelu_tab, in[0], out[0], &p, COSTLY);
    if (!strcmp(approx, "tanh"))
        return unary(ctx, gelutanh_tab, in[0], out[0], &p, COSTLY);
    return KUNSUP("approximate=\"%s\" is not supported", approx);
}

/* ---- Clip: bounds are optional scalar inputs of X's type ------------------------------------ */

#define CLIP_FN(sfx, T, W, DT, ...)                                                                \
    static void clip_##sfx(void *out, const void *x_, int64_t n, const void *lo_, const void *hi_) \
    {                                                                                              \
        const T *x = x_;                                                                           \
        T *o = out;                                                                                \
        T lo = *(const T *)lo_, hi = *(const T *)hi_;                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = x[i] < lo ? lo : x[i];                                                           \
            o[i] = v > hi ? hi : v;                                                                \
        }                                                                                          \
    }
NUM_TYPES(CLIP_FN)
typedef void (*clip_fn)(void *out, const void *x, int64_t n, const void *lo, const void *hi);
#define CLIP_ROW(sfx, T, W, DT, ...) [NPU_DTYPE_##DT] = clip_##sfx,
static const clip_fn clip_tab[NPU_DTYPE_COUNT] = {NUM_TYPES(CLIP_ROW)};

struct clip_job {
    clip_fn fn;
    const char *x;
    char *o;
    size_t es;
    const void *lo, *hi;
};

static void
clip_task(void *arg, int64_t b, int64_t e, int tid)
{
    const struct clip_job *j = arg;
    j->fn(j->o + (size_t)b * j->es, j->x + (size_t)b * j->es, e - b, j->lo, j->hi);
}

/* the type's full range, as the default bounds */
static void
type_limits(enum npu_dtype dt, void *lo, void *hi)
{
    switch (dt) {
#define LIM(D, T, L, H)                                                                            \
    case NPU_DTYPE_##D:                                                                            \
        *(T *)lo = L;                                                                              \
        *(T *)hi = H;                                                                              \
        break;
        LIM(FP32, float, -INFINITY, INFINITY)
        LIM(FP64, double, -INFINITY, INFINITY)
        LIM(INT8, int8_t, INT8_MIN, INT8_MAX)
        LIM(INT16, int16_t, INT16_MIN, INT16_MAX)
        LIM(INT32, int32_t, INT32_MIN, INT32_MAX)
        LIM(INT64, int64_t, INT64_MIN, INT64_MAX)
        LIM(UINT8, uint8_t, 0, UINT8_MAX)
        LIM(UINT16, uint16_t, 0, UINT16_MAX)
        LIM(UINT32, uint32_t, 0, UINT32_MAX)
        LIM(UINT64, uint64_t, 0, UINT64_MAX)
#undef LIM
    default: break;
    }
}

enum npu_status
cpu_k_clip(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    clip_fn fn = clip_tab[x->dtype];
    if (!fn)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, x->dims));
    union {
        double d;
        int64_t i;
        uint64_t u;
        unsigned char b[8];
    } lo, hi;
    type_limits(x->dtype, &lo, &hi);
    for (int k = 1; k <= 2; k++) {
        const struct npu_tensor *b = k < nin ? in[k] : NULL;
        void *dst = k == 1 ? (void *)&lo : (void *)&hi;
        if (b && cpu_numel(b) > 0) {
            if (b->dtype != x->dtype)
                return KINVAL("%s has dtype %s, X %s", k == 1 ? "min" : "max",
                              npu_dtype_name(b->dtype), npu_dtype_name(x->dtype));
            if (cpu_numel(b) != 1)
                return KINVAL("%s must be a scalar", k == 1 ? "min" : "max");
            memcpy(dst, b->data, cpu_esize(b));
        } else if (!b && npu_attrs_find(attrs, k == 1 ? "min" : "max") &&
                   npu_dtype_is_float(x->dtype)) {
            /* opset < 11 form, kept for robustness */
            float v = npu_attrs_float(attrs, k == 1 ? "min" : "max", 0);
            cpu_convert(&v, NPU_DTYPE_FP32, dst, x->dtype, 1);
        }
    }
    struct clip_job j = {fn, x->data, out[0]->data, cpu_esize(x), &lo, &hi};
    cpu_parallel_for(ctx, cpu_numel(x), CHEAP, clip_task, &j);
    return NPU_OK;
}

/* ---- fused activations ---------------------------------------------------------------------- */

enum npu_status
cpu_act_parse(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, struct cpu_act_spec *act)
{
    static const struct {
        const char *name;
        enum cpu_act kind;
        float alpha, beta; /* defaults */
    } acts[] = {
        {"relu", CPU_ACT_RELU, 0, 0},
        {"leaky_relu", CPU_ACT_LEAKY_RELU, 0.01f, 0},
        {"clip", CPU_ACT_CLIP, -INFINITY, INFINITY},
        {"sigmoid", CPU_ACT_SIGMOID, 0, 0},
        {"tanh", CPU_ACT_TANH, 0, 0},
        {"gelu", CPU_ACT_GELU, 0, 0},
        {"gelu_tanh", CPU_ACT_GELU_TANH, 0, 0},
        {"silu", CPU_ACT_SILU, 0, 0},
        {"hard_swish", CPU_ACT_HARD_SWISH, 0, 0},
        {"hard_sigmoid", CPU_ACT_HARD_SIGMOID, 0.2f, 0.5f},
    };
    act->kind = CPU_ACT_NONE;
    act->alpha = act->beta = 0;
    const char *name = npu_attrs_string(attrs, "npu_act", NULL);
    if (!name || !*name || !strcmp(name, "none"))
        return NPU_OK;
    for (size_t i = 0; i < NPU_ARRAY_SIZE(acts); i++) {
        if (name[0] != acts[i].name[0] || strcmp(name, acts[i].name))
            continue;
        act->kind = acts[i].kind;
        act->alpha = npu_attrs_float(attrs, "npu_act_alpha", acts[i].alpha);
        act->beta = npu_attrs_float(attrs, "npu_act_beta", acts[i].beta);
        return NPU_OK;
    }
    return KUNSUP("fused activation npu_act=\"%s\" is not supported", name);
}

/* The fused activations (every Conv/Gemm/MatMul epilogue that is not in a kernel's registers)
 * are also compiled for x86-64-v4: 16 lanes. Each element is computed alone by the same
 * operations (FMA contracted in both), so the v3 and v4 clones give the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 &&           \
    !defined(NPU_CPU_NO_CLONES) && !defined(__SANITIZE_THREAD__)
#define ACT_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define ACT_CLONES CPU_HOT
#endif

ACT_CLONES void
cpu_act_apply(const struct cpu_act_spec *act, float *x, int64_t n)
{
    float a = act->alpha, b = act->beta;
    switch (act->kind) {
    case CPU_ACT_NONE: break;
    case CPU_ACT_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < 0 ? 0.0f : x[i];
        break;
    case CPU_ACT_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < 0 ? a * x[i] : x[i];
        break;
    case CPU_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < a ? a : x[i];
            x[i] = v > b ? b : v;
        }
        break;
    case CPU_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            x[i] = cpu_sigmoidf(x[i]);
        break;
    case CPU_ACT_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = cpu_tanhf(x[i]);
        break;
    case CPU_ACT_GELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = cpu_geluf(x[i]);
        break;
    case CPU_ACT_GELU_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = gelu_tanhf_(x[i]);
        break;
    case CPU_ACT_SILU:
        for (int64_t i = 0; i < n; i++)
            x[i] = siluf_(x[i]);
        break;
    case CPU_ACT_HARD_SWISH:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            x[i] = v <= -3.0f ? -0.0f * v : v >= 3.0f ? v : v * (v * (1.0f / 6.0f) + 0.5f);
        }
        break;
    case CPU_ACT_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) {
            float v = a * x[i] + b;
            v = v < 0 ? 0.0f : v;
            x[i] = v > 1 ? 1.0f : v;
        }
        break;
    }
}

/* ---- IsNaN, IsInf, Celu ------------------------------------------------------------------- */

/* IsNaN / IsInf (detect_negative, detect_positive): float input, bool output. */
static enum npu_status
float_class(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
            struct npu_tensor *y, bool inf)
{
    if (!npu_dtype_is_float(x->dtype))
        return KINVAL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
    CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_BOOL, x->ndim, x->dims));
    bool neg = npu_attrs_int(attrs, "detect_negative", 1) != 0;
    bool pos = npu_attrs_int(attrs, "detect_positive", 1) != 0;
    uint8_t *o = y->data;
    for (int64_t i = 0, n = cpu_numel(x); i < n; i++) {
        double v = cpu_scalar_f64(x, i);
        o[i] = inf ? (isinf(v) && (v > 0 ? pos : neg)) : v != v;
    }
    return NPU_OK;
}

enum npu_status
cpu_k_isnan(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    return float_class(ctx, attrs, in[0], out[0], false);
}

enum npu_status
cpu_k_isinf(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    return float_class(ctx, attrs, in[0], out[0], true);
}

/* Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); fp16 arrives widened. */
enum npu_status
cpu_k_celu(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *x = in[0];
    if (x->dtype != NPU_DTYPE_FP32)
        return KUNSUP("Celu of %s", npu_dtype_name(x->dtype));
    float alpha = npu_attrs_float(attrs, "alpha", 1.0f);
    if (alpha == 0)
        return KINVAL("alpha must not be 0");
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, x->dims));
    const float *a = x->data;
    float *o = out[0]->data;
    for (int64_t i = 0, n = cpu_numel(x); i < n; i++) {
        float v = a[i];
        o[i] = v > 0 ? v : alpha * expm1f(v / alpha);
    }
    return NPU_OK;
}
