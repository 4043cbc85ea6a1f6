/* SPDX-License-Identifier: MIT */
/*
 * dpu-rk.c: rk.Dpu, the lowered form of every DPU / PPU op: its attribute format (encode,
 * decode), inference, task count and emission. Lowering builds rk.Dpu nodes with
 * backend/dpu-build.c.
 *
 *   %y.npu[, %t1, ...] = rk.Dpu(%in0, %in1, ...) {shape, dtype, view, order, temps,
 *                                                  tasks, fvals, modeled_us}
 *
 * Output 0 is the op's result (logical dims `shape`, element type `dtype`, NC1HWC2 `view`
 * and `order`, docs/npu-backend.md §2); outputs 1.. are scratch buffers of `temps` bytes
 * (f16 [bytes / 2]) the tasks use between each other. `tasks` holds RKD_FIELDS ints per
 * hardware task and `fvals` RKD_FVALS floats: the task kind and every parameter of the
 * emitter call (maps name node inputs and outputs plus byte offsets and strides, stage
 * operands, geometry, LUT table ids), so codegen of the printed and parsed IR emits the same
 * bytes (route b). Inference validates everything the emitters rely on: kinds, value
 * references, and that every map, weight set and operand array lies inside its value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-rk.h"

#define DOM "dpu"

/* ---- the task record ------------------------------------------------------------------ */

enum {
    F_KIND = 0,
    F_A = 1, /* map: value, offset, type, c, h, w, line, surf */
    F_B = 9,
    F_E = 17,
    F_BS = 25, /* alu src, alu minus, mul src, relu, relux, mem value, mem offset */
    F_BN = 32,
    F_EW = 39, /* op, relu, relux, lut id */
    F_X = 43,  /* kind-specific geometry: 10 ints */
};
_Static_assert(F_X + 10 == RKD_FIELDS, "RKD_FIELDS (npu-rk.h) is the record size");
enum { V_BS_ALU, V_BS_MUL, V_BS_RELUX, V_BN_ALU, V_BN_MUL, V_BN_RELUX, V_EW_RELUX, V_COUNT };
_Static_assert(V_COUNT == RKD_FVALS, "RKD_FVALS (npu-rk.h) is the float count");

/* A reference to input i is i; to output j, -(j + 1). */
static int64_t
ref_code(struct npu_dpu_ref r)
{
    if (r.buffer >= RKD_OUT(0))
        return -(int64_t)(r.buffer - RKD_OUT(0)) - 1;
    return (int64_t)(r.buffer - RKD_IN(0));
}

static struct npu_dpu_ref
code_ref(int64_t code, int64_t off)
{
    struct npu_dpu_ref r = {code < 0 ? RKD_OUT((uint32_t)(-code - 1)) : RKD_IN((uint32_t)code),
                            (uint32_t)off};
    return r;
}

static void
put_map(int64_t *f, const struct npu_dpu_map *m)
{
    f[0] = ref_code(m->ref);
    f[1] = m->ref.offset;
    f[2] = m->type;
    f[3] = m->c;
    f[4] = m->h;
    f[5] = m->w;
    f[6] = npu_dpu_map_line(m);
    f[7] = npu_dpu_map_surf(m);
}

static struct npu_dpu_map
get_map(const int64_t *f)
{
    struct npu_dpu_map m = {.ref = code_ref(f[0], f[1]),
                            .type = (enum npu_dpu_type)f[2],
                            .c = (uint32_t)f[3],
                            .h = (uint32_t)f[4],
                            .w = (uint32_t)f[5],
                            .line = (uint32_t)f[6],
                            .surf = (uint32_t)f[7]};
    return m;
}

static void
put_stage(int64_t *f, float *v, const struct npu_dpu_stage *s)
{
    f[0] = s->alu;
    f[1] = s->alu_minus;
    f[2] = s->mul;
    f[3] = s->relu;
    f[4] = s->relux;
    struct npu_dpu_ref m = s->alu == NPU_DPU_SRC_MEM ? s->alu_mem : s->mul_mem;
    bool mem = s->alu == NPU_DPU_SRC_MEM || s->mul == NPU_DPU_SRC_MEM;
    f[5] = mem ? ref_code(m) : 0;
    f[6] = mem ? m.offset : 0;
    v[0] = s->alu == NPU_DPU_SRC_REG ? s->alu_value : 0;
    v[1] = s->mul == NPU_DPU_SRC_REG ? s->mul_value : 0;
    v[2] = s->relux ? s->relux_value : 0;
}

static void
get_stage(const int64_t *f, const float *v, struct npu_dpu_stage *s)
{
    memset(s, 0, sizeof(*s));
    s->alu = (enum npu_dpu_src)f[0];
    s->alu_minus = f[1] != 0;
    s->mul = (enum npu_dpu_src)f[2];
    s->relu = f[3] != 0;
    s->relux = f[4] != 0;
    if (s->alu == NPU_DPU_SRC_MEM)
        s->alu_mem = code_ref(f[5], f[6]);
    if (s->mul == NPU_DPU_SRC_MEM)
        s->mul_mem = code_ref(f[5], f[6]);
    s->alu_value = v[0];
    s->mul_value = v[1];
    s->relux_value = v[2];
}

static void
put_stages(int64_t *f, float *v, const struct npu_dpu_stages *st)
{
    put_stage(f + F_BS, v + V_BS_ALU, &st->bs);
    put_stage(f + F_BN, v + V_BN_ALU, &st->bn);
    f[F_EW] = st->ew.op;
    f[F_EW + 1] = st->ew.relu;
    f[F_EW + 2] = st->ew.relux;
    f[F_EW + 3] = st->ew.lut ? st->ew.lut->id : 0;
    if (st->ew.op != NPU_DPU_EW_NONE)
        put_map(f + F_E, &st->ew.operand);
    v[V_EW_RELUX] = st->ew.relux ? st->ew.relux_value : 0;
}

/* Decoded task with its LUT table storage. */
struct dec {
    struct rkd_task t;
    struct npu_dpu_lut lut;
};

static enum npu_status
get_stages(const int64_t *f, const float *v, struct npu_dpu_stages *st, struct npu_dpu_lut *lut)
{
    memset(st, 0, sizeof(*st));
    get_stage(f + F_BS, v + V_BS_ALU, &st->bs);
    get_stage(f + F_BN, v + V_BN_ALU, &st->bn);
    st->ew.op = (enum npu_dpu_ew_op)f[F_EW];
    st->ew.relu = f[F_EW + 1] != 0;
    st->ew.relux = f[F_EW + 2] != 0;
    st->ew.relux_value = v[V_EW_RELUX];
    if (f[F_EW + 3]) {
        if (npu_dpu_lut_from_id((uint32_t)f[F_EW + 3], lut))
            return NPU_ERR_INVALID;
        st->ew.lut = lut;
    }
    if (st->ew.op != NPU_DPU_EW_NONE)
        st->ew.operand = get_map(f + F_E);
    return NPU_OK;
}

void
rkd_encode(const struct rkd_task *t, int64_t *f, float *v)
{
    memset(f, 0, sizeof(int64_t) * RKD_FIELDS);
    memset(v, 0, sizeof(float) * RKD_FVALS);
    f[F_KIND] = t->kind;
    int64_t *x = f + F_X;
    switch (t->kind) {
    case RKD_PASS:
        put_map(f + F_A, &t->u.pass.in);
        put_map(f + F_B, &t->u.pass.out);
        put_stages(f, v, &t->u.pass.st);
        break;
    case RKD_CONV: {
        const struct npu_dpu_conv *c = &t->u.conv;
        put_map(f + F_A, &c->in);
        put_map(f + F_B, &c->out);
        put_stages(f, v, &c->st);
        x[0] = c->kernels;
        x[1] = c->kh;
        x[2] = c->kw;
        x[3] = c->sy;
        x[4] = c->sx;
        x[5] = c->pad_top;
        x[6] = c->pad_left;
        x[7] = (c->depthwise ? 1 : 0) | (c->data_reuse ? 2 : 0);
        x[8] = ref_code(c->weights);
        x[9] = c->weights.offset;
        break;
    }
    case RKD_POOL: {
        const struct npu_dpu_pool *p = &t->u.pool;
        put_map(f + F_A, &p->in);
        put_map(f + F_B, &p->out);
        x[0] = p->op;
        x[1] = p->kh;
        x[2] = p->kw;
        x[3] = p->sy;
        x[4] = p->sx;
        x[5] = p->pad_top;
        x[6] = p->pad_left;
        x[7] = p->pad_bottom;
        x[8] = p->pad_right;
        break;
    }
    case RKD_TP: {
        const struct npu_dpu_tp *p = &t->u.tp;
        put_map(f + F_A, &p->in);
        f[F_B] = ref_code(p->dst);
        f[F_B + 1] = p->dst.offset;
        x[0] = p->grid_w;
        x[1] = p->grid_line;
        x[2] = p->chan_stride;
        break;
    }
    case RKD_LUT:
    case RKD_GUARD:
        f[F_A] = ref_code(t->u.lut.scratch);
        f[F_A + 1] = t->u.lut.scratch.offset;
        f[F_EW + 3] = t->u.lut.id;
        break;
    }
}

static enum npu_status
decode(const int64_t *f, const float *v, struct dec *d)
{
    memset(d, 0, sizeof(*d));
    struct rkd_task *t = &d->t;
    t->kind = (enum rkd_kind)f[F_KIND];
    const int64_t *x = f + F_X;
    switch (t->kind) {
    case RKD_PASS:
        t->u.pass.in = get_map(f + F_A);
        t->u.pass.out = get_map(f + F_B);
        return get_stages(f, v, &t->u.pass.st, &d->lut);
    case RKD_CONV: {
        struct npu_dpu_conv *c = &t->u.conv;
        c->in = get_map(f + F_A);
        c->out = get_map(f + F_B);
        c->kernels = (uint32_t)x[0];
        c->kh = (uint32_t)x[1];
        c->kw = (uint32_t)x[2];
        c->sy = (uint32_t)x[3];
        c->sx = (uint32_t)x[4];
        c->pad_top = (uint32_t)x[5];
        c->pad_left = (uint32_t)x[6];
        c->depthwise = (x[7] & 1) != 0;
        c->data_reuse = (x[7] & 2) != 0;
        c->weights = code_ref(x[8], x[9]);
        return get_stages(f, v, &c->st, &d->lut);
    }
    case RKD_POOL: {
        struct npu_dpu_pool *p = &t->u.pool;
        p->in = get_map(f + F_A);
        p->out = get_map(f + F_B);
        p->op = (enum npu_dpu_pool_op)x[0];
        p->kh = (uint32_t)x[1];
        p->kw = (uint32_t)x[2];
        p->sy = (uint32_t)x[3];
        p->sx = (uint32_t)x[4];
        p->pad_top = (uint32_t)x[5];
        p->pad_left = (uint32_t)x[6];
        p->pad_bottom = (uint32_t)x[7];
        p->pad_right = (uint32_t)x[8];
        return NPU_OK;
    }
    case RKD_TP: {
        struct npu_dpu_tp *p = &t->u.tp;
        p->in = get_map(f + F_A);
        p->dst = code_ref(f[F_B], f[F_B + 1]);
        p->grid_w = (uint32_t)x[0];
        p->grid_line = (uint32_t)x[1];
        p->chan_stride = (uint32_t)x[2];
        return NPU_OK;
    }
    case RKD_LUT:
    case RKD_GUARD:
        t->u.lut.scratch = code_ref(f[F_A], f[F_A + 1]);
        t->u.lut.id = (uint32_t)f[F_EW + 3];
        if (t->kind == RKD_LUT)
            return npu_dpu_lut_from_id(t->u.lut.id, &d->lut);
        return NPU_OK;
    }
    return NPU_ERR_INVALID;
}

/* Runs the emitter of one task on stream s. */
enum npu_status
rkd_emit_task(struct npu_stream *s, const struct rkd_task *t, const struct npu_dpu_lut *lut,
              struct npu_dpu_cost *cost)
{
    switch (t->kind) {
    case RKD_PASS: return npu_dpu_emit_pass(s, &t->u.pass, cost);
    case RKD_CONV: return npu_dpu_emit_conv(s, &t->u.conv, cost);
    case RKD_POOL: return npu_dpu_emit_pool(s, &t->u.pool, cost);
    case RKD_TP: return npu_dpu_emit_tp(s, &t->u.tp, cost);
    case RKD_LUT: return npu_dpu_emit_lut_upload(s, lut, t->u.lut.scratch, cost);
    case RKD_GUARD: return npu_dpu_emit_guard(s, t->u.lut.scratch, cost);
    }
    return NPU_ERR_INVALID;
}

/* ---- value references: bounds ------------------------------------------------------- */

struct refcheck {
    const struct npu_node *n;
    uint64_t in_bytes[RKD_MAX_IN];
    uint64_t out_bytes[RKD_MAX_OUT];
};

static enum npu_status
check_span(const struct refcheck *rc, struct npu_dpu_ref r, uint64_t bytes, const char *what)
{
    uint64_t size;
    if (r.buffer >= RKD_OUT(0)) {
        uint32_t j = r.buffer - RKD_OUT(0);
        if (j >= (uint32_t)rc->n->nout)
            goto bad;
        size = rc->out_bytes[j];
    } else {
        uint32_t i = r.buffer - RKD_IN(0);
        if (r.buffer < RKD_IN(0) || i >= (uint32_t)rc->n->nin)
            goto bad;
        size = rc->in_bytes[i];
    }
    if ((uint64_t)r.offset + bytes > size) {
        npu_err(DOM, "node '%s' (rk.Dpu): %s [%u, +%llu) lies outside its %llu-byte value",
                rc->n->name, what, r.offset, (unsigned long long)bytes, (unsigned long long)size);
        return NPU_ERR_INVALID;
    }
    return NPU_OK;
bad:
    npu_err(DOM, "node '%s' (rk.Dpu): %s names a value the node does not have", rc->n->name, what);
    return NPU_ERR_INVALID;
}

static enum npu_status
check_map_span(const struct refcheck *rc, const struct npu_dpu_map *m, const char *what)
{
    if (m->type > NPU_DPU_INT8 || !m->w || !m->h || !m->c || m->w > 8192 || m->h > 8192 ||
        m->c > 8192 || npu_dpu_map_line(m) < m->w || npu_dpu_map_line(m) > (1u << 20) ||
        npu_dpu_map_surf(m) > (1u << 27)) {
        npu_err(DOM, "node '%s' (rk.Dpu): bad %s map", rc->n->name, what);
        return NPU_ERR_INVALID;
    }
    return check_span(rc, m->ref, npu_dpu_map_extent(m), what);
}

static enum npu_status
check_stages_span(const struct refcheck *rc, const struct npu_dpu_stages *st, uint32_t c)
{
    enum npu_status r;
    const struct npu_dpu_stage *s2[2] = {&st->bs, &st->bn};
    for (int i = 0; i < 2; i++) {
        const struct npu_dpu_stage *s = s2[i];
        if (s->alu > NPU_DPU_SRC_MEM || s->mul > NPU_DPU_SRC_MEM)
            return NPU_ERR_INVALID;
        if (s->alu == NPU_DPU_SRC_MEM && (r = check_span(rc, s->alu_mem, 4ull * c, "ALU operands")))
            return r;
        if (s->mul == NPU_DPU_SRC_MEM && (r = check_span(rc, s->mul_mem, 4ull * c, "MUL operands")))
            return r;
    }
    if (st->ew.op > NPU_DPU_EW_MIN)
        return NPU_ERR_INVALID;
    if (st->ew.op != NPU_DPU_EW_NONE && (r = check_map_span(rc, &st->ew.operand, "EW operand")))
        return r;
    return NPU_OK;
}

static enum npu_status
check_task_span(const struct refcheck *rc, const struct rkd_task *t)
{
    enum npu_status r;
    switch (t->kind) {
    case RKD_PASS:
        if ((r = check_map_span(rc, &t->u.pass.in, "input")) ||
            (r = check_map_span(rc, &t->u.pass.out, "output")))
            return r;
        return check_stages_span(rc, &t->u.pass.st, t->u.pass.in.c);
    case RKD_CONV: {
        const struct npu_dpu_conv *c = &t->u.conv;
        struct npu_weight_layout wl;
        struct npu_dpu_map o = c->out;
        if (o.type > NPU_DPU_INT8)
            return NPU_ERR_INVALID;
        o.c =
            (o.c + npu_dpu_type_c2(o.type) - 1) / npu_dpu_type_c2(o.type) * npu_dpu_type_c2(o.type);
        if ((r = check_map_span(rc, &c->in, "input")) || (r = check_map_span(rc, &o, "output")))
            return r;
        if (npu_weight_layout_init(&wl, 2, c->kernels, c->in.c, c->kh ? c->kh : 1,
                                   c->kw ? c->kw : 1, c->depthwise))
            return NPU_ERR_INVALID;
        if ((r = check_span(rc, c->weights, wl.total_bytes, "weights")))
            return r;
        return check_stages_span(rc, &c->st, o.c);
    }
    case RKD_POOL:
        if ((r = check_map_span(rc, &t->u.pool.in, "input")))
            return r;
        return check_map_span(rc, &t->u.pool.out, "output");
    case RKD_TP: {
        const struct npu_dpu_tp *p = &t->u.tp;
        if ((r = check_map_span(rc, &p->in, "input")))
            return r;
        uint64_t px = (uint64_t)p->in.w * p->in.h;
        if (!p->grid_w || px % 8 || (px / 8) % p->grid_w || p->grid_line > (1u << 20) ||
            p->chan_stride > (1u << 24))
            return NPU_ERR_INVALID;
        uint64_t gh = px / 8 / p->grid_w;
        uint64_t ext =
            ((uint64_t)(p->in.c - 1) * p->chan_stride + (gh - 1) * p->grid_line + p->grid_w) * 16;
        return check_span(rc, p->dst, ext, "transpose output");
    }
    case RKD_LUT:
    case RKD_GUARD: return check_span(rc, t->u.lut.scratch, 32, "LUT scratch");
    }
    return NPU_ERR_INVALID;
}

/* The IR text form keeps lists to 1024 entries: tasks and fvals are split into attributes
 * "tasks", "tasks_1", ... of RKD_CHUNK tasks each. Gathers them (malloc'd; NULL if none or
 * inconsistent). */

static bool
gather(const struct npu_node *n, int64_t **tasks_out, float **fv_out, size_t *ntasks)
{
    size_t nt = 0, nv = 0;
    *tasks_out = NULL;
    *fv_out = NULL;
    *ntasks = 0;
    for (int k = 0;; k++) {
        char tn[32], fn[32];
        snprintf(tn, sizeof(tn), k ? "tasks_%d" : "tasks", k);
        snprintf(fn, sizeof(fn), k ? "fvals_%d" : "fvals", k);
        size_t a = 0, c = 0;
        const int64_t *t = npu_node_ints(n, tn, &a);
        const float *f = npu_node_floats(n, fn, &c);
        if (!t && !f)
            break;
        if (!t || !f || !a || a % RKD_FIELDS || c != a / RKD_FIELDS * RKD_FVALS ||
            a / RKD_FIELDS > RKD_CHUNK)
            goto bad;
        int64_t *nt_ = realloc(*tasks_out, (nt + a) * sizeof(int64_t));
        if (!nt_)
            goto bad;
        *tasks_out = nt_;
        float *nf = realloc(*fv_out, (nv + c) * sizeof(float));
        if (!nf)
            goto bad;
        *fv_out = nf;
        memcpy(*tasks_out + nt, t, a * sizeof(int64_t));
        memcpy(*fv_out + nv, f, c * sizeof(float));
        nt += a;
        nv += c;
    }
    *ntasks = nt / RKD_FIELDS;
    return true;
bad:
    free(*tasks_out);
    free(*fv_out);
    *tasks_out = NULL;
    *fv_out = NULL;
    return false;
}

int
npu_rk_dpu_task_count(const struct npu_node *n)
{
    if (npu_node_int(n, "alias", 0))
        return 0;
    int64_t *tasks = NULL;
    float *fv = NULL;
    size_t nt = 0;
    if (!gather(n, &tasks, &fv, &nt))
        return -1;
    /* a record may emit several hardware tasks (convolutions split into row tiles): count
     * them by emitting into a private stream (symbolic addresses are enough) */
    struct npu_stream s;
    npu_stream_init(&s);
    int count = 0;
    for (size_t k = 0; k < nt && count >= 0; k++) {
        struct dec d;
        if (decode(tasks + k * RKD_FIELDS, fv + k * RKD_FVALS, &d) ||
            rkd_emit_task(&s, &d.t, &d.lut, NULL))
            count = -1;
    }
    if (count >= 0)
        count = (int)s.n_tasks;
    npu_stream_fini(&s);
    free(tasks);
    free(fv);
    return count;
}

/* ---- inference and emission ------------------------------------------------------------ */

static uint64_t
value_bytes(const struct npu_value *v)
{
    if (!v)
        return 0;
    if (v->kind == NPU_VALUE_CONST)
        return (uint64_t)npu_tensor_nbytes(&v->t);
    return npu_rk_value_bytes(v);
}

static enum npu_status
fail(const struct npu_node *n, const char *what)
{
    npu_err(DOM, "node '%s' (rk.Dpu): %s", n->name, what);
    return NPU_ERR_INVALID;
}

static enum npu_status infer_checked(struct npu_node *n, const int64_t *shape, size_t nshape,
                                     const int64_t *temps, size_t ntemps, const int64_t *tasks,
                                     const float *fv, size_t ntask);

enum npu_status
npu_rk_dpu_infer(struct npu_graph *g, struct npu_node *n)
{
    (void)g;
    size_t nshape = 0, ntemps = 0, ntask = 0;
    const int64_t *shape = npu_node_ints(n, "shape", &nshape);
    const int64_t *temps = npu_node_ints(n, "temps", &ntemps);
    int64_t *tasks = NULL;
    float *fv = NULL;
    if (!gather(n, &tasks, &fv, &ntask))
        return fail(n, "tasks / fvals malformed");
    enum npu_status st = infer_checked(n, shape, nshape, temps, ntemps, tasks, fv, ntask);
    free(tasks);
    free(fv);
    return st;
}

static enum npu_status
infer_checked(struct npu_node *n, const int64_t *shape, size_t nshape, const int64_t *temps,
              size_t ntemps, const int64_t *tasks, const float *fv, size_t ntask)
{
    const char *dts = npu_node_string(n, "dtype", "f16");
    enum npu_dtype dt = npu_dtype_from_name(dts);
    if (!shape || nshape > NPU_MAX_DIMS || n->nout < 1 || n->nout > RKD_MAX_OUT ||
        n->nin > RKD_MAX_IN)
        return fail(n, "needs a shape and at most 8 outputs / 32 inputs");
    if (dt == NPU_DTYPE_UNDEFINED ||
        (npu_dtype_size(dt) != 2 && npu_dtype_size(dt) != 4 && npu_dtype_size(dt) != 1))
        return fail(n, "bad dtype");
    if ((size_t)n->nout != 1 + (temps ? ntemps : 0))
        return fail(n, "outputs and temps disagree");
    int64_t alias = npu_node_int(n, "alias", 0);
    if (alias) {
        /* a view of input 0's bytes (no task; docs/npu-dpu-ops.md "aliases") */
        if ((alias != 1 && alias != 2) || n->nin != 1 || tasks || fv || temps)
            return fail(n, "an alias has one input, no tasks and no temps");
        if (alias == 2) {
            size_t nh = 0;
            const int64_t *hd = npu_node_ints(n, "heads", &nh);
            if (!hd || nh != 3 || hd[0] < 1 || hd[1] < 1 || hd[2] < 1)
                return fail(n, "a heads alias needs heads = [rows, heads, D]");
        }
    } else if (!ntask) {
        return fail(n, "no tasks");
    }
    for (int i = 0; i < n->nin; i++)
        if (!n->in[i])
            return fail(n, "absent input");
    struct npu_tensor *t0 = &n->out[0]->t;
    t0->dtype = dt;
    t0->ndim = (int)nshape;
    for (size_t i = 0; i < nshape; i++) {
        if (shape[i] < 1)
            return fail(n, "bad shape");
        t0->dims[i] = shape[i];
    }
    for (size_t j = 0; j < ntemps; j++) {
        /* a scratch buffer of B bytes is an f16 [1, 8, H, W] map with H W = B / 16 atoms
         * (W = B / 16 up to 8192, else 4096), so that it has an NC1HWC2 view */
        int64_t atoms = temps[j] / 16;
        if (temps[j] < 16 || temps[j] % 16 || temps[j] > ((int64_t)1 << 32) ||
            (atoms > 8192 && atoms % 4096))
            return fail(n, "temp sizes must be multiples of 16 bytes (of 64 KiB above 128 KiB)");
        struct npu_tensor *t = &n->out[j + 1]->t;
        t->dtype = NPU_DTYPE_FP16;
        t->ndim = 4;
        t->dims[0] = 1;
        t->dims[1] = 8;
        t->dims[2] = atoms > 8192 ? atoms / 4096 : 1;
        t->dims[3] = atoms > 8192 ? 4096 : atoms;
    }
    /* output 0 must have an NC1HWC2 view */
    uint32_t view[3];
    if (!npu_rk_view(n->out[0], view))
        return fail(n, "output view does not hold the shape");
    struct refcheck rc = {.n = n};
    for (int i = 0; i < n->nin; i++)
        rc.in_bytes[i] = value_bytes(n->in[i]);
    rc.out_bytes[0] = npu_rk_nc1hwc2_bytes(dt, view);
    for (size_t j = 0; j < ntemps; j++)
        rc.out_bytes[j + 1] = (uint64_t)temps[j];
    if (alias == 1 && rc.in_bytes[0] < rc.out_bytes[0])
        return fail(n, "alias larger than its input");
    for (size_t k = 0; k < ntask; k++) {
        struct dec d;
        if (decode(tasks + k * RKD_FIELDS, fv + k * RKD_FVALS, &d))
            return fail(n, "undecodable task");
        if (check_task_span(&rc, &d.t))
            return NPU_ERR_INVALID;
    }
    return NPU_OK;
}

/* Replaces symbolic refs by placed ones. */
struct placed {
    struct npu_ref_buf in[RKD_MAX_IN], out[RKD_MAX_OUT];
};

static void
place(const struct placed *p, struct npu_dpu_ref *r)
{
    struct npu_ref_buf b =
        r->buffer >= RKD_OUT(0) ? p->out[r->buffer - RKD_OUT(0)] : p->in[r->buffer - RKD_IN(0)];
    r->buffer = b.buffer;
    r->offset += b.offset;
}

static void
place_stages(const struct placed *p, struct npu_dpu_stages *st)
{
    if (st->bs.alu == NPU_DPU_SRC_MEM)
        place(p, &st->bs.alu_mem);
    if (st->bs.mul == NPU_DPU_SRC_MEM)
        place(p, &st->bs.mul_mem);
    if (st->bn.alu == NPU_DPU_SRC_MEM)
        place(p, &st->bn.alu_mem);
    if (st->bn.mul == NPU_DPU_SRC_MEM)
        place(p, &st->bn.mul_mem);
    if (st->ew.op != NPU_DPU_EW_NONE)
        place(p, &st->ew.operand.ref);
}

static void
place_task(const struct placed *p, struct rkd_task *t)
{
    switch (t->kind) {
    case RKD_PASS:
        place(p, &t->u.pass.in.ref);
        place(p, &t->u.pass.out.ref);
        place_stages(p, &t->u.pass.st);
        break;
    case RKD_CONV:
        place(p, &t->u.conv.in.ref);
        place(p, &t->u.conv.out.ref);
        place(p, &t->u.conv.weights);
        place_stages(p, &t->u.conv.st);
        break;
    case RKD_POOL:
        place(p, &t->u.pool.in.ref);
        place(p, &t->u.pool.out.ref);
        break;
    case RKD_TP:
        place(p, &t->u.tp.in.ref);
        place(p, &t->u.tp.dst);
        break;
    case RKD_LUT:
    case RKD_GUARD: place(p, &t->u.lut.scratch); break;
    }
}

enum npu_status
npu_rk_dpu_emit(struct npu_cg *cg, const struct npu_node *n)
{
    struct placed p;
    enum npu_status st = NPU_OK;
    if (npu_node_int(n, "alias", 0))
        return NPU_OK; /* a view: no task */
    int64_t *tasks = NULL;
    float *fv = NULL;
    size_t ntask = 0;
    if (!gather(n, &tasks, &fv, &ntask) || !ntask) {
        free(tasks);
        free(fv);
        return fail(n, "no tasks");
    }
    for (int i = 0; i < n->nin && !st; i++)
        st = npu_cg_addr(cg, n->in[i], &p.in[i]);
    for (int j = 0; j < n->nout && !st; j++)
        st = npu_cg_addr(cg, n->out[j], &p.out[j]);
    struct npu_stream *s = npu_cg_stream(cg);
    /* a write at a run-time position (dpu-state.c): record, stride, limit, extent */
    int64_t dyn[4] = {-1, 0, 0, 0};
    if (npu_node_attr(n, "dyn") &&
        (!npu_attr_ints_n(n, "dyn", dyn, 4) || dyn[0] < 0 || (size_t)dyn[0] >= ntask ||
         dyn[1] < 16 || dyn[1] > UINT32_MAX || dyn[2] < 1 || dyn[2] > UINT32_MAX || dyn[3] < 1 ||
         dyn[3] > UINT32_MAX || !npu_node_string(n, "dyn_pos", NULL)))
        st = fail(n, "dyn must be [record, stride, limit, extent] with dyn_pos");
    for (size_t k = 0; k < ntask && !st; k++) {
        struct dec d;
        if (decode(tasks + k * RKD_FIELDS, fv + k * RKD_FVALS, &d)) {
            st = fail(n, "undecodable task");
            break;
        }
        place_task(&p, &d.t);
        uint32_t before = s->n_tasks;
        if ((st = rkd_emit_task(s, &d.t, &d.lut, NULL))) {
            npu_err(DOM, "node '%s' (rk.Dpu) task %zu: %s", n->name, k, npu_stream_error(s));
        } else if ((int64_t)k == dyn[0]) {
            if (d.t.kind != RKD_PASS || s->n_tasks != before + 1) {
                st = fail(n, "the run-time write must be one copy task");
                break;
            }
            struct npu_ref_buf where = {d.t.u.pass.out.ref.buffer, d.t.u.pass.out.ref.offset};
            st = npu_cg_dynreloc(cg, before, where, npu_node_string(n, "dyn_pos", NULL),
                                 (uint32_t)dyn[1], (uint32_t)dyn[2], (uint32_t)dyn[3]);
        }
    }
    free(tasks);
    free(fv);
    return st;
}
