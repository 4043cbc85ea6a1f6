/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-rnn.c: the recurrent ops RNN, GRU and LSTM (ONNX opsets 7-22), as
 * torch.onnx.export writes nn.RNN/nn.GRU/nn.LSTM (one node per layer,
 * bidirectional as direction="bidirectional", GRU with linear_before_reset=1)
 * and as the CRNN text recognisers and speech models that use them need.
 *
 * Shapes (layout 0; layout 1 swaps the sequence and batch dims of X, Y, Y_h,
 * Y_c): X [T, B, I], W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H] (W biases then
 * R biases), sequence_lens [B], initial_h/initial_c [D, B, H], P [D, 3H];
 * Y [T, D, B, H], Y_h/Y_c [D, B, H]. G = 1 (RNN), 3 (GRU: gates z, r, h),
 * 4 (LSTM: gates i, o, f, c; peepholes i, o, f). Steps past a batch entry's
 * sequence length write zeros to Y; Y_h holds its last valid step. Computed in
 * fp32 (fp16 operands are widened by npu-cpu.c): the input term of every step
 * is one GEMM (X [T*B, I] times W^T) before the recurrence; each step is then
 * R (stored transposed once per call) times h as contiguous multiply-adds, and
 * the gates' activations over whole vectors. Bidirectional layers run their
 * two directions on two threads; the sums do not depend on the thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "npu-cpu-internal.h"

enum rnn_kind { RNN_PLAIN, RNN_GRU, RNN_LSTM };

enum act_kind {
    ACT_SIGMOID,
    ACT_TANH,
    ACT_RELU,
    ACT_HARD_SIGMOID,
    ACT_LEAKY_RELU,
    ACT_THRESHOLDED_RELU,
    ACT_SCALED_TANH,
    ACT_AFFINE,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS
};

struct act {
    enum act_kind k;
    float alpha, beta;
};

static inline float
act_apply(const struct act *a, float x)
{
    switch (a->k) {
    case ACT_SIGMOID: return cpu_sigmoidf(x);
    case ACT_TANH: return cpu_tanhf(x);
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_HARD_SIGMOID: {
        float y = a->alpha * x + a->beta;
        return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case ACT_LEAKY_RELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case ACT_SCALED_TANH: return a->alpha * cpu_tanhf(a->beta * x);
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_ELU: return x >= 0 ? x : a->alpha * (expf(x) - 1.0f);
    case ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    }
    return x;
}

/* The ONNX names and default alpha/beta of the activations RNN ops accept. */
static bool
act_parse(const char *s, struct act *a)
{
    static const struct {
        const char *name;
        enum act_kind k;
        float alpha, beta;
    } tab[] = {
        {"Sigmoid", ACT_SIGMOID, 0, 0},
        {"Tanh", ACT_TANH, 0, 0},
        {"Relu", ACT_RELU, 0, 0},
        {"HardSigmoid", ACT_HARD_SIGMOID, 0.2f, 0.5f},
        {"LeakyRelu", ACT_LEAKY_RELU, 0.01f, 0},
        {"ThresholdedRelu", ACT_THRESHOLDED_RELU, 1, 0},
        {"ScaledTanh", ACT_SCALED_TANH, 1, 1},
        {"Affine", ACT_AFFINE, 1, 0},
        {"Elu", ACT_ELU, 1, 0},
        {"Softsign", ACT_SOFTSIGN, 0, 0},
        {"Softplus", ACT_SOFTPLUS, 0, 0},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(tab); i++)
        if (!strcasecmp(s, tab[i].name)) {
            a->k = tab[i].k, a->alpha = tab[i].alpha, a->beta = tab[i].beta;
            return true;
        }
    return false;
}

static const struct npu_tensor *
opt_in(const struct npu_tensor *const *in, int nin, int i)
{
    return i < nin && in[i] && !cpu_absent(in[i]) ? in[i] : NULL;
}

static bool
dims_are(const struct npu_tensor *t, int nd, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t d[3] = {d0, d1, d2};
    if (t->ndim != nd)
        return false;
    for (int i = 0; i < nd; i++)
        if (t->dims[i] != d[i])
            return false;
    return true;
}

struct rnn_job {
    enum rnn_kind kind;
    int G, D, NACT;
    int64_t T, Bn, I, H, layout;
    bool reverse_only, has_clip, input_forget, lbr;
    float clip;
    const struct act *acts;
    const float *X, *W, *R, *B, *P, *H0, *C0;
    float *Y, *YH, *YC;
    int64_t *lens;
    float *work; /* per_dir floats per direction */
    int64_t per_dir;
};

/* an activation over n floats in place: the switch outside the loop, so that sigmoid and tanh
 * (branch-free cpu_expf / cpu_tanhf) vectorise */
CPU_HOT static void
act_vec(const struct act *a, float *x, int64_t n)
{
    switch (a->k) {
    case ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            x[i] = cpu_sigmoidf(x[i]);
        return;
    case ACT_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = cpu_tanhf(x[i]);
        return;
    default:
        for (int64_t i = 0; i < n; i++)
            x[i] = act_apply(a, x[i]);
        return;
    }
}

static inline void
clip_vec(float *x, int64_t n, float clip)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = x[i] < -clip ? -clip : x[i] > clip ? clip : x[i];
}

/* y[n] = bias[n] + sum_k x[k] * rt[k * ld + n] for n < N: the recurrent product with R stored
 * transposed, so that every k is one contiguous multiply-add over the N outputs (fp32, k in
 * order from 0: the same sums whatever the thread count); always inlined so that it is
 * compiled for the caller's instruction set */
static inline __attribute__((always_inline)) void
rec_matvec(const float *rt, int64_t ld, const float *x, int64_t N, int64_t K, const float *bias,
           float *y)
{
    int64_t n = 0;
    /* 32 outputs at a time in four vector accumulators (kept in registers over all k) */
    for (; n + 32 <= N; n += 32) {
        v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        if (bias) {
            a0 = *(const v8f *)(bias + n), a1 = *(const v8f *)(bias + n + 8);
            a2 = *(const v8f *)(bias + n + 16), a3 = *(const v8f *)(bias + n + 24);
        }
        for (int64_t k = 0; k < K; k++) {
            const float *row = rt + k * ld + n;
            const float xk = x[k];
            a0 += xk * *(const v8f *)row, a1 += xk * *(const v8f *)(row + 8);
            a2 += xk * *(const v8f *)(row + 16), a3 += xk * *(const v8f *)(row + 24);
        }
        *(v8f *)(y + n) = a0, *(v8f *)(y + n + 8) = a1;
        *(v8f *)(y + n + 16) = a2, *(v8f *)(y + n + 24) = a3;
    }
    for (; n + 8 <= N; n += 8) {
        v8f a = {0};
        if (bias)
            a = *(const v8f *)(bias + n);
        for (int64_t k = 0; k < K; k++)
            a += x[k] * *(const v8f *)(rt + k * ld + n);
        *(v8f *)(y + n) = a;
    }
    for (; n < N; n++) {
        float a = bias ? bias[n] : 0.0f;
        for (int64_t k = 0; k < K; k++)
            a += x[k] * rt[k * ld + n];
        y[n] = a;
    }
}

/* One direction over every batch entry. */
CPU_HOT static void
rnn_dir(const struct rnn_job *j, int d)
{
    const int64_t H = j->H, I = j->I, T = j->T, Bn = j->Bn, GH = j->G * H, D = j->D;
    const bool rev = j->reverse_only || d == 1, clipped = j->has_clip;
    const float clip = j->clip;
    const float *w = j->W + d * GH * I, *r = j->R + d * GH * H;
    const float *wb = j->B ? j->B + d * 2 * GH : NULL, *rb = wb ? wb + GH : NULL;
    const float *p = j->P ? j->P + d * 3 * H : NULL;
    const struct act *fa = &j->acts[d * j->NACT];
    float *xw = j->work + d * j->per_dir, *rt = xw + T * Bn * GH;
    float *h = rt + H * GH, *c = h + H, *tmp = c + H, *gh = tmp + H, *g = gh + GH;
    /* X as a [T*B, I] matrix (rows in X's own order) times W^T, plus W's bias: the input term
     * of every step in one product */
    if (T * Bn > 0 && I > 0) {
        struct cpu_epilogue ep = {NULL, wb, NULL};
        cpu_sgemm_ep(false, true, T * Bn, GH, I, 1.0f, j->X, I, w, I, 0.0f, xw, GH, &ep);
    } else {
        for (int64_t i = 0; i < T * Bn * GH; i++)
            xw[i] = wb ? wb[i % GH] : 0.0f;
    }
    for (int64_t n = 0; n < GH; n++)
        for (int64_t k = 0; k < H; k++)
            rt[k * GH + n] = r[n * H + k];
    for (int64_t b = 0; b < Bn; b++) {
        /* state offsets of [D, B, H] (layout 0) or [B, D, H] (layout 1) */
        int64_t so = j->layout ? (b * D + d) * H : (d * Bn + b) * H;
        for (int64_t k = 0; k < H; k++) {
            h[k] = j->H0 ? j->H0[so + k] : 0.0f;
            c[k] = j->C0 ? j->C0[so + k] : 0.0f;
        }
        for (int64_t s = 0; s < j->lens[b]; s++) {
            int64_t t = rev ? j->lens[b] - 1 - s : s;
            const float *gx = xw + (j->layout ? b * T + t : t * Bn + b) * GH;
            rec_matvec(rt, GH, h, GH, H, rb, gh);
            if (j->kind == RNN_PLAIN) {
                for (int64_t k = 0; k < H; k++)
                    h[k] = gx[k] + gh[k];
                if (clipped)
                    clip_vec(h, H, clip);
                act_vec(&fa[0], h, H);
            } else if (j->kind == RNN_GRU) {
                /* gates z, r, h */
                for (int64_t k = 0; k < 2 * H; k++)
                    g[k] = gx[k] + gh[k];
                if (clipped)
                    clip_vec(g, 2 * H, clip);
                act_vec(&fa[0], g, 2 * H);
                if (!j->lbr) { /* (r . h_prev) R_h^T: a second product on the reset state */
                    for (int64_t k = 0; k < H; k++)
                        tmp[k] = g[H + k] * h[k];
                    rec_matvec(rt + 2 * H, GH, tmp, H, H, rb ? rb + 2 * H : NULL, gh + 2 * H);
                    for (int64_t k = 0; k < H; k++)
                        g[2 * H + k] = gx[2 * H + k] + gh[2 * H + k];
                } else {
                    for (int64_t k = 0; k < H; k++)
                        g[2 * H + k] = gx[2 * H + k] + g[H + k] * gh[2 * H + k];
                }
                if (clipped)
                    clip_vec(g + 2 * H, H, clip);
                act_vec(&fa[1], g + 2 * H, H);
                for (int64_t k = 0; k < H; k++)
                    h[k] = (1.0f - g[k]) * g[2 * H + k] + g[k] * h[k];
            } else {
                /* gates i, o, f, c; peepholes i, o, f */
                float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
                for (int64_t k = 0; k < GH; k++)
                    g[k] = gx[k] + gh[k];
                if (p)
                    for (int64_t k = 0; k < H; k++) {
                        gi[k] += p[k] * c[k];
                        gf[k] += p[2 * H + k] * c[k];
                    }
                if (clipped) {
                    clip_vec(gi, H, clip);
                    clip_vec(gf, 2 * H, clip); /* f and c */
                }
                act_vec(&fa[0], gi, H);
                if (j->input_forget)
                    for (int64_t k = 0; k < H; k++)
                        gf[k] = 1.0f - gi[k];
                else
                    act_vec(&fa[0], gf, H);
                act_vec(&fa[1], gc, H);
                for (int64_t k = 0; k < H; k++)
                    c[k] = gf[k] * c[k] + gi[k] * gc[k];
                if (p)
                    for (int64_t k = 0; k < H; k++)
                        go[k] += p[H + k] * c[k];
                if (clipped)
                    clip_vec(go, H, clip);
                act_vec(&fa[0], go, H);
                memcpy(tmp, c, sizeof(float) * (size_t)H);
                act_vec(&fa[2], tmp, H);
                for (int64_t k = 0; k < H; k++)
                    h[k] = go[k] * tmp[k];
            }
            if (j->Y) {
                int64_t yo = j->layout ? ((b * T + t) * D + d) * H : ((t * D + d) * Bn + b) * H;
                memcpy(j->Y + yo, h, sizeof(float) * (size_t)H);
            }
        }
        if (j->YH)
            memcpy(j->YH + so, h, sizeof(float) * (size_t)H);
        if (j->YC)
            memcpy(j->YC + so, c, sizeof(float) * (size_t)H);
    }
}

static void
rnn_dir_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    for (int64_t d = begin; d < end; d++)
        rnn_dir(arg, (int)d);
}

static enum npu_status
rnn_run(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *const *in,
        int nin, struct npu_tensor *const *out, int nout, enum rnn_kind kind)
{
    const int G = kind == RNN_LSTM ? 4 : kind == RNN_GRU ? 3 : 1;
    const int NACT = kind == RNN_LSTM ? 3 : kind == RNN_GRU ? 2 : 1;
    const struct npu_tensor *X = in[0], *W = in[1], *R = in[2];
    const struct npu_tensor *Bt = opt_in(in, nin, 3), *SL = opt_in(in, nin, 4);
    const struct npu_tensor *H0 = opt_in(in, nin, 5);
    const struct npu_tensor *C0 = kind == RNN_LSTM ? opt_in(in, nin, 6) : NULL;
    const struct npu_tensor *P = kind == RNN_LSTM ? opt_in(in, nin, 7) : NULL;
    if (X->dtype != NPU_DTYPE_FP32)
        return KUNSUP("%s data (fp32 and fp16 are supported)", npu_dtype_name(X->dtype));
    for (int i = 1; i < 8 && i < nin; i++)
        if (in[i] && !cpu_absent(in[i]) && i != 4 && in[i]->dtype != X->dtype)
            return KINVAL("input %d is %s, X is %s", i, npu_dtype_name(in[i]->dtype),
                          npu_dtype_name(X->dtype));
    if (X->ndim != 3)
        return KINVAL("X must have rank 3, not %d", X->ndim);
    const char *dir = npu_attrs_string(attrs, "direction", "forward");
    int D = !strcmp(dir, "bidirectional") ? 2 : 1;
    bool reverse_only = !strcmp(dir, "reverse");
    if (D == 1 && !reverse_only && strcmp(dir, "forward"))
        return KINVAL("direction '%s' is not forward, reverse or bidirectional", dir);
    int64_t layout = npu_attrs_int(attrs, "layout", 0);
    if (layout != 0 && layout != 1)
        return KINVAL("layout %lld is not 0 or 1", (long long)layout);
    int64_t T = X->dims[layout ? 1 : 0], Bn = X->dims[layout ? 0 : 1], I = X->dims[2];
    int64_t H = npu_attrs_int(attrs, "hidden_size", W->ndim == 3 ? W->dims[1] / G : 0);
    if (H < 1 || H > (1 << 20))
        return KINVAL("hidden_size %lld out of range", (long long)H);
    if (!dims_are(W, 3, D, G * H, I))
        return KINVAL("W must be [%d, %lld, %lld]", D, (long long)(G * H), (long long)I);
    if (!dims_are(R, 3, D, G * H, H))
        return KINVAL("R must be [%d, %lld, %lld]", D, (long long)(G * H), (long long)H);
    if (Bt && !dims_are(Bt, 2, D, 2 * G * H, 0))
        return KINVAL("B must be [%d, %lld]", D, (long long)(2 * G * H));
    if (SL && (SL->ndim != 1 || SL->dims[0] != Bn || !npu_dtype_is_int(SL->dtype)))
        return KINVAL("sequence_lens must be [%lld] integers", (long long)Bn);
    const struct npu_tensor *init[2] = {H0, C0};
    for (int i = 0; i < 2; i++)
        if (init[i] && !(layout ? dims_are(init[i], 3, Bn, D, H) : dims_are(init[i], 3, D, Bn, H)))
            return KINVAL("initial_%c has the wrong shape", i ? 'c' : 'h');
    if (P && !dims_are(P, 2, D, 3 * H, 0))
        return KINVAL("P must be [%d, %lld]", D, (long long)(3 * H));

    /* activations: NACT per direction, defaults Sigmoid/Tanh/Tanh (RNN: Tanh) */
    struct act acts[6];
    for (int d = 0; d < D; d++)
        for (int j = 0; j < NACT; j++) {
            acts[d * NACT + j].k = (kind == RNN_PLAIN || j > 0) ? ACT_TANH : ACT_SIGMOID;
            acts[d * NACT + j].alpha = acts[d * NACT + j].beta = 0;
        }
    const struct npu_attr *an = npu_attrs_find(attrs, "activations");
    if (an) {
        if (an->type != NPU_ATTR_STRINGS || an->n != (size_t)(D * NACT))
            return KINVAL("activations must list %d names", D * NACT);
        size_t na = 0, nb = 0;
        const float *al = npu_attrs_floats(attrs, "activation_alpha", &na);
        const float *be = npu_attrs_floats(attrs, "activation_beta", &nb);
        for (size_t j = 0; j < an->n; j++) {
            if (!act_parse(an->strs[j], &acts[j]))
                return KUNSUP("activation '%s'", an->strs[j]);
            if (j < na)
                acts[j].alpha = al[j];
            if (j < nb)
                acts[j].beta = be[j];
        }
    }
    float clip = npu_attrs_float(attrs, "clip", 0.0f);
    bool has_clip = npu_attrs_find(attrs, "clip") != NULL;
    if (has_clip && !(clip > 0))
        return KINVAL("clip must be positive");
    bool input_forget = kind == RNN_LSTM && npu_attrs_int(attrs, "input_forget", 0);
    bool lbr = kind == RNN_GRU && npu_attrs_int(attrs, "linear_before_reset", 0);

    int64_t yd[4] = {T, D, Bn, H}, hd[3] = {D, Bn, H};
    if (layout)
        yd[0] = Bn, yd[1] = T, yd[2] = D, hd[0] = Bn, hd[1] = D;
    float *Y = NULL, *YH = NULL, *YC = NULL;
    if (nout > 0 && out[0]) {
        CPU_TRY(cpu_check_out(ctx, out[0], X->dtype, 4, yd));
        Y = out[0]->data;
    }
    if (nout > 1 && out[1]) {
        CPU_TRY(cpu_check_out(ctx, out[1], X->dtype, 3, hd));
        YH = out[1]->data;
    }
    if (nout > 2 && out[2]) {
        if (kind != RNN_LSTM)
            return KINVAL("only LSTM has a third output");
        CPU_TRY(cpu_check_out(ctx, out[2], X->dtype, 3, hd));
        YC = out[2]->data;
    }
    struct rnn_job j = {.kind = kind,
                        .G = G,
                        .D = D,
                        .T = T,
                        .Bn = Bn,
                        .I = I,
                        .H = H,
                        .layout = layout,
                        .reverse_only = reverse_only,
                        .clip = clip,
                        .has_clip = has_clip,
                        .input_forget = input_forget,
                        .lbr = lbr,
                        .acts = acts,
                        .NACT = NACT,
                        .X = X->data,
                        .W = W->data,
                        .R = R->data,
                        .B = Bt ? Bt->data : NULL,
                        .P = P ? P->data : NULL,
                        .H0 = H0 ? H0->data : NULL,
                        .C0 = C0 ? C0->data : NULL,
                        .Y = Y,
                        .YH = YH,
                        .YC = YC};
    /* per direction: the input projection of every step [T*B, G*H], R transposed [H, G*H],
     * then h, c, tmp (H each) and gh (2*G*H) */
    const int64_t GH = G * H;
    j.per_dir = NPU_ALIGN(T * Bn * GH + H * GH + 3 * H + 2 * GH, 16);
    j.lens = malloc(sizeof(int64_t) * (size_t)(Bn ? Bn : 1));
    j.work = malloc(sizeof(float) * (size_t)(D * j.per_dir + 1));
    enum npu_status st = NPU_OK;
    if (!j.lens || !j.work) {
        st = KNOMEM();
        goto out;
    }
    for (int64_t b = 0; b < Bn; b++) {
        j.lens[b] = SL ? cpu_scalar_i64(SL, b) : T;
        if (j.lens[b] < 0 || j.lens[b] > T) {
            st = KINVAL("sequence_lens[%lld] = %lld outside [0, %lld]", (long long)b,
                        (long long)j.lens[b], (long long)T);
            goto out;
        }
    }
    if (Y)
        memset(Y, 0, sizeof(float) * (size_t)(T * D * Bn * H));
    /* the directions are independent: one per thread (same sums whatever the thread count) */
    cpu_parallel_for(ctx, D, 1, rnn_dir_task, &j);
out:
    free(j.lens);
    free(j.work);
    return st;
}

enum npu_status
cpu_k_rnn(CPU_KERNEL_ARGS)
{
    return rnn_run(ctx, attrs, in, nin, out, nout, RNN_PLAIN);
}

enum npu_status
cpu_k_gru(CPU_KERNEL_ARGS)
{
    return rnn_run(ctx, attrs, in, nin, out, nout, RNN_GRU);
}

enum npu_status
cpu_k_lstm(CPU_KERNEL_ARGS)
{
    return rnn_run(ctx, attrs, in, nin, out, nout, RNN_LSTM);
}
