/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-rnn.c: the recurrent kernels RNN, GRU and LSTM (core/cpu/npu-cpu-rnn.c:
 * one GEMM for the input term of every step, the recurrence on R stored
 * transposed, directions on separate threads) against the ONNX definition
 * written here as a loop in double: forward, reverse and bidirectional,
 * layout 0 and 1, batches with sequence_lens (including 0 and a full length),
 * initial h and c, biases, peepholes, clip, input_forget, GRU with and without
 * linear_before_reset, non-default activations (with alpha/beta), an input of
 * size 0 and hidden sizes that are not a multiple of the vector width. Every
 * case runs on 1 and 3 threads, which must give the same bits.
 */
#include "cpu-test-util.h"
#include "npu-test.h"

enum kind { K_RNN, K_GRU, K_LSTM };

struct rcase {
    enum kind k;
    int D;      /* 1 or 2 */
    bool rev;   /* direction "reverse" (D == 1) */
    int layout; /* 0 or 1 */
    int64_t T, B, I, H;
    bool bias, seq, h0, c0, peep, input_forget, lbr;
    float clip;       /* 0: none */
    const char *acts; /* NULL or "Name,Name,..." (per direction, repeated for D = 2) */
};

struct ract {
    char name[24];
    double alpha, beta;
};

static double
ref_act(const struct ract *a, double x)
{
    if (!strcmp(a->name, "Sigmoid"))
        return 1.0 / (1.0 + exp(-x));
    if (!strcmp(a->name, "Tanh"))
        return tanh(x);
    if (!strcmp(a->name, "Relu"))
        return x > 0 ? x : 0;
    if (!strcmp(a->name, "HardSigmoid")) {
        double y = a->alpha * x + a->beta;
        return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    if (!strcmp(a->name, "LeakyRelu"))
        return x >= 0 ? x : a->alpha * x;
    if (!strcmp(a->name, "Softsign"))
        return x / (1 + fabs(x));
    if (!strcmp(a->name, "ScaledTanh"))
        return a->alpha * tanh(a->beta * x);
    abort();
}

static int ncases;

static double
clipd(double v, float clip)
{
    return clip > 0 ? (v < -clip ? -clip : v > clip ? clip : v) : v;
}

static void
run_case(const struct rcase *c)
{
    const int G = c->k == K_LSTM ? 4 : c->k == K_GRU ? 3 : 1;
    const int NACT = c->k == K_LSTM ? 3 : c->k == K_GRU ? 2 : 1;
    const int64_t T = c->T, B = c->B, I = c->I, H = c->H, D = c->D;
    struct npu_tensor *X =
        c->layout ? tt(NPU_DTYPE_FP32, 3, B, T, I) : tt(NPU_DTYPE_FP32, 3, T, B, I);
    struct npu_tensor *W = tt(NPU_DTYPE_FP32, 3, D, G * H, I),
                      *R = tt(NPU_DTYPE_FP32, 3, D, G * H, H);
    struct npu_tensor *Bt = tt(NPU_DTYPE_FP32, 2, D, 2 * G * H), *SL = tt(NPU_DTYPE_INT32, 1, B);
    struct npu_tensor *H0 =
        c->layout ? tt(NPU_DTYPE_FP32, 3, B, D, H) : tt(NPU_DTYPE_FP32, 3, D, B, H);
    struct npu_tensor *C0 =
        c->layout ? tt(NPU_DTYPE_FP32, 3, B, D, H) : tt(NPU_DTYPE_FP32, 3, D, B, H);
    struct npu_tensor *P = tt(NPU_DTYPE_FP32, 2, D, 3 * H);
    struct npu_tensor *absent = NULL; /* an optional input left out */
    tt_fill_rand(X, -2, 2);
    double sc = 1.0 / sqrt((double)(H > 0 ? H : 1));
    tt_fill_rand(W, -sc, sc);
    tt_fill_rand(R, -sc, sc);
    tt_fill_rand(Bt, -0.5, 0.5);
    tt_fill_rand(H0, -1, 1);
    tt_fill_rand(C0, -1, 1);
    tt_fill_rand(P, -0.5, 0.5);
    int64_t lens[16];
    for (int64_t b = 0; b < B; b++) {
        lens[b] = c->seq ? (b * 7 + 3) % (T + 1) : T;
        if (c->seq && b == 0)
            lens[b] = T;
        tt_set(SL, b, (double)lens[b]);
    }
    /* activations */
    struct ract acts[6];
    for (int d = 0; d < D; d++)
        for (int j = 0; j < NACT; j++) {
            snprintf(acts[d * NACT + j].name, sizeof(acts[0].name), "%s",
                     (c->k == K_RNN || j > 0) ? "Tanh" : "Sigmoid");
            acts[d * NACT + j].alpha = acts[d * NACT + j].beta = 0;
        }
    const char *names[6];
    float alphas[6], betas[6];
    char buf[128];
    if (c->acts) {
        snprintf(buf, sizeof(buf), "%s", c->acts);
        int n = 0;
        for (char *s = strtok(buf, ","); s && n < NACT; s = strtok(NULL, ","))
            names[n++] = s;
        for (int d = 1; d < D; d++)
            for (int j = 0; j < NACT; j++)
                names[d * NACT + j] = names[j];
        for (int j = 0; j < D * NACT; j++) {
            snprintf(acts[j].name, sizeof(acts[0].name), "%s", names[j]);
            alphas[j] = !strcmp(names[j], "HardSigmoid")  ? 0.3f
                        : !strcmp(names[j], "ScaledTanh") ? 1.5f
                                                          : 0.05f;
            betas[j] = !strcmp(names[j], "ScaledTanh") ? 0.7f : 0.45f;
            acts[j].alpha = alphas[j];
            acts[j].beta = betas[j];
        }
    }
    struct alist al = {0};
    al_int(&al, "hidden_size", H);
    al_str(&al, "direction", D == 2 ? "bidirectional" : c->rev ? "reverse" : "forward");
    if (c->layout)
        al_int(&al, "layout", 1);
    if (c->clip > 0)
        al_float(&al, "clip", c->clip);
    if (c->input_forget)
        al_int(&al, "input_forget", 1);
    if (c->k == K_GRU)
        al_int(&al, "linear_before_reset", c->lbr);
    if (c->acts) {
        struct npu_attr *a = al_next(&al, "activations", NPU_ATTR_STRINGS);
        a->strs = names;
        a->n = (size_t)(D * NACT);
        a = al_next(&al, "activation_alpha", NPU_ATTR_FLOATS);
        a->floats = alphas;
        a->n = (size_t)(D * NACT);
        a = al_next(&al, "activation_beta", NPU_ATTR_FLOATS);
        a->floats = betas;
        a->n = (size_t)(D * NACT);
    }
    int64_t yd0 = c->layout ? B : T, yd1 = c->layout ? T : D, yd2 = c->layout ? D : B;
    struct npu_tensor *Y = tt(NPU_DTYPE_FP32, 4, yd0, yd1, yd2, H);
    struct npu_tensor *YH =
        c->layout ? tt(NPU_DTYPE_FP32, 3, B, D, H) : tt(NPU_DTYPE_FP32, 3, D, B, H);
    struct npu_tensor *YC =
        c->layout ? tt(NPU_DTYPE_FP32, 3, B, D, H) : tt(NPU_DTYPE_FP32, 3, D, B, H);
    struct npu_tensor *in[8] = {X,
                                W,
                                R,
                                c->bias ? Bt : absent,
                                c->seq ? SL : absent,
                                c->h0 ? H0 : absent,
                                c->c0 ? C0 : absent,
                                c->peep ? P : absent};
    int nin = c->k == K_LSTM ? 8 : 6;
    struct npu_tensor *out[3] = {Y, YH, YC};
    int nout = c->k == K_LSTM ? 3 : 2;
    enum npu_op op = c->k == K_LSTM ? NPU_OP_LSTM : c->k == K_GRU ? NPU_OP_GRU : NPU_OP_RNN;
    CHECK_EQ_INT(NPU_OK, run2(op, &al, nin, in, nout, out));

    /* the reference */
    int64_t ny = T * D * B * H, ns = D * B * H;
    double *ry = calloc((size_t)(ny + 1), sizeof(double));
    double *rh = calloc((size_t)(ns + 1), sizeof(double)),
           *rc = calloc((size_t)(ns + 1), sizeof(double));
    double *h = calloc((size_t)H + 1, sizeof(double)), *cc = calloc((size_t)H + 1, sizeof(double));
    double *gs = calloc((size_t)(G * H) + 1, sizeof(double)),
           *gr = calloc((size_t)(G * H) + 1, sizeof(double));
    for (int64_t d = 0; d < D; d++) {
        bool rev = c->rev || d == 1;
        const struct ract *fa = &acts[d * NACT];
        for (int64_t b = 0; b < B; b++) {
            int64_t so = c->layout ? (b * D + d) * H : (d * B + b) * H;
            for (int64_t k = 0; k < H; k++) {
                h[k] = c->h0 ? tt_get(H0, so + k) : 0;
                cc[k] = c->c0 ? tt_get(C0, so + k) : 0;
            }
            for (int64_t s = 0; s < lens[b]; s++) {
                int64_t t = rev ? lens[b] - 1 - s : s;
                int64_t xo = (c->layout ? b * T + t : t * B + b) * I;
                /* gs = x W^T + Wb, gr = h R^T + Rb */
                for (int64_t n = 0; n < G * H; n++) {
                    double a = c->bias ? tt_get(Bt, d * 2 * G * H + n) : 0;
                    double r = c->bias ? tt_get(Bt, d * 2 * G * H + G * H + n) : 0;
                    for (int64_t k = 0; k < I; k++)
                        a += tt_get(X, xo + k) * tt_get(W, (d * G * H + n) * I + k);
                    for (int64_t k = 0; k < H; k++)
                        r += h[k] * tt_get(R, (d * G * H + n) * H + k);
                    gs[n] = a;
                    gr[n] = r;
                }
                if (c->k == K_RNN) {
                    for (int64_t k = 0; k < H; k++)
                        h[k] = ref_act(&fa[0], clipd(gs[k] + gr[k], c->clip));
                } else if (c->k == K_GRU) {
                    double *nh = calloc((size_t)H + 1, sizeof(double));
                    for (int64_t k = 0; k < H; k++) {
                        double z = ref_act(&fa[0], clipd(gs[k] + gr[k], c->clip));
                        double r = ref_act(&fa[0], clipd(gs[H + k] + gr[H + k], c->clip));
                        double hv;
                        if (c->lbr) {
                            hv = gs[2 * H + k] + r * gr[2 * H + k];
                        } else {
                            double q = c->bias ? tt_get(Bt, d * 2 * G * H + G * H + 2 * H + k) : 0;
                            for (int64_t m = 0; m < H; m++) {
                                double rm = ref_act(&fa[0], clipd(gs[H + m] + gr[H + m], c->clip));
                                q += rm * h[m] * tt_get(R, (d * G * H + 2 * H + k) * H + m);
                            }
                            hv = gs[2 * H + k] + q;
                        }
                        double ht = ref_act(&fa[1], clipd(hv, c->clip));
                        nh[k] = (1 - z) * ht + z * h[k];
                    }
                    memcpy(h, nh, sizeof(double) * (size_t)H);
                    free(nh);
                } else {
                    for (int64_t k = 0; k < H; k++) {
                        double pi = c->peep ? tt_get(P, d * 3 * H + k) : 0;
                        double po = c->peep ? tt_get(P, d * 3 * H + H + k) : 0;
                        double pf = c->peep ? tt_get(P, d * 3 * H + 2 * H + k) : 0;
                        double it = ref_act(&fa[0], clipd(gs[k] + gr[k] + pi * cc[k], c->clip));
                        double ft =
                            c->input_forget
                                ? 1 - it
                                : ref_act(&fa[0], clipd(gs[2 * H + k] + gr[2 * H + k] + pf * cc[k],
                                                        c->clip));
                        double ct = ref_act(&fa[1], clipd(gs[3 * H + k] + gr[3 * H + k], c->clip));
                        cc[k] = ft * cc[k] + it * ct;
                        double ot =
                            ref_act(&fa[0], clipd(gs[H + k] + gr[H + k] + po * cc[k], c->clip));
                        h[k] = ot * ref_act(&fa[2], cc[k]);
                    }
                }
                int64_t yo = c->layout ? ((b * T + t) * D + d) * H : ((t * D + d) * B + b) * H;
                memcpy(ry + yo, h, sizeof(double) * (size_t)H);
            }
            memcpy(rh + so, h, sizeof(double) * (size_t)H);
            memcpy(rc + so, cc, sizeof(double) * (size_t)H);
        }
    }
    double e = tt_err(Y, ry, 2e-5, 2e-4), eh = tt_err(YH, rh, 2e-5, 2e-4);
    double ec = c->k == K_LSTM ? tt_err(YC, rc, 2e-5, 2e-4) : 0;
    if (!(e <= 1 && eh <= 1 && ec <= 1))
        fprintf(stderr,
                "case kind %d D %d rev %d layout %d T %lld B %lld I %lld H %lld bias %d seq %d "
                "h0 %d c0 %d peep %d if %d lbr %d clip %g acts %s: error %g / %g / %g\n",
                c->k, c->D, c->rev, c->layout, (long long)T, (long long)B, (long long)I,
                (long long)H, c->bias, c->seq, c->h0, c->c0, c->peep, c->input_forget, c->lbr,
                (double)c->clip, c->acts ? c->acts : "-", e, eh, ec);
    CHECK(e <= 1);
    CHECK(eh <= 1);
    CHECK(ec <= 1);
    ncases++;
    free(ry);
    free(rh);
    free(rc);
    free(h);
    free(cc);
    free(gs);
    free(gr);
    tt_free(X);
    tt_free(W);
    tt_free(R);
    tt_free(Bt);
    tt_free(SL);
    tt_free(H0);
    tt_free(C0);
    tt_free(P);
    tt_free(Y);
    tt_free(YH);
    tt_free(YC);
}

int
main(void)
{
    tctx_init();
    static const int64_t shapes[][4] = {
        /* T, B, I, H */
        {1, 1, 1, 1}, {5, 1, 32, 24}, {7, 3, 13, 17}, {16, 2, 48, 24}, {4, 4, 8, 33}, {3, 1, 0, 5},
    };
    for (int k = 0; k < 3; k++)
        for (size_t s = 0; s < NPU_ARRAY_SIZE(shapes); s++)
            for (int dir = 0; dir < 3; dir++)
                for (int layout = 0; layout < 2; layout++) {
                    struct rcase c = {.k = (enum kind)k,
                                      .D = dir == 2 ? 2 : 1,
                                      .rev = dir == 1,
                                      .layout = layout,
                                      .T = shapes[s][0],
                                      .B = shapes[s][1],
                                      .I = shapes[s][2],
                                      .H = shapes[s][3]};
                    bool odd = (s + (size_t)dir + (size_t)layout) & 1;
                    c.bias = odd || s == 1;
                    c.seq = c.B > 1 && odd;
                    c.h0 = !odd || s == 3;
                    c.c0 = s & 1;
                    c.lbr = k == K_GRU && odd;
                    run_case(&c);
                    if (k == K_LSTM && s == 2) {
                        c.peep = true;
                        run_case(&c);
                        c.clip = 0.8f;
                        run_case(&c);
                        c.input_forget = true;
                        run_case(&c);
                    }
                }
    /* non-default activations, clip on GRU and RNN, lbr 0 with a bias */
    struct rcase extra[] = {
        {K_RNN, 2, false, 0, 6, 2, 9, 11, true, true, true, false, false, false, false, 0, "Relu"},
        {K_RNN, 1, false, 1, 6, 2, 9, 11, true, false, true, false, false, false, false, 0.5f,
         "Softsign"},
        {K_GRU, 2, false, 0, 5, 3, 7, 10, true, true, true, false, false, false, false, 0.9f,
         "HardSigmoid,LeakyRelu"},
        {K_GRU, 1, true, 1, 5, 3, 7, 10, true, false, false, false, false, false, true, 0,
         "Sigmoid,ScaledTanh"},
        {K_LSTM, 2, false, 0, 6, 2, 5, 9, true, true, true, true, true, false, false, 0,
         "HardSigmoid,Tanh,Softsign"},
        {K_LSTM, 1, false, 1, 6, 2, 5, 9, true, false, true, true, false, true, false, 1.5f,
         "Sigmoid,ScaledTanh,Relu"},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(extra); i++)
        run_case(&extra[i]);
    fprintf(stderr, "test-cpu-rnn: %d cases\n", ncases);
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-rnn");
}
