/* SPDX-License-Identifier: MIT */
/*
 * onnx-pb.c: protobuf wire-format walking for the conformance runner (see
 * onnx-pb.h). Field numbers are those of onnx.proto (ONNX 1.12):
 *   ModelProto      opset_import 8, graph 7, functions 25
 *   OperatorSetId   domain 1, version 2
 *   GraphProto      node 1, initializer 5, input 11, output 12
 *   NodeProto       op_type 4, attribute 5, domain 7
 *   AttributeProto  g 6, graphs 11
 *   ValueInfoProto  name 1, type 2
 *   TypeProto       tensor_type 1 (elem_type 1, shape 2), sequence 4, map 5,
 *                   sparse_tensor 8, optional 9
 *   TensorShape     dim 1 (dim_value 1, dim_param 2)
 *   TensorProto     dims 1, data_type 2, float_data 4, int32_data 5,
 *                   string_data 6, int64_data 7, name 8, raw_data 9,
 *                   double_data 10, uint64_data 11, data_location 14
 * Every length is checked against the enclosing message.
 */
#include "onnx-pb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pb {
    const uint8_t *p, *end;
};

struct pb_field {
    uint32_t num;
    int wt;        /* 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
    uint64_t v;    /* varint or fixed value */
    struct pb sub; /* wt 2 */
};

static bool
pb_varint(struct pb *b, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            return false;
        uint8_t c = *b->p++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* Next field of b into f; false at the end (*err set on malformed data). */
static bool
pb_next(struct pb *b, struct pb_field *f, bool *err)
{
    uint64_t key;
    if (b->p >= b->end)
        return false;
    if (!pb_varint(b, &key))
        goto bad;
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    switch (f->wt) {
    case 0:
        if (!pb_varint(b, &f->v))
            goto bad;
        return true;
    case 1:
        if (b->end - b->p < 8)
            goto bad;
        memcpy(&f->v, b->p, 8);
        b->p += 8;
        return true;
    case 5: {
        uint32_t w;
        if (b->end - b->p < 4)
            goto bad;
        memcpy(&w, b->p, 4);
        f->v = w;
        b->p += 4;
        return true;
    }
    case 2: {
        uint64_t n;
        if (!pb_varint(b, &n) || n > (uint64_t)(b->end - b->p))
            goto bad;
        f->sub.p = b->p;
        f->sub.end = b->p + n;
        b->p += n;
        return true;
    }
    default: goto bad;
    }
bad:
    *err = true;
    return false;
}

static void
pb_copy_str(const struct pb *s, char *dst, size_t cap)
{
    size_t n = (size_t)(s->end - s->p);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s->p, n);
    dst[n] = '\0';
}

static const struct {
    int code;
    const char *name;
    enum npu_dtype dt;
} onnx_types[] = {
    {1, "float", NPU_DTYPE_FP32},
    {2, "uint8", NPU_DTYPE_UINT8},
    {3, "int8", NPU_DTYPE_INT8},
    {4, "uint16", NPU_DTYPE_UINT16},
    {5, "int16", NPU_DTYPE_INT16},
    {6, "int32", NPU_DTYPE_INT32},
    {7, "int64", NPU_DTYPE_INT64},
    {8, "string", NPU_DTYPE_UNDEFINED},
    {9, "bool", NPU_DTYPE_BOOL},
    {10, "float16", NPU_DTYPE_FP16},
    {11, "double", NPU_DTYPE_FP64},
    {12, "uint32", NPU_DTYPE_UINT32},
    {13, "uint64", NPU_DTYPE_UINT64},
    {14, "complex64", NPU_DTYPE_UNDEFINED},
    {15, "complex128", NPU_DTYPE_UNDEFINED},
    {16, "bfloat16", NPU_DTYPE_UNDEFINED},
};

enum npu_dtype
pb_onnx_dtype(int elem_type)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(onnx_types); i++)
        if (onnx_types[i].code == elem_type)
            return onnx_types[i].dt;
    return NPU_DTYPE_UNDEFINED;
}

const char *
pb_onnx_type_name(int elem_type)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(onnx_types); i++)
        if (onnx_types[i].code == elem_type)
            return onnx_types[i].name;
    return "unknown";
}

/* ---- ModelProto summary ---- */

static enum npu_status
add_op(struct pb_model *m, const char *domain, const char *op)
{
    char key[PB_NAME];
    if (!domain[0] || !strcmp(domain, "ai.onnx"))
        snprintf(key, sizeof(key), "%s", op);
    else
        snprintf(key, sizeof(key), "%s:%s", domain, op);
    for (int i = 0; i < m->nops; i++)
        if (!strcmp(m->ops[i], key))
            return NPU_OK;
    if (m->nops >= PB_MAX_OPS)
        return NPU_ERR_UNSUPPORTED;
    snprintf(m->ops[m->nops++], PB_NAME, "%s", key);
    return NPU_OK;
}

static enum npu_status
parse_type(struct pb s, struct pb_io *io)
{
    struct pb_field f;
    bool err = false;
    io->ndim = -1;
    while (pb_next(&s, &f, &err)) {
        if (f.num != 1 || f.wt != 2)
            continue; /* sequence/map/optional/sparse: not a tensor */
        io->is_tensor = true;
        struct pb_field g;
        struct pb t = f.sub;
        while (pb_next(&t, &g, &err)) {
            if (g.num == 1 && g.wt == 0) {
                io->elem_type = (int)g.v;
            } else if (g.num == 2 && g.wt == 2) {
                io->ndim = 0;
                struct pb_field d;
                struct pb sh = g.sub;
                while (pb_next(&sh, &d, &err)) {
                    if (d.num != 1 || d.wt != 2)
                        continue;
                    if (io->ndim >= NPU_MAX_DIMS)
                        return NPU_ERR_UNSUPPORTED;
                    int k = io->ndim++;
                    io->dims[k] = -1;
                    io->params[k][0] = '\0';
                    struct pb_field e;
                    struct pb dim = d.sub;
                    while (pb_next(&dim, &e, &err)) {
                        if (e.num == 1 && e.wt == 0)
                            io->dims[k] = (int64_t)e.v;
                        else if (e.num == 2 && e.wt == 2)
                            pb_copy_str(&e.sub, io->params[k], PB_NAME);
                    }
                }
            }
        }
    }
    return err ? NPU_ERR_CORRUPT : NPU_OK;
}

static enum npu_status
parse_value_info(struct pb s, struct pb_io *io)
{
    struct pb_field f;
    bool err = false;
    enum npu_status st;
    memset(io, 0, sizeof(*io));
    io->ndim = -1;
    while (pb_next(&s, &f, &err)) {
        if (f.num == 1 && f.wt == 2)
            pb_copy_str(&f.sub, io->name, PB_NAME);
        else if (f.num == 2 && f.wt == 2 && (st = parse_type(f.sub, io)))
            return st;
    }
    return err ? NPU_ERR_CORRUPT : NPU_OK;
}

/* Inputs that fix output shapes, in every opset's numbering (Resize 10 has
 * scales at 1, Resize 11+ roi/scales/sizes at 1-3). */
static const struct {
    const char *op;
    uint32_t mask; /* bit k: input k */
} shape_operands[] = {
    {"Reshape", 1u << 1},
    {"Expand", 1u << 1},
    {"Tile", 1u << 1},
    {"Slice", 0x1e},
    {"Squeeze", 1u << 1},
    {"Unsqueeze", 1u << 1},
    {"ReduceSum", 1u << 1},
    {"ReduceMean", 1u << 1},
    {"ReduceMax", 1u << 1},
    {"ReduceMin", 1u << 1},
    {"ReduceProd", 1u << 1},
    {"ReduceL1", 1u << 1},
    {"ReduceL2", 1u << 1},
    {"ReduceSumSquare", 1u << 1},
    {"ReduceLogSum", 1u << 1},
    {"ReduceLogSumExp", 1u << 1},
    {"Split", 1u << 1},
    {"Pad", (1u << 1) | (1u << 3)},
    {"Resize", 0xe},
    {"Upsample", 1u << 1},
    {"ConstantOfShape", 1u << 0},
    {"Range", 0x7},
    {"TopK", 1u << 1},
    {"OneHot", 1u << 1},
    {"CenterCropPad", 1u << 1},
    {"Col2Im", 0x6},
    {"AffineGrid", 1u << 1},
};

/* Parameter inputs that exported models carry as initializers (weights,
 * biases, normalisation parameters); node tests often feed them as graph
 * inputs. The NPU back end takes its weights as constants only. */
static const struct {
    const char *op;
    uint32_t mask;
} weight_operands[] = {
    {"MatMul", 1u << 1},
    {"Gemm", 0x6},
    {"Conv", 0x6},
    {"ConvTranspose", 0x6},
    {"MatMulInteger", 0xa},
    {"ConvInteger", 0xa},
    {"BatchNormalization", 0x1e},
    {"InstanceNormalization", 0x6},
    {"LayerNormalization", 0x6},
    {"GroupNormalization", 0x6},
    {"RMSNormalization", 1u << 1},
    {"PRelu", 1u << 1},
};

bool
pb_weight_operand(const char *op, int idx)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(weight_operands); i++)
        if (!strcmp(weight_operands[i].op, op))
            return idx >= 0 && idx < 32 && (weight_operands[i].mask >> idx & 1);
    return false;
}

bool
pb_shape_operand(const char *op, int idx)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(shape_operands); i++)
        if (!strcmp(shape_operands[i].op, op))
            return idx >= 0 && idx < 32 && (shape_operands[i].mask >> idx & 1);
    return false;
}

/* Names met while parsing the top graph: each node's inputs and outputs, and
 * the shape operands, so that pb_model_summary can follow shape operands
 * back to the graph inputs they are computed from. */
struct name_list {
    char (*v)[PB_NAME];
    int *node; /* node index, or -1 */
    bool *is_out;
    int n, cap;
    bool oom;
};

struct parse_ctx {
    struct name_list io;     /* node inputs and outputs */
    struct name_list shape;  /* shape operands (grows to the closure) */
    struct name_list weight; /* weight operands (direct inputs only) */
    int nodes;
};

static struct parse_ctx *cur_ctx; /* set by pb_model_summary for the top graph */

static void
nl_add(struct name_list *l, const char *name, int node, bool is_out)
{
    if (l->n == l->cap) {
        int c = l->cap ? l->cap * 2 : 64;
        void *v = realloc(l->v, sizeof(*l->v) * (size_t)c);
        void *nd = v ? realloc(l->node, sizeof(int) * (size_t)c) : NULL;
        void *o = nd ? realloc(l->is_out, sizeof(bool) * (size_t)c) : NULL;
        if (v)
            l->v = v;
        if (nd)
            l->node = nd;
        if (o)
            l->is_out = o;
        if (!v || !nd || !o) {
            l->oom = true;
            return;
        }
        l->cap = c;
    }
    snprintf(l->v[l->n], PB_NAME, "%s", name);
    l->node[l->n] = node;
    l->is_out[l->n] = is_out;
    l->n++;
}

static bool
nl_has(const struct name_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], name))
            return true;
    return false;
}

static void
nl_free(struct name_list *l)
{
    free(l->v);
    free(l->node);
    free(l->is_out);
}

/* Grows ctx->shape to every value a shape operand is computed from. */
static void
shape_closure(struct parse_ctx *c)
{
    bool changed = true;
    while (changed && !c->shape.oom) {
        changed = false;
        for (int i = 0; i < c->io.n; i++) {
            if (!c->io.is_out[i] || !nl_has(&c->shape, c->io.v[i]))
                continue;
            int node = c->io.node[i];
            for (int j = 0; j < c->io.n; j++)
                if (c->io.node[j] == node && !c->io.is_out[j] && c->io.v[j][0] &&
                    !nl_has(&c->shape, c->io.v[j])) {
                    nl_add(&c->shape, c->io.v[j], -1, false);
                    changed = true;
                }
        }
    }
}

static enum npu_status parse_graph(struct pb s, struct pb_model *m, bool top);

static enum npu_status
parse_node(struct pb s, struct pb_model *m, bool top)
{
    struct pb_field f;
    bool err = false;
    char op[PB_NAME] = "", domain[PB_NAME] = "";
    enum npu_status st;
    struct pb start = s;
    while (pb_next(&s, &f, &err)) {
        if (f.num == 4 && f.wt == 2) {
            pb_copy_str(&f.sub, op, sizeof(op));
        } else if (f.num == 7 && f.wt == 2) {
            pb_copy_str(&f.sub, domain, sizeof(domain));
        } else if (f.num == 5 && f.wt == 2) {
            struct pb_field a;
            struct pb attr = f.sub;
            while (pb_next(&attr, &a, &err)) {
                if ((a.num == 6 || a.num == 11) && a.wt == 2) {
                    m->has_subgraphs = true;
                    if ((st = parse_graph(a.sub, m, false)))
                        return st;
                }
            }
        }
    }
    if (err)
        return NPU_ERR_CORRUPT;
    /* Second pass, now that op_type is known: the node's value names and
     * which inputs are shape operands. */
    if (top && cur_ctx) {
        int idx = 0, node = cur_ctx->nodes++;
        bool onnx = !domain[0] || !strcmp(domain, "ai.onnx");
        /* Shape and Size read only their input's shape, which is known at
         * load: the closure stops there. */
        bool shape_only = onnx && (!strcmp(op, "Shape") || !strcmp(op, "Size"));
        s = start;
        while (pb_next(&s, &f, &err)) {
            if ((f.num != 1 && f.num != 2) || f.wt != 2)
                continue;
            char name[PB_NAME];
            pb_copy_str(&f.sub, name, sizeof(name));
            if (f.num == 2 || !shape_only)
                nl_add(&cur_ctx->io, name, node, f.num == 2);
            if (f.num == 1 && onnx && pb_shape_operand(op, idx) && name[0])
                nl_add(&cur_ctx->shape, name, -1, false);
            if (f.num == 1 && onnx && pb_weight_operand(op, idx) && name[0])
                nl_add(&cur_ctx->weight, name, -1, false);
            idx += f.num == 1;
        }
    }
    return add_op(m, domain, op);
}

static enum npu_status
parse_graph(struct pb s, struct pb_model *m, bool top)
{
    struct pb_field f;
    bool err = false;
    enum npu_status st;
    /* Initializer names, to drop them from the inputs (IR < 4 lists both). */
    char(*inits)[PB_NAME] = NULL;
    int ninits = 0, cap = 0;
    struct pb_io *ins = NULL;
    int nins = 0;

    if (top) {
        ins = calloc(PB_MAX_IO, sizeof(*ins));
        if (!ins)
            return NPU_ERR_NOMEM;
    }
    st = NPU_OK;
    while (pb_next(&s, &f, &err)) {
        if (f.wt != 2)
            continue;
        if (f.num == 1) {
            if ((st = parse_node(f.sub, m, top)))
                break;
        } else if (!top) {
            continue;
        } else if (f.num == 5) {
            if (ninits == cap) {
                cap = cap ? cap * 2 : 16;
                void *n = realloc(inits, (size_t)cap * sizeof(*inits));
                if (!n) {
                    st = NPU_ERR_NOMEM;
                    break;
                }
                inits = n;
            }
            /* TensorProto.name is field 8. */
            struct pb_field g;
            struct pb t = f.sub;
            inits[ninits][0] = '\0';
            while (pb_next(&t, &g, &err))
                if (g.num == 8 && g.wt == 2)
                    pb_copy_str(&g.sub, inits[ninits], PB_NAME);
            ninits++;
        } else if (f.num == 11 || f.num == 12) {
            bool in = f.num == 11;
            int *n = in ? &nins : &m->noutputs;
            if (*n >= PB_MAX_IO) {
                st = NPU_ERR_UNSUPPORTED;
                break;
            }
            struct pb_io *io = in ? &ins[*n] : &m->outputs[*n];
            if ((st = parse_value_info(f.sub, io)))
                break;
            (*n)++;
        }
    }
    if (!st && err)
        st = NPU_ERR_CORRUPT;
    if (top && !st) {
        for (int i = 0; i < nins; i++) {
            bool init = false;
            for (int j = 0; j < ninits && !init; j++)
                init = !strcmp(inits[j], ins[i].name);
            if (!init)
                m->inputs[m->ninputs++] = ins[i];
        }
    }
    free(inits);
    free(ins);
    return st;
}

enum npu_status
pb_model_summary(const uint8_t *buf, size_t len, struct pb_model *m)
{
    struct pb s = {buf, buf + len};
    struct pb_field f;
    bool err = false, have_graph = false;
    enum npu_status st = NPU_OK;
    struct parse_ctx ctx = {0};
    memset(m, 0, sizeof(*m));
    while (pb_next(&s, &f, &err)) {
        if (f.num == 8 && f.wt == 2) {
            char domain[PB_NAME] = "";
            int64_t version = 0;
            struct pb_field g;
            struct pb o = f.sub;
            while (pb_next(&o, &g, &err)) {
                if (g.num == 1 && g.wt == 2)
                    pb_copy_str(&g.sub, domain, sizeof(domain));
                else if (g.num == 2 && g.wt == 0)
                    version = (int64_t)g.v;
            }
            if (!domain[0] || !strcmp(domain, "ai.onnx"))
                m->opset = version;
        } else if (f.num == 7 && f.wt == 2) {
            cur_ctx = &ctx;
            st = parse_graph(f.sub, m, true);
            cur_ctx = NULL;
            if (st)
                break;
            have_graph = true;
        } else if (f.num == 25 && f.wt == 2) {
            /* FunctionProto: name 1, node 7, domain 10. Its body's ops count
             * as the model's; the calls of it are not ops (removed below). */
            m->has_functions = true;
            char fname[PB_NAME] = "", fdom[PB_NAME] = "";
            struct pb_field g;
            struct pb o = f.sub;
            while (!st && pb_next(&o, &g, &err)) {
                if (g.num == 1 && g.wt == 2)
                    pb_copy_str(&g.sub, fname, sizeof(fname));
                else if (g.num == 10 && g.wt == 2)
                    pb_copy_str(&g.sub, fdom, sizeof(fdom));
                else if (g.num == 7 && g.wt == 2)
                    st = parse_node(g.sub, m, false);
            }
            if (st)
                break;
            if (m->nfuncs < PB_MAX_OPS) {
                if (!fdom[0] || !strcmp(fdom, "ai.onnx"))
                    snprintf(m->funcs[m->nfuncs++], PB_NAME, "%s", fname);
                else
                    snprintf(m->funcs[m->nfuncs++], PB_NAME, "%.60s:%.60s", fdom, fname);
            }
        }
    }
    /* calls of local functions are not ops of their own */
    for (int i = 0; !st && i < m->nops;) {
        bool call = false;
        for (int k = 0; k < m->nfuncs && !call; k++)
            call = !strcmp(m->ops[i], m->funcs[k]);
        if (call)
            memmove(m->ops[i], m->ops[i + 1], sizeof(m->ops[0]) * (size_t)(--m->nops - i));
        else
            i++;
    }
    if (!st && (ctx.io.oom || ctx.shape.oom || ctx.weight.oom))
        st = NPU_ERR_NOMEM;
    if (!st) {
        /* The graph inputs that shape operands are (computed) from. */
        shape_closure(&ctx);
        for (int i = 0; i < m->ninputs; i++)
            if (nl_has(&ctx.shape, m->inputs[i].name) && m->nshape_operands < PB_MAX_SHAPE_OPERANDS)
                snprintf(m->shape_operands[m->nshape_operands++], PB_NAME, "%s", m->inputs[i].name);
        for (int i = 0; i < m->ninputs; i++)
            if (nl_has(&ctx.weight, m->inputs[i].name) && !nl_has(&ctx.shape, m->inputs[i].name) &&
                m->nweight_operands < PB_MAX_SHAPE_OPERANDS)
                snprintf(m->weight_operands[m->nweight_operands++], PB_NAME, "%s",
                         m->inputs[i].name);
    }
    nl_free(&ctx.io);
    nl_free(&ctx.shape);
    nl_free(&ctx.weight);
    if (st)
        return st;
    if (err || !have_graph)
        return NPU_ERR_CORRUPT;
    return NPU_OK;
}

/* ---- rewriting: graph inputs to initializers ---- */

struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
};

static void
wb_put(struct wbuf *w, const void *d, size_t n)
{
    if (w->oom)
        return;
    if (w->n + n > w->cap) {
        size_t c = w->cap ? w->cap : 4096;
        while (c < w->n + n)
            c *= 2;
        uint8_t *p = realloc(w->p, c);
        if (!p) {
            w->oom = true;
            return;
        }
        w->p = p;
        w->cap = c;
    }
    memcpy(w->p + w->n, d, n);
    w->n += n;
}

static void
wb_varint(struct wbuf *w, uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    do {
        b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    wb_put(w, b, (size_t)n);
}

/* Field `num` with wire type 2 and the given payload. */
static void
wb_bytes(struct wbuf *w, uint32_t num, const void *d, size_t n)
{
    wb_varint(w, (uint64_t)num << 3 | 2);
    wb_varint(w, n);
    wb_put(w, d, n);
}

enum npu_status
pb_bake_inputs(const uint8_t *model, size_t len, int n, const char *const *names,
               const uint8_t *const *tensors, const size_t *lens, uint8_t **out, size_t *out_len)
{
    struct pb s = {model, model + len};
    struct pb_field f;
    bool err = false;
    struct wbuf mw = {0}, gw = {0}, tw = {0};
    *out = NULL;
    *out_len = 0;
    while (pb_next(&s, &f, &err)) {
        const uint8_t *fstart = f.wt == 2 ? f.sub.p : NULL;
        if (f.num != 7 || f.wt != 2) {
            /* Copy the field verbatim: re-encode its key and payload. */
            wb_varint(&mw, (uint64_t)f.num << 3 | (uint64_t)f.wt);
            if (f.wt == 0) {
                wb_varint(&mw, f.v);
            } else if (f.wt == 1) {
                wb_put(&mw, &f.v, 8);
            } else if (f.wt == 5) {
                uint32_t v32 = (uint32_t)f.v;
                wb_put(&mw, &v32, 4);
            } else {
                wb_varint(&mw, (uint64_t)(f.sub.end - fstart));
                wb_put(&mw, fstart, (size_t)(f.sub.end - fstart));
            }
            continue;
        }
        /* The graph: drop the baked inputs, add them as initializers. */
        struct pb g = f.sub;
        struct pb_field h;
        gw.n = 0;
        while (pb_next(&g, &h, &err)) {
            if (h.num == 11 && h.wt == 2) {
                struct pb_io io;
                if (parse_value_info(h.sub, &io) == NPU_OK) {
                    bool baked = false;
                    for (int i = 0; i < n && !baked; i++)
                        baked = !strcmp(io.name, names[i]);
                    if (baked)
                        continue;
                }
            }
            wb_varint(&gw, (uint64_t)h.num << 3 | (uint64_t)h.wt);
            if (h.wt == 0) {
                wb_varint(&gw, h.v);
            } else if (h.wt == 1) {
                wb_put(&gw, &h.v, 8);
            } else if (h.wt == 5) {
                uint32_t v32 = (uint32_t)h.v;
                wb_put(&gw, &v32, 4);
            } else {
                wb_varint(&gw, (uint64_t)(h.sub.end - h.sub.p));
                wb_put(&gw, h.sub.p, (size_t)(h.sub.end - h.sub.p));
            }
        }
        for (int i = 0; i < n; i++) {
            /* A repeated scalar field's last occurrence wins: appending the
             * name after the file's own TensorProto renames it. */
            tw.n = 0;
            wb_put(&tw, tensors[i], lens[i]);
            wb_bytes(&tw, 8, names[i], strlen(names[i]));
            if (tw.oom)
                break;
            wb_bytes(&gw, 5, tw.p, tw.n);
        }
        if (gw.oom || tw.oom)
            break;
        wb_bytes(&mw, 7, gw.p, gw.n);
    }
    free(gw.p);
    free(tw.p);
    if (err || mw.oom || gw.oom || tw.oom) {
        free(mw.p);
        return err ? NPU_ERR_CORRUPT : NPU_ERR_NOMEM;
    }
    *out = mw.p;
    *out_len = mw.n;
    return NPU_OK;
}

/* ---- TensorProto ---- */

/* Stores element k of a typed (non-raw) field into t. */
static void
store_elem(struct npu_tensor *t, int64_t k, uint64_t v)
{
    void *d = t->data;
    switch (t->dtype) {
    case NPU_DTYPE_FP32: {
        uint32_t w = (uint32_t)v;
        memcpy((float *)d + k, &w, 4);
        break;
    }
    case NPU_DTYPE_FP64: memcpy((double *)d + k, &v, 8); break;
    case NPU_DTYPE_INT64:
    case NPU_DTYPE_UINT64: ((uint64_t *)d)[k] = v; break;
    case NPU_DTYPE_INT32:
    case NPU_DTYPE_UINT32: ((uint32_t *)d)[k] = (uint32_t)v; break;
    case NPU_DTYPE_INT16:
    case NPU_DTYPE_UINT16:
    case NPU_DTYPE_FP16: ((uint16_t *)d)[k] = (uint16_t)v; break;
    case NPU_DTYPE_INT8:
    case NPU_DTYPE_UINT8:
    case NPU_DTYPE_BOOL: ((uint8_t *)d)[k] = (uint8_t)v; break;
    default: break;
    }
}

/* The typed field a dtype's values live in when raw_data is absent. */
static uint32_t
typed_field(enum npu_dtype dt)
{
    switch (dt) {
    case NPU_DTYPE_FP32: return 4;
    case NPU_DTYPE_INT64: return 7;
    case NPU_DTYPE_FP64: return 10;
    case NPU_DTYPE_UINT32:
    case NPU_DTYPE_UINT64: return 11;
    default: return 5; /* int32_data: int8/16/32, uint8/16, bool, float16 bits */
    }
}

enum npu_status
pb_read_tensor(const uint8_t *buf, size_t len, struct npu_tensor *t, char *name, int *elem_type)
{
    struct pb s = {buf, buf + len};
    struct pb_field f;
    bool err = false;
    int et = 0, ndim = 0;
    int64_t dims[NPU_MAX_DIMS];
    struct pb raw = {NULL, NULL};
    bool have_raw = false, external = false;

    memset(t, 0, sizeof(*t));
    if (name)
        name[0] = '\0';
    /* Pass 1: type, shape, name, raw data. */
    while (pb_next(&s, &f, &err)) {
        if (f.num == 1 && f.wt == 0) {
            if (ndim >= NPU_MAX_DIMS)
                return NPU_ERR_UNSUPPORTED;
            dims[ndim++] = (int64_t)f.v;
        } else if (f.num == 1 && f.wt == 2) {
            struct pb p = f.sub;
            uint64_t v;
            while (p.p < p.end) {
                if (!pb_varint(&p, &v))
                    return NPU_ERR_CORRUPT;
                if (ndim >= NPU_MAX_DIMS)
                    return NPU_ERR_UNSUPPORTED;
                dims[ndim++] = (int64_t)v;
            }
        } else if (f.num == 2 && f.wt == 0) {
            et = (int)f.v;
        } else if (f.num == 8 && f.wt == 2 && name) {
            pb_copy_str(&f.sub, name, PB_NAME);
        } else if (f.num == 9 && f.wt == 2) {
            raw = f.sub;
            have_raw = true;
        } else if (f.num == 14 && f.wt == 0 && f.v == 1) {
            external = true;
        }
    }
    if (err)
        return NPU_ERR_CORRUPT;
    if (elem_type)
        *elem_type = et;
    enum npu_dtype dt = pb_onnx_dtype(et);
    if (dt == NPU_DTYPE_UNDEFINED || external)
        return NPU_ERR_UNSUPPORTED;
    t->dtype = dt;
    t->ndim = ndim;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndim);
    int64_t n = npu_tensor_numel(t), nb = npu_tensor_nbytes(t);
    if (n < 0 || nb < 0 || nb > ((int64_t)1 << 34))
        return NPU_ERR_CORRUPT;
    t->data = aligned_alloc(64, NPU_ALIGN((size_t)nb + 1, (size_t)64));
    if (!t->data)
        return NPU_ERR_NOMEM;
    if (have_raw) {
        if ((int64_t)(raw.end - raw.p) != nb)
            goto corrupt;
        memcpy(t->data, raw.p, (size_t)nb);
        return NPU_OK;
    }
    /* Pass 2: the typed field, packed or not. */
    uint32_t want = typed_field(dt);
    int64_t k = 0;
    s.p = buf;
    while (pb_next(&s, &f, &err)) {
        if (f.num != want)
            continue;
        if (f.wt == 2) {
            struct pb p = f.sub;
            while (p.p < p.end) {
                uint64_t v;
                if (want == 4 || want == 10) { /* packed fixed32 / fixed64 */
                    size_t w = want == 4 ? 4 : 8;
                    if ((size_t)(p.end - p.p) < w)
                        goto corrupt;
                    v = 0;
                    memcpy(&v, p.p, w);
                    p.p += w;
                } else if (!pb_varint(&p, &v)) {
                    goto corrupt;
                }
                if (k >= n)
                    goto corrupt;
                store_elem(t, k++, v);
            }
        } else {
            if (k >= n)
                goto corrupt;
            store_elem(t, k++, f.v);
        }
    }
    if (err || k != n)
        goto corrupt;
    return NPU_OK;
corrupt:
    free(t->data);
    t->data = NULL;
    return NPU_ERR_CORRUPT;
}

enum npu_status
pb_slurp(const char *path, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NPU_ERR_IO;
    if (fseek(f, 0, SEEK_END) < 0) {
        fclose(f);
        return NPU_ERR_IO;
    }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) < 0) {
        fclose(f);
        return NPU_ERR_IO;
    }
    uint8_t *b = malloc((size_t)n + 1);
    if (!b) {
        fclose(f);
        return NPU_ERR_NOMEM;
    }
    if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        fclose(f);
        return NPU_ERR_IO;
    }
    fclose(f);
    *buf = b;
    *len = (size_t)n;
    return NPU_OK;
}
