/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-reduce.c: Reduce{Mean,Sum,Max,Min,Prod,L2,SumSquare} (opset 18:
 * axes as an optional input, keepdims, noop_with_empty_axes), ArgMax/ArgMin
 * (keepdims, select_last_index) and CumSum (exclusive, reverse).
 *
 * Reduced and kept dims are merged into runs first. fp32 Sum/Mean/Max/Min
 * over a trailing run (rows) or a middle run (stacked vectors) have
 * vectorised paths; everything else walks a precomputed list of reduced
 * offsets per output. Float sums accumulate in double (so the reference is
 * more accurate than the fp32 tensors it checks), integers in 64-bit with
 * two's-complement wrap. Reductions over an empty set give the identity:
 * 0 for sums, 1 for Prod, -inf/+inf (or the integer type's min/max) for
 * Max/Min, NaN for the Mean of nothing.
 */
#include "npu-cpu-internal.h"

enum red_kind {
    RED_SUM,
    RED_MEAN,
    RED_MAX,
    RED_MIN,
    RED_PROD,
    RED_L2,
    RED_SUMSQ,
    RED_L1,
    RED_LOGSUM,
    RED_LOGSUMEXP /* generic path only (the fast paths stop at RED_MIN) */
};

struct red_job {
    enum red_kind kind;
    const struct npu_tensor *x;
    struct npu_tensor *y;
    /* merged layout */
    int nk; /* kept runs */
    int64_t kdims[NPU_MAX_DIMS], kstr[NPU_MAX_DIMS];
    const int64_t *roff; /* offsets of the reduced sub-space */
    int64_t R;           /* its size */
    int64_t inner;       /* innermost kept run when contiguous (vector lanes) */
};

static inline double
ld_f(const void *p, enum npu_dtype dt, int64_t i)
{
    switch (dt) {
    case NPU_DTYPE_FP32: return ((const float *)p)[i];
    case NPU_DTYPE_FP64: return ((const double *)p)[i];
    default: return cpu_scalar_f64(&(struct npu_tensor){.dtype = dt, .data = (void *)p}, i);
    }
}

static inline bool
is_unsigned(enum npu_dtype dt)
{
    return dt == NPU_DTYPE_UINT8 || dt == NPU_DTYPE_UINT16 || dt == NPU_DTYPE_UINT32 ||
           dt == NPU_DTYPE_UINT64 || dt == NPU_DTYPE_BOOL;
}

static inline uint64_t
ld_u(const void *p, enum npu_dtype dt, int64_t i)
{
    switch (dt) {
    case NPU_DTYPE_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case NPU_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case NPU_DTYPE_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case NPU_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case NPU_DTYPE_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case NPU_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case NPU_DTYPE_INT64: return (uint64_t)((const int64_t *)p)[i];
    case NPU_DTYPE_UINT64: return ((const uint64_t *)p)[i];
    case NPU_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

/* one output element, generic */
static void
reduce_one(const struct red_job *j, int64_t base, int64_t o)
{
    enum npu_dtype dt = j->x->dtype;
    const void *x = j->x->data;
    if (npu_dtype_is_float(dt)) {
        double acc;
        switch (j->kind) {
        case RED_MAX: acc = -INFINITY; break;
        case RED_MIN: acc = INFINITY; break;
        case RED_PROD: acc = 1; break;
        default: acc = 0; break;
        }
        double m = -INFINITY; /* LogSumExp: the largest term, subtracted before exp */
        if (j->kind == RED_LOGSUMEXP)
            for (int64_t r = 0; r < j->R; r++) {
                double v = ld_f(x, dt, base + j->roff[r]);
                m = (v != v || v > m) && m == m ? v : m;
            }
        for (int64_t r = 0; r < j->R; r++) {
            double v = ld_f(x, dt, base + j->roff[r]);
            switch (j->kind) {
            case RED_L1: acc += fabs(v); break;
            case RED_LOGSUM: acc += v; break;
            case RED_LOGSUMEXP: acc += isinf(m) ? (v == m) : exp(v - m); break;
            case RED_SUM:
            case RED_MEAN: acc += v; break;
            case RED_MAX: acc = (v != v || v > acc) ? v : acc; break;
            case RED_MIN: acc = (v != v || v < acc) ? v : acc; break;
            case RED_PROD: acc *= v; break;
            case RED_L2:
            case RED_SUMSQ: acc += v * v; break;
            }
            if (acc != acc && (j->kind == RED_MAX || j->kind == RED_MIN))
                break;
        }
        if (j->kind == RED_MEAN)
            acc = j->R ? acc / (double)j->R : NAN;
        else if (j->kind == RED_L2)
            acc = sqrt(acc);
        else if (j->kind == RED_LOGSUM)
            acc = log(acc);
        else if (j->kind == RED_LOGSUMEXP)
            acc = m != m ? m : isinf(m) ? m : m + log(acc);
        cpu_convert(&acc, NPU_DTYPE_FP64, (char *)j->y->data + (size_t)o * cpu_esize(j->y),
                    j->y->dtype, 1);
        return;
    }
    bool uns = is_unsigned(dt);
    uint64_t acc;
    switch (j->kind) {
    case RED_MAX: acc = uns ? 0 : (uint64_t)INT64_MIN; break;
    case RED_MIN: acc = uns ? UINT64_MAX : (uint64_t)INT64_MAX; break;
    case RED_PROD: acc = 1; break;
    default: acc = 0; break;
    }
    for (int64_t r = 0; r < j->R; r++) {
        uint64_t v = ld_u(x, dt, base + j->roff[r]);
        switch (j->kind) {
        case RED_L1: acc += uns || (int64_t)v >= 0 ? v : (uint64_t)0 - v; break;
        case RED_LOGSUM:
        case RED_LOGSUMEXP: break; /* refused for integers (reduce_kernel) */
        case RED_SUM:
        case RED_MEAN: acc += v; break;
        case RED_MAX:
            acc = uns ? (v > acc ? v : acc) : ((int64_t)v > (int64_t)acc ? v : acc);
            break;
        case RED_MIN:
            acc = uns ? (v < acc ? v : acc) : ((int64_t)v < (int64_t)acc ? v : acc);
            break;
        case RED_PROD: acc *= v; break;
        case RED_L2:
        case RED_SUMSQ: acc += v * v; break;
        }
    }
    int64_t res = (int64_t)acc;
    if (j->kind == RED_MEAN && j->R)
        res = uns ? (int64_t)(acc / (uint64_t)j->R) : (int64_t)acc / j->R;
    if (j->kind == RED_L2)
        res = cpu_sat_i64(sqrt(uns ? (double)acc : (double)(int64_t)acc));
    if (j->kind == RED_MAX || j->kind == RED_MIN) {
        /* the type's own extreme for an empty set */
        if (j->R == 0) {
            double e = j->kind == RED_MAX ? -INFINITY : INFINITY;
            cpu_convert(&e, NPU_DTYPE_FP64, (char *)j->y->data + (size_t)o * cpu_esize(j->y),
                        j->y->dtype, 1);
            return;
        }
    }
    cpu_convert(&res, uns ? NPU_DTYPE_UINT64 : NPU_DTYPE_INT64,
                (char *)j->y->data + (size_t)o * cpu_esize(j->y), j->y->dtype, 1);
}

/* fp32 fast path: `lanes` outputs in a row, reduced vectors stacked at roff */
CPU_HOT static void
reduce_lanes_f32(const struct red_job *j, int64_t base, int64_t o, int64_t lanes, double *acc)
{
    const float *x = j->x->data;
    float *y = (float *)j->y->data + o;
    if (j->kind == RED_SUM || j->kind == RED_MEAN) {
        for (int64_t l = 0; l < lanes; l++)
            acc[l] = 0;
        for (int64_t r = 0; r < j->R; r++) {
            const float *p = x + base + j->roff[r];
            for (int64_t l = 0; l < lanes; l++)
                acc[l] += p[l];
        }
        double div = j->kind == RED_MEAN ? (double)j->R : 1.0;
        for (int64_t l = 0; l < lanes; l++)
            y[l] = j->R || j->kind == RED_SUM ? (float)(acc[l] / div) : NAN;
        return;
    }
    bool mx = j->kind == RED_MAX;
    for (int64_t l = 0; l < lanes; l++)
        y[l] = mx ? -INFINITY : INFINITY;
    for (int64_t r = 0; r < j->R; r++) {
        const float *p = x + base + j->roff[r];
        if (mx)
            for (int64_t l = 0; l < lanes; l++)
                y[l] = (p[l] != p[l] || p[l] > y[l]) && y[l] == y[l] ? p[l] : y[l];
        else
            for (int64_t l = 0; l < lanes; l++)
                y[l] = (p[l] != p[l] || p[l] < y[l]) && y[l] == y[l] ? p[l] : y[l];
    }
}

/* fp32 fast path: one output from a contiguous run of R */
CPU_HOT static float
reduce_row_f32(enum red_kind k, const float *x, int64_t R)
{
    if (k == RED_SUM || k == RED_MEAN) {
        double acc[8] = {0};
        int64_t i = 0;
        for (; i + 8 <= R; i += 8)
            for (int q = 0; q < 8; q++)
                acc[q] += x[i + q];
        for (int q = 0; i < R; i++, q++)
            acc[q] += x[i];
        double s =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        return k == RED_MEAN ? (R ? (float)(s / (double)R) : NAN) : (float)s;
    }
    float m = k == RED_MAX ? -INFINITY : INFINITY;
    for (int64_t i = 0; i < R; i++) {
        if (x[i] != x[i])
            return x[i];
        m = k == RED_MAX ? (x[i] > m ? x[i] : m) : (x[i] < m ? x[i] : m);
    }
    return m;
}

static void
red_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct red_job *j = arg;
    /* outputs are processed in groups of `inner` lanes (1 if there is no contiguous inner run) */
    int64_t lanes = j->inner;
    bool fast =
        j->x->dtype == NPU_DTYPE_FP32 && j->y->dtype == NPU_DTYPE_FP32 && j->kind <= RED_MIN;
    double accbuf[256];
    for (int64_t g = begin; g < end; g++) {
        /* base offset of output group g over the kept runs (inner run excluded) */
        int64_t base = 0, r = g;
        int top = lanes > 1 ? j->nk - 1 : j->nk;
        for (int d = top - 1; d >= 0; d--) {
            base += (r % j->kdims[d]) * j->kstr[d];
            r /= j->kdims[d];
        }
        int64_t o = g * lanes;
        if (fast && lanes == 1 && j->R > 0 && j->roff[j->R - 1] == j->R - 1) {
            ((float *)j->y->data)[o] =
                reduce_row_f32(j->kind, (const float *)j->x->data + base, j->R);
        } else if (fast && lanes > 1) {
            for (int64_t l0 = 0; l0 < lanes; l0 += 256)
                reduce_lanes_f32(j, base + l0, o + l0, NPU_MIN((int64_t)256, lanes - l0), accbuf);
        } else {
            for (int64_t l = 0; l < lanes; l++)
                reduce_one(j, base + l, o + l);
        }
    }
}

static enum npu_status
reduce_common(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs,
              const struct npu_tensor *const *in, int nin, struct npu_tensor *y, enum red_kind kind)
{
    const struct npu_tensor *x = in[0];
    int r = x->ndim;
    if (x->dtype == NPU_DTYPE_BOOL) {
        /* opset 20: ReduceMax / ReduceMin of bool are any / all: the same as
         * max / min of the 0/1 bytes */
        if (kind != RED_MAX && kind != RED_MIN)
            return KUNSUP("bool input is not supported (ReduceMax and ReduceMin take it)");
        if (y->dtype != NPU_DTYPE_BOOL)
            return KINVAL("output must be bool like the input");
        struct npu_tensor xb = *x, yb = *y;
        xb.dtype = yb.dtype = NPU_DTYPE_UINT8;
        const struct npu_tensor *in2[2] = {&xb, nin > 1 ? in[1] : NULL};
        return reduce_common(ctx, attrs, in2, nin > 2 ? 2 : nin, &yb, kind);
    }
    int64_t axes[NPU_MAX_DIMS];
    int na = 0;
    if (nin > 1 && in[1] && !cpu_absent(in[1])) {
        CPU_TRY(cpu_read_ints(ctx, in[1], "axes", axes, NPU_MAX_DIMS, &na));
    } else {
        size_t n;
        const int64_t *a = npu_attrs_ints(attrs, "axes", &n); /* opset < 18 form */
        if (a) {
            if (n > NPU_MAX_DIMS)
                return KINVAL("too many axes");
            memcpy(axes, a, n * sizeof(int64_t));
            na = (int)n;
        }
    }
    bool keep = npu_attrs_int(attrs, "keepdims", 1) != 0;
    bool red[NPU_MAX_DIMS] = {false};
    if (na == 0) {
        if (npu_attrs_int(attrs, "noop_with_empty_axes", 0)) {
            /* identity */
            if (x->dtype != y->dtype || !cpu_same_dims(x, y))
                return KINVAL("noop reduction: output must equal the input");
            memcpy(y->data, x->data, (size_t)cpu_numel(x) * cpu_esize(x));
            return NPU_OK;
        }
        for (int d = 0; d < r; d++)
            red[d] = true;
    }
    for (int i = 0; i < na; i++) {
        int ax;
        CPU_TRY(cpu_axis(ctx, axes[i], r, &ax));
        red[ax] = true;
    }
    int64_t od[NPU_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < r; d++) {
        if (!red[d])
            od[on++] = x->dims[d];
        else if (keep)
            od[on++] = 1;
    }
    CPU_TRY(cpu_check_out(ctx, y, x->dtype, on, od));
    int64_t ny = cpu_numel(y);
    if (ny == 0)
        return NPU_OK;
    /* merge neighbouring dims of the same kind; size-1 dims vanish */
    struct red_job j = {.kind = kind, .x = x, .y = y};
    int64_t xs[NPU_MAX_DIMS], acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        xs[d] = acc;
        acc *= x->dims[d];
    }
    int64_t rdims[NPU_MAX_DIMS], rstr[NPU_MAX_DIMS];
    int nr = 0;
    int last = -1; /* 0 kept, 1 reduced */
    for (int d = 0; d < r; d++) {
        if (x->dims[d] == 1)
            continue;
        int kindd = red[d] ? 1 : 0;
        int64_t *dims = kindd ? rdims : j.kdims, *str = kindd ? rstr : j.kstr;
        int *cnt = kindd ? &nr : &j.nk;
        if (last == kindd && str[*cnt - 1] == xs[d] * x->dims[d]) {
            dims[*cnt - 1] *= x->dims[d];
            str[*cnt - 1] = xs[d];
        } else {
            dims[*cnt] = x->dims[d];
            str[*cnt] = xs[d];
            (*cnt)++;
        }
        last = kindd;
    }
    j.R = cpu_dims_prod(rdims, 0, nr);
    if (cpu_numel(x) == 0)
        j.R = 0;
    int64_t *roff = malloc(sizeof(int64_t) * (size_t)(j.R ? j.R : 1));
    if (!roff)
        return KNOMEM();
    int64_t idx[NPU_MAX_DIMS] = {0};
    for (int64_t e = 0; e < j.R; e++) {
        int64_t off = 0;
        for (int d = 0; d < nr; d++)
            off += idx[d] * rstr[d];
        roff[e] = off;
        cpu_index_next(idx, rdims, nr);
    }
    j.roff = roff;
    /* a kept run at the very end with stride 1 becomes the vector lanes */
    j.inner = j.nk > 0 && j.kstr[j.nk - 1] == 1 && last == 0 ? j.kdims[j.nk - 1] : 1;
    int64_t groups = ny / j.inner;
    cpu_parallel_for(ctx, groups, NPU_MAX((int64_t)1, 16384 / NPU_MAX(j.R * j.inner, (int64_t)1)),
                     red_task, &j);
    free(roff);
    return NPU_OK;
}

#define REDUCE_KERNEL(name, kind)                                                                  \
    enum npu_status name(CPU_KERNEL_ARGS)                                                          \
    {                                                                                              \
        return reduce_common(ctx, attrs, in, nin, out[0], kind);                                   \
    }
REDUCE_KERNEL(cpu_k_reduce_sum, RED_SUM)
REDUCE_KERNEL(cpu_k_reduce_mean, RED_MEAN)
REDUCE_KERNEL(cpu_k_reduce_max, RED_MAX)
REDUCE_KERNEL(cpu_k_reduce_min, RED_MIN)
REDUCE_KERNEL(cpu_k_reduce_prod, RED_PROD)
REDUCE_KERNEL(cpu_k_reduce_l2, RED_L2)
REDUCE_KERNEL(cpu_k_reduce_sum_square, RED_SUMSQ)
REDUCE_KERNEL(cpu_k_reduce_l1, RED_L1)

/* log(sum) and log(sum(exp)) (torch's logsumexp): float inputs only. */
enum npu_status
cpu_k_reduce_log_sum(CPU_KERNEL_ARGS)
{
    (void)nout;
    if (!npu_dtype_is_float(in[0]->dtype))
        return KUNSUP("%s input (float only)", npu_dtype_name(in[0]->dtype));
    return reduce_common(ctx, attrs, in, nin, out[0], RED_LOGSUM);
}

enum npu_status
cpu_k_reduce_log_sum_exp(CPU_KERNEL_ARGS)
{
    (void)nout;
    if (!npu_dtype_is_float(in[0]->dtype))
        return KUNSUP("%s input (float only)", npu_dtype_name(in[0]->dtype));
    return reduce_common(ctx, attrs, in, nin, out[0], RED_LOGSUMEXP);
}

/* ---- ArgMax / ArgMin ------------------------------------------------------------------------ */

static enum npu_status
arg_common(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
           struct npu_tensor *y, bool is_max)
{
    int axis, r = x->ndim;
    if (r < 1)
        return KINVAL("input must have rank >= 1");
    if (x->dtype == NPU_DTYPE_BOOL)
        return KUNSUP("bool input is not supported");
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 0), r, &axis));
    bool keep = npu_attrs_int(attrs, "keepdims", 1) != 0;
    bool last = npu_attrs_int(attrs, "select_last_index", 0) != 0;
    int64_t od[NPU_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < r; d++) {
        if (d != axis)
            od[on++] = x->dims[d];
        else if (keep)
            od[on++] = 1;
    }
    CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_INT64, on, od));
    int64_t D = x->dims[axis], inner = cpu_dims_prod(x->dims, axis + 1, r);
    int64_t outer = cpu_dims_prod(x->dims, 0, axis);
    if (cpu_numel(y) > 0 && D == 0)
        return KINVAL("cannot take the arg of an empty axis");
    int64_t *out = y->data;
    bool flt = npu_dtype_is_float(x->dtype), uns = is_unsigned(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t l = 0; l < inner; l++) {
            int64_t base = o * D * inner + l, best = 0;
            if (flt) {
                double bv = ld_f(x->data, x->dtype, base);
                for (int64_t d = 1; d < D && bv == bv; d++) {
                    double v = ld_f(x->data, x->dtype, base + d * inner);
                    /* NaN wins (first NaN, as numpy) */
                    bool better =
                        v != v || (is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv));
                    if (better) {
                        bv = v;
                        best = d;
                    }
                }
            } else {
                uint64_t bv = ld_u(x->data, x->dtype, base);
                for (int64_t d = 1; d < D; d++) {
                    uint64_t v = ld_u(x->data, x->dtype, base + d * inner);
                    bool gt = uns ? v > bv : (int64_t)v > (int64_t)bv;
                    bool lt = uns ? v < bv : (int64_t)v < (int64_t)bv;
                    bool better = is_max ? (gt || (last && v == bv)) : (lt || (last && v == bv));
                    if (better) {
                        bv = v;
                        best = d;
                    }
                }
            }
            out[o * inner + l] = best;
        }
    return NPU_OK;
}

enum npu_status
cpu_k_argmax(CPU_KERNEL_ARGS)
{
    return arg_common(ctx, attrs, in[0], out[0], true);
}

enum npu_status
cpu_k_argmin(CPU_KERNEL_ARGS)
{
    return arg_common(ctx, attrs, in[0], out[0], false);
}

/* ---- CumSum --------------------------------------------------------------------------------- */

#define CUMSUM_FN(sfx, T, W)                                                                       \
    static void cumsum_##sfx(const void *x_, void *y_, int64_t outer, int64_t D, int64_t inner,    \
                             bool excl, bool rev)                                                  \
    {                                                                                              \
        const T *x = x_;                                                                           \
        T *y = y_;                                                                                 \
        for (int64_t o = 0; o < outer; o++)                                                        \
            for (int64_t l = 0; l < inner; l++) {                                                  \
                W acc = 0;                                                                         \
                for (int64_t k = 0; k < D; k++) {                                                  \
                    int64_t d = rev ? D - 1 - k : k;                                               \
                    int64_t e = (o * D + d) * inner + l;                                           \
                    W v = (W)x[e];                                                                 \
                    if (excl) {                                                                    \
                        y[e] = (T)acc;                                                             \
                        acc += v;                                                                  \
                    } else {                                                                       \
                        acc += v;                                                                  \
                        y[e] = (T)acc;                                                             \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }
CUMSUM_FN(f32, float, float)
CUMSUM_FN(f64, double, double)
CUMSUM_FN(i32, int32_t, uint32_t)
CUMSUM_FN(i64, int64_t, uint64_t)
CUMSUM_FN(u32, uint32_t, uint32_t)
CUMSUM_FN(u64, uint64_t, uint64_t)

enum npu_status
cpu_k_cumsum(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *ax = in[1];
    if (x->ndim < 1)
        return KINVAL("input must have rank >= 1");
    if (cpu_numel(ax) != 1 || (ax->dtype != NPU_DTYPE_INT32 && ax->dtype != NPU_DTYPE_INT64))
        return KINVAL("axis must be an int32/int64 scalar");
    int axis;
    CPU_TRY(cpu_axis(ctx, cpu_scalar_i64(ax, 0), x->ndim, &axis));
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, x->dims));
    bool excl = npu_attrs_int(attrs, "exclusive", 0) != 0;
    bool rev = npu_attrs_int(attrs, "reverse", 0) != 0;
    int64_t outer = cpu_dims_prod(x->dims, 0, axis), D = x->dims[axis];
    int64_t inner = cpu_dims_prod(x->dims, axis + 1, x->ndim);
    void (*fn)(const void *, void *, int64_t, int64_t, int64_t, bool, bool);
    switch (x->dtype) {
    case NPU_DTYPE_FP32: fn = cumsum_f32; break;
    case NPU_DTYPE_FP64: fn = cumsum_f64; break;
    case NPU_DTYPE_INT32: fn = cumsum_i32; break;
    case NPU_DTYPE_INT64: fn = cumsum_i64; break;
    case NPU_DTYPE_UINT32: fn = cumsum_u32; break;
    case NPU_DTYPE_UINT64: fn = cumsum_u64; break;
    default: return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    }
    fn(x->data, out[0]->data, outer, D, inner, excl, rev);
    return NPU_OK;
}
