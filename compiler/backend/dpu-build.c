/* SPDX-License-Identifier: MIT */
/*
 * dpu-build.c: the rk.Dpu builder the DPU/PPU lowerings use (struct rkd, npu-dpu-ops.h):
 * inputs, constants and scratch buffers, the task list (each task dry-emitted on the way in,
 * so its modeled cost is known and an emitter's refusal refuses the node), LUT residency
 * with the guard a re-upload needs, and the finished rk.Dpu node in codegen's attribute
 * format (codegen/dpu-rk.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-be.h"
#include "npu-dpu-ops.h"

#define DOM "dpu"

/* ---- the builder ---------------------------------------------------------------------- */

void
rkd_init(struct rkd *b, struct npu_lower_ctx *cx, struct npu_node *orig)
{
    memset(b, 0, sizeof(*b));
    b->cx = cx;
    b->orig = orig;
    b->nout = 1;
    b->scratch = -1;
    b->lut_used_last = true; /* the task before this node may have used the LUT */
    npu_stream_init(&b->dry);
}

void
rkd_fini(struct rkd *b)
{
    npu_stream_fini(&b->dry);
    free(b->tasks);
    b->tasks = NULL;
}

static void
set_err(struct rkd *b, enum npu_status st)
{
    if (!b->err)
        b->err = st;
}

struct npu_dpu_ref
rkd_input(struct rkd *b, struct npu_value *v)
{
    for (int i = 0; i < b->nin; i++)
        if (b->in[i] == v && v)
            return (struct npu_dpu_ref){RKD_IN(i), 0};
    if (b->nin >= RKD_MAX_IN) {
        set_err(b, NPU_ERR_UNSUPPORTED);
        return (struct npu_dpu_ref){RKD_IN(0), 0};
    }
    b->in[b->nin] = v;
    return (struct npu_dpu_ref){RKD_IN(b->nin++), 0};
}

static inline uint64_t
mix_round(uint64_t acc, uint64_t w)
{
    acc += w * 0xc2b2ae3d27d4eb4full;
    acc = (acc << 31) | (acc >> 33);
    return acc * 0x9e3779b185ebca87ull;
}

/* A content hash of a constant, only to tell one builder's constants apart (equal
 * contents, equal hash; a dry run, which keeps no copy, takes equal hashes of equal size
 * for equal contents, as it did with FNV-1a): four independent multiply-rotate lanes over
 * 8-byte words (XXH64's round), several times faster than a byte-serial FNV-1a over the
 * megabytes of weights priced in dry runs. */
static uint64_t
const_hash(const void *data, uint64_t n)
{
    const unsigned char *p = data;
    uint64_t a[4] = {0x60ea27eeadc0b5d6ull, 0xc2b2ae3d27d4eb4full, 0ull, 0x61c8864e7a143579ull};
    uint64_t i = 0, w[4];
    for (; i + 32 <= n; i += 32) {
        memcpy(w, p + i, 32);
        for (int k = 0; k < 4; k++)
            a[k] = mix_round(a[k], w[k]);
    }
    uint64_t h = n * 0x9e3779b185ebca87ull;
    for (int k = 0; k < 4; k++)
        h = mix_round(h ^ a[k], (uint64_t)k + 1);
    for (; i + 8 <= n; i += 8) {
        memcpy(w, p + i, 8);
        h = mix_round(h, w[0]);
    }
    for (; i < n; i++)
        h = mix_round(h, p[i]);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return h;
}

struct npu_dpu_ref
rkd_const(struct rkd *b, const char *suffix, const void *data, uint64_t bytes)
{
    struct npu_value *v = NULL;
    /* identical constants (weights of repeated broadcasts, masks) are one input */
    uint64_t hsh = const_hash(data, bytes) | 1u;
    for (int i = 0; i < b->nin; i++)
        if (b->in_hash[i] == hsh && b->in_size[i] == bytes &&
            (!b->in[i] || !memcmp(npu_value_data(b->in[i]), data, bytes)))
            return (struct npu_dpu_ref){RKD_IN(i), 0};
    if (b->cx) {
        char name[160];
        snprintf(name, sizeof(name), "%.100s.%.40s", b->orig->out[0]->name, suffix);
        int64_t d = (int64_t)bytes;
        v = npu_lower_const(b->cx, name, NPU_DTYPE_UINT8, 1, &d, data);
        if (!v)
            set_err(b, NPU_ERR_NOMEM);
    }
    if (b->nin >= RKD_MAX_IN) {
        set_err(b, NPU_ERR_UNSUPPORTED);
        return (struct npu_dpu_ref){RKD_IN(0), 0};
    }
    b->in[b->nin] = v;
    b->in_hash[b->nin] = hsh;
    b->in_size[b->nin] = bytes;
    return (struct npu_dpu_ref){RKD_IN(b->nin++), 0};
}

struct npu_dpu_ref
rkd_temp(struct rkd *b, uint64_t bytes)
{
    if (b->nout >= RKD_MAX_OUT) {
        set_err(b, NPU_ERR_UNSUPPORTED);
        return (struct npu_dpu_ref){RKD_OUT(0), 0};
    }
    uint64_t sz = NPU_ALIGN(bytes ? bytes : 16, 64);
    if (sz / 16 > 8192)
        sz = NPU_ALIGN(sz, 4096ull * 16); /* see npu_rk_dpu_infer: [1, 8, H, 4096] */
    b->out_bytes[b->nout] = sz;
    return (struct npu_dpu_ref){RKD_OUT(b->nout++), 0};
}

static void
add(struct rkd *b, const struct rkd_task *t, bool uses_lut)
{
    if (b->err)
        return;
    if (b->ntasks == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        struct rkd_task *nt = realloc(b->tasks, sizeof(*nt) * (size_t)cap);
        if (!nt) {
            set_err(b, NPU_ERR_NOMEM);
            return;
        }
        b->tasks = nt;
        b->cap = cap;
    }
    struct npu_dpu_lut lut;
    if (t->kind == RKD_LUT && npu_dpu_lut_from_id(t->u.lut.id, &lut)) {
        set_err(b, NPU_ERR_INVALID);
        return;
    }
    double before = b->cost.s;
    uint64_t bytes = b->cost.dma_bytes;
    enum npu_status st = rkd_emit_task(&b->dry, t, &lut, &b->cost);
    if (!st && b->cx)
        npu_dbg(DOM, "node '%s' task %d (kind %d): modeled %.2f us, %llu bytes", b->orig->name,
                b->ntasks, t->kind, (b->cost.s - before) * 1e6,
                (unsigned long long)(b->cost.dma_bytes - bytes));
    if (st) {
        /* the emitter refused (logged): the lowering refuses the node */
        set_err(b, NPU_ERR_UNSUPPORTED);
        return;
    }
    b->tasks[b->ntasks++] = *t;
    b->lut_used_last = uses_lut;
}

void
rkd_pass(struct rkd *b, const struct npu_dpu_pass *p)
{
    struct rkd_task t = {.kind = RKD_PASS};
    t.u.pass = *p;
    add(b, &t, p->st.ew.lut != NULL);
}

void
rkd_conv(struct rkd *b, const struct npu_dpu_conv *c)
{
    struct rkd_task t = {.kind = RKD_CONV};
    t.u.conv = *c;
    add(b, &t, c->st.ew.lut != NULL);
}

void
rkd_pool(struct rkd *b, const struct npu_dpu_pool *p)
{
    struct rkd_task t = {.kind = RKD_POOL};
    t.u.pool = *p;
    add(b, &t, false);
}

void
rkd_tp(struct rkd *b, const struct npu_dpu_tp *tp)
{
    struct rkd_task t = {.kind = RKD_TP};
    t.u.tp = *tp;
    add(b, &t, false);
}

/*
 * LUT rule: the tables are per-core RAM outside the register groups, written while the PC
 * fetches the upload task. With TASK_PP_EN the PC fetches a task while the previous one
 * runs (facts §1.4), so an upload must not follow a task that reads the LUT: a guard task
 * (no LUT) goes first when the previous task might (always at the start of a node). RKNN
 * keeps its tanh upload in a task of its own (NOTES S19).
 */
void
rkd_lut(struct rkd *b, uint32_t id)
{
    if (b->err || id == b->lut_resident)
        return;
    if (b->scratch < 0) {
        struct npu_dpu_ref r = rkd_temp(b, 64);
        b->scratch = (int)(r.buffer - RKD_OUT(0));
    }
    struct npu_dpu_ref scratch = {RKD_OUT((uint32_t)b->scratch), 0};
    if (b->lut_used_last) {
        struct rkd_task g = {.kind = RKD_GUARD};
        g.u.lut.scratch = scratch;
        add(b, &g, false);
    }
    struct rkd_task t = {.kind = RKD_LUT};
    t.u.lut.id = id;
    t.u.lut.scratch = scratch;
    add(b, &t, false);
    if (!b->err)
        b->lut_resident = id;
}

static enum npu_status
set_chunks(struct npu_graph *g, struct npu_node *r, const int64_t *tv, const float *fv,
           size_t ntask)
{
    enum npu_status st = NPU_OK;
    for (size_t k = 0, c = 0; k < ntask && !st; k += RKD_CHUNK, c++) {
        size_t m = ntask - k < RKD_CHUNK ? ntask - k : RKD_CHUNK;
        char tn[32], fn[32];
        snprintf(tn, sizeof(tn), c ? "tasks_%zu" : "tasks", c);
        snprintf(fn, sizeof(fn), c ? "fvals_%zu" : "fvals", c);
        if (!(st = npu_node_set_ints(g, r, tn, tv + k * RKD_FIELDS, m * RKD_FIELDS)))
            st = npu_node_set_floats(g, r, fn, fv + k * RKD_FVALS, m * RKD_FVALS);
    }
    return st;
}

enum npu_status
rkd_finish(struct rkd *b, int idx, enum npu_dtype dt, int ndim, const int64_t *dims,
           const uint32_t view[3], uint32_t order)
{
    if (b->err)
        return b->err;
    if (!b->ntasks)
        return NPU_ERR_INVALID;
    if (!b->cx)
        return NPU_OK;
    struct npu_graph *g = b->cx->g;
    size_t nt = (size_t)b->ntasks * RKD_FIELDS, nv = (size_t)b->ntasks * RKD_FVALS;
    int64_t *tv = malloc(nt * sizeof(int64_t));
    float *fv = malloc(nv * sizeof(float));
    enum npu_status st = NPU_ERR_NOMEM;
    if (!tv || !fv)
        goto out;
    for (int k = 0; k < b->ntasks; k++)
        rkd_encode(&b->tasks[k], tv + (size_t)k * RKD_FIELDS, fv + (size_t)k * RKD_FVALS);
    struct npu_node *r =
        npu_lower_new(b->cx, b->orig, NPU_OP_RK_DPU, b->orig->name, b->in, b->nin, b->nout);
    if (!r)
        goto out;
    int64_t vw[3] = {view[0], view[1], view[2]};
    int64_t temps[RKD_MAX_OUT];
    for (int j = 1; j < b->nout; j++)
        temps[j - 1] = (int64_t)b->out_bytes[j];
    if ((st = npu_node_set_ints(g, r, "shape", dims, (size_t)ndim)) ||
        (st = npu_node_set_string(g, r, "dtype", npu_dtype_name(dt))) ||
        (st = npu_node_set_ints(g, r, "view", vw, 3)) ||
        (st = npu_node_set_string(g, r, "order", order == NPU_VIEW_NCHW ? "nchw" : "hwc")) ||
        (b->nout > 1 && (st = npu_node_set_ints(g, r, "temps", temps, (size_t)b->nout - 1))) ||
        (st = set_chunks(g, r, tv, fv, (size_t)b->ntasks)) ||
        (st = npu_node_set_float(g, r, "modeled_us", (float)(b->cost.s * 1e6))) ||
        (b->nonneg && (st = npu_node_set_int(g, r, "nonneg", 1))) ||
        (st = npu_lower_done(b->cx, r)))
        goto out;
    st = npu_lower_result(b->cx, b->orig, idx, r->out[0]);
    b->finished = !st;
out:
    free(tv);
    free(fv);
    return st;
}

enum npu_status
rkd_alias(struct rkd *b, int idx, struct npu_value *src, int kind, const int64_t *heads,
          enum npu_dtype dt, int ndim, const int64_t *dims, const uint32_t view[3], uint32_t order)
{
    if (b->err)
        return b->err;
    if (!b->cx)
        return NPU_OK;
    struct npu_graph *g = b->cx->g;
    struct npu_node *r = npu_lower_new(b->cx, b->orig, NPU_OP_RK_DPU, b->orig->name, &src, 1, 1);
    if (!r)
        return NPU_ERR_NOMEM;
    int64_t vw[3] = {view[0], view[1], view[2]};
    enum npu_status st;
    if ((st = npu_node_set_int(g, r, "alias", kind)) ||
        (kind == 2 && (st = npu_node_set_ints(g, r, "heads", heads, 3))) ||
        (st = npu_node_set_ints(g, r, "shape", dims, (size_t)ndim)) ||
        (st = npu_node_set_string(g, r, "dtype", npu_dtype_name(dt))) ||
        (st = npu_node_set_ints(g, r, "view", vw, 3)) ||
        (st = npu_node_set_string(g, r, "order", order == NPU_VIEW_NCHW ? "nchw" : "hwc")) ||
        (st = npu_node_set_float(g, r, "modeled_us", 0.0f)) || (st = npu_lower_done(b->cx, r)))
        return st;
    st = npu_lower_result(b->cx, b->orig, idx, r->out[0]);
    b->finished = !st;
    return st;
}
