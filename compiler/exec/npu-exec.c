/* SPDX-License-Identifier: MIT */
/*
 * npu-exec.c: the CPU graph executor. Planning gives every value a slot and
 * packs node outputs into one activation arena by lifetime (first fit over a
 * sorted free list, 64-byte aligned: a tensor's bytes are reused once its last
 * reader has run). Running walks the nodes in order and calls npu_cpu_run.
 *
 * Fused nodes (docs/ir.md) are run as their base kernel followed by an
 * epilogue: the fused bias is added and the fused activation applied in
 * place, by the unfused kernels (elementwise kernels read element i before
 * writing element i, so out == in is safe for them). npu.Attention,
 * npu.SiLU and npu.GeluTanh use their kernels when core/cpu has them and are
 * otherwise decomposed here into unfused kernel calls.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec-priv.h"
#include "ir-priv.h"
#include "npu/npu-exec.h"
#include "passes-priv.h"

#define DOM "exec"
#define ALIGN 64

/* ---- planning ------------------------------------------------------------------- */

struct block {
    int64_t off, size;
};

struct freelist {
    struct block *b;
    int n, cap;
    int64_t top; /* end of the highest block ever handed out */
};

static int64_t
fl_alloc(struct freelist *f, int64_t size)
{
    size = NPU_ALIGN(size ? size : 1, ALIGN);
    int best = -1;
    for (int i = 0; i < f->n; i++) /* best fit keeps big holes for big tensors */
        if (f->b[i].size >= size && (best < 0 || f->b[i].size < f->b[best].size))
            best = i;
    if (best >= 0) {
        int64_t off = f->b[best].off;
        f->b[best].off += size;
        f->b[best].size -= size;
        if (!f->b[best].size) {
            memmove(&f->b[best], &f->b[best + 1], sizeof(*f->b) * (size_t)(f->n - best - 1));
            f->n--;
        }
        return off;
    }
    /* Grow at the top, merging a free block that ends there. */
    int64_t off = f->top;
    if (f->n && f->b[f->n - 1].off + f->b[f->n - 1].size == f->top) {
        off = f->b[f->n - 1].off;
        f->n--;
    }
    f->top = off + size;
    return off;
}

static bool
fl_free(struct freelist *f, int64_t off, int64_t size)
{
    size = NPU_ALIGN(size ? size : 1, ALIGN);
    int i = 0;
    while (i < f->n && f->b[i].off < off)
        i++;
    if (f->n == f->cap) {
        int nc = f->cap ? f->cap * 2 : 64;
        struct block *nb = realloc(f->b, sizeof(*nb) * (size_t)nc);
        if (!nb)
            return false;
        f->b = nb;
        f->cap = nc;
    }
    memmove(&f->b[i + 1], &f->b[i], sizeof(*f->b) * (size_t)(f->n - i));
    f->b[i] = (struct block){off, size};
    f->n++;
    /* coalesce with neighbours */
    if (i + 1 < f->n && f->b[i].off + f->b[i].size == f->b[i + 1].off) {
        f->b[i].size += f->b[i + 1].size;
        memmove(&f->b[i + 1], &f->b[i + 2], sizeof(*f->b) * (size_t)(f->n - i - 2));
        f->n--;
    }
    if (i > 0 && f->b[i - 1].off + f->b[i - 1].size == f->b[i].off) {
        f->b[i - 1].size += f->b[i].size;
        memmove(&f->b[i], &f->b[i + 1], sizeof(*f->b) * (size_t)(f->n - i - 1));
        f->n--;
    }
    return true;
}

static struct npu_attrs
strip_fusion_attrs(struct npu_graph *g, const struct npu_node *n)
{
    struct npu_attrs a = {NULL, 0};
    struct npu_attr *v = npu_graph_alloc(g, sizeof(*v) * (size_t)(n->nattr ? n->nattr : 1));
    if (!v)
        return a;
    size_t k = 0;
    for (int i = 0; i < n->nattr; i++)
        if (strncmp(n->attr[i].name, "npu_", 4))
            v[k++] = n->attr[i];
    a.v = v;
    a.n = k;
    return a;
}

static enum npu_status
plan_epilogue(struct npu_graph *g, struct exec_step *s, const struct npu_node *n)
{
    const char *act = npu_node_string(n, "npu_act", NULL);
    s->act = NPU_OP_NONE;
    if (!act)
        return NPU_OK;
    static const enum npu_op acts[] = {NPU_OP_RELU,
                                       NPU_OP_LEAKY_RELU,
                                       NPU_OP_CLIP,
                                       NPU_OP_SIGMOID,
                                       NPU_OP_TANH,
                                       NPU_OP_GELU,
                                       NPU_OP_FUSED_GELU_TANH,
                                       NPU_OP_FUSED_SILU,
                                       NPU_OP_HARD_SWISH,
                                       NPU_OP_HARD_SIGMOID};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(acts); i++)
        if (!strcmp(act, pass_act_name(acts[i])))
            s->act = acts[i];
    float alpha = npu_node_float(n, "npu_act_alpha", 0),
          beta = npu_node_float(n, "npu_act_beta", 0);
    struct npu_attr *v = npu_graph_alloc(g, sizeof(*v) * 2);
    if (!v)
        return NPU_ERR_NOMEM;
    s->act_attrs.v = v;
    switch (s->act) {
    case NPU_OP_RELU:
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_GELU:
    case NPU_OP_FUSED_SILU:
    case NPU_OP_FUSED_GELU_TANH:
    case NPU_OP_HARD_SWISH: break;
    case NPU_OP_LEAKY_RELU:
        v[0] = (struct npu_attr){.name = "alpha", .type = NPU_ATTR_FLOAT, .f = alpha};
        s->act_attrs.n = 1;
        break;
    case NPU_OP_HARD_SIGMOID:
        v[0] = (struct npu_attr){.name = "alpha", .type = NPU_ATTR_FLOAT, .f = alpha};
        v[1] = (struct npu_attr){.name = "beta", .type = NPU_ATTR_FLOAT, .f = beta};
        s->act_attrs.n = 2;
        break;
    case NPU_OP_CLIP: {
        enum npu_dtype dt = n->out[0]->t.dtype;
        s->act_lo = (struct npu_tensor){.dtype = dt, .ndim = 0};
        s->act_hi = s->act_lo;
        s->act_lo.data = npu_graph_alloc(g, 8);
        s->act_hi.data = npu_graph_alloc(g, 8);
        if (!s->act_lo.data || !s->act_hi.data)
            return NPU_ERR_NOMEM;
        ir_store_f64(dt, s->act_lo.data, 0, alpha);
        ir_store_f64(dt, s->act_hi.data, 0, beta);
        break;
    }
    default: ir_node_err(n, "unknown fused activation '%s'", act); return NPU_ERR_UNSUPPORTED;
    }
    return NPU_OK;
}

/* core/cpu's Conv, Gemm and MatMul kernels apply npu_act (and MatMul's fused
 * bias) themselves for fp32 (docs/cpu-kernels.md); other dtypes get the
 * executor's epilogue. */
static bool
kernel_takes_fusion(const struct npu_node *n)
{
    if (n->op != NPU_OP_CONV && n->op != NPU_OP_GEMM && n->op != NPU_OP_MATMUL)
        return false;
    if (n->out[0]->t.dtype != NPU_DTYPE_FP32)
        return false;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && n->in[i]->t.dtype != NPU_DTYPE_FP32)
            return false;
    return true;
}

/* ---- residual fusion (CPU executor only) ----------------------------------------
 * Conv -> Add(conv, R) [-> Relu] runs as one Conv step with R as a 4th operand: core/cpu's
 * Conv adds R to its finished outputs (bias included) and then applies the activation, in
 * the unfused graph's order, so the result is the same floats without the Add's and the
 * Relu's passes over memory. Recognised here, on the executor's own copy of the graph,
 * not by a compiler pass: the NPU back end fuses a residual Add its own way.
 * The Add is folded into whichever of its Convs runs later, so that R is ready. */
struct res_fuse {
    struct npu_value *res; /* R: the Add's other operand */
    struct npu_value *out; /* the value the fused step writes (Add's or Relu's) */
    bool relu;
};

static bool
res_conv_ok(const struct npu_value *v, unsigned flags)
{
    const struct npu_node *c = v->producer;
    return v->kind == NPU_VALUE_NODE && c && c->op == NPU_OP_CONV && c->nout == 1 && c->nin >= 2 &&
           c->nin <= 3 && !(flags & NPU_EXEC_NO_KERNEL_FUSION) && kernel_takes_fusion(c) &&
           !npu_node_string(c, "npu_act", NULL) && v->nusers == 1 && !v->is_output;
}

static bool
same_fp32_shape(const struct npu_tensor *a, const struct npu_tensor *b)
{
    return a->dtype == NPU_DTYPE_FP32 && b->dtype == NPU_DTYPE_FP32 && a->ndim == b->ndim &&
           !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim);
}

/* fuse[conv id]: what that Conv takes over; skip[node id]: an Add or Relu it took over. */
static void
plan_residuals(struct npu_graph *g, unsigned flags, int *order, struct res_fuse *fuse, bool *skip)
{
    const char *env = getenv("NPU_EXEC_RESIDUAL"); /* 0: off, for measurements */
    if (env && !strcmp(env, "0"))
        return;
    int i = 0;
    npu_graph_for_each_node (g, n)
        order[n->id] = i++;
    npu_graph_for_each_node (g, a) {
        if (a->op != NPU_OP_ADD || a->nin != 2 || a->nout != 1 || !a->in[0] || !a->in[1] ||
            a->in[0] == a->in[1] || npu_node_string(a, "npu_act", NULL) ||
            !same_fp32_shape(&a->in[0]->t, &a->out[0]->t) ||
            !same_fp32_shape(&a->in[1]->t, &a->out[0]->t) || a->out[0]->t.ndim < 3)
            continue;
        /* planes of 28x28 and more: measured one thread, CPU time, ResNet's shapes (Conv, Add,
         * Relu alone): 56x56 fused 5-15 % faster, 28x28 even to 3 % faster; 14x14 and 7x7
         * 1-11 % slower fused (per tile the epilogue and the residual's prefetch cost more
         * than the Add and Relu passes over their small tensors), so those stay unfused */
        int64_t plane = 1;
        for (int d = 2; d < a->out[0]->t.ndim; d++)
            plane *= a->out[0]->t.dims[d];
        if (plane < 28 * 28)
            continue;
        int pick = -1;
        for (int k = 0; k < 2; k++) {
            const struct npu_value *r = a->in[1 - k];
            if (!res_conv_ok(a->in[k], flags) || fuse[a->in[k]->producer->id].res)
                continue;
            int at = order[a->in[k]->producer->id];
            if (r->kind == NPU_VALUE_NODE && (!r->producer || order[r->producer->id] >= at))
                continue;
            if (pick < 0 || at > order[a->in[pick]->producer->id])
                pick = k;
        }
        if (pick < 0)
            continue;
        struct res_fuse *f = &fuse[a->in[pick]->producer->id];
        f->res = a->in[1 - pick];
        f->out = a->out[0];
        skip[a->id] = true;
        struct npu_value *w = a->out[0];
        struct npu_node *u = w->nusers == 1 ? w->users[0] : NULL;
        if (!w->is_output && u && u->op == NPU_OP_RELU && u->nin == 1 && u->in[0] == w &&
            u->nout == 1 && same_fp32_shape(&w->t, &u->out[0]->t)) {
            f->relu = true;
            f->out = u->out[0];
            skip[u->id] = true;
        }
    }
}

/* The fused Conv's attributes: its own plus npu_act = relu when it took a Relu over. */
static struct npu_attrs
residual_attrs(struct npu_graph *g, const struct npu_node *n, bool relu)
{
    struct npu_attrs a = npu_node_attrs(n);
    if (!relu)
        return a;
    struct npu_attr *v = npu_graph_alloc(g, sizeof(*v) * (size_t)(n->nattr + 1));
    if (!v)
        return (struct npu_attrs){NULL, 0};
    memcpy(v, n->attr, sizeof(*v) * (size_t)n->nattr);
    v[n->nattr] = (struct npu_attr){.name = "npu_act", .type = NPU_ATTR_STRING, .s = "relu"};
    return (struct npu_attrs){v, (size_t)n->nattr + 1};
}

/* ---- 1x1 -> depthwise pairs (CPU executor only) ------------------------------------
 * A 1x1 Conv whose only reader is a depthwise Conv (the expand and depthwise of an inverted
 * residual block) runs as one step through npu_cpu_run_pw_dw, band by band, where core/cpu
 * has the band form for the shapes (npu_cpu_pw_dw_wanted): the expanded tensor is never
 * written whole, and the output is the same bits. The step takes the depthwise Conv's place;
 * pw_of[depthwise id] is the 1x1 Conv it took over. */
static bool
pwdw_conv_ok(const struct npu_node *c, unsigned flags, const struct res_fuse *fuse)
{
    return c && c->op == NPU_OP_CONV && c->nout == 1 && c->nin >= 2 && c->nin <= 3 &&
           !(flags & NPU_EXEC_NO_KERNEL_FUSION) && kernel_takes_fusion(c) && !fuse[c->id].res &&
           c->in[0] && c->in[1] && c->in[1]->kind == NPU_VALUE_CONST && c->in[1]->t.data &&
           (c->nin < 3 || !c->in[2] || c->in[2]->kind == NPU_VALUE_CONST);
}

static void
plan_pwdw(struct npu_graph *g, unsigned flags, const struct res_fuse *fuse, bool *skip,
          struct npu_node **pw_of)
{
    npu_graph_for_each_node (g, c1) {
        if (skip[c1->id] || pw_of[c1->id] || !pwdw_conv_ok(c1, flags, fuse))
            continue;
        struct npu_value *v = c1->out[0];
        struct npu_node *c2 = v->nusers == 1 ? v->users[0] : NULL;
        if (v->is_output || !c2 || skip[c2->id] || pw_of[c2->id] || c2->in[0] != v ||
            !pwdw_conv_ok(c2, flags, fuse))
            continue;
        bool twice = false; /* v read only as the depthwise input */
        for (int i = 1; i < c2->nin; i++)
            twice = twice || c2->in[i] == v;
        struct npu_attrs a1 = npu_node_attrs(c1), a2 = npu_node_attrs(c2);
        if (twice || !npu_cpu_pw_dw_wanted(&a1, &c1->in[0]->t, &c1->in[1]->t, &a2, &c2->in[1]->t))
            continue;
        pw_of[c2->id] = c1;
        skip[c1->id] = true;
    }
}

/* Scratch a decomposed fused op needs. */
static int64_t
decompose_scratch(const struct npu_node *n)
{
    if (n->op != NPU_OP_FUSED_ATTENTION)
        return 0;
    const struct npu_tensor *q = &n->in[0]->t, *k = &n->in[1]->t, *o = &n->out[0]->t;
    int64_t batch = 1;
    for (int i = 0; i < o->ndim - 2; i++)
        batch *= o->dims[i];
    int64_t sq = q->dims[q->ndim - 2], sk = k->dims[k->ndim - 2];
    int64_t es = (int64_t)npu_dtype_size(q->dtype);
    int64_t scores = NPU_ALIGN(batch * sq * sk * es, ALIGN);
    return NPU_ALIGN(npu_tensor_nbytes(k), ALIGN) + 2 * scores;
}

void
exec_plan_free(struct exec_plan *p)
{
    if (!p)
        return;
    for (int i = 0; p->steps && i < p->nsteps; i++)
        npu_cpu_prep_free(p->steps[i].prep);
    npu_graph_free(p->g);
    free(p->slots);
    free(p->steps);
    free(p->input_slot);
    free(p->output_slot);
    free(p->output_copy);
    free(p);
}

/* Concat without a copy: when the whole is an arena value whose parts are contiguous ranges
 * of it (nothing before the axis but 1s) and every part is an arena value that one earlier
 * step writes, is not a graph output, appears once and is not itself a whole or a part, the
 * parts become views of the whole (slot view_of / view_off) and the Concat step runs no kernel.
 * YOLOv8n: Concat copies were 3.3 % of a run (NPU_CPU_PROFILE, one thread). The whole is then
 * allocated when its first part is written and lives until its last part's last use.
 * NPU_EXEC_CONCAT=0 turns it off (for measurements). */
static void
plan_concat_views(struct exec_plan *p, const int *producer, int *last_use)
{
    const char *env = getenv("NPU_EXEC_CONCAT");
    if (env && !strcmp(env, "0"))
        return;
    for (int i = 0; i < p->nsteps; i++) {
        struct exec_step *s = &p->steps[i];
        if (s->op != NPU_OP_CONCAT || s->decompose || s->nout != 1 || s->nin < 1 || s->bias >= 0 ||
            s->act != NPU_OP_NONE)
            continue;
        int o = s->out[0];
        struct exec_slot *whole = &p->slots[o];
        int r = whole->t.ndim;
        int64_t axis = npu_attrs_int(&s->attrs, "axis", 0);
        if (axis < 0)
            axis += r;
        if (whole->kind != SLOT_ARENA || whole->view_of >= 0 || axis < 0 || axis >= r)
            continue;
        bool ok = true;
        for (int d = 0; d < axis; d++)
            ok = ok && whole->t.dims[d] == 1;
        int64_t off = 0;
        for (int k = 0; ok && k < s->nin; k++) {
            int x = s->in[k];
            ok = x >= 0 && x != o && p->slots[x].kind == SLOT_ARENA && p->slots[x].view_of < 0 &&
                 producer[x] >= 0 && producer[x] < i && p->slots[x].t.dtype == whole->t.dtype &&
                 !p->steps[producer[x]].cat_in_place;
            for (int q = 0; ok && q < k; q++)
                ok = s->in[q] != x;
            for (int q = 0; ok && q < p->noutputs; q++)
                ok = p->output_slot[q] != x;
            /* x may not already be a whole of views */
            for (int q = 0; ok && q < p->nslots; q++)
                ok = p->slots[q].view_of != x;
            off += ok ? npu_tensor_nbytes(&p->slots[x].t) : 0;
        }
        if (!ok || off != npu_tensor_nbytes(&whole->t))
            continue;
        off = 0;
        for (int k = 0; k < s->nin; k++) {
            int x = s->in[k];
            p->slots[x].view_of = o;
            p->slots[x].view_off = off;
            off += npu_tensor_nbytes(&p->slots[x].t);
            last_use[o] = NPU_MAX(last_use[o], last_use[x]);
        }
        s->cat_in_place = true;
    }
}

enum npu_status
exec_plan_build(struct npu_graph *g, unsigned flags, struct exec_plan **out)
{
    *out = NULL;
    struct exec_plan *p = calloc(1, sizeof(*p));
    int *slot_of = NULL, *last_use = NULL, *order = NULL;
    struct res_fuse *fuse = NULL;
    bool *skip = NULL;
    struct npu_node **pw_of = NULL;
    struct freelist fl = {0};
    enum npu_status st = NPU_ERR_NOMEM;
    if (!p)
        return NPU_ERR_NOMEM;
    p->g = g;
    /* the kernels load constants through typed (aligned) pointers: an fp32 constant the
     * importer borrowed unaligned from the model file is copied here, once */
    if ((st = npu_graph_align_consts(g)))
        goto err;
    st = NPU_ERR_NOMEM;
    int maxid = 0;
    for (int i = 0; i < g->nvalues; i++)
        maxid = NPU_MAX(maxid, g->values[i]->id + 1);
    slot_of = malloc(sizeof(int) * (size_t)(maxid + 1));
    p->slots = calloc((size_t)g->nvalues + 1, sizeof(*p->slots));
    p->steps = calloc((size_t)g->nnodes + 1, sizeof(*p->steps));
    p->input_slot = calloc((size_t)g->ninputs + 1, sizeof(int));
    p->output_slot = calloc((size_t)g->noutputs + 1, sizeof(int));
    p->output_copy = calloc((size_t)g->noutputs + 1, sizeof(int));
    last_use = calloc((size_t)g->nvalues + 1, sizeof(int));
    int maxnid = 0;
    npu_graph_for_each_node (g, n)
        maxnid = NPU_MAX(maxnid, n->id + 1);
    order = calloc((size_t)maxnid + 1, sizeof(int));
    fuse = calloc((size_t)maxnid + 1, sizeof(*fuse));
    skip = calloc((size_t)maxnid + 1, sizeof(bool));
    pw_of = calloc((size_t)maxnid + 1, sizeof(*pw_of));
    if (!slot_of || !p->slots || !p->steps || !p->input_slot || !p->output_slot ||
        !p->output_copy || !last_use || !order || !fuse || !skip || !pw_of)
        goto err;
    if ((st = npu_graph_update_uses(g)))
        goto err;
    st = NPU_ERR_NOMEM;
    plan_residuals(g, flags, order, fuse, skip);
    plan_pwdw(g, flags, fuse, skip, pw_of);
    for (int i = 0; i <= maxid; i++)
        slot_of[i] = -1;
    for (int i = 0; i < g->nvalues; i++) {
        struct npu_value *v = g->values[i];
        struct exec_slot *s = &p->slots[p->nslots];
        s->t = v->t;
        s->kind = v->kind == NPU_VALUE_CONST   ? SLOT_CONST
                  : v->kind == NPU_VALUE_INPUT ? SLOT_INPUT
                                               : SLOT_ARENA;
        if (s->kind != SLOT_CONST)
            s->t.data = NULL;
        s->offset = -1;
        s->view_of = -1;
        last_use[p->nslots] = -1;
        slot_of[v->id] = p->nslots++;
    }
    for (int i = 0; i < g->ninputs; i++) {
        p->input_slot[i] = slot_of[g->inputs[i]->id];
        p->slots[p->input_slot[i]].input = i;
    }
    p->ninputs = g->ninputs;
    int si = 0;
    npu_graph_for_each_node (g, n) {
        if (skip[n->id]) /* an Add or Relu a Conv step took over */
            continue;
        const struct res_fuse *rf = &fuse[n->id];
        struct exec_step *s = &p->steps[si];
        const struct npu_node *pw = pw_of[n->id];
        s->node = n;
        s->op = n->op;
        if (pw) {
            /* the 1x1 -> depthwise pair: X, W1, B1, W2, B2 */
            s->pwdw = true;
            s->pw_attrs = npu_node_attrs(pw);
            s->attrs = npu_node_attrs(n);
            s->nin = 5;
            s->nout = 1;
            s->in = npu_graph_alloc(g, sizeof(int) * 5);
            s->out = npu_graph_alloc(g, sizeof(int));
            if (!s->in || !s->out)
                goto err;
            const struct npu_value *iv[5] = {pw->in[0], pw->in[1], pw->nin > 2 ? pw->in[2] : NULL,
                                             n->in[1], n->nin > 2 ? n->in[2] : NULL};
            for (int i = 0; i < 5; i++) {
                s->in[i] = iv[i] ? slot_of[iv[i]->id] : -1;
                if (s->in[i] >= 0)
                    last_use[s->in[i]] = si;
            }
            s->out[0] = slot_of[n->out[0]->id];
            s->bias = -1;
            s->act = NPU_OP_NONE;
            const struct npu_tensor *pin[3] = {&p->slots[s->in[0]].t, &p->slots[s->in[1]].t,
                                               s->in[2] >= 0 ? &p->slots[s->in[2]].t : NULL};
            if ((st = npu_cpu_prepare(NPU_OP_CONV, &s->pw_attrs, pin, 3, &s->prep)))
                goto err;
            st = NPU_ERR_NOMEM;
            si++;
            p->nsteps = si;
            continue;
        }
        s->nin = rf->res ? 4 : n->nin;
        s->nout = n->nout;
        s->in = npu_graph_alloc(g, sizeof(int) * (size_t)(s->nin + 1));
        s->out = npu_graph_alloc(g, sizeof(int) * (size_t)(n->nout + 1));
        if (!s->in || !s->out)
            goto err;
        for (int i = 0; i < s->nin; i++) {
            const struct npu_value *v = i < n->nin ? n->in[i] : i == 3 ? rf->res : NULL;
            s->in[i] = v ? slot_of[v->id] : -1;
            if (s->in[i] >= 0)
                last_use[s->in[i]] = si;
        }
        for (int i = 0; i < n->nout; i++)
            s->out[i] = slot_of[(rf->res ? rf->out : n->out[i])->id];
        s->bias = -1;
        s->act = NPU_OP_NONE;
        if (rf->res) {
            s->attrs = residual_attrs(g, n, rf->relu);
            if (!s->attrs.v)
                goto err;
        } else if (!(flags & NPU_EXEC_NO_KERNEL_FUSION) && kernel_takes_fusion(n)) {
            s->attrs = npu_node_attrs(n);
        } else {
            s->attrs = strip_fusion_attrs(g, n);
            if (n->op == NPU_OP_MATMUL && n->nin > 2) { /* fused bias, added after */
                s->bias = s->in[2];
                s->nin = 2;
            }
            if ((st = plan_epilogue(g, s, n)))
                goto err;
        }
        st = NPU_ERR_NOMEM;
        s->decompose = (n->op == NPU_OP_FUSED_ATTENTION || n->op == NPU_OP_FUSED_SILU ||
                        n->op == NPU_OP_FUSED_GELU_TANH) &&
                       (!npu_cpu_supports(n->op) || (flags & NPU_EXEC_DECOMPOSE_FUSED));
        if (s->decompose)
            p->scratch_bytes = NPU_MAX(p->scratch_bytes, (size_t)decompose_scratch(n));
        if (!s->decompose && !npu_cpu_supports(s->op)) {
            ir_node_err(n, "the CPU kernels do not implement this op");
            st = NPU_ERR_UNSUPPORTED;
            goto err;
        }
        if (!s->decompose &&
            (s->op == NPU_OP_CONV || s->op == NPU_OP_MATMUL || s->op == NPU_OP_GEMM ||
             s->op == NPU_OP_MATMUL_INTEGER || s->op == NPU_OP_QLINEAR_MATMUL ||
             s->op == NPU_OP_QLINEAR_CONV || s->op == NPU_OP_CONV_INTEGER) &&
            s->nin <= 64) {
            /* constant weights are packed once here, not at every run */
            const struct npu_tensor *pin[64];
            for (int k = 0; k < s->nin; k++)
                pin[k] = s->in[k] >= 0 ? &p->slots[s->in[k]].t : NULL;
            if ((st = npu_cpu_prepare(s->op, &s->attrs, pin, s->nin, &s->prep)))
                goto err;
            st = NPU_ERR_NOMEM;
        }
        si++;
        p->nsteps = si; /* so that a failure below frees the steps' prepared data */
    }
    p->nsteps = si;
    for (int i = 0; i < g->noutputs; i++) {
        int sl = slot_of[g->outputs[i]->id];
        p->output_slot[i] = sl;
        p->output_copy[i] = -1;
        last_use[sl] = p->nsteps; /* outputs live to the end */
    }
    p->noutputs = g->noutputs;
    /* in-place Concats: their parts become views of the whole */
    int *producer = malloc(sizeof(int) * (size_t)(p->nslots + 1));
    if (!producer)
        goto err;
    for (int i = 0; i < p->nslots; i++)
        producer[i] = -1;
    for (int i = 0; i < p->nsteps; i++)
        for (int k = 0; k < p->steps[i].nout; k++)
            if (producer[p->steps[i].out[k]] < 0)
                producer[p->steps[i].out[k]] = i;
    plan_concat_views(p, producer, last_use);
    free(producer);
    /* Lifetimes -> offsets. A view's whole is allocated with its first part and freed at the
     * last use of it or of any part (a part stands for its whole below). */
    for (int i = 0; i < p->nsteps; i++) {
        struct exec_step *s = &p->steps[i];
        for (int k = 0; k < s->nout; k++) {
            int x = s->out[k];
            if (p->slots[x].view_of >= 0)
                x = p->slots[x].view_of;
            struct exec_slot *sl = &p->slots[x];
            if (sl->offset == -1)
                sl->offset = fl_alloc(&fl, npu_tensor_nbytes(&sl->t));
            if (last_use[x] < 0) /* unused output (e.g. Dropout mask): free now */
                last_use[x] = i;
        }
        for (int k = 0; k < s->nin + (s->bias >= 0); k++) {
            int x = k < s->nin ? s->in[k] : s->bias;
            if (x >= 0 && p->slots[x].view_of >= 0)
                x = p->slots[x].view_of;
            if (x >= 0 && p->slots[x].kind == SLOT_ARENA && last_use[x] == i &&
                p->slots[x].offset >= 0) {
                if (!fl_free(&fl, p->slots[x].offset, npu_tensor_nbytes(&p->slots[x].t)))
                    goto err;
                p->slots[x].offset = -2 - p->slots[x].offset; /* freed marker */
            }
        }
        for (int k = 0; k < s->nout; k++) {
            int x = s->out[k];
            if (p->slots[x].view_of >= 0)
                x = p->slots[x].view_of;
            if (last_use[x] == i && p->slots[x].offset >= 0) {
                if (!fl_free(&fl, p->slots[x].offset, npu_tensor_nbytes(&p->slots[x].t)))
                    goto err;
                p->slots[x].offset = -2 - p->slots[x].offset;
            }
        }
    }
    for (int i = 0; i < p->nslots; i++)
        if (p->slots[i].offset <= -2)
            p->slots[i].offset = -2 - p->slots[i].offset;
    for (int i = 0; i < p->nslots; i++)
        if (p->slots[i].view_of >= 0)
            p->slots[i].offset = p->slots[p->slots[i].view_of].offset + p->slots[i].view_off;
    /* Outputs that are constants or inputs are copied into session memory. */
    for (int i = 0; i < p->noutputs; i++) {
        struct exec_slot *sl = &p->slots[p->output_slot[i]];
        if (sl->kind != SLOT_ARENA)
            p->output_copy[i] = (int)fl_alloc(&fl, npu_tensor_nbytes(&sl->t));
    }
    p->arena_bytes = (size_t)fl.top;
    free(fl.b);
    free(slot_of);
    free(last_use);
    free(order);
    free(fuse);
    free(skip);
    free(pw_of);
    *out = p;
    return NPU_OK;
err:
    free(fl.b);
    free(slot_of);
    free(last_use);
    free(order);
    free(fuse);
    free(skip);
    free(pw_of);
    p->g = NULL; /* the caller still owns g on failure */
    exec_plan_free(p);
    return st;
}

/* ---- running --------------------------------------------------------------------- */

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static enum npu_status
run1(struct npu_cpu_ctx *ctx, enum npu_op op, const struct npu_attrs *a, const struct npu_tensor *x,
     const struct npu_tensor *y, struct npu_tensor *o)
{
    const struct npu_tensor *in[2] = {x, y};
    struct npu_tensor *out[1] = {o};
    return npu_cpu_run(ctx, op, a, in, y ? 2 : 1, out, 1);
}

static struct npu_tensor
scalar(enum npu_dtype dt, void *buf, double v)
{
    struct npu_tensor t = {.dtype = dt, .ndim = 0, .data = buf};
    ir_store_f64(dt, buf, 0, v);
    return t;
}

static enum npu_status run_act(struct npu_cpu_ctx *ctx, const struct exec_step *s,
                               struct npu_tensor *o);

/* Fused ops without a kernel, as sequences of unfused kernel calls. */
static enum npu_status
decompose(struct npu_cpu_ctx *ctx, const struct exec_step *s, const struct npu_tensor *const *in,
          struct npu_tensor *o, void *scratch)
{
    static const struct npu_attrs none = {NULL, 0};
    enum npu_status st;
    unsigned char c0[8], c1[8], c2[8];
    enum npu_dtype dt = o->dtype;
    const struct npu_tensor *x = in[0];
    switch (s->node->op) {
    case NPU_OP_FUSED_SILU:
        if ((st = run1(ctx, NPU_OP_SIGMOID, &none, x, NULL, o)))
            return st;
        return run1(ctx, NPU_OP_MUL, &none, x, o, o);
    case NPU_OP_FUSED_GELU_TANH: {
        struct npu_tensor k3 = scalar(dt, c0, 0.044715), kc = scalar(dt, c1, sqrt(2.0 / M_PI)),
                          one = scalar(dt, c2, 1.0);
        if ((st = run1(ctx, NPU_OP_MUL, &none, x, x, o)) ||
            (st = run1(ctx, NPU_OP_MUL, &none, o, x, o)) ||
            (st = run1(ctx, NPU_OP_MUL, &none, o, &k3, o)) ||
            (st = run1(ctx, NPU_OP_ADD, &none, o, x, o)) ||
            (st = run1(ctx, NPU_OP_MUL, &none, o, &kc, o)) ||
            (st = run1(ctx, NPU_OP_TANH, &none, o, NULL, o)) ||
            (st = run1(ctx, NPU_OP_ADD, &none, o, &one, o)) ||
            (st = run1(ctx, NPU_OP_MUL, &none, o, x, o)))
            return st;
        struct npu_tensor half = scalar(dt, c0, 0.5);
        return run1(ctx, NPU_OP_MUL, &none, o, &half, o);
    }
    case NPU_OP_FUSED_ATTENTION: {
        const struct npu_tensor *q = in[0], *k = in[1], *v = in[2];
        const struct npu_tensor *mask = s->nin > 3 ? in[3] : NULL;
        int kr = k->ndim;
        int64_t perm[NPU_MAX_DIMS];
        for (int i = 0; i < kr; i++)
            perm[i] = i;
        perm[kr - 2] = kr - 1;
        perm[kr - 1] = kr - 2;
        struct npu_attr pa = {.name = "perm", .type = NPU_ATTR_INTS, .ints = perm, .n = (size_t)kr};
        struct npu_attrs ta = {&pa, 1};
        struct npu_tensor kt = *k;
        kt.dims[kr - 2] = k->dims[kr - 1];
        kt.dims[kr - 1] = k->dims[kr - 2];
        kt.data = scratch;
        struct npu_tensor sc = *o;
        sc.dims[sc.ndim - 1] = k->dims[kr - 2];
        sc.data = (char *)scratch + NPU_ALIGN(npu_tensor_nbytes(k), ALIGN);
        struct npu_tensor pr = sc;
        pr.data = (char *)sc.data + NPU_ALIGN(npu_tensor_nbytes(&sc), ALIGN);
        float scale = npu_node_float(s->node, "scale", 0);
        if (scale == 0)
            scale = 1.0f / sqrtf((float)q->dims[q->ndim - 1]);
        struct npu_tensor sct = scalar(dt, c0, scale);
        struct npu_attr sa = {.name = "axis", .type = NPU_ATTR_INT, .i = -1};
        struct npu_attrs smx = {&sa, 1};
        if ((st = run1(ctx, NPU_OP_TRANSPOSE, &ta, k, NULL, &kt)) ||
            (st = run1(ctx, NPU_OP_MATMUL, &none, q, &kt, &sc)) ||
            (st = run1(ctx, NPU_OP_MUL, &none, &sc, &sct, &sc)) ||
            (mask && (st = run1(ctx, NPU_OP_ADD, &none, &sc, mask, &sc))) ||
            (st = run1(ctx, NPU_OP_SOFTMAX, &smx, &sc, NULL, &pr)))
            return st;
        return run1(ctx, NPU_OP_MATMUL, &none, &pr, v, o);
    }
    default: return NPU_ERR_INTERNAL;
    }
}

static enum npu_status
run_act(struct npu_cpu_ctx *ctx, const struct exec_step *s, struct npu_tensor *o)
{
    if (s->act == NPU_OP_NONE)
        return NPU_OK;
    if (s->act == NPU_OP_CLIP) {
        const struct npu_tensor *in[3] = {o, &s->act_lo, &s->act_hi};
        struct npu_tensor *out[1] = {o};
        return npu_cpu_run(ctx, NPU_OP_CLIP, &s->act_attrs, in, 3, out, 1);
    }
    if ((s->act == NPU_OP_FUSED_SILU || s->act == NPU_OP_FUSED_GELU_TANH) &&
        !npu_cpu_supports(s->act)) {
        struct exec_step tmp = *s;
        struct npu_node fake = *s->node;
        fake.op = s->act;
        tmp.node = &fake;
        const struct npu_tensor *in[1] = {o};
        /* reads o before writing it element by element: safe in place */
        return decompose(ctx, &tmp, in, o, NULL);
    }
    return run1(ctx, s->act, &s->act_attrs, o, NULL, o);
}

enum npu_status
exec_run(const struct exec_plan *p, struct npu_cpu_ctx *ctx, void *arena, void *scratch,
         const struct npu_tensor *inputs, double *cpu_s)
{
    struct npu_tensor *t = malloc(sizeof(*t) * (size_t)(p->nslots + 1));
    if (!t)
        return NPU_ERR_NOMEM;
    for (int i = 0; i < p->nslots; i++) {
        const struct exec_slot *s = &p->slots[i];
        t[i] = s->t;
        if (s->kind == SLOT_ARENA)
            t[i].data = s->offset >= 0 ? (char *)arena + s->offset : NULL;
        else if (s->kind == SLOT_INPUT)
            t[i].data = inputs[s->input].data;
    }
    double busy = 0;
    enum npu_status st = NPU_OK;
    for (int i = 0; i < p->nsteps && !st; i++) {
        const struct exec_step *s = &p->steps[i];
        const struct npu_tensor *in[64];
        struct npu_tensor *out[64];
        if (s->nin > 64 || s->nout > 64) {
            st = NPU_ERR_UNSUPPORTED;
            break;
        }
        for (int k = 0; k < s->nin; k++)
            in[k] = s->in[k] >= 0 ? &t[s->in[k]] : NULL;
        for (int k = 0; k < s->nout; k++)
            out[k] = &t[s->out[k]];
        double t0 = now();
        if (s->cat_in_place)
            ; /* the parts were written into the whole */
        else if (s->decompose)
            st = decompose(ctx, s, in, out[0], scratch);
        else if (s->pwdw)
            st = npu_cpu_run_pw_dw(ctx, s->prep, &s->pw_attrs, in[0], in[1], in[2], &s->attrs,
                                   in[3], in[4], out[0]);
        else
            st = npu_cpu_run_prep(ctx, s->prep, s->op, &s->attrs, in, s->nin, out, s->nout);
        if (!st && s->bias >= 0)
            st = run1(ctx, NPU_OP_ADD, &(struct npu_attrs){NULL, 0}, out[0], &t[s->bias], out[0]);
        if (!st)
            st = run_act(ctx, s, out[0]);
        busy += now() - t0;
        if (st)
            ir_node_err(s->node, "CPU kernel failed: %s", npu_status_str(st));
    }
    for (int i = 0; !st && i < p->noutputs; i++) {
        if (p->output_copy[i] < 0)
            continue;
        struct npu_tensor *src = &t[p->output_slot[i]];
        memcpy((char *)arena + p->output_copy[i], src->data, (size_t)npu_tensor_nbytes(src));
    }
    free(t);
    if (cpu_s)
        *cpu_s = busy;
    return st;
}
