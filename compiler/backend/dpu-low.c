/* SPDX-License-Identifier: MIT */
/*
 * dpu-low.c: the helpers the DPU lowerings share (dpu-low.h): the view a value has on the
 * NPU, or will have (dry runs predict it by a dry lowering of the producer), reading an
 * input in a view, rk.Dpu aliases, constants laid out for the DPU (broadcast values,
 * per-channel operand arrays, fp16 maps), finishing a lowering, and a LUT pass.
 */
#include <math.h>
#include <stdio.h>
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

/* Predictions made inside one outermost prediction, by (value, depth): a dry lowering asks
 * for its inputs' views more than once (dl_input, dl_view), and each asks its producer's
 * the same way, so without this a chain costs 2^depth dry lowerings per node (a 500-node
 * Relu chain: 67 M register writes emitted). A prediction depends on the value and the depth
 * alone (dry lowerings see no compile context and change nothing), and the graph does not
 * change while the outermost one runs, so a remembered answer is the one it would compute.
 * The table lives for that one outermost call (per thread) and is then forgotten, or, inside
 * an npu_backend_dry_scope, until the scope closes (the caller promises the graph does not
 * change in between: the partitioner opens one over its whole pricing loop, so a producer
 * predicted by several readers, and at several depths, is dry-lowered once per depth).
 * Inside a scope the answers of supports() dry runs (npu_dpu_supports: a fresh builder at
 * depth 0, which dl_alias_ok asks for every reader of a view) are kept as well, by (node,
 * no_center), with their reason. Both tables are hashed and grow; they are freed when
 * forgotten. */
struct pv_entry {
    const void *key; /* a value (predictions) or a node (supports answers) */
    int depth;       /* predictions: the depth or PV_ANY; supports answers: -1 - no_center */
    int rel;         /* predictions: how many levels deeper the nested ones went */
    bool ok;
    struct vmap vm;
    char *why; /* supports answers: the reason (malloc'd), or NULL */
};
struct pv_table {
    int n, cap; /* entries used / allocated */
    struct pv_entry *e;
    uint32_t *slot; /* 2 x cap slots: entry index + 1, 0 empty */
};
/* Two tables: `keep` (predictions valid at every depth, supports answers) lives as long
 * as the scope; `cut` (predictions cut at the depth limit, each valid for its own depth
 * alone) only while one node is priced (npu_backend_dry_scope_next): in a chain longer
 * than the cut every prediction is cut and few are shared across the nodes priced, and
 * one table of all of them for the whole loop made every lookup a cache miss (20,000-node
 * chain: memo_find 6.7 % of the compile, +5 %). */
static _Thread_local struct {
    int active; /* nesting of predict_view calls */
    int scope;  /* open npu_backend_dry_scope calls */
    struct pv_table keep, cut;
} pv_memo;

static void
memo_forget(struct pv_table *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->e[i].why);
    free(t->e);
    free(t->slot);
    t->e = NULL;
    t->slot = NULL;
    t->n = t->cap = 0;
}

static uint32_t
memo_hash(const void *key, int depth)
{
    uint64_t h =
        ((uint64_t)(uintptr_t)key ^ ((uint64_t)(uint32_t)depth << 48)) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32);
}

static struct pv_entry *
memo_find(const struct pv_table *t, const void *key, int depth)
{
    if (!t->cap)
        return NULL;
    uint32_t mask = 2 * (uint32_t)t->cap - 1;
    for (uint32_t i = memo_hash(key, depth) & mask;; i = (i + 1) & mask) {
        uint32_t k = t->slot[i];
        if (!k)
            return NULL;
        struct pv_entry *e = &t->e[k - 1];
        if (e->key == key && e->depth == depth)
            return e;
    }
}

/* A new entry for (key, depth) (not in the table), or NULL when out of memory (the answer
 * is then simply not remembered). */
static struct pv_entry *
memo_add(struct pv_table *t, const void *key, int depth)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        struct pv_entry *e = realloc(t->e, (size_t)cap * sizeof(*e));
        if (!e)
            return NULL;
        t->e = e;
        uint32_t *slot = calloc(2 * (size_t)cap, sizeof(*slot));
        if (!slot)
            return NULL;
        free(t->slot);
        t->slot = slot;
        t->cap = cap;
        uint32_t mask = 2 * (uint32_t)cap - 1;
        for (int k = 0; k < t->n; k++) {
            uint32_t i = memo_hash(e[k].key, e[k].depth) & mask;
            while (slot[i])
                i = (i + 1) & mask;
            slot[i] = (uint32_t)k + 1;
        }
    }
    uint32_t mask = 2 * (uint32_t)t->cap - 1, i = memo_hash(key, depth) & mask;
    while (t->slot[i])
        i = (i + 1) & mask;
    struct pv_entry *e = &t->e[t->n];
    memset(e, 0, sizeof(*e));
    e->key = key;
    e->depth = depth;
    t->slot[i] = (uint32_t)++t->n;
    return e;
}

void
npu_backend_dry_scope(bool open)
{
    if (open)
        pv_memo.scope++;
    else if (pv_memo.scope > 0 && --pv_memo.scope == 0 && !pv_memo.active) {
        memo_forget(&pv_memo.cut);
        memo_forget(&pv_memo.keep);
    }
}

void
npu_backend_dry_scope_next(void)
{
    if (!pv_memo.active)
        memo_forget(&pv_memo.cut);
}

bool
dl_supports_memo(const struct npu_node *n, bool no_center, bool *ok, char *why, size_t why_len)
{
    const struct pv_entry *e =
        pv_memo.scope ? memo_find(&pv_memo.keep, n, -1 - (int)no_center) : NULL;
    if (!e)
        return false;
    *ok = e->ok;
    if (why && why_len)
        snprintf(why, why_len, "%s", e->why ? e->why : "");
    return true;
}

void
dl_supports_remember(const struct npu_node *n, bool no_center, bool ok, const char *why)
{
    struct pv_entry *e = pv_memo.scope ? memo_add(&pv_memo.keep, n, -1 - (int)no_center) : NULL;
    if (!e)
        return;
    e->ok = ok;
    e->why = why && why[0] ? strdup(why) : NULL;
    if (why && why[0] && !e->why)
        e->key = NULL; /* out of memory: never found, computed again */
}

/* Where a prediction's depth matters: only at the cut (a prediction deeper than
 * PV_MAX_DEPTH answers false). A prediction of v made at depth d whose dry lowering, and
 * every prediction nested in it, stayed clear of the cut (its deepest prediction at depth
 * d + rel <= PV_MAX_DEPTH) makes the same calls, one level shifted, at any depth d' with
 * d' + rel <= PV_MAX_DEPTH, and so gets the same answer (the dry lowerings read b->depth
 * only to tell the outermost lowering, depth 0, from a prediction's, and to predict): it is
 * remembered for every depth (PV_ANY with rel). One that was cut is remembered for its
 * depth alone. pv_acc collects, for the prediction being computed, the deepest depth its
 * nested predictions reached and whether one was cut. */
#define PV_MAX_DEPTH 8
#define PV_ANY (-1000)
static _Thread_local struct {
    int maxd;
    bool cut;
} pv_acc;

static void
remember(struct pv_table *t, const struct npu_value *v, int depth, bool ok, int rel,
         const struct vmap *vm)
{
    struct pv_entry *e = memo_add(t, v, depth);
    if (e) {
        e->ok = ok;
        e->rel = rel;
        if (ok)
            e->vm = *vm;
    }
}

/* Dry runs do not have the NPU values yet: the view a DPU-lowered producer will give its result
 * is predicted by a dry lowering of that producer (depth-limited). */
static bool
predict_view(const struct npu_value *v, struct vmap *vm, int depth)
{
    struct npu_node *p = v->producer;
    if (!p || v->producer_idx != 0 || npu_op_is_rk(p->op))
        return false;
    const struct npu_op_handler *h = npu_op_handler(p->op);
    if (!h || h->lower != npu_dpu_lower || p->device == NPU_DEVICE_CPU)
        return false;
    if (depth > PV_MAX_DEPTH) {
        pv_acc.cut = true;
        return false;
    }
    const struct pv_entry *hit = memo_find(&pv_memo.keep, v, PV_ANY);
    if (hit && depth + hit->rel <= PV_MAX_DEPTH) {
        pv_acc.maxd = NPU_MAX(pv_acc.maxd, depth + hit->rel);
    } else if ((hit = memo_find(&pv_memo.cut, v, depth)) != NULL) {
        pv_acc.cut = true; /* only answers that were cut are kept by depth */
    }
    if (hit) {
        if (hit->ok)
            *vm = hit->vm;
        return hit->ok;
    }
    const int saved_maxd = pv_acc.maxd;
    const bool saved_cut = pv_acc.cut;
    pv_acc.maxd = depth;
    pv_acc.cut = false;
    pv_memo.active++;
    struct rkd sub;
    rkd_init(&sub, NULL, p);
    sub.depth = depth + 1;
    bool ok = dl_lower_any(&sub, p, NULL) == NPU_OK && !sub.err && sub.have_result;
    if (ok)
        *vm = *(const struct vmap *)sub.result_view;
    rkd_fini(&sub);
    const int maxd = pv_acc.maxd;
    const bool cut = pv_acc.cut;
    pv_acc.maxd = NPU_MAX(saved_maxd, maxd);
    pv_acc.cut = saved_cut || cut;
    if (--pv_memo.active == 0 && !pv_memo.scope) {
        memo_forget(&pv_memo.cut); /* the outermost prediction is done: forget */
        memo_forget(&pv_memo.keep);
    } else {
        remember(cut ? &pv_memo.cut : &pv_memo.keep, v, cut ? depth : PV_ANY, ok, maxd - depth, vm);
    }
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
dl_predicts(const struct npu_value *v, int depth, struct vmap *vm)
{
    return predict_view(v, vm, depth);
}

void
dl_copy(struct rkd *b, const struct npu_dpu_map *src, const struct npu_dpu_map *dst)
{
    struct npu_dpu_pass p;
    memset(&p, 0, sizeof(p));
    p.in = *src;
    p.out = *dst;
    rkd_pass(b, &p);
}

struct npu_value *
dl_lower_input(struct rkd *b, struct npu_value *v, const struct vmap *vm, enum npu_dtype dt,
               const char *as, struct why *w)
{
    struct npu_value *nv = npu_lower_input(b->cx, b->orig, v, vm->view, dt);
    if (!nv) {
        why_set(w, "input '%s' is not available on the NPU%s in view %ux%ux%u", v->name, as,
                vm->view[0], vm->view[1], vm->view[2]);
        return NULL;
    }
    if (npu_rk_view_order(nv) != vm->order) {
        why_set(w, "input '%s' has another element order on the NPU", v->name);
        return NULL;
    }
    if (dl_alias_kind(nv) == 2) {
        why_set(w, "input '%s' is a heads view only attention reads", v->name);
        return NULL;
    }
    /* read a view's bytes where they are: its source (same bytes) */
    return dl_source(nv);
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
        if (!(nv = dl_lower_input(b, v, vm, NPU_DTYPE_FP16, "", w)))
            return false;
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
    uint32_t o[3] = {0, 0, 0};
    for (int64_t i = 0; i < n && (scalar || chan); i++, dl_cyx_next(vm, o)) {
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
    uint32_t o[3] = {0, 0, 0};
    for (int64_t i = 0; i < n; i++, dl_cyx_next(vm, o)) {
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
