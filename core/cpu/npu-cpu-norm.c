/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-norm.c: Softmax and LogSoftmax (one axis, opset 13), the
 * normalisations (BatchNormalization in inference and training mode,
 * InstanceNormalization, LayerNormalization with its Mean/InvStdDev
 * outputs), and the fused npu.Attention.
 *
 * fp32 rows use fixed 8-lane partial sums, so a row's result does not depend
 * on which thread computed it; fp64 runs the same algorithms in double.
 *
 * npu.Attention (our fused op, see docs/cpu-kernels.md):
 *   inputs  Q [..., Sq, D], K [..., Sk, D], V [..., Sk, Dv], mask (optional)
 *   output  Y [..., Sq, Dv] = softmax(Q K^T * scale + mask) V
 *   attrs   scale (float, default 1/sqrt(D)), is_causal (int, default 0)
 * The leading dims of Q, K and V broadcast (numpy). The mask broadcasts to
 * [..., Sq, Sk]; a bool mask keeps the positions that are true, a float mask
 * is added. is_causal keeps key j for query i only if j <= i (top-left
 * aligned, as ONNX Attention and PyTorch's scaled_dot_product_attention do).
 * A row whose keys are all masked out yields zeros (not NaN).
 */
#include "npu-cpu-gemm-packed.h"
#include "npu-cpu-internal.h"

/* ---- Softmax / LogSoftmax ------------------------------------------------------------------- */

struct sm_job {
    const void *x;
    void *y;
    int64_t D, inner;
    bool log;
    bool f64;
};

/* one contiguous fp32 row */
static void
softmax_row_f32(const float *x, float *y, int64_t n, bool lg)
{
    float m = cpu_vmax(x, n);
    if (lg) {
        /* y = x - m - log(sum exp(x - m)); exp goes to y first as scratch */
        float s = cpu_vexp_sum(x, y, n, m);
        float l = m + logf(s);
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] - l;
    } else {
        float s = cpu_vexp_sum(x, y, n, m);
        cpu_vscale(y, n, 1.0f / s);
    }
}

static void
sm_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct sm_job *j = arg;
    int64_t D = j->D, in = j->inner;
    for (int64_t o = begin; o < end; o++) {
        if (!j->f64 && in == 1) {
            softmax_row_f32((const float *)j->x + o * D, (float *)j->y + o * D, D, j->log);
            continue;
        }
        /* strided axis: walk the inner lanes together so that loads stay contiguous */
        for (int64_t l = 0; l < in; l++) {
            int64_t base = o * D * in + l;
            if (j->f64) {
                const double *x = (const double *)j->x + base;
                double *y = (double *)j->y + base;
                double m = -INFINITY, s = 0;
                for (int64_t d = 0; d < D; d++)
                    m = x[d * in] > m ? x[d * in] : m;
                for (int64_t d = 0; d < D; d++)
                    s += exp(x[d * in] - m);
                for (int64_t d = 0; d < D; d++)
                    y[d * in] = j->log ? x[d * in] - m - log(s) : exp(x[d * in] - m) / s;
            } else {
                const float *x = (const float *)j->x + base;
                float *y = (float *)j->y + base;
                float m = -INFINITY, s = 0;
                for (int64_t d = 0; d < D; d++)
                    m = x[d * in] > m ? x[d * in] : m;
                for (int64_t d = 0; d < D; d++) {
                    float e = cpu_expf(x[d * in] - m);
                    s += e;
                    if (!j->log)
                        y[d * in] = e;
                }
                if (j->log) {
                    float lse = m + logf(s);
                    for (int64_t d = 0; d < D; d++)
                        y[d * in] = x[d * in] - lse;
                } else {
                    float r = 1.0f / s;
                    for (int64_t d = 0; d < D; d++)
                        y[d * in] *= r;
                }
            }
        }
    }
}

static enum npu_status
softmax_common(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
               struct npu_tensor *y, bool lg)
{
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP64)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    CPU_TRY(cpu_check_out(ctx, y, x->dtype, x->ndim, x->dims));
    if (x->ndim == 0) {
        /* a single element: softmax 1, log-softmax 0 (NaN stays NaN) */
        double v = cpu_scalar_f64(x, 0);
        double r = v != v ? v : lg ? 0.0 : 1.0;
        cpu_convert(&r, NPU_DTYPE_FP64, y->data, y->dtype, 1);
        return NPU_OK;
    }
    int axis;
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", -1), x->ndim, &axis));
    struct sm_job j = {x->data,
                       y->data,
                       x->dims[axis],
                       cpu_dims_prod(x->dims, axis + 1, x->ndim),
                       lg,
                       x->dtype == NPU_DTYPE_FP64};
    int64_t outer = cpu_dims_prod(x->dims, 0, axis);
    if (j.D == 0 || j.inner == 0)
        return NPU_OK;
    cpu_parallel_for(ctx, outer, NPU_MAX((int64_t)1, 8192 / (j.D * j.inner)), sm_task, &j);
    return NPU_OK;
}

enum npu_status
cpu_k_softmax(CPU_KERNEL_ARGS)
{
    return softmax_common(ctx, attrs, in[0], out[0], false);
}

enum npu_status
cpu_k_log_softmax(CPU_KERNEL_ARGS)
{
    return softmax_common(ctx, attrs, in[0], out[0], true);
}

/* ---- per-channel vectors -------------------------------------------------------------------- */

/* A [C] operand as double (any float dtype; the fp16 wrapper already widened fp16). */
static double *
channel_vec(struct npu_cpu_ctx *ctx, const struct npu_tensor *t, int64_t C, const char *what,
            enum npu_status *st)
{
    *st = NPU_OK;
    if (!npu_dtype_is_float(t->dtype)) {
        *st = KINVAL("%s must be a float tensor", what);
        return NULL;
    }
    if (cpu_numel(t) != C || t->ndim != 1) {
        *st = KINVAL("%s must have shape [%lld]", what, (long long)C);
        return NULL;
    }
    double *v = malloc(sizeof(double) * (size_t)(C ? C : 1));
    if (!v) {
        *st = KNOMEM();
        return NULL;
    }
    cpu_convert(t->data, t->dtype, v, NPU_DTYPE_FP64, C);
    return v;
}

/* ---- BatchNormalization --------------------------------------------------------------------- */

struct affine_job {
    const void *x;
    void *y;
    const double *a, *b; /* per channel: y = x * a + b */
    int64_t C, HW;
    bool f64;
};

static void
affine_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct affine_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        int64_t c = t % j->C;
        if (j->f64) {
            const double *x = (const double *)j->x + t * j->HW;
            double *y = (double *)j->y + t * j->HW;
            for (int64_t i = 0; i < j->HW; i++)
                y[i] = x[i] * j->a[c] + j->b[c];
        } else {
            const float *x = (const float *)j->x + t * j->HW;
            float *y = (float *)j->y + t * j->HW;
            float a = (float)j->a[c], b = (float)j->b[c];
            for (int64_t i = 0; i < j->HW; i++)
                y[i] = x[i] * a + b;
        }
    }
}

/* mean and (biased) variance of each (n, c) plane, or of each channel over the batch */
static void
plane_stats(const struct npu_tensor *x, int64_t N, int64_t C, int64_t HW, bool per_channel,
            double *mean, double *var)
{
    bool f64 = x->dtype == NPU_DTYPE_FP64;
    int64_t groups = per_channel ? C : N * C;
    for (int64_t g = 0; g < groups; g++) {
        double s = 0, s2 = 0;
        int64_t cnt = 0;
        for (int64_t n = 0; n < (per_channel ? N : 1); n++) {
            int64_t plane = per_channel ? n * C + g : g;
            for (int64_t i = 0; i < HW; i++) {
                double v = f64 ? ((const double *)x->data)[plane * HW + i]
                               : ((const float *)x->data)[plane * HW + i];
                s += v;
            }
            cnt += HW;
        }
        double m = cnt ? s / (double)cnt : 0;
        for (int64_t n = 0; n < (per_channel ? N : 1); n++) {
            int64_t plane = per_channel ? n * C + g : g;
            for (int64_t i = 0; i < HW; i++) {
                double v = f64 ? ((const double *)x->data)[plane * HW + i]
                               : ((const float *)x->data)[plane * HW + i];
                s2 += (v - m) * (v - m);
            }
        }
        mean[g] = m;
        var[g] = cnt ? s2 / (double)cnt : 0;
    }
}

/* BatchNormalization and InstanceNormalization: X is fp32/fp64 [N, C, spatial...], Y the same;
 * gives N, C and the spatial size HW. */
static enum npu_status
nchw_setup(struct npu_cpu_ctx *ctx, const struct npu_tensor *x, struct npu_tensor *y, int64_t *N,
           int64_t *C, int64_t *HW)
{
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP64)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    if (x->ndim < 2)
        return KINVAL("X must have rank >= 2");
    CPU_TRY(cpu_check_out(ctx, y, x->dtype, x->ndim, x->dims));
    *N = x->dims[0];
    *C = x->dims[1];
    *HW = cpu_dims_prod(x->dims, 2, x->ndim);
    return NPU_OK;
}

enum npu_status
cpu_k_batch_norm(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int64_t N, C, HW;
    CPU_TRY(nchw_setup(ctx, x, out[0], &N, &C, &HW));
    double eps = npu_attrs_float(attrs, "epsilon", 1e-5f);
    bool training = npu_attrs_int(attrs, "training_mode", 0) != 0;
    double momentum = npu_attrs_float(attrs, "momentum", 0.9f);
    enum npu_status st = NPU_OK;
    double *v[4] = {NULL};
    static const char *names[4] = {"scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 4 && st == NPU_OK; i++)
        v[i] = channel_vec(ctx, in[1 + i], C, names[i], &st);
    double *a = malloc(sizeof(double) * (size_t)(2 * C + 2));
    double *bm = NULL, *bv = NULL;
    if (st == NPU_OK && !a)
        st = KNOMEM();
    if (st != NPU_OK)
        goto out;
    double *b = a + C + 1;
    const double *mean = v[2], *var = v[3];
    if (training) {
        bm = malloc(sizeof(double) * (size_t)(C ? C : 1));
        bv = malloc(sizeof(double) * (size_t)(C ? C : 1));
        if (!bm || !bv) {
            st = KNOMEM();
            goto out;
        }
        plane_stats(x, N, C, HW, true, bm, bv);
        mean = bm;
        var = bv;
        /* running statistics: input * momentum + batch * (1 - momentum) */
        for (int k = 1; k <= 2; k++) {
            if (nout <= k || !out[k])
                continue;
            int64_t cd = C;
            st = cpu_check_out(ctx, out[k], out[k]->dtype, 1, &cd);
            if (st != NPU_OK)
                goto out;
            for (int64_t c = 0; c < C; c++) {
                double r = v[1 + k][c] * momentum + (k == 1 ? bm[c] : bv[c]) * (1 - momentum);
                cpu_convert(&r, NPU_DTYPE_FP64,
                            (char *)out[k]->data + (size_t)c * cpu_esize(out[k]), out[k]->dtype, 1);
            }
        }
    } else if (nout > 1 && (out[1] || (nout > 2 && out[2]))) {
        st = KINVAL("running mean/var outputs need training_mode=1");
        goto out;
    }
    for (int64_t c = 0; c < C; c++) {
        a[c] = v[0][c] / sqrt(var[c] + eps);
        b[c] = v[1][c] - mean[c] * a[c];
    }
    struct affine_job j = {x->data, out[0]->data, a, b, C, HW, x->dtype == NPU_DTYPE_FP64};
    cpu_parallel_for(ctx, N * C, NPU_MAX((int64_t)1, 32768 / NPU_MAX(HW, (int64_t)1)), affine_task,
                     &j);
out:
    for (int i = 0; i < 4; i++)
        free(v[i]);
    free(a);
    free(bm);
    free(bv);
    return st;
}

/* ---- InstanceNormalization ------------------------------------------------------------------ */

enum npu_status
cpu_k_instance_norm(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int64_t N, C, HW;
    CPU_TRY(nchw_setup(ctx, x, out[0], &N, &C, &HW));
    double eps = npu_attrs_float(attrs, "epsilon", 1e-5f);
    enum npu_status st = NPU_OK;
    double *sc = channel_vec(ctx, in[1], C, "scale", &st);
    double *bi = st == NPU_OK ? channel_vec(ctx, in[2], C, "B", &st) : NULL;
    double *buf = st == NPU_OK ? malloc(sizeof(double) * (size_t)(4 * N * C + 4)) : NULL;
    if (st == NPU_OK && !buf)
        st = KNOMEM();
    if (st == NPU_OK && N * C > 0) {
        double *mean = buf, *var = buf + N * C, *a = buf + 2 * N * C, *b = buf + 3 * N * C;
        plane_stats(x, N, C, HW, false, mean, var);
        for (int64_t t = 0; t < N * C; t++) {
            a[t] = sc[t % C] / sqrt(var[t] + eps);
            b[t] = bi[t % C] - mean[t] * a[t];
        }
        /* per-plane affine: reuse the job with C = N*C planes */
        struct affine_job j = {x->data, out[0]->data, a, b, N * C, HW, x->dtype == NPU_DTYPE_FP64};
        cpu_parallel_for(ctx, N * C, NPU_MAX((int64_t)1, 32768 / NPU_MAX(HW, (int64_t)1)),
                         affine_task, &j);
    }
    free(sc);
    free(bi);
    free(buf);
    return st;
}

/* GroupNormalization (opsets 18 and 21): the C channels of each sample fall
 * into num_groups groups of C/G consecutive channels; each group is normalised
 * over its channels and spatial positions (statistics in double, which covers
 * stash_type), then scaled per channel ([C], opset 21) or per group ([G],
 * opset 18). */
enum npu_status
cpu_k_group_norm(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int64_t N, C, HW;
    CPU_TRY(nchw_setup(ctx, x, out[0], &N, &C, &HW));
    int64_t G = npu_attrs_int(attrs, "num_groups", 0);
    if (G <= 0 || C % G)
        return KINVAL("num_groups %lld must be positive and divide the %lld channels", (long long)G,
                      (long long)C);
    double eps = npu_attrs_float(attrs, "epsilon", 1e-5f);
    int64_t k = cpu_numel(in[1]);
    if ((k != C && k != G) || cpu_numel(in[2]) != k)
        return KINVAL("scale and bias must have shape [%lld] or [%lld]", (long long)C,
                      (long long)G);
    enum npu_status st = NPU_OK;
    double *sc = channel_vec(ctx, in[1], k, "scale", &st);
    double *bi = st == NPU_OK ? channel_vec(ctx, in[2], k, "bias", &st) : NULL;
    double *buf =
        st == NPU_OK ? malloc(sizeof(double) * (size_t)(2 * N * G + 2 * N * C + 4)) : NULL;
    if (st == NPU_OK && !buf)
        st = KNOMEM();
    if (st == NPU_OK && N * C > 0) {
        int64_t cpg = C / G;
        double *mean = buf, *var = buf + N * G, *a = buf + 2 * N * G, *b = a + N * C;
        /* a group's channels are contiguous: N*G planes of cpg*HW elements */
        plane_stats(x, N, G, cpg * HW, false, mean, var);
        for (int64_t t = 0; t < N * C; t++) {
            int64_t c = t % C, grp = (t / C) * G + c / cpg;
            int64_t p = k == C ? c : c / cpg;
            a[t] = sc[p] / sqrt(var[grp] + eps);
            b[t] = bi[p] - mean[grp] * a[t];
        }
        struct affine_job j = {x->data, out[0]->data, a, b, N * C, HW, x->dtype == NPU_DTYPE_FP64};
        cpu_parallel_for(ctx, N * C, NPU_MAX((int64_t)1, 32768 / NPU_MAX(HW, (int64_t)1)),
                         affine_task, &j);
    }
    free(sc);
    free(bi);
    free(buf);
    return st;
}

/* ---- LayerNormalization --------------------------------------------------------------------- */

struct ln_job {
    const void *x;
    void *y;
    const float *sc, *bi; /* fp32 path: [n] each (bi may be NULL) */
    const double *scd, *bid;
    int64_t n;
    float eps;
    bool f64;
    struct npu_tensor *mean, *inv; /* optional outputs */
};

CPU_HOT static void
ln_row_f32(const float *x, float *y, const float *sc, const float *bi, int64_t n, float eps,
           float *mean_out, float *inv_out)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += x[i + k];
    for (int k = 0; i < n; i++, k++)
        acc[k] += x[i];
    float mean =
        (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) /
        (float)n;
    for (int k = 0; k < 8; k++)
        acc[k] = 0;
    for (i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            float d = x[i + k] - mean;
            acc[k] += d * d;
        }
    for (int k = 0; i < n; i++, k++) {
        float d = x[i] - mean;
        acc[k] += d * d;
    }
    float var =
        (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) /
        (float)n;
    float inv = 1.0f / sqrtf(var + eps);
    if (bi)
        for (i = 0; i < n; i++)
            y[i] = (x[i] - mean) * inv * sc[i] + bi[i];
    else
        for (i = 0; i < n; i++)
            y[i] = (x[i] - mean) * inv * sc[i];
    *mean_out = mean;
    *inv_out = inv;
}

static void
ln_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct ln_job *j = arg;
    int64_t n = j->n;
    for (int64_t r = begin; r < end; r++) {
        double mean, inv;
        if (!j->f64) {
            float m, iv;
            ln_row_f32((const float *)j->x + r * n, (float *)j->y + r * n, j->sc, j->bi, n, j->eps,
                       &m, &iv);
            mean = m;
            inv = iv;
        } else {
            const double *x = (const double *)j->x + r * n;
            double *y = (double *)j->y + r * n;
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < n; i++)
                s += x[i];
            mean = s / (double)n;
            for (int64_t i = 0; i < n; i++)
                s2 += (x[i] - mean) * (x[i] - mean);
            inv = 1.0 / sqrt(s2 / (double)n + (double)j->eps);
            for (int64_t i = 0; i < n; i++)
                y[i] = (x[i] - mean) * inv * j->scd[i] + (j->bid ? j->bid[i] : 0.0);
        }
        if (j->mean)
            cpu_convert(&mean, NPU_DTYPE_FP64,
                        (char *)j->mean->data + (size_t)r * cpu_esize(j->mean), j->mean->dtype, 1);
        if (j->inv)
            cpu_convert(&inv, NPU_DTYPE_FP64, (char *)j->inv->data + (size_t)r * cpu_esize(j->inv),
                        j->inv->dtype, 1);
    }
}

/* Scale or B broadcast (unidirectionally) to the normalised shape dims[axis..], as a flat
 * array of n elements in `dt` (malloc'ed). */
static void *
ln_param(struct npu_cpu_ctx *ctx, const struct npu_tensor *t, const struct npu_tensor *x, int axis,
         enum npu_dtype dt, enum npu_status *st)
{
    struct npu_tensor norm = {.dtype = t->dtype, .ndim = x->ndim - axis};
    memcpy(norm.dims, x->dims + axis, sizeof(int64_t) * (size_t)norm.ndim);
    int64_t n = cpu_numel(&norm);
    void *conv = cpu_convert_alloc(t, dt);
    void *full = malloc(npu_dtype_size(dt) * (size_t)(n ? n : 1));
    *st = NPU_OK;
    if (!conv || !full) {
        *st = KNOMEM();
        goto fail;
    }
    if (!npu_dtype_is_float(t->dtype)) {
        *st = KINVAL("Scale and B must be float tensors");
        goto fail;
    }
    struct npu_tensor src = *t, dst = norm;
    src.dtype = dt;
    src.data = conv;
    dst.dtype = dt;
    dst.data = full;
    /* leading 1s do not change the layout */
    while (src.ndim > 0 && src.dims[0] == 1 && src.ndim > dst.ndim) {
        memmove(src.dims, src.dims + 1, sizeof(int64_t) * (size_t)(src.ndim - 1));
        src.ndim--;
    }
    bool same = src.ndim <= dst.ndim && cpu_numel(&src) == n;
    for (int d = 0; same && d < src.ndim; d++)
        same = src.dims[src.ndim - 1 - d] == dst.dims[dst.ndim - 1 - d];
    if (same) {
        memcpy(full, conv, npu_dtype_size(dt) * (size_t)n);
    } else {
        struct cpu_bcast bc;
        const struct npu_tensor *ins[1] = {&src};
        *st = cpu_bcast_plan(ctx, &bc, &dst, ins, 1, false);
        if (*st != NPU_OK)
            goto fail;
        /* tiny: a scalar loop over the normalised shape */
        size_t es = npu_dtype_size(dt);
        int64_t idx[NPU_MAX_DIMS] = {0};
        for (int64_t e = 0; e < n; e++) {
            int64_t off = 0;
            for (int d = 0; d < bc.ndim; d++)
                off += idx[d] * bc.strides[0][d];
            memcpy((char *)full + (size_t)e * es, (char *)conv + (size_t)off * es, es);
            cpu_index_next(idx, bc.dims, bc.ndim);
        }
    }
    free(conv);
    return full;
fail:
    free(conv);
    free(full);
    return NULL;
}

enum npu_status
cpu_k_layer_norm(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *scale = in[1], *bias = nin > 2 ? in[2] : NULL;
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP64)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    if (x->ndim < 1)
        return KINVAL("X must have rank >= 1");
    int axis;
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", -1), x->ndim, &axis));
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, x->dims));
    int64_t sd[NPU_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        sd[d] = d < axis ? x->dims[d] : 1;
    for (int k = 1; k < nout && k < 3; k++)
        if (out[k])
            CPU_TRY(cpu_check_out(ctx, out[k], out[k]->dtype, x->ndim, sd));
    enum npu_status st = NPU_OK;
    enum npu_dtype pdt = x->dtype;
    void *sc = ln_param(ctx, scale, x, axis, pdt, &st);
    void *bi =
        st == NPU_OK && bias && !cpu_absent(bias) ? ln_param(ctx, bias, x, axis, pdt, &st) : NULL;
    if (st == NPU_OK) {
        bool f64 = x->dtype == NPU_DTYPE_FP64;
        struct ln_job j = {
            .x = x->data,
            .y = out[0]->data,
            .sc = f64 ? NULL : sc,
            .bi = f64 ? NULL : bi,
            .scd = f64 ? sc : NULL,
            .bid = f64 ? bi : NULL,
            .n = cpu_dims_prod(x->dims, axis, x->ndim),
            .eps = npu_attrs_float(attrs, "epsilon", 1e-5f),
            .f64 = f64,
            .mean = nout > 1 ? out[1] : NULL,
            .inv = nout > 2 ? out[2] : NULL,
        };
        if (j.n > 0)
            cpu_parallel_for(ctx, cpu_dims_prod(x->dims, 0, axis), NPU_MAX((int64_t)1, 16384 / j.n),
                             ln_task, &j);
    }
    free(sc);
    free(bi);
    return st;
}

/* ---- npu.Attention -------------------------------------------------------------------------- */

#define ATT_QB 64  /* query rows per block; fixed, so results do not depend on the thread count */
#define ATT_QG 256 /* query rows per task when K and V are packed per task */

struct att_job {
    const float *q, *k, *v;
    float *y;
    const void *mask;
    bool mask_bool;
    int lead;                 /* number of leading (batch) dims */
    int64_t ld[NPU_MAX_DIMS]; /* output leading dims */
    int64_t qs[NPU_MAX_DIMS], ks[NPU_MAX_DIMS], vs[NPU_MAX_DIMS]; /* leading strides (0: bcast) */
    int64_t ms[NPU_MAX_DIMS + 2]; /* mask strides over [lead..., Sq, Sk] */
    int64_t Sq, Sk, D, Dv, nqb;
    int64_t qper;     /* query rows per task */
    bool packed;      /* K^T and V packed per task for the wide kernel (npu-cpu-gemm-packed.c) */
    size_t kp_floats; /* scratch after S: packed K^T, then packed V */
    float scale;
    bool causal;
    struct npu_cpu_ctx *ctx;
};

static void
att_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct att_job *j = arg;
    float *S = cpu_scratch(j->ctx, tid);
    float *kp = S + ATT_QB * j->Sk, *vp = kp + j->kp_floats;
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / j->nqb, g0 = (t % j->nqb) * j->qper;
        int64_t g1 = NPU_MIN(g0 + j->qper, j->Sq);
        int64_t qo = 0, ko = 0, vo = 0, mo = 0, rb = b;
        for (int d = j->lead - 1; d >= 0; d--) {
            int64_t i = rb % j->ld[d];
            rb /= j->ld[d];
            qo += i * j->qs[d];
            ko += i * j->ks[d];
            vo += i * j->vs[d];
            mo += i * j->ms[d];
        }
        if (j->packed) {
            /* K^T and V in 48-column panels once for all query rows of the task */
            cpu_mm_pack_into(true, j->k + ko, j->D, j->D, j->Sk, kp);
            cpu_mm_pack_into(false, j->v + vo, j->Dv, j->Sk, j->Dv, vp);
        }
        for (int64_t q0 = g0; q0 < g1; q0 += ATT_QB) {
            int64_t rows = NPU_MIN((int64_t)ATT_QB, g1 - q0);
            const float *Q = j->q + qo + q0 * j->D;
            /* S = scale * Q K^T for this block of query rows */
            if (!j->packed)
                cpu_sgemm(false, true, rows, j->Sk, j->D, j->scale, Q, j->D, j->k + ko, j->D, 0.0f,
                          S, j->Sk);
            else
                cpu_mm_packed_gemm(kp, j->D, j->Sk, rows, Q, j->D, S, j->Sk);
            for (int64_t r = 0; r < rows; r++) {
                float *s = S + r * j->Sk;
                int64_t qi = q0 + r;
                if (j->packed)
                    cpu_vscale(s, j->Sk, j->scale);
                if (j->mask) {
                    int64_t mr = mo + qi * j->ms[j->lead], mc = j->ms[j->lead + 1];
                    if (j->mask_bool) {
                        const uint8_t *m = (const uint8_t *)j->mask + mr;
                        for (int64_t c = 0; c < j->Sk; c++)
                            if (!m[c * mc])
                                s[c] = -INFINITY;
                    } else {
                        const float *m = (const float *)j->mask + mr;
                        for (int64_t c = 0; c < j->Sk; c++)
                            s[c] += m[c * mc];
                    }
                }
                if (j->causal)
                    for (int64_t c = qi + 1; c < j->Sk; c++)
                        s[c] = -INFINITY;
                float mx = cpu_vmax(s, j->Sk);
                if (mx == -INFINITY) { /* nothing to attend to */
                    memset(s, 0, sizeof(float) * (size_t)j->Sk);
                    continue;
                }
                float sum = cpu_vexp_sum(s, s, j->Sk, mx);
                cpu_vscale(s, j->Sk, 1.0f / sum);
            }
            /* Y rows = P V */
            float *Y = j->y + (b * j->Sq + q0) * j->Dv;
            if (!j->packed)
                cpu_sgemm(false, false, rows, j->Dv, j->Sk, 1.0f, S, j->Sk, j->v + vo, j->Dv, 0.0f,
                          Y, j->Dv);
            else
                cpu_mm_packed_gemm(vp, j->Sk, j->Dv, rows, S, j->Sk, Y, j->Dv);
        }
    }
}

enum npu_status
cpu_k_attention(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *q = in[0], *k = in[1], *v = in[2];
    const struct npu_tensor *mask = nin > 3 && !cpu_absent(in[3]) ? in[3] : NULL;
    struct npu_tensor *y = out[0];
    if (q->dtype != NPU_DTYPE_FP32 || k->dtype != NPU_DTYPE_FP32 || v->dtype != NPU_DTYPE_FP32)
        return KUNSUP("Q, K and V must be fp32 or fp16");
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return KINVAL("Q, K and V must have rank >= 2");
    struct att_job j = {.q = q->data, .k = k->data, .v = v->data, .y = y->data, .ctx = ctx};
    j.Sq = q->dims[q->ndim - 2];
    j.D = q->dims[q->ndim - 1];
    j.Sk = k->dims[k->ndim - 2];
    j.Dv = v->dims[v->ndim - 1];
    if (k->dims[k->ndim - 1] != j.D)
        return KINVAL("K's last dim %lld differs from Q's %lld", (long long)k->dims[k->ndim - 1],
                      (long long)j.D);
    if (v->dims[v->ndim - 2] != j.Sk)
        return KINVAL("V has %lld rows, K %lld", (long long)v->dims[v->ndim - 2], (long long)j.Sk);
    int lead = NPU_MAX(q->ndim, NPU_MAX(k->ndim, v->ndim)) - 2;
    j.lead = lead;
    const struct npu_tensor *ops[3] = {q, k, v};
    int64_t *strides[3] = {j.qs, j.ks, j.vs};
    for (int d = 0; d < lead; d++)
        j.ld[d] = 1;
    for (int o = 0; o < 3; o++) {
        const struct npu_tensor *t = ops[o];
        int tl = t->ndim - 2;
        int64_t s = t->dims[t->ndim - 2] * t->dims[t->ndim - 1];
        for (int d = lead - 1; d >= 0; d--) {
            int id = d - (lead - tl);
            int64_t dim = id >= 0 ? t->dims[id] : 1;
            strides[o][d] = dim == 1 ? 0 : s;
            s *= dim;
            if (dim != 1) {
                if (j.ld[d] != 1 && j.ld[d] != dim)
                    return KINVAL("leading dims of Q, K and V do not broadcast");
                j.ld[d] = dim;
            }
        }
    }
    int64_t yd[NPU_MAX_DIMS];
    memcpy(yd, j.ld, sizeof(int64_t) * (size_t)lead);
    yd[lead] = j.Sq;
    yd[lead + 1] = j.Dv;
    CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_FP32, lead + 2, yd));
    if (mask) {
        if (mask->dtype != NPU_DTYPE_BOOL && mask->dtype != NPU_DTYPE_FP32)
            return KINVAL("mask must be bool or float");
        if (mask->ndim > lead + 2)
            return KINVAL("mask rank %d exceeds %d", mask->ndim, lead + 2);
        j.mask = mask->data;
        j.mask_bool = mask->dtype == NPU_DTYPE_BOOL;
        int64_t s = 1;
        for (int d = lead + 1; d >= 0; d--) {
            int id = d - (lead + 2 - mask->ndim);
            int64_t dim = id >= 0 ? mask->dims[id] : 1;
            int64_t full = d == lead ? j.Sq : d == lead + 1 ? j.Sk : j.ld[d];
            if (dim != 1 && dim != full)
                return KINVAL("mask does not broadcast to [..., Sq, Sk]");
            j.ms[d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    double sc = 1.0 / sqrt((double)(j.D ? j.D : 1));
    j.scale = npu_attrs_float(attrs, "scale", (float)sc);
    j.causal = npu_attrs_int(attrs, "is_causal", 0) != 0;
    int64_t batch = cpu_dims_prod(j.ld, 0, lead);
    if (cpu_numel(y) == 0)
        return NPU_OK;
    if (j.Sk == 0) {
        memset(y->data, 0, sizeof(float) * (size_t)cpu_numel(y));
        return NPU_OK;
    }
    /* with the wide kernel, K^T and V are packed once per task of up to 256 query rows */
    j.packed = cpu_mm_pack_wanted() && j.D > 0 && j.Dv > 0;
    j.qper = j.packed ? ATT_QG : ATT_QB;
    j.nqb = NPU_DIV_ROUND_UP(j.Sq, j.qper);
    size_t floats = (size_t)(ATT_QB * j.Sk);
    if (j.packed) {
        j.kp_floats = cpu_mm_pack_floats(j.D, j.Sk);
        floats += j.kp_floats + cpu_mm_pack_floats(j.Sk, j.Dv);
    }
    CPU_TRY(cpu_scratch_reserve(ctx, sizeof(float) * floats));
    cpu_parallel_for(ctx, batch * j.nqb, 1, att_task, &j);
    return NPU_OK;
}
