/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-gridsample.c: GridSample (ONNX 16, and 20's 4-d form), what
 * torch.onnx.export writes F.grid_sample as (spatial transformers, optical
 * flow warping, deformable attention). X [N, C, H, W] is sampled at grid
 * [N, Ho, Wo, 2] (x then y, normalised to [-1, 1]) into [N, C, Ho, Wo].
 * Modes bilinear/linear, nearest (ties to even, as torch's nearbyint),
 * bicubic/cubic (A = -0.75); padding zeros, border, reflection; align_corners.
 * The coordinate rules follow the operator text: bilinear and nearest apply
 * the padding mode to the source coordinate, bicubic to each of its 16 taps.
 */
#include <math.h>
#include <string.h>

#include "npu-cpu-internal.h"

enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION };

/* [-1, 1] -> pixel coordinate. */
static double
gs_unnormalize(double c, int64_t size, bool align)
{
    return align ? (c + 1) / 2 * (double)(size - 1) : ((c + 1) * (double)size - 1) / 2;
}

/* Reflects c into [lo2/2, hi2/2] (bounds given doubled, as they may be half-integers). */
static double
gs_reflect(double c, double lo2, double hi2)
{
    if (lo2 == hi2)
        return 0;
    double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    c = fabs(c - mn);
    double extra = fmod(c, span);
    double flips = floor(c / span);
    return fmod(flips, 2) == 0 ? extra + mn : span - extra + mn;
}

/* The padding mode's rule for a coordinate (zeros leaves it as is). */
static double
gs_pad_coord(double c, int64_t size, enum gs_pad pad, bool align)
{
    if (c != c) /* NaN grid entries sample nothing (zero), as in the reference */
        return -1;
    if (pad == GS_BORDER) {
        c = c < 0 ? 0 : c > (double)(size - 1) ? (double)(size - 1) : c;
    } else if (pad == GS_REFLECTION) {
        c = align ? gs_reflect(c, 0, 2.0 * (double)(size - 1))
                  : gs_reflect(c, -1, 2.0 * (double)size - 1);
        c = c < 0 ? 0 : c > (double)(size - 1) ? (double)(size - 1) : c;
    }
    return c;
}

/* X[y][x] of one plane, 0 outside. */
static double
gs_at(const float *plane, int64_t H, int64_t W, int64_t y, int64_t x)
{
    return y >= 0 && y < H && x >= 0 && x < W ? plane[y * W + x] : 0.0;
}

static void
gs_cubic_coeffs(double t, double w[4])
{
    const double A = -0.75;
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

enum npu_status
cpu_k_grid_sample(CPU_KERNEL_ARGS)
{
    (void)nin;
    (void)nout;
    const struct npu_tensor *X = in[0], *G = in[1];
    if (X->dtype != NPU_DTYPE_FP32 || G->dtype != NPU_DTYPE_FP32)
        return KUNSUP("GridSample of %s (fp32 and fp16 are supported)", npu_dtype_name(X->dtype));
    if (X->ndim != 4)
        return KUNSUP("rank-%d input (4-d [N, C, H, W] is supported)", X->ndim);
    if (G->ndim != 4 || G->dims[0] != X->dims[0] || G->dims[3] != 2)
        return KINVAL("grid must be [N, Ho, Wo, 2] with N = %lld", (long long)X->dims[0]);
    const char *ms = npu_attrs_string(attrs, "mode", "bilinear");
    int mode; /* 0 linear, 1 nearest, 2 cubic */
    if (!strcmp(ms, "bilinear") || !strcmp(ms, "linear"))
        mode = 0;
    else if (!strcmp(ms, "nearest"))
        mode = 1;
    else if (!strcmp(ms, "bicubic") || !strcmp(ms, "cubic"))
        mode = 2;
    else
        return KINVAL("unknown mode '%s'", ms);
    const char *ps = npu_attrs_string(attrs, "padding_mode", "zeros");
    enum gs_pad pad;
    if (!strcmp(ps, "zeros"))
        pad = GS_ZEROS;
    else if (!strcmp(ps, "border"))
        pad = GS_BORDER;
    else if (!strcmp(ps, "reflection"))
        pad = GS_REFLECTION;
    else
        return KINVAL("unknown padding_mode '%s'", ps);
    bool align = npu_attrs_int(attrs, "align_corners", 0) != 0;
    int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
    int64_t Ho = G->dims[1], Wo = G->dims[2];
    int64_t od[4] = {N, C, Ho, Wo};
    CPU_TRY(cpu_check_out(ctx, out[0], X->dtype, 4, od));
    const float *x = X->data, *g = G->data;
    float *o = out[0]->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                const float *gp = g + ((n * Ho + i) * Wo + j) * 2;
                double sx = gs_unnormalize(gp[0], W, align), sy = gs_unnormalize(gp[1], H, align);
                for (int64_t c = 0; c < C; c++) {
                    const float *pl = x + (n * C + c) * H * W;
                    double v = 0;
                    if (mode == 2) {
                        if (sx != sx || sy != sy || fabs(sx) > 1e15 || fabs(sy) > 1e15) {
                            v = 0;
                        } else {
                            double fx = floor(sx), fy = floor(sy), wx[4], wy[4];
                            gs_cubic_coeffs(sx - fx, wx);
                            gs_cubic_coeffs(sy - fy, wy);
                            for (int a = 0; a < 4; a++)
                                for (int b = 0; b < 4; b++) {
                                    double ty = gs_pad_coord(fy - 1 + a, H, pad, align);
                                    double tx = gs_pad_coord(fx - 1 + b, W, pad, align);
                                    v += wy[a] * wx[b] * gs_at(pl, H, W, (int64_t)ty, (int64_t)tx);
                                }
                        }
                    } else {
                        double px = gs_pad_coord(sx, W, pad, align);
                        double py = gs_pad_coord(sy, H, pad, align);
                        if (px != px || py != py || fabs(px) > 1e15 || fabs(py) > 1e15) {
                            v = 0;
                        } else if (mode == 1) {
                            v = gs_at(pl, H, W, (int64_t)nearbyint(py), (int64_t)nearbyint(px));
                        } else {
                            double fx = floor(px), fy = floor(py), tx = px - fx, ty = py - fy;
                            int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
                            v = (1 - ty) * ((1 - tx) * gs_at(pl, H, W, y0, x0) +
                                            tx * gs_at(pl, H, W, y0, x0 + 1)) +
                                ty * ((1 - tx) * gs_at(pl, H, W, y0 + 1, x0) +
                                      tx * gs_at(pl, H, W, y0 + 1, x0 + 1));
                        }
                    }
                    o[((n * C + c) * Ho + i) * Wo + j] = (float)v;
                }
            }
    return NPU_OK;
}
