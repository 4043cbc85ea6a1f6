/* SPDX-License-Identifier: MIT */
/*
 * dpu-ops.c: be-dpu's op handlers (supports / cost / lower, docs/npu-dpu-ops.md) and the
 * lowerings of the elementwise, activation, pooling and data-movement ops.
 *
 * One lowering function per family serves all three handler entry points: it runs on a
 * dry rk.Dpu builder for supports() (does the emitter accept every task?) and cost() (the
 * tasks' modeled time, timing model v1), and on a real one for lower(). Values are fp16
 * NC1HWC2 on the NPU (docs/npu-backend.md §2); every lowering keeps the view of its
 * activation input, so results stay readable by the next NPU op without relayout.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpu-low.h"

/* ---- views and inputs ------------------------------------------------------------------ */

struct npu_value *
dl_npu_value(const struct rkd *b, const struct npu_value *v)
{
    if (!b->cx || !v)
        return NULL;
    if (npu_rk_value(v))
        return (struct npu_value *)v;
    if (v->id < b->cx->n_npu_of && b->cx->npu_of[v->id])
        return b->cx->npu_of[v->id];
    return NULL;
}

static enum npu_status lower_any(struct rkd *b, struct npu_node *n, struct why *w);

/* Dry runs do not have the NPU values yet: the view a be-dpu producer will give its result
 * is predicted by a dry lowering of that producer (depth-limited). */
static bool
predict_view(const struct npu_value *v, struct vmap *vm, int depth)
{
    struct npu_node *p = v->producer;
    if (!p || v->producer_idx != 0 || depth > 8 || npu_op_is_rk(p->op))
        return false;
    const struct npu_op_handler *h = npu_op_handler(p->op);
    if (!h || h->lower != npu_dpu_lower || p->device == NPU_DEVICE_CPU)
        return false;
    struct rkd sub;
    rkd_init(&sub, NULL, p);
    sub.depth = depth + 1;
    bool ok = lower_any(&sub, p, NULL) == NPU_OK && !sub.err && sub.have_result;
    if (ok)
        *vm = *(const struct vmap *)sub.result_view;
    rkd_fini(&sub);
    return ok;
}

bool
dl_view(const struct rkd *b, const struct npu_value *v, struct vmap *vm)
{
    struct npu_value *nv = dl_npu_value(b, v);
    if (nv && npu_rk_view(nv, vm->view)) {
        vm->order = npu_rk_view_order(nv);
        return true;
    }
    if (!b->cx && predict_view(v, vm, b->depth))
        return true;
    if (!npu_rk_canonical_view(&v->t, vm->view))
        return false;
    vm->order = npu_rk_order_of(&v->t, vm->view);
    return true;
}

void
dl_cyx(const struct vmap *vm, int64_t idx, uint32_t o[3])
{
    uint32_t C = vm->view[0], H = vm->view[1], W = vm->view[2];
    if (vm->order == NPU_VIEW_NCHW) {
        o[2] = (uint32_t)(idx % W);
        o[1] = (uint32_t)((idx / W) % H);
        o[0] = (uint32_t)(idx / ((int64_t)W * H));
    } else {
        o[0] = (uint32_t)(idx % C);
        int64_t p = idx / C;
        o[2] = (uint32_t)(p % W);
        o[1] = (uint32_t)(p / W);
    }
}

int
dl_alias_kind(const struct npu_value *v)
{
    if (!v || !v->producer || v->producer->op != NPU_OP_RK_DPU)
        return 0;
    return (int)npu_node_int(v->producer, "alias", 0);
}

struct npu_value *
dl_source(struct npu_value *v)
{
    while (dl_alias_kind(v) == 1)
        v = v->producer->in[0];
    return v;
}

bool
dl_alias_ok(const struct rkd *b, const struct npu_value *out, enum npu_op only)
{
    /* cost() predicts the lowering (b->g set): the readers are not placed yet, so any
     * reader not forced onto the CPU counts as an NPU one; the partition then prices the
     * crossing if it places one on the CPU. supports() dry runs (no g) stay with the copy. */
    const struct npu_graph *g = b->cx ? b->cx->g : b->g;
    const struct npu_backend_options *o = b->cx ? b->cx->o : b->o;
    if (!g || out->is_output || !out->nusers)
        return false;
    for (int i = 0; i < out->nusers; i++) {
        const struct npu_node *u = out->users[i];
        const struct npu_op_handler *h = npu_op_handler(u->op);
        bool npu = b->cx ? u->device == NPU_DEVICE_NPU : u->device != NPU_DEVICE_CPU;
        if (!npu || !h || h->lower != npu_dpu_lower || (only != NPU_OP_NONE && u->op != only) ||
            !npu_dpu_supports(g, u, o, NULL, 0))
            return false;
    }
    return true;
}

struct npu_dpu_map
dl_map(struct npu_dpu_ref ref, const struct vmap *vm)
{
    return npu_dpu_map_packed(ref, NPU_DPU_FP16, vm->view[0], vm->view[1], vm->view[2]);
}

bool
dl_input(struct rkd *b, struct npu_value *v, const struct vmap *vm, struct npu_dpu_map *m,
         struct why *w)
{
    if (!npu_dtype_is_float(v->t.dtype)) {
        why_set(w, "input '%s' is not a float tensor", v->name);
        return false;
    }
    struct npu_value *nv = NULL;
    if (b->cx) {
        nv = npu_lower_input(b->cx, b->orig, v, vm->view, NPU_DTYPE_FP16);
        if (!nv) {
            why_set(w, "input '%s' is not available on the NPU in view %ux%ux%u", v->name,
                    vm->view[0], vm->view[1], vm->view[2]);
            return false;
        }
        if (npu_rk_view_order(nv) != vm->order) {
            why_set(w, "input '%s' has another element order on the NPU", v->name);
            return false;
        }
        if (dl_alias_kind(nv) == 2) {
            why_set(w, "input '%s' is a heads view only attention reads", v->name);
            return false;
        }
        /* read a view's bytes where they are: its source (same bytes) */
        nv = dl_source(nv);
    } else {
        struct vmap pv;
        if (predict_view(v, &pv, b->depth) &&
            (memcmp(pv.view, vm->view, sizeof(pv.view)) || pv.order != vm->order)) {
            why_set(w, "input '%s' will be on the NPU in view %ux%ux%u", v->name, pv.view[0],
                    pv.view[1], pv.view[2]);
            return false;
        }
    }
    *m = dl_map(rkd_input(b, nv), vm);
    if (nv && !npu_rk_packed(nv))
        m->surf = npu_rk_surf(nv); /* padded surfaces (attention's projections) */
    return true;
}

/* ---- constants ------------------------------------------------------------------------- */

float *
dl_bcast_const(const struct npu_value *c, int ndim, const int64_t *dims)
{
    if (!c || c->kind != NPU_VALUE_CONST || !npu_value_data(c) || c->t.ndim > ndim)
        return NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= dims[i];
    if (n <= 0 || n > ((int64_t)1 << 26))
        return NULL;
    /* numpy broadcasting: align trailing dims */
    int off = ndim - c->t.ndim;
    int64_t cst[NPU_MAX_DIMS];
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        int ci = i - off;
        if (ci < 0) {
            cst[i] = 0;
            continue;
        }
        if (c->t.dims[ci] != 1 && c->t.dims[ci] != dims[i])
            return NULL;
        cst[i] = c->t.dims[ci] == 1 ? 0 : s;
        s *= c->t.dims[ci];
    }
    float *f = malloc((size_t)n * sizeof(float));
    if (!f)
        return NULL;
    int64_t idx[NPU_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t ci = 0;
        for (int i = 0; i < ndim; i++)
            ci += idx[i] * cst[i];
        f[k] = (float)npu_value_get_f64(c, ci);
        for (int i = ndim - 1; i >= 0; i--) {
            if (++idx[i] < dims[i])
                break;
            idx[i] = 0;
        }
    }
    return f;
}

int
dl_const_kind(const float *full, int64_t n, const struct vmap *vm, float *chv)
{
    bool scalar = true, chan = true;
    uint32_t C = vm->view[0];
    bool *seen = calloc(C, 1);
    if (!seen)
        return 2;
    for (int64_t i = 0; i < n && (scalar || chan); i++) {
        uint32_t o[3];
        dl_cyx(vm, i, o);
        if (full[i] != full[0] && !(isnan(full[i]) && isnan(full[0])))
            scalar = false;
        if (!seen[o[0]]) {
            seen[o[0]] = true;
            if (chv)
                chv[o[0]] = full[i];
        } else if (chv && chv[o[0]] != full[i]) {
            chan = false;
        }
    }
    free(seen);
    if (scalar) {
        if (chv)
            for (uint32_t c = 0; c < C; c++)
                chv[c] = full[0];
        return 0;
    }
    return chan ? 1 : 2;
}

struct npu_dpu_ref
dl_chan_const(struct rkd *b, const char *name, const float *v, uint32_t c)
{
    uint32_t n = NPU_ALIGN(c, 16u);
    float *a = calloc(n, sizeof(float));
    if (!a) {
        b->err = NPU_ERR_NOMEM;
        return rkd_result();
    }
    memcpy(a, v, c * sizeof(float));
    struct npu_dpu_ref r = rkd_const(b, name, a, n * sizeof(float));
    free(a);
    return r;
}

struct npu_dpu_map
dl_map_const(struct rkd *b, const char *name, const float *full, int64_t n, const struct vmap *vm)
{
    struct npu_dpu_map m = dl_map(rkd_result(), vm);
    uint64_t bytes = npu_dpu_map_extent(&m);
    uint8_t *buf = calloc(bytes, 1);
    if (!buf) {
        b->err = NPU_ERR_NOMEM;
        return m;
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t o[3];
        dl_cyx(vm, i, o);
        uint16_t h = npu_fp32_to_fp16(full[i]);
        size_t at =
            (size_t)(o[0] / 8) * m.surf * 16 + ((size_t)o[1] * m.line + o[2]) * 16 + (o[0] % 8) * 2;
        memcpy(buf + at, &h, 2);
    }
    m.ref = rkd_const(b, name, buf, bytes);
    free(buf);
    return m;
}

enum npu_status
dl_finish(struct rkd *b, int idx, const struct vmap *vm)
{
    if (idx == 0) {
        memcpy(b->result_view, vm, sizeof(*vm));
        b->have_result = true;
    }
    const struct npu_tensor *t = &b->orig->out[idx]->t;
    return rkd_finish(b, idx, NPU_DTYPE_FP16, t->ndim, t->dims, vm->view, vm->order);
}

void
dl_lut_pass(struct rkd *b, enum npu_dpu_fn fn, const struct npu_dpu_map *in,
            const struct npu_dpu_map *out)
{
    const struct npu_dpu_lut *l = npu_dpu_lut_get(npu_dpu_lut_fn_id(fn));
    rkd_lut(b, l->id);
    struct npu_dpu_pass p = {.in = *in, .out = *out};
    p.st.bn.mul = NPU_DPU_SRC_REG;
    p.st.bn.mul_value = l->in_scale;
    p.st.ew.lut = l;
    rkd_pass(b, &p);
}

/* ---- elementwise binary ---------------------------------------------------------------- */

static bool
same_shape(const struct npu_tensor *a, const struct npu_tensor *b)
{
    if (npu_tensor_numel(a) != npu_tensor_numel(b))
        return false;
    /* leading 1s do not change the layout */
    int ia = 0, ib = 0;
    while (ia < a->ndim && a->dims[ia] == 1 && a->ndim - ia > b->ndim - ib)
        ia++;
    while (ib < b->ndim && b->dims[ib] == 1 && b->ndim - ib > a->ndim - ia)
        ib++;
    if (a->ndim - ia != b->ndim - ib)
        return false;
    for (; ia < a->ndim; ia++, ib++)
        if (a->dims[ia] != b->dims[ib])
            return false;
    return true;
}

static bool
is_const(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST && npu_value_data(v);
}

static enum npu_dpu_ew_op
ew_of(enum npu_op op)
{
    switch (op) {
    case NPU_OP_ADD:
        return NPU_DPU_EW_ADD;
    case NPU_OP_SUB:
        return NPU_DPU_EW_SUB;
    case NPU_OP_MUL:
        return NPU_DPU_EW_MUL;
    case NPU_OP_DIV:
        return NPU_DPU_EW_DIV;
    case NPU_OP_MAX:
        return NPU_DPU_EW_MAX;
    case NPU_OP_MIN:
        return NPU_DPU_EW_MIN;
    default:
        return NPU_DPU_EW_NONE;
    }
}

/* x op c with c a scalar (kind 0) or per-channel (kind 1) constant: BS/BN stages. */
static void
const_stages(struct rkd *b, enum npu_op op, bool swapped, int kind, const float *chv, uint32_t C,
             struct npu_dpu_stages *st, bool *need_x_operand)
{
    float *tmp = malloc(C * sizeof(float));
    if (!tmp) {
        b->err = NPU_ERR_NOMEM;
        return;
    }
    *need_x_operand = false;
    struct npu_dpu_stage *bs = &st->bs, *bn = &st->bn;
    switch (op) {
    case NPU_OP_ADD:
    case NPU_OP_SUB:
        /* ALU operands are fp32 (register or BRDMA array): exact constants */
        if (kind == 0) {
            bs->alu = NPU_DPU_SRC_REG;
            bs->alu_value = chv[0];
        } else {
            bs->alu = NPU_DPU_SRC_MEM;
            bs->alu_mem = dl_chan_const(b, "alu", chv, C);
        }
        bs->alu_minus = op == NPU_OP_SUB;
        if (op == NPU_OP_SUB && swapped) { /* c - x = (x - c) * -1 */
            bs->mul = NPU_DPU_SRC_REG;
            bs->mul_value = -1.0f;
        }
        break;
    case NPU_OP_MUL:
    case NPU_OP_DIV:
        /* MUL through BRDMA: fp32 operands (the register operand is fp16) */
        for (uint32_t c = 0; c < C; c++)
            tmp[c] = op == NPU_OP_DIV ? (float)(1.0 / (double)chv[c]) : chv[c];
        bs->mul = NPU_DPU_SRC_MEM;
        bs->mul_mem = dl_chan_const(b, "mul", tmp, C);
        break;
    case NPU_OP_MAX:
    case NPU_OP_MIN: {
        /* max(x, c) = relu(x - c) + c;  min(x, c) = c - relu(c - x) */
        struct npu_dpu_ref cr = dl_chan_const(b, "c", chv, C);
        bs->alu = kind == 0 ? NPU_DPU_SRC_REG : NPU_DPU_SRC_MEM;
        bs->alu_value = chv[0];
        bs->alu_mem = cr;
        bs->alu_minus = true;
        bs->relu = true;
        if (op == NPU_OP_MIN) {
            bs->mul = NPU_DPU_SRC_REG;
            bs->mul_value = -1.0f;
            bn->mul = NPU_DPU_SRC_REG;
            bn->mul_value = -1.0f;
        }
        bn->alu = kind == 0 ? NPU_DPU_SRC_REG : NPU_DPU_SRC_MEM;
        bn->alu_value = chv[0];
        bn->alu_mem = cr;
        break;
    }
    default:
        break;
    }
    free(tmp);
}

enum npu_status
dl_lower_eltwise(struct rkd *b, struct npu_node *n, struct why *w)
{
    if (n->nin != 2 || !n->in[0] || !n->in[1] || n->nout != 1)
        return why_set(w, "needs exactly two inputs");
    struct npu_value *x = n->in[0], *y = n->in[1], *out = n->out[0];
    if (!npu_dtype_is_float(out->t.dtype) || !npu_dtype_is_float(x->t.dtype) ||
        !npu_dtype_is_float(y->t.dtype))
        return why_set(w, "only float tensors (fp16 on the NPU)");
    bool cx = is_const(x), cy = is_const(y);
    if (cx && cy)
        return why_set(w, "both operands are constants (folding's job)");
    enum npu_op op = n->op;
    struct vmap vm;
    struct npu_dpu_map xm, ym, zm;
    struct npu_dpu_pass p;
    memset(&p, 0, sizeof(p));

    if (op == NPU_OP_POW) {
        /* x^2 = x * x (EW MUL with the input as its own operand) */
        if (!cy || npu_value_numel(y) != 1 || npu_value_get_f64(y, 0) != 2.0 ||
            !same_shape(&x->t, &out->t))
            return why_set(w, "Pow only with the constant exponent 2");
        if (!dl_view(b, x, &vm) || !dl_input(b, x, &vm, &xm, w))
            return NPU_ERR_UNSUPPORTED;
        p.in = xm;
        p.out = dl_map(rkd_result(), &vm);
        p.st.ew.op = NPU_DPU_EW_MUL;
        p.st.ew.operand = xm;
        rkd_pass(b, &p);
        return dl_finish(b, 0, &vm);
    }
    enum npu_dpu_ew_op ew = ew_of(op);
    if (ew == NPU_DPU_EW_NONE)
        return why_set(w, "not an elementwise op of the DPU");

    if (!cx && !cy) {
        if (!same_shape(&x->t, &out->t) || !same_shape(&y->t, &out->t))
            return why_set(w, "broadcasting between two activations is not lowered");
        if (!dl_view(b, x, &vm))
            return why_set(w, "no NC1HWC2 view");
        if (!dl_input(b, x, &vm, &xm, w) || !dl_input(b, y, &vm, &ym, w))
            return NPU_ERR_UNSUPPORTED;
        p.in = xm;
        p.st.ew.op = ew;
        p.st.ew.operand = ym;
        p.out = dl_map(rkd_result(), &vm);
        rkd_pass(b, &p);
        return dl_finish(b, 0, &vm);
    }

    /* one constant operand */
    bool swapped = cx;
    struct npu_value *a = swapped ? y : x, *c = swapped ? x : y;
    if (!same_shape(&a->t, &out->t))
        return why_set(w, "the activation operand is broadcast (not lowered)");
    if (!dl_view(b, a, &vm) || !dl_input(b, a, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    int64_t nel = npu_value_numel(out);
    float *full = dl_bcast_const(c, out->t.ndim, out->t.dims);
    if (!full)
        return why_set(w, "constant operand does not broadcast to the output");
    float *chv = malloc(vm.view[0] * sizeof(float));
    if (!chv) {
        free(full);
        return NPU_ERR_NOMEM;
    }
    int kind = dl_const_kind(full, nel, &vm, chv);
    zm = dl_map(rkd_result(), &vm);
    p.out = zm;
    p.in = xm;
    bool div_by_x = op == NPU_OP_DIV && swapped;
    for (uint32_t i = 0; kind < 2 && op == NPU_OP_DIV && !swapped && i < vm.view[0]; i++)
        if (chv[i] == 0)
            kind = 2; /* x / 0: let the DPU divide (inf / nan as the CPU gets them) */
    if (kind < 2 && !div_by_x) {
        bool unused;
        const_stages(b, op, swapped, kind, chv, vm.view[0], &p.st, &unused);
    } else {
        /* a constant map in NPU_BUF_WEIGHTS (fp16): EW with the constant as operand, or as
         * the main input when the constant comes first (c - x, c / x) */
        struct npu_dpu_map cm = dl_map_const(b, "k", full, nel, &vm);
        if (swapped && (op == NPU_OP_SUB || op == NPU_OP_DIV)) {
            p.in = cm;
            p.st.ew.operand = xm;
        } else {
            p.st.ew.operand = cm;
        }
        p.st.ew.op = ew;
    }
    free(full);
    free(chv);
    rkd_pass(b, &p);
    return dl_finish(b, 0, &vm);
}

/* ---- unary ----------------------------------------------------------------------------- */

/* Two-pass x * g(x) form of GELU / SiLU (g from a bounded table; no saturation at large x).
 * Off by default: the one-table form costs no extra pass (docs/npu-dpu-ops.md). */
int npu_dpu_gelu_two_pass = 0;

static bool
const_scalar(const struct npu_value *v, double *out)
{
    if (!is_const(v) || npu_value_numel(v) != 1)
        return false;
    *out = npu_value_get_f64(v, 0);
    return true;
}

enum npu_status
dl_lower_unary(struct rkd *b, struct npu_node *n, struct why *w)
{
    if (n->nin < 1 || !n->in[0] || n->nout != 1)
        return why_set(w, "needs one input");
    struct npu_value *x = n->in[0], *out = n->out[0];
    if (!npu_dtype_is_float(x->t.dtype) || !npu_dtype_is_float(out->t.dtype))
        return why_set(w, "only float tensors (fp16 on the NPU)");
    struct vmap vm;
    struct npu_dpu_map xm;
    if (!dl_view(b, x, &vm))
        return why_set(w, "no NC1HWC2 view");
    if (!dl_input(b, x, &vm, &xm, w))
        return NPU_ERR_UNSUPPORTED;
    struct npu_dpu_map zm = dl_map(rkd_result(), &vm);
    struct npu_dpu_pass p;
    memset(&p, 0, sizeof(p));
    p.in = xm;
    p.out = zm;
    uint32_t C = vm.view[0];
    float one = 1.0f;
    (void)one;

    switch (n->op) {
    case NPU_OP_IDENTITY:
    case NPU_OP_DROPOUT:
        break;
    case NPU_OP_RELU:
        p.st.bs.relu = true;
        b->nonneg = true;
        break;
    case NPU_OP_NEG:
        p.st.bs.mul = NPU_DPU_SRC_REG;
        p.st.bs.mul_value = -1.0f;
        break;
    case NPU_OP_ABS: /* max(-x, x) */
        b->nonneg = true;
        p.st.bs.mul = NPU_DPU_SRC_REG;
        p.st.bs.mul_value = -1.0f;
        p.st.ew.op = NPU_DPU_EW_MAX;
        p.st.ew.operand = xm;
        break;
    case NPU_OP_LEAKY_RELU: {
        /* max(a x, x) for a <= 1, min(a x, x) for a > 1; a in fp32 through BRDMA */
        float a = npu_node_float(n, "alpha", 0.01f);
        float *av = malloc(C * sizeof(float));
        if (!av)
            return NPU_ERR_NOMEM;
        for (uint32_t c = 0; c < C; c++)
            av[c] = a;
        p.st.bs.mul = NPU_DPU_SRC_MEM;
        p.st.bs.mul_mem = dl_chan_const(b, "alpha", av, C);
        free(av);
        p.st.ew.op = a <= 1 ? NPU_DPU_EW_MAX : NPU_DPU_EW_MIN;
        p.st.ew.operand = xm;
        break;
    }
    case NPU_OP_PRELU: {
        struct npu_value *sl = n->nin > 1 ? n->in[1] : NULL;
        float *full = sl ? dl_bcast_const(sl, out->t.ndim, out->t.dims) : NULL;
        float *chv = malloc(C * sizeof(float));
        if (!full || !chv) {
            free(full);
            free(chv);
            return why_set(w, "PRelu needs a constant slope that broadcasts");
        }
        int kind = dl_const_kind(full, npu_value_numel(out), &vm, chv);
        free(full);
        if (kind == 2) {
            free(chv);
            return why_set(w, "PRelu slope varies over pixels (not lowered)");
        }
        bool all_le1 = true, all_ge1 = true;
        for (uint32_t c = 0; c < C; c++) {
            all_le1 &= chv[c] <= 1;
            all_ge1 &= chv[c] >= 1;
        }
        struct npu_dpu_ref sr = dl_chan_const(b, "slope", chv, C);
        free(chv);
        if (all_le1 || all_ge1) {
            p.st.bs.mul = NPU_DPU_SRC_MEM;
            p.st.bs.mul_mem = sr;
            p.st.ew.op = all_le1 ? NPU_DPU_EW_MAX : NPU_DPU_EW_MIN;
            p.st.ew.operand = xm;
            break;
        }
        /* mixed slopes: t = s * relu(-x); y = relu(x) - t (two passes) */
        struct npu_dpu_map t = dl_map(rkd_temp(b, npu_dpu_map_extent(&xm)), &vm);
        struct npu_dpu_pass p1 = {.in = xm, .out = t};
        p1.st.bs.mul = NPU_DPU_SRC_REG;
        p1.st.bs.mul_value = -1.0f;
        p1.st.bs.relu = true;
        p1.st.bn.mul = NPU_DPU_SRC_MEM;
        p1.st.bn.mul_mem = sr;
        rkd_pass(b, &p1);
        p.st.bs.relu = true;
        p.st.ew.op = NPU_DPU_EW_SUB;
        p.st.ew.operand = t;
        break;
    }
    case NPU_OP_CLIP: {
        double lo = -INFINITY, hi = INFINITY, v;
        if (n->nin > 1 && n->in[1]) {
            if (!const_scalar(n->in[1], &v))
                return why_set(w, "Clip bounds must be constants");
            lo = v;
        }
        if (n->nin > 2 && n->in[2]) {
            if (!const_scalar(n->in[2], &v))
                return why_set(w, "Clip bounds must be constants");
            hi = v;
        }
        if (n->nin == 1) {
            lo = npu_node_float(n, "min", -INFINITY);
            hi = npu_node_float(n, "max", INFINITY);
        }
        if (!(lo <= hi))
            return why_set(w, "Clip with min > max");
        b->nonneg = lo >= 0;
        if (isfinite(lo)) {
            /* clamp(x - lo, 0, hi - lo) + lo */
            p.st.bs.alu = NPU_DPU_SRC_REG;
            p.st.bs.alu_minus = true;
            p.st.bs.alu_value = (float)lo;
            p.st.bs.relu = true;
            if (isfinite(hi)) {
                p.st.bs.relux = true;
                p.st.bs.relux_value = (float)(hi - lo);
            }
            p.st.bn.alu = NPU_DPU_SRC_REG;
            p.st.bn.alu_value = (float)lo;
        } else if (isfinite(hi)) {
            /* hi - relu(hi - x) */
            p.st.bs.alu = NPU_DPU_SRC_REG;
            p.st.bs.alu_minus = true;
            p.st.bs.alu_value = (float)hi;
            p.st.bs.mul = NPU_DPU_SRC_REG;
            p.st.bs.mul_value = -1.0f;
            p.st.bs.relu = true;
            p.st.bn.mul = NPU_DPU_SRC_REG;
            p.st.bn.mul_value = -1.0f;
            p.st.bn.alu = NPU_DPU_SRC_REG;
            p.st.bn.alu_value = (float)hi;
        }
        break;
    }
    case NPU_OP_HARD_SIGMOID:
    case NPU_OP_HARD_SWISH: {
        /* BN: alpha x + beta (alpha fp32 via NRDMA), ReLU, ReLU-X at 1; HardSwish then
         * multiplies by x in EW */
        float a = n->op == NPU_OP_HARD_SWISH ? 1.0f / 6.0f : npu_node_float(n, "alpha", 0.2f);
        float be = n->op == NPU_OP_HARD_SWISH ? 0.5f : npu_node_float(n, "beta", 0.5f);
        float *av = malloc(C * sizeof(float));
        if (!av)
            return NPU_ERR_NOMEM;
        for (uint32_t c = 0; c < C; c++)
            av[c] = a;
        p.st.bn.mul = NPU_DPU_SRC_MEM;
        p.st.bn.mul_mem = dl_chan_const(b, "alpha", av, C);
        free(av);
        p.st.bn.alu = NPU_DPU_SRC_REG;
        p.st.bn.alu_value = be;
        p.st.bn.relu = true;
        p.st.bn.relux = true;
        p.st.bn.relux_value = 1.0f;
        b->nonneg = n->op == NPU_OP_HARD_SIGMOID;
        if (n->op == NPU_OP_HARD_SWISH) {
            p.st.ew.op = NPU_DPU_EW_MUL;
            p.st.ew.operand = xm;
        }
        break;
    }
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_ERF:
    case NPU_OP_GELU:
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_FUSED_SILU: {
        enum npu_dpu_fn fn, g;
        switch (n->op) {
        case NPU_OP_SIGMOID:
            fn = NPU_DPU_FN_SIGMOID;
            break;
        case NPU_OP_TANH:
            fn = NPU_DPU_FN_TANH;
            break;
        case NPU_OP_ERF:
            fn = NPU_DPU_FN_ERF;
            break;
        case NPU_OP_GELU: {
            const char *ap = npu_node_string(n, "approximate", "none");
            fn = !strcmp(ap, "tanh") ? NPU_DPU_FN_GELU_TANH : NPU_DPU_FN_GELU;
            break;
        }
        case NPU_OP_FUSED_GELU_TANH:
            fn = NPU_DPU_FN_GELU_TANH;
            break;
        default:
            fn = NPU_DPU_FN_SILU;
            break;
        }
        bool xg = fn == NPU_DPU_FN_GELU || fn == NPU_DPU_FN_GELU_TANH || fn == NPU_DPU_FN_SILU;
        b->nonneg = fn == NPU_DPU_FN_SIGMOID;
        if (!xg || !npu_dpu_gelu_two_pass) {
            dl_lut_pass(b, fn, &xm, &zm);
            return dl_finish(b, 0, &vm);
        }
        g = fn == NPU_DPU_FN_GELU        ? NPU_DPU_FN_PHI
            : fn == NPU_DPU_FN_GELU_TANH ? NPU_DPU_FN_PHI_TANH
                                         : NPU_DPU_FN_SIGMOID;
        struct npu_dpu_map t = dl_map(rkd_temp(b, npu_dpu_map_extent(&xm)), &vm);
        dl_lut_pass(b, g, &xm, &t);
        p.in = t;
        p.st.ew.op = NPU_DPU_EW_MUL;
        p.st.ew.operand = xm;
        break;
    }
    default:
        return why_set(w, "no DPU lowering for %s", npu_op_name(n->op));
    }
    rkd_pass(b, &p);
    return dl_finish(b, 0, &vm);
}

/* ---- dispatch -------------------------------------------------------------------------- */

/* Dropout is the identity only in inference mode (ONNX Dropout-12/13: training_mode absent or
 * false; ratio then does not matter) and without its mask output: training mode draws a
 * random mask and scales by 1 / (1 - ratio), which the NPU path does not do. */
static bool
dropout_ok(const struct npu_node *n, struct why *w)
{
    const struct npu_value *tm = n->nin > 2 ? n->in[2] : NULL;
    if (tm) {
        if (tm->kind != NPU_VALUE_CONST || !npu_value_data(tm) || npu_value_numel(tm) != 1) {
            why_set(w,
                    "Dropout's training_mode '%s' is not a constant: training mode (a random "
                    "mask) is not computed on the NPU",
                    tm->name);
            return false;
        }
        if (npu_value_get_f64(tm, 0) != 0) {
            why_set(w, "Dropout in training mode (a random mask) is not computed on the NPU");
            return false;
        }
    }
    if (n->nout > 1 && n->out[1] && (n->out[1]->nusers || n->out[1]->is_output)) {
        why_set(w, "Dropout's mask output is used: the NPU path does not produce it");
        return false;
    }
    return true;
}

static enum npu_status
lower_any(struct rkd *b, struct npu_node *n, struct why *w)
{
    /* computed by an earlier lowering (the head merge written by attention) */
    if (npu_node_int(n, "npu_dpu_done", 0))
        return NPU_OK;
    /* Dropout's and MaxPool's own (their extra outputs would otherwise be refused for
     * their type), then the refusals common to every handler (float64, output types,
     * quantisation parameters) */
    if (n->op == NPU_OP_DROPOUT && !dropout_ok(n, w))
        return NPU_ERR_UNSUPPORTED;
    /* a graph output counts as used too: nothing else would write it */
    if (n->op == NPU_OP_MAX_POOL && n->nout > 1 && n->out[1] &&
        (n->out[1]->nusers || n->out[1]->is_output))
        return why_set(w, "MaxPool's indices output (output 1) is used: the PPU does not "
                          "produce indices");
    if (!npu_be_common_ok(b->cx ? b->cx->g : NULL, n, false, w ? w->s : NULL, w ? w->len : 0))
        return NPU_ERR_UNSUPPORTED;
    switch (n->op) {
    case NPU_OP_ADD:
    case NPU_OP_SUB:
    case NPU_OP_MUL:
    case NPU_OP_DIV:
    case NPU_OP_MAX:
    case NPU_OP_MIN:
    case NPU_OP_POW:
        return dl_lower_eltwise(b, n, w);
    case NPU_OP_RELU:
    case NPU_OP_LEAKY_RELU:
    case NPU_OP_PRELU:
    case NPU_OP_CLIP:
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_ERF:
    case NPU_OP_GELU:
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_FUSED_SILU:
    case NPU_OP_HARD_SIGMOID:
    case NPU_OP_HARD_SWISH:
    case NPU_OP_NEG:
    case NPU_OP_ABS:
    case NPU_OP_IDENTITY:
    case NPU_OP_DROPOUT:
        return dl_lower_unary(b, n, w);
    case NPU_OP_MAX_POOL:
    case NPU_OP_GLOBAL_MAX_POOL:
    case NPU_OP_AVERAGE_POOL:
    case NPU_OP_GLOBAL_AVERAGE_POOL:
        return dl_lower_pool(b, n, w);
    case NPU_OP_RESHAPE:
    case NPU_OP_FLATTEN:
    case NPU_OP_SQUEEZE:
    case NPU_OP_UNSQUEEZE:
    case NPU_OP_TRANSPOSE:
    case NPU_OP_SLICE:
    case NPU_OP_CONCAT:
    case NPU_OP_SPLIT:
    case NPU_OP_GATHER:
        return dl_lower_move(b, n, w);
    case NPU_OP_LAYER_NORMALIZATION:
        return dl_lower_layernorm(b, n, w);
    case NPU_OP_SOFTMAX:
        return dl_lower_softmax(b, n, w);
    case NPU_OP_FUSED_ATTENTION:
        return dl_lower_attention(b, n, w);
    default:
        return why_set(w, "no be-dpu lowering for %s", npu_op_name(n->op));
    }
}

/* Dry runs take the node as const: the lowering only reads it (cx == NULL). */
bool
npu_dpu_supports(const struct npu_graph *g, const struct npu_node *n,
                 const struct npu_backend_options *o, char *why, size_t why_len)
{
    (void)g;
    struct rkd b;
    struct why w = {why, why_len};
    if (why && why_len)
        why[0] = 0;
    rkd_init(&b, NULL, (struct npu_node *)n);
    b.no_center = o && o->no_center_fold;
    enum npu_status st = lower_any(&b, (struct npu_node *)n, &w);
    if (st == NPU_OK && b.err)
        st = b.err;
    if (st && why && why_len && !why[0])
        snprintf(why, why_len, "a DPU task of the lowering was refused (%s)",
                 npu_stream_error(&b.dry)[0] ? npu_stream_error(&b.dry) : npu_status_str(st));
    rkd_fini(&b);
    return st == NPU_OK;
}

double
npu_dpu_cost(const struct npu_graph *g, const struct npu_node *n,
             const struct npu_backend_options *o)
{
    /* a residual Add the producing MatMul will compute in its DPU (priced there) */
    if (n->op == NPU_OP_ADD && npu_conv_residual_likely(g, n, o))
        return 0;
    /* a head merge the attention before it writes directly (priced there) */
    if ((n->op == NPU_OP_TRANSPOSE || n->op == NPU_OP_RESHAPE || n->op == NPU_OP_FLATTEN) &&
        dl_attn_merged(g, n, o))
        return 0;
    struct rkd b;
    rkd_init(&b, NULL, (struct npu_node *)n);
    b.no_center = o && o->no_center_fold;
    b.g = g; /* views: predict alias or copy as the lowering will (dl_alias_ok) */
    b.o = o;
    enum npu_status st = lower_any(&b, (struct npu_node *)n, NULL);
    double s = st == NPU_OK && !b.err ? rkd_seconds(&b) : -1.0;
    rkd_fini(&b);
    return s;
}

enum npu_status
npu_dpu_lower(struct npu_lower_ctx *cx, struct npu_node *n)
{
    struct rkd b;
    char why[200] = "";
    struct why w = {why, sizeof(why)};
    rkd_init(&b, cx, n);
    enum npu_status st = lower_any(&b, n, &w);
    if (st == NPU_OK && b.err)
        st = b.err;
    if (st == NPU_OK && !npu_node_int(n, "npu_dpu_done", 0) && !b.finished)
        st = npu_lower_refuse(n, "internal: the lowering declared no result");
    if (st == NPU_ERR_UNSUPPORTED || (st && !why[0] && st != NPU_ERR_NOMEM)) {
        rkd_fini(&b);
        return npu_lower_refuse(n, "%s", why[0] ? why : npu_status_str(st));
    }
    rkd_fini(&b);
    return st;
}
