/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-resize.c: Resize (opset 11-19 semantics): modes nearest (all four
 * nearest_mode roundings), linear and cubic (cubic_coeff_a, exclude_outside);
 * every coordinate_transformation_mode (half_pixel, half_pixel_symmetric,
 * pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
 * tf_crop_and_resize with roi and extrapolation_value); scales or sizes,
 * `axes`, keep_aspect_ratio_policy, and antialias (opset 18) for linear and
 * cubic downscaling: the filter is stretched by 1/scale over as many taps as
 * it then covers, as the ONNX reference does (weights normalised to sum 1,
 * edge samples repeated unless exclude_outside).
 *
 * All three modes are separable, so the kernel resamples one axis at a time
 * (skipping axes that map to themselves), computing in double. Coordinates
 * follow the ONNX reference: "output width" in the transforms is
 * scale * input width, out-of-range taps take the edge value, and a
 * coordinate that lands exactly on a sample uses that sample alone.
 */
#include "npu-cpu-internal.h"

enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum rs_ctm {
    CTM_HALF_PIXEL,
    CTM_HALF_PIXEL_SYM,
    CTM_PYTORCH_HALF_PIXEL,
    CTM_ALIGN_CORNERS,
    CTM_ASYMMETRIC,
    CTM_TF_HALF_PIXEL_FOR_NN,
    CTM_TF_CROP_AND_RESIZE,
};
enum rs_nearest { NR_ROUND_PREFER_FLOOR, NR_ROUND_PREFER_CEIL, NR_FLOOR, NR_CEIL };

struct rs_params {
    enum rs_mode mode;
    enum rs_ctm ctm;
    enum rs_nearest nearest;
    double cubic_a, extrapolation;
    bool exclude_outside;
};

/* Taps of one output position: up to 4 source indices and weights; `extra` = use the
 * extrapolation value. */
struct rs_tap {
    int64_t idx[4];
    double w[4];
    int n;
    bool extra;
};

static double
src_coord(const struct rs_params *p, double x, double scale, int64_t in, int64_t out, double roi_s,
          double roi_e)
{
    double out_w = scale * (double)in; /* as the ONNX reference does */
    switch (p->ctm) {
    case CTM_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
    case CTM_HALF_PIXEL_SYM: {
        double adj = (double)out / out_w, center = (double)in / 2;
        double offset = center * (1 - adj);
        return offset + (x + 0.5) / scale - 0.5;
    }
    case CTM_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CTM_ALIGN_CORNERS: return out_w == 1 ? 0.0 : x * (double)(in - 1) / (out_w - 1);
    case CTM_ASYMMETRIC: return x / scale;
    case CTM_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case CTM_TF_CROP_AND_RESIZE:
        if (out > 1)
            return roi_s * (double)(in - 1) +
                   x * (roi_e - roi_s) * (double)(in - 1) / (double)(out - 1);
        return 0.5 * (roi_s + roi_e) * (double)(in - 1);
    }
    return x;
}

static inline int64_t
clampi(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

static void
cubic_weights(double t, double A, double *w)
{
    double x;
    x = t + 1;
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

static void
make_tap(const struct rs_params *p, double xo, int64_t in, struct rs_tap *t)
{
    t->extra = false;
    if (p->ctm == CTM_TF_CROP_AND_RESIZE && (xo < 0 || xo > (double)(in - 1))) {
        t->extra = true;
        t->n = 0;
        return;
    }
    if (p->mode == RS_NEAREST) {
        double f = floor(xo), r;
        switch (p->nearest) {
        case NR_ROUND_PREFER_FLOOR: r = xo == f + 0.5 ? f : round(xo); break;
        case NR_ROUND_PREFER_CEIL: r = xo == f + 0.5 ? f + 1 : round(xo); break;
        case NR_FLOOR: r = f; break;
        default: r = ceil(xo); break;
        }
        t->n = 1;
        t->idx[0] = clampi((int64_t)fmax(fmin(r, 1e15), -1e15), in);
        t->w[0] = 1;
        return;
    }
    double f = floor(xo), fr = xo - f;
    int64_t x0 = (int64_t)fmax(fmin(f, 1e15), -1e15);
    if (p->mode == RS_LINEAR) {
        t->n = 2;
        t->idx[0] = x0;
        t->idx[1] = x0 + 1;
        t->w[0] = 1 - fr;
        t->w[1] = fr;
    } else {
        t->n = 4;
        for (int k = 0; k < 4; k++)
            t->idx[k] = x0 - 1 + k;
        cubic_weights(fr, p->cubic_a, t->w);
    }
    if (p->exclude_outside) {
        double s = 0;
        for (int k = 0; k < t->n; k++) {
            if (t->idx[k] < 0 || t->idx[k] >= in)
                t->w[k] = 0;
            s += t->w[k];
        }
        for (int k = 0; k < t->n; k++)
            t->w[k] = s != 0 ? t->w[k] / s : 0;
    }
    for (int k = 0; k < t->n; k++)
        t->idx[k] = clampi(t->idx[k], in);
}

/* one axis: dst[outer][out][inner] from src[outer][in][inner] */
static void
resample_axis(const struct rs_params *p, const double *src, double *dst, int64_t outer, int64_t in,
              int64_t out, int64_t inner, const struct rs_tap *taps)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < out; q++) {
            const struct rs_tap *t = &taps[q];
            double *d = dst + (o * out + q) * inner;
            if (t->extra) {
                for (int64_t l = 0; l < inner; l++)
                    d[l] = p->extrapolation;
                continue;
            }
            for (int64_t l = 0; l < inner; l++)
                d[l] = 0;
            for (int k = 0; k < t->n; k++) {
                const double *s = src + (o * in + t->idx[k]) * inner;
                double w = t->w[k];
                for (int64_t l = 0; l < inner; l++)
                    d[l] += w * s[l];
            }
        }
}

static double
cubic_kernel(double x, double A)
{
    x = fabs(x);
    if (x <= 1)
        return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2)
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

/* Antialiased downscaling of one axis (scale < 1, linear or cubic): output q
 * reads the n = 2 - 2 * start source points around its coordinate, weighted
 * by the filter at (point - coordinate) * scale. */
static enum npu_status
resample_axis_aa(struct npu_cpu_ctx *ctx, const struct rs_params *p, const double *src, double *dst,
                 int64_t outer, int64_t in, int64_t out, int64_t inner, double scale, double roi_s,
                 double roi_e)
{
    double support = p->mode == RS_LINEAR ? 1.0 : 2.0;
    int64_t start = (int64_t)floor(-support / scale) + 1, n = 2 - 2 * start;
    if (n > ((int64_t)1 << 24))
        return KUNSUP("antialias filter of %lld taps (scale %g) is too wide", (long long)n, scale);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n * out + 1));
    double *w = malloc(sizeof(double) * (size_t)(n * out + 1));
    bool *extra = calloc((size_t)out + 1, sizeof(bool));
    if (!idx || !w || !extra) {
        free(idx);
        free(w);
        free(extra);
        return KNOMEM();
    }
    for (int64_t q = 0; q < out; q++) {
        double xo = src_coord(p, (double)q, scale, in, out, roi_s, roi_e);
        if (p->ctm == CTM_TF_CROP_AND_RESIZE && (xo < 0 || xo > (double)(in - 1))) {
            extra[q] = true;
            continue;
        }
        double f = floor(xo), ratio = xo - f;
        if (ratio == 0) { /* the reference's neighbours of an integer coordinate */
            ratio = 1;
            f -= 1;
        }
        int64_t x0 = (int64_t)fmax(fmin(f, 1e15), -1e15);
        double sum = 0;
        for (int64_t k = 0; k < n; k++) {
            double a = ((double)(start + k) - ratio) * scale;
            double c =
                p->mode == RS_LINEAR ? fmax(0.0, 1.0 - fabs(a)) : cubic_kernel(a, p->cubic_a);
            int64_t pos = x0 + start + k;
            if (p->exclude_outside && (pos < 0 || pos >= in))
                c = 0;
            idx[q * n + k] = clampi(pos, in);
            w[q * n + k] = c;
            sum += c;
        }
        for (int64_t k = 0; k < n; k++)
            w[q * n + k] = sum != 0 ? w[q * n + k] / sum : 0;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < out; q++) {
            double *d = dst + (o * out + q) * inner;
            for (int64_t l = 0; l < inner; l++)
                d[l] = extra[q] ? p->extrapolation : 0;
            for (int64_t k = 0; !extra[q] && k < n; k++) {
                const double *sp = src + (o * in + idx[q * n + k]) * inner;
                double wk = w[q * n + k];
                for (int64_t l = 0; l < inner; l++)
                    d[l] += wk * sp[l];
            }
        }
    free(idx);
    free(w);
    free(extra);
    return NPU_OK;
}

/* ---- nearest: a gather ----------------------------------------------------------------------
 * A nearest tap has one source and weight 1, so the double path's sums are copies: here every
 * output element is copied from its source through one index table per axis (the same taps,
 * make_tap), in the element's own type, rows in parallel. (The double path turned -0 into +0;
 * a copy keeps it.) */
struct nn_job {
    const char *x;
    char *y;
    size_t es;
    int r;
    const int64_t *xd, *od;
    int64_t *const *idx; /* per axis: source index of each output index */
    int64_t rows;        /* output rows: product of od[0..r-1) */
};

static void
nn_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct nn_job *j = arg;
    int r = j->r;
    int64_t xst[NPU_MAX_DIMS];
    cpu_row_strides(j->xd, r, xst);
    int64_t OW = j->od[r - 1];
    const int64_t *iw = j->idx[r - 1];
    for (int64_t row = begin; row < end; row++) {
        /* source offset of this output row: its index on every axis but the last */
        int64_t rem = row, off = 0;
        for (int d = r - 2; d >= 0; d--) {
            off += j->idx[d][rem % j->od[d]] * xst[d];
            rem /= j->od[d];
        }
        char *yr = j->y + (size_t)(row * OW) * j->es;
        const char *xr = j->x + (size_t)off * j->es;
        if (j->es == 4) {
            for (int64_t q = 0; q < OW; q++)
                ((uint32_t *)yr)[q] = ((const uint32_t *)xr)[iw[q]];
        } else {
            for (int64_t q = 0; q < OW; q++)
                memcpy(yr + (size_t)q * j->es, xr + (size_t)iw[q] * j->es, j->es);
        }
    }
}

static enum npu_status
resize_nearest(struct npu_cpu_ctx *ctx, const struct rs_params *p, const struct npu_tensor *x,
               struct npu_tensor *y, const int64_t *od, const double *sc, const double *rs,
               const double *re)
{
    int r = x->ndim;
    int64_t *idx[NPU_MAX_DIMS] = {NULL};
    struct rs_tap *taps = NULL;
    enum npu_status st = NPU_OK;
    int64_t maxd = 1;
    for (int d = 0; d < r; d++)
        maxd = NPU_MAX(maxd, od[d]);
    taps = malloc(sizeof(*taps) * (size_t)maxd);
    if (!taps)
        return KNOMEM();
    for (int d = 0; d < r; d++) {
        idx[d] = malloc(sizeof(int64_t) * (size_t)NPU_MAX(od[d], (int64_t)1));
        if (!idx[d]) {
            st = KNOMEM();
            goto out;
        }
        bool ident = od[d] == x->dims[d] && sc[d] == 1;
        for (int64_t q = 0; q < od[d]; q++) {
            if (ident) {
                idx[d][q] = q;
                continue;
            }
            make_tap(p, src_coord(p, (double)q, sc[d], x->dims[d], od[d], rs[d], re[d]), x->dims[d],
                     &taps[q]);
            idx[d][q] = taps[q].idx[0];
        }
    }
    struct nn_job j = {x->data, y->data, cpu_esize(x), r,
                       x->dims, od,      idx,          cpu_dims_prod(od, 0, r - 1)};
    cpu_parallel_for(ctx, j.rows, NPU_MAX((int64_t)1, 16384 / NPU_MAX(od[r - 1], (int64_t)1)),
                     nn_task, &j);
out:
    for (int d = 0; d < r; d++)
        free(idx[d]);
    free(taps);
    return st;
}

/* ---- fp32 linear / cubic over the last two axes: both passes fused, rows in parallel ---------
 * The same taps and the same double arithmetic as the axis-by-axis path (H first: a row of
 * sums ((0 + w0 x0) + w1 x1) ..., then W over that row, one rounding to float at the end), so
 * the result is bit-identical; but one output row at a time from a row of doubles in the
 * thread's scratch instead of two whole-tensor passes through double buffers, single-threaded. */
struct hw_job {
    const float *x;
    float *y;
    int64_t H, W, OH, OW;
    const struct rs_tap *th, *tw;
    struct npu_cpu_ctx *ctx;
    /* linear (2 taps everywhere): the W taps as flat arrays, NULL otherwise */
    const int64_t *wi0, *wi1;
    const double *ww0, *ww1;
};

/* linear: the same sums as hw_task's loops for n = 2 (0 + w0 x0, then + w1 x1, in double),
 * written out so that the H pass runs over both rows at once and the W pass reads flat tap
 * arrays instead of one 80-byte tap record per output */
static void
hw_task_linear(const struct hw_job *j, int64_t begin, int64_t end, double *restrict row)
{
    const int64_t *restrict wi0 = j->wi0, *restrict wi1 = j->wi1;
    const double *restrict ww0 = j->ww0, *restrict ww1 = j->ww1;
    const int64_t W = j->W, OW = j->OW;
    for (int64_t it = begin; it < end; it++) {
        int64_t plane = it / j->OH, qh = it % j->OH;
        const float *x = j->x + plane * j->H * j->W;
        const struct rs_tap *t = &j->th[qh];
        const float *restrict x0 = x + t->idx[0] * W, *restrict x1 = x + t->idx[1] * W;
        const double w0 = t->w[0], w1 = t->w[1];
        for (int64_t w = 0; w < W; w++)
            row[w] = (0.0 + w0 * (double)x0[w]) + w1 * (double)x1[w];
        float *restrict y = j->y + (plane * j->OH + qh) * OW;
        for (int64_t q = 0; q < OW; q++)
            y[q] = (float)((0.0 + ww0[q] * row[wi0[q]]) + ww1[q] * row[wi1[q]]);
    }
}

static void
hw_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct hw_job *j = arg;
    double *row = cpu_scratch(j->ctx, tid);
    if (j->wi0) {
        hw_task_linear(j, begin, end, row);
        return;
    }
    for (int64_t it = begin; it < end; it++) {
        int64_t plane = it / j->OH, qh = it % j->OH;
        const float *x = j->x + plane * j->H * j->W;
        const struct rs_tap *t = &j->th[qh];
        for (int64_t w = 0; w < j->W; w++)
            row[w] = 0;
        for (int k = 0; k < t->n; k++) {
            const float *xr = x + t->idx[k] * j->W;
            double wk = t->w[k];
            for (int64_t w = 0; w < j->W; w++)
                row[w] += wk * (double)xr[w];
        }
        float *y = j->y + (plane * j->OH + qh) * j->OW;
        for (int64_t q = 0; q < j->OW; q++) {
            const struct rs_tap *u = &j->tw[q];
            double v = 0;
            for (int k = 0; k < u->n; k++)
                v += u->w[k] * row[u->idx[k]];
            y[q] = (float)v;
        }
    }
}

static enum npu_status
resize_hw(struct npu_cpu_ctx *ctx, const struct rs_params *p, const struct npu_tensor *x,
          struct npu_tensor *y, const int64_t *od, const double *sc, const double *rs,
          const double *re)
{
    int r = x->ndim;
    int64_t H = x->dims[r - 2], W = x->dims[r - 1], OH = od[r - 2], OW = od[r - 1];
    struct rs_tap *th = malloc(sizeof(*th) * (size_t)OH), *tw = malloc(sizeof(*tw) * (size_t)OW);
    void *flat = NULL;
    enum npu_status st = NPU_OK;
    if (!th || !tw) {
        st = KNOMEM();
        goto out;
    }
    for (int64_t q = 0; q < OH; q++)
        make_tap(p, src_coord(p, (double)q, sc[r - 2], H, OH, rs[r - 2], re[r - 2]), H, &th[q]);
    for (int64_t q = 0; q < OW; q++)
        make_tap(p, src_coord(p, (double)q, sc[r - 1], W, OW, rs[r - 1], re[r - 1]), W, &tw[q]);
    st = cpu_scratch_reserve(ctx, sizeof(double) * (size_t)W);
    if (st != NPU_OK)
        goto out;
    struct hw_job j = {x->data, y->data, H, W, OH, OW, th, tw, ctx, NULL, NULL, NULL, NULL};
    bool two = true;
    for (int64_t q = 0; q < OH; q++)
        two = two && th[q].n == 2 && !th[q].extra;
    for (int64_t q = 0; q < OW; q++)
        two = two && tw[q].n == 2 && !tw[q].extra;
    if (two && (flat = malloc((sizeof(int64_t) + sizeof(double)) * 2 * (size_t)OW))) {
        int64_t *i0 = flat, *i1 = i0 + OW;
        double *w0 = (double *)(i1 + OW), *w1 = w0 + OW;
        for (int64_t q = 0; q < OW; q++) {
            i0[q] = tw[q].idx[0], i1[q] = tw[q].idx[1];
            w0[q] = tw[q].w[0], w1[q] = tw[q].w[1];
        }
        j.wi0 = i0, j.wi1 = i1, j.ww0 = w0, j.ww1 = w1;
    }
    int64_t planes = cpu_dims_prod(x->dims, 0, r - 2);
    cpu_parallel_for(ctx, planes * OH, NPU_MAX((int64_t)1, 4096 / NPU_MAX(OW, (int64_t)1)), hw_task,
                     &j);
out:
    free(flat);
    free(th);
    free(tw);
    return st;
}

enum npu_status
cpu_k_resize(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    const struct npu_tensor *roi = nin > 1 && !cpu_absent(in[1]) ? in[1] : NULL;
    const struct npu_tensor *scales = nin > 2 && !cpu_absent(in[2]) ? in[2] : NULL;
    const struct npu_tensor *sizes = nin > 3 && !cpu_absent(in[3]) ? in[3] : NULL;
    struct npu_tensor *y = out[0];
    int r = x->ndim;
    struct rs_params p = {0};
    const char *mode = npu_attrs_string(attrs, "mode", "nearest");
    if (!strcmp(mode, "nearest"))
        p.mode = RS_NEAREST;
    else if (!strcmp(mode, "linear"))
        p.mode = RS_LINEAR;
    else if (!strcmp(mode, "cubic"))
        p.mode = RS_CUBIC;
    else
        return KUNSUP("mode \"%s\" is not supported", mode);
    static const char *const ctms[] = {
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize",
    };
    const char *ctm = npu_attrs_string(attrs, "coordinate_transformation_mode", "half_pixel");
    size_t ci = 0;
    while (ci < NPU_ARRAY_SIZE(ctms) && strcmp(ctm, ctms[ci]))
        ci++;
    if (ci == NPU_ARRAY_SIZE(ctms))
        return KUNSUP("coordinate_transformation_mode \"%s\" is not supported", ctm);
    p.ctm = (enum rs_ctm)ci;
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char *nm = npu_attrs_string(attrs, "nearest_mode", "round_prefer_floor");
    size_t ni = 0;
    while (ni < NPU_ARRAY_SIZE(nms) && strcmp(nm, nms[ni]))
        ni++;
    if (ni == NPU_ARRAY_SIZE(nms))
        return KUNSUP("nearest_mode \"%s\" is not supported", nm);
    p.nearest = (enum rs_nearest)ni;
    p.cubic_a = npu_attrs_float(attrs, "cubic_coeff_a", -0.75f);
    p.exclude_outside = npu_attrs_int(attrs, "exclude_outside", 0) != 0;
    p.extrapolation = npu_attrs_float(attrs, "extrapolation_value", 0.0f);
    bool antialias = npu_attrs_int(attrs, "antialias", 0) != 0;
    const char *policy = npu_attrs_string(attrs, "keep_aspect_ratio_policy", "stretch");
    bool stretch = !strcmp(policy, "stretch"), nl = !strcmp(policy, "not_larger"),
         ns = !strcmp(policy, "not_smaller");
    if (!stretch && !nl && !ns)
        return KUNSUP("keep_aspect_ratio_policy \"%s\" is not supported", policy);

    /* which axes the scales/sizes/roi talk about */
    int axes[NPU_MAX_DIMS], na = r;
    size_t nax;
    const int64_t *ax = npu_attrs_ints(attrs, "axes", &nax);
    if (ax) {
        na = (int)nax;
        if (na > r)
            return KINVAL("too many axes");
        for (int i = 0; i < na; i++)
            CPU_TRY(cpu_axis(ctx, ax[i], r, &axes[i]));
    } else {
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if ((scales == NULL) == (sizes == NULL))
        return KINVAL("exactly one of scales and sizes must be given");
    double sc[NPU_MAX_DIMS], rs[NPU_MAX_DIMS], re[NPU_MAX_DIMS];
    int64_t od[NPU_MAX_DIMS];
    for (int d = 0; d < r; d++) {
        sc[d] = 1;
        rs[d] = 0;
        re[d] = 1;
        od[d] = x->dims[d];
    }
    if (roi) {
        if (cpu_numel(roi) != 2 * na || !npu_dtype_is_float(roi->dtype))
            return KINVAL("roi must hold 2 x %d floats", na);
        for (int i = 0; i < na; i++) {
            rs[axes[i]] = cpu_scalar_f64(roi, i);
            re[axes[i]] = cpu_scalar_f64(roi, na + i);
        }
    }
    if (scales) {
        if (cpu_numel(scales) != na || !npu_dtype_is_float(scales->dtype))
            return KINVAL("scales must hold %d floats", na);
        for (int i = 0; i < na; i++) {
            /* the scales tensor is float32: keep its float value exactly */
            double s = cpu_scalar_f64(scales, i);
            if (!(s > 0))
                return KINVAL("scales must be positive");
            int d = axes[i];
            sc[d] = s;
            double len = (double)x->dims[d] * s;
            if (p.ctm == CTM_TF_CROP_AND_RESIZE)
                len *= re[d] - rs[d];
            if (!(len >= 0 && len < 1e15))
                return KINVAL("scale %g gives an output size out of range", s);
            od[d] = (int64_t)floor(len);
        }
    } else {
        int64_t sz[NPU_MAX_DIMS];
        int n;
        CPU_TRY(cpu_read_ints(ctx, sizes, "sizes", sz, NPU_MAX_DIMS, &n));
        if (n != na)
            return KINVAL("sizes has %d entries for %d axes", n, na);
        double pick = nl ? INFINITY : -INFINITY;
        for (int i = 0; i < na; i++) {
            int d = axes[i];
            if (sz[i] < 0 || x->dims[d] == 0)
                return KINVAL("bad size %lld for an input dim of %lld", (long long)sz[i],
                              (long long)x->dims[d]);
            double s = (double)sz[i] / (double)x->dims[d];
            sc[d] = s;
            od[d] = sz[i];
            if (nl)
                pick = fmin(pick, s);
            if (ns)
                pick = fmax(pick, s);
        }
        if (!stretch)
            for (int i = 0; i < na; i++) {
                int d = axes[i];
                double len = (double)x->dims[d] * pick + 0.5;
                if (!(len >= 0 && len < 1e15))
                    return KINVAL("sizes give an output size out of range");
                sc[d] = pick;
                od[d] = (int64_t)floor(len);
            }
    }
    CPU_TRY(cpu_check_out(ctx, y, x->dtype, r, od));
    int64_t on = cpu_numel(y), xn = cpu_numel(x);
    if (on == 0)
        return NPU_OK;
    if (xn == 0)
        return KINVAL("cannot resize an empty input to a non-empty output");

    if (p.mode == RS_NEAREST && p.ctm != CTM_TF_CROP_AND_RESIZE && r >= 1)
        return resize_nearest(ctx, &p, x, y, od, sc, rs, re);
    if (p.mode != RS_NEAREST && p.ctm != CTM_TF_CROP_AND_RESIZE && !antialias && r >= 2 &&
        x->dtype == NPU_DTYPE_FP32) {
        /* the fused path when only the last two axes move and both do (as the double path
         * would resample them: neither is skipped as an identity) */
        bool fused = true;
        for (int d = 0; d < r; d++) {
            bool ident = od[d] == x->dims[d] && sc[d] == 1;
            fused = fused && (d < r - 2 ? ident : !ident);
        }
        if (fused)
            return resize_hw(ctx, &p, x, y, od, sc, rs, re);
    }

    /* resample axis by axis in double */
    int64_t maxn = xn;
    int64_t cur[NPU_MAX_DIMS];
    memcpy(cur, x->dims, sizeof(int64_t) * (size_t)r);
    for (int d = 0; d < r; d++) {
        cur[d] = od[d];
        maxn = NPU_MAX(maxn, cpu_dims_prod(cur, 0, r));
    }
    memcpy(cur, x->dims, sizeof(int64_t) * (size_t)r);
    double *a = malloc(sizeof(double) * (size_t)maxn), *b = malloc(sizeof(double) * (size_t)maxn);
    int64_t maxd = 1;
    for (int d = 0; d < r; d++)
        maxd = NPU_MAX(maxd, od[d]);
    struct rs_tap *taps = malloc(sizeof(*taps) * (size_t)maxd);
    enum npu_status st = NPU_OK;
    if (!a || !b || !taps) {
        st = KNOMEM();
        goto out;
    }
    cpu_convert(x->data, x->dtype, a, NPU_DTYPE_FP64, xn);
    for (int d = 0; d < r; d++) {
        bool ident = od[d] == x->dims[d] && sc[d] == 1 && p.ctm != CTM_TF_CROP_AND_RESIZE;
        if (ident)
            continue;
        int64_t outer = cpu_dims_prod(cur, 0, d), inner = cpu_dims_prod(cur, d + 1, r);
        if (antialias && sc[d] < 1 && p.mode != RS_NEAREST) {
            st = resample_axis_aa(ctx, &p, a, b, outer, cur[d], od[d], inner, sc[d], rs[d], re[d]);
            if (st)
                goto out;
        } else {
            for (int64_t q = 0; q < od[d]; q++)
                make_tap(&p, src_coord(&p, (double)q, sc[d], x->dims[d], od[d], rs[d], re[d]),
                         x->dims[d], &taps[q]);
            resample_axis(&p, a, b, outer, cur[d], od[d], inner, taps);
        }
        cur[d] = od[d];
        double *t = a;
        a = b;
        b = t;
    }
    if (npu_dtype_is_float(y->dtype)) {
        cpu_convert(a, NPU_DTYPE_FP64, y->data, y->dtype, on);
    } else {
        /* integer images: round to nearest, then saturate */
        for (int64_t i = 0; i < on; i++)
            a[i] = nearbyint(a[i]);
        cpu_convert(a, NPU_DTYPE_FP64, y->data, y->dtype, on);
    }
out:
    free(a);
    free(b);
    free(taps);
    return st;
}
