/* SPDX-License-Identifier: MIT */
/*
 * npu-partition.c: partitioning by cost (npu-partition.h). The estimate of a
 * placement d (one device per node) is
 *
 *   T(d) = sum_n cost(n, d[n])                  NPU: modeled (timing model v1),
 *                                               CPU: the CPU cost model (board
 *                                               model or measured)
 *        + sum_v convert(v) when v crosses      host conversion of v's bytes
 *        + 60 us * (NPU runs in graph order)    one submit per job (submit_overhead_s
 *                                               of npu/npu-timing.h, v1)
 *
 * and the search minimises it: start from every node on its cheaper side
 * (greedy), then repeatedly try flipping whole runs of same-side nodes
 * (which is how two NPU segments separated by a cheap CPU run merge into one
 * job, or how an NPU island too small to pay for its conversions and submit
 * goes back to the CPU) and single nodes, keeping any move that lowers T,
 * until none does. Such local moves can stop in a split placement (a run
 * flip needs the whole run movable, and a single flip may not pay alone:
 * test-partition's U A B C chain), so the same search also starts from
 * "every supported node on the NPU" and the cheaper end wins (ties go to the
 * greedy start). (Flipping the CPU runs on both sides of an NPU island at
 * once adds nothing: the savings of the two flips add up, so if neither pays
 * alone, both together do not either.)
 *
 * A candidate move is judged by its delta: the terms of T it can change (the
 * moved nodes' costs, the values they produce or use, the submits at and
 * right after the moved run), old and new, so a trial costs the size of the
 * move's neighbourhood instead of the whole graph (a chain of N nodes: N
 * trials per round, each O(1)). The decision must be the one the full
 * recomputation makes, T(d') < T(d) - 1e-12 with T summed in graph order in
 * doubles, because the placement decides the artifact's bytes. All terms are
 * non-negative, so each rounded full sum is within (terms) * eps * T of the
 * exact one; when the delta is further than twice that (plus its own
 * rounding) from -1e-12 the two decisions agree, and otherwise (a near-zero
 * move) the move is judged by recomputing T in full as before.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-partition.h"
#include "npu/npu-timing.h"

#define DOM "partition"
#define MAX_ROUNDS 64

struct pval {
    int producer; /* node index, -1 = graph input (host) */
    int *users;   /* node indices */
    int nusers;
    bool is_output;
    double conv_s;    /* conversion cost if it crosses */
    double to_host_s; /* the same, NPU producer to host readers (conv_s, or 0 read in place) */
};

struct pctx {
    int n;
    struct npu_node **nodes;
    bool *sup, *locked;
    double *npu_s, *cpu_s;
    struct pval *vals;
    int nvals;
    double submit_s;
    int *nv_off, *nv; /* CSR: values node i produces or uses: nv[nv_off[i] .. nv_off[i + 1]) */
    bool exact_ok;    /* every term finite and >= 0: deltas can be bounded (see the top) */
};

/* Search state for the incremental evaluation: the running T (approximate, used only to
 * size the rounding bound), the rounded full T of the current placement when known,
 * and a stamp per value to collect a move's values once. */
struct psearch {
    double cur;
    double full;
    bool full_ok;
    unsigned stamp;
    unsigned *mark;
    int *list;
};

/* T(d), and when att is non-NULL the per-node attribution of conversion
 * (att[2i]) and submit (att[2i+1]) costs. */
static double
total(const struct pctx *c, const uint8_t *d, double *att)
{
    double t = 0;
    if (att)
        memset(att, 0, sizeof(double) * 2 * (size_t)c->n);
    for (int i = 0; i < c->n; i++)
        t += d[i] ? c->npu_s[i] : c->cpu_s[i];
    for (int k = 0; k < c->nvals; k++) {
        const struct pval *v = &c->vals[k];
        int pd = v->producer >= 0 ? d[v->producer] : 0;
        int first_npu = -1;
        bool need_host = v->is_output;
        for (int u = 0; u < v->nusers; u++) {
            if (d[v->users[u]]) {
                if (first_npu < 0)
                    first_npu = v->users[u];
            } else {
                need_host = true;
            }
        }
        if (!pd && first_npu >= 0) {
            t += v->conv_s;
            if (att)
                att[2 * first_npu] += v->conv_s;
        } else if (pd && need_host) {
            t += v->to_host_s;
            if (att)
                att[2 * v->producer] += v->to_host_s;
        }
    }
    for (int i = 0; i < c->n; i++)
        if (d[i] && (i == 0 || !d[i - 1])) {
            t += c->submit_s;
            if (att)
                att[2 * i + 1] += c->submit_s;
        }
    return t;
}

static bool
real_supports(const struct npu_graph *g, const struct npu_node *n, char *why, size_t len,
              const struct npu_backend_options *bo)
{
    return npu_backend_supports(g, n, bo, why, len);
}

/* npu-partition.h. v: [heads, slots, head_dim] fp32 with head_dim a multiple of 8 (the
 * lowering's attn_reads_state, npu-lower.c, takes exactly these). */
bool
npu_partition_kv_read_in_place(const struct npu_value *v)
{
    const struct npu_node *w = v->kind == NPU_VALUE_NODE ? v->producer : NULL;
    if (!w || w->op != NPU_OP_STATE_WRITE || w->nin < 1 || !w->in[0] ||
        w->in[0]->kind != NPU_VALUE_INPUT || !w->in[0]->is_state || w->in[0]->nusers != 1 ||
        v->is_output || !v->nusers || v->t.dtype != NPU_DTYPE_FP32 || v->t.ndim != 3 ||
        v->t.dims[2] % 8)
        return false;
    for (int u = 0; u < v->nusers; u++) {
        const struct npu_node *a = v->users[u];
        if (a->op != NPU_OP_FUSED_ATTENTION || a->nin != 4 || a->in[0] == v || a->in[3] == v ||
            npu_node_int(a, "is_causal", 0))
            return false;
    }
    return true;
}

static enum npu_status
build(struct pctx *c, struct npu_graph *g, double rate)
{
    enum npu_status st = npu_graph_update_uses(g);
    if (st)
        return st;
    c->n = g->nnodes;
    c->nodes = calloc((size_t)c->n + 1, sizeof(*c->nodes));
    c->sup = calloc((size_t)c->n + 1, sizeof(bool));
    c->locked = calloc((size_t)c->n + 1, sizeof(bool));
    c->npu_s = calloc((size_t)c->n + 1, sizeof(double));
    c->cpu_s = calloc((size_t)c->n + 1, sizeof(double));
    c->vals = calloc((size_t)g->nvalues + 1, sizeof(*c->vals));
    if (!c->nodes || !c->sup || !c->locked || !c->npu_s || !c->cpu_s || !c->vals)
        return NPU_ERR_NOMEM;
    c->submit_s = npu_timing_model()->submit_overhead_s;
    int i = 0;
    npu_graph_for_each_node (g, n) {
        c->nodes[i] = n;
        n->pass_data = (void *)(intptr_t)i;
        i++;
    }
    for (int k = 0; k < g->nvalues; k++) {
        struct npu_value *v = g->values[k];
        if (v->kind == NPU_VALUE_CONST || (!v->nusers && !v->is_output))
            continue;
        struct pval *pv = &c->vals[c->nvals];
        pv->producer =
            v->kind == NPU_VALUE_NODE && v->producer ? (int)(intptr_t)v->producer->pass_data : -1;
        pv->is_output = v->is_output;
        pv->users = calloc((size_t)v->nusers + 1, sizeof(int));
        if (!pv->users)
            return NPU_ERR_NOMEM;
        for (int u = 0; u < v->nusers; u++) {
            int ui = (int)(intptr_t)v->users[u]->pass_data;
            bool dup = false;
            for (int q = 0; q < pv->nusers; q++)
                dup |= pv->users[q] == ui;
            if (!dup)
                pv->users[pv->nusers++] = ui;
        }
        int64_t nb = npu_tensor_nbytes(&v->t);
        pv->conv_s = nb > 0 ? (double)nb / rate : 0;
        /* a state input (a KV cache) read on the NPU stays resident in device memory
         * (codegen keeps it in NPU_BUF_STATE; the caller writes only its new rows): no
         * conversion per run */
        if (v->kind == NPU_VALUE_INPUT && v->is_state)
            pv->conv_s = 0;
        /* a cache appended in place on the NPU and read by CPU attentions as K / V: read
         * where it is (no conversion; the runtime syncs and reads the fp16 rows) */
        pv->to_host_s = npu_partition_kv_read_in_place(v) ? 0 : pv->conv_s;
        c->nvals++;
    }
    /* node -> values (as producer or user), each value listed once per node */
    c->nv_off = calloc((size_t)c->n + 2, sizeof(int));
    if (!c->nv_off)
        return NPU_ERR_NOMEM;
    for (int k = 0; k < c->nvals; k++) {
        const struct pval *pv = &c->vals[k];
        if (pv->producer >= 0)
            c->nv_off[pv->producer + 1]++;
        for (int u = 0; u < pv->nusers; u++)
            if (pv->users[u] != pv->producer)
                c->nv_off[pv->users[u] + 1]++;
    }
    for (int j = 0; j < c->n; j++)
        c->nv_off[j + 1] += c->nv_off[j];
    c->nv = calloc((size_t)c->nv_off[c->n] + 1, sizeof(int));
    int *fill = calloc((size_t)c->n + 1, sizeof(int));
    if (!c->nv || !fill) {
        free(fill);
        return NPU_ERR_NOMEM;
    }
    for (int k = 0; k < c->nvals; k++) {
        const struct pval *pv = &c->vals[k];
        if (pv->producer >= 0)
            c->nv[c->nv_off[pv->producer] + fill[pv->producer]++] = k;
        for (int u = 0; u < pv->nusers; u++)
            if (pv->users[u] != pv->producer)
                c->nv[c->nv_off[pv->users[u]] + fill[pv->users[u]]++] = k;
    }
    free(fill);
    return NPU_OK;
}

static bool
term_ok(double x)
{
    return isfinite(x) && x >= 0;
}

/* Whether every term T can add is finite and non-negative (then the rounding bound of
 * the top comment holds); called once the costs are known. */
static void
check_terms(struct pctx *c)
{
    bool ok = term_ok(c->submit_s);
    for (int i = 0; i < c->n && ok; i++)
        ok = term_ok(c->cpu_s[i]) && (!c->sup[i] || term_ok(c->npu_s[i]));
    for (int k = 0; k < c->nvals && ok; k++)
        ok = term_ok(c->vals[k].conv_s) && term_ok(c->vals[k].to_host_s);
    c->exact_ok = ok;
}

/* Value k's conversion term under d (as total() adds it). */
static double
val_term(const struct pctx *c, const uint8_t *d, int k)
{
    const struct pval *v = &c->vals[k];
    int pd = v->producer >= 0 ? d[v->producer] : 0;
    bool any_npu = false, need_host = v->is_output;
    for (int u = 0; u < v->nusers && !(any_npu && need_host); u++) {
        if (d[v->users[u]])
            any_npu = true;
        else
            need_host = true;
    }
    if (!pd && any_npu)
        return v->conv_s;
    if (pd && need_host)
        return v->to_host_s;
    return 0;
}

static void
pctx_free(struct pctx *c)
{
    for (int k = 0; k < c->nvals; k++)
        free(c->vals[k].users);
    free(c->vals);
    free(c->nodes);
    free(c->sup);
    free(c->locked);
    free(c->npu_s);
    free(c->cpu_s);
    free(c->nv_off);
    free(c->nv);
}

/* The terms of T that flipping nodes [a, b] can change, summed under d; collects the
 * values involved into ps->list on the first call of a move (collect). */
static double
local_terms(const struct pctx *c, struct psearch *ps, const uint8_t *d, int a, int b, bool collect,
            int *nlist)
{
    double t = 0;
    for (int i = a; i <= b; i++)
        t += d[i] ? c->npu_s[i] : c->cpu_s[i];
    if (collect) {
        ps->stamp++;
        *nlist = 0;
        for (int i = a; i <= b; i++)
            for (int q = c->nv_off[i]; q < c->nv_off[i + 1]; q++) {
                int k = c->nv[q];
                if (ps->mark[k] != ps->stamp) {
                    ps->mark[k] = ps->stamp;
                    ps->list[(*nlist)++] = k;
                }
            }
    }
    for (int q = 0; q < *nlist; q++)
        t += val_term(c, d, ps->list[q]);
    for (int i = a; i <= b + 1 && i < c->n; i++)
        if (d[i] && (i == 0 || !d[i - 1]))
            t += c->submit_s;
    return t;
}

/* Flips nodes [a, b] to `to` when that lowers T, deciding as a full recomputation
 * would (top comment); returns whether it did. */
static bool
try_move(const struct pctx *c, struct psearch *ps, uint8_t *d, int a, int b, uint8_t to)
{
    uint8_t save[1024];
    for (int i = a; i <= b; i++)
        if (c->locked[i] || (to && !c->sup[i]))
            return false;
    uint8_t *tmp = (b - a + 1) <= (int)sizeof(save) ? save : malloc((size_t)(b - a + 1));
    if (!tmp)
        return false;
    memcpy(tmp, d + a, (size_t)(b - a + 1));
    int nlist = 0;
    double old = local_terms(c, ps, d, a, b, true, &nlist);
    memset(d + a, to, (size_t)(b - a + 1));
    double nw = local_terms(c, ps, d, a, b, false, &nlist);
    double delta = nw - old;
    /* rounding of the two full sums (2n + nvals terms each, all >= 0), of the
     * threshold's subtraction and of the delta's own sums, with a factor 4 of slack */
    double nterms = 2.0 * c->n + c->nvals + 16;
    double bound = 4 * DBL_EPSILON *
                   (2 * nterms * (fabs(ps->cur) + fabs(delta)) + (b - a + nlist + 8) * (old + nw));
    bool ok, in_full = false;
    if (c->exact_ok && delta < -1e-12 - bound) {
        ok = true;
    } else if (c->exact_ok && delta > -1e-12 + bound) {
        ok = false;
    } else { /* too close to call from the delta: as before, in full */
        if (!ps->full_ok) {
            memcpy(d + a, tmp, (size_t)(b - a + 1));
            ps->full = total(c, d, NULL);
            ps->full_ok = true;
            memset(d + a, to, (size_t)(b - a + 1));
        }
        double t = total(c, d, NULL);
        ok = t < ps->full - 1e-12;
        if (ok)
            ps->full = t;
        in_full = true;
    }
    if (ok) {
        ps->cur += delta;
        ps->full_ok = in_full; /* a move accepted on its delta leaves T(d) unknown */
    } else {
        memcpy(d + a, tmp, (size_t)(b - a + 1));
    }
    if (tmp != save)
        free(tmp);
    return ok;
}

/* End of the run of same-side nodes that starts at a. */
static int
run_end(const struct pctx *c, const uint8_t *d, int a)
{
    int b = a;
    while (b + 1 < c->n && d[b + 1] == d[a])
        b++;
    return b;
}

/* Whether node i alone is cheaper on the other side than where d has it. */
static bool
gains_alone(const struct pctx *c, const uint8_t *d, int i)
{
    if (c->locked[i])
        return false;
    return d[i] ? c->cpu_s[i] < c->npu_s[i] : c->sup[i] && c->npu_s[i] < c->cpu_s[i];
}

/* Local search from d; returns T of the placement it ends in. */
static double
search(const struct pctx *c, uint8_t *d)
{
    struct psearch ps = {0};
    ps.full = total(c, d, NULL);
    ps.full_ok = true;
    ps.cur = ps.full;
    ps.mark = calloc((size_t)c->nvals + 1, sizeof(unsigned));
    ps.list = calloc((size_t)c->nvals + 1, sizeof(int));
    if (!ps.mark || !ps.list) { /* no room for the search: keep d as it is */
        free(ps.mark);
        free(ps.list);
        return ps.full;
    }
    for (int round = 0; round < MAX_ROUNDS; round++) {
        bool improved = false;
        /* whole runs first: they are what merges segments */
        for (int a = 0; a < c->n; a = run_end(c, d, a) + 1)
            improved |= try_move(c, &ps, d, a, run_end(c, d, a), !d[a]);
        /* the parts of a run whose nodes are each cheaper on the other side: a whole run
         * may not move (an attention the NPU does slowly) and a single node may not pay
         * for the submit it adds alone, while its neighbours together do (GPT-2's output
         * projection in three column blocks between a CPU attention and a CPU layer norm) */
        for (int a = 0; a < c->n; a++) {
            if (!gains_alone(c, d, a))
                continue;
            int b = a;
            while (b + 1 < c->n && d[b + 1] == d[a] && gains_alone(c, d, b + 1))
                b++;
            if (b > a)
                improved |= try_move(c, &ps, d, a, b, !d[a]);
            a = b;
        }
        for (int i = 0; i < c->n; i++)
            improved |= try_move(c, &ps, d, i, i, !d[i]);
        if (!improved)
            break;
    }
    free(ps.mark);
    free(ps.list);
    return ps.full_ok ? ps.full : total(c, d, NULL);
}

const char *
npu_cpu_cost_mode_name(enum npu_cpu_cost_mode m)
{
    switch (m) {
    case NPU_CPU_COST_AUTO: return "auto";
    case NPU_CPU_COST_BOARD: return "board";
    case NPU_CPU_COST_MEASURED: return "measured";
    }
    return "?";
}

enum npu_status
npu_cpu_cost_mode_parse(const char *s, enum npu_cpu_cost_mode *out)
{
    static const enum npu_cpu_cost_mode all[] = {NPU_CPU_COST_AUTO, NPU_CPU_COST_BOARD,
                                                 NPU_CPU_COST_MEASURED};
    for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
        if (!strcmp(s, npu_cpu_cost_mode_name(all[i]))) {
            *out = all[i];
            return NPU_OK;
        }
    return NPU_ERR_INVALID;
}

enum npu_status
npu_cpu_cost_mode_resolve(enum npu_cpu_cost_mode m, bool on_device, enum npu_cpu_cost_mode *out)
{
    if (m != NPU_CPU_COST_AUTO && m != NPU_CPU_COST_BOARD && m != NPU_CPU_COST_MEASURED) {
        npu_err(DOM, "CPU cost mode %d is not auto, board or measured", (int)m);
        return NPU_ERR_INVALID;
    }
    if (m == NPU_CPU_COST_AUTO) {
        const char *e = getenv(NPU_CPU_COST_ENV);
        if (e && e[0] && npu_cpu_cost_mode_parse(e, &m)) {
            npu_err(DOM, "%s=%s: the CPU cost model must be auto, board or measured",
                    NPU_CPU_COST_ENV, e);
            return NPU_ERR_INVALID;
        }
    }
    if (m == NPU_CPU_COST_AUTO)
        m = on_device ? NPU_CPU_COST_MEASURED : NPU_CPU_COST_BOARD;
    *out = m;
    return NPU_OK;
}

enum npu_status
npu_partition(struct npu_graph *g, const struct npu_partition_options *opts,
              struct npu_partition_report *rep)
{
    static const struct npu_partition_options defaults;
    static const struct npu_backend_options bdefaults;
    const struct npu_partition_options *o = opts ? opts : &defaults;
    const struct npu_backend_options *bo = o->backend ? o->backend : &bdefaults;
    const struct npu_partition_oracle * or = o->oracle;
    struct pctx c;
    memset(&c, 0, sizeof(c));
    if (rep)
        memset(rep, 0, sizeof(*rep));
    uint8_t *d = NULL, *d0 = NULL, *d1 = NULL;
    double *att = NULL;
    char(*why)[160] = NULL;
    bool *measured = NULL;
    enum npu_cpu_cost_mode cm;
    enum npu_status st = npu_cpu_cost_mode_resolve(o->cpu_cost, o->on_device, &cm);
    if (st)
        return st;
    double rate = or && or->convert_bytes_per_s > 0 ? or->convert_bytes_per_s
                  : cm == NPU_CPU_COST_BOARD        ? npu_cpu_model_convert_rate()
                                                    : npu_convert_rate();
    if ((st = build(&c, g, rate)))
        goto out;
    d = calloc((size_t)c.n + 1, 1);
    d0 = calloc((size_t)c.n + 1, 1);
    d1 = calloc((size_t)c.n + 1, 1);
    att = calloc(2 * (size_t)c.n + 2, sizeof(double));
    why = calloc((size_t)c.n + 1, sizeof(*why));
    measured = calloc((size_t)c.n + 1, sizeof(bool));
    if (!d || !d0 || !d1 || !att || !why || !measured) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    /* One scope over the pricing loop: nothing in it changes the graph (placements are
     * written after the search), so every node's supports() and cost() share the dry
     * lowerings that predict producers' views, and a reader's supports() asked again by
     * its producers' cost() (views: alias or copy) is answered from the first. */
    npu_backend_dry_scope(true);
    for (int i = 0; i < c.n; i++) {
        struct npu_node *n = c.nodes[i];
        npu_backend_dry_scope_next();
        if (npu_op_is_rk(n->op)) { /* already lowered: stays where it is */
            c.locked[i] = c.sup[i] = true;
            d[i] = 1;
            measured[i] = true;
            continue;
        }
        why[i][0] = 0;
        c.sup[i] = or && or->supports ? or->supports(g, n, why[i], sizeof(why[i]), or->user)
                                      : real_supports(g, n, why[i], sizeof(why[i]), bo);
        if (c.sup[i]) {
            c.npu_s[i] =
                or && or->npu_cost ? or->npu_cost(g, n, or->user) : npu_backend_cost(g, n, bo);
            if (!(c.npu_s[i] >= 0) || !isfinite(c.npu_s[i])) {
                /* supported but no estimate: the cost of moving its bytes once, as one
                 * task of the timing model */
                const struct npu_timing_model *tm = npu_timing_model();
                int64_t b = 0;
                for (int k = 0; k < n->nin; k++)
                    if (n->in[k])
                        b += NPU_MAX(npu_tensor_nbytes(&n->in[k]->t), 0) / 2;
                for (int k = 0; k < n->nout; k++)
                    b += NPU_MAX(npu_tensor_nbytes(&n->out[k]->t), 0) / 2;
                double compute_s, dma_s;
                npu_timing_task(tm, 0, 0.0, 0, (uint64_t)b, &compute_s, &dma_s);
                c.npu_s[i] = tm->task_overhead_s + dma_s;
                snprintf(why[i], sizeof(why[i]),
                         "no modeled cost from the handler: "
                         "estimated from its bytes");
            }
        } else {
            c.npu_s[i] = -1;
            if (!why[i][0])
                snprintf(why[i], sizeof(why[i]), "no NPU handler for %s", npu_op_name(n->op));
        }
        measured[i] = cm == NPU_CPU_COST_MEASURED;
        if (o->mode != NPU_PARTITION_COST && !rep)
            c.cpu_s[i] = 0; /* not needed for the decision, nobody asked for the figures */
        else if (or && or->cpu_cost)
            c.cpu_s[i] = or->cpu_cost(g, n, or->user);
        else if (cm == NPU_CPU_COST_BOARD)
            c.cpu_s[i] = npu_cpu_model_cost(g, n, o->cpu_threads, NULL);
        else
            c.cpu_s[i] = npu_cpu_cost(g, n, o->cpu_threads, o->cache_dir, &measured[i]);
        if (n->device != NPU_DEVICE_ANY) { /* placed by the caller */
            c.locked[i] = true;
            d[i] = n->device == NPU_DEVICE_NPU && c.sup[i];
            continue;
        }
        switch (o->mode) {
        case NPU_PARTITION_CPU: d[i] = 0; break;
        case NPU_PARTITION_SUPPORTED: d[i] = c.sup[i]; break;
        default: d[i] = c.sup[i] && c.npu_s[i] < c.cpu_s[i]; break;
        }
    }
    npu_backend_dry_scope(false);
    check_terms(&c);
    memcpy(d0, d, (size_t)c.n);
    double greedy = total(&c, d, NULL);
    if (o->mode == NPU_PARTITION_COST) {
        double t0 = search(&c, d);
        /* second start: every supported node on the NPU (caller placements kept) */
        for (int i = 0; i < c.n; i++)
            d1[i] = c.locked[i] ? d0[i] : c.sup[i];
        double t1 = search(&c, d1);
        npu_dbg(DOM,
                "search from each node's cheaper side: %.3f ms; from every supported node "
                "on the NPU: %.3f ms",
                t0 * 1e3, t1 * 1e3);
        if (t1 < t0 - 1e-12)
            memcpy(d, d1, (size_t)c.n);
    }
    double t = total(&c, d, att);
    int jobs = 0, npun = 0;
    for (int i = 0; i < c.n; i++) {
        c.nodes[i]->device = d[i] ? NPU_DEVICE_NPU : NPU_DEVICE_CPU;
        c.nodes[i]->cost = d[i] ? c.npu_s[i] : c.cpu_s[i];
        npun += d[i];
        jobs += d[i] && (i == 0 || !d[i - 1]);
        c.nodes[i]->pass_data = NULL;
    }
    memset(d0, 0, (size_t)c.n);
    double all_cpu = total(&c, d0, NULL);
    npu_info(DOM,
             "%d of %d nodes on the NPU in %d job(s); estimate %.3f ms (all on the CPU: "
             "%.3f ms; CPU cost model %s)",
             npun, c.n, jobs, t * 1e3, all_cpu * 1e3,
             cm == NPU_CPU_COST_BOARD ? "board: RK3588 CPU model v1, modeled" : "measured");
    if (rep) {
        rep->all_cpu_s = all_cpu;
        rep->greedy_s = greedy;
        rep->total_s = t;
        rep->npu_nodes = npun;
        rep->npu_jobs = jobs;
        rep->convert_bytes_per_s = rate;
        rep->cpu_cost = cm;
        rep->cpu_oracle = or && or->cpu_cost;
        rep->n = c.n;
        rep->nodes = calloc((size_t)c.n + 1, sizeof(*rep->nodes));
        if (!rep->nodes) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
        for (int i = 0; i < c.n; i++) {
            struct npu_partition_node *pn = &rep->nodes[i];
            const struct npu_node *n = c.nodes[i];
            pn->name = strdup(n->name ? n->name : ""); /* the graph may go first */
            if (!pn->name) {
                st = NPU_ERR_NOMEM;
                goto out;
            }
            pn->op = n->op;
            pn->index = i;
            pn->supported = c.sup[i];
            memcpy(pn->why, why[i], sizeof(pn->why));
            pn->npu_s = c.npu_s[i];
            pn->cpu_s = c.cpu_s[i];
            pn->cpu_measured = measured[i];
            pn->convert_s = att[2 * i];
            pn->submit_s = att[2 * i + 1];
            pn->device = n->device;
        }
    }
out:
    free(d);
    free(d0);
    free(d1);
    free(att);
    free(why);
    free(measured);
    pctx_free(&c);
    return st;
}

void
npu_partition_report_free(struct npu_partition_report *r)
{
    if (!r)
        return;
    for (int i = 0; r->nodes && i < r->n; i++)
        free((char *)r->nodes[i].name);
    free(r->nodes);
    memset(r, 0, sizeof(*r));
}

static void
us(FILE *f, double s, int width)
{
    if (s < 0)
        fprintf(f, " %*s", width, "-");
    else
        fprintf(f, " %*.1f", width, s * 1e6);
}

void
npu_partition_report_print(const struct npu_partition_report *r, FILE *f)
{
    bool board = r->cpu_cost == NPU_CPU_COST_BOARD;
    const char *cpu_label = r->cpu_oracle ? "given by the caller's oracle"
                            : board       ? "modeled (RK3588 CPU model v1, not measured on a board)"
                                          : "measured on this host";
    const struct npu_timing_model *tm = npu_timing_model();
    fprintf(f,
            "partition: NPU cost modeled (%s); CPU cost model '%s': CPU cost %s; "
            "conversions at %.2f GB/s (%s); submit %.0f us per NPU job (%s)\n",
            tm->label, npu_cpu_cost_mode_name(r->cpu_cost), cpu_label,
            r->convert_bytes_per_s * 1e-9,
            board ? "modeled, RK3588 CPU model v1" : "measured on this host",
            tm->submit_overhead_s * 1e6, tm->label);
    fprintf(f, "%4s  %-36s %-20s %-5s %10s %10s %9s %9s  %s\n", "#", "node", "op", "place",
            "npu_us", board ? "cpu_mod_us" : "cpu_mea_us", "conv_us", "submit", "reason");
    for (int i = 0; i < r->n; i++) {
        const struct npu_partition_node *n = &r->nodes[i];
        char name[37];
        snprintf(name, sizeof(name), "%s", n->name[0] ? n->name : "(unnamed)");
        fprintf(f, "%4d  %-36s %-20s %-5s", n->index, name, npu_op_name(n->op),
                n->device == NPU_DEVICE_NPU ? "npu" : "cpu");
        us(f, n->npu_s, 10);
        bool est = !board && !r->cpu_oracle && !n->cpu_measured;
        us(f, n->cpu_s, 10);
        fprintf(f, "%s", est ? "~" : "");
        us(f, n->convert_s, est ? 8 : 9);
        us(f, n->submit_s, 9);
        const char *reason = n->why;
        if (!reason[0] && n->supported && n->device == NPU_DEVICE_CPU)
            reason = n->npu_s >= n->cpu_s ? "CPU is faster"
                                          : "NPU faster alone, but conversions and submits "
                                            "outweigh it";
        fprintf(f, "  %s\n", reason);
    }
    fprintf(f,
            "estimate: %.3f ms with %d node(s) on the NPU in %d job(s); all on the CPU "
            "%.3f ms; each node on its cheaper side %.3f ms%s\n",
            r->total_s * 1e3, r->npu_nodes, r->npu_jobs, r->all_cpu_s * 1e3, r->greedy_s * 1e3,
            board ? " (CPU and conversions modeled: RK3588 CPU model v1, not measured on a board)"
                  : " (~ = CPU cost estimated, the kernel could not run on synthetic inputs)");
}

enum npu_status
npu_pass_partition(struct npu_graph *g)
{
    return npu_partition(g, NULL, NULL);
}
