// SPDX-License-Identifier: MIT
/*
 * dpu-state.c: the DPU lowering of npu.StateWrite(S, ROW, POS){axis}, a write of ROW into
 * the state tensor S at a position known only when the program runs (an LLM's new K / V
 * row at the current length). One DPU copy moves ROW into S; its destination address is a
 * run-time positioned relocation (struct npu_prog_dynreloc): the rk.Dpu node carries
 *   "dyn"     = [record index of the copy, stride bytes per position, limit, extent bytes]
 *   "dyn_pos" = the name of the graph input holding POS (a host int of one element),
 * and codegen turns them into the job's dynamic relocation (the runtime checks every
 * position against the limit before it submits).
 *
 * Where S is a state graph input (npu_value.is_state) that nothing else reads, the result
 * is S itself, written in place: the node's "inplace" attribute (input index + 1) tells
 * codegen to place the result at its input's bytes in NPU_BUF_STATE, so the row lands in
 * the resident copy and readers of the result read the whole state where it is. Otherwise
 * the lowering copies S into the result first and then writes the row into that copy.
 *
 * Layout: S and ROW are read in their canonical matrix views (C = last dim, rows = the
 * product of the others, W = 1, row-major), the axis not the last. A position then moves
 * the write by `inner` rows (the product of the dims between the axis and the last) of 16
 * bytes. One copy covers either one contiguous block of rows (nothing before the axis but
 * ones) or one row per outer index (ROW's axis extent and inner rows of 1), rows the state's
 * axis apart; other shapes stay on the CPU.
 */
#include <string.h>

#include "dpu-low.h"

/* The graph input index of v, or -1. */
static int
graph_input(const struct npu_graph *g, const struct npu_value *v)
{
    for (int k = 0; g && k < g->ninputs; k++)
        if (g->inputs[k] == v)
            return k;
    return -1;
}

enum npu_status
dl_lower_state_write(struct rkd *b, struct npu_node *n, struct why *w)
{
    if (n->nin != 3 || !n->in[0] || !n->in[1] || !n->in[2] || n->nout != 1)
        return why_set(w, "StateWrite needs a state, a row and a position");
    struct npu_value *s = n->in[0], *r = n->in[1], *p = n->in[2];
    const struct npu_tensor *st = &s->t, *rt = &r->t;
    const struct npu_graph *g = b->cx ? b->cx->g : b->g;
    if (!npu_dtype_is_float(st->dtype))
        return why_set(w, "only float states (fp16 on the NPU)");
    if (p->kind != NPU_VALUE_INPUT || npu_value_numel(p) != 1 ||
        (p->t.dtype != NPU_DTYPE_INT64 && p->t.dtype != NPU_DTYPE_INT32))
        return why_set(w,
                       "the position '%s' must be a graph input of one int32 / int64 (the "
                       "runtime moves the write address by it)",
                       p->name);
    if (g && graph_input(g, p) < 0)
        return why_set(w, "the position '%s' is not an input of this graph", p->name);
    int64_t a = npu_node_int(n, "axis", 0);
    if (a < 0)
        a += st->ndim;
    if (a < 0 || a >= st->ndim - 1)
        return why_set(w, "the write axis must not be the last (the channels on the NPU)");
    if (rt->ndim != st->ndim)
        return why_set(w, "row rank");
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; d++)
        outer *= st->dims[d];
    for (int d = (int)a + 1; d < st->ndim - 1; d++)
        inner *= st->dims[d];
    const int64_t rows_n = rt->dims[a] * inner, Da = st->dims[a];
    if (outer > 1 && rows_n > 1)
        return why_set(w, "the row is %lld rows in each of %lld blocks: not one copy",
                       (long long)rows_n, (long long)outer);
    struct vmap vs, vr;
    if (!npu_rk_canonical_view(st, vs.view) || !npu_rk_canonical_view(rt, vr.view))
        return why_set(w, "no NC1HWC2 view of the state or the row");
    vs.order = npu_rk_order_of(st, vs.view);
    vr.order = npu_rk_order_of(rt, vr.view);
    if (vs.order != NPU_VIEW_HWC || vs.view[2] != 1 || vr.order != NPU_VIEW_HWC || vr.view[2] != 1)
        return why_set(w, "the state and the row must be matrices in rows (view C x rows x 1)");
    /* a row the NPU already holds as one pixel of rows x C channels (a projection's output
     * reshaped to heads) is read where it is: its rows are C / 8 surfaces apart */
    const uint32_t C = vs.view[0], rows_all = vr.view[1];
    struct vmap pv;
    struct npu_value *rnv = b->cx ? npu_lower_lookup(b->cx, r) : NULL;
    bool have = false;
    if (rnv && npu_rk_view(rnv, pv.view)) {
        pv.order = npu_rk_view_order(rnv);
        have = true;
    } else if (!b->cx) {
        have = dl_predicts(r, b->depth, &pv);
    }
    const bool packed_row = have && C % 8 == 0 && rows_all > 1 && pv.order == NPU_VIEW_HWC &&
                            pv.view[0] == C * rows_all && pv.view[1] == 1 && pv.view[2] == 1;
    if (packed_row)
        vr = pv;
    const uint64_t stride = (uint64_t)inner * 16;
    const int64_t limit = Da - rt->dims[a] + 1;
    if (stride > UINT32_MAX || limit < 1)
        return why_set(w, "positions out of range");
    /* in place: a state input nothing else reads (its NPU copy stays in NPU_BUF_STATE) */
    const bool inplace = s->kind == NPU_VALUE_INPUT && s->is_state && s->nusers == 1 &&
                         !n->out[0]->is_output && g && graph_input(g, s) >= 0;
    struct npu_dpu_map sm, rm;
    if (!dl_input(b, s, &vs, &sm, w) || !dl_input(b, r, &vr, &rm, w))
        return NPU_ERR_UNSUPPORTED;
    struct npu_dpu_map om = dl_map(rkd_result(), &vs);
    if (!inplace)
        dl_copy(b, &sm, &om);
    struct npu_dpu_map d = npu_dpu_map_rows(&om, 0, (uint32_t)(outer > 1 ? 1 : rows_n));
    if (outer > 1) {
        d.h = (uint32_t)outer; /* one row per outer index, the state's axis apart */
        d.line = (uint32_t)(Da * inner);
    }
    struct npu_dpu_map src = rm;
    if (packed_row) {
        src.c = C;
        src.h = rows_all;
        src.w = 1;
        src.line = (C / 8) * npu_dpu_map_surf(&rm);
        src.surf = npu_dpu_map_surf(&rm);
    }
    int rec = b->ntasks;
    dl_copy(b, &src, &d);
    uint64_t extent = npu_dpu_map_extent(&d);
    struct npu_value *res_orig = n->out[0]; /* dl_finish hands it to the rk.ToHost */
    enum npu_status e = dl_finish(b, 0, &vs);
    if (e || !b->cx)
        return e;
    /* the rk.Dpu just made: its run-time write and (in place) its aliasing */
    struct npu_value *res = npu_lower_lookup(b->cx, res_orig);
    struct npu_node *rk = res ? res->producer : NULL;
    if (!rk || rk->op != NPU_OP_RK_DPU)
        return NPU_ERR_INTERNAL;
    int64_t dyn[4] = {rec, (int64_t)stride, limit, (int64_t)extent};
    if ((e = npu_node_set_ints(b->cx->g, rk, "dyn", dyn, 4)) ||
        (e = npu_node_set_string(b->cx->g, rk, "dyn_pos", p->name)))
        return e;
    if (inplace)
        e = npu_node_set_int(b->cx->g, rk, "inplace", (int64_t)(sm.ref.buffer - RKD_IN(0)) + 1);
    return e;
}
