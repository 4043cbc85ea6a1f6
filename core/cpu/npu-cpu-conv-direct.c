/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-conv-direct.c: the direct fp32 convolution for dense 2-D Convs (group 1, any
 * kernel, stride, dilation and padding) and the prepare step that packs a Conv's constant
 * weights once per model (npu_cpu_prepare, npu-cpu.h).
 *
 * Y[m][p] = sum over k = (c, kh, kw) of W[m][k] * X(c, tap (kh, kw) of output p).
 * The weights are packed in blocks of 8 output channels, k-major ([block][k][8]); the
 * input is read where it lies for a 1x1 / stride-1 / unpadded conv, otherwise from a
 * zero-padded copy of each channel split into its stride phases (padded row hq * s0 + r0,
 * column q * s1 + r1 is phase (r0, r1)'s element [hq][q], as the depthwise path does). The
 * outputs are numbered by their place in that copy, p = oh * Wq + ow, so that for every tap
 * 48 consecutive outputs read 48 consecutive floats: the micro-kernel computes 8 channels x
 * 48 outputs (24 AVX-512 accumulators, or four 4 x 24 AVX2 blocks) over all k with no im2col
 * and no per-element bounds test; the columns past OW (the padding) are computed and dropped.
 * Every output sums its k in ascending order from 0 in one fp32 FMA chain, then the bias is
 * added and the activation applied (ReLU in registers, the others on the finished row), so
 * the result does not depend on the thread count or the tiling, and differs from the
 * im2col + GEMM path only by fp32 rounding.
 * Chosen by cpuid (AVX-512F, else AVX2+FMA; otherwise the GEMM path runs) and by shape
 * (cpu_conv_direct_wanted).
 */
#include "npu-cpu-conv-direct.h"

#include <stdlib.h>
#include <string.h>

#define CD_MR 8
#define CD_NR 48

#if defined(__x86_64__) && defined(__GNUC__)
#define CD_X86 1
typedef float v16f __attribute__((vector_size(64), aligned(4)));
typedef int32_t v16i __attribute__((vector_size(64), aligned(4)));
#endif

/* ---- weight packing -------------------------------------------------------------------------- */

static void
cd_pack(const float *w, int64_t M, int64_t K, float *wp)
{
    int64_t nb = NPU_DIV_ROUND_UP(M, CD_MR);
    for (int64_t b = 0; b < nb; b++) {
        float *d = wp + b * K * CD_MR;
        for (int64_t r = 0; r < CD_MR; r++) {
            int64_t m = b * CD_MR + r;
            if (m < M) {
                const float *src = w + m * K;
                for (int64_t k = 0; k < K; k++)
                    d[k * CD_MR + r] = src[k];
            } else {
                for (int64_t k = 0; k < K; k++)
                    d[k * CD_MR + r] = 0.0f;
            }
        }
    }
}

static float *
cd_pack_new(const float *w, int64_t M, int64_t K)
{
    size_t n = (size_t)(NPU_DIV_ROUND_UP(M, CD_MR) * K * CD_MR);
    float *wp = aligned_alloc(64, NPU_ALIGN(sizeof(float) * n, (size_t)64));
    if (wp)
        cd_pack(w, M, K, wp);
    return wp;
}

/* ---- micro-kernels --------------------------------------------------------------------------- */

/* dst[r][0..48) = act(sum_k ap[k][r] * b[koff[k] + 0..48) + bias[r]) for r < mr;
 * relu: max(., 0) in registers (other activations are the caller's). */
typedef void (*cd_kernel_fn)(int64_t K, const float *ap, const float *b, const int64_t *koff,
                             const float *bias, bool relu, float *dst, int64_t ldd, int mr);

#ifdef CD_X86
#define CD_ROW16(r)                                                                                \
    v16f c##r##0 = {0}, c##r##1 = {0}, c##r##2 = {0};
#define CD_FMA16(r)                                                                                \
    {                                                                                              \
        const float a = ap[r];                                                                     \
        c##r##0 += a * b0;                                                                         \
        c##r##1 += a * b1;                                                                         \
        c##r##2 += a * b2;                                                                         \
    }
#define CD_STORE16(r)                                                                              \
    if (r < mr) {                                                                                  \
        const float bb = bias[r];                                                                  \
        v16f o0 = c##r##0 + bb, o1 = c##r##1 + bb, o2 = c##r##2 + bb;                              \
        if (relu) {                                                                                \
            RELU(o0);                                                                              \
            RELU(o1);                                                                              \
            RELU(o2);                                                                              \
        }                                                                                          \
        memcpy(dst + r * ldd, &o0, sizeof(o0));                                                    \
        memcpy(dst + r * ldd + 16, &o1, sizeof(o1));                                               \
        memcpy(dst + r * ldd + 32, &o2, sizeof(o2));                                               \
    }

__attribute__((target("avx512f"))) static void
cd_kernel_avx512(int64_t K, const float *ap, const float *b, const int64_t *koff,
                 const float *bias, bool relu, float *dst, int64_t ldd, int mr)
{
    CD_ROW16(0)
    CD_ROW16(1)
    CD_ROW16(2)
    CD_ROW16(3)
    CD_ROW16(4)
    CD_ROW16(5)
    CD_ROW16(6)
    CD_ROW16(7)
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + koff[k];
        v16f b0, b1, b2;
        memcpy(&b0, bk, sizeof(b0));
        memcpy(&b1, bk + 16, sizeof(b1));
        memcpy(&b2, bk + 32, sizeof(b2));
        CD_FMA16(0)
        CD_FMA16(1)
        CD_FMA16(2)
        CD_FMA16(3)
        CD_FMA16(4)
        CD_FMA16(5)
        CD_FMA16(6)
        CD_FMA16(7)
        ap += CD_MR;
    }
#define RELU(v) v = (v16f)((v16i)(v) & (v > zero))
    const v16f zero = {0};
    CD_STORE16(0)
    CD_STORE16(1)
    CD_STORE16(2)
    CD_STORE16(3)
    CD_STORE16(4)
    CD_STORE16(5)
    CD_STORE16(6)
    CD_STORE16(7)
}

/* AVX2: 4 channels x 24 outputs (12 accumulators of 8), four per 8 x 48 tile */
#define CD_ROW8(r) v8f c##r##0 = {0}, c##r##1 = {0}, c##r##2 = {0};
#define CD_FMA8(r)                                                                                 \
    {                                                                                              \
        const float a = ap[r];                                                                     \
        c##r##0 += a * b0;                                                                         \
        c##r##1 += a * b1;                                                                         \
        c##r##2 += a * b2;                                                                         \
    }
#define CD_STORE8(r)                                                                               \
    if (r < mr) {                                                                                  \
        const float bb = bias[r];                                                                  \
        v8f o0 = c##r##0 + bb, o1 = c##r##1 + bb, o2 = c##r##2 + bb;                               \
        if (relu) {                                                                                \
            RELU(o0);                                                                              \
            RELU(o1);                                                                              \
            RELU(o2);                                                                              \
        }                                                                                          \
        memcpy(dst + r * ldd, &o0, sizeof(o0));                                                    \
        memcpy(dst + r * ldd + 8, &o1, sizeof(o1));                                                \
        memcpy(dst + r * ldd + 16, &o2, sizeof(o2));                                               \
    }

__attribute__((target("avx2,fma"))) static void
cd_kernel4x24_avx2(int64_t K, const float *ap, const float *b, const int64_t *koff,
                   const float *bias, bool relu, float *dst, int64_t ldd, int mr)
{
    CD_ROW8(0)
    CD_ROW8(1)
    CD_ROW8(2)
    CD_ROW8(3)
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + koff[k];
        v8f b0, b1, b2;
        memcpy(&b0, bk, sizeof(b0));
        memcpy(&b1, bk + 8, sizeof(b1));
        memcpy(&b2, bk + 16, sizeof(b2));
        CD_FMA8(0)
        CD_FMA8(1)
        CD_FMA8(2)
        CD_FMA8(3)
        ap += CD_MR;
    }
#undef RELU
#define RELU(v) v = (v8f)((v8i)(v) & (v > zero))
    const v8f zero = {0};
    CD_STORE8(0)
    CD_STORE8(1)
    CD_STORE8(2)
    CD_STORE8(3)
}

__attribute__((target("avx2,fma"))) static void
cd_kernel_avx2(int64_t K, const float *ap, const float *b, const int64_t *koff, const float *bias,
               bool relu, float *dst, int64_t ldd, int mr)
{
    for (int r0 = 0; r0 < mr; r0 += 4)
        for (int c0 = 0; c0 < CD_NR; c0 += 24)
            cd_kernel4x24_avx2(K, ap + r0, b + c0, koff, bias + r0, relu, dst + r0 * ldd + c0, ldd,
                               NPU_MIN(mr - r0, 4));
}
#endif

static pthread_once_t cd_once = PTHREAD_ONCE_INIT;
static cd_kernel_fn cd_fn;
static int cd_force; /* NPU_CPU_CONV: 0 by shape, 1 direct, -1 gemm */

static void
cd_pick(void)
{
#ifdef CD_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        cd_fn = cd_kernel_avx512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        cd_fn = cd_kernel_avx2;
    const char *e = getenv("NPU_CPU_CONV_ISA");
    if (e && !strcmp(e, "avx2") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma"))
        cd_fn = cd_kernel_avx2;
#endif
    const char *f = getenv("NPU_CPU_CONV");
    if (f && !strcmp(f, "direct"))
        cd_force = 1;
    else if (f && !strcmp(f, "gemm"))
        cd_force = -1;
}

bool
cpu_conv_direct_wanted(const struct cpu_win *w, int64_t C, int64_t M, int64_t G)
{
    pthread_once(&cd_once, cd_pick);
    if (!cd_fn || w->nsp != 2 || G != 1 || cd_force < 0)
        return false;
    if (w->k[0] * w->k[1] > 64 || w->s[0] > 4 || w->s[1] > 4)
        return false;
    if (cd_force > 0)
        return true;
    /* the 3-channel stems and tiny layers stay on the GEMM path */
    return C >= 8 && M >= 8;
}

/* ---- the convolution ------------------------------------------------------------------------- */

struct cd_job {
    const struct cpu_cd_args *a;
    int64_t K, L; /* sum length; outputs in the flat (oh * Wq + ow) numbering */
    int64_t Wq, OW, OH, out_plane;
    int64_t npanels, mblocks, mgroups, mper; /* m-blocks per group */
    const float *wp;
    const float *src;     /* this image's input (padded copy or X itself) */
    const int64_t *koff;  /* [K] offset of each k's run from src */
    const int64_t *koffp; /* [K] k * 48: a packed tail panel */
    bool in_place;        /* src is X: a tail panel is packed so as not to read past X */
    float *y;             /* this image's output */
    const float *bias;
    bool relu;
    const struct cpu_act_spec *act;
    struct npu_cpu_ctx *ctx;
    /* copy into the padded buffer */
    const float *x;
    float *buf;
    int64_t H, W, s0, s1, pt, pl, phase, cstride, Hq;
};

static void
cd_copy_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct cd_job *j = arg;
    const int64_t W = j->W, s0 = j->s0, s1 = j->s1, pl = j->pl;
    for (int64_t c = begin; c < end; c++) {
        const float *xc = j->x + c * j->H * W;
        float *dc = j->buf + c * j->cstride;
        memset(dc, 0, sizeof(float) * (size_t)j->cstride);
        for (int64_t h = 0; h < j->H; h++) {
            const float *xr = xc + h * W;
            int64_t hp = h + j->pt;
            float *prow = dc + (hp % s0) * s1 * j->phase + (hp / s0) * j->Wq;
            if (s1 == 1) {
                memcpy(prow + pl, xr, sizeof(float) * (size_t)W);
                continue;
            }
            for (int64_t r = 0; r < s1; r++) {
                /* padded column q * s1 + r is input column q * s1 + r - pl */
                float *d = prow + r * j->phase;
                int64_t q0 = pl >= r ? NPU_DIV_ROUND_UP(pl - r, s1) : 0;
                int64_t q1 = NPU_DIV_ROUND_UP(W - r + pl, s1);
                const float *xs = xr + r - pl;
                if (s1 == 2)
                    for (int64_t q = q0; q < q1; q++)
                        d[q] = xs[2 * q];
                else
                    for (int64_t q = q0; q < q1; q++)
                        d[q] = xs[q * s1];
            }
        }
    }
}

static void
cd_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct cd_job *j = arg;
    const int64_t K = j->K, M = j->a->M;
    float *scr = cpu_scratch(j->ctx, tid);
    float *tile = scr;                   /* [8][48] */
    float *packed = scr + CD_MR * CD_NR; /* [K][48]: a tail panel of an in-place X */
    float bias8[CD_MR];
    for (int64_t t = begin; t < end; t++) {
        int64_t panel = t / j->mgroups, mg = t % j->mgroups;
        int64_t p0 = panel * CD_NR, nv = NPU_MIN((int64_t)CD_NR, j->L - p0);
        const float *b = j->src + p0;
        const int64_t *koff = j->koff;
        if (j->in_place && nv < CD_NR) {
            for (int64_t k = 0; k < K; k++) {
                float *d = packed + k * CD_NR;
                memcpy(d, j->src + j->koff[k] + p0, sizeof(float) * (size_t)nv);
                memset(d + nv, 0, sizeof(float) * (size_t)(CD_NR - nv));
            }
            b = packed;
            koff = j->koffp;
        }
        /* straight into Y when the panel's 48 outputs are 48 consecutive ones of Y */
        bool straight = j->Wq == j->OW && nv == CD_NR;
        int64_t mb0 = mg * j->mper, mb1 = NPU_MIN(j->mblocks, mb0 + j->mper);
        for (int64_t mb = mb0; mb < mb1; mb++) {
            int64_t m0 = mb * CD_MR;
            int mr = (int)NPU_MIN((int64_t)CD_MR, M - m0);
            for (int r = 0; r < CD_MR; r++)
                bias8[r] = j->bias && r < mr ? j->bias[m0 + r] : 0.0f;
            float *yb = j->y + m0 * j->out_plane;
            if (straight) {
                cd_fn(K, j->wp + mb * K * CD_MR, b, koff, bias8, j->relu, yb + p0, j->out_plane,
                      mr);
                if (j->act->kind != CPU_ACT_NONE && !j->relu)
                    for (int r = 0; r < mr; r++)
                        cpu_act_apply(j->act, yb + r * j->out_plane + p0, CD_NR);
                continue;
            }
            cd_fn(K, j->wp + mb * K * CD_MR, b, koff, bias8, j->relu, tile, CD_NR, mr);
            /* the panel's outputs that are real (column < OW) are consecutive in Y */
            int64_t ystart = -1, yend = 0;
            for (int64_t q = 0; q < nv;) {
                int64_t p = p0 + q, oh = p / j->Wq, ow = p % j->Wq;
                int64_t run = NPU_MIN(j->Wq - ow, nv - q);
                if (ow < j->OW) {
                    int64_t n = NPU_MIN(run, j->OW - ow), yo = oh * j->OW + ow;
                    if (ystart < 0)
                        ystart = yo;
                    yend = yo + n;
                    for (int r = 0; r < mr; r++)
                        memcpy(yb + r * j->out_plane + yo, tile + r * CD_NR + q,
                               sizeof(float) * (size_t)n);
                }
                q += run;
            }
            if (ystart >= 0 && j->act->kind != CPU_ACT_NONE && !j->relu)
                for (int r = 0; r < mr; r++)
                    cpu_act_apply(j->act, yb + r * j->out_plane + ystart, yend - ystart);
        }
    }
}

enum npu_status
cpu_conv_direct(struct npu_cpu_ctx *ctx, const struct cpu_cd_args *a)
{
    const struct cpu_win *w = a->w;
    const int64_t C = a->C, M = a->M, KH = w->k[0], KW = w->k[1], K = C * KH * KW;
    const int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
    const int64_t s0 = w->s[0], s1 = w->s[1];
    struct cd_job j = {.a = a,
                       .K = K,
                       .OW = OW,
                       .OH = OH,
                       .out_plane = OH * OW,
                       .bias = a->bias,
                       .relu = a->act->kind == CPU_ACT_RELU,
                       .act = a->act,
                       .ctx = ctx,
                       .H = H,
                       .W = W,
                       .s0 = s0,
                       .s1 = s1,
                       .pt = w->pb[0],
                       .pl = w->pb[1]};
    if (!cd_fn)
        return KUNSUP("no direct convolution kernel on this CPU");
    float *own = NULL;
    const struct npu_cpu_prep *pr = a->prep;
    if (pr && pr->wp && pr->w_data == a->wt && pr->M == M && pr->K == K) {
        j.wp = pr->wp;
    } else {
        own = cd_pack_new(a->wt, M, K);
        if (!own)
            return KNOMEM();
        j.wp = own;
    }
    j.in_place = KH == 1 && KW == 1 && s0 == 1 && s1 == 1 && w->pb[0] == 0 && w->pb[1] == 0 &&
                 w->pe[0] == 0 && w->pe[1] == 0;
    size_t buf_floats = 0;
    if (j.in_place) {
        j.Wq = W;
        j.cstride = H * W;
    } else {
        j.Hq = NPU_DIV_ROUND_UP(H + w->pb[0] + w->pe[0], s0) + 1;
        j.Wq = NPU_DIV_ROUND_UP(W + w->pb[1] + w->pe[1], s1) + 1;
        j.phase = j.Hq * j.Wq;
        j.cstride = s0 * s1 * j.phase;
        /* a panel reads up to 47 floats past the last real output's run */
        buf_floats = (size_t)(C * j.cstride + j.Wq + 64);
    }
    j.L = (OH - 1) * j.Wq + OW;
    int64_t *koff = malloc(sizeof(int64_t) * (size_t)(2 * K));
    if (!koff) {
        free(own);
        return KNOMEM();
    }
    for (int64_t c = 0, k = 0; c < C; c++)
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++, k++) {
                int64_t rh = kh * w->d[0], cw = kw * w->d[1];
                koff[k] = j.in_place ? c * j.cstride
                                     : c * j.cstride + ((rh % s0) * s1 + cw % s1) * j.phase +
                                           (rh / s0) * j.Wq + cw / s1;
                koff[K + k] = k * CD_NR;
            }
    j.koff = koff;
    j.koffp = koff + K;
    enum npu_status st = cpu_scratch_reserve(
        ctx, sizeof(float) * (size_t)(CD_MR * CD_NR + (j.in_place ? K * CD_NR : 0)));
    if (st == NPU_OK && buf_floats && ctx->conv_buf_size < buf_floats * sizeof(float)) {
        free(ctx->conv_buf);
        ctx->conv_buf_size = 0;
        ctx->conv_buf = aligned_alloc(64, NPU_ALIGN(buf_floats * sizeof(float), (size_t)64));
        if (!ctx->conv_buf)
            st = KNOMEM();
        else
            ctx->conv_buf_size = buf_floats * sizeof(float);
    }
    if (st != NPU_OK) {
        free(koff);
        free(own);
        return st;
    }
    j.buf = ctx->conv_buf;
    if (buf_floats)
        memset(j.buf + C * j.cstride, 0, sizeof(float) * (size_t)(j.Wq + 64));
    j.npanels = NPU_DIV_ROUND_UP(j.L, (int64_t)CD_NR);
    j.mblocks = NPU_DIV_ROUND_UP(M, (int64_t)CD_MR);
    /* few panels (7x7, 14x14 planes): output channels are cut too so that two or more threads
     * have work; by the shape alone, so any thread count gives the same result */
    j.mgroups = 1;
    if (j.npanels < 16)
        j.mgroups = NPU_MIN(j.mblocks, NPU_DIV_ROUND_UP((int64_t)16, j.npanels));
    j.mper = NPU_DIV_ROUND_UP(j.mblocks, j.mgroups);
    j.mgroups = NPU_DIV_ROUND_UP(j.mblocks, j.mper);
    for (int64_t n = 0; n < a->N; n++) {
        j.x = a->x + n * C * H * W;
        j.y = a->y + n * M * j.out_plane;
        if (j.in_place) {
            j.src = j.x;
        } else {
            cpu_parallel_for(ctx, C, 1, cd_copy_task, &j);
            j.src = j.buf;
        }
        cpu_parallel_for(ctx, j.npanels * j.mgroups, 1, cd_task, &j);
    }
    free(koff);
    free(own);
    return NPU_OK;
}

/* ---- prepare (npu-cpu.h) ------------------------------------------------------------------------ */

enum npu_status
npu_cpu_prepare(enum npu_op op, const struct npu_attrs *attrs, const struct npu_tensor *const *in,
                int nin, struct npu_cpu_prep **out)
{
    if (!out) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: no result pointer");
        return NPU_ERR_INVALID;
    }
    *out = NULL;
    if (nin < 0 || (nin > 0 && !in)) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: bad operand array");
        return NPU_ERR_INVALID;
    }
    /* today: fp32 Conv with constant 4-D weights and group 1 packs them */
    if (op != NPU_OP_CONV || nin < 2 || !in[1] || !in[1]->data)
        return NPU_OK;
    const struct npu_tensor *wt = in[1];
    if (wt->dtype != NPU_DTYPE_FP32 || wt->ndim != 4 || npu_attrs_int(attrs, "group", 1) != 1)
        return NPU_OK;
    pthread_once(&cd_once, cd_pick);
    if (!cd_fn || cd_force < 0)
        return NPU_OK;
    int64_t M = wt->dims[0], K = wt->dims[1] * wt->dims[2] * wt->dims[3];
    if (M < 1 || K < 1)
        return NPU_OK;
    struct npu_cpu_prep *p = calloc(1, sizeof(*p));
    if (!p) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: out of memory");
        return NPU_ERR_NOMEM;
    }
    p->op = op;
    p->w_data = wt->data;
    p->w_ndim = wt->ndim;
    memcpy(p->w_dims, wt->dims, sizeof(int64_t) * (size_t)wt->ndim);
    p->M = M;
    p->K = K;
    p->wp = cd_pack_new(wt->data, M, K);
    if (!p->wp) {
        free(p);
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: out of memory packing %lld x %lld weights",
                (long long)M, (long long)K);
        return NPU_ERR_NOMEM;
    }
    *out = p;
    return NPU_OK;
}

void
npu_cpu_prep_free(struct npu_cpu_prep *p)
{
    if (!p)
        return;
    free(p->wp);
    free(p);
}
