// SPDX-License-Identifier: MIT
/*
 * npu-onnx-write.c: IR -> ONNX (protobuf-c), the way back of the importer,
 * for graphs made only of standard ONNX ops (npuc --emit-qdq writes the
 * quantised graph through it). Constants become initializers with raw data,
 * attributes keep their names and types; a node the IR extends (npu.*, rk.*
 * ops, npu_* fusion attributes) is refused with its name, since no other
 * runtime would read it.
 */
#include <stdlib.h>
#include <string.h>

#include "npu/npu-onnx.h"
#include "onnx.pb-c.h"

#define DOM "onnx"

/* Everything the model points to, freed together. */
struct wbuf {
    void **p;
    size_t n, cap;
};

static void *
wb_alloc(struct wbuf *b, size_t size)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        void **np = realloc(b->p, cap * sizeof(void *));
        if (!np)
            return NULL;
        b->p = np;
        b->cap = cap;
    }
    void *m = calloc(1, size ? size : 1);
    if (m)
        b->p[b->n++] = m;
    return m;
}

static void
wb_free(struct wbuf *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->p[i]);
    free(b->p);
}

static Onnx__TensorProto *
tensor_proto(struct wbuf *b, const char *name, const struct npu_tensor *t)
{
    Onnx__TensorProto *tp = wb_alloc(b, sizeof(*tp));
    int64_t nb = npu_tensor_nbytes(t);
    if (!tp || nb < 0)
        return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = (char *)name;
    tp->has_data_type = 1;
    tp->data_type = npu_dtype_to_onnx(t->dtype);
    tp->n_dims = (size_t)t->ndim;
    tp->dims = (int64_t *)t->dims;
    tp->has_raw_data = 1;
    tp->raw_data.len = (size_t)nb;
    tp->raw_data.data = t->data;
    return tp;
}

static Onnx__ValueInfoProto *
value_info(struct wbuf *b, const struct npu_value *v)
{
    Onnx__ValueInfoProto *vi = wb_alloc(b, sizeof(*vi));
    Onnx__TypeProto *ty = wb_alloc(b, sizeof(*ty));
    Onnx__TypeProto__Tensor *tt = wb_alloc(b, sizeof(*tt));
    Onnx__TensorShapeProto *sh = wb_alloc(b, sizeof(*sh));
    Onnx__TensorShapeProto__Dimension **dims =
        wb_alloc(b, sizeof(void *) * (size_t)(v->t.ndim + 1));
    if (!vi || !ty || !tt || !sh || !dims)
        return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(ty);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < v->t.ndim; i++) {
        Onnx__TensorShapeProto__Dimension *d = wb_alloc(b, sizeof(*d));
        if (!d)
            return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = v->t.dims[i];
        dims[i] = d;
    }
    sh->n_dim = (size_t)v->t.ndim;
    sh->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = npu_dtype_to_onnx(v->t.dtype);
    tt->shape = sh;
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt;
    vi->name = (char *)v->name;
    vi->type = ty;
    return vi;
}

static Onnx__AttributeProto *
attr_proto(struct wbuf *b, const struct npu_attr *a)
{
    Onnx__AttributeProto *ap = wb_alloc(b, sizeof(*ap));
    if (!ap)
        return NULL;
    onnx__attribute_proto__init(ap);
    ap->name = (char *)a->name;
    ap->has_type = 1;
    switch (a->type) {
    case NPU_ATTR_INT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        ap->has_i = 1;
        ap->i = a->i;
        break;
    case NPU_ATTR_FLOAT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        ap->has_f = 1;
        ap->f = a->f;
        break;
    case NPU_ATTR_STRING:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        ap->has_s = 1;
        ap->s.data = (uint8_t *)a->s;
        ap->s.len = strlen(a->s);
        break;
    case NPU_ATTR_INTS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        ap->n_ints = a->n;
        ap->ints = (int64_t *)a->ints;
        break;
    case NPU_ATTR_FLOATS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        ap->n_floats = a->n;
        ap->floats = (float *)a->floats;
        break;
    case NPU_ATTR_STRINGS: {
        ProtobufCBinaryData *s = wb_alloc(b, sizeof(*s) * (a->n + 1));
        if (!s)
            return NULL;
        for (size_t i = 0; i < a->n; i++) {
            s[i].data = (uint8_t *)a->strs[i];
            s[i].len = strlen(a->strs[i]);
        }
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
        ap->n_strings = a->n;
        ap->strings = s;
        break;
    }
    case NPU_ATTR_TENSOR:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        if (!(ap->t = tensor_proto(b, "", a->t)))
            return NULL;
        break;
    }
    return ap;
}

static bool
axes_as_attribute(const struct npu_node *n)
{
    switch (n->op) {
    case NPU_OP_REDUCE_MEAN:
    case NPU_OP_REDUCE_MAX:
    case NPU_OP_REDUCE_MIN:
    case NPU_OP_REDUCE_PROD:
    case NPU_OP_REDUCE_L1:
    case NPU_OP_REDUCE_L2:
    case NPU_OP_REDUCE_LOG_SUM:
    case NPU_OP_REDUCE_LOG_SUM_EXP:
    case NPU_OP_REDUCE_SUM_SQUARE: break;
    default: return false;
    }
    return n->nin == 2 && n->in[1] && n->in[1]->kind == NPU_VALUE_CONST;
}

enum npu_status
npu_onnx_save(const struct npu_graph *g, int opset, const char *path)
{
    struct wbuf b = {0};
    enum npu_status st = NPU_ERR_NOMEM;
    uint8_t *buf = NULL;
    Onnx__ModelProto m;
    Onnx__GraphProto gp;
    Onnx__OperatorSetIdProto os;
    Onnx__OperatorSetIdProto *osp = &os;
    onnx__model_proto__init(&m);
    onnx__graph_proto__init(&gp);
    onnx__operator_set_id_proto__init(&os);
    os.domain = "";
    os.has_version = 1;
    os.version = opset;
    m.has_ir_version = 1;
    /* the IR version that introduced the opset (onnx/docs/Versioning.md): 8 up to 18,
     * 9 for 19-20, 10 for 21 (int16 QuantizeLinear, w16a16i) */
    m.ir_version = opset >= 21 ? 10 : opset >= 19 ? 9 : 8;
    m.producer_name = "opennpu";
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.graph = &gp;
    gp.name = (char *)(g->name && g->name[0] ? g->name : "opennpu");
    gp.node = wb_alloc(&b, sizeof(void *) * (size_t)(g->nnodes + 1));
    gp.initializer = wb_alloc(&b, sizeof(void *) * (size_t)(g->nvalues + 1));
    gp.input = wb_alloc(&b, sizeof(void *) * (size_t)(g->ninputs + 1));
    gp.output = wb_alloc(&b, sizeof(void *) * (size_t)(g->noutputs + 1));
    if (!gp.node || !gp.initializer || !gp.input || !gp.output)
        goto out;
    npu_graph_for_each_node (g, n) {
        const char *op = npu_op_name(n->op);
        if (!strncmp(op, "npu.", 4) || !strncmp(op, "rk.", 3)) {
            npu_err(DOM, "%s: node '%s' is %s, which only OpenNPU reads; not written", path,
                    n->name, op);
            st = NPU_ERR_UNSUPPORTED;
            goto out;
        }
        Onnx__NodeProto *np = wb_alloc(&b, sizeof(*np));
        char **in = wb_alloc(&b, sizeof(char *) * (size_t)(n->nin + 1));
        char **outn = wb_alloc(&b, sizeof(char *) * (size_t)(n->nout + 1));
        Onnx__AttributeProto **ap = wb_alloc(&b, sizeof(void *) * (size_t)(n->nattr + 2));
        if (!np || !in || !outn || !ap)
            goto out;
        onnx__node_proto__init(np);
        np->op_type = (char *)op;
        np->name = (char *)(n->name ? n->name : "");
        for (int i = 0; i < n->nin; i++)
            in[i] = (char *)(n->in[i] ? n->in[i]->name : "");
        for (int i = 0; i < n->nout; i++)
            outn[i] = (char *)n->out[i]->name;
        for (int i = 0; i < n->nattr; i++) {
            if (!strncmp(n->attr[i].name, "npu_", 4)) {
                npu_err(DOM, "%s: node '%s' (%s) carries the fusion attribute %s; not written",
                        path, n->name, op, n->attr[i].name);
                st = NPU_ERR_UNSUPPORTED;
                goto out;
            }
            if (!(ap[i] = attr_proto(&b, &n->attr[i])))
                goto out;
        }
        np->n_input = (size_t)n->nin;
        np->input = in;
        /* opset < 18: the reductions (ReduceSum aside, an input since 13) take
         * constant axes as an attribute, the form the IR upgraded from */
        if (opset < 18 && axes_as_attribute(n)) {
            Onnx__AttributeProto *ax = wb_alloc(&b, sizeof(*ax));
            int64_t *v = wb_alloc(&b, sizeof(int64_t) * (size_t)(npu_value_numel(n->in[1]) + 1));
            if (!ax || !v)
                goto out;
            onnx__attribute_proto__init(ax);
            ax->name = "axes";
            ax->has_type = 1;
            ax->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
            for (int64_t k = 0; k < npu_value_numel(n->in[1]); k++)
                v[k] = npu_value_get_i64(n->in[1], k);
            ax->n_ints = (size_t)npu_value_numel(n->in[1]);
            ax->ints = v;
            ap[n->nattr] = ax;
            np->n_input = 1;
            np->n_attribute = (size_t)n->nattr + 1;
        }
        np->n_output = (size_t)n->nout;
        np->output = outn;
        if (!np->n_attribute)
            np->n_attribute = (size_t)n->nattr;
        np->attribute = ap;
        gp.node[gp.n_node++] = np;
    }
    /* initializers: the constants a node reads (axes moved to attributes aside) */
    int maxid = 0;
    for (int i = 0; i < g->nvalues; i++)
        maxid = g->values[i]->id + 1 > maxid ? g->values[i]->id + 1 : maxid;
    bool *used = wb_alloc(&b, (size_t)maxid + 1);
    if (!used)
        goto out;
    npu_graph_for_each_node (g, n)
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] && !(i == 1 && opset < 18 && axes_as_attribute(n)))
                used[n->in[i]->id] = true;
    for (int i = 0; i < g->noutputs; i++)
        used[g->outputs[i]->id] = true;
    for (int i = 0; i < g->nvalues; i++) {
        const struct npu_value *v = g->values[i];
        if (v->kind != NPU_VALUE_CONST || !used[v->id])
            continue;
        if (!(gp.initializer[gp.n_initializer++] = tensor_proto(&b, v->name, &v->t)))
            goto out;
    }
    for (int i = 0; i < g->ninputs; i++)
        if (!(gp.input[gp.n_input++] = value_info(&b, g->inputs[i])))
            goto out;
    for (int i = 0; i < g->noutputs; i++)
        if (!(gp.output[gp.n_output++] = value_info(&b, g->outputs[i])))
            goto out;
    size_t len = onnx__model_proto__get_packed_size(&m);
    if (!(buf = malloc(len + 1)))
        goto out;
    onnx__model_proto__pack(&m, buf);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f))
        ok = false;
    if (!ok) {
        npu_err(DOM, "cannot write %s", path);
        st = NPU_ERR_IO;
        goto out;
    }
    st = NPU_OK;
out:
    free(buf);
    wb_free(&b);
    return st;
}
