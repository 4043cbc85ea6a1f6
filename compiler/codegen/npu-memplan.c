/* SPDX-License-Identifier: MIT */
/*
 * npu-memplan.c: codegen's memory plan. rk.* values get offsets in NPU_BUF_ACT
 * by lifetime (first writer to last reader, widened to the whole job for values
 * the conversions touch), reusing dead tensors' space (first fit, 64-byte
 * aligned: every NPU address register needs 16, RKNN places tensors on 64,
 * errata S6). Constants the NPU reads are packed into NPU_BUF_WEIGHTS (64-byte
 * aligned). Host values get offsets in the host arena the same way. With
 * layer_split an NPU value's lifetime covers whole jobs (no reuse inside a job).
 * The NPU side of a state input (npu_value.is_state, converted by one RK_TO_NPU
 * and read by nothing else) goes to NPU_BUF_STATE instead, outside the reuse: it
 * lives across runs.
 */
#include <stdlib.h>
#include <string.h>

#include "npu-codegen-priv.h"
#include "npu/npu-program.h"

#define CG_ALIGN 64u

/* ---- interval allocation ----------------------------------------------------------- */

struct ival {
    int id;         /* value id */
    int ord;        /* tie-break: first mention in node order */
    int start, end; /* first and last position (inclusive) */
    uint64_t size;
    uint64_t offset; /* result */
};

static int
cmp_ival(const void *a, const void *b)
{
    const struct ival *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->ord - y->ord;
}

static int
cmp_off(const void *a, const void *b)
{
    const struct ival *const *x = a, *const *y = b;
    return (*x)->offset < (*y)->offset ? -1 : (*x)->offset > (*y)->offset;
}

/* First-fit placement of intervals whose lifetimes overlap; returns the peak. The
 * intervals placed so far that can still overlap a later one (end >= its start; starts
 * only grow in this order) are kept in `act`, so each interval looks at those instead of
 * at every earlier one (a chain of N nodes: O(N) instead of O(N^2)). The offsets are the
 * same: the live set is the same, and its order by offset does not change the fit. */
static uint64_t
place(struct ival *v, int n, bool *nomem)
{
    uint64_t peak = 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_ival);
    const struct ival **live = malloc(sizeof(*live) * (size_t)(n ? n : 1));
    int *act = malloc(sizeof(*act) * (size_t)(n ? n : 1));
    if (!live || !act) {
        free(live);
        free(act);
        *nomem = true;
        return 0;
    }
    int nact = 0;
    for (int i = 0; i < n; i++) {
        int nl = 0, keep = 0;
        for (int q = 0; q < nact; q++) {
            int j = act[q];
            if (v[j].end < v[i].start)
                continue; /* ended before this start, so before every later one */
            act[keep++] = j;
            if (v[j].start <= v[i].end)
                live[nl++] = &v[j];
        }
        nact = keep;
        act[nact++] = i;
        qsort(live, (size_t)nl, sizeof(*live), cmp_off);
        uint64_t off = 0;
        for (int j = 0; j < nl; j++) {
            if (live[j]->offset >= off + v[i].size)
                break;
            uint64_t e = (live[j]->offset + live[j]->size + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
            if (e > off)
                off = e;
        }
        v[i].offset = off;
        if (off + v[i].size > peak)
            peak = off + v[i].size;
    }
    free(live);
    free(act);
    return (peak + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
}

/* ---- planning ------------------------------------------------------------------- */

/* Positions, jobs and lifetimes; fills cg->vi. Lifetimes follow node order:
 * a job's tasks run one after another on one core. */
enum npu_status
cg_analyse(struct npu_cg *cg, int **pos_job_out)
{
    const struct npu_graph *g = cg->g;
    int nn = 0;
    npu_graph_for_each_node (g, n)
        n->pass_data = (void *)(intptr_t)nn++;
    int *job_of = malloc(sizeof(int) * (size_t)(nn + 1));
    int *job_first = malloc(sizeof(int) * (size_t)(nn + 1));
    int *job_last = malloc(sizeof(int) * (size_t)(nn + 1));
    if (!job_of || !job_first || !job_last) {
        free(job_of);
        free(job_first);
        free(job_last);
        return NPU_ERR_NOMEM;
    }
    /* jobs: runs of compute nodes between CPU nodes */
    int nj = 0, cur = -1, pos = 0;
    npu_graph_for_each_node (g, n) {
        job_of[pos] = -1;
        if (cg_is_compute(n)) {
            if (cur < 0) {
                cur = nj++;
                job_first[cur] = pos;
            }
            job_of[pos] = cur;
            job_last[cur] = pos;
        } else if (!npu_op_is_rk(n->op)) {
            cur = -1;
        }
        pos++;
    }
    for (int i = 0; i < cg->nvi; i++) {
        cg->vi[i].host = cg->vi[i].npu = -1;
        cg->vi[i].first = cg->vi[i].last = -1;
        cg->vi[i].job = -1;
        cg->vi[i].ord = -1;
    }
    int ord = 0;
    for (int k = 0; k < g->ninputs; k++)
        cg->vi[g->inputs[k]->id].ord = ord++;
    npu_graph_for_each_node (g, n) {
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] && cg->vi[n->in[k]->id].ord < 0)
                cg->vi[n->in[k]->id].ord = ord++;
        for (int k = 0; k < n->nout; k++)
            if (cg->vi[n->out[k]->id].ord < 0)
                cg->vi[n->out[k]->id].ord = ord++;
    }
#define SPAN(v, p)                                                                                 \
    do {                                                                                           \
        struct vinfo *i_ = &cg->vi[(v)->id];                                                       \
        if (i_->first < 0 || (p) < i_->first)                                                      \
            i_->first = (p);                                                                       \
        if ((p) > i_->last)                                                                        \
            i_->last = (p);                                                                        \
    } while (0)
    /* the job a conversion's NPU side belongs to */
    pos = 0;
    npu_graph_for_each_node (g, n) {
        int p = pos++;
        bool rk = npu_op_is_rk(n->op);
        for (int k = 0; k < n->nout; k++) {
            struct npu_value *v = n->out[k];
            struct vinfo *i = &cg->vi[v->id];
            if (rk && n->op != NPU_OP_RK_TO_HOST)
                i->npu_val = true;
            else
                i->host_val = true;
            SPAN(v, p);
            if (n->op == NPU_OP_RK_TO_NPU) {
                /* written before the first job that reads it starts */
                for (int u = 0; u < v->nusers; u++) {
                    int up = (int)(intptr_t)v->users[u]->pass_data;
                    int jb = job_of[up];
                    SPAN(v, jb >= 0 ? job_first[jb] : up);
                }
            }
        }
        for (int k = 0; k < n->nin; k++) {
            struct npu_value *v = n->in[k];
            if (!v)
                continue;
            struct vinfo *i = &cg->vi[v->id];
            if (v->kind == NPU_VALUE_CONST) {
                if (cg_is_compute(n))
                    i->npu_const = true;
                else
                    i->host_const = true;
            }
            if (v->kind == NPU_VALUE_INPUT) {
                i->host_val = true;
                SPAN(v, 0);
            }
            SPAN(v, p);
            if (n->op == NPU_OP_RK_TO_HOST && v->producer) {
                /* read after the job that wrote it ends */
                int pp = (int)(intptr_t)v->producer->pass_data;
                int jb = job_of[pp];
                if (jb >= 0)
                    SPAN(v, job_last[jb] + 1 > p ? job_last[jb] + 1 : p);
            }
        }
    }
    /* layer_split: an NPU value keeps its space from its first job's first node to
     * its last job's last node (no reuse inside a job, for the layer split) */
    for (int k = 0; cg->o->layer_split && k < cg->nvi; k++) {
        struct vinfo *i = &cg->vi[k];
        if (!i->npu_val || i->first < 0)
            continue;
        if (job_of[i->first] >= 0)
            i->first = job_first[job_of[i->first]];
        if (i->last < nn && job_of[i->last] >= 0 && job_last[job_of[i->last]] > i->last)
            i->last = job_last[job_of[i->last]];
    }
    /* NPU buffers are reused one node later than their last reader, so that
     * no task writes memory the task right before it still reads (the PC
     * prefetches the next task, facts §1.4) */
    for (int k = 0; k < cg->nvi; k++)
        if (cg->vi[k].npu_val && cg->vi[k].last >= 0)
            cg->vi[k].last++;
    for (int k = 0; k < g->noutputs; k++)
        SPAN(g->outputs[k], nn);
#undef SPAN
    free(job_first);
    free(job_last);
    *pos_job_out = job_of;
    return NPU_OK;
}

/*
 * The weight buffer without a copy: when every NPU constant already lies in the graph's
 * weight region (npu_graph_alloc_weights, where the lowerings put the constants they
 * make) exactly at base + its w_off, the region is the buffer: the program holds a
 * reference to it and the bytes between the constants (under CG_ALIGN each) are cleared,
 * so the buffer's bytes are those the copy below would give. NULL when the layouts differ
 * (a constant from elsewhere, an allocation between two, another order) or the region
 * holds much more than the weights: then the copy.
 */
static uint8_t *
in_region(struct npu_cg *cg, uint64_t wsize)
{
    const struct npu_graph *g = cg->g;
    size_t used = 0;
    struct npu_shared_mapping *r = npu_graph_weight_region(g, &used);
    uint8_t *base = npu_shared_mapping_addr(r);
    /* the program keeps the whole region: not when much of it is something else (constants
     * the lowerings made for the host after the NPU's last one) */
    if (!base || !wsize || wsize > npu_shared_mapping_size(r) ||
        (used > wsize && used - wsize > wsize / 16 + ((size_t)1 << 20)))
        return NULL;
    uint64_t n = 0;
    for (int k = 0; k < g->nvalues; k++) {
        const struct npu_value *v = g->values[k];
        if (v->id >= cg->nvi || !cg->vi[v->id].npu_const)
            continue;
        if ((const uint8_t *)v->t.data != base + cg->vi[v->id].w_off)
            return NULL;
        n++;
    }
    /* each constant's end, in offset order: the gap to the next (or to wsize) is cleared */
    uint64_t *ends = malloc((size_t)(n ? n : 1) * 2 * sizeof(*ends));
    if (!ends)
        return NULL;
    n = 0;
    for (int k = 0; k < g->nvalues; k++) {
        const struct npu_value *v = g->values[k];
        if (v->id < cg->nvi && cg->vi[v->id].npu_const) {
            ends[2 * n] = cg->vi[v->id].w_off;
            ends[2 * n + 1] = cg->vi[v->id].w_off + (uint64_t)npu_tensor_nbytes(&v->t);
            n++;
        }
    }
    /* w_off grows with the values' first mention, not their index: sort the pairs */
    for (uint64_t a = 1; a < n; a++)
        for (uint64_t q = a; q > 0 && ends[2 * (q - 1)] > ends[2 * q]; q--) {
            uint64_t t0 = ends[2 * q], t1 = ends[2 * q + 1];
            ends[2 * q] = ends[2 * (q - 1)];
            ends[2 * q + 1] = ends[2 * (q - 1) + 1];
            ends[2 * (q - 1)] = t0;
            ends[2 * (q - 1) + 1] = t1;
        }
    bool ok = npu_program_hold_mapping(cg->p, r) == NPU_OK;
    for (uint64_t q = 0; ok && q < n; q++) {
        uint64_t next = q + 1 < n ? ends[2 * (q + 1)] : wsize;
        if (ends[2 * q + 1] < next && ends[2 * q + 1] < used)
            memset(base + ends[2 * q + 1], 0, (size_t)(NPU_MIN(next, used) - ends[2 * q + 1]));
    }
    free(ends);
    return ok ? base : NULL;
}

/* constants by their data's address (then by value: equal addresses stay distinct) */
static int
by_data(const void *a, const void *b)
{
    const struct npu_value *x = *(const struct npu_value *const *)a,
                           *y = *(const struct npu_value *const *)b;
    uintptr_t p = (uintptr_t)x->t.data, q = (uintptr_t)y->t.data;
    return p < q ? -1 : p > q ? 1 : x < y ? -1 : x > y ? 1 : 0;
}

enum npu_status
cg_plan_memory(struct npu_cg *cg)
{
    const struct npu_graph *g = cg->g;
    struct ival *a = calloc((size_t)g->nvalues + 1, sizeof(*a));
    struct ival *h = calloc((size_t)g->nvalues + 1, sizeof(*h));
    int na = 0, nh = 0;
    bool nomem = false;
    if (!a || !h) {
        free(a);
        free(h);
        return NPU_ERR_NOMEM;
    }
    uint64_t wsize = 0, ssize = 0;
    for (int k = 0; k < g->ninputs; k++) {
        const struct npu_value *in = g->inputs[k];
        if (!in->is_state || in->nusers != 1 || in->users[0]->op != NPU_OP_RK_TO_NPU)
            continue;
        const struct npu_value *nv = in->users[0]->out[0];
        if (nv->id >= cg->nvi || !cg->vi[nv->id].npu_val || nv->is_output)
            continue;
        cg->vi[nv->id].state = true;
        cg->vi[nv->id].state_input = k;
    }
    /* values by first mention */
    const struct npu_value **byord = calloc((size_t)g->nvalues + 1, sizeof(*byord));
    int nord = 0;
    if (!byord) {
        free(a);
        free(h);
        return NPU_ERR_NOMEM;
    }
    for (int k = 0; k < g->nvalues; k++)
        if (g->values[k]->id < cg->nvi && cg->vi[g->values[k]->id].ord >= 0)
            byord[nord++] = g->values[k];
    for (int k = 1; k < nord; k++) /* insertion sort by ord */
        for (int q = k; q > 0 && cg->vi[byord[q - 1]->id].ord > cg->vi[byord[q]->id].ord; q--) {
            const struct npu_value *t = byord[q];
            byord[q] = byord[q - 1];
            byord[q - 1] = t;
        }
    for (int k = 0; k < nord; k++) {
        const struct npu_value *v = byord[k];
        struct vinfo *i = &cg->vi[v->id];
        if (i->npu_const) {
            wsize = (wsize + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
            i->w_off = wsize;
            wsize += (uint64_t)npu_tensor_nbytes(&v->t);
        }
        if (i->npu_val && i->first >= 0 && v->producer && v->producer->op == NPU_OP_RK_DPU &&
            v == v->producer->out[0] && npu_node_int(v->producer, "inplace", 0)) {
            /* an in-place state write: its result is the bytes of the state it updates */
            int64_t ki = npu_node_int(v->producer, "inplace", 0) - 1;
            const struct npu_value *src =
                ki >= 0 && ki < v->producer->nin ? v->producer->in[ki] : NULL;
            const struct vinfo *si = src && src->id < cg->nvi ? &cg->vi[src->id] : NULL;
            if (!si || !(si->state || si->state_alias) ||
                npu_rk_value_bytes(v) > npu_rk_value_bytes(src)) {
                npu_err(NPU_BE_DOM,
                        "codegen: in-place write '%s' into a value that is not a state input in "
                        "NPU_BUF_STATE",
                        v->producer->name);
                free(a);
                free(h);
                free(byord);
                return NPU_ERR_INVALID;
            }
            i->state_alias = true;
            i->state_off = si->state_off;
            continue;
        }
        if (i->npu_val && i->first >= 0) {
            uint64_t b = npu_rk_value_bytes(v);
            if (i->state && b) {
                ssize = (ssize + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
                i->state_off = ssize;
                ssize += b;
                continue;
            }
            if (!b) {
                npu_err(NPU_BE_DOM, "codegen: NPU value '%s' has no size", v->name);
                free(a);
                free(h);
                free(byord);
                return NPU_ERR_INVALID;
            }
            a[na++] = (struct ival){v->id, i->ord, i->first, i->last, b, 0};
        }
        if (i->host_val && v->kind != NPU_VALUE_CONST && i->first >= 0)
            h[nh++] = (struct ival){
                v->id, i->ord, i->first, i->last, (uint64_t)npu_tensor_nbytes(&v->t), 0};
    }
    free(byord);
    uint64_t act = place(a, na, &nomem);
    uint64_t host = place(h, nh, &nomem);
    for (int k = 0; k < na; k++)
        cg->vi[a[k].id].act_off = a[k].offset;
    for (int k = 0; k < nh; k++)
        cg->vi[h[k].id].host_off = h[k].offset;
    free(a);
    free(h);
    if (nomem)
        return NPU_ERR_NOMEM;
    if (act > 0xffffffffull || wsize > 0xffffffffull || ssize > 0xffffffffull) {
        npu_err(NPU_BE_DOM, "codegen: NPU memory over 4 GiB (activations %llu, weights %llu)",
                (unsigned long long)act, (unsigned long long)wsize);
        return NPU_ERR_UNSUPPORTED;
    }
    cg->p->act_bytes = act;
    cg->p->state_bytes = (ssize + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
    cg->p->host_bytes = host;
    wsize = (wsize + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
    /* the graph's weight region as the buffer (no copy, nothing to release), else a copy:
     * page by page with release_consts, each constant released once copied */
    uint8_t *w = in_region(cg, wsize);
    if (w) {
        cg->p->weights = w;
        cg->p->weights_bytes = wsize;
        return NPU_OK;
    }
    w = cg->release_consts ? npu_program_alloc_lazy(cg->p, (size_t)(wsize ? wsize : 64))
                           : npu_program_alloc(cg->p, (size_t)(wsize ? wsize : 64));
    if (!w)
        return NPU_ERR_NOMEM;
    /* release_consts: each constant's memory goes once copied, unless another constant
     * reads bytes of it (a view sharing its data), so that at most one copy is resident */
    const struct npu_value **cs = NULL;
    int ncs = 0;
    if (cg->release_consts && (cs = calloc((size_t)g->nvalues + 1, sizeof(*cs))))
        for (int k = 0; k < g->nvalues; k++) {
            const struct npu_value *v = g->values[k];
            if (v->id < cg->nvi && cg->vi[v->id].npu_const && v->t.data)
                cs[ncs++] = v;
        }
    if (ncs > 1)
        qsort(cs, (size_t)ncs, sizeof(*cs), by_data);
    /* ends[i]: the largest end of cs[0..i] */
    uintptr_t *ends = ncs ? calloc((size_t)ncs, sizeof(*ends)) : NULL;
    if (!ends) {
        free(cs);
        cs = NULL;
    }
    for (int k = 0; k < ncs && ends; k++) {
        uintptr_t e = (uintptr_t)cs[k]->t.data + (uintptr_t)npu_tensor_nbytes(&cs[k]->t);
        ends[k] = k && ends[k - 1] > e ? ends[k - 1] : e;
    }
    for (int k = 0; k < g->nvalues; k++) {
        const struct npu_value *v = g->values[k];
        if (v->id < cg->nvi && cg->vi[v->id].npu_const)
            memcpy(w + cg->vi[v->id].w_off, v->t.data, (size_t)npu_tensor_nbytes(&v->t));
        /* (a constant a CPU step also reads is copied to the host later: kept) */
        if (!cs || !(v->id < cg->nvi && cg->vi[v->id].npu_const) || !v->t.data ||
            cg->vi[v->id].host_const)
            continue;
        /* sorted by start: a constant before it overlaps when its end passes this start
         * (the largest end before it, ends[]), the one after when it starts before this end */
        const struct npu_value **at = bsearch(&v, cs, (size_t)ncs, sizeof(*cs), by_data);
        const uint8_t *lo = v->t.data, *hi = lo + npu_tensor_nbytes(&v->t);
        size_t i = at ? (size_t)(at - cs) : 0;
        bool shared = !at || (i > 0 && ends[i - 1] > (uintptr_t)lo) ||
                      (i + 1 < (size_t)ncs && (const uint8_t *)cs[i + 1]->t.data < hi);
        if (!shared)
            (void)npu_graph_release_data(g, lo, (size_t)(hi - lo));
    }
    free(cs);
    free(ends);
    cg->p->weights = w;
    cg->p->weights_bytes = wsize;
    return NPU_OK;
}
