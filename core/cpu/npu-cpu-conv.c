/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-conv.c: Conv, ConvTranspose, ConvInteger and QLinearConv over any
 * number of spatial dims, with groups, dilations, strides and every auto_pad.
 *
 * fp32 Conv: im2col + GEMM per (image, group, tile of output positions); a
 * 1x1 / stride-1 / unpadded conv skips im2col and multiplies the input
 * directly; depthwise convs (one input channel per group) run a direct loop.
 * Bias and the fused activation (npu_act) are applied to each finished tile
 * while it is in cache. Tiles have a size fixed by the shape, so results do
 * not depend on the thread count.
 * fp32 ConvTranspose: GEMM to columns (W^T X), then col2im scatter-add.
 * fp64 and the integer forms use a direct loop computed in double (exact for
 * int8 products and sums below 2^53).
 */
#include "npu-cpu-conv-direct.h"
#include "npu-cpu-dwconv.h"
#include "npu-cpu-internal.h"
#include "npu-cpu-qgemm.h"

struct conv_geo {
    struct cpu_win w;
    int64_t N, C, M, G, Cg, Mg;
    int64_t in_plane, out_plane, kprod;
};

/* Reads the common Conv attributes against X [N, C, sp...] and W [M, C/G, k...]. */
static enum npu_status
conv_setup(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
           const struct npu_tensor *wt, struct conv_geo *g)
{
    if (x->ndim < 3 || wt->ndim != x->ndim)
        return KINVAL("X must be [N, C, spatial...] and W of the same rank");
    int nsp = x->ndim - 2;
    g->N = x->dims[0];
    g->C = x->dims[1];
    g->M = wt->dims[0];
    g->G = npu_attrs_int(attrs, "group", 1);
    if (g->G < 1 || g->C % g->G || g->M % g->G)
        return KINVAL("group %lld does not divide C=%lld and M=%lld", (long long)g->G,
                      (long long)g->C, (long long)g->M);
    g->Cg = g->C / g->G;
    g->Mg = g->M / g->G;
    if (wt->dims[1] != g->Cg)
        return KINVAL("W has %lld input channels per group, expected %lld", (long long)wt->dims[1],
                      (long long)g->Cg);
    size_t nk;
    const int64_t *ks = npu_attrs_ints(attrs, "kernel_shape", &nk);
    if (ks) {
        if ((int)nk != nsp)
            return KINVAL("kernel_shape has %zu entries for %d spatial dims", nk, nsp);
        for (int i = 0; i < nsp; i++)
            if (ks[i] != wt->dims[2 + i])
                return KINVAL("kernel_shape disagrees with W");
    }
    CPU_TRY(cpu_win_setup(ctx, attrs, nsp, x->dims + 2, wt->dims + 2, false, &g->w));
    g->in_plane = cpu_dims_prod(x->dims, 2, x->ndim);
    g->out_plane = cpu_dims_prod(g->w.out, 0, nsp);
    g->kprod = cpu_dims_prod(wt->dims, 2, wt->ndim);
    return NPU_OK;
}

static enum npu_status
conv_check_out(struct npu_cpu_ctx *ctx, const struct conv_geo *g, const struct npu_tensor *y,
               enum npu_dtype dt)
{
    int64_t od[NPU_MAX_DIMS] = {g->N, g->M};
    for (int i = 0; i < g->w.nsp; i++)
        od[2 + i] = g->w.out[i];
    return cpu_check_out(ctx, y, dt, g->w.nsp + 2, od);
}

/* Bias [M] of the op's dtype (as float), or NULL. */
static enum npu_status
conv_bias(struct npu_cpu_ctx *ctx, const struct npu_tensor *b, int64_t M, const float **out)
{
    *out = NULL;
    if (!b || cpu_absent(b))
        return NPU_OK;
    if (b->dtype != NPU_DTYPE_FP32 || cpu_numel(b) != M || b->ndim != 1)
        return KINVAL("B must be fp32 [%lld]", (long long)M);
    *out = b->data;
    return NPU_OK;
}

/* ---- fp32 Conv ------------------------------------------------------------------------------ */

struct conv_job {
    const struct conv_geo *g;
    const float *x, *w, *bias;
    float *y;
    const struct cpu_act_spec *act;
    int64_t tw, ntiles; /* output positions per tile */
    int64_t mb, mtiles; /* output channels (of a group) per tile */
    int64_t krows;      /* Cg * kprod */
    bool direct;        /* 1x1, stride 1, no padding: no im2col */
    bool dw_padded;     /* depthwise through dw_padded (its plane fits the scratch) */
    struct npu_cpu_ctx *ctx;
};

/* col[r][t] for output positions [t0, t0+tw) of one image/group (any rank). */
static void
im2col(const struct conv_geo *g, const float *x, int64_t t0, int64_t tw, float *col)
{
    const struct cpu_win *w = &g->w;
    int nsp = w->nsp;
    if (nsp == 2) {
        int64_t H = w->in[0], W = w->in[1], OW = w->out[1];
        int64_t KH = w->k[0], KW = w->k[1], sw = w->s[1];
        for (int64_t c = 0; c < g->Cg; c++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    float *dst = col + ((c * KH + kh) * KW + kw) * tw;
                    const float *xc = x + c * H * W;
                    int64_t w0 = kw * w->d[1] - w->pb[1]; /* input column of ow = 0 */
                    /* ow range whose input column is inside [0, W) */
                    int64_t lo = w0 >= 0 ? 0 : (-w0 + sw - 1) / sw;
                    int64_t hi = W - w0 <= 0 ? 0 : (W - w0 + sw - 1) / sw;
                    hi = NPU_MIN(hi, OW);
                    /* walk the tile one output row (segment) at a time */
                    for (int64_t t = 0; t < tw;) {
                        int64_t oh = (t0 + t) / OW, ow0 = (t0 + t) % OW;
                        int64_t n = NPU_MIN(OW - ow0, tw - t);
                        int64_t h = oh * w->s[0] - w->pb[0] + kh * w->d[0];
                        float *d = dst + t;
                        if (h < 0 || h >= H) {
                            memset(d, 0, sizeof(float) * (size_t)n);
                        } else {
                            const float *xr = xc + h * W + w0;
                            for (int64_t q = 0; q < n; q++) {
                                int64_t ow = ow0 + q;
                                if (ow < lo || ow >= hi)
                                    d[q] = 0.0f;
                                else if (sw == 1) {
                                    /* contiguous run of valid columns */
                                    int64_t run = NPU_MIN(hi, ow0 + n) - ow;
                                    memcpy(d + q, xr + ow, sizeof(float) * (size_t)run);
                                    q += run - 1;
                                } else {
                                    d[q] = xr[ow * sw];
                                }
                            }
                        }
                        t += n;
                    }
                }
        return;
    }
    int64_t ist[CPU_MAX_SP];
    cpu_row_strides(w->in, nsp, ist);
    for (int64_t c = 0; c < g->Cg; c++) {
        int64_t kpos[CPU_MAX_SP] = {0};
        for (int64_t kr = 0; kr < g->kprod; kr++) {
            float *dst = col + (c * g->kprod + kr) * tw;
            for (int64_t t = 0; t < tw; t++) {
                int64_t o = t0 + t, off = 0;
                bool inside = true;
                for (int i = nsp - 1; i >= 0; i--) {
                    int64_t oi = o % w->out[i];
                    o /= w->out[i];
                    int64_t p = oi * w->s[i] - w->pb[i] + kpos[i] * w->d[i];
                    if (p < 0 || p >= w->in[i])
                        inside = false;
                    off += p * ist[i];
                }
                dst[t] = inside ? x[c * g->in_plane + off] : 0.0f;
            }
            cpu_index_next(kpos, w->k, nsp);
        }
    }
}

static void
conv_epilogue(const struct conv_job *j, float *y, int64_t m0, int64_t rows, int64_t t0, int64_t tw)
{
    for (int64_t m = 0; m < rows; m++) {
        float *r = y + m * j->g->out_plane + t0;
        if (j->bias) {
            float b = j->bias[m0 + m];
            for (int64_t t = 0; t < tw; t++)
                r[t] += b;
        }
        cpu_act_apply(j->act, r, tw);
    }
}

static void
conv_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct conv_job *j = arg;
    const struct conv_geo *g = j->g;
    float *col = cpu_scratch(j->ctx, tid);
    for (int64_t t = begin; t < end; t++) {
        int64_t mtile = t % j->mtiles, rest = t / j->mtiles;
        int64_t tile = rest % j->ntiles, ng = rest / j->ntiles;
        int64_t n = ng / g->G, gi = ng % g->G;
        int64_t t0 = tile * j->tw, tw = NPU_MIN(j->tw, g->out_plane - t0);
        int64_t m0 = gi * g->Mg + mtile * j->mb, mb = NPU_MIN(j->mb, g->Mg - mtile * j->mb);
        const float *x = j->x + (n * g->C + gi * g->Cg) * g->in_plane;
        const float *wg = j->w + m0 * j->krows;
        float *y = j->y + (n * g->M + m0) * g->out_plane;
        struct cpu_epilogue ep = {j->bias ? j->bias + m0 : NULL, NULL, j->act};
        if (j->direct) {
            cpu_sgemm_ep(false, false, mb, tw, g->Cg, 1.0f, wg, j->krows, x + t0, g->in_plane, 0.0f,
                         y + t0, g->out_plane, &ep);
        } else {
            im2col(g, x, t0, tw, col);
            cpu_sgemm_ep(false, false, mb, tw, j->krows, 1.0f, wg, j->krows, col, tw, 0.0f, y + t0,
                         g->out_plane, &ep);
        }
    }
}

/* depthwise: each group has one input channel (and Mg output channels) */
/* One output row of a depthwise (one channel) 2-D conv: taps outer, output columns inner,
 * each tap over the columns whose input falls inside the image (no test per element; stride
 * 1 is a contiguous multiply-add GCC vectorises). Every output still sums its taps in (kh, kw)
 * order from 0, as a per-output loop would. */
CPU_HOT static void
dw_row(const float *x, const float *k, const struct cpu_win *w, int64_t H, int64_t W, int64_t OW,
       int64_t oh, float *yr)
{
    const int64_t s1 = w->s[1];
    for (int64_t ow = 0; ow < OW; ow++)
        yr[ow] = 0;
    for (int64_t kh = 0; kh < w->k[0]; kh++) {
        int64_t h = oh * w->s[0] - w->pb[0] + kh * w->d[0];
        if (h < 0 || h >= H)
            continue;
        const float *xr = x + h * W;
        for (int64_t kw = 0; kw < w->k[1]; kw++) {
            const float kv = k[kh * w->k[1] + kw];
            const int64_t off = kw * w->d[1] - w->pb[1]; /* input column of ow = ow * s1 + off */
            int64_t lo = 0, hi = OW;
            while (lo < OW && lo * s1 + off < 0)
                lo++;
            while (hi > lo && (hi - 1) * s1 + off >= W)
                hi--;
            if (s1 == 1) {
                for (int64_t ow = lo; ow < hi; ow++)
                    yr[ow] += xr[ow + off] * kv;
            } else {
                for (int64_t ow = lo; ow < hi; ow++)
                    yr[ow] += xr[ow * s1 + off] * kv;
            }
        }
    }
}

/* Depthwise 2-D through a zero-padded copy of the input plane split into stride phases
 * (padded row hq * s0 + r0, column q * s1 + r1 is phase (r0, r1)'s element [hq][q]): every
 * tap of output (oh, ow) then reads phase element [oh + a][ow + b] for fixed a, b, so over
 * the flattened index oh * Wq + ow each tap is one contiguous run, whatever the stride and
 * however narrow the rows (7 or 14 wide late in a MobileNet): the sums run over whole
 * vectors, 64 outputs at a time in 8 independent sums, the few columns past OW computed and
 * dropped. No tap needs a bounds test; every output sums its taps in (kh, kw) order from 0 as
 * dw_row does (a padded tap adds 0 * k), then the bias is added as the rows are copied out
 * and the activation applied to the plane while it is in L1/L2. */
struct dw_pad {
    int64_t Hq, Wq, phase; /* rows and columns of a phase, floats per phase */
    int64_t buf, tmp;      /* floats: the phases (+ margin), the flat output */
};

static struct dw_pad
dw_pad_dims(const struct cpu_win *w)
{
    struct dw_pad p;
    p.Hq = NPU_DIV_ROUND_UP(w->in[0] + w->pb[0] + w->pe[0], w->s[0]) + 1;
    p.Wq = NPU_DIV_ROUND_UP(w->in[1] + w->pb[1] + w->pe[1], w->s[1]) + 1;
    p.phase = p.Hq * p.Wq;
    /* a run of the last phase may read up to two rows and 16 floats past its end (the
     * columns past OW of the last output row): the margin keeps it inside the buffer */
    p.buf = w->s[0] * w->s[1] * p.phase + 2 * p.Wq + 32;
    p.tmp = w->out[0] * p.Wq + 16;
    return p;
}

CPU_HOT static void
dw_padded(const float *x, const float *k, const struct cpu_win *w, struct dw_pad p, float *buf,
          bool zero, float bias, const struct cpu_act_spec *act, float *y)
{
    const int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
    const int64_t s0 = w->s[0], s1 = w->s[1], KH = w->k[0], KW = w->k[1], pb1 = w->pb[1];
    float *tmp = buf + p.buf;
    /* the padding sits at the same places for every channel of the layer, and the copy below
     * overwrites the rest: zeroed once per run of channels */
    if (zero)
        memset(buf, 0, sizeof(float) * (size_t)p.buf);
    for (int64_t h = 0; h < H; h++) {
        const float *xr = x + h * W;
        int64_t hp = h + w->pb[0];
        float *prow = buf + (hp % s0) * s1 * p.phase + (hp / s0) * p.Wq;
        if (s1 == 1) {
            memcpy(prow + pb1, xr, sizeof(float) * (size_t)W);
            continue;
        }
        int64_t c0 = 0;
        if (s1 == 2) {
            /* 16 input columns at a time split into their even and odd ones: input column c
             * is padded column c + pb1, element (c + pb1) / 2 of phase (c + pb1) % 2 */
            float *de = prow + (pb1 & 1) * p.phase + (pb1 >> 1);
            float *dodd = prow + ((pb1 + 1) & 1) * p.phase + ((pb1 + 1) >> 1);
            for (; c0 + 16 <= W; c0 += 16) {
                v8f a, b;
                memcpy(&a, xr + c0, sizeof(a));
                memcpy(&b, xr + c0 + 8, sizeof(b));
#if defined(__clang__)
                v8f ev = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
                v8f od = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
#else
                v8f ev = __builtin_shuffle(a, b, (v8i){0, 2, 4, 6, 8, 10, 12, 14});
                v8f od = __builtin_shuffle(a, b, (v8i){1, 3, 5, 7, 9, 11, 13, 15});
#endif
                memcpy(de + c0 / 2, &ev, sizeof(ev));
                memcpy(dodd + c0 / 2, &od, sizeof(od));
            }
        }
        for (int64_t r = 0; r < s1; r++) {
            /* padded column q * s1 + r is input column q * s1 + r - pb1 (from c0 on) */
            float *d = prow + r * p.phase;
            int64_t q0 = c0 + pb1 >= r ? NPU_DIV_ROUND_UP(c0 + pb1 - r, s1) : 0;
            int64_t q1 = NPU_DIV_ROUND_UP(W - r + pb1, s1); /* first q past the input */
            const float *xs = xr + r - pb1;
            if (s1 == 2) /* a constant stride: the loop vectorises */
                for (int64_t q = q0; q < q1; q++)
                    d[q] = xs[2 * q];
            else
                for (int64_t q = q0; q < q1; q++)
                    d[q] = xs[q * s1];
        }
    }
    /* the taps' offsets in the buffer and their weights */
    int64_t off[64];
    float kv[64];
    const int64_t ntap = KH * KW;
    for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++) {
            int64_t rh = kh * w->d[0], cw = kw * w->d[1];
            off[kh * KW + kw] = ((rh % s0) * s1 + cw % s1) * p.phase + (rh / s0) * p.Wq + cw / s1;
            kv[kh * KW + kw] = k[kh * KW + kw];
        }
    if (s1 == 1 && OW >= 16) {
        /* unit column stride, rows of 16 or more: row by row straight into y, bias added in
         * registers, the last 16 columns of a row recomputed (identically) rather than a
         * scalar tail, the activation on the row in L1 (measured faster here than the flat
         * loop below, whose temporary and plane-wide passes cost more than they save) */
        const v8f bv = {bias, bias, bias, bias, bias, bias, bias, bias};
        for (int64_t oh = 0; oh < OH; oh++) {
            float *yr = y + oh * OW;
            const float *rows = buf + oh * p.Wq;
            for (int64_t ow = 0; ow < OW; ow += 16) {
                int64_t o = ow + 16 <= OW ? ow : OW - 16;
                v8f a0 = {0}, a1 = {0};
                for (int64_t t = 0; t < ntap; t++) {
                    v8f v0, v1;
                    memcpy(&v0, rows + off[t] + o, sizeof(v0));
                    memcpy(&v1, rows + off[t] + o + 8, sizeof(v1));
                    a0 += v0 * kv[t];
                    a1 += v1 * kv[t];
                }
                a0 += bv;
                a1 += bv;
                memcpy(yr + o, &a0, sizeof(a0));
                memcpy(yr + o + 8, &a1, sizeof(a1));
            }
            cpu_act_apply(act, yr, OW);
        }
        return;
    }
    /* 64 outputs (8 independent sums: the FMA latency is hidden) per pass over the taps,
     * then 16 */
    const int64_t n = OH * p.Wq;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
        for (int64_t t = 0; t < ntap; t++) {
            const float *q = buf + off[t] + i;
            const float kt = kv[t];
            v8f x0, x1, x2, x3, x4, x5, x6, x7;
            memcpy(&x0, q, sizeof(x0));
            memcpy(&x1, q + 8, sizeof(x1));
            memcpy(&x2, q + 16, sizeof(x2));
            memcpy(&x3, q + 24, sizeof(x3));
            memcpy(&x4, q + 32, sizeof(x4));
            memcpy(&x5, q + 40, sizeof(x5));
            memcpy(&x6, q + 48, sizeof(x6));
            memcpy(&x7, q + 56, sizeof(x7));
            a0 += x0 * kt;
            a1 += x1 * kt;
            a2 += x2 * kt;
            a3 += x3 * kt;
            a4 += x4 * kt;
            a5 += x5 * kt;
            a6 += x6 * kt;
            a7 += x7 * kt;
        }
        v8f r[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
        memcpy(tmp + i, r, sizeof(r));
    }
    for (; i < n; i += 16) {
        v8f a0 = {0}, a1 = {0};
        for (int64_t t = 0; t < ntap; t++) {
            v8f x0, x1;
            memcpy(&x0, buf + off[t] + i, sizeof(x0));
            memcpy(&x1, buf + off[t] + i + 8, sizeof(x1));
            a0 += x0 * kv[t];
            a1 += x1 * kv[t];
        }
        memcpy(tmp + i, &a0, sizeof(a0));
        memcpy(tmp + i + 8, &a1, sizeof(a1));
    }
    for (int64_t oh = 0; oh < OH; oh++) {
        float *yr = y + oh * OW;
        const float *tr = tmp + oh * p.Wq;
        for (int64_t ow = 0; ow < OW; ow++)
            yr[ow] = tr[ow] + bias;
    }
    cpu_act_apply(act, y, OH * OW);
}

static void
dw_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct conv_job *j = arg;
    const struct conv_geo *g = j->g;
    const struct cpu_win *w = &g->w;
    int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / g->M, m = t % g->M, c = m / g->Mg;
        const float *x = j->x + (n * g->C + c) * g->in_plane;
        const float *k = j->w + m * g->kprod;
        float *y = j->y + (n * g->M + m) * g->out_plane;
        if (j->dw_padded) {
            dw_padded(x, k, w, dw_pad_dims(w), cpu_scratch(j->ctx, tid), t == begin,
                      j->bias ? j->bias[m] : 0, j->act, y);
            continue;
        }
        for (int64_t oh = 0; oh < OH; oh++)
            dw_row(x, k, w, H, W, OW, oh, y + oh * OW);
        conv_epilogue(j, y, m, 1, 0, g->out_plane);
    }
}

/* ---- generic direct conv in double (fp64, ConvInteger, QLinearConv) ------------------------- */

struct dconv_args {
    const struct conv_geo *g;
    const struct npu_tensor *x, *w;
    double xzp;
    const double *wzp;  /* [M] */
    const double *bias; /* [M] or NULL */
    double *acc;        /* [N, M, out_plane] */
};

static void
dconv_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct dconv_args *a = arg;
    const struct conv_geo *g = a->g;
    const struct cpu_win *w = &g->w;
    int nsp = w->nsp;
    int64_t ist[CPU_MAX_SP];
    cpu_row_strides(w->in, nsp, ist);
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / g->M, m = t % g->M, gi = m / g->Mg;
        int64_t opos[CPU_MAX_SP] = {0};
        for (int64_t o = 0; o < g->out_plane; o++) {
            double acc = a->bias ? a->bias[m] : 0.0;
            for (int64_t c = 0; c < g->Cg; c++) {
                int64_t kpos[CPU_MAX_SP] = {0};
                for (int64_t kr = 0; kr < g->kprod; kr++) {
                    int64_t off = 0;
                    bool inside = true;
                    for (int i = 0; i < nsp; i++) {
                        int64_t p = opos[i] * w->s[i] - w->pb[i] + kpos[i] * w->d[i];
                        if (p < 0 || p >= w->in[i])
                            inside = false;
                        off += p * ist[i];
                    }
                    if (inside) {
                        double xv =
                            cpu_scalar_f64(a->x, (n * g->C + gi * g->Cg + c) * g->in_plane + off) -
                            a->xzp;
                        double wv = cpu_scalar_f64(a->w, (m * g->Cg + c) * g->kprod + kr) -
                                    (a->wzp ? a->wzp[m] : 0.0);
                        acc += xv * wv;
                    }
                    cpu_index_next(kpos, w->k, nsp);
                }
            }
            a->acc[t * g->out_plane + o] = acc;
            cpu_index_next(opos, w->out, nsp);
        }
    }
}

static enum npu_status
conv_direct_double(struct npu_cpu_ctx *ctx, struct dconv_args *a)
{
    const struct conv_geo *g = a->g;
    a->acc = malloc(sizeof(double) * (size_t)NPU_MAX(g->N * g->M * g->out_plane, (int64_t)1));
    if (!a->acc)
        return KNOMEM();
    cpu_parallel_for(ctx, g->N * g->M, 1, dconv_task, a);
    return NPU_OK;
}

/* NPU_CPU_PROFILE_LAYERS: adds one call to its shape's entry (up to prof_cap_layers shapes) */
static void
conv_prof_layer(struct npu_cpu_ctx *ctx, const struct conv_geo *g, int kind, double s, double flop)
{
    const struct cpu_win *w = &g->w;
    if (w->nsp != 2)
        return;
    struct cpu_prof_layer key = {.kind = kind,
                                 .C = g->C,
                                 .H = w->in[0],
                                 .W = w->in[1],
                                 .M = g->M,
                                 .G = g->G,
                                 .kh = w->k[0],
                                 .kw = w->k[1],
                                 .sh = w->s[0],
                                 .sw = w->s[1],
                                 .OH = w->out[0],
                                 .OW = w->out[1]};
    for (int i = 0; i < ctx->prof_nlayers; i++) {
        struct cpu_prof_layer *l = &ctx->prof_layers[i];
        if (l->kind == key.kind && l->C == key.C && l->H == key.H && l->W == key.W &&
            l->M == key.M && l->G == key.G && l->kh == key.kh && l->kw == key.kw &&
            l->sh == key.sh && l->sw == key.sw) {
            l->s += s;
            l->smin = s < l->smin ? s : l->smin;
            l->flop += flop;
            l->n++;
            return;
        }
    }
    if (!ctx->prof_layers) {
        ctx->prof_layers = calloc((size_t)ctx->prof_cap_layers, sizeof(*ctx->prof_layers));
        if (!ctx->prof_layers) {
            ctx->prof_cap_layers = 0;
            return;
        }
    }
    if (ctx->prof_nlayers >= ctx->prof_cap_layers)
        return;
    key.s = key.smin = s;
    key.flop = flop;
    key.n = 1;
    ctx->prof_layers[ctx->prof_nlayers++] = key;
}

void
cpu_conv_prof_layer(struct npu_cpu_ctx *ctx, int kind, int64_t C, int64_t M, int64_t G,
                    const struct cpu_win *w, double s, double flop)
{
    struct conv_geo g = {.w = *w, .C = C, .M = M, .G = G};
    if (ctx->prof_cap_layers)
        conv_prof_layer(ctx, &g, kind, s, flop);
}

/* NPU_CPU_PROFILE: time and work of an fp32 Conv by path */
static void
conv_prof_g(struct npu_cpu_ctx *ctx, const struct conv_geo *g, int kind, double t0, double flop)
{
    if (!ctx->prof)
        return;
    double s = cpu_now() - t0;
    ctx->prof_conv_s[kind] += s;
    ctx->prof_conv_n[kind]++;
    ctx->prof_conv_flop[kind] += flop;
    if (ctx->prof_cap_layers)
        conv_prof_layer(ctx, g, kind, s, flop);
}
#define conv_prof(ctx, kind, t0, flop) conv_prof_g(ctx, gp, kind, t0, flop)

/* y = act(y + r) over whole channel planes (the residual after a path without it) */
struct res_job {
    float *y;
    const float *r;
    const struct cpu_act_spec *act;
    int64_t plane;
};

static void
res_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct res_job *rj = arg;
    float *y = rj->y + begin * rj->plane;
    const float *r = rj->r + begin * rj->plane;
    int64_t n = (end - begin) * rj->plane;
    for (int64_t i = 0; i < n; i++)
        y[i] += r[i];
    cpu_act_apply(rj->act, y, n);
}

/* A path without the residual epilogue ran without the activation: now y = act(y + R). */
static enum npu_status
conv_res(struct npu_cpu_ctx *ctx, const struct conv_geo *g, struct npu_tensor *y,
         const struct npu_tensor *res, const struct cpu_act_spec *act)
{
    if (!res)
        return NPU_OK;
    struct res_job rj = {.y = y->data, .r = res->data, .act = act, .plane = g->out_plane};
    cpu_parallel_for(ctx, g->N * g->M, 1, res_task, &rj);
    return NPU_OK;
}

static enum npu_status conv_fp32(struct npu_cpu_ctx *ctx, const struct conv_geo *gp,
                                 const struct npu_tensor *x, const struct npu_tensor *wt,
                                 const struct npu_tensor *b, struct npu_tensor *y,
                                 const struct cpu_act_spec *actp, const struct npu_tensor *res);

enum npu_status
cpu_k_conv(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *wt = in[1], *b = nin > 2 ? in[2] : NULL;
    struct npu_tensor *y = out[0];
    if (wt->dtype != x->dtype)
        return KINVAL("X and W dtypes differ");
    struct conv_geo g;
    CPU_TRY(conv_setup(ctx, attrs, x, wt, &g));
    CPU_TRY(conv_check_out(ctx, &g, y, x->dtype));
    struct cpu_act_spec act;
    CPU_TRY(cpu_act_parse(ctx, attrs, &act));
    /* a 4th operand (the graph executor's fused residual Add): Y = act(conv + R) */
    const struct npu_tensor *res = nin > 3 && !cpu_absent(in[3]) ? in[3] : NULL;
    if (res &&
        (res->dtype != NPU_DTYPE_FP32 || x->dtype != NPU_DTYPE_FP32 || res->ndim != y->ndim ||
         memcmp(res->dims, y->dims, sizeof(int64_t) * (size_t)y->ndim)))
        return KINVAL("a residual operand R must be fp32 with Y's shape");
    if (cpu_numel(y) == 0)
        return NPU_OK;
    if (x->dtype == NPU_DTYPE_FP64) {
        if (act.kind != CPU_ACT_NONE)
            return KUNSUP("fused activation needs fp32 or fp16");
        double *bias = NULL;
        if (b && !cpu_absent(b)) {
            if (b->dtype != NPU_DTYPE_FP64 || cpu_numel(b) != g.M)
                return KINVAL("B must be [M] of X's dtype");
            bias = b->data;
        }
        struct dconv_args a = {.g = &g, .x = x, .w = wt, .bias = bias};
        CPU_TRY(conv_direct_double(ctx, &a));
        memcpy(y->data, a.acc, sizeof(double) * (size_t)cpu_numel(y));
        free(a.acc);
        return NPU_OK;
    }
    if (x->dtype != NPU_DTYPE_FP32)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    return conv_fp32(ctx, &g, x, wt, b, y, &act, res);
}

/* The fp32 paths; res: a residual the direct path adds in its epilogue (or NULL). */
static enum npu_status
conv_fp32(struct npu_cpu_ctx *ctx, const struct conv_geo *gp, const struct npu_tensor *x,
          const struct npu_tensor *wt, const struct npu_tensor *b, struct npu_tensor *y,
          const struct cpu_act_spec *actp, const struct npu_tensor *res)
{
    const struct conv_geo g = *gp;
    /* with a residual, only the direct path applies the activation itself (after adding R);
     * the others run without it and conv_res finishes */
    const struct cpu_act_spec act = res ? (struct cpu_act_spec){.kind = CPU_ACT_NONE} : *actp;
    struct conv_job j = {.g = gp,
                         .x = x->data,
                         .w = wt->data,
                         .y = y->data,
                         .act = &act,
                         .krows = g.Cg * g.kprod,
                         .ctx = ctx};
    CPU_TRY(conv_bias(ctx, b, g.M, &j.bias));
    const struct cpu_win *w = &gp->w;
    bool unit = true;
    for (int i = 0; i < w->nsp; i++)
        unit = unit && w->k[i] == 1 && w->s[i] == 1 && w->pb[i] == 0 && w->pe[i] == 0;
    double t0 = ctx->prof ? cpu_now() : 0;
    double flop = 2.0 * (double)g.N * (double)g.M * (double)g.out_plane * (double)j.krows;
    if (g.Cg == 1 && w->nsp == 2 && !unit) {
        /* AVX-512 / AVX2 depthwise (npu-cpu-dwconv.c), else the portable paths below */
        if (g.G == g.C && cpu_conv_dw_fast(ctx, w, g.N, g.C, g.M, j.x, j.w, j.bias, &act, j.y)) {
            conv_prof(ctx, 0, t0, flop);
            return conv_res(ctx, gp, y, res, actp);
        }
        struct dw_pad p = dw_pad_dims(w);
        int64_t need = p.buf + p.tmp;
        if (w->s[0] <= 4 && w->s[1] <= 4 && w->k[0] * w->k[1] <= 64 && need <= (INT64_C(1) << 22) &&
            cpu_scratch_reserve(ctx, sizeof(float) * (size_t)need) == NPU_OK)
            j.dw_padded = true;
        cpu_parallel_for(ctx, g.N * g.M, 1, dw_task, &j);
        conv_prof(ctx, 0, t0, flop);
        return conv_res(ctx, gp, y, res, actp);
    }
    /* the 3-channel stems: the direct path where it runs (measured 10-20 % faster on the
     * 640x640 and 224x224 stems, one thread), else the small-channel kernel */
    if (g.G == 1 && !unit && !cpu_conv_direct_wanted(w, g.C, g.M, g.G) &&
        cpu_conv_small_c_fast(ctx, w, g.N, g.C, g.M, j.x, j.w, j.bias, &act, j.y)) {
        conv_prof(ctx, 4, t0, flop); /* the 3-channel stem (npu-cpu-dwconv.c) */
        return conv_res(ctx, gp, y, res, actp);
    }
    /* a 1x1 conv over a 1x1 plane (SE blocks): matrix-vector (npu-cpu-dwconv.c) */
    if (unit && g.G == 1 && g.out_plane == 1 && !res &&
        cpu_conv_1x1_vec_fast(ctx, g.N, g.C, g.M, j.x, j.w, j.bias, &act, j.y)) {
        conv_prof(ctx, 1, t0, flop);
        return NPU_OK;
    }
    if (cpu_conv_direct_wanted(w, g.C, g.M, g.G)) {
        struct cpu_cd_args da = {
            w, g.N, g.C, g.M, j.x, j.w, j.bias, j.y, actp, ctx->prep, res ? res->data : NULL};
        CPU_TRY(cpu_conv_direct(ctx, &da));
        conv_prof(ctx, 3, t0, flop);
        return NPU_OK;
    }
    j.direct = unit;
    /* tile of output positions: the im2col block stays around 1 MB, at least 64 wide */
    int64_t tw = (int64_t)(1 << 18) / NPU_MAX(j.krows, (int64_t)1);
    tw = NPU_MAX(tw, (int64_t)64);
    tw = NPU_ALIGN(tw, (int64_t)16);
    j.tw = NPU_MIN(tw, g.out_plane);
    j.ntiles = NPU_DIV_ROUND_UP(g.out_plane, j.tw);
    /* few tiles (the late 7x7 and 14x14 layers are one each): output channels are cut too, in
     * blocks of at least 48, so that two or more threads have work; by the shape alone, and
     * every output element is summed the same way in any block, so any thread count gives the
     * same result */
    j.mb = g.Mg;
    int64_t tasks = g.N * g.G * j.ntiles;
    if (tasks < 4 && g.Mg >= 96) {
        int64_t want = NPU_DIV_ROUND_UP((int64_t)4, tasks);
        j.mb = NPU_MAX((int64_t)48, NPU_ALIGN(NPU_DIV_ROUND_UP(g.Mg, want), (int64_t)16));
    }
    j.mtiles = NPU_DIV_ROUND_UP(g.Mg, j.mb);
    if (!j.direct)
        CPU_TRY(cpu_scratch_reserve(ctx, sizeof(float) * (size_t)(j.krows * j.tw)));
    cpu_parallel_for(ctx, g.N * g.G * j.ntiles * j.mtiles, 1, conv_task, &j);
    conv_prof(ctx, j.direct ? 1 : 2, t0, flop);
    return conv_res(ctx, gp, y, res, actp);
}

/* ---- ConvTranspose -------------------------------------------------------------------------- */

struct convt_geo {
    int nsp;
    int64_t N, C, M, G, Cg, Mg, kprod, in_plane, out_plane;
    int64_t in[CPU_MAX_SP], out[CPU_MAX_SP], k[CPU_MAX_SP], s[CPU_MAX_SP], d[CPU_MAX_SP],
        pb[CPU_MAX_SP];
};

static enum npu_status
convt_setup(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
            const struct npu_tensor *wt, struct convt_geo *g)
{
    if (x->ndim < 3 || wt->ndim != x->ndim)
        return KINVAL("X must be [N, C, spatial...] and W of the same rank");
    int nsp = g->nsp = x->ndim - 2;
    g->N = x->dims[0];
    g->C = x->dims[1];
    g->G = npu_attrs_int(attrs, "group", 1);
    if (g->G < 1 || g->C % g->G)
        return KINVAL("group %lld does not divide C=%lld", (long long)g->G, (long long)g->C);
    if (wt->dims[0] != g->C)
        return KINVAL("W must have C=%lld rows", (long long)g->C);
    g->Cg = g->C / g->G;
    g->Mg = wt->dims[1];
    g->M = g->Mg * g->G;
    size_t n;
    const int64_t *st = npu_attrs_ints(attrs, "strides", &n);
    if (st && (int)n != nsp)
        return KINVAL("strides has %zu entries", n);
    const int64_t *dl = npu_attrs_ints(attrs, "dilations", &n);
    if (dl && (int)n != nsp)
        return KINVAL("dilations has %zu entries", n);
    const int64_t *op = npu_attrs_ints(attrs, "output_padding", &n);
    if (op && (int)n != nsp)
        return KINVAL("output_padding has %zu entries", n);
    const int64_t *os = npu_attrs_ints(attrs, "output_shape", &n);
    if (os && (int)n != nsp && (int)n != nsp + 2)
        return KINVAL("output_shape has %zu entries", n);
    if (os && (int)n == nsp + 2)
        os += 2;
    const int64_t *pads = npu_attrs_ints(attrs, "pads", &n);
    if (pads && (int)n != 2 * nsp)
        return KINVAL("pads has %zu entries", n);
    const char *ap = npu_attrs_string(attrs, "auto_pad", "NOTSET");
    bool same_u = !strcmp(ap, "SAME_UPPER"), same_l = !strcmp(ap, "SAME_LOWER");
    if (!same_u && !same_l && strcmp(ap, "VALID") && strcmp(ap, "NOTSET") && *ap)
        return KINVAL("auto_pad \"%s\" is not valid", ap);
    for (int i = 0; i < nsp; i++) {
        g->in[i] = x->dims[2 + i];
        g->k[i] = wt->dims[2 + i];
        g->s[i] = st ? st[i] : 1;
        g->d[i] = dl ? dl[i] : 1;
        if (g->s[i] < 1 || g->d[i] < 1 || g->k[i] < 1)
            return KINVAL("kernel, strides and dilations must be >= 1");
        int64_t opad = op ? op[i] : 0;
        if (g->s[i] > CPU_MAX_ATTR || g->d[i] > CPU_MAX_ATTR || g->k[i] > CPU_MAX_ATTR ||
            opad < 0 || opad > CPU_MAX_ATTR || (os && (os[i] < 0 || os[i] > CPU_MAX_ATTR)) ||
            (pads && (pads[i] < -CPU_MAX_ATTR || pads[i] > CPU_MAX_ATTR ||
                      pads[nsp + i] < -CPU_MAX_ATTR || pads[nsp + i] > CPU_MAX_ATTR)))
            return KINVAL("strides, dilations, pads or output sizes out of range");
        int64_t full = g->s[i] * (g->in[i] - 1) + opad + (g->k[i] - 1) * g->d[i] + 1;
        if (os || same_u || same_l) {
            /* the output size is given (or in*stride); split the padding it implies */
            g->out[i] = os ? os[i] : g->in[i] * g->s[i];
            /* an output larger than the full result is extended at the end (as the ONNX
             * reference does for output_shape) */
            int64_t total = NPU_MAX(full - g->out[i], (int64_t)0);
            /* ONNX: SAME_UPPER puts the smaller half first, anything else the larger */
            g->pb[i] = same_u ? total / 2 : total - total / 2;
        } else {
            int64_t pb = pads ? pads[i] : 0, pe = pads ? pads[nsp + i] : 0;
            g->pb[i] = pb;
            g->out[i] = full - pb - pe;
        }
        if (g->out[i] < 0)
            return KINVAL("negative output size in dim %d", i);
    }
    g->kprod = cpu_dims_prod(wt->dims, 2, wt->ndim);
    g->in_plane = cpu_dims_prod(g->in, 0, nsp);
    g->out_plane = cpu_dims_prod(g->out, 0, nsp);
    return NPU_OK;
}

struct convt_job {
    const struct convt_geo *g;
    const struct npu_tensor *x, *w;
    const float *bias;
    const double *biasd;
    void *y;
    struct npu_cpu_ctx *ctx;
    const struct cpu_act_spec *act;
};

/* Where input position ipos meets kernel tap kpos in a transposed convolution: the output
 * offset (with the output strides ost), or false if that lands outside the output. */
static inline bool
convt_tap(const struct convt_geo *g, const int64_t *ipos, const int64_t *kpos, const int64_t *ost,
          int64_t *off)
{
    bool inside = true;
    *off = 0;
    for (int i = 0; i < g->nsp; i++) {
        int64_t o = ipos[i] * g->s[i] - g->pb[i] + kpos[i] * g->d[i];
        if (o < 0 || o >= g->out[i])
            inside = false;
        *off += o * ost[i];
    }
    return inside;
}

/* scatter-add col [Mg*kprod][in_plane] of one (image, group) into y [Mg][out_plane] */
static void
col2im(const struct convt_geo *g, const float *col, float *y)
{
    int nsp = g->nsp;
    int64_t ost[CPU_MAX_SP];
    cpu_row_strides(g->out, nsp, ost);
    for (int64_t m = 0; m < g->Mg; m++) {
        int64_t kpos[CPU_MAX_SP] = {0};
        for (int64_t kr = 0; kr < g->kprod; kr++) {
            const float *src = col + (m * g->kprod + kr) * g->in_plane;
            if (nsp == 2) {
                int64_t kh = kpos[0], kw = kpos[1];
                for (int64_t ih = 0; ih < g->in[0]; ih++) {
                    int64_t oh = ih * g->s[0] - g->pb[0] + kh * g->d[0];
                    if (oh < 0 || oh >= g->out[0])
                        continue;
                    for (int64_t iw = 0; iw < g->in[1]; iw++) {
                        int64_t ow = iw * g->s[1] - g->pb[1] + kw * g->d[1];
                        if (ow >= 0 && ow < g->out[1])
                            y[m * g->out_plane + oh * g->out[1] + ow] += src[ih * g->in[1] + iw];
                    }
                }
            } else {
                int64_t ipos[CPU_MAX_SP] = {0};
                for (int64_t p = 0; p < g->in_plane; p++) {
                    int64_t off;
                    if (convt_tap(g, ipos, kpos, ost, &off))
                        y[m * g->out_plane + off] += src[p];
                    cpu_index_next(ipos, g->in, nsp);
                }
            }
            cpu_index_next(kpos, g->k, nsp);
        }
    }
}

static void
convt_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct convt_job *j = arg;
    const struct convt_geo *g = j->g;
    float *col = cpu_scratch(j->ctx, tid);
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / g->G, gi = t % g->G;
        const float *x = (const float *)j->x->data + (n * g->C + gi * g->Cg) * g->in_plane;
        const float *w = (const float *)j->w->data + gi * g->Cg * g->Mg * g->kprod;
        float *y = (float *)j->y + (n * g->M + gi * g->Mg) * g->out_plane;
        /* col = W_g^T X_g: W_g is [Cg][Mg*kprod] */
        cpu_sgemm(true, false, g->Mg * g->kprod, g->in_plane, g->Cg, 1.0f, w, g->Mg * g->kprod, x,
                  g->in_plane, 0.0f, col, g->in_plane);
        for (int64_t m = 0; m < g->Mg; m++) {
            float b = j->bias ? j->bias[gi * g->Mg + m] : 0.0f;
            for (int64_t o = 0; o < g->out_plane; o++)
                y[m * g->out_plane + o] = b;
        }
        col2im(g, col, y);
        for (int64_t m = 0; m < g->Mg; m++)
            cpu_act_apply(j->act, y + m * g->out_plane, g->out_plane);
    }
}

/* fp64: direct scatter in double */
static void
convt_f64(const struct convt_geo *g, const double *x, const double *w, const double *bias,
          double *y)
{
    int nsp = g->nsp;
    int64_t ost[CPU_MAX_SP];
    cpu_row_strides(g->out, nsp, ost);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++)
            for (int64_t o = 0; o < g->out_plane; o++)
                y[(n * g->M + m) * g->out_plane + o] = bias ? bias[m] : 0.0;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c = 0; c < g->C; c++) {
            int64_t gi = c / g->Cg;
            int64_t ipos[CPU_MAX_SP] = {0};
            for (int64_t p = 0; p < g->in_plane; p++) {
                double xv = x[(n * g->C + c) * g->in_plane + p];
                int64_t kpos[CPU_MAX_SP] = {0};
                for (int64_t kr = 0; kr < g->kprod; kr++) {
                    int64_t off;
                    if (convt_tap(g, ipos, kpos, ost, &off))
                        for (int64_t m = 0; m < g->Mg; m++)
                            y[(n * g->M + gi * g->Mg + m) * g->out_plane + off] +=
                                xv * w[(c * g->Mg + m) * g->kprod + kr];
                    cpu_index_next(kpos, g->k, nsp);
                }
                cpu_index_next(ipos, g->in, nsp);
            }
        }
}

enum npu_status
cpu_k_conv_transpose(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *wt = in[1], *b = nin > 2 ? in[2] : NULL;
    struct npu_tensor *y = out[0];
    if (wt->dtype != x->dtype)
        return KINVAL("X and W dtypes differ");
    struct convt_geo g;
    CPU_TRY(convt_setup(ctx, attrs, x, wt, &g));
    int64_t od[NPU_MAX_DIMS] = {g.N, g.M};
    memcpy(od + 2, g.out, sizeof(int64_t) * (size_t)g.nsp);
    CPU_TRY(cpu_check_out(ctx, y, x->dtype, g.nsp + 2, od));
    struct cpu_act_spec act;
    CPU_TRY(cpu_act_parse(ctx, attrs, &act));
    if (b && !cpu_absent(b) && (b->dtype != x->dtype || cpu_numel(b) != g.M))
        return KINVAL("B must be [%lld] of X's dtype", (long long)g.M);
    bool has_b = b && !cpu_absent(b);
    if (cpu_numel(y) == 0)
        return NPU_OK;
    if (x->dtype == NPU_DTYPE_FP64) {
        if (act.kind != CPU_ACT_NONE)
            return KUNSUP("fused activation needs fp32 or fp16");
        convt_f64(&g, x->data, wt->data, has_b ? b->data : NULL, y->data);
        return NPU_OK;
    }
    if (x->dtype != NPU_DTYPE_FP32)
        return KUNSUP("dtype %s is not supported", npu_dtype_name(x->dtype));
    struct convt_job j = {&g, x, wt, has_b ? b->data : NULL, NULL, y->data, ctx, &act};
    CPU_TRY(cpu_scratch_reserve(ctx, sizeof(float) * (size_t)(g.Mg * g.kprod * g.in_plane)));
    cpu_parallel_for(ctx, g.N * g.G, 1, convt_task, &j);
    return NPU_OK;
}

/* ---- ConvInteger / QLinearConv -------------------------------------------------------------- */

static enum npu_status
read_zp(struct npu_cpu_ctx *ctx, const struct npu_tensor *zp, const struct npu_tensor *x,
        int64_t len, const char *what, double *out)
{
    for (int64_t i = 0; i < len; i++)
        out[i] = 0;
    if (cpu_absent(zp))
        return NPU_OK;
    if (zp->dtype != x->dtype)
        return KINVAL("%s zero point dtype differs from its operand", what);
    int64_t n = cpu_numel(zp);
    if (n != 1 && n != len)
        return KINVAL("%s zero point must have 1 or %lld entries", what, (long long)len);
    for (int64_t i = 0; i < len; i++)
        out[i] = cpu_scalar_f64(zp, n == 1 ? 0 : i);
    return NPU_OK;
}

static enum npu_status
int_conv(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
         const struct npu_tensor *xzp, const struct npu_tensor *wt, const struct npu_tensor *wzp,
         const struct npu_tensor *bias, struct conv_geo *g, double **acc)
{
    for (int i = 0; i < 2; i++) {
        enum npu_dtype dt = i ? wt->dtype : x->dtype;
        if (dt != NPU_DTYPE_INT8 && dt != NPU_DTYPE_UINT8 && dt != NPU_DTYPE_INT16)
            return KUNSUP("dtype %s is not supported (int8/uint8/int16 only)", npu_dtype_name(dt));
    }
    if ((x->dtype == NPU_DTYPE_INT16) != (wt->dtype == NPU_DTYPE_INT16))
        return KUNSUP("int16 needs both X and W int16");
    CPU_TRY(conv_setup(ctx, attrs, x, wt, g));
    double xz;
    CPU_TRY(read_zp(ctx, xzp, x, 1, "x", &xz));
    double *wz = malloc(sizeof(double) * (size_t)(g->M + 1));
    double *bd = NULL;
    if (!wz)
        return KNOMEM();
    enum npu_status st = read_zp(ctx, wzp, wt, g->M, "w", wz);
    if (st == NPU_OK && bias && !cpu_absent(bias)) {
        if (bias->dtype != NPU_DTYPE_INT32 || cpu_numel(bias) != g->M) {
            st = KINVAL("B must be int32 [%lld]", (long long)g->M);
        } else {
            bd = malloc(sizeof(double) * (size_t)(g->M + 1));
            if (!bd)
                st = KNOMEM();
            else
                cpu_convert(bias->data, NPU_DTYPE_INT32, bd, NPU_DTYPE_FP64, g->M);
        }
    }
    if (st == NPU_OK) {
        struct dconv_args a = {.g = g, .x = x, .w = wt, .xzp = xz, .wzp = wz, .bias = bd};
        st = conv_direct_double(ctx, &a);
        *acc = a.acc;
    }
    free(wz);
    free(bd);
    return st;
}

/* QLinearConv / ConvInteger (2-D, group 1, int8/uint8) on the packed int8 product
 * (npu-cpu-qgemm.c): int32 sums in *acc, or NPU_ERR_UNSUPPORTED with nothing done (the
 * reference loop runs). */
static enum npu_status
qconv_fast(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *x,
           const struct npu_tensor *xzp, const struct npu_tensor *wt, const struct npu_tensor *wzp,
           const struct npu_tensor *bias, struct conv_geo *g, int32_t **acc)
{
    bool i8 = (x->dtype == NPU_DTYPE_INT8 || x->dtype == NPU_DTYPE_UINT8) &&
              (wt->dtype == NPU_DTYPE_INT8 || wt->dtype == NPU_DTYPE_UINT8);
    if (!cpu_qgemm_on() || !i8 || x->ndim != 4 || wt->ndim != 4 ||
        npu_attrs_int(attrs, "group", 1) != 1)
        return NPU_ERR_UNSUPPORTED;
    CPU_TRY(conv_setup(ctx, attrs, x, wt, g));
    if (g->G != 1)
        return NPU_ERR_UNSUPPORTED;
    if (bias && !cpu_absent(bias) && (bias->dtype != NPU_DTYPE_INT32 || cpu_numel(bias) != g->M))
        return KINVAL("B must be int32 [%lld]", (long long)g->M);
    double xz;
    CPU_TRY(read_zp(ctx, xzp, x, 1, "x", &xz));
    double *wz = malloc(sizeof(double) * (size_t)(g->M + 1));
    int32_t *wz32 = malloc(sizeof(int32_t) * (size_t)(g->M + 1));
    *acc = malloc(sizeof(int32_t) * (size_t)NPU_MAX(g->N * g->M * g->out_plane, (int64_t)1));
    enum npu_status st = !wz || !wz32 || !*acc ? KNOMEM() : read_zp(ctx, wzp, wt, g->M, "w", wz);
    if (st == NPU_OK) {
        for (int64_t m = 0; m < g->M; m++)
            wz32[m] = (int32_t)wz[m];
        st = cpu_qconv2d(ctx, &g->w, x, (int32_t)xz, wt, wz32,
                         bias && !cpu_absent(bias) ? bias->data : NULL,
                         cpu_qa_prepared(ctx->prep, wt), *acc);
    }
    if (st != NPU_OK) {
        free(*acc);
        *acc = NULL;
    }
    free(wz);
    free(wz32);
    return st;
}

enum npu_status
cpu_k_conv_integer(CPU_KERNEL_ARGS)
{
    struct conv_geo g;
    double *acc = NULL;
    int32_t *acc32 = NULL;
    const struct npu_tensor *xzp = nin > 2 ? in[2] : NULL, *wzp = nin > 3 ? in[3] : NULL;
    enum npu_status st = qconv_fast(ctx, attrs, in[0], xzp, in[1], wzp, NULL, &g, &acc32);
    if (st == NPU_OK) { /* the packed int8 product (npu-cpu-qgemm.c) */
        st = conv_check_out(ctx, &g, out[0], NPU_DTYPE_INT32);
        if (st == NPU_OK)
            memcpy(out[0]->data, acc32, sizeof(int32_t) * (size_t)cpu_numel(out[0]));
        free(acc32);
        return st;
    }
    if (st != NPU_ERR_UNSUPPORTED)
        return st;
    CPU_TRY(int_conv(ctx, attrs, in[0], xzp, in[1], wzp, NULL, &g, &acc));
    st = conv_check_out(ctx, &g, out[0], NPU_DTYPE_INT32);
    if (st == NPU_OK)
        cpu_convert(acc, NPU_DTYPE_FP64, out[0]->data, NPU_DTYPE_INT32, cpu_numel(out[0]));
    free(acc);
    return st;
}

enum npu_status
cpu_k_qlinear_conv(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *xs = in[1], *xzp = in[2], *wt = in[3], *ws = in[4],
                            *wzp = in[5], *ys = in[6], *yzp = in[7];
    const struct npu_tensor *b = nin > 8 ? in[8] : NULL;
    struct npu_tensor *y = out[0];
    bool i16 = y->dtype == NPU_DTYPE_INT16; /* w16a16i (npu-cpu-qlinear16.c) */
    if (y->dtype != NPU_DTYPE_UINT8 && y->dtype != NPU_DTYPE_INT8 && !i16)
        return KUNSUP("output dtype %s is not supported", npu_dtype_name(y->dtype));
    if (i16 != (x->dtype == NPU_DTYPE_INT16))
        return KUNSUP("int16 result needs an int16 input, and the reverse");
    if (xs->dtype != NPU_DTYPE_FP32 || ws->dtype != NPU_DTYPE_FP32 || ys->dtype != NPU_DTYPE_FP32)
        return KINVAL("scales must be float");
    if (cpu_numel(xs) != 1 || cpu_numel(ys) != 1 || (yzp && cpu_numel(yzp) != 1))
        return KUNSUP("x_scale, y_scale and y_zero_point must be scalars");
    if (yzp && yzp->dtype != y->dtype)
        return KINVAL("y_zero_point dtype differs from the output");
    struct conv_geo g;
    double *acc = NULL;
    int32_t *acc32 = NULL;
    enum npu_status fst =
        i16 ? NPU_ERR_UNSUPPORTED : qconv_fast(ctx, attrs, x, xzp, wt, wzp, b, &g, &acc32);
    if (fst != NPU_OK && fst != NPU_ERR_UNSUPPORTED)
        return fst;
    if (fst != NPU_OK)
        CPU_TRY(int_conv(ctx, attrs, x, xzp, wt, wzp, b, &g, &acc));
    enum npu_status st = conv_check_out(ctx, &g, y, y->dtype);
    int64_t nws = cpu_numel(ws);
    if (st == NPU_OK && nws != 1 && nws != g.M)
        st = KINVAL("w_scale must have 1 or M entries");
    float *scale = st == NPU_OK ? malloc(sizeof(float) * (size_t)(g.M + 1)) : NULL;
    if (st == NPU_OK && !acc32)
        acc32 = malloc(sizeof(int32_t) * (size_t)(cpu_numel(y) + 1));
    if (st == NPU_OK && (!scale || !acc32))
        st = KNOMEM();
    if (st == NPU_OK) {
        float x_s = ((const float *)xs->data)[0], y_s = ((const float *)ys->data)[0];
        for (int64_t m = 0; m < g.M; m++)
            scale[m] = x_s * ((const float *)ws->data)[nws == 1 ? 0 : m] / y_s;
        int32_t zp16 = yzp ? (int32_t)cpu_scalar_i64(yzp, 0) : 0;
        for (int64_t n = 0; i16 && n < g.N; n++) {
            size_t off = (size_t)(n * g.M * g.out_plane);
            cpu_requantize_i16(acc + off, g.M, g.out_plane, scale, false, zp16,
                               (int16_t *)y->data + off);
        }
    }
    if (st == NPU_OK && !i16) {
        if (acc)
            cpu_convert(acc, NPU_DTYPE_FP64, acc32, NPU_DTYPE_INT32, cpu_numel(y));
        int32_t zp = yzp ? (int32_t)cpu_scalar_i64(yzp, 0) : 0;
        /* rows = (n, m) planes: scale per row m */
        for (int64_t n = 0; n < g.N; n++) {
            size_t off = (size_t)(n * g.M * g.out_plane);
            cpu_requantize(acc32 + off, g.M, g.out_plane, scale, false, zp, y->dtype,
                           (char *)y->data + off);
        }
    }
    free(scale);
    free(acc32);
    free(acc);
    return st;
}
