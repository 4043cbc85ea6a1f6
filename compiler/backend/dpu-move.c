/* SPDX-License-Identifier: MIT */
/*
 * dpu-move.c: data movement (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Concat,
 * Split, Gather with a constant index) as DPU copies.
 *
 * Every op is first written as a map from output elements to input elements (logical
 * row-major indices). Under the NC1HWC2 views of input and output (facts §2.10) the map is
 * then classified:
 *   - same bytes: the output is the input reinterpreted (a view whose element addresses
 *     coincide, e.g. a conv output [1,C,H,W] and its [1,H*W,C] transpose, or any Reshape
 *     that keeps the view);
 *   - a constant offset in (c, y, x) with a channel offset that is a multiple of 8: the
 *     output is a sub-cube (slice) or the input is a sub-cube of the output (concat), which
 *     one flying copy with line / surface strides moves;
 *   - blocks: the head split / merge of attention (Transpose (0, 2, 1, 3) between a
 *     [rows, heads x D] map and a [heads x rows, D] map), one copy per block;
 *   - rows merged into channels (a Reshape of rows (C, R, 1) to (g C, R / g, 1), e.g. the
 *     one-token head merge behind an NPU attention) when a convolution reads the result:
 *     a relayout into the canonical view the conv lowering reads (lower_row_merge).
 * Anything else stays on the CPU. Without an alias mechanism in the memory planner a
 * reinterpretation still costs one copy task (docs/npu-dpu-ops.md proposes one).
 */
#include <stdlib.h>
#include <string.h>

#include "dpu-low.h"

/* Output element index -> input element index. */
struct remap {
    int ndim;
    int64_t out_dims[NPU_MAX_DIMS];
    int64_t in_strides[NPU_MAX_DIMS]; /* in-index contribution per output coordinate */
    int64_t in_base;
};

static int64_t
remap_idx(const struct remap *r, int64_t oi)
{
    int64_t ii = r->in_base;
    for (int d = r->ndim - 1; d >= 0; d--) {
        int64_t q = oi % r->out_dims[d];
        oi /= r->out_dims[d];
        ii += q * r->in_strides[d];
    }
    return ii;
}

static void
row_strides(const struct npu_tensor *t, int64_t *s)
{
    int64_t k = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        s[d] = k;
        k *= t->dims[d];
    }
}

/* Byte address of element (c, y, x) in a packed fp16 map of view v. */
static int64_t
addr_of(const struct vmap *v, const uint32_t o[3])
{
    return (int64_t)(o[0] / 8) * v->view[1] * v->view[2] * 16 +
           ((int64_t)o[1] * v->view[2] + o[2]) * 16 + (o[0] % 8) * 2;
}

/* Walks output elements 0, 1, ... in order: their (c, y, x) under the output view and the
 * input element remap_idx gives, both kept incrementally (the input's (c, y, x) is the one
 * computation per element left). The same answers as dl_cyx and remap_idx per index. */
struct walk {
    const struct remap *r;
    int64_t q[NPU_MAX_DIMS]; /* output coordinates, last fastest */
    int64_t ii;              /* remap_idx(r, i) */
    uint32_t a[3];           /* dl_cyx(out, i) */
};

static void
walk_init(struct walk *w, const struct remap *r)
{
    memset(w, 0, sizeof(*w));
    w->r = r;
    w->ii = remap_idx(r, 0);
}

static void
walk_next(struct walk *w, const struct vmap *out)
{
    const struct remap *r = w->r;
    dl_cyx_next(out, w->a);
    for (int d = r->ndim - 1; d >= 0; d--) {
        w->ii += r->in_strides[d];
        if (++w->q[d] < r->out_dims[d])
            break;
        /* this digit wraps (the top one too, as remap_idx's modulo does) */
        w->ii -= w->q[d] * r->in_strides[d];
        w->q[d] = 0;
    }
}

/* The input's (c, y, x) of w.ii, given those of the previous element's input index prev
 * in b: one step of dl_cyx_next when the input index moved by one (a Reshape all along, a
 * Transpose along its inner runs), else dl_cyx. The same as dl_cyx(in, w.ii, b). */
static void
in_cyx(const struct vmap *in, int64_t ii, int64_t *prev, uint32_t b[3])
{
    if (ii == *prev + 1 && *prev >= 0)
        dl_cyx_next(in, b);
    else
        dl_cyx(in, ii, b);
    *prev = ii;
}

/* Whether r maps every output index i < n to input index i (a Reshape). */
static bool
remap_identity(const struct remap *r, int64_t n)
{
    int64_t k = 1;
    if (r->in_base)
        return false;
    for (int d = r->ndim - 1; d >= 0; d--) {
        if (r->out_dims[d] != 1 && r->in_strides[d] != k)
            return false;
        k *= r->out_dims[d];
    }
    return k >= n; /* no index wraps (remap_idx's modulo on the top digit) */
}

/* Same bytes: every output element sits where its input element sits. */
static bool
walk_same_bytes(const struct vmap *in, const struct vmap *out, const struct remap *r, int64_t n)
{
    if (remap_identity(r, n) && in->order == out->order &&
        !memcmp(in->view, out->view, sizeof(in->view)))
        return true; /* the same index in the same view: the same address, element by element */
    struct walk w;
    walk_init(&w, r);
    int64_t prev = -2;
    uint32_t b[3];
    for (int64_t i = 0; i < n; i++, walk_next(&w, out)) {
        in_cyx(in, w.ii, &prev, b);
        if (addr_of(out, w.a) != addr_of(in, b))
            return false;
    }
    return true;
}

/* A constant (c, y, x) offset from output to input coordinates, d >= 0. */
static bool
walk_const_offset(const struct vmap *in, const struct vmap *out, const struct remap *r, int64_t n,
                  int64_t d[3])
{
    struct walk w;
    walk_init(&w, r);
    int64_t prev = -2;
    uint32_t b[3];
    for (int64_t i = 0; i < n; i++, walk_next(&w, out)) {
        const uint32_t *a = w.a;
        in_cyx(in, w.ii, &prev, b);
        int64_t e[3] = {(int64_t)b[0] - a[0], (int64_t)b[1] - a[1], (int64_t)b[2] - a[2]};
        if (i == 0) {
            memcpy(d, e, sizeof(e));
            if (d[0] < 0 || d[1] < 0 || d[2] < 0)
                return false;
        } else if (memcmp(d, e, sizeof(e))) {
            return false;
        }
    }
    return true;
}

/* The two classifications walk every element, and the dry lowerings that price a node
 * (supports(), cost(), the predictions of readers' input views) and its lowering ask the same
 * questions again: their answers are remembered by their whole input (both views, the map,
 * the element count), a pure function of it, in a small direct-mapped table per thread. */
struct cls_key {
    int kind; /* 0 same bytes, 1 constant offset */
    int ndim;
    struct vmap in, out;
    int64_t n, in_base;
    int64_t out_dims[NPU_MAX_DIMS], in_strides[NPU_MAX_DIMS];
};
struct cls_entry {
    bool used, ok;
    int64_t d[3];
    struct cls_key k;
};
static _Thread_local struct cls_entry cls_memo[64];

static struct cls_entry *
cls_slot(int kind, const struct vmap *in, const struct vmap *out, const struct remap *r, int64_t n,
         struct cls_key *k)
{
    memset(k, 0, sizeof(*k));
    k->kind = kind;
    k->ndim = r->ndim;
    k->in = *in;
    k->out = *out;
    k->n = n;
    k->in_base = r->in_base;
    for (int i = 0; i < r->ndim && i < NPU_MAX_DIMS; i++) {
        k->out_dims[i] = r->out_dims[i];
        k->in_strides[i] = r->in_strides[i];
    }
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const unsigned char *p = (const unsigned char *)k;
    for (size_t i = 0; i < sizeof(*k); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return &cls_memo[(h >> 32) % NPU_ARRAY_SIZE(cls_memo)];
}

static bool
same_bytes(const struct vmap *in, const struct vmap *out, const struct remap *r, int64_t n)
{
    struct cls_key k;
    struct cls_entry *e = cls_slot(0, in, out, r, n, &k);
    if (e->used && !memcmp(&e->k, &k, sizeof(k)))
        return e->ok;
    bool ok = walk_same_bytes(in, out, r, n);
    e->used = true;
    e->ok = ok;
    e->k = k;
    return ok;
}

static bool
const_offset(const struct vmap *in, const struct vmap *out, const struct remap *r, int64_t n,
             int64_t d[3])
{
    struct cls_key k;
    struct cls_entry *e = cls_slot(1, in, out, r, n, &k);
    if (!e->used || memcmp(&e->k, &k, sizeof(k))) {
        e->used = true;
        e->k = k;
        memset(e->d, 0, sizeof(e->d));
        e->ok = walk_const_offset(in, out, r, n, e->d);
    }
    memcpy(d, e->d, sizeof(e->d));
    return e->ok;
}

static bool
view_ok(const uint32_t v[3], int64_t n)
{
    return v[0] && v[1] && v[2] && v[0] <= 8192 && v[1] <= 8192 && v[2] <= 8192 &&
           (int64_t)v[0] * v[1] * v[2] == n;
}

/* Whether an NPU reader of v, directly or behind up to `depth` Quantize / DequantizeLinear
 * nodes (DPU passes that keep their input's view), is a node of another lowering than the
 * DPU's (a convolution: MatMul, Gemm, QLinearMatMul, ...), which reads its input in the
 * canonical view only (npu_lower_input). Lowering: readers placed on the NPU; cost() and
 * supports() dry runs: readers not forced onto the CPU. */
static bool
conv_reads(const struct rkd *b, const struct npu_value *v, int depth)
{
    for (int i = 0; v && i < v->nusers; i++) {
        const struct npu_node *u = v->users[i];
        const struct npu_op_handler *h = npu_op_handler(u->op);
        bool npu = b->cx ? u->device == NPU_DEVICE_NPU : u->device != NPU_DEVICE_CPU;
        if (!npu || !h || !h->lower)
            continue;
        if (h->lower != npu_dpu_lower)
            return true;
        if (depth > 0 && u->nout > 0 &&
            (u->op == NPU_OP_QUANTIZE_LINEAR || u->op == NPU_OP_DEQUANTIZE_LINEAR) && u->nin > 0 &&
            u->in[0] == v && conv_reads(b, u->out[0], depth - 1))
            return true;
    }
    return false;
}

/* A Reshape that merges the rows of a rows-layout value into channels: input (C, R, 1) by
 * rows, output (g C, R / g, 1) by rows, output row y the input rows y g .. y g + g - 1 side
 * by side (e.g. the one-token head merge [H, 1, hd] -> [1, 1, H hd] behind an NPU
 * attention, which writes its heads as rows). Element order is kept, but NC1HWC2 keeps a
 * row's C channels in C / 8 surfaces R atoms apart, so the bytes differ: a relayout. g is
 * the number of rows merged; false when the views are not of that form. */
static bool
row_merge(const struct vmap *in, const struct vmap *out, uint32_t *g)
{
    if (in->order != NPU_VIEW_HWC || out->order != NPU_VIEW_HWC || in->view[2] != 1 ||
        out->view[2] != 1)
        return false;
    uint32_t C = in->view[0], R = in->view[1];
    if (!C || C % 8 || out->view[0] <= C || out->view[0] % C)
        return false;
    *g = out->view[0] / C;
    return (uint64_t)*g * out->view[1] == R;
}

/* The relayout of row_merge as DPU copies (facts §2.10 strides; the same read / write map
 * forms the head split and Concat copies use): one per merged row j, input rows j, j + g, ...
 * (a line of g atoms) to output channels [j C, (j + 1) C); or, when all rows merge into one
 * (R / g == 1) and there are fewer surfaces than rows, one per input surface s, its R atoms
 * to output atoms s, s + C / 8, ... (one written surface, a line of C / 8 atoms). */
static enum npu_status
lower_row_merge(struct rkd *b, int idx, struct npu_value *x, const struct vmap *vin,
                const struct vmap *vo, uint32_t g, struct why *w)
{
    struct npu_dpu_map xm;
    if (!dl_input(b, x, vin, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    struct npu_dpu_map om = dl_map(rkd_result(), vo);
    const uint32_t C = vin->view[0], rows = vo->view[1];
    if (rows == 1 && C / 8 < g) {
        for (uint32_t s = 0; s < C / 8; s++) {
            struct npu_dpu_map src = npu_dpu_map_channels(&xm, s * 8, 8);
            struct npu_dpu_map dst = npu_dpu_map_channels(&om, s * 8, 8);
            dst.h = g;
            dst.line = (C / 8) * npu_dpu_map_surf(&om);
            dst.surf = dst.line * g;
            dl_copy(b, &src, &dst);
        }
    } else {
        for (uint32_t j = 0; j < g; j++) {
            struct npu_dpu_map src = npu_dpu_map_rows(&xm, j, rows);
            src.line *= g;
            struct npu_dpu_map dst = npu_dpu_map_channels(&om, j * C, C);
            dl_copy(b, &src, &dst);
        }
    }
    return dl_finish(b, idx, vo);
}

/* Output idx of b->orig is input x remapped by r; picks the cheapest classification. */
static enum npu_status
lower_remap(struct rkd *b, int idx, struct npu_value *x, const struct remap *r, struct why *w)
{
    struct npu_value *out = b->orig->out[idx];
    int64_t n = npu_value_numel(out);
    struct vmap vin, cand[3];
    int nc = 0;
    if (n > ((int64_t)1 << 22))
        return why_set(w, "too many elements to classify the copy");
    if (!dl_view(b, x, &vin))
        return why_set(w, "input has no NC1HWC2 view");
    /* candidate output views: canonical, then the input's view (same order) */
    if (npu_rk_canonical_view(&out->t, cand[nc].view)) {
        cand[nc].order = npu_rk_order_of(&out->t, cand[nc].view);
        nc++;
    }
    if (view_ok(vin.view, n)) {
        cand[nc] = vin;
        nc++;
    }
    struct npu_dpu_map xm;
    /* a convolution reads the result (it takes the canonical view only): rows merged into
     * channels are laid out for it here, rather than viewed or copied as they are */
    uint32_t g;
    const bool conv = nc > 0 && conv_reads(b, out, 2);
    if (conv && npu_value_numel(x) == n && remap_identity(r, n) && row_merge(&vin, &cand[0], &g))
        return lower_row_merge(b, idx, x, &vin, &cand[0], g, w);
    /* a convolution reader takes the canonical view only: a result left in the input's
     * view would send it back to the CPU at lowering, after the partition priced it on the
     * NPU (tinyllama-2l's prefill: the head merge's Reshape [1, s, H, hd] -> [1, s, H hd]
     * behind a CPU Transpose, read by the output projection's three column blocks) */
    const int ncand = nc;
    for (int k = 0; k < nc; k++)
        if (k > 0 && conv &&
            (memcmp(cand[k].view, cand[0].view, sizeof(cand[0].view)) ||
             cand[k].order != cand[0].order)) {
            nc = k;
            break;
        }
    for (int k = 0; k < nc; k++) {
        if (npu_value_numel(x) == n && same_bytes(&vin, &cand[k], r, n)) {
            /* a reinterpretation: a view of the input's bytes when every reader is a
             * DPU lowering, else one flat copy in the input's geometry */
            if (!dl_input(b, x, &vin, &xm, w))
                return NPU_ERR_UNSUPPORTED;
            if (dl_alias_ok(b, out, NPU_OP_NONE)) {
                struct npu_value *src = b->in[xm.ref.buffer - RKD_IN(0)];
                return rkd_alias(b, idx, src, 1, NULL, NPU_DTYPE_FP16, out->t.ndim, out->t.dims,
                                 cand[k].view, cand[k].order);
            }
            struct npu_dpu_map o = dl_map(rkd_result(), &vin);
            dl_copy(b, &xm, &o);
            return dl_finish(b, idx, &cand[k]);
        }
    }
    for (int k = 0; k < nc; k++) {
        int64_t d[3];
        if (!const_offset(&vin, &cand[k], r, n, d) || d[0] % 8)
            continue;
        if (!dl_input(b, x, &vin, &xm, w))
            return NPU_ERR_UNSUPPORTED;
        struct npu_dpu_map s = npu_dpu_map_channels(&xm, (uint32_t)d[0], cand[k].view[0]);
        s = npu_dpu_map_rows(&s, (uint32_t)d[1], cand[k].view[1]);
        s = npu_dpu_map_cols(&s, (uint32_t)d[2], cand[k].view[2]);
        struct npu_dpu_map o = dl_map(rkd_result(), &cand[k]);
        dl_copy(b, &s, &o);
        return dl_finish(b, idx, &cand[k]);
    }
    if (nc < ncand)
        return why_set(w,
                       "a convolution reads it in the view %ux%ux%u, which the copy cannot "
                       "write",
                       cand[0].view[0], cand[0].view[1], cand[0].view[2]);
    return why_set(w, "the copy is not a reinterpretation or a sub-cube with channels aligned "
                      "to 8 under the NC1HWC2 views");
}

/* Input element -> output element of Concat input k (its offset `off` along axis a). */
static void
concat_remap(const struct npu_node *n, int k, int64_t a, int64_t off, struct remap *rk)
{
    const struct npu_tensor *ot = &n->out[0]->t, *it = &n->in[k]->t;
    int64_t os[NPU_MAX_DIMS];
    row_strides(ot, os);
    memset(rk, 0, sizeof(*rk));
    rk->ndim = it->ndim;
    for (int d = 0; d < it->ndim; d++) {
        rk->out_dims[d] = it->dims[d];
        rk->in_strides[d] = os[d];
    }
    rk->in_base = off * os[a];
}

/* Whether every Concat input is a sub-cube of the output (vo) under their views. */
static bool
concat_subcubes(struct rkd *b, const struct npu_node *n, const struct vmap *vo, int64_t a)
{
    int64_t off = 0;
    for (int k = 0; k < n->nin; k++) {
        struct npu_value *xi = n->in[k];
        struct remap rk;
        struct vmap vi;
        int64_t d[3];
        if (!xi || xi->t.ndim != n->out[0]->t.ndim)
            return false;
        concat_remap(n, k, a, off, &rk);
        off += xi->t.dims[a];
        if (!dl_view(b, xi, &vi) || !const_offset(vo, &vi, &rk, npu_value_numel(xi), d) || d[0] % 8)
            return false;
    }
    return true;
}

/* Concat along an axis a before the last of row-major maps held as (C, rows, 1) (C the last
 * dim), e.g. a KV cache [heads, slots, D] and a new row [heads, 1, D] along the slots: the
 * rows of input k are A blocks (A the product of the dims before a) of W_k rows each, and
 * (C, A x W, 1) packed is the same bytes as (C, A, W) with a line of W atoms. In that view
 * every input is a sub-cube of the output at a column offset: one strided copy each. */
static enum npu_status
concat_cols(struct rkd *b, const struct npu_node *n, const struct vmap *vo, struct npu_dpu_map om,
            int64_t a, struct why *w)
{
    const struct npu_tensor *ot = &n->out[0]->t;
    const int r = ot->ndim;
    if (a >= r - 1)
        return why_set(w, "Concat inputs are not sub-cubes with channels aligned to 8");
    int64_t A = 1, inner = 1, C = ot->dims[r - 1];
    for (int d = 0; d < a; d++)
        A *= ot->dims[d];
    for (int d = (int)a + 1; d < r - 1; d++)
        inner *= ot->dims[d];
    const int64_t Wo = ot->dims[a] * inner;
    if (vo->order != NPU_VIEW_HWC || vo->view[0] != C || vo->view[1] != A * Wo ||
        vo->view[2] != 1 || A > 8192 || Wo > 8192 || npu_dpu_map_line(&om) != 1)
        return why_set(w, "Concat along axis %d: the output is not (%lld, rows, 1)", (int)a,
                       (long long)C);
    om.surf = npu_dpu_map_surf(&om);
    om.h = (uint32_t)A;
    om.w = (uint32_t)Wo;
    om.line = (uint32_t)Wo;
    int64_t off = 0;
    for (int k = 0; k < n->nin; k++) {
        struct npu_value *xi = n->in[k];
        if (!xi || xi->t.ndim != r || !npu_dtype_is_float(xi->t.dtype) ||
            xi->kind == NPU_VALUE_CONST)
            return why_set(w, "Concat input %d", k);
        const int64_t Wi = xi->t.dims[a] * inner;
        struct vmap vi = {.view = {(uint32_t)C, (uint32_t)(A * Wi), 1}, .order = NPU_VIEW_HWC};
        struct vmap vh;
        struct npu_dpu_map xm;
        /* one row per block held as a single row of A x C channels (e.g. a projection's
         * row [1, heads x D] viewed as [heads, 1, D]): block y is C / 8 surfaces on */
        const bool one_row = Wi == 1 && C % 8 == 0 && dl_view(b, xi, &vh) && vh.view[0] == A * C &&
                             vh.view[1] == 1 && vh.view[2] == 1;
        if (!dl_input(b, xi, one_row ? &vh : &vi, &xm, w))
            return NPU_ERR_UNSUPPORTED;
        if (npu_dpu_map_line(&xm) != 1 || xm.w != 1)
            return why_set(w, "Concat input %d is not held as (%lld, rows, 1)", k, (long long)C);
        xm.surf = npu_dpu_map_surf(&xm);
        xm.c = (uint32_t)C;
        xm.h = (uint32_t)A;
        xm.w = (uint32_t)Wi;
        xm.line = one_row ? (uint32_t)(C / 8) * xm.surf : (uint32_t)Wi;
        struct npu_dpu_map dm = npu_dpu_map_cols(&om, (uint32_t)(off * inner), (uint32_t)Wi);
        dl_copy(b, &xm, &dm);
        off += xi->t.dims[a];
    }
    return dl_finish(b, 0, vo);
}

/* Head split / merge: Transpose (0, 2, 1, 3) of [1, A, B, D] between the row-major
 * matrices [A, B*D] (view (B*D, A, 1)) and [B, A, D] (view (D, B*A, 1)). */
static enum npu_status
lower_heads(struct rkd *b, struct npu_node *n, struct why *w)
{
    struct npu_value *x = n->in[0], *out = n->out[0];
    const struct npu_tensor *t = &x->t;
    struct vmap vin;
    int r0 = t->ndim - 3;
    if (t->ndim < 3 || t->ndim > 4 || (r0 && t->dims[0] != 1) || !dl_view(b, x, &vin))
        return why_set(w, "not a head split / merge");
    uint32_t A = (uint32_t)t->dims[r0], B = (uint32_t)t->dims[r0 + 1],
             D = (uint32_t)t->dims[r0 + 2];
    if (D % 8 || vin.order != NPU_VIEW_HWC || vin.view[2] != 1)
        return why_set(w, "head split / merge needs D %% 8 == 0 and a row-major input view");
    struct vmap vo = {.order = NPU_VIEW_HWC};
    struct npu_dpu_map xm;
    bool split;
    if (vin.view[0] == B * D && vin.view[1] == A) {
        split = true; /* rows A, channels (b, d) -> rows (b, a), channels d */
        vo.view[0] = D;
        vo.view[1] = B * A;
        vo.view[2] = 1;
    } else if (vin.view[0] == D && vin.view[1] == A * B) {
        split = false; /* rows (a, b), channels d -> rows b, channels (a, d) */
        vo.view[0] = A * D;
        vo.view[1] = B;
        vo.view[2] = 1;
    } else {
        return why_set(w, "Transpose (0,2,1,3) of an input in view %ux%ux%u", vin.view[0],
                       vin.view[1], vin.view[2]);
    }
    if (!view_ok(vo.view, npu_value_numel(out)) || !dl_input(b, x, &vin, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    if (split && dl_alias_ok(b, out, NPU_OP_FUSED_ATTENTION)) {
        /* attention reads the heads where they are (channel slices) */
        int64_t heads[3] = {A, B, D};
        struct npu_value *src = b->in[xm.ref.buffer - RKD_IN(0)];
        return rkd_alias(b, 0, src, 2, heads, NPU_DTYPE_FP16, out->t.ndim, out->t.dims, vo.view,
                         vo.order);
    }
    struct npu_dpu_map om = dl_map(rkd_result(), &vo);
    if (split && A < B) {
        /* fewer rows than heads (e.g. one token's head split): one copy per row a, its B
         * heads read as B lines D / 8 surfaces apart, written to rows (b, a) A lines apart */
        uint32_t sx = npu_dpu_map_surf(&xm);
        for (uint32_t a = 0; a < A; a++) {
            struct npu_dpu_map s = npu_dpu_map_rows(&xm, a, 1), d = npu_dpu_map_rows(&om, a, 1);
            s.c = D;
            s.h = B;
            s.line = (D / 8) * sx;
            d.h = B;
            d.line = A;
            dl_copy(b, &s, &d);
        }
        return dl_finish(b, 0, &vo);
    }
    uint32_t blocks = split ? B : A, rows = split ? A : B;
    for (uint32_t k = 0; k < blocks; k++) {
        struct npu_dpu_map s, d;
        if (split) {
            s = npu_dpu_map_channels(&xm, k * D, D);
            d = npu_dpu_map_rows(&om, k * rows, rows);
        } else {
            s = npu_dpu_map_rows(&xm, k * rows, rows);
            d = npu_dpu_map_channels(&om, k * D, D);
        }
        dl_copy(b, &s, &d);
    }
    return dl_finish(b, 0, &vo);
}

/* A one-token head split, Transpose (0, 2, 1, 3) of [1, 1, B, D], read only by a Reshape to
 * rows [.., B, D] (view D x B x 1, e.g. the LLaMA decode step's RoPE): the Transpose moves no
 * data, but its reader wants the heads as rows, so it is lowered as a head split (one copy)
 * rather than as a view of the projection's row. */
static bool
rows_follow(const struct npu_node *n)
{
    size_t np = 0;
    const int64_t *perm = npu_node_ints(n, "perm", &np);
    const struct npu_tensor *t = &n->in[0]->t;
    const struct npu_value *out = n->out[0];
    if (!perm || np != 4 || perm[0] != 0 || perm[1] != 2 || perm[2] != 1 || perm[3] != 3 ||
        t->ndim != 4 || t->dims[0] != 1 || t->dims[1] != 1 || t->dims[2] < 2 || out->is_output ||
        out->nusers != 1)
        return false;
    const struct npu_node *u = out->users[0];
    uint32_t view[3];
    return u->op == NPU_OP_RESHAPE && u->in[0] == out && u->out[0]->t.ndim <= 3 &&
           npu_rk_canonical_view(&u->out[0]->t, view) && view[0] == t->dims[3] &&
           view[1] == t->dims[2] && view[2] == 1 &&
           npu_rk_order_of(&u->out[0]->t, view) == NPU_VIEW_HWC;
}

static bool
const_ints(const struct npu_value *v, int64_t *out, int maxn, int *cnt)
{
    if (!v || !npu_value_data(v) || npu_value_numel(v) > maxn)
        return false;
    *cnt = (int)npu_value_numel(v);
    for (int i = 0; i < *cnt; i++)
        out[i] = npu_value_get_i64(v, i);
    return true;
}

enum npu_status
dl_lower_move(struct rkd *b, struct npu_node *n, struct why *w)
{
    if (n->nin < 1 || !n->in[0] || n->nout < 1)
        return why_set(w, "malformed");
    struct npu_value *x = n->in[0];
    if (!npu_dtype_is_float(x->t.dtype))
        return why_set(w, "only float tensors (fp16 on the NPU)");
    if (x->kind == NPU_VALUE_CONST)
        return why_set(w, "constant input (folding's job)");
    struct remap r;
    memset(&r, 0, sizeof(r));
    int64_t xs[NPU_MAX_DIMS];
    row_strides(&x->t, xs);

    switch (n->op) {
    case NPU_OP_RESHAPE:
    case NPU_OP_FLATTEN:
    case NPU_OP_SQUEEZE:
    case NPU_OP_UNSQUEEZE: {
        /* logical order kept: out index i is in index i */
        r.ndim = 1;
        r.out_dims[0] = npu_value_numel(n->out[0]);
        r.in_strides[0] = 1;
        return lower_remap(b, 0, x, &r, w);
    }
    case NPU_OP_TRANSPOSE: {
        const struct npu_tensor *t = &x->t;
        size_t np = 0;
        const int64_t *perm = npu_node_ints(n, "perm", &np);
        r.ndim = t->ndim;
        for (int d = 0; d < t->ndim; d++) {
            int s = perm && np == (size_t)t->ndim ? (int)perm[d] : t->ndim - 1 - d;
            if (s < 0 || s >= t->ndim)
                return why_set(w, "bad perm");
            r.out_dims[d] = t->dims[s];
            r.in_strides[d] = xs[s];
        }
        if (rows_follow(n))
            return lower_heads(b, n, w);
        char tmp[8];
        struct why w2 = {tmp, sizeof(tmp)};
        enum npu_status st = lower_remap(b, 0, x, &r, &w2);
        if (st != NPU_ERR_UNSUPPORTED)
            return st;
        if ((perm && np == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 1 && perm[3] == 3) ||
            (perm && np == 3 && perm[0] == 1 && perm[1] == 0 && perm[2] == 2))
            return lower_heads(b, n, w);
        return why_set(w, "Transpose: no copy pattern for this permutation and view");
    }
    case NPU_OP_SLICE:
    case NPU_OP_GATHER: {
        const struct npu_tensor *t = &x->t;
        int64_t start[NPU_MAX_DIMS] = {0};
        r.ndim = t->ndim;
        for (int d = 0; d < t->ndim; d++) {
            r.out_dims[d] = t->dims[d];
            r.in_strides[d] = xs[d];
        }
        if (n->op == NPU_OP_GATHER) {
            int64_t ax = npu_node_int(n, "axis", 0), ind[1];
            int cnt;
            if (ax < 0)
                ax += t->ndim;
            if (ax < 0 || ax >= t->ndim || n->nin < 2 || !const_ints(n->in[1], ind, 1, &cnt) ||
                cnt != 1 || n->in[1]->t.ndim != 0)
                return why_set(w, "Gather only with one constant scalar index");
            if (ind[0] < 0)
                ind[0] += t->dims[ax];
            if (ind[0] < 0 || ind[0] >= t->dims[ax])
                return why_set(w, "Gather index out of range");
            r.in_base = ind[0] * xs[ax];
            /* the gathered axis disappears */
            for (int d = (int)ax; d < t->ndim - 1; d++) {
                r.out_dims[d] = t->dims[d + 1];
                r.in_strides[d] = xs[d + 1];
            }
            r.ndim = t->ndim - 1;
            if (r.ndim == 0) {
                r.ndim = 1;
                r.out_dims[0] = 1;
                r.in_strides[0] = 0;
            }
            return lower_remap(b, 0, x, &r, w);
        }
        int64_t st_[8], en[8], ax[8], sp[8];
        int ns = 0, ne = 0, na = 0, nsp = 0;
        if (n->nin < 3 || !const_ints(n->in[1], st_, 8, &ns) || !const_ints(n->in[2], en, 8, &ne) ||
            ns != ne)
            return why_set(w, "Slice needs constant starts and ends");
        if (n->nin > 3 && n->in[3]) {
            if (!const_ints(n->in[3], ax, 8, &na) || na != ns)
                return why_set(w, "Slice axes must be constant");
        } else {
            for (int i = 0; i < ns; i++)
                ax[i] = i;
        }
        if (n->nin > 4 && n->in[4]) {
            if (!const_ints(n->in[4], sp, 8, &nsp) || nsp != ns)
                return why_set(w, "Slice steps must be constant");
            for (int i = 0; i < ns; i++)
                if (sp[i] != 1)
                    return why_set(w, "Slice with steps other than 1 is not lowered");
        }
        for (int i = 0; i < ns; i++) {
            int64_t a = ax[i] < 0 ? ax[i] + t->ndim : ax[i];
            if (a < 0 || a >= t->ndim)
                return why_set(w, "bad Slice axis");
            int64_t dim = t->dims[a], s0 = st_[i], e0 = en[i];
            if (s0 < 0)
                s0 += dim;
            if (e0 < 0)
                e0 += dim;
            s0 = s0 < 0 ? 0 : s0 > dim ? dim : s0;
            e0 = e0 < 0 ? 0 : e0 > dim ? dim : e0;
            if (e0 <= s0)
                return why_set(w, "empty Slice");
            start[a] = s0;
            r.out_dims[a] = e0 - s0;
        }
        for (int d = 0; d < t->ndim; d++)
            r.in_base += start[d] * xs[d];
        return lower_remap(b, 0, x, &r, w);
    }
    case NPU_OP_SPLIT: {
        /* every output is a slice along `axis`; one rk.Dpu per output */
        const struct npu_tensor *t = &x->t;
        int64_t a = npu_node_int(n, "axis", 0);
        if (a < 0)
            a += t->ndim;
        if (a < 0 || a >= t->ndim)
            return why_set(w, "bad Split axis");
        int64_t off = 0;
        enum npu_status st = NPU_OK;
        for (int k = 0; k < n->nout && !st; k++) {
            struct npu_value *o = n->out[k];
            if (o->t.ndim != t->ndim)
                return why_set(w, "Split output rank");
            struct remap rk;
            memset(&rk, 0, sizeof(rk));
            rk.ndim = t->ndim;
            for (int d = 0; d < t->ndim; d++) {
                rk.out_dims[d] = o->t.dims[d];
                rk.in_strides[d] = xs[d];
            }
            rk.in_base = off * xs[a];
            off += o->t.dims[a];
            if (k == 0) {
                st = lower_remap(b, 0, x, &rk, w);
            } else {
                struct rkd b2;
                rkd_init(&b2, b->cx, b->orig);
                st = lower_remap(&b2, k, x, &rk, w);
                if (!st && b2.err)
                    st = b2.err;
                b->cost.s += b2.cost.s;
                b->cost.tasks += b2.cost.tasks;
                rkd_fini(&b2);
            }
        }
        return st;
    }
    case NPU_OP_CONCAT: {
        /* every input is a sub-cube of the output: one copy each */
        struct npu_value *out = n->out[0];
        int64_t a = npu_node_int(n, "axis", 0);
        if (a < 0)
            a += out->t.ndim;
        if (a < 0 || a >= out->t.ndim)
            return why_set(w, "bad Concat axis");
        struct vmap vo;
        if (!npu_rk_canonical_view(&out->t, vo.view))
            return why_set(w, "output has no NC1HWC2 view");
        vo.order = npu_rk_order_of(&out->t, vo.view);
        int64_t os[NPU_MAX_DIMS], off = 0;
        row_strides(&out->t, os);
        struct npu_dpu_map om = dl_map(rkd_result(), &vo);
        if (!concat_subcubes(b, n, &vo, a))
            return concat_cols(b, n, &vo, om, a, w);
        for (int k = 0; k < n->nin; k++) {
            struct npu_value *xi = n->in[k];
            if (!xi || xi->t.ndim != out->t.ndim || !npu_dtype_is_float(xi->t.dtype))
                return why_set(w, "Concat input");
            /* input element -> output element */
            struct remap rk;
            memset(&rk, 0, sizeof(rk));
            rk.ndim = xi->t.ndim;
            for (int d = 0; d < xi->t.ndim; d++) {
                rk.out_dims[d] = xi->t.dims[d];
                rk.in_strides[d] = os[d];
            }
            rk.in_base = off * os[a];
            off += xi->t.dims[a];
            struct vmap vi;
            int64_t d[3];
            if (!dl_view(b, xi, &vi) || !const_offset(&vo, &vi, &rk, npu_value_numel(xi), d) ||
                d[0] % 8)
                return why_set(w, "Concat input %d is not a sub-cube with channels aligned to 8",
                               k);
            struct npu_dpu_map xm;
            if (xi->kind == NPU_VALUE_CONST) {
                float *f = dl_bcast_const(xi, xi->t.ndim, xi->t.dims);
                if (!f)
                    return NPU_ERR_NOMEM;
                xm = dl_map_const(b, "part", f, npu_value_numel(xi), &vi);
                free(f);
            } else if (!dl_input(b, xi, &vi, &xm, w)) {
                return NPU_ERR_UNSUPPORTED;
            }
            struct npu_dpu_map dm = npu_dpu_map_channels(&om, (uint32_t)d[0], vi.view[0]);
            dm = npu_dpu_map_rows(&dm, (uint32_t)d[1], vi.view[1]);
            dm = npu_dpu_map_cols(&dm, (uint32_t)d[2], vi.view[2]);
            dl_copy(b, &xm, &dm);
        }
        return dl_finish(b, 0, &vo);
    }
    default: return why_set(w, "not a data-movement op");
    }
}
