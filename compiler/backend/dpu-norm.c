/* SPDX-License-Identifier: MIT */
/*
 * dpu-norm.c: reductions over channels and the composites built on them: LayerNormalization
 * and Softmax over the channel axis (the last logical axis in a row-major view).
 *
 * The NPU reduces over channels only inside the MAC array, so
 *   sums      = 1x1 convolutions with a ones kernel (8 output lanes, all equal),
 *   broadcast = 1x1 convolutions from one input lane to C output channels (C = 8 input
 *               channels: one MAC step per 16 kernels, almost free in timing model v1),
 *               with the per-pixel operation fused as the EW stage of that convolution,
 *   maxima    = EW MAX passes halving the surfaces, then three lane rotations (1x1 convs
 *               with permutation weights, exact) with a fused EW MAX,
 *   1/sqrt    = three band tables (LUT) multiplied, then one Newton step (dpu-lut.c).
 * docs/npu-dpu-ops.md gives the task lists, costs at SigLIP shapes and the accuracy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dpu-low.h"

/* An 8-lane map (one surface) of h x w pixels inside temp `t` at surface slot k. */
static struct npu_dpu_map
lanes8(struct npu_dpu_ref t, uint32_t k, uint32_t h, uint32_t w)
{
    struct npu_dpu_ref r = {t.buffer, t.offset + k * h * w * 16};
    return npu_dpu_map_packed(r, NPU_DPU_FP16, 8, h, w);
}

/* fp16 conv weights (kernels x channels, 1x1) packed into NPU_BUF_WEIGHTS. */
static struct npu_dpu_ref
weights_1x1(struct rkd *b, const char *name, const float *kc, uint32_t k, uint32_t c)
{
    struct npu_weight_layout wl;
    struct npu_dpu_ref none = rkd_result();
    if (npu_weight_layout_init(&wl, 2, k, c, 1, 1, false)) {
        b->err = NPU_ERR_UNSUPPORTED;
        return none;
    }
    uint8_t *pk = calloc(1, wl.total_bytes);
    if (!pk || npu_be_pack_fp16(&wl, pk, kc, c, 1)) {
        free(pk);
        b->err = NPU_ERR_NOMEM;
        return none;
    }
    struct npu_dpu_ref r = rkd_const(b, name, pk, wl.total_bytes);
    free(pk);
    return r;
}

void
dl_chan_sum(struct rkd *b, const struct npu_dpu_map *x, float scale, const struct npu_dpu_map *out,
            const struct npu_dpu_stages *st)
{
    uint32_t C = x->c, K = out->c;
    float *w = malloc((size_t)K * C * sizeof(float));
    if (!w) {
        b->err = NPU_ERR_NOMEM;
        return;
    }
    for (size_t i = 0; i < (size_t)K * C; i++)
        w[i] = 1.0f;
    struct npu_dpu_conv cv = {
        .in = *x, .kernels = K, .kh = 1, .kw = 1, .sy = 1, .sx = 1, .out = *out};
    cv.weights = weights_1x1(b, "ones", w, K, C);
    free(w);
    if (st)
        cv.st = *st;
    if (scale != 1.0f) {
        /* the scale in fp32 (BS MUL through BRDMA), after any BS ALU of the caller */
        float *sv = malloc(NPU_ALIGN(K, 8u) * sizeof(float));
        if (!sv) {
            b->err = NPU_ERR_NOMEM;
            return;
        }
        for (uint32_t k = 0; k < NPU_ALIGN(K, 8u); k++)
            sv[k] = scale;
        cv.st.bs.mul = NPU_DPU_SRC_MEM;
        cv.st.bs.mul_mem = dl_chan_const(b, "scale", sv, NPU_ALIGN(K, 8u));
        free(sv);
    }
    rkd_conv(b, &cv);
}

void
dl_ident_conv(struct rkd *b, const struct npu_dpu_map *x, float diag, const struct npu_dpu_map *out,
              const struct npu_dpu_stages *st)
{
    uint32_t C = x->c;
    float *w = calloc((size_t)C * C, sizeof(float));
    if (!w) {
        b->err = NPU_ERR_NOMEM;
        return;
    }
    for (uint32_t k = 0; k < C; k++)
        w[(size_t)k * C + k] = diag;
    struct npu_dpu_conv cv = {
        .in = *x, .kernels = C, .kh = 1, .kw = 1, .sy = 1, .sx = 1, .out = *out};
    cv.weights = weights_1x1(b, "ident", w, C, C);
    free(w);
    if (st)
        cv.st = *st;
    rkd_conv(b, &cv);
}

void
dl_bcast(struct rkd *b, const struct npu_dpu_map *s8, const float *wk, float scale,
         const struct npu_dpu_map *out, const struct npu_dpu_stages *st)
{
    uint32_t K = out->c;
    float *w = calloc((size_t)K * 8, sizeof(float));
    if (!w) {
        b->err = NPU_ERR_NOMEM;
        return;
    }
    for (uint32_t k = 0; k < K; k++)
        w[(size_t)k * 8] = wk ? wk[k] : scale;
    struct npu_dpu_conv cv = {
        .in = *s8, .kernels = K, .kh = 1, .kw = 1, .sy = 1, .sx = 1, .out = *out};
    cv.in.c = 8;
    cv.weights = weights_1x1(b, wk ? "bcastw" : "bcast", w, K, 8);
    free(w);
    if (st)
        cv.st = *st;
    rkd_conv(b, &cv);
}

/* Stages on the first pass of the channel max: clamp to the lowest finite fp16 (-65504) and
 * set channels [c0, c) (padding lanes, which read 0) to it: BS adds 65504, multiplies by 1
 * (or 0 for padding, fp32 per channel through BRDMA), ReLU; BN adds -65504. Finite on
 * purpose: the lane rotations are convolutions, where 0 * -inf would be NaN; a max of a
 * clamped value with anything stays finite, so only the first pass needs it. The fp32
 * additions round the values (|error| <= 2^-8): the result is only a shift for softmax. */
static void
clamp_mask(struct rkd *b, struct npu_dpu_stages *st, uint32_t c0, uint32_t c)
{
    float *m = calloc(NPU_ALIGN(c, 16u), sizeof(float));
    if (!m) {
        b->err = NPU_ERR_NOMEM;
        return;
    }
    for (uint32_t l = 0; l < c; l++)
        m[l] = l < c0 ? 1.0f : 0.0f;
    st->bs.alu = NPU_DPU_SRC_REG;
    st->bs.alu_value = 65504.0f;
    st->bs.mul = NPU_DPU_SRC_MEM;
    st->bs.mul_mem = dl_chan_const(b, "mmul", m, c);
    st->bs.relu = true;
    st->bn.alu = NPU_DPU_SRC_REG;
    st->bn.alu_value = -65504.0f;
    free(m);
}

/* Lanes of the 8-lane map cur: m8[k] = max over all lanes, by out[k] = max(in[k], in[(k + d)
 * % 8]) for d = 4, 2, 1 (1x1 convs with permutation weights, exact, and a fused EW MAX);
 * ta / tb hold 8-lane maps of cur's size. */
static void
lane_max(struct rkd *b, const struct npu_dpu_map *in, const struct npu_dpu_map *m8,
         struct npu_dpu_ref ta, struct npu_dpu_ref tb)
{
    struct npu_dpu_map cur = *in;
    bool use_a = true;
    uint32_t H = in->h, W = in->w;
    for (uint32_t d = 4; d >= 1; d /= 2) {
        float w[64] = {0};
        for (uint32_t k = 0; k < 8; k++)
            w[k * 8 + (k + d) % 8] = 1.0f;
        struct npu_dpu_map t =
            d == 1 ? *m8 : npu_dpu_map_packed(use_a ? ta : tb, NPU_DPU_FP16, 8, H, W);
        struct npu_dpu_conv cv = {
            .in = cur, .kernels = 8, .kh = 1, .kw = 1, .sy = 1, .sx = 1, .out = t};
        cv.in.c = 8;
        cv.out.c = 8;
        cv.weights = weights_1x1(b, "rot", w, 8, 8);
        cv.st.ew.op = NPU_DPU_EW_MAX;
        cv.st.ew.operand = cur;
        cv.st.ew.operand.c = 8;
        rkd_conv(b, &cv);
        cur = t;
        use_a = !use_a;
    }
}

void
dl_chan_max(struct rkd *b, const struct npu_dpu_map *x, const struct npu_dpu_map *m8)
{
    uint32_t S = npu_dpu_map_c1(x), H = x->h, W = x->w;
    uint32_t pad = S * 8 - x->c;
    struct npu_dpu_map cur = *x;
    /* two scratch areas of ceil(S/2) surfaces for the rounds */
    uint32_t half = (S + 1) / 2;
    struct npu_dpu_ref ta = rkd_temp(b, (uint64_t)NPU_MAX(half, 1u) * H * W * 16);
    struct npu_dpu_ref tb = rkd_temp(b, (uint64_t)NPU_MAX(half, 1u) * H * W * 16);
    bool first = true, use_a = true;
    if (S == 1) {
        /* no halving: one clamp / mask pass */
        struct npu_dpu_map t = npu_dpu_map_packed(ta, NPU_DPU_FP16, 8, H, W);
        struct npu_dpu_pass p = {.in = cur, .out = t};
        p.in.c = 8;
        clamp_mask(b, &p.st, x->c, 8);
        rkd_pass(b, &p);
        cur = t;
        use_a = false;
    }
    while (npu_dpu_map_c1(&cur) > 1) {
        uint32_t s = npu_dpu_map_c1(&cur), h = (s + 1) / 2;
        struct npu_dpu_map t = npu_dpu_map_packed(use_a ? ta : tb, NPU_DPU_FP16, h * 8, H, W);
        /* main: the upper surfaces (holding the partial one), operand: the lower ones;
         * they overlap when s is odd (max is idempotent) */
        struct npu_dpu_map hi = npu_dpu_map_channels(&cur, (s - h) * 8, h * 8);
        struct npu_dpu_map lo = npu_dpu_map_channels(&cur, 0, h * 8);
        struct npu_dpu_pass p = {.in = hi, .out = t};
        if (first)
            /* padding lanes of the last surface (main holds it) read 0 (OFFSET_PEND) */
            clamp_mask(b, &p.st, (h - 1) * 8 + (8 - pad), h * 8);
        p.st.ew.op = NPU_DPU_EW_MAX;
        p.st.ew.operand = lo;
        rkd_pass(b, &p);
        cur = t;
        use_a = !use_a;
        first = false;
    }
    lane_max(b, &cur, m8, use_a ? ta : tb, use_a ? tb : ta);
}

bool
dl_chan_max_ppu(struct rkd *b, const struct npu_dpu_map *x, const struct npu_dpu_map *m8,
                struct npu_dpu_ref scratch, uint64_t scratch_bytes)
{
    uint32_t G = npu_dpu_map_c1(x), H = x->h;
    if (x->c % 8 || x->w != 1 || npu_dpu_map_line(x) != 1 || H > 8192 || G < 2 ||
        npu_dpu_map_surf(x) < H || x->type != NPU_DPU_FP16)
        return false;
    /* pooling stages over the surfaces: windows k <= 16 with strides s <= 16 that tile
     * exactly ((G - k) % s == 0), fewest output rows first */
    uint32_t st_k[8], st_s[8], st_o[8], n = 0, g = G;
    while (g > 1) {
        uint32_t bk = 0, bs = 0, bo = UINT32_MAX;
        for (uint32_t k = NPU_MIN(g, 16u); k >= 2; k--)
            for (uint32_t sd = k; sd >= 1; sd--)
                if ((g - k) % sd == 0 && (g - k) / sd + 1 < bo) {
                    bo = (g - k) / sd + 1;
                    bk = k;
                    bs = sd;
                }
        if (!bk || n == NPU_ARRAY_SIZE(st_k))
            return false;
        st_k[n] = bk;
        st_s[n] = bs;
        st_o[n++] = bo;
        g = bo;
    }
    /* scratch: two ping-pong stage outputs (the first is the largest) and the clamped
     * lanes, and two 8-lane maps for the rotations */
    uint64_t stage = (uint64_t)st_o[0] * H * 16, lanes = (uint64_t)H * 16;
    if (2 * stage + 3 * lanes > scratch_bytes)
        return false;
    struct npu_dpu_ref sa = scratch, sb = scratch, sc = scratch, sd = scratch, se = scratch;
    sb.offset += (uint32_t)stage;
    sc.offset += (uint32_t)(2 * stage);
    sd.offset += (uint32_t)(2 * stage + lanes);
    se.offset += (uint32_t)(2 * stage + 2 * lanes);
    /* x's surfaces as image rows: pixel (row r, surface y) at y * surf + r atoms, 8 lanes */
    struct npu_dpu_map cur = {.ref = x->ref,
                              .type = NPU_DPU_FP16,
                              .c = 8,
                              .h = G,
                              .w = H,
                              .line = npu_dpu_map_surf(x),
                              .surf = npu_dpu_map_surf(x) * G};
    for (uint32_t i = 0; i < n; i++) {
        struct npu_dpu_map o = npu_dpu_map_packed(i % 2 ? sb : sa, NPU_DPU_FP16, 8, st_o[i], H);
        struct npu_dpu_pool p = {.op = NPU_DPU_POOL_MAX,
                                 .in = cur,
                                 .kh = st_k[i],
                                 .kw = 1,
                                 .sy = st_s[i],
                                 .sx = 1,
                                 .out = o};
        rkd_pool(b, &p);
        cur = o;
    }
    /* finite values (an fp16 score may have overflowed to +-inf; the lane rotations are
     * convolutions, where 0 * inf = NaN): clamp to +-65504 */
    struct npu_dpu_map c8 = npu_dpu_map_packed(sc, NPU_DPU_FP16, 8, H, 1);
    cur.h = H;
    cur.w = 1;
    cur.line = 1;
    cur.surf = H;
    struct npu_dpu_pass p = {.in = cur, .out = c8};
    clamp_mask(b, &p.st, 8, 8);
    p.st.bs.relux = true;
    p.st.bs.relux_value = 131008.0f;
    rkd_pass(b, &p);
    lane_max(b, &c8, m8, sd, se);
    return true;
}

/* One pass: out = in * (EW MUL) op. */
static void
mul_pass(struct rkd *b, const struct npu_dpu_map *in, const struct npu_dpu_map *op,
         const struct npu_dpu_map *out, float pre_scale)
{
    struct npu_dpu_pass p = {.in = *in, .out = *out};
    if (pre_scale != 1.0f) {
        p.st.bs.mul = NPU_DPU_SRC_REG;
        p.st.bs.mul_value = pre_scale;
    }
    p.st.ew.op = NPU_DPU_EW_MUL;
    p.st.ew.operand = *op;
    rkd_pass(b, &p);
}

/* r = 1/sqrt(v) for v in [2^lg, 2^22], lg = -20 + first * NPU_DPU_RSQRT_BAND_LG (first 0 or
 * 1): the band tables from band `first` on (each a LUT pass), their product times 2^(-lg / 2) (the
 * bands telescope: the bands below v's range would each give the constant sqrt(L / H)), one Newton
 * step. */
static void
rsqrt_bands(struct rkd *b, const struct npu_dpu_map *v, const struct npu_dpu_map *r, int first)
{
    uint32_t H = v->h, W = v->w;
    /* 5 scratch lanes maps in one temp */
    struct npu_dpu_ref t = rkd_temp(b, 5ull * H * W * 16);
    struct npu_dpu_map g[3], acc = lanes8(t, 3, H, W), acc2 = lanes8(t, 4, H, W);
    const int lg0 = -20 + first * NPU_DPU_RSQRT_BAND_LG;
    for (int k = 0; k < 3; k++)
        g[k] = lanes8(t, (uint32_t)k, H, W);
    for (int k = first; k < 3; k++) {
        const struct npu_dpu_lut *l =
            npu_dpu_lut_get(npu_dpu_lut_band_id(-20 + k * NPU_DPU_RSQRT_BAND_LG));
        rkd_lut(b, l->id);
        struct npu_dpu_pass p = {.in = *v, .out = g[k]};
        p.in.c = 8;
        /* the index scale 2^(7 - lg) (up to 2^27) as two fp16-exact factors */
        int e = (int)lrint(log2(l->in_scale)), e1 = e / 2;
        p.st.bs.mul = NPU_DPU_SRC_REG;
        p.st.bs.mul_value = ldexpf(1.0f, e1);
        p.st.bn.mul = NPU_DPU_SRC_REG;
        p.st.bn.mul_value = ldexpf(1.0f, e - e1);
        p.st.ew.lut = l;
        rkd_pass(b, &p);
    }
    /* y0 = 2^(-lg0 / 2) prod_k g_k (dpu-lut.c) */
    if (first == 0) {
        mul_pass(b, &g[0], &g[1], &acc, 1.0f);
        mul_pass(b, &acc, &g[2], &acc2, ldexpf(1.0f, -lg0 / 2));
    } else
        mul_pass(b, &g[1], &g[2], &acc2, ldexpf(1.0f, -lg0 / 2));
    /* Newton: y1 = y0 (1.5 - 0.5 v y0^2) */
    struct npu_dpu_map vv = *v;
    vv.c = 8;
    mul_pass(b, &vv, &acc2, &g[0], 1.0f);    /* u = v y0 */
    mul_pass(b, &g[0], &acc2, &g[1], -0.5f); /* q = -0.5 v y0^2 */
    struct npu_dpu_pass p = {.in = g[1], .out = *r};
    p.st.bs.alu = NPU_DPU_SRC_REG;
    p.st.bs.alu_value = 1.5f;
    p.st.ew.op = NPU_DPU_EW_MUL;
    p.st.ew.operand = acc2;
    rkd_pass(b, &p);
}

void
dl_rsqrt(struct rkd *b, const struct npu_dpu_map *v, const struct npu_dpu_map *r)
{
    rsqrt_bands(b, v, r, 0);
}

/* The view of x when the last logical axis is the channel axis of a row-major view. */
static bool
last_axis_view(const struct rkd *b, struct npu_value *x, int64_t axis, struct vmap *vm)
{
    const struct npu_tensor *t = &x->t;
    if (axis < 0)
        axis += t->ndim;
    if (t->ndim < 1 || axis != t->ndim - 1)
        return false;
    if (!dl_view(b, x, vm))
        return false;
    if (vm->order == NPU_VIEW_HWC && vm->view[0] == t->dims[t->ndim - 1])
        return true;
    /* host inputs may be read in the row-major view instead */
    if (!dl_npu_value(b, x)) {
        int64_t rows = npu_tensor_numel(t) / t->dims[t->ndim - 1];
        if (rows > 8192 || t->dims[t->ndim - 1] > 8192)
            return false;
        vm->view[0] = (uint32_t)t->dims[t->ndim - 1];
        vm->view[1] = (uint32_t)rows;
        vm->view[2] = 1;
        vm->order = NPU_VIEW_HWC;
        return npu_rk_order_of(t, vm->view) == NPU_VIEW_HWC;
    }
    return false;
}

/*
 * beta of a layer norm whose every reader is a MatMul by constant weights B [C, N] with a
 * constant bias b [N] (q / k / v / fc1 after fuse_bias): y B + b = (y0 + beta) B + b =
 * y0 B + (b + beta B), so the readers get the bias b + beta B and the layer norm skips its
 * beta pass (one full read + write of the activations). Dry runs only check.
 */
static bool
fold_beta(struct rkd *b, struct npu_node *ln, const float *beta, uint32_t C)
{
    struct npu_value *out = ln->out[0];
    if ((!b->cx && b->depth) || out->is_output || !out->nusers)
        return false;
    for (int i = 0; i < out->nusers; i++) {
        const struct npu_node *u = out->users[i];
        const struct npu_value *B = u->nin > 1 ? u->in[1] : NULL;
        const struct npu_value *bb = u->nin > 2 ? u->in[2] : NULL;
        /* (dry runs come before partitioning: a reader not placed yet may run here) */
        if (u->op != NPU_OP_MATMUL || u->device == NPU_DEVICE_CPU ||
            (b->cx && u->device != NPU_DEVICE_NPU) || u->nin != 3 || u->in[0] != out || !B ||
            B->kind != NPU_VALUE_CONST || B->t.ndim != 2 || B->t.dims[0] != C ||
            !npu_dtype_is_float(B->t.dtype) || !bb || bb->kind != NPU_VALUE_CONST ||
            npu_value_numel(bb) != B->t.dims[1] || !npu_dtype_is_float(bb->t.dtype))
            return false;
    }
    if (!b->cx)
        return true; /* dry runs (cost): the lowering will fold it */
    for (int i = 0; i < out->nusers; i++) {
        struct npu_node *u = out->users[i];
        /* a B whose rows the packer would centre (dpu-center.c): centred now, read below */
        if (npu_dpu_centre_pending(b->cx->g, u))
            return false;
        int64_t N = u->in[1]->t.dims[1];
        float *nb = malloc((size_t)N * sizeof(float));
        double *acc = malloc((size_t)N * sizeof(double));
        if (!nb || !acc) {
            free(nb);
            free(acc);
            return false;
        }
        const float *wf = u->in[1]->t.dtype == NPU_DTYPE_FP32 ? npu_value_data(u->in[1]) : NULL;
        for (int64_t j = 0; j < N; j++)
            acc[j] = npu_value_get_f64(u->in[2], j);
        /* every acc[j] sums over c in increasing order, as one column at a time would (the
         * products of two floats are exact in double); rows of B read in order */
        for (uint32_t c = 0; c < C; c++) {
            const double bc = beta[c];
            if (wf) {
                const float *row = wf + (size_t)c * (size_t)N;
                int64_t j = 0;
#if defined(__SSE2__)
                /* the same double product and sum per column, four columns at a time */
                const __m128d b2 = _mm_set1_pd(bc);
                for (; j + 4 <= N; j += 4) {
                    __m128 x = _mm_loadu_ps(row + j);
                    __m128d lo = _mm_mul_pd(b2, _mm_cvtps_pd(x));
                    __m128d hi = _mm_mul_pd(b2, _mm_cvtps_pd(_mm_movehl_ps(x, x)));
                    _mm_storeu_pd(acc + j, _mm_add_pd(_mm_loadu_pd(acc + j), lo));
                    _mm_storeu_pd(acc + j + 2, _mm_add_pd(_mm_loadu_pd(acc + j + 2), hi));
                }
#endif
                for (; j < N; j++) /* B may be unaligned (borrowed): memcpy loads */
                    acc[j] += bc * (double)npu_f32_at(row, j);
            } else
                for (int64_t j = 0; j < N; j++)
                    acc[j] += bc * npu_value_get_f64(u->in[1], (int64_t)c * N + j);
        }
        for (int64_t j = 0; j < N; j++)
            nb[j] = (float)acc[j];
        free(acc);
        char name[160];
        snprintf(name, sizeof(name), "%.120s.bias_ln", u->name);
        /* the MatMul's new bias operand, not an NPU constant itself (its lowering makes
         * the bias array): not in the weight region */
        struct npu_tensor bt = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {N}, .data = nb};
        struct npu_value *v = npu_graph_add_const(b->cx->g, name, &bt);
        free(nb);
        if (!v)
            return false;
        u->in[2] = v;
    }
    return true;
}

/*
 * The chain both norms share (LayerNormalization with xc = x - mean(x), RMSNormalization
 * with xc = x): out = gamma xc / sqrt(mean(xc^2) + eps), safe over fp16's range as long as
 * xc is in it. xc^2 itself is not (xc^2 / 64 overflows for |xc| >= 2047, the fp16 mean of
 * xc^2 for an rms above 256, small rows fall into subnormals), so the row is first brought
 * to a mean |xc| of about 4, which the result does not see:
 *   m  = (mean |xc| + f) / 4         (|xc| = max(-xc, xc) in one flying pass; ones conv)
 *   r1 = 1 / m                       (one EW DIV pass; m in [2^-14, 2^14]: r1 normal)
 *   x' = r1 xc                       (|x'| <= 4C, as max |xc| <= sum |xc|)
 *   v  = mean(x'^2) / 16 + eps r1^2 / 16   (x'^2 / k summed in fp32 by a ones conv)
 *   out = gamma (1/sqrt(v)) x' / 4
 * exact for any r1 > 0 (v = r1^2 (mean(xc^2) + eps) / 16), so r1 needs no accuracy, only
 * the same fp16 value in x' and in v. k = 2^ceil(log2(16 C^2 / 32768)) keeps x'^2 / k <=
 * 32768; f = max(2^-12, sqrt(eps) / 32) keeps eps r1^2 / 16 <= 1024; v is in [1/4, C + 1024]
 * (mean |x'| >= 2 when mean |xc| >= f, else eps r1^2 / 16 >= 4), inside the upper two 1/sqrt
 * bands, so the lowest band is skipped. Every factor a unit multiplies by (m, r1, 1/sqrt(v)
 * and the band products before it, gamma, the fp16 register constants, 1/k split in two past
 * 2^14) is an fp16 normal for any row, so nothing depends on whether the CNA or the DPU keeps fp16
 * subnormals (the facts file does not say); the addend e = eps r1^2 / 16 may be subnormal or 0, but
 * only where it is below 2^-14 <= v / 4096 (a quarter of an fp16 step of the output at most). eps
 * must be in [1e-6, 64] (eps 2^6 an fp16 normal) and C at most 8192 (views have at most 8192
 * channels, dpu-move.c); `sq` is a full-size temp the caller may reuse afterwards.
 */
static void
scaled_norm(struct rkd *b, const struct npu_dpu_map *xc, const struct vmap *vm, double eps,
            const float *g, const struct npu_dpu_map *sq, const struct npu_dpu_map *out)
{
    uint32_t C = vm->view[0], H = vm->view[1], W = vm->view[2];
    float k = 1.0f;
    while (16.0 * C * C / k > 32768.0)
        k *= 2.0f;
    const double f = fmax(1.0 / 4096.0, sqrt(eps) / 32.0);
    struct npu_dpu_ref small = rkd_temp(b, 5ull * H * W * 16);
    struct npu_dpu_map m8 = lanes8(small, 0, H, W), r1 = lanes8(small, 1, H, W);
    struct npu_dpu_map e8 = lanes8(small, 2, H, W), v8 = lanes8(small, 3, H, W);
    struct npu_dpu_map r2 = lanes8(small, 4, H, W);
    struct npu_dpu_map xp = dl_map(rkd_temp(b, npu_dpu_map_extent(xc)), vm);
    struct npu_dpu_stages st;
    /* |xc| = max(-xc, xc): BS MUL -1, EW MAX with xc */
    struct npu_dpu_pass p = {.in = *xc, .out = *sq};
    p.st.bs.mul = NPU_DPU_SRC_REG;
    p.st.bs.mul_value = -1.0f;
    p.st.ew.op = NPU_DPU_EW_MAX;
    p.st.ew.operand = *xc;
    rkd_pass(b, &p);
    /* m = (sum |xc| + f C) / (4 C): ones conv, BS ALU (fp32), BS MUL (fp32) */
    memset(&st, 0, sizeof(st));
    st.bs.alu = NPU_DPU_SRC_REG;
    st.bs.alu_value = (float)(f * C);
    dl_chan_sum(b, sq, (float)(0.25 / C), &m8, &st);
    /* r1 = 1 / m: BN makes 0 m + 1, EW DIV by m */
    struct npu_dpu_pass pd = {.in = m8, .out = r1};
    pd.st.bn.mul = NPU_DPU_SRC_REG;
    pd.st.bn.mul_value = 0.0f;
    pd.st.bn.alu = NPU_DPU_SRC_REG;
    pd.st.bn.alu_value = 1.0f;
    pd.st.ew.op = NPU_DPU_EW_DIV;
    pd.st.ew.operand = m8;
    rkd_pass(b, &pd);
    /* x' = r1 xc (broadcast convolution, EW MUL xc) */
    memset(&st, 0, sizeof(st));
    st.ew.op = NPU_DPU_EW_MUL;
    st.ew.operand = *xc;
    dl_bcast(b, &r1, NULL, 1.0f, &xp, &st);
    /* sq = (x' / k) x'; past k = 2^14 (C > 5792) 1/k would be an fp16 subnormal register,
     * so it is split into BS MUL 2^-8 and BN MUL 2^8 / k (exact, fp32 inside) */
    if (k <= 16384.0f)
        mul_pass(b, &xp, &xp, sq, 1.0f / k);
    else {
        struct npu_dpu_pass ps = {.in = xp, .out = *sq};
        ps.st.bs.mul = NPU_DPU_SRC_REG;
        ps.st.bs.mul_value = 1.0f / 256.0f;
        ps.st.bn.mul = NPU_DPU_SRC_REG;
        ps.st.bn.mul_value = 256.0f / k;
        ps.st.ew.op = NPU_DPU_EW_MUL;
        ps.st.ew.operand = xp;
        rkd_pass(b, &ps);
    }
    /* e = eps r1^2 / 16: r1 2^-10 (BS) (eps 2^6) (BN, an fp16 normal) r1 (EW), fp32 inside */
    struct npu_dpu_pass pe = {.in = r1, .out = e8};
    pe.st.bs.mul = NPU_DPU_SRC_REG;
    pe.st.bs.mul_value = 1.0f / 1024.0f;
    pe.st.bn.mul = NPU_DPU_SRC_REG;
    pe.st.bn.mul_value = (float)(eps * 64.0);
    pe.st.ew.op = NPU_DPU_EW_MUL;
    pe.st.ew.operand = r1;
    rkd_pass(b, &pe);
    /* v = sum(sq) k / (16 C) + e (ones convolution, BS MUL in fp32, EW ADD e) */
    memset(&st, 0, sizeof(st));
    st.ew.op = NPU_DPU_EW_ADD;
    st.ew.operand = e8;
    dl_chan_sum(b, sq, (float)((double)k / (16.0 * C)), &v8, &st);
    rsqrt_bands(b, &v8, &r2, 1);
    /* out = gamma r2 x' / 4 (broadcast conv with weights gamma, BS MUL 1/4, EW MUL x') */
    memset(&st, 0, sizeof(st));
    st.bs.mul = NPU_DPU_SRC_REG;
    st.bs.mul_value = 0.25f;
    st.ew.op = NPU_DPU_EW_MUL;
    st.ew.operand = xp;
    dl_bcast(b, &r2, g, 0, out, &st);
}

/*
 * LayerNormalization over the last axis (= channels), y = gamma xc / sqrt(mean(xc^2) + eps) +
 * beta with xc = x - mean(x): scaled_norm's chain on xc, then beta (a pass, or folded into the
 * readers' bias). Safe over fp16's range as long as xc is in it (|xc| <= 65504, so any row
 * with |x| <= 32752; past that xc overflows to inf and the row is NaN, which only an extra
 * scaling pass of x could avoid). eps below 1e-6 is raised to 1e-6.
 */
enum npu_status
dl_lower_layernorm(struct rkd *b, struct npu_node *n, struct why *w)
{
    struct npu_value *x = n->in[0], *gam = n->nin > 1 ? n->in[1] : NULL;
    struct npu_value *bet = n->nin > 2 ? n->in[2] : NULL;
    for (int i = 1; i < n->nout; i++)
        if (n->out[i]->nusers || n->out[i]->is_output)
            return why_set(w, "mean / inv-std outputs are not produced");
    struct vmap vm;
    if (!x || !last_axis_view(b, x, npu_node_int(n, "axis", -1), &vm))
        return why_set(w, "normalisation over the last axis of a row-major view only");
    uint32_t C = vm.view[0], H = vm.view[1], W = vm.view[2];
    double eps = npu_node_float(n, "epsilon", 1e-5f);
    if (eps < 1e-6)
        eps = 1e-6; /* eps 2^6 below must be an fp16 normal */
    if (eps > 64.0)
        return why_set(w, "epsilon %g above 64 (eps 2^6 in an fp16 register)", eps);
    if (!gam || gam->kind != NPU_VALUE_CONST || npu_value_numel(gam) != C ||
        (bet && (bet->kind != NPU_VALUE_CONST || npu_value_numel(bet) != C)))
        return why_set(w, "scale and bias must be constants of the normalised size");
    struct npu_dpu_map xm;
    if (!dl_input(b, x, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    float *g = malloc(C * sizeof(float)), *be = calloc(NPU_ALIGN(C, 16u), sizeof(float));
    if (!g || !be) {
        free(g);
        free(be);
        return NPU_ERR_NOMEM;
    }
    bool has_beta = false;
    for (uint32_t c = 0; c < C; c++) {
        g[c] = (float)npu_value_get_f64(gam, c);
        be[c] = bet ? (float)npu_value_get_f64(bet, c) : 0.0f;
        has_beta |= be[c] != 0;
    }
    if (has_beta && fold_beta(b, n, be, C))
        has_beta = false;
    uint64_t full = npu_dpu_map_extent(&xm);
    /* an input whose rows are centred already (residual streams, dpu-center.c) needs no
     * mean: xc = x */
    /* (dry runs, for cost(): the rewrite runs after partitioning, so predict it) */
    const bool centred = npu_node_int(n, "npu_centered", 0) != 0 ||
                         (!b->cx && !b->depth && !b->no_center && dl_ln_centrable(n));
    struct npu_dpu_map xc = centred ? xm : dl_map(rkd_temp(b, full), &vm);
    /* |xc|, then x'^2 / k, then (with beta) y - beta */
    struct npu_dpu_map sq = dl_map(rkd_temp(b, full), &vm);
    struct npu_dpu_map ym = dl_map(rkd_result(), &vm);
    if (!centred) {
        /* -mean in 8 lanes: ones conv, fp32 scale -1/C */
        struct npu_dpu_map s8 = lanes8(rkd_temp(b, 1ull * H * W * 16), 0, H, W);
        dl_chan_sum(b, &xm, (float)(-1.0 / C), &s8, NULL);
        /* xc = x - mean: broadcast conv with the EW add of x */
        struct npu_dpu_stages st;
        memset(&st, 0, sizeof(st));
        st.ew.op = NPU_DPU_EW_ADD;
        st.ew.operand = xm;
        dl_bcast(b, &s8, NULL, 1.0f, &xc, &st);
    }
    scaled_norm(b, &xc, &vm, eps, g, &sq, has_beta ? &sq : &ym);
    if (has_beta) {
        struct npu_dpu_pass pb = {.in = sq, .out = ym};
        pb.st.bs.alu = NPU_DPU_SRC_MEM;
        pb.st.bs.alu_mem = dl_chan_const(b, "beta", be, C);
        rkd_pass(b, &pb);
    }
    free(g);
    free(be);
    return dl_finish(b, 0, &vm);
}

/* Softmax over the last axis (= channels). */
enum npu_status
dl_lower_softmax(struct rkd *b, struct npu_node *n, struct why *w)
{
    struct npu_value *x = n->in[0];
    struct vmap vm;
    int64_t axis = npu_node_int(n, "axis", -1);
    if (!x || !last_axis_view(b, x, axis, &vm))
        return why_set(w, "softmax over the last axis of a row-major view only");
    uint32_t H = vm.view[1], W = vm.view[2];
    struct npu_dpu_map xm;
    if (!dl_input(b, x, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    uint64_t full = npu_dpu_map_extent(&xm);
    struct npu_dpu_ref small = rkd_temp(b, 2ull * H * W * 16);
    struct npu_dpu_map m8 = lanes8(small, 0, H, W), s8 = lanes8(small, 1, H, W);
    struct npu_dpu_map t1 = dl_map(rkd_temp(b, full), &vm), t2 = dl_map(rkd_temp(b, full), &vm);
    struct npu_dpu_map ym = dl_map(rkd_result(), &vm);
    /* row maxima with the PPU when the channels fill whole atoms (t1 is free until the
     * shift below), else EW MAX halvings */
    if (!dl_chan_max_ppu(b, &xm, &m8, t1.ref, full))
        dl_chan_max(b, &xm, &m8);
    /* t = x - max: broadcast conv of -max with the EW add of x */
    const struct npu_dpu_lut *l = npu_dpu_lut_get(npu_dpu_lut_fn_id(NPU_DPU_FN_EXP_NEG));
    struct npu_dpu_stages st;
    memset(&st, 0, sizeof(st));
    st.ew.op = NPU_DPU_EW_ADD;
    st.ew.operand = xm;
    dl_bcast(b, &m8, NULL, -1.0f, &t1, &st);
    /* e = exp(max(t, -300) - 2): BS clamps (t + 300, ReLU: exact for t in [-300, 0] in
     * fp32), BN scales into the table's units (u = a t, a = in_scale) and subtracts a (300 +
     * 2); the
     * clamp keeps -inf inputs (masked scores) out of the LUT, whose end slopes would give
     * 0 * inf = NaN; exp(-302) is 0 in fp16 anyway */
    rkd_lut(b, l->id);
    struct npu_dpu_pass p = {.in = t1, .out = t2};
    p.st.bs.alu = NPU_DPU_SRC_REG;
    p.st.bs.alu_value = 300.0f;
    p.st.bs.relu = true;
    p.st.bn.mul = NPU_DPU_SRC_REG;
    p.st.bn.mul_value = l->in_scale;
    p.st.bn.alu = NPU_DPU_SRC_REG;
    p.st.bn.alu_value = -l->in_scale * 302.0f;
    p.st.ew.lut = l;
    rkd_pass(b, &p);
    /* sum, broadcast, divide */
    dl_chan_sum(b, &t2, 1.0f, &s8, NULL);
    dl_bcast(b, &s8, NULL, 1.0f, &t1, NULL);
    struct npu_dpu_pass d = {.in = t2, .out = ym};
    d.st.ew.op = NPU_DPU_EW_DIV;
    d.st.ew.operand = t1;
    rkd_pass(b, &d);
    return dl_finish(b, 0, &vm);
}

/*
 * RMSNormalization over the last axis (= channels), y = gamma x / sqrt(mean(x^2) + eps):
 * scaled_norm's chain with xc = x (no mean), safe over fp16's whole range (|x| <= 65504).
 * It first used a chain of its own (r1 = (1/sqrt(mean |x| + 2^-14))^2, branch prefnorm), whose
 * r1 is an fp16 subnormal for mean |x| above 2^14 and is read by the CNA: scaled_norm keeps
 * every factor normal and takes half the tasks (branch rmsln). eps in [1e-6, 64]: below,
 * scaled_norm would have to raise it, which is exact only for rows well above it.
 */
enum npu_status
dl_lower_rmsnorm(struct rkd *b, struct npu_node *n, struct why *w)
{
    struct npu_value *x = n->in[0], *gam = n->nin > 1 ? n->in[1] : NULL;
    struct vmap vm;
    if (!x || !last_axis_view(b, x, npu_node_int(n, "axis", -1), &vm))
        return why_set(w, "normalisation over the last axis of a row-major view only");
    uint32_t C = vm.view[0];
    double eps = npu_node_float(n, "epsilon", 1e-5f);
    if (!(eps >= 0.999e-6 && eps <= 64.0)) /* (1e-6 as a float is 9.99999997e-7) */
        return why_set(w, "epsilon %g outside [1e-6, 64] (eps 2^6 an fp16 normal)", eps);
    if (C > 8192)
        return why_set(w, "more than 8192 channels");
    if (!gam || gam->kind != NPU_VALUE_CONST || npu_value_numel(gam) != C)
        return why_set(w, "scale must be a constant of the normalised size");
    struct npu_dpu_map xm;
    if (!dl_input(b, x, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    float *g = malloc(C * sizeof(float));
    if (!g)
        return NPU_ERR_NOMEM;
    for (uint32_t c = 0; c < C; c++)
        g[c] = (float)npu_value_get_f64(gam, c);
    struct npu_dpu_map sq = dl_map(rkd_temp(b, npu_dpu_map_extent(&xm)), &vm);
    struct npu_dpu_map ym = dl_map(rkd_result(), &vm);
    scaled_norm(b, &xm, &vm, eps, g, &sq, &ym);
    free(g);
    return dl_finish(b, 0, &vm);
}
