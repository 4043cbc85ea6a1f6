/* SPDX-License-Identifier: MIT */
/*
 * cpu-test-util.h: small helpers shared by the CPU kernel tests and the
 * benchmark: owned tensors with deterministic random contents, an attribute
 * list builder, a one-call op runner, and tolerant comparison against double
 * references computed by the tests themselves.
 */
#ifndef CPU_TEST_UTIL_H
#define CPU_TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-cpu.h"

/* ---- tensors ------------------------------------------------------------------------------ */

static inline struct npu_tensor *
tt_new(enum npu_dtype dt, int ndim, const int64_t *dims)
{
    struct npu_tensor *t = calloc(1, sizeof(*t));
    t->dtype = dt;
    t->ndim = ndim;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        t->dims[i] = dims[i];
        n *= dims[i];
    }
    size_t bytes = (size_t)(n ? n : 1) * npu_dtype_size(dt);
    if (posix_memalign(&t->data, 64, bytes))
        abort();
    memset(t->data, 0, bytes);
    return t;
}

/* tt(dtype, ndim, d0, d1, ...) */
static inline struct npu_tensor *
tt(enum npu_dtype dt, int ndim, ...)
{
    int64_t d[NPU_MAX_DIMS];
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim; i++)
        d[i] = va_arg(ap, int64_t);
    va_end(ap);
    return tt_new(dt, ndim, d);
}
#define D(x) ((int64_t)(x))

static inline void
tt_free(struct npu_tensor *t)
{
    if (t)
        free(t->data);
    free(t);
}

static inline int64_t
tt_n(const struct npu_tensor *t)
{
    return npu_tensor_numel(t);
}

static uint64_t tt_seed = 88172645463325252ull;
static inline uint64_t
tt_rand_u64(void)
{
    tt_seed ^= tt_seed << 13;
    tt_seed ^= tt_seed >> 7;
    tt_seed ^= tt_seed << 17;
    return tt_seed;
}
static inline double
tt_uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(tt_rand_u64() >> 11) * (1.0 / 9007199254740992.0);
}

/* fp16 bits from a float, round to nearest even (independent of the kernels' routine: done
 * through double arithmetic) */
static inline uint16_t
tt_f16_from(double v)
{
    if (v != v)
        return 0x7e00;
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a >= 65520.0)
        return sign | 0x7c00;
    int e;
    double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    if (a == 0)
        return sign;
    int exp = e - 1 + 15; /* biased exponent of 1.xxx form */
    if (exp <= 0) {
        /* subnormal: units of 2^-24 */
        double q = nearbyint(a * 16777216.0);
        return sign | (uint16_t)q;
    }
    double frac = nearbyint((m * 2 - 1) * 1024.0);
    if (frac >= 1024) {
        frac = 0;
        exp++;
    }
    if (exp >= 31)
        return sign | 0x7c00;
    return sign | (uint16_t)(exp << 10) | (uint16_t)frac;
}
static inline double
tt_f16_to(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* element i as double (the util layer's load, npu-tensor.h) / set from double (any dtype; ints
 * truncate; fp16 through the independent reference above) */
static inline double
tt_get(const struct npu_tensor *t, int64_t i)
{
    return npu_dtype_load_f64(t->dtype, t->data, i);
}
static inline void
tt_set(struct npu_tensor *t, int64_t i, double v)
{
    void *p = t->data;
    switch (t->dtype) {
    case NPU_DTYPE_FP32: ((float *)p)[i] = (float)v; break;
    case NPU_DTYPE_FP16: ((uint16_t *)p)[i] = tt_f16_from(v); break;
    case NPU_DTYPE_FP64: ((double *)p)[i] = v; break;
    case NPU_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case NPU_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case NPU_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case NPU_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case NPU_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case NPU_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case NPU_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case NPU_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case NPU_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: break;
    }
}

static inline struct npu_tensor *
tt_fill_rand(struct npu_tensor *t, double lo, double hi)
{
    int64_t n = tt_n(t);
    bool integral = !npu_dtype_is_float(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        double v = tt_uniform(lo, hi);
        tt_set(t, i, integral ? floor(v) : v);
    }
    return t;
}

/* a tensor with explicit values */
static inline struct npu_tensor *
tt_vals(enum npu_dtype dt, int ndim, const int64_t *dims, const double *v)
{
    struct npu_tensor *t = tt_new(dt, ndim, dims);
    for (int64_t i = 0; i < tt_n(t); i++)
        tt_set(t, i, v[i]);
    return t;
}

static inline struct npu_tensor *
tt_ints(int n, const int64_t *v)
{
    int64_t d = n;
    struct npu_tensor *t = tt_new(NPU_DTYPE_INT64, 1, &d);
    memcpy(t->data, v, sizeof(int64_t) * (size_t)n);
    return t;
}

/* ---- attributes --------------------------------------------------------------------------- */

struct alist {
    struct npu_attr v[16];
    struct npu_attrs a;
};

static inline struct npu_attrs *
al_done(struct alist *l)
{
    l->a.v = l->v;
    return &l->a;
}
static inline struct npu_attr *
al_next(struct alist *l, const char *name, enum npu_attr_type type)
{
    struct npu_attr *a = &l->v[l->a.n++];
    memset(a, 0, sizeof(*a));
    a->name = name;
    a->type = type;
    l->a.v = l->v;
    return a;
}
static inline void
al_int(struct alist *l, const char *name, int64_t v)
{
    al_next(l, name, NPU_ATTR_INT)->i = v;
}
static inline void
al_float(struct alist *l, const char *name, float v)
{
    al_next(l, name, NPU_ATTR_FLOAT)->f = v;
}
static inline void
al_str(struct alist *l, const char *name, const char *v)
{
    al_next(l, name, NPU_ATTR_STRING)->s = v;
}
static inline void
al_ints(struct alist *l, const char *name, const int64_t *v, size_t n)
{
    struct npu_attr *a = al_next(l, name, NPU_ATTR_INTS);
    a->ints = v;
    a->n = n;
}
static inline void
al_tensor(struct alist *l, const char *name, const struct npu_tensor *t)
{
    al_next(l, name, NPU_ATTR_TENSOR)->t = t;
}

/* ---- running ------------------------------------------------------------------------------ */

static inline enum npu_status
run_op(struct npu_cpu_ctx *ctx, enum npu_op op, struct alist *al, int nin,
       struct npu_tensor *const *in, int nout, struct npu_tensor *const *out)
{
    struct npu_attrs empty = {0};
    return npu_cpu_run(ctx, op, al ? al_done(al) : &empty, (const struct npu_tensor *const *)in,
                       nin, out, nout);
}

/* max |got - want| / (atol + rtol |want|) over a tensor vs a double array; <= 1 is a pass.
 * NaN must match NaN. */
static inline double
tt_err(const struct npu_tensor *got, const double *want, double atol, double rtol)
{
    double worst = 0;
    for (int64_t i = 0; i < tt_n(got); i++) {
        double g = tt_get(got, i), w = want[i];
        if (w != w || g != g) {
            if (!(w != w && g != g))
                return INFINITY;
            continue;
        }
        if (isinf(w) || isinf(g)) {
            if (g != w)
                return INFINITY;
            continue;
        }
        double e = fabs(g - w) / (atol + rtol * fabs(w));
        worst = e > worst ? e : worst;
    }
    return worst;
}

static inline bool
tt_same_bytes(const struct npu_tensor *a, const struct npu_tensor *b)
{
    return tt_n(a) == tt_n(b) &&
           !memcmp(a->data, b->data, (size_t)tt_n(a) * npu_dtype_size(a->dtype));
}

/* ---- references --------------------------------------------------------------------------- */

/* The fused activation `act` (the npu_act attribute's names; NULL for none) in double, for the
 * references of the conv and packed-GEMM tests; NAN for a name it does not know. */
static inline double
tt_act_ref(const char *act, double v)
{
    if (!act)
        return v;
    if (!strcmp(act, "relu"))
        return v > 0 ? v : 0;
    if (!strcmp(act, "leaky_relu"))
        return v > 0 ? v : 0.01 * v;
    if (!strcmp(act, "sigmoid"))
        return 1.0 / (1.0 + exp(-v));
    if (!strcmp(act, "silu"))
        return v / (1.0 + exp(-v));
    if (!strcmp(act, "gelu"))
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    return NAN;
}

#endif /* CPU_TEST_UTIL_H */

/* ---- one op on two contexts ----------------------------------------------------------------- */

/* The tests run every case on a 1-thread and a 3-thread context and require bit-identical
 * outputs: the kernels cut work by shape, never by thread count. */
static struct npu_cpu_ctx *tctx1, *tctxn;
static int t_thread_mismatches;

static inline void
tctx_init(void)
{
    tctx1 = npu_cpu_ctx_create(1);
    tctxn = npu_cpu_ctx_create(3);
    if (!tctx1 || !tctxn) {
        fprintf(stderr, "cannot create CPU contexts\n");
        exit(1);
    }
}

static inline void
tctx_fini(void)
{
    npu_cpu_ctx_destroy(tctx1);
    npu_cpu_ctx_destroy(tctxn);
}

/* Runs op on both contexts (outputs of the 1-thread run go to `out`); counts mismatches. */
static inline enum npu_status
run2(enum npu_op op, struct alist *al, int nin, struct npu_tensor *const *in, int nout,
     struct npu_tensor *const *out)
{
    struct npu_tensor *copy[8] = {0};
    for (int i = 0; i < nout && i < 8; i++)
        if (out[i])
            copy[i] = tt_new(out[i]->dtype, out[i]->ndim, out[i]->dims);
    enum npu_status s1 = run_op(tctx1, op, al, nin, in, nout, out);
    enum npu_status sn = run_op(tctxn, op, al, nin, in, nout, copy);
    if (s1 != sn) {
        fprintf(stderr, "%s: status %d with 1 thread, %d with 3\n", npu_op_name(op), s1, sn);
        t_thread_mismatches++;
    } else if (s1 == NPU_OK) {
        for (int i = 0; i < nout && i < 8; i++)
            if (out[i] && !tt_same_bytes(out[i], copy[i])) {
                fprintf(stderr, "%s: output %d differs between 1 and 3 threads\n", npu_op_name(op),
                        i);
                t_thread_mismatches++;
            }
    }
    for (int i = 0; i < 8; i++)
        tt_free(copy[i]);
    return s1;
}

/* row-major index helpers for references */
static inline void
tt_unravel(int64_t e, int nd, const int64_t *dims, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = dims[d] ? e % dims[d] : 0;
        e = dims[d] ? e / dims[d] : 0;
    }
}

/* flat index into t of the numpy-broadcast position idx of an output of rank nd */
static inline int64_t
tt_bcast_index(const struct npu_tensor *t, int nd, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        int od = d + nd - t->ndim;
        off = off * t->dims[d] + (t->dims[d] == 1 ? 0 : idx[od]);
    }
    return off;
}
