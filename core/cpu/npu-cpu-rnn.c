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
 * fp32 with double dot products (fp16 operands are widened by npu-cpu.c).
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

static float
act_apply(const struct act *a, float x)
{
    switch (a->k) {
    case ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case ACT_TANH: return tanhf(x);
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_HARD_SIGMOID: {
        float y = a->alpha * x + a->beta;
        return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case ACT_LEAKY_RELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case ACT_SCALED_TANH: return a->alpha * tanhf(a->beta * x);
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

/* y[n] = sum_k x[k] * w[n*K + k] for n < N (a row-major [N, K] weight), in double over 8
 * interleaved partial sums (k mod 8, added pairwise at the end) so that the loop vectorises
 * instead of waiting on one add chain; the order is fixed by K alone. */
CPU_HOT static void
matvec(const float *w, const float *x, int64_t N, int64_t K, double *y)
{
    const int64_t K8 = K & ~(int64_t)7;
    for (int64_t n = 0; n < N; n++) {
        double s[8] = {0};
        const float *r = w + n * K;
        for (int64_t k = 0; k < K8; k += 8)
            for (int i = 0; i < 8; i++)
                s[i] += (double)r[k + i] * x[k + i];
        double t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
        for (int64_t k = K8; k < K; k++)
            t += (double)r[k] * x[k];
        y[n] = t;
    }
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
    int64_t *lens = malloc(sizeof(int64_t) * (size_t)(Bn ? Bn : 1));
    float *h = malloc(sizeof(float) * (size_t)(H * 2 + 1));
    double *gx = malloc(sizeof(double) * (size_t)(G * H * 2 + 1));
    float *tmp = malloc(sizeof(float) * (size_t)(H + 1));
    enum npu_status st = NPU_OK;
    if (!lens || !h || !gx || !tmp) {
        st = KNOMEM();
        goto out;
    }
    for (int64_t b = 0; b < Bn; b++) {
        lens[b] = SL ? cpu_scalar_i64(SL, b) : T;
        if (lens[b] < 0 || lens[b] > T) {
            st = KINVAL("sequence_lens[%lld] = %lld outside [0, %lld]", (long long)b,
                        (long long)lens[b], (long long)T);
            goto out;
        }
    }
    if (Y)
        memset(Y, 0, sizeof(float) * (size_t)(T * D * Bn * H));
    float *c = h + H;
    double *gh = gx + G * H;
    const float *x = X->data;
    for (int d = 0; d < D; d++) {
        bool rev = reverse_only || d == 1;
        const float *w = (const float *)W->data + d * G * H * I;
        const float *r = (const float *)R->data + d * G * H * H;
        const float *wb = Bt ? (const float *)Bt->data + d * 2 * G * H : NULL;
        const float *rb = wb ? wb + G * H : NULL;
        const float *p = P ? (const float *)P->data + d * 3 * H : NULL;
        const struct act *fa = &acts[d * NACT];
        for (int64_t b = 0; b < Bn; b++) {
            /* state offsets of [D, B, H] (layout 0) or [B, D, H] (layout 1) */
            int64_t so = layout ? (b * D + d) * H : (d * Bn + b) * H;
            for (int64_t k = 0; k < H; k++) {
                h[k] = H0 ? ((const float *)H0->data)[so + k] : 0.0f;
                c[k] = C0 ? ((const float *)C0->data)[so + k] : 0.0f;
            }
            for (int64_t s = 0; s < lens[b]; s++) {
                int64_t t = rev ? lens[b] - 1 - s : s;
                const float *xt = x + (layout ? (b * T + t) : (t * Bn + b)) * I;
                matvec(w, xt, G * H, I, gx);
                matvec(r, h, G * H, H, gh);
                for (int64_t k = 0; k < G * H; k++) {
                    if (wb)
                        gx[k] += wb[k];
                    if (rb)
                        gh[k] += rb[k];
                }
                if (kind == RNN_PLAIN) {
                    for (int64_t k = 0; k < H; k++) {
                        float v = (float)(gx[k] + gh[k]);
                        if (has_clip)
                            v = v < -clip ? -clip : v > clip ? clip : v;
                        h[k] = act_apply(&fa[0], v);
                    }
                } else if (kind == RNN_GRU) {
                    /* gates z, r, h */
                    for (int64_t k = 0; k < H; k++) {
                        float z = (float)(gx[k] + gh[k]), rr = (float)(gx[H + k] + gh[H + k]);
                        if (has_clip) {
                            z = z < -clip ? -clip : z > clip ? clip : z;
                            rr = rr < -clip ? -clip : rr > clip ? clip : rr;
                        }
                        gx[k] = act_apply(&fa[0], z);
                        gx[H + k] = act_apply(&fa[0], rr);
                    }
                    if (!lbr) { /* (r . h_prev) R_h^T: a second product on the reset state */
                        for (int64_t k = 0; k < H; k++)
                            tmp[k] = (float)gx[H + k] * h[k];
                        matvec(r + 2 * H * H, tmp, H, H, gh + 2 * H);
                        if (rb)
                            for (int64_t k = 0; k < H; k++)
                                gh[2 * H + k] += rb[2 * H + k];
                    }
                    for (int64_t k = 0; k < H; k++) {
                        double hh = lbr ? gx[2 * H + k] + gx[H + k] * gh[2 * H + k]
                                        : gx[2 * H + k] + gh[2 * H + k];
                        float v = (float)hh;
                        if (has_clip)
                            v = v < -clip ? -clip : v > clip ? clip : v;
                        float ht = act_apply(&fa[1], v), z = (float)gx[k];
                        h[k] = (1.0f - z) * ht + z * h[k];
                    }
                } else {
                    /* gates i, o, f, c; peepholes i, o, f */
                    for (int64_t k = 0; k < H; k++) {
                        float gi = (float)(gx[k] + gh[k]), go = (float)(gx[H + k] + gh[H + k]);
                        float gf = (float)(gx[2 * H + k] + gh[2 * H + k]);
                        float gc = (float)(gx[3 * H + k] + gh[3 * H + k]);
                        if (p) {
                            gi += p[k] * c[k];
                            gf += p[2 * H + k] * c[k];
                        }
                        if (has_clip) {
                            gi = gi < -clip ? -clip : gi > clip ? clip : gi;
                            gf = gf < -clip ? -clip : gf > clip ? clip : gf;
                            gc = gc < -clip ? -clip : gc > clip ? clip : gc;
                        }
                        float it = act_apply(&fa[0], gi);
                        float ft = input_forget ? 1.0f - it : act_apply(&fa[0], gf);
                        float ct = act_apply(&fa[1], gc);
                        c[k] = ft * c[k] + it * ct;
                        if (p)
                            go += p[H + k] * c[k];
                        if (has_clip)
                            go = go < -clip ? -clip : go > clip ? clip : go;
                        h[k] = act_apply(&fa[0], go) * act_apply(&fa[2], c[k]);
                    }
                }
                if (Y) {
                    int64_t yo = layout ? ((b * T + t) * D + d) * H : ((t * D + d) * Bn + b) * H;
                    memcpy(Y + yo, h, sizeof(float) * (size_t)H);
                }
            }
            if (YH)
                memcpy(YH + so, h, sizeof(float) * (size_t)H);
            if (YC)
                memcpy(YC + so, c, sizeof(float) * (size_t)H);
        }
    }
out:
    free(lens);
    free(h);
    free(gx);
    free(tmp);
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
