/* SPDX-License-Identifier: MIT */
/*
 * npu-onnx-upgrade.c: brings every node to the newest ONNX form of its op
 * (opset 21), so that inference, passes and kernels know one form only:
 * operands that older opsets gave as attributes become constant inputs
 * (Slice, Split, Squeeze/Unsqueeze, Reduce*, Pad, Clip, Dropout, Upsample and
 * Resize-10), legacy attributes are dropped or refused (BatchNormalization
 * `spatial`), and Softmax/LogSoftmax before 13 (which flattened to 2-D) are
 * rewritten when their axis is not the last. After inference it also makes
 * implicit geometry explicit: auto_pad becomes pads, Split gets its sizes.
 */
#include <stdlib.h>
#include <string.h>

#include "ir-priv.h"
#include "onnx-priv.h"

#define DOM "onnx"

#define UFAIL(st_, ...)                                                                            \
    do {                                                                                           \
        ir_node_err(n, __VA_ARGS__);                                                               \
        return st_;                                                                                \
    } while (0)

static struct npu_value *
const_ints_from_attr(struct onnx_ctx *c, struct npu_node *n, const char *attr)
{
    size_t cnt;
    const int64_t *v = npu_node_ints(n, attr, &cnt);
    char nm[160];
    snprintf(nm, sizeof(nm), "%.100s_%s", *n->name ? n->name : npu_op_name(n->op), attr);
    struct npu_value *cv =
        npu_graph_const_i64(c->g, nm, v ? v : (const int64_t[]){0}, (int)cnt, false);
    npu_node_del_attr(n, attr);
    return cv;
}

/* A scalar constant of dtype dt holding x (for Clip bounds, Pad value). */
static struct npu_value *
const_scalar(struct onnx_ctx *c, struct npu_node *n, const char *what, enum npu_dtype dt, double x)
{
    struct npu_tensor t = {.dtype = dt, .ndim = 0};
    unsigned char buf[8] = {0};
    t.data = buf;
    ir_store_f64(dt, buf, 0, x);
    char nm[160];
    snprintf(nm, sizeof(nm), "%.100s_%s", *n->name ? n->name : npu_op_name(n->op), what);
    return npu_graph_add_const(c->g, nm, &t);
}

static bool
is_reduce(enum npu_op op)
{
    switch (op) {
    case NPU_OP_REDUCE_MEAN:
    case NPU_OP_REDUCE_SUM:
    case NPU_OP_REDUCE_MAX:
    case NPU_OP_REDUCE_MIN:
    case NPU_OP_REDUCE_PROD:
    case NPU_OP_REDUCE_L2:
    case NPU_OP_REDUCE_SUM_SQUARE:
    case NPU_OP_REDUCE_L1:
    case NPU_OP_REDUCE_LOG_SUM:
    case NPU_OP_REDUCE_LOG_SUM_EXP: return true;
    default: return false;
    }
}

/* A Reshape to a constant shape with a 0 in it means "zero", not "copy". */
static enum npu_status
set_allowzero(struct npu_graph *g, struct npu_node *r, const int64_t *dims, int nd)
{
    for (int i = 0; i < nd; i++)
        if (!dims[i])
            return npu_node_set_int(g, r, "allowzero", 1);
    return NPU_OK;
}

/* Appends n (inputs/outputs already set), infers it. */
static enum npu_status
finish(struct onnx_ctx *c, struct npu_node *n)
{
    npu_graph_append(c->g, n);
    return npu_infer_node(c->g, n);
}

static struct npu_node *
clone_with(struct onnx_ctx *c, struct npu_node *tmp, struct npu_value **in, int nin,
           struct npu_value **out, int nout)
{
    struct npu_node *n = npu_node_new_v(c->g, tmp->op, tmp->name, in, nin, out, nout);
    if (!n)
        return NULL;
    n->attr = tmp->attr;
    n->nattr = tmp->nattr;
    n->cap_attr = tmp->cap_attr;
    return n;
}

/* Softmax-family before opset 13 coerced the input to 2-D at `axis`. When the
 * axis is the last one that is the same as the new per-axis form; otherwise
 * Flatten -> Softmax(axis=1) -> Reshape reproduces it. */
static enum npu_status
legacy_softmax(struct onnx_ctx *c, struct npu_node *n)
{
    struct npu_value *x = n->in[0];
    int64_t axis = npu_node_int(n, "axis", 1);
    int r = x->t.ndim;
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis > r || (r > 0 && axis >= r && r != 0))
        UFAIL(NPU_ERR_INVALID, "axis out of range");
    bool tail_ones = true;
    for (int i = (int)axis + 1; i < r; i++)
        if (x->t.dims[i] != 1)
            tail_ones = false;
    if (axis == r - 1 || tail_ones) {
        if (npu_node_set_int(c->g, n, "axis", axis))
            return NPU_ERR_NOMEM;
        return finish(c, n);
    }
    struct npu_graph *g = c->g;
    char nm[160];
    snprintf(nm, sizeof(nm), "%.100s_flat", *n->name ? n->name : "softmax");
    struct npu_node *fl = npu_node_new(g, NPU_OP_FLATTEN, nm, &x, 1, 1, NULL);
    if (!fl || npu_node_set_int(g, fl, "axis", axis))
        return NPU_ERR_NOMEM;
    enum npu_status st = finish(c, fl);
    if (st)
        return st;
    struct npu_value *y = n->out[0];
    struct npu_node *sm = npu_node_new(g, n->op, n->name, &fl->out[0], 1, 1, NULL);
    if (!sm || npu_node_set_int(g, sm, "axis", 1))
        return NPU_ERR_NOMEM;
    if ((st = finish(c, sm)))
        return st;
    struct npu_value *shape = npu_graph_const_i64(g, nm, x->t.dims, r, false);
    struct npu_value *rin[2] = {sm->out[0], shape};
    /* n's own output value is taken over by the Reshape. */
    y->producer = NULL;
    struct npu_node *rs = npu_node_new_v(g, NPU_OP_RESHAPE, nm, rin, 2, &y, 1);
    if (!shape || !rs || set_allowzero(g, rs, x->t.dims, r))
        return NPU_ERR_NOMEM;
    return finish(c, rs);
}

/* After inference: explicit pads instead of auto_pad. */
static enum npu_status
explicit_pads(struct onnx_ctx *c, struct npu_node *n)
{
    if (!npu_node_attr(n, "auto_pad"))
        return NPU_OK;
    int xi = 0, wi = n->op == NPU_OP_QLINEAR_CONV ? 3 : 1;
    const struct npu_tensor *x = &n->in[xi]->t;
    int ns = x->ndim - 2;
    int64_t k[NPU_MAX_DIMS], pads[2 * NPU_MAX_DIMS], osp[NPU_MAX_DIMS];
    size_t cnt;
    const int64_t *ks = npu_node_ints(n, "kernel_shape", &cnt);
    bool pool = n->op == NPU_OP_MAX_POOL || n->op == NPU_OP_AVERAGE_POOL;
    for (int i = 0; i < ns; i++)
        k[i] = pool ? ks[i] : n->in[wi]->t.dims[2 + i];
    enum npu_status st =
        ir_conv_geometry(n, ns, x->dims + 2, k, n->op == NPU_OP_CONV_TRANSPOSE, pool, pads, osp);
    if (st)
        return st;
    if (n->op == NPU_OP_CONV_TRANSPOSE && npu_node_attr(n, "output_shape"))
        return NPU_OK; /* output_shape drives the geometry; keep auto_pad */
    npu_node_del_attr(n, "auto_pad");
    return npu_node_set_ints(c->g, n, "pads", pads, (size_t)(2 * ns));
}

static bool
legacy_broadcast_op(enum npu_op op)
{
    switch (op) {
    case NPU_OP_ADD:
    case NPU_OP_SUB:
    case NPU_OP_MUL:
    case NPU_OP_DIV:
    case NPU_OP_POW:
    case NPU_OP_AND:
    case NPU_OP_OR:
    case NPU_OP_XOR:
    case NPU_OP_EQUAL:
    case NPU_OP_GREATER:
    case NPU_OP_LESS: return true;
    default: return false;
    }
}

/* Opsets 1 to 6: what changed before opset 7.
 *  - `consumed_inputs` (an in-place hint of opsets 1-5) is dropped;
 *  - binary ops with broadcast=1 broadcast B against A starting at `axis`
 *    (B's dims are A's dims axis..axis+rank(B)); numpy aligns from the right,
 *    so B gets trailing 1s (a reshaped constant, or a Reshape node);
 *  - Gemm's `broadcast` is dropped (numpy broadcasting of C is a superset);
 *  - Reshape 1-4 took the shape as an attribute; Cast 1-5 named the type;
 *    Concat 1-3 defaulted to axis 1;
 *  - Tile 1-5 and Upsample 1-6 have other operands: refused. */
static enum npu_status
legacy_opset(struct onnx_ctx *c, struct npu_node *n, enum npu_op op, struct npu_value **in,
             int *nin)
{
    struct npu_graph *g = c->g;
    npu_node_del_attr(n, "consumed_inputs");
    /* PRelu before 7: a slope of C values is per channel (dim 1). */
    bool prelu_channels = op == NPU_OP_PRELU && *nin >= 2 && in[1] && in[1]->t.ndim == 1 &&
                          in[0]->t.ndim > 2 && in[1]->t.dims[0] == in[0]->t.dims[1] &&
                          in[1]->t.dims[0] != 1;
    if (legacy_broadcast_op(op) || prelu_channels) {
        bool bc = prelu_channels || npu_node_int(n, "broadcast", 0) != 0;
        const struct npu_attr *ax = npu_node_attr(n, "axis");
        struct npu_attr chan = {.name = "axis", .type = NPU_ATTR_INT, .i = 1};
        if (prelu_channels)
            ax = &chan;
        if (bc && ax && *nin >= 2 && in[1]) {
            int ra = in[0]->t.ndim, rb = in[1]->t.ndim;
            int64_t a = ax->i < 0 ? ax->i + ra : ax->i;
            if (a < 0 || a + rb > ra)
                UFAIL(NPU_ERR_INVALID, "legacy broadcast axis %lld does not fit ranks %d and %d",
                      (long long)ax->i, ra, rb);
            int trailing = ra - (int)a - rb;
            if (trailing > 0) {
                int64_t d[NPU_MAX_DIMS];
                for (int i = 0; i < rb; i++)
                    d[i] = in[1]->t.dims[i];
                for (int i = 0; i < trailing; i++)
                    d[rb + i] = 1;
                char nm[160];
                snprintf(nm, sizeof(nm), "%.100s_bcast", *n->name ? n->name : npu_op_name(op));
                struct npu_value *shape = npu_graph_const_i64(g, nm, d, rb + trailing, false);
                struct npu_value *rin[2] = {in[1], shape};
                struct npu_node *r =
                    shape ? npu_node_new(g, NPU_OP_RESHAPE, nm, rin, 2, 1, NULL) : NULL;
                if (!r || set_allowzero(g, r, d, rb + trailing))
                    return NPU_ERR_NOMEM;
                enum npu_status st = finish(c, r);
                if (st)
                    return st;
                in[1] = r->out[0];
            }
        }
        npu_node_del_attr(n, "broadcast");
        npu_node_del_attr(n, "axis");
    }
    switch (op) {
    case NPU_OP_GEMM: npu_node_del_attr(n, "broadcast"); break;
    case NPU_OP_RESHAPE:
        if (npu_node_attr(n, "shape")) {
            if (!(in[1] = const_ints_from_attr(c, n, "shape")))
                return NPU_ERR_NOMEM;
            *nin = 2;
        }
        break;
    case NPU_OP_CAST: {
        const struct npu_attr *to = npu_node_attr(n, "to");
        if (to && to->type == NPU_ATTR_STRING) {
            static const char *const names[] = {"",        "FLOAT",  "UINT8",  "INT8",   "UINT16",
                                                "INT16",   "INT32",  "INT64",  "STRING", "BOOL",
                                                "FLOAT16", "DOUBLE", "UINT32", "UINT64"};
            int code = 0;
            for (int i = 1; i < (int)NPU_ARRAY_SIZE(names); i++)
                if (!strcmp(to->s, names[i]))
                    code = i;
            if (!code)
                UFAIL(NPU_ERR_UNSUPPORTED, "unknown target type '%s'", to->s);
            if (npu_node_set_int(g, n, "to", code))
                return NPU_ERR_NOMEM;
        }
        break;
    }
    case NPU_OP_CONCAT:
        if (c->opset < 4 && !npu_node_attr(n, "axis") && npu_node_set_int(g, n, "axis", 1))
            return NPU_ERR_NOMEM;
        break;
    case NPU_OP_TILE:
        if (c->opset < 6)
            UFAIL(NPU_ERR_UNSUPPORTED, "Tile before opset 6 (tiles/axis inputs) is not supported");
        break;
    case NPU_OP_RESIZE:
        if (!npu_node_attr(n, "scales") && *nin < 2)
            UFAIL(NPU_ERR_UNSUPPORTED, "Upsample before opset 7 (width/height_scale) is not "
                                       "supported");
        break;
    default: break;
    }
    return NPU_OK;
}

enum npu_status
onnx_add_node(struct onnx_ctx *c, struct npu_node *tmp, const char *op_type, struct npu_value **in_,
              int nin, struct npu_value **out_, int nout)
{
    struct npu_graph *g = c->g;
    struct npu_node *n = tmp; /* for messages */
    struct npu_value *in[1032];
    struct npu_value *out[64];
    int opset = c->opset;
    /* Upgrades write operands past the given count: absent means NULL. */
    memset(in, 0, sizeof(in));
    memcpy(in, in_, sizeof(*in) * (size_t)nin);
    memcpy(out, out_, sizeof(*out) * (size_t)nout);

    /* Absent trailing outputs are dropped; absent middle ones get a fresh value. */
    while (nout > 0 && !out[nout - 1])
        nout--;
    for (int i = 0; i < nout; i++)
        if (!out[i] && !(out[i] = npu_value_new(g, "unused")))
            return NPU_ERR_NOMEM;
    if (nout == 0)
        UFAIL(NPU_ERR_CORRUPT, "has no outputs");
    while (nin > 0 && !in[nin - 1])
        nin--;
    /* Every op we import needs its first operand (the upgrades below use it). */
    if (nin < 1 || !in[0])
        UFAIL(NPU_ERR_INVALID, "missing input 0");

    enum npu_op op = tmp->op;
    bool upsample = !strcmp(op_type, "Upsample");
    if (opset < 7) {
        enum npu_status st = legacy_opset(c, tmp, op, in, &nin);
        if (st)
            return st;
    }
    if (upsample || (op == NPU_OP_RESIZE && opset < 11)) {
        struct npu_value *scales = nin > 1 ? in[1] : NULL;
        if (upsample && opset < 9) {
            size_t cnt;
            const float *sv = npu_node_floats(tmp, "scales", &cnt);
            if (!sv)
                UFAIL(NPU_ERR_INVALID, "Upsample without scales");
            char nm[160];
            snprintf(nm, sizeof(nm), "%.100s_scales", *tmp->name ? tmp->name : "upsample");
            scales = npu_graph_const_f32(g, nm, sv, (int)cnt, false);
            if (!scales)
                return NPU_ERR_NOMEM;
            npu_node_del_attr(tmp, "scales");
        }
        if (!scales)
            UFAIL(NPU_ERR_INVALID, "missing scales");
        const char *mode = npu_node_string(tmp, "mode", "nearest");
        if (!strcmp(mode, "bilinear") || !strcmp(mode, "trilinear"))
            mode = "linear";
        if (strcmp(mode, "nearest") && strcmp(mode, "linear"))
            UFAIL(NPU_ERR_UNSUPPORTED, "mode '%s' is not supported", mode);
        /* Upsample and Resize-10 sampled at out/scale, nearest rounding down. */
        if (npu_node_set_string(g, tmp, "mode", mode) ||
            npu_node_set_string(g, tmp, "coordinate_transformation_mode", "asymmetric") ||
            (!strcmp(mode, "nearest") && npu_node_set_string(g, tmp, "nearest_mode", "floor")))
            return NPU_ERR_NOMEM;
        in[1] = NULL;
        in[2] = scales;
        nin = 3;
    }

    switch (op) {
    case NPU_OP_SLICE:
        if (opset < 10) {
            if (nin != 1)
                UFAIL(NPU_ERR_INVALID, "opset %d Slice takes one input", opset);
            if (!npu_node_attr(tmp, "starts") || !npu_node_attr(tmp, "ends"))
                UFAIL(NPU_ERR_INVALID, "missing starts/ends");
            in[1] = const_ints_from_attr(c, tmp, "starts");
            in[2] = const_ints_from_attr(c, tmp, "ends");
            nin = 3;
            if (npu_node_attr(tmp, "axes")) {
                in[3] = const_ints_from_attr(c, tmp, "axes");
                nin = 4;
            }
            for (int i = 1; i < nin; i++)
                if (!in[i])
                    return NPU_ERR_NOMEM;
        }
        break;
    case NPU_OP_SPLIT:
        if (opset < 13 && npu_node_attr(tmp, "split")) {
            if (!(in[1] = const_ints_from_attr(c, tmp, "split")))
                return NPU_ERR_NOMEM;
            nin = 2;
        }
        break;
    case NPU_OP_SQUEEZE:
    case NPU_OP_UNSQUEEZE:
        if (opset < 13 && npu_node_attr(tmp, "axes")) {
            if (!(in[1] = const_ints_from_attr(c, tmp, "axes")))
                return NPU_ERR_NOMEM;
            nin = 2;
        }
        break;
    case NPU_OP_PAD:
        if (opset < 11) {
            const char *pn = npu_node_attr(tmp, "pads") ? "pads" : "paddings";
            if (!npu_node_attr(tmp, pn))
                UFAIL(NPU_ERR_INVALID, "missing pads");
            float value = npu_node_float(tmp, "value", 0.0f);
            if (!(in[1] = const_ints_from_attr(c, tmp, pn)))
                return NPU_ERR_NOMEM;
            npu_node_del_attr(tmp, "value");
            if (!(in[2] = const_scalar(c, tmp, "value", in[0]->t.dtype, value)))
                return NPU_ERR_NOMEM;
            nin = 3;
        }
        break;
    case NPU_OP_CLIP:
        if (opset < 11) {
            const struct npu_attr *mn = npu_node_attr(tmp, "min"), *mx = npu_node_attr(tmp, "max");
            in[1] = in[2] = NULL;
            if (mn && !(in[1] = const_scalar(c, tmp, "min", in[0]->t.dtype, mn->f)))
                return NPU_ERR_NOMEM;
            if (mx && !(in[2] = const_scalar(c, tmp, "max", in[0]->t.dtype, mx->f)))
                return NPU_ERR_NOMEM;
            npu_node_del_attr(tmp, "min");
            npu_node_del_attr(tmp, "max");
            nin = mx ? 3 : mn ? 2 : 1;
        }
        break;
    case NPU_OP_TOP_K:
        /* TopK-1 gave K as attribute k; 10 made it an input */
        if (opset < 10) {
            if (!npu_node_attr(tmp, "k"))
                UFAIL(NPU_ERR_INVALID, "opset %d TopK without attribute k", opset);
            int64_t k = npu_node_int(tmp, "k", 0);
            char nm[160];
            snprintf(nm, sizeof(nm), "%.100s_k", *tmp->name ? tmp->name : "topk");
            npu_node_del_attr(tmp, "k");
            if (!(in[1] = npu_graph_const_i64(g, nm, &k, 1, false)))
                return NPU_ERR_NOMEM;
            nin = 2;
        }
        break;
    case NPU_OP_DROPOUT:
        if (opset < 12) {
            float ratio = npu_node_float(tmp, "ratio", 0.5f);
            npu_node_del_attr(tmp, "ratio");
            npu_node_del_attr(tmp, "is_test");
            if (!(in[1] = const_scalar(c, tmp, "ratio", NPU_DTYPE_FP32, ratio)))
                return NPU_ERR_NOMEM;
            nin = 2;
        }
        break;
    case NPU_OP_BATCH_NORMALIZATION:
        if (npu_node_int(tmp, "spatial", 1) != 1)
            UFAIL(NPU_ERR_UNSUPPORTED, "spatial=0 (per-activation) batch norm is not supported");
        npu_node_del_attr(tmp, "spatial");
        npu_node_del_attr(tmp, "is_test");
        npu_node_del_attr(tmp, "consumed_inputs");
        /* opset 14+: training_mode=1 normalises with the batch statistics and may output the
         * updated running mean/var (the CPU kernel does both); before 14 the extra outputs
         * were saved statistics of a training graph that we do not produce */
        if (!npu_node_int(tmp, "training_mode", 0)) {
            npu_node_del_attr(tmp, "training_mode");
            if (nout > 1)
                UFAIL(NPU_ERR_UNSUPPORTED, "training outputs (running mean/var) need "
                                           "training_mode=1");
        } else if (opset < 14) {
            UFAIL(NPU_ERR_UNSUPPORTED, "training_mode before opset 14");
        } else if (nout > 3) {
            UFAIL(NPU_ERR_INVALID, "at most 3 outputs");
        }
        break;
    case NPU_OP_SOFTMAX:
    case NPU_OP_LOG_SOFTMAX:
        if (opset < 13) {
            if (nin < 1 || !in[0])
                UFAIL(NPU_ERR_INVALID, "missing input");
            struct npu_node *nn = clone_with(c, tmp, in, nin, out, nout);
            if (!nn)
                return NPU_ERR_NOMEM;
            return legacy_softmax(c, nn);
        }
        break;
    default:
        if (is_reduce(op) && (op == NPU_OP_REDUCE_SUM ? opset < 13 : opset < 18) &&
            npu_node_attr(tmp, "axes")) {
            in[1] = const_ints_from_attr(c, tmp, "axes");
            if (!in[1])
                return NPU_ERR_NOMEM;
            nin = 2;
        }
        break;
    }

    struct npu_node *nn = clone_with(c, tmp, in, nin, out, nout);
    if (!nn)
        return NPU_ERR_NOMEM;
    enum npu_status st = finish(c, nn);
    if (st)
        return st;
    n = nn;
    switch (op) {
    case NPU_OP_CONV:
    case NPU_OP_CONV_TRANSPOSE:
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVERAGE_POOL:
    case NPU_OP_QLINEAR_CONV:
    case NPU_OP_CONV_INTEGER: return explicit_pads(c, n);
    case NPU_OP_SPLIT:
        if (n->nin < 2 || !n->in[1]) {
            int64_t sz[64];
            int64_t a = npu_node_int(n, "axis", 0);
            if (a < 0)
                a += n->in[0]->t.ndim;
            for (int i = 0; i < n->nout; i++)
                sz[i] = n->out[i]->t.dims[a];
            char nm[160];
            snprintf(nm, sizeof(nm), "%.100s_split", *n->name ? n->name : "split");
            struct npu_value *sv = npu_graph_const_i64(g, nm, sz, n->nout, false);
            struct npu_value **ni = npu_graph_alloc(g, sizeof(*ni) * 2);
            if (!sv || !ni)
                return NPU_ERR_NOMEM;
            ni[0] = n->in[0];
            ni[1] = sv;
            n->in = ni;
            n->nin = 2;
            npu_node_del_attr(n, "num_outputs");
        }
        return NPU_OK;
    default: return NPU_OK;
    }
}
