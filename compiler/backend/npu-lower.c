/* SPDX-License-Identifier: MIT */
/*
 * npu-lower.c: the lowering driver (docs/npu-backend-contracts.md, contract 2) and the helpers
 * handlers use to build rk.* nodes.
 *
 * The driver walks the graph in topological order. A node with device=npu
 * is handed to its handler's lower(), which inserts rk.* nodes before it,
 * reads its inputs through npu_lower_input (rk.ToNpu for host values, the
 * existing NPU copy otherwise) and declares its results with
 * npu_lower_result (an rk.ToHost now defines the original output for host
 * readers). The original node is then removed. When a handler refuses, the
 * node stays on the CPU. Finally boundary nodes nobody reads are removed, so
 * values that flow NPU -> NPU never visit the host.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-be-priv.h"
#include "npu-dpu-ops.h"

static const struct npu_backend_options default_opts;

/* ---- the handler-facing helpers ----------------------------------------------- */

enum npu_status
npu_lower_refuse(const struct npu_node *n, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    npu_info(NPU_BE_DOM, "node '%s' (%s) stays on the CPU: %s", n->name, npu_op_name(n->op), buf);
    return NPU_ERR_UNSUPPORTED;
}

static enum npu_status
map_grow(struct npu_lower_ctx *cx, int id)
{
    if (id < cx->n_npu_of)
        return NPU_OK;
    int n = NPU_MAX(id + 1, cx->n_npu_of * 2);
    struct npu_value **m = realloc(cx->npu_of, sizeof(*m) * (size_t)n);
    if (!m)
        return NPU_ERR_NOMEM;
    memset(m + cx->n_npu_of, 0, sizeof(*m) * (size_t)(n - cx->n_npu_of));
    cx->npu_of = m;
    cx->n_npu_of = n;
    return NPU_OK;
}

static struct npu_value *
map_get(const struct npu_lower_ctx *cx, const struct npu_value *v)
{
    return v->id < cx->n_npu_of ? cx->npu_of[v->id] : NULL;
}

struct npu_value *
npu_lower_lookup(const struct npu_lower_ctx *cx, struct npu_value *v)
{
    if (!v)
        return NULL;
    if (npu_rk_value(v))
        return v;
    return map_get(cx, v);
}

struct npu_node *
npu_lower_new(struct npu_lower_ctx *cx, struct npu_node *before, enum npu_op op, const char *name,
              struct npu_value *const *in, int nin, int nout)
{
    const char *names[8] = {0};
    char buf[8][96];
    if (nout > 8)
        return NULL;
    /* an unnamed source node (many ONNX exports leave names empty): its rk.* nodes are
     * named after the value it computes, which is what --emit=ir and npu-bench's per-op
     * rows (task names) then show; lowerings insert before the node they lower */
    if ((!name || !*name) && before && !npu_op_is_rk(before->op) && before->nout > 0 &&
        before->out[0] && before->out[0]->name)
        name = before->out[0]->name;
    for (int i = 0; i < nout; i++) {
        snprintf(buf[i], sizeof(buf[i]), "%.80s%s%.*d", name && *name ? name : "rk",
                 i ? ".p" : ".npu", i ? 1 : 0, i);
        names[i] = buf[i];
    }
    struct npu_node *n = npu_node_new(cx->g, op, name, in, nin, nout, names);
    if (!n)
        return NULL;
    n->device = NPU_DEVICE_NPU;
    npu_graph_insert_before(cx->g, before, n);
    return n;
}

enum npu_status
npu_lower_done(struct npu_lower_ctx *cx, struct npu_node *n)
{
    return npu_infer_node(cx->g, n);
}

static bool
same_view(const uint32_t *a, const uint32_t *b)
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

struct npu_value *
npu_lower_input(struct npu_lower_ctx *cx, struct npu_node *before, struct npu_value *v,
                const uint32_t *view, enum npu_dtype dt)
{
    uint32_t want[3], have[3];
    if (!v)
        return NULL;
    if (dt == NPU_DTYPE_UNDEFINED)
        dt = npu_dtype_is_float(v->t.dtype) ? NPU_DTYPE_FP16 : v->t.dtype;
    if (view) {
        memcpy(want, view, sizeof(want));
    } else if (!npu_rk_canonical_view(&v->t, want)) {
        npu_info(NPU_BE_DOM, "value '%s' has no NC1HWC2 view", v->name);
        return NULL;
    }
    if (npu_rk_value(v)) {
        /* already on the NPU (a result read directly) */
        if (npu_rk_view(v, have) && same_view(have, want) && v->t.dtype == dt)
            return v;
        npu_info(NPU_BE_DOM, "NPU value '%s' is needed in another view or type", v->name);
        return NULL;
    }
    struct npu_value *c = map_get(cx, v);
    if (c && npu_rk_view(c, have) && same_view(have, want) && c->t.dtype == dt)
        return c;
    if (c && c->producer && c->producer->op != NPU_OP_RK_TO_NPU) {
        /* An NPU result in another view: this needs a relayout op (the DPU
         * data-movement lowering), not a round trip through the host. */
        npu_info(NPU_BE_DOM, "value '%s' lives on the NPU in another view", v->name);
        return NULL;
    }
    /* A new rk.ToNpu, placed right after v's producer (or at the top for
     * graph inputs) so that every later reader can share it. */
    struct npu_node *pos = before;
    if (v->kind == NPU_VALUE_NODE && v->producer && v->producer->attached)
        pos = v->producer->next;
    else if (v->kind == NPU_VALUE_INPUT)
        pos = cx->g->head;
    char name[128];
    snprintf(name, sizeof(name), "%.100s.to_npu", v->name);
    struct npu_node *n = npu_lower_new(cx, pos ? pos : before, NPU_OP_RK_TO_NPU, name, &v, 1, 1);
    if (!n)
        return NULL;
    int64_t vw[3] = {want[0], want[1], want[2]};
    uint32_t canon[3];
    if (npu_node_set_string(cx->g, n, "dtype", npu_dtype_name(dt)) ||
        (!(npu_rk_canonical_view(&v->t, canon) && same_view(canon, want)) &&
         npu_node_set_ints(cx->g, n, "view", vw, 3)) ||
        npu_lower_done(cx, n))
        return NULL;
    if (!c && map_grow(cx, v->id) == NPU_OK)
        cx->npu_of[v->id] = n->out[0];
    return n->out[0];
}

enum npu_status
npu_lower_result(struct npu_lower_ctx *cx, struct npu_node *orig, int idx,
                 struct npu_value *npu_val)
{
    struct npu_value *v = orig->out[idx];
    enum npu_status st = map_grow(cx, v->id);
    if (st)
        return st;
    char name[128];
    snprintf(name, sizeof(name), "%.100s.to_host", v->name);
    struct npu_node *h = npu_node_new(cx->g, NPU_OP_RK_TO_HOST, name, &npu_val, 1, 1, NULL);
    if (!h)
        return NPU_ERR_NOMEM;
    h->device = NPU_DEVICE_NPU;
    npu_graph_insert_before(cx->g, orig, h);
    npu_node_set_output(h, 0, v);
    if ((st = npu_node_set_string(cx->g, h, "dtype", npu_dtype_name(v->t.dtype))) ||
        (st = npu_lower_done(cx, h)))
        return st;
    cx->npu_of[v->id] = npu_val;
    return NPU_OK;
}

struct npu_value *
npu_lower_const(struct npu_lower_ctx *cx, const char *name, enum npu_dtype dt, int ndim,
                const int64_t *dims, const void *data)
{
    struct npu_tensor t = {.dtype = dt, .ndim = ndim};
    for (int i = 0; i < ndim; i++)
        t.dims[i] = dims[i];
    t.data = (void *)data;
    return npu_graph_add_const_weights(cx->g, name, &t);
}

/* ---- support, cost, partition -------------------------------------------------- */

bool
npu_be_refuse(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool
used(const struct npu_value *v)
{
    return v && (v->nusers || v->is_output);
}

/* Whether input slot `slot` of node u is a quantisation parameter (scale or zero point)
 * read by the op: QuantizeLinear / DequantizeLinear 1-2, QLinearMatMul / QLinearConv
 * 1-2, 4-5, 6-7 (ONNX operator specs). */
static bool
quant_param_slot(const struct npu_node *u, int slot)
{
    switch (u->op) {
    case NPU_OP_QUANTIZE_LINEAR:
    case NPU_OP_DEQUANTIZE_LINEAR: return slot == 1 || slot == 2;
    case NPU_OP_QLINEAR_MATMUL:
    case NPU_OP_QLINEAR_CONV:
        return slot == 1 || slot == 2 || slot == 4 || slot == 5 || slot == 6 || slot == 7;
    default: return false;
    }
}

static bool
reduces(enum npu_op op)
{
    switch (op) {
    case NPU_OP_REDUCE_MAX:
    case NPU_OP_REDUCE_MIN:
    case NPU_OP_REDUCE_MEAN:
    case NPU_OP_REDUCE_SUM:
    case NPU_OP_REDUCE_PROD:
    case NPU_OP_REDUCE_L2:
    case NPU_OP_REDUCE_SUM_SQUARE:
    case NPU_OP_ARGMAX:
    case NPU_OP_ARGMIN: return true;
    default: return false;
    }
}

/* The quantising node whose scale or zero point v flows into within `depth` more nodes,
 * or NULL. The walk does not continue through reductions: their inputs are data (whose
 * fp16 rounding the rest of the graph tolerates), their results statistics. */
static const struct npu_node *
feeds_quant_param(const struct npu_value *v, int depth, int *budget)
{
    if (!v || depth <= 0)
        return NULL;
    for (int i = 0; i < v->nusers; i++) {
        const struct npu_node *u = v->users[i];
        if (--*budget < 0)
            return NULL;
        for (int k = 0; k < u->nin; k++)
            if (u->in[k] == v && quant_param_slot(u, k))
                return u;
        if (reduces(u->op))
            continue;
        for (int k = 0; k < u->nout; k++) {
            const struct npu_node *q = feeds_quant_param(u->out[k], depth - 1, budget);
            if (q)
                return q;
        }
    }
    return NULL;
}

bool
npu_be_common_ok(const struct npu_graph *g, const struct npu_node *n, bool integer_op, char *why,
                 size_t why_len)
{
    (void)g;
    /* facts §2.9: the NPU's element types are int8 / int16 / fp16 (fp32 accumulation and
     * fp32 DPU stages); a double tensor would go through fp16 (range 65504, 11 bits) and
     * lose what made it double: it runs on the CPU */
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] && n->in[k]->t.dtype == NPU_DTYPE_FP64)
            return npu_be_refuse(why, why_len,
                                 "input '%s' is float64: the NPU has no fp64 (fp16 "
                                 "would lose its range and precision)",
                                 n->in[k]->name);
    for (int k = 0; k < n->nout; k++) {
        const struct npu_value *o = n->out[k];
        if (!used(o))
            continue;
        if (o->t.dtype == NPU_DTYPE_FP64)
            return npu_be_refuse(why, why_len,
                                 "output '%s' is float64: the NPU has no fp64 (fp16 "
                                 "would lose its range and precision)",
                                 o->name);
        /* the float pipeline stores fp16 / fp32 results only; integer ops check theirs */
        if (!integer_op && o->t.dtype != NPU_DTYPE_FP32 && o->t.dtype != NPU_DTYPE_FP16)
            return npu_be_refuse(why, why_len,
                                 "output '%s' is %s: the NPU path of %s makes fp16 / "
                                 "fp32 values only",
                                 o->name, npu_dtype_name(o->t.dtype), npu_op_name(n->op));
    }
    /* a value that becomes a quantisation parameter at run time (DynamicQuantizeLinear's
     * expansion: scale = (max - min) / 255, zero point = round(-min / scale)) is shared by
     * every element it quantises: its fp16 rounding (2^-11 relative) moves x / scale by up
     * to 0.12 of a step for |x / scale| <= 255, so whole elements round to the next
     * integer; computed in fp32 on the CPU it matches the reference */
    if (!integer_op) {
        int budget = 256;
        for (int k = 0; k < n->nout; k++) {
            const struct npu_node *q = feeds_quant_param(n->out[k], 8, &budget);
            if (q)
                return npu_be_refuse(why, why_len,
                                     "its result feeds the scale / zero point of %s "
                                     "'%s': a quantisation parameter computed in fp16 moves every "
                                     "quantised value",
                                     npu_op_name(q->op),
                                     q->name && q->name[0] ? q->name : "(unnamed)");
        }
    }
    return true;
}

bool
npu_backend_supports(const struct npu_graph *g, const struct npu_node *n,
                     const struct npu_backend_options *o, char *why, size_t why_len)
{
    const struct npu_op_handler *h = npu_op_handler(n->op);
    if (!o)
        o = &default_opts;
    if (!h || !h->supports) {
        if (why && why_len)
            snprintf(why, why_len, "no NPU handler for %s", npu_op_name(n->op));
        return false;
    }
    if (npu_be_hw_refused(n, o, why, why_len))
        return false;
    /* a dry run whose refusal leaves the node on the CPU, with the reason in why: the
     * emitters' refusals on the way are no errors of the compile (NPU_DEBUG=debug shows
     * them, --explain gives why) */
    size_t mark = npu_log_probe_begin();
    bool ok = h->supports(g, n, o, why, why_len);
    npu_log_probe_end(mark, false);
    return ok;
}

double
npu_backend_cost(const struct npu_graph *g, const struct npu_node *n,
                 const struct npu_backend_options *o)
{
    const struct npu_op_handler *h = npu_op_handler(n->op);
    if (!h || !h->cost)
        return -1;
    /* a dry run too: a refused lowering prices as -1 (no NPU cost), not an error */
    size_t mark = npu_log_probe_begin();
    double s = h->cost(g, n, o ? o : &default_opts);
    npu_log_probe_end(mark, false);
    return s;
}

enum npu_status
npu_partition_supported(struct npu_graph *g, const struct npu_backend_options *o)
{
    /* supports() reads who uses each output (unused outputs, what a result feeds) */
    enum npu_status st = npu_graph_update_uses(g);
    if (st)
        return st;
    npu_graph_for_each_node (g, n) {
        if (n->device != NPU_DEVICE_ANY)
            continue;
        char why[200];
        n->device =
            npu_backend_supports(g, n, o, why, sizeof(why)) ? NPU_DEVICE_NPU : NPU_DEVICE_CPU;
        if (n->device == NPU_DEVICE_CPU)
            npu_dbg(NPU_BE_DOM, "node '%s' (%s) on the CPU: %s", n->name, npu_op_name(n->op), why);
    }
    return NPU_OK;
}

/* ---- the lowering passes (listed in order by the back-end pipeline, driver/) ------------ */

/* Removes boundary nodes nobody reads (an rk.ToHost whose result only NPU
 * nodes needed, an rk.ToNpu made for a refused lowering). */
enum npu_status
npu_be_pass_prune_boundaries(struct npu_graph *g)
{
    bool again = true;
    while (again) {
        again = false;
        enum npu_status st = npu_graph_update_uses(g);
        if (st)
            return st;
        npu_graph_for_each_node_safe (g, n, tmp) {
            if (n->op != NPU_OP_RK_TO_HOST && n->op != NPU_OP_RK_TO_NPU)
                continue;
            if (n->out[0]->nusers || n->out[0]->is_output)
                continue;
            npu_graph_remove(g, n);
            again = true;
        }
    }
    npu_graph_gc_values(g);
    return npu_graph_update_uses(g);
}

enum npu_status
npu_be_pass_lower(struct npu_graph *g, const struct npu_backend_options *o)
{
    struct npu_lower_ctx cx = {.g = g, .o = o ? o : &default_opts};
    npu_backend_register();
    enum npu_status st = npu_graph_update_uses(g);
    if (st)
        return st;
    npu_graph_for_each_node_safe (g, n, tmp) {
        if (npu_op_is_rk(n->op))
            continue;
        if (n->device == NPU_DEVICE_ANY) {
            /* made by an earlier lowering (e.g. an activation split off) */
            n->device = npu_backend_supports(g, n, cx.o, NULL, 0) ? NPU_DEVICE_NPU : NPU_DEVICE_CPU;
        }
        if (n->device != NPU_DEVICE_NPU)
            continue;
        const struct npu_op_handler *h = npu_op_handler(n->op);
        if (!h || !h->lower) {
            n->device = NPU_DEVICE_CPU;
            continue;
        }
        /* a refused lowering leaves the node on the CPU (said at NPU_DEBUG=msgs); any other
         * failure is the compile's, and its reasons are logged as errors */
        size_t mark = npu_log_probe_begin();
        st = h->lower(&cx, n);
        if (st == NPU_ERR_UNSUPPORTED) {
            const char *r = npu_log_probe_reasons(mark);
            if (r[0])
                npu_info(NPU_BE_DOM, "node '%s' (%s) stays on the CPU: %.*s", n->name,
                         npu_op_name(n->op), (int)strcspn(r, "\n"), r);
        }
        npu_log_probe_end(mark, st != NPU_OK && st != NPU_ERR_UNSUPPORTED);
        if (st == NPU_ERR_UNSUPPORTED) {
            n->device = NPU_DEVICE_CPU;
            /* the CPU reads B centred as the packer would have (dpu-center.c) */
            if ((st = npu_dpu_centre_pending(g, n)))
                goto out;
            continue;
        }
        if (st)
            goto out;
        /* a handler may insert nodes after n (a split-off activation): visit them */
        tmp = n->next;
        npu_graph_remove(g, n);
        if ((st = npu_graph_update_uses(g)))
            goto out;
        /* the constants it read that nobody reads now: a block the graph adopted goes at
         * once (an LLM's fp32 weights, once their packed copies exist) */
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] && n->in[i]->kind == NPU_VALUE_CONST)
                (void)npu_graph_free_unused_const(g, n->in[i]);
    }
    st = NPU_OK; /* a refusal of the last node is not the pass's failure */
out:
    free(cx.npu_of);
    return st;
}

enum npu_status
npu_rk_conv_widen_outputs(struct npu_graph *gr)
{
    /* A conv whose result only goes to the host as fp32 writes fp32 directly
     * (facts §2.9: fp16 in, fp32 out is a proven combination): no fp16
     * rounding of the result and no extra conversion. */
    npu_graph_for_each_node (gr, n) {
        if (n->op != NPU_OP_RK_CONV)
            continue;
        const struct npu_value *y = n->out[0];
        /* (a dequantised int8 product writes fp16 only: its one TRM-inferred pattern) */
        if (y->t.dtype != NPU_DTYPE_FP16 || !y->nusers || y->is_output ||
            npu_node_int(n, "q_deq", 0))
            continue;
        bool all = true;
        for (int u = 0; u < y->nusers && all; u++) {
            const struct npu_node *h = y->users[u];
            all = h->op == NPU_OP_RK_TO_HOST && h->out[0]->t.dtype == NPU_DTYPE_FP32;
        }
        if (!all)
            continue;
        enum npu_status st = npu_node_set_string(gr, n, "dtype", "f32");
        if (!st)
            st = npu_infer_node(gr, n);
        if (!st)
            st = npu_node_set_float(gr, n, "modeled_us", (float)(rk_conv_modeled(n) * 1e6));
        for (int u = 0; !st && u < y->nusers; u++)
            st = npu_infer_node(gr, y->users[u]);
        if (st)
            return st;
    }
    return NPU_OK;
}

enum npu_status
npu_be_pass_center_streams(struct npu_graph *g, const struct npu_backend_options *o)
{
    if (o && o->no_center_fold)
        return NPU_OK;
    return npu_dpu_center_streams(g);
}

/* ---- npu.Attention on the CPU reading a resident cache in place -------------------------
 * K or V of a CPU npu.Attention that an rk.ToHost converts from an in-place npu.StateWrite
 * (the state's own bytes in NPU_BUF_STATE: a KV cache appended by the NPU), fp16 NC1HWC2 rows
 * (view (head_dim, heads x slots, 1), head_dim a multiple of 8): the attention reads the NPU
 * value itself and the conversion goes (the runtime syncs it from the device and reads it
 * in place, npu-program-cpu.c prog_cpu_in_place_why). Only when both K and V qualify and
 * the attention is their only reader. */

static struct npu_value *
attn_in_place_src(const struct npu_node *a, int k)
{
    const struct npu_value *v = a->in[k];
    const struct npu_node *h = v ? v->producer : NULL;
    if (!h || h->op != NPU_OP_RK_TO_HOST || v->is_output || v->nusers != 1 ||
        v->t.dtype != NPU_DTYPE_FP32 || v->t.ndim != 3)
        return NULL;
    struct npu_value *nv = h->in[0];
    const struct npu_node *w = nv ? nv->producer : NULL;
    if (!w || !npu_op_is_rk(w->op) || !npu_node_int(w, "inplace", 0) ||
        nv->t.dtype != NPU_DTYPE_FP16 || nv->t.ndim != 3 || !npu_rk_packed(nv))
        return NULL;
    const int64_t H = v->t.dims[0], T = v->t.dims[1], D = v->t.dims[2];
    uint32_t view[3];
    if (memcmp(nv->t.dims, v->t.dims, sizeof(int64_t) * 3) ||
        !(npu_rk_view(nv, view) || npu_rk_canonical_view(&nv->t, view)) || view[0] != D ||
        view[1] != H * T || view[2] != 1 || D % 8 || npu_rk_view_order(nv) != NPU_VIEW_HWC)
        return NULL;
    return nv;
}

static enum npu_status
attn_reads_state(struct npu_graph *g)
{
    bool changed = false;
    npu_graph_for_each_node (g, a) {
        if (a->op != NPU_OP_FUSED_ATTENTION || a->device != NPU_DEVICE_CPU || a->nin != 4 ||
            !a->in[0] || !a->in[3] || a->in[1] == a->in[2] || npu_node_int(a, "is_causal", 0))
            continue;
        const struct npu_value *q = a->in[0], *y = a->out[0];
        struct npu_value *nk = attn_in_place_src(a, 1), *nv = attn_in_place_src(a, 2);
        if (!nk || !nv || q->t.dtype != NPU_DTYPE_FP32 || q->t.ndim != 3 ||
            q->t.dims[0] != a->in[1]->t.dims[0] || q->t.dims[2] != a->in[1]->t.dims[2] ||
            memcmp(a->in[1]->t.dims, a->in[2]->t.dims, sizeof(int64_t) * 3) ||
            a->in[3]->t.dtype != NPU_DTYPE_FP32 ||
            npu_tensor_numel(&a->in[3]->t) != q->t.dims[1] * a->in[1]->t.dims[1] ||
            a->in[3]->t.dims[a->in[3]->t.ndim - 1] != a->in[1]->t.dims[1] ||
            y->t.dtype != NPU_DTYPE_FP32 || y->t.ndim != 3 ||
            memcmp(y->t.dims, q->t.dims, sizeof(int64_t) * 3))
            continue;
        struct npu_node *hk = a->in[1]->producer, *hv = a->in[2]->producer;
        a->in[1] = nk;
        a->in[2] = nv;
        npu_graph_remove(g, hk);
        npu_graph_remove(g, hv);
        changed = true;
    }
    if (!changed)
        return NPU_OK;
    enum npu_status st = npu_graph_update_uses(g);
    if (!st)
        npu_graph_gc_values(g);
    return st;
}

enum npu_status
npu_be_pass_widen_outputs(struct npu_graph *g)
{
    enum npu_status st = npu_rk_conv_widen_outputs(g);
    return st ? st : attn_reads_state(g);
}
