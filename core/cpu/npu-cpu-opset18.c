/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-opset18.c: CPU kernels of ops that ONNX added in opsets 18 to 23
 * and current exporters emit: RMSNormalization (23), CenterCropPad (18),
 * Col2Im (18) and AffineGrid (20). GroupNormalization, Mish and the Bitwise ops live with their
 * families (npu-cpu-norm.c, npu-cpu-elementwise.c).
 */
#include "npu-cpu-internal.h"

/* ---- RMSNormalization ----------------------------------------------------------------------- */

/* y = x / sqrt(mean(x^2 over axes [axis, rank)) + epsilon) * scale, scale
 * broadcast to the normalised shape; sums in double (covers stash_type). */
enum npu_status
cpu_k_rms_norm(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *sc = in[1];
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP64)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    if (sc->dtype != x->dtype)
        return KINVAL("scale dtype %s differs from the input's", npu_dtype_name(sc->dtype));
    int axis;
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", -1), x->ndim, &axis));
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, x->dims));
    int nsd = x->ndim - axis;
    if (sc->ndim > nsd)
        return KINVAL("scale has rank %d, more than the %d normalised dims", sc->ndim, nsd);
    for (int i = 0; i < sc->ndim; i++) {
        int64_t want = x->dims[x->ndim - sc->ndim + i];
        if (sc->dims[i] != 1 && sc->dims[i] != want)
            return KINVAL("scale does not broadcast to the normalised shape");
    }
    int64_t outer = cpu_dims_prod(x->dims, 0, axis), inner = cpu_dims_prod(x->dims, axis, x->ndim);
    double eps = npu_attrs_float(attrs, "epsilon", 1e-5f);
    double *s = malloc(sizeof(double) * (size_t)(inner ? inner : 1));
    if (!s)
        return KNOMEM();
    bool f64 = x->dtype == NPU_DTYPE_FP64;
    /* scale expanded to the normalised shape (numpy broadcasting, aligned right) */
    for (int64_t j = 0; j < inner; j++) {
        int64_t r = j, off = 0, stride = 1;
        for (int d = x->ndim - 1, k = sc->ndim - 1; d >= axis; d--, k--) {
            int64_t idx = r % x->dims[d];
            r /= x->dims[d];
            if (k >= 0) {
                if (sc->dims[k] != 1)
                    off += idx * stride;
                stride *= sc->dims[k];
            }
        }
        s[j] = f64 ? ((const double *)sc->data)[off] : ((const float *)sc->data)[off];
    }
    for (int64_t o = 0; o < outer; o++) {
        double ss = 0;
        for (int64_t j = 0; j < inner; j++) {
            double v = f64 ? ((const double *)x->data)[o * inner + j]
                           : ((const float *)x->data)[o * inner + j];
            ss += v * v;
        }
        double inv = 1.0 / sqrt(ss / (double)(inner ? inner : 1) + eps);
        for (int64_t j = 0; j < inner; j++) {
            int64_t e = o * inner + j;
            if (f64)
                ((double *)out[0]->data)[e] = ((const double *)x->data)[e] * inv * s[j];
            else
                ((float *)out[0]->data)[e] = (float)(((const float *)x->data)[e] * inv * s[j]);
        }
    }
    free(s);
    return NPU_OK;
}

/* ---- CenterCropPad -------------------------------------------------------------------------- */

/* Along each listed axis the input is cropped around its centre (start
 * (dim - target) / 2) or padded with zeros around it (offset (target - dim) / 2). */
enum npu_status
cpu_k_center_crop_pad(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *shape = in[1];
    int64_t tgt[NPU_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        tgt[d] = x->dims[d];
    size_t na = 0;
    const int64_t *axes = npu_attrs_ints(attrs, "axes", &na);
    int64_t ns = cpu_numel(shape);
    if (axes ? ns != (int64_t)na : ns != x->ndim)
        return KINVAL("shape has %lld entries, expected %lld", (long long)ns,
                      (long long)(axes ? (int64_t)na : x->ndim));
    for (int64_t i = 0; i < ns; i++) {
        int a = (int)i;
        if (axes)
            CPU_TRY(cpu_axis(ctx, axes[i], x->ndim, &a));
        tgt[a] = cpu_scalar_i64(shape, i);
        if (tgt[a] < 0)
            return KINVAL("negative target size %lld", (long long)tgt[a]);
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, tgt));
    size_t es = cpu_esize(x);
    int64_t n = cpu_numel(out[0]), xst[NPU_MAX_DIMS];
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        xst[d] = s;
        s *= x->dims[d];
    }
    char *o = out[0]->data;
    const char *src = x->data;
    for (int64_t e = 0; e < n; e++) {
        int64_t r = e, off = 0;
        bool inside = true;
        for (int d = x->ndim - 1; d >= 0; d--) {
            int64_t i = r % tgt[d];
            r /= tgt[d];
            int64_t si = tgt[d] <= x->dims[d] ? i + (x->dims[d] - tgt[d]) / 2
                                              : i - (tgt[d] - x->dims[d]) / 2;
            if (si < 0 || si >= x->dims[d])
                inside = false;
            off += si * xst[d];
        }
        if (inside)
            memcpy(o + (size_t)e * es, src + (size_t)off * es, es);
        else
            memset(o + (size_t)e * es, 0, es);
    }
    return NPU_OK;
}

/* ---- Col2Im --------------------------------------------------------------------------------- */

/* The inverse of im2col: input [N, C * prod(block), L] holds, per block
 * position (L of them), the block's elements; they are summed into
 * [N, C, image...] at their (strided, dilated, padded) positions. */
enum npu_status
cpu_k_col2im(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP64)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    int nd = (int)cpu_numel(in[1]);
    if (x->ndim != 3 || nd < 1 || nd + 2 > NPU_MAX_DIMS || cpu_numel(in[2]) != nd)
        return KINVAL("needs a 3-d input and image_shape, block_shape of one length");
    int64_t img[NPU_MAX_DIMS], blk[NPU_MAX_DIMS], dil[NPU_MAX_DIMS], str[NPU_MAX_DIMS],
        pb[NPU_MAX_DIMS], nb[NPU_MAX_DIMS];
    size_t nn;
    const int64_t *dv = npu_attrs_ints(attrs, "dilations", &nn);
    if (dv && (int)nn != nd)
        return KINVAL("dilations must have %d entries", nd);
    const int64_t *sv = npu_attrs_ints(attrs, "strides", &nn);
    if (sv && (int)nn != nd)
        return KINVAL("strides must have %d entries", nd);
    const int64_t *pv = npu_attrs_ints(attrs, "pads", &nn);
    if (pv && (int)nn != 2 * nd)
        return KINVAL("pads must have %d entries", 2 * nd);
    int64_t bprod = 1, L = 1;
    for (int d = 0; d < nd; d++) {
        img[d] = cpu_scalar_i64(in[1], d);
        blk[d] = cpu_scalar_i64(in[2], d);
        dil[d] = dv ? dv[d] : 1;
        str[d] = sv ? sv[d] : 1;
        pb[d] = pv ? pv[d] : 0;
        int64_t pe = pv ? pv[nd + d] : 0;
        if (img[d] < 0 || blk[d] < 1 || dil[d] < 1 || str[d] < 1 || pb[d] < 0 || pe < 0)
            return KINVAL("bad image_shape, block_shape, dilations, strides or pads");
        int64_t span = dil[d] * (blk[d] - 1) + 1;
        nb[d] = img[d] + pb[d] + pe >= span ? (img[d] + pb[d] + pe - span) / str[d] + 1 : 0;
        bprod *= blk[d];
        L *= nb[d];
    }
    if (x->dims[1] % bprod || x->dims[2] != L)
        return KINVAL("input dims [%lld, %lld] do not fit %lld-element blocks at %lld positions",
                      (long long)x->dims[1], (long long)x->dims[2], (long long)bprod, (long long)L);
    int64_t N = x->dims[0], C = x->dims[1] / bprod, odims[NPU_MAX_DIMS] = {N, C};
    for (int d = 0; d < nd; d++)
        odims[2 + d] = img[d];
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, nd + 2, odims));
    int64_t plane = cpu_dims_prod(img, 0, nd);
    bool f64 = x->dtype == NPU_DTYPE_FP64;
    double *acc = calloc((size_t)(plane ? plane : 1), sizeof(double));
    if (!acc)
        return KNOMEM();
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            memset(acc, 0, sizeof(double) * (size_t)plane);
            for (int64_t k = 0; k < bprod; k++)
                for (int64_t l = 0; l < L; l++) {
                    int64_t kr = k, lr = l, pos = 0;
                    bool inside = true;
                    for (int d = nd - 1; d >= 0; d--) {
                        int64_t ki = kr % blk[d], li = lr % nb[d];
                        kr /= blk[d];
                        lr /= nb[d];
                        int64_t p = li * str[d] - pb[d] + ki * dil[d];
                        inside = inside && p >= 0 && p < img[d];
                        pos += p * cpu_dims_prod(img, d + 1, nd);
                    }
                    if (!inside)
                        continue;
                    int64_t e = ((n * C + c) * bprod + k) * L + l;
                    acc[pos] += f64 ? ((const double *)x->data)[e] : ((const float *)x->data)[e];
                }
            for (int64_t i = 0; i < plane; i++) {
                int64_t e = (n * C + c) * plane + i;
                if (f64)
                    ((double *)out[0]->data)[e] = acc[i];
                else
                    ((float *)out[0]->data)[e] = (float)acc[i];
            }
        }
    free(acc);
    return NPU_OK;
}

/* ---- AffineGrid ----------------------------------------------------------------------------- */

/* Normalised coordinate i of a dim of s points: -1..1 through the corner
 * points (align_corners) or through the pixel centres. */
static double
grid_coord(int64_t i, int64_t s, bool align)
{
    if (align)
        return s > 1 ? -1.0 + 2.0 * (double)i / (double)(s - 1) : -1.0;
    return (2.0 * (double)i + 1.0) / (double)s - 1.0;
}

/* grid[n, (d,) h, w] = theta[n] . (x_w, y_h, (z_d,) 1) */
enum npu_status
cpu_k_affine_grid(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *th = in[0];
    if (th->dtype != NPU_DTYPE_FP32 && th->dtype != NPU_DTYPE_FP64)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(th->dtype));
    int k = (int)cpu_numel(in[1]);
    if (k != 4 && k != 5)
        return KINVAL("size must have 4 or 5 entries");
    int sd = k - 2;
    int64_t N = cpu_scalar_i64(in[1], 0), sp[3] = {1, 1, 1}, d[5] = {N};
    for (int i = 0; i < sd; i++) {
        sp[3 - sd + i] = cpu_scalar_i64(in[1], 2 + i); /* (D,) H, W */
        d[1 + i] = sp[3 - sd + i];
        if (d[1 + i] < 0)
            return KINVAL("negative size");
    }
    d[1 + sd] = sd;
    if (th->ndim != 3 || th->dims[0] != N || th->dims[1] != sd || th->dims[2] != sd + 1)
        return KINVAL("theta must be [%lld, %d, %d]", (long long)N, sd, sd + 1);
    CPU_TRY(cpu_check_out(ctx, out[0], th->dtype, sd + 2, d));
    bool align = npu_attrs_int(attrs, "align_corners", 0) != 0, f64 = th->dtype == NPU_DTYPE_FP64;
    int64_t e = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t z = 0; z < sp[0]; z++)
            for (int64_t y = 0; y < sp[1]; y++)
                for (int64_t x = 0; x < sp[2]; x++) {
                    double c[4] = {grid_coord(x, sp[2], align), grid_coord(y, sp[1], align)};
                    if (sd == 3)
                        c[2] = grid_coord(z, sp[0], align);
                    c[sd] = 1.0;
                    for (int r = 0; r < sd; r++, e++) {
                        double acc = 0;
                        for (int j = 0; j <= sd; j++) {
                            int64_t ti = (n * sd + r) * (sd + 1) + j;
                            acc += c[j] * (f64 ? ((const double *)th->data)[ti]
                                               : ((const float *)th->data)[ti]);
                        }
                        if (f64)
                            ((double *)out[0]->data)[e] = acc;
                        else
                            ((float *)out[0]->data)[e] = (float)acc;
                    }
                }
    return NPU_OK;
}
