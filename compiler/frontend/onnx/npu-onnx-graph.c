/* SPDX-License-Identifier: MIT */
/*
 * npu-onnx-graph.c: builds the IR graph from a decoded ModelProto: opset
 * check, initializers, inputs with their symbolic dims bound, a topological
 * order of the nodes (exporters usually give one; cycles and dangling names
 * are refused), attribute conversion, Constant nodes, and the graph outputs.
 */
#include <stdlib.h>
#include <string.h>

#include "ir-priv.h"
#include "onnx-priv.h"

#define DOM "onnx"
#define MAX_NODES (1 << 22)

static const char *
nname(const Onnx__NodeProto *np)
{
    return np->name && *np->name ? np->name : "<unnamed>";
}

static const char *
s0(const char *s)
{
    return s ? s : "";
}

/* ---- 4-bit constants --------------------------------------------------------------- */

static enum npu_status
note_int4(struct onnx_ctx *c, const Onnx__TensorProto *tp, const char *name)
{
    if (!tp || !tp->has_data_type || (tp->data_type != ONNX_INT4 && tp->data_type != ONNX_UINT4))
        return NPU_OK;
    if (c->n_int4 == c->cap_int4) {
        size_t cap = c->cap_int4 ? 2 * c->cap_int4 : 16;
        const char **v = realloc(c->int4_names, cap * sizeof(*v));
        if (!v)
            return NPU_ERR_NOMEM;
        c->int4_names = v, c->cap_int4 = cap;
    }
    c->int4_names[c->n_int4++] = name; /* the model's string: lives as long as the import */
    return NPU_OK;
}

static bool
is_int4(const struct onnx_ctx *c, const char *name)
{
    for (size_t i = 0; name && i < c->n_int4; i++)
        if (!strcmp(c->int4_names[i], name))
            return true;
    return false;
}

/* QuantizeLinear to INT4/UINT4 (output_dtype 22/21, or a 4-bit zero point):
 * the IR holds the result in int8/uint8, so the node is told to saturate to
 * the 4-bit range (attribute qbits = 4, which the CPU kernel honours). */
static enum npu_status
quantize_to_4bit(struct onnx_ctx *c, const Onnx__NodeProto *np, struct npu_node *tmp)
{
    int64_t od = npu_node_int(tmp, "output_dtype", 0);
    bool four = od == ONNX_INT4 || od == ONNX_UINT4;
    bool zp4 = np->n_input > 2 && is_int4(c, np->input[2]);
    if (!four && !zp4)
        return NPU_OK;
    enum npu_status st = NPU_OK;
    if (four) /* 8-bit of the same signedness; a zero point, if any, says the same */
        st = npu_node_set_int(c->g, tmp, "output_dtype", od == ONNX_INT4 ? 3 : 2);
    if (!st)
        st = npu_node_set_int(c->g, tmp, "qbits", 4);
    return st;
}

/* ---- symbolic dims ---------------------------------------------------------------- */

static bool
lookup_dim(const char *spec, const char *name, int64_t *v)
{
    if (!spec || !name)
        return false;
    size_t nl = strlen(name);
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq && (size_t)(eq - p) == nl && !strncmp(p, name, nl)) {
            char *e;
            long long x = strtoll(eq + 1, &e, 10);
            if (e == p + len && x >= 0) {
                *v = x;
                return true;
            }
        }
        p += len + (end ? 1 : 0);
    }
    return false;
}

static enum npu_status
check_dim_spec(const char *spec)
{
    if (!spec)
        return NPU_OK;
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        char *e = NULL;
        long long x = eq ? strtoll(eq + 1, &e, 10) : -1;
        if (!eq || eq == p) {
            npu_err(DOM, "dim_values: bad entry '%.*s' (expected name=value)", (int)len, p);
            return NPU_ERR_INVALID;
        }
        if (e == eq + 1 || e != p + len || x < 0 || x > (1ll << 32)) {
            npu_err(DOM, "dim_values: '%.*s': the size must be a whole number from 0 to 2^32",
                    (int)len, p);
            return NPU_ERR_INVALID;
        }
        p += len + (end ? 1 : 0);
    }
    return NPU_OK;
}

/* ---- attributes ----------------------------------------------------------------- */

static enum npu_status
convert_attr(struct onnx_ctx *c, const Onnx__NodeProto *np, struct npu_node *n,
             const Onnx__AttributeProto *a)
{
    struct npu_graph *g = c->g;
    if (!a->name || !*a->name) {
        npu_err(DOM, "node '%s' (%s): attribute without a name", nname(np), s0(np->op_type));
        return NPU_ERR_CORRUPT;
    }
    if (npu_node_attr(n, a->name)) {
        npu_err(DOM, "node '%s' (%s): attribute '%s' given twice", nname(np), s0(np->op_type),
                a->name);
        return NPU_ERR_CORRUPT;
    }
    int type = a->has_type ? (int)a->type : 0;
    if (!type) { /* very old exporters leave the type out */
        if (a->has_f)
            type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        else if (a->has_i)
            type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        else if (a->has_s)
            type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        else if (a->t)
            type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        else if (a->n_floats)
            type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        else if (a->n_ints)
            type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        else if (a->n_strings)
            type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    }
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        return npu_node_set_float(g, n, a->name, a->f);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return npu_node_set_int(g, n, a->name, a->i);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        /* Strings are bytes in ONNX; ours are C strings, so refuse embedded NULs. */
        if (a->s.len && memchr(a->s.data, 0, a->s.len)) {
            npu_err(DOM, "node '%s' (%s): attribute '%s' has a NUL byte", nname(np),
                    s0(np->op_type), a->name);
            return NPU_ERR_CORRUPT;
        }
        char *s = a->s.len ? strndup((const char *)a->s.data, a->s.len) : strdup("");
        if (!s)
            return NPU_ERR_NOMEM;
        enum npu_status st = npu_node_set_string(g, n, a->name, s);
        free(s);
        return st;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        return npu_node_set_floats(g, n, a->name, a->floats, a->n_floats);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        return npu_node_set_ints(g, n, a->name, a->ints, a->n_ints);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        const char **v = calloc(a->n_strings + 1, sizeof(*v));
        enum npu_status st = v ? NPU_OK : NPU_ERR_NOMEM;
        for (size_t i = 0; !st && i < a->n_strings; i++) {
            if (a->strings[i].len && memchr(a->strings[i].data, 0, a->strings[i].len))
                st = NPU_ERR_CORRUPT;
            else if (!(v[i] = a->strings[i].len
                                  ? strndup((const char *)a->strings[i].data, a->strings[i].len)
                                  : strdup("")))
                st = NPU_ERR_NOMEM;
        }
        if (!st)
            st = npu_node_set_strings(g, n, a->name, v, a->n_strings);
        for (size_t i = 0; v && i < a->n_strings; i++)
            free((void *)v[i]);
        free(v);
        if (st == NPU_ERR_CORRUPT)
            npu_err(DOM, "node '%s' (%s): attribute '%s' has a NUL byte", nname(np),
                    s0(np->op_type), a->name);
        return st;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!a->t) {
            npu_err(DOM, "node '%s' (%s): tensor attribute '%s' has no tensor", nname(np),
                    s0(np->op_type), a->name);
            return NPU_ERR_CORRUPT;
        }
        char what[300];
        snprintf(what, sizeof(what), "node '%s' (%s) attribute '%s'", nname(np), s0(np->op_type),
                 a->name);
        struct npu_tensor t;
        enum npu_status st = onnx_tensor_to_npu(a->t, c->base_dir, what, g, &t);
        if (st)
            return st;
        return npu_node_set_tensor(g, n, a->name, &t);
    }
    default:
        npu_err(DOM,
                "node '%s' (%s): attribute '%s' of type %d (graphs, sparse tensors, type "
                "protos) is not supported",
                nname(np), s0(np->op_type), a->name, type);
        return NPU_ERR_UNSUPPORTED;
    }
}

/* Constant node -> constant value. */
static enum npu_status
make_constant(struct onnx_ctx *c, const Onnx__NodeProto *np, struct npu_node *tmp,
              struct npu_value *v)
{
    struct npu_graph *g = c->g;
    struct npu_tensor t = {0};
    const struct npu_attr *a;
    if (tmp->nattr != 1) {
        npu_err(DOM, "node '%s' (Constant): needs exactly one value attribute, has %d", nname(np),
                tmp->nattr);
        return NPU_ERR_CORRUPT;
    }
    a = &tmp->attr[0];
    if (!strcmp(a->name, "value") && a->type == NPU_ATTR_TENSOR) {
        t = *a->t;
    } else if (!strcmp(a->name, "value_float") && a->type == NPU_ATTR_FLOAT) {
        t.dtype = NPU_DTYPE_FP32;
        t.data = npu_graph_alloc(g, 4);
        if (t.data)
            *(float *)t.data = a->f;
    } else if (!strcmp(a->name, "value_int") && a->type == NPU_ATTR_INT) {
        t.dtype = NPU_DTYPE_INT64;
        t.data = npu_graph_alloc(g, 8);
        if (t.data)
            *(int64_t *)t.data = a->i;
    } else if (!strcmp(a->name, "value_floats") && a->type == NPU_ATTR_FLOATS) {
        t.dtype = NPU_DTYPE_FP32;
        t.ndim = 1;
        t.dims[0] = (int64_t)a->n;
        t.data = (void *)a->floats;
    } else if (!strcmp(a->name, "value_ints") && a->type == NPU_ATTR_INTS) {
        t.dtype = NPU_DTYPE_INT64;
        t.ndim = 1;
        t.dims[0] = (int64_t)a->n;
        t.data = (void *)a->ints;
    } else {
        npu_err(DOM,
                "node '%s' (Constant): attribute '%s' is not a supported constant value "
                "(string and sparse constants are not supported)",
                nname(np), a->name);
        return NPU_ERR_UNSUPPORTED;
    }
    if (!t.data)
        return NPU_ERR_NOMEM;
    v->t = t;
    npu_value_make_const(v, t.data);
    return NPU_OK;
}

/* ---- value infos ----------------------------------------------------------------- */

static enum npu_status
input_type(const Onnx__ValueInfoProto *vi, const char *dims_spec, struct npu_tensor *t)
{
    memset(t, 0, sizeof(*t));
    const char *name = s0(vi->name);
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type) {
        npu_err(DOM, "input '%s': not a tensor (sequences, maps and optionals are not supported)",
                name);
        return NPU_ERR_UNSUPPORTED;
    }
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    int32_t code = tt->has_elem_type ? tt->elem_type : 0;
    t->dtype = npu_dtype_from_onnx(code);
    if (code == ONNX_INT4 || code == ONNX_UINT4) {
        npu_err(DOM,
                "input '%s': element type %s is supported for initializers and constants "
                "only (the runtime has no packed 4-bit buffers)",
                name, code == ONNX_INT4 ? "INT4" : "UINT4");
        return NPU_ERR_UNSUPPORTED;
    }
    if (!t->dtype) {
        npu_err(DOM, "input '%s': element type %d is not supported", name, code);
        return NPU_ERR_UNSUPPORTED;
    }
    if (!tt->shape) {
        npu_err(DOM, "input '%s': has no shape (its rank is unknown)", name);
        return NPU_ERR_UNSUPPORTED;
    }
    if (tt->shape->n_dim > NPU_MAX_DIMS) {
        npu_err(DOM, "input '%s': rank %zu exceeds the supported %d", name, tt->shape->n_dim,
                NPU_MAX_DIMS);
        return NPU_ERR_UNSUPPORTED;
    }
    t->ndim = (int)tt->shape->n_dim;
    for (int i = 0; i < t->ndim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        int64_t v = 1;
        if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            v = d->dim_value;
            if (v < 0) {
                npu_err(DOM, "input '%s': dim %d is negative (%lld)", name, i, (long long)v);
                return NPU_ERR_CORRUPT;
            }
        } else {
            /* symbolic (dim_param) or unnamed: by its name, else by "<input>:<axis>" */
            char key[600];
            snprintf(key, sizeof(key), "%.580s:%d", name, i);
            bool named = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            named = named && d->dim_param && *d->dim_param; /* a oneof: test the case first */
            if (!(named && lookup_dim(dims_spec, d->dim_param, &v)) &&
                !lookup_dim(dims_spec, key, &v)) {
                v = 1;
                npu_info(DOM, "input '%s': symbolic dim %d '%s' set to 1", name, i,
                         named ? d->dim_param : "");
            }
        }
        t->dims[i] = v;
    }
    if (npu_tensor_nbytes(t) < 0 || npu_tensor_nbytes(t) > ((int64_t)1 << 36)) {
        npu_err(DOM, "input '%s': absurd size", name);
        return NPU_ERR_CORRUPT;
    }
    return NPU_OK;
}

/* A plain name in dim_values ("batch=4") must be the dim_param of some graph
 * input: a misspelt name would otherwise be ignored silently and the dim left
 * at 1. ("<input>:<axis>" entries are checked where they are used.) */
static enum npu_status
check_dim_names(const Onnx__GraphProto *gp, const char *spec, bool strict)
{
    for (const char *p = spec; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nl = eq ? (size_t)(eq - p) : len;
        bool found = memchr(p, ':', nl) != NULL;
        for (size_t i = 0; !found && i < gp->n_input; i++) {
            const Onnx__TypeProto *tp = gp->input[i]->type;
            const Onnx__TypeProto__Tensor *tt =
                tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type
                                                                            : NULL;
            for (size_t k = 0; tt && tt->shape && !found && k < tt->shape->n_dim; k++) {
                const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
                found = d &&
                        d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                        d->dim_param && strlen(d->dim_param) == nl && !strncmp(d->dim_param, p, nl);
            }
        }
        if (!found) {
            char names[256] = "";
            size_t nlen = 0;
            for (size_t i = 0; i < gp->n_input && nlen + 1 < sizeof(names); i++) {
                const Onnx__TypeProto *tp = gp->input[i]->type;
                const Onnx__TypeProto__Tensor *tt =
                    tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type
                                                                                : NULL;
                for (size_t k = 0; tt && tt->shape && k < tt->shape->n_dim; k++) {
                    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
                    if (!d ||
                        d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
                        !d->dim_param || !*d->dim_param || strstr(names, d->dim_param))
                        continue;
                    int w = snprintf(names + nlen, sizeof(names) - nlen, "%s'%s'", nlen ? ", " : "",
                                     d->dim_param);
                    if (w < 0 || (size_t)w >= sizeof(names) - nlen)
                        break;
                    nlen += (size_t)w;
                }
            }
            npu_log(strict ? NPU_LOG_ERROR : NPU_LOG_INFO, DOM,
                    "dim_values: '%.*s' is not a symbolic dim of any input (%s%s)", (int)nl, p,
                    nlen ? "the model's are " : "the model has none", names);
            if (strict)
                return NPU_ERR_INVALID;
        }
        p += len + (end ? 1 : 0);
    }
    return NPU_OK;
}

/* dim_values may size a symbolic dim through an input's axis ("input_ids:1=11",
 * what npu-run passes for the inputs it reads from files). Such a value also
 * names the dim's dim_param ("sequence=11") unless the spec names it already,
 * so that other inputs with that dim (attention_mask) agree. Returns the spec
 * to use (spec itself, or a malloc'd extension in *owned), NULL on a conflict. */
static const char *
bind_dims_by_axis(const Onnx__GraphProto *gp, const char *spec, char **owned)
{
    *owned = NULL;
    if (!spec || !strchr(spec, ':'))
        return spec;
    size_t cap = strlen(spec) + 1, len = cap - 1;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    memcpy(s, spec, cap);
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !vi->type->tensor_type || !vi->type->tensor_type->shape)
            continue;
        const Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
        for (size_t k = 0; k < sh->n_dim && k < NPU_MAX_DIMS; k++) {
            const Onnx__TensorShapeProto__Dimension *d = sh->dim[k];
            if (!d || d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
                !d->dim_param || !*d->dim_param || strchr(d->dim_param, ',') ||
                strchr(d->dim_param, '='))
                continue;
            char key[600];
            snprintf(key, sizeof(key), "%.580s:%zu", vi->name, k);
            int64_t v, have;
            if (!lookup_dim(spec, key, &v))
                continue;
            if (lookup_dim(s, d->dim_param, &have)) {
                if (have != v && !lookup_dim(spec, d->dim_param, &have)) {
                    npu_err(DOM,
                            "dim '%s': input '%s' (axis %zu) gives %lld, another input "
                            "%lld",
                            d->dim_param, vi->name, k, (long long)v, (long long)have);
                    free(s);
                    return NULL;
                }
                continue;
            }
            size_t add = strlen(d->dim_param) + 24;
            char *t = realloc(s, len + add + 1);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
            len += (size_t)snprintf(s + len, add + 1, "%s%s=%lld", len ? "," : "", d->dim_param,
                                    (long long)v);
        }
    }
    *owned = s;
    return s;
}

/* ---- topological order ------------------------------------------------------------- */

struct heap {
    int *v;
    int n;
};

static void
heap_push(struct heap *h, int x)
{
    int i = h->n++;
    h->v[i] = x;
    while (i && h->v[(i - 1) / 2] > h->v[i]) {
        int p = (i - 1) / 2, t = h->v[p];
        h->v[p] = h->v[i];
        h->v[i] = t;
        i = p;
    }
}

static int
heap_pop(struct heap *h)
{
    int top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->v[l] < h->v[m])
            m = l;
        if (r < h->n && h->v[r] < h->v[m])
            m = r;
        if (m == i)
            break;
        int t = h->v[m];
        h->v[m] = h->v[i];
        h->v[i] = t;
        i = m;
    }
    return top;
}

/* ---- If with a compile-time condition ---------------------------------------------- */

/* torch.onnx.export writes `x.squeeze(d)` of a dim it cannot prove to be 1 as
 * If(Shape(x)[d] == 1, then: Squeeze(x, d), else: Identity(x)) (HF LLaMA's
 * rotary cos/sin, many others). Every dim is concrete once the inputs are
 * bound, so the condition is known while importing: the taken branch is
 * imported in place of the If (its outputs feed Identity nodes that define
 * the If's outputs) and the other is dropped. An If whose condition depends
 * on input data is refused. */

#define MAX_BRANCH_NODES 4096 /* the capture scan below is quadratic in it */

static const Onnx__GraphProto *
if_branch(const Onnx__NodeProto *np, const char *name)
{
    for (size_t k = 0; k < np->n_attribute; k++) {
        const Onnx__AttributeProto *a = np->attribute[k];
        if (a->name && !strcmp(a->name, name) && a->g)
            return a->g;
    }
    return NULL;
}

/* Whether name is defined inside branch b (by a node or an initializer). */
static bool
branch_defines(const Onnx__GraphProto *b, const char *name)
{
    for (size_t i = 0; i < b->n_initializer; i++)
        if (b->initializer[i]->name && !strcmp(b->initializer[i]->name, name))
            return true;
    for (size_t i = 0; i < b->n_node; i++)
        for (size_t k = 0; k < b->node[i]->n_output; k++)
            if (b->node[i]->output[k] && !strcmp(b->node[i]->output[k], name))
                return true;
    return false;
}

/* Calls fn for every outer-scope name that node np reads: its inputs and, for
 * an If, the names its branches (and the Ifs nested in them) capture, less
 * those that an enclosing branch in scope[0..nscope) defines. Stops at the
 * first non-OK status. */
static enum npu_status
for_each_dep(const Onnx__NodeProto *np, const Onnx__GraphProto **scope, int nscope,
             enum npu_status (*fn)(void *arg, const char *name), void *arg)
{
    enum npu_status st;
    for (size_t k = 0; k < np->n_input; k++) {
        const char *in = np->input[k];
        bool inner = false;
        for (int s = 0; in && *in && !inner && s < nscope; s++)
            inner = branch_defines(scope[s], in);
        if (in && *in && !inner && (st = fn(arg, in)))
            return st;
    }
    if (!np->op_type || strcmp(np->op_type, "If"))
        return NPU_OK;
    if (nscope >= 8) {
        npu_err(DOM, "node '%s' (If): branches nested more than 8 deep", nname(np));
        return NPU_ERR_UNSUPPORTED;
    }
    const char *names[2] = {"then_branch", "else_branch"};
    for (int b = 0; b < 2; b++) {
        const Onnx__GraphProto *br = if_branch(np, names[b]);
        if (!br)
            continue;
        if (br->n_node > MAX_BRANCH_NODES) {
            npu_err(DOM, "node '%s' (If): a branch of %zu nodes (at most %d are supported)",
                    nname(np), br->n_node, MAX_BRANCH_NODES);
            return NPU_ERR_UNSUPPORTED;
        }
        const Onnx__GraphProto *sc[9];
        if (nscope) /* scope is NULL at the top level */
            memcpy(sc, scope, sizeof(*sc) * (size_t)nscope);
        sc[nscope] = br;
        for (size_t i = 0; i < br->n_node; i++)
            if ((st = for_each_dep(br->node[i], sc, nscope + 1, fn, arg)))
                return st;
        for (size_t i = 0; i < br->n_output; i++) {
            const char *on = br->output[i]->name;
            bool inner = false;
            for (int s = 0; on && *on && !inner && s <= nscope; s++)
                inner = branch_defines(sc[s], on);
            if (on && *on && !inner && (st = fn(arg, on)))
                return st;
        }
    }
    return NPU_OK;
}

static enum npu_status import_node(struct onnx_ctx *c, const Onnx__NodeProto *np, bool define_outs,
                                   int depth);

/* Imports the taken branch of an If whose condition is known. */
static enum npu_status
import_if(struct onnx_ctx *c, const Onnx__NodeProto *np, int depth)
{
    struct npu_graph *g = c->g;
    if (depth > 8) { /* for_each_dep refused deeper nesting already */
        npu_err(DOM, "node '%s' (If): branches nested more than 8 deep", nname(np));
        return NPU_ERR_UNSUPPORTED;
    }
    struct npu_value *cond = np->n_input > 0 && np->input[0] && *np->input[0]
                                 ? npu_graph_find_value(g, np->input[0])
                                 : NULL;
    if (!cond) {
        npu_err(DOM, "node '%s' (If): has no condition input", nname(np));
        return NPU_ERR_CORRUPT;
    }
    const void *cd = npu_value_data(cond);
    if (!cd || npu_tensor_numel(&cond->t) != 1) {
        npu_err(DOM,
                "node '%s' (If): its condition '%s' depends on input data (only an If "
                "whose condition follows from shapes and constants is supported)",
                nname(np), cond->name);
        return NPU_ERR_UNSUPPORTED;
    }
    bool take = npu_dtype_load_f64(cond->t.dtype, cd, 0) != 0;
    const Onnx__GraphProto *br = if_branch(np, take ? "then_branch" : "else_branch");
    if (!br) {
        npu_err(DOM, "node '%s' (If): has no %s", nname(np), take ? "then_branch" : "else_branch");
        return NPU_ERR_CORRUPT;
    }
    if (br->n_output != np->n_output) {
        npu_err(DOM, "node '%s' (If): its %s has %zu outputs, the node %zu", nname(np),
                take ? "then_branch" : "else_branch", br->n_output, np->n_output);
        return NPU_ERR_CORRUPT;
    }
    if (br->n_sparse_initializer) {
        npu_err(DOM, "node '%s' (If): sparse initializers are not supported", nname(np));
        return NPU_ERR_UNSUPPORTED;
    }
    enum npu_status st;
    for (size_t i = 0; i < br->n_initializer; i++) {
        const Onnx__TensorProto *tp = br->initializer[i];
        if (!tp->name || !*tp->name || npu_graph_find_value(g, tp->name)) {
            npu_err(DOM, "node '%s' (If): branch initializer '%s' is unnamed or defined twice",
                    nname(np), s0(tp->name));
            return NPU_ERR_CORRUPT;
        }
        char what[300];
        snprintf(what, sizeof(what), "initializer '%s'", tp->name);
        struct npu_tensor t;
        if ((st = onnx_tensor_to_npu(tp, c->base_dir, what, g, &t)))
            return st;
        if (!npu_graph_add_const_owned(g, tp->name, &t))
            return NPU_ERR_NOMEM;
    }
    /* ONNX graphs list their nodes in topological order */
    for (size_t i = 0; i < br->n_node; i++)
        if ((st = import_node(c, br->node[i], true, depth + 1)))
            return st;
    for (size_t k = 0; k < np->n_output; k++) {
        const char *bo = br->output[k]->name, *on = np->output[k];
        if (!on || !*on)
            continue;
        struct npu_value *src = bo && *bo ? npu_graph_find_value(g, bo) : NULL;
        struct npu_value *dst = npu_graph_find_value(g, on);
        if (!src || (src->kind == NPU_VALUE_NODE && !src->producer) || !dst) {
            npu_err(DOM, "node '%s' (If): branch output '%s' is not defined", nname(np), s0(bo));
            return NPU_ERR_CORRUPT;
        }
        char nm[300];
        snprintf(nm, sizeof(nm), "%.200s/out%zu", nname(np), k);
        struct npu_node *id = npu_node_new(g, NPU_OP_IDENTITY, nm, NULL, 0, 0, NULL);
        if (!id)
            return NPU_ERR_NOMEM;
        struct npu_value *in1[1] = {src}, *out1[1] = {dst};
        if ((st = onnx_add_node(c, id, "Identity", in1, 1, out1, 1)))
            return st;
    }
    return NPU_OK;
}

static enum npu_status
import_node(struct onnx_ctx *c, const Onnx__NodeProto *np, bool define_outs, int depth)
{
    struct npu_graph *g = c->g;
    enum npu_status st;
    const char *dom = s0(np->domain);
    const char *opt = s0(np->op_type);
    if (*dom && strcmp(dom, "ai.onnx")) {
        npu_err(DOM,
                "node '%s' (%s): op of domain '%s' is not supported (only the default "
                "ONNX domain and the model's local functions are)",
                nname(np), opt, dom);
        return NPU_ERR_UNSUPPORTED;
    }
    if (np->n_input > 1024 || np->n_output > 64) {
        npu_err(DOM, "node '%s' (%s): too many inputs or outputs", nname(np), opt);
        return NPU_ERR_UNSUPPORTED;
    }
    /* branch nodes' outputs are defined as the branch is imported */
    for (size_t k = 0; define_outs && k < np->n_output; k++) {
        const char *on = np->output[k];
        if (!on || !*on)
            continue;
        if (npu_graph_find_value(g, on)) {
            npu_err(DOM, "node '%s' (%s): output '%s' is already defined (duplicate name)",
                    nname(np), opt, on);
            return NPU_ERR_CORRUPT;
        }
        if (!npu_value_new_exact(g, on))
            return NPU_ERR_NOMEM;
    }
    for (size_t k = 0; define_outs && k < np->n_input; k++)
        if (np->input[k] && *np->input[k] && !npu_graph_find_value(g, np->input[k])) {
            npu_err(DOM,
                    "node '%s' (%s): input '%s' is not defined before it (in its branch "
                    "or an enclosing graph)",
                    nname(np), opt, np->input[k]);
            return NPU_ERR_CORRUPT;
        }
    if (!strcmp(opt, "If"))
        return import_if(c, np, depth);
    enum npu_op op = strncmp(opt, "npu.", 4) ? npu_op_from_name(opt) : NPU_OP_NONE;
    if (!strcmp(opt, "Upsample"))
        op = NPU_OP_RESIZE;
    if (!strcmp(opt, "Scatter")) /* opset 9-10's name of ScatterElements */
        op = NPU_OP_SCATTER_ELEMENTS;
    if (op == NPU_OP_NONE) {
        npu_err(DOM, "node '%s' (%s): unknown or unsupported op '%s'", nname(np), opt, opt);
        return NPU_ERR_UNSUPPORTED;
    }
    struct npu_node *tmp = npu_node_new(g, op, np->name ? np->name : "", NULL, 0, 0, NULL);
    if (!tmp)
        return NPU_ERR_NOMEM;
    for (size_t k = 0; k < np->n_attribute; k++)
        if ((st = convert_attr(c, np, tmp, np->attribute[k])))
            return st;
    struct npu_value *in[1024], *outv[64];
    for (size_t k = 0; k < np->n_input; k++)
        in[k] = np->input[k] && *np->input[k] ? npu_graph_find_value(g, np->input[k]) : NULL;
    for (size_t k = 0; k < np->n_output; k++)
        outv[k] = np->output[k] && *np->output[k] ? npu_graph_find_value(g, np->output[k]) : NULL;
    if (op == NPU_OP_CONSTANT) {
        if (np->n_output != 1 || !outv[0]) {
            npu_err(DOM, "node '%s' (Constant): needs exactly one named output", nname(np));
            return NPU_ERR_CORRUPT;
        }
        for (size_t k = 0; k < np->n_attribute; k++)
            if (np->attribute[k]->name && !strcmp(np->attribute[k]->name, "value") &&
                (st = note_int4(c, np->attribute[k]->t, np->output[0])))
                return st;
        return make_constant(c, np, tmp, outv[0]);
    }
    if (op == NPU_OP_QUANTIZE_LINEAR && (st = quantize_to_4bit(c, np, tmp)))
        return st;
    return onnx_add_node(c, tmp, opt, in, (int)np->n_input, outv, (int)np->n_output);
}

/* ---- import ------------------------------------------------------------------------- */

struct dep_count {
    struct onnx_ctx *c;
    const Onnx__NodeProto *np;
    int *prod, *edge_start, *indeg, *edges, *fill;
    size_t limit, i, nedges;
    bool fill_pass;
};

/* One dependency of node i on a named value: an edge from its producer. */
static enum npu_status
dep_edge(void *arg, const char *name)
{
    struct dep_count *d = arg;
    struct npu_value *v = npu_graph_find_value(d->c->g, name);
    if (!v) {
        npu_err(DOM,
                "node '%s' (%s): input '%s' is not defined by any node, graph "
                "input or initializer",
                nname(d->np), s0(d->np->op_type), name);
        return NPU_ERR_CORRUPT;
    }
    if (v->kind == NPU_VALUE_NODE && v->id < (int)d->limit && d->prod[v->id] >= 0) {
        int p = d->prod[v->id];
        if (d->fill_pass) {
            d->edges[d->edge_start[p] + d->fill[p]++] = (int)d->i;
        } else {
            d->edge_start[p + 1]++;
            d->indeg[d->i]++;
            d->nedges++;
        }
    }
    return NPU_OK;
}

static enum npu_status
build(struct onnx_ctx *c, const Onnx__GraphProto *gp, const struct npu_onnx_options *o)
{
    struct npu_graph *g = c->g;
    enum npu_status st = NPU_OK;
    int *prod = NULL, *order = NULL, *indeg = NULL, *edge_start = NULL, *edges = NULL;
    struct heap h = {0};
    size_t nn = gp->n_node;

    if (nn > MAX_NODES) {
        npu_err(DOM, "graph has %zu nodes, more than the supported %d", nn, MAX_NODES);
        return NPU_ERR_UNSUPPORTED;
    }
    if (gp->n_sparse_initializer) {
        npu_err(DOM, "sparse initializers are not supported");
        return NPU_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name) {
            npu_err(DOM, "initializer %zu has no name", i);
            return NPU_ERR_CORRUPT;
        }
        if (npu_graph_find_value(g, tp->name)) {
            npu_err(DOM, "initializer '%s' is defined twice", tp->name);
            return NPU_ERR_CORRUPT;
        }
        char what[300];
        snprintf(what, sizeof(what), "initializer '%s'", tp->name);
        struct npu_tensor t;
        if ((st = onnx_tensor_to_npu_borrow(tp, c->base_dir, what, g, &t, c->borrow)))
            return st;
        if (!npu_graph_add_const_owned(g, tp->name, &t))
            return NPU_ERR_NOMEM;
        if ((st = note_int4(c, tp, tp->name)))
            return st;
        /* the graph holds its copy now (or points into the mapped file): protobuf-c's
         * goes back at once instead of at the end of the import, so the two copies of the
         * weights are never all held together (nothing reads an initializer's payload
         * again; its free skips a NULL payload). A payload left in the model's buffer
         * (npu-onnx-strip.c) is not protobuf-c's: it is only forgotten. */
        Onnx__TensorProto *own = (Onnx__TensorProto *)tp;
        if (own->has_raw_data && own->raw_data.data && own->raw_data.data >= c->file_lo &&
            own->raw_data.data < c->file_hi) {
            own->raw_data.data = NULL;
            own->raw_data.len = 0;
            own->has_raw_data = 0;
        } else if (own->has_raw_data && own->raw_data.data && own->raw_data.len >= 4096) {
            free(own->raw_data.data);
            own->raw_data.data = NULL;
            own->raw_data.len = 0;
            own->has_raw_data = 0;
        }
    }
    char *dims_owned = NULL;
    enum npu_status dst = check_dim_names(gp, o->dim_values, o->strict_dims);
    if (dst)
        return dst;
    const char *dims = bind_dims_by_axis(gp, o->dim_values, &dims_owned);
    if (!dims && o->dim_values)
        return NPU_ERR_INVALID; /* a conflict (logged), or out of memory */
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) {
            npu_err(DOM, "graph input %zu has no name", i);
            free(dims_owned);
            return NPU_ERR_CORRUPT;
        }
        struct npu_value *old = npu_graph_find_value(g, vi->name);
        if (old && old->kind == NPU_VALUE_CONST)
            continue; /* an initializer's default: we treat it as a constant */
        if (old) {
            npu_err(DOM, "graph input '%s' is listed twice", vi->name);
            st = NPU_ERR_CORRUPT;
        } else {
            struct npu_tensor t;
            if (!(st = input_type(vi, dims, &t)) &&
                !npu_graph_add_input(g, vi->name, t.dtype, t.ndim, t.dims))
                st = NPU_ERR_NOMEM;
        }
        if (st) {
            free(dims_owned);
            return st;
        }
    }
    free(dims_owned);

    /* Register every node output first: names are then all reserved before
     * the upgrades invent any, and producers can be looked up by value id. */
    size_t nvals_cap = (size_t)g->nvalues + 16;
    for (size_t i = 0; i < nn; i++)
        nvals_cap += gp->node[i]->n_output;
    prod = malloc(sizeof(int) * nvals_cap * 2 + 16);
    indeg = calloc(nn + 1, sizeof(int));
    edge_start = calloc(nn + 2, sizeof(int));
    order = malloc(sizeof(int) * (nn + 1));
    h.v = malloc(sizeof(int) * (nn + 1));
    if (!prod || !indeg || !edge_start || !order || !h.v) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < nvals_cap * 2 + 4; i++)
        prod[i] = -1;
    for (size_t i = 0; i < nn; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t k = 0; k < np->n_output; k++) {
            const char *on = np->output[k];
            if (!on || !*on)
                continue;
            if (npu_graph_find_value(g, on)) {
                npu_err(DOM, "node '%s' (%s): output '%s' is already defined (duplicate name)",
                        nname(np), s0(np->op_type), on);
                st = NPU_ERR_CORRUPT;
                goto out;
            }
            struct npu_value *v = npu_value_new_exact(g, on);
            if (!v) {
                st = NPU_ERR_NOMEM;
                goto out;
            }
            prod[v->id] = (int)i;
        }
    }
    /* Edges producer -> consumer, counted then filled (CSR). An If also
     * depends on the outer values its branches capture. */
    struct dep_count dc = {
        .c = c, .prod = prod, .edge_start = edge_start, .indeg = indeg, .limit = nvals_cap * 2};
    for (size_t i = 0; i < nn; i++) {
        dc.np = gp->node[i], dc.i = i;
        if ((st = for_each_dep(gp->node[i], NULL, 0, dep_edge, &dc)))
            goto out;
    }
    edges = malloc(sizeof(int) * (dc.nedges + 1));
    int *fill = calloc(nn + 1, sizeof(int));
    if (!edges || !fill) {
        free(fill);
        st = NPU_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < nn; i++)
        edge_start[i + 1] += edge_start[i];
    dc.edges = edges, dc.fill = fill, dc.fill_pass = true;
    for (size_t i = 0; i < nn; i++) {
        dc.np = gp->node[i], dc.i = i;
        if ((st = for_each_dep(gp->node[i], NULL, 0, dep_edge, &dc))) {
            free(fill);
            goto out;
        }
    }
    free(fill);
    int norder = 0;
    for (size_t i = 0; i < nn; i++)
        if (!indeg[i])
            heap_push(&h, (int)i);
    while (h.n) {
        int i = heap_pop(&h);
        order[norder++] = i;
        for (int e = edge_start[i]; e < edge_start[i + 1]; e++)
            if (--indeg[edges[e]] == 0)
                heap_push(&h, edges[e]);
    }
    if (norder != (int)nn) {
        for (size_t i = 0; i < nn; i++)
            if (indeg[i]) {
                npu_err(DOM, "node '%s' (%s): is part of a cycle (or depends on one)",
                        nname(gp->node[i]), s0(gp->node[i]->op_type));
                break;
            }
        st = NPU_ERR_CORRUPT;
        goto out;
    }

    for (int oi = 0; oi < norder; oi++)
        if ((st = import_node(c, gp->node[order[oi]], false, 0)))
            goto out;

    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        struct npu_value *v = vi->name ? npu_graph_find_value(g, vi->name) : NULL;
        if (!v || (v->kind == NPU_VALUE_NODE && !v->producer)) {
            npu_err(DOM, "graph output '%s' is not defined", s0(vi->name));
            st = NPU_ERR_CORRUPT;
            goto out;
        }
        if (v->is_output) {
            npu_err(DOM, "graph output '%s' is listed twice", vi->name);
            st = NPU_ERR_CORRUPT;
            goto out;
        }
        if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
            vi->type->tensor_type && vi->type->tensor_type->has_elem_type &&
            vi->type->tensor_type->elem_type &&
            npu_dtype_from_onnx(vi->type->tensor_type->elem_type) != v->t.dtype) {
            npu_err(DOM, "graph output '%s': declared element type %d, but it computes %s",
                    vi->name, vi->type->tensor_type->elem_type, npu_dtype_name(v->t.dtype));
            st = NPU_ERR_INVALID;
            goto out;
        }
        if ((st = npu_graph_add_output(g, v)))
            goto out;
    }
    if (!g->noutputs) {
        npu_err(DOM, "graph has no outputs");
        st = NPU_ERR_CORRUPT;
        goto out;
    }
    npu_graph_gc_values(g);
out:
    free(prod);
    free(indeg);
    free(edge_start);
    free(edges);
    free(order);
    free(h.v);
    return st;
}

/* Decodes the model with protobuf-c, without copying the main graph's initializer payloads
 * where the wire format allows (npu-onnx-strip.c): the decoded TensorProtos' raw_data then
 * point into data (between *lo and *hi), which unpacked_free forgets before protobuf-c
 * frees the rest. NULL (logged by the caller) when protobuf-c refuses the model. */
static Onnx__ModelProto *
unpack_model(const void *data, size_t len, enum npu_status *st)
{
    struct onnx_stripped sp;
    *st = onnx_strip_raw(data, len, &sp);
    if (*st)
        return NULL;
    Onnx__ModelProto *m = NULL;
    if (sp.buf) {
        m = onnx__model_proto__unpack(NULL, sp.len, sp.buf);
        if (m && (!m->graph || m->graph->n_initializer != sp.n_raw)) {
            onnx__model_proto__free_unpacked(m, NULL); /* not what the strip counted */
            m = NULL;
        }
        for (size_t i = 0; m && i < sp.n_raw; i++) {
            Onnx__TensorProto *tp = m->graph->initializer[i];
            if (!sp.raw[i].present)
                continue;
            tp->has_raw_data = 1;
            tp->raw_data.data = (uint8_t *)sp.raw[i].p;
            tp->raw_data.len = sp.raw[i].n;
        }
    }
    onnx_stripped_free(&sp);
    if (!m)
        m = onnx__model_proto__unpack(NULL, len, data);
    return m;
}

static void
unpacked_free(Onnx__ModelProto *m, const void *data, size_t len)
{
    const uint8_t *lo = data, *hi = lo + len;
    for (size_t i = 0; m && m->graph && i < m->graph->n_initializer; i++) {
        Onnx__TensorProto *tp = m->graph->initializer[i];
        if (tp->raw_data.data && tp->raw_data.data >= lo && tp->raw_data.data < hi) {
            tp->raw_data.data = NULL;
            tp->raw_data.len = 0;
            tp->has_raw_data = 0;
        }
    }
    onnx__model_proto__free_unpacked(m, NULL);
}

enum npu_status
npu_onnx_import(const void *data, size_t len, const struct npu_onnx_options *opts,
                struct npu_graph **out)
{
    return onnx_import_borrow(data, len, opts, out, NULL);
}

enum npu_status
onnx_import_borrow(const void *data, size_t len, const struct npu_onnx_options *opts,
                   struct npu_graph **out, struct onnx_borrow *borrow)
{
    struct npu_onnx_options o = opts ? *opts : (struct npu_onnx_options){0};
    *out = NULL;
    enum npu_status st = check_dim_spec(o.dim_values);
    if (st)
        return st;
    if (!len) {
        npu_err(DOM, "the model is empty (0 bytes): not an ONNX model");
        return NPU_ERR_CORRUPT;
    }
    /* protobuf-c recurses once per nested message: measure first. */
    if ((st = onnx_check_depth(data, len, NULL)))
        return st;
    Onnx__ModelProto *m = unpack_model(data, len, &st);
    if (!m) {
        if (st)
            return st;
        npu_err(DOM, "not a valid ONNX model (truncated or corrupt protobuf)");
        return NPU_ERR_CORRUPT;
    }
    struct onnx_ctx c = {.base_dir = o.base_dir,
                         .opset = -1,
                         .borrow = borrow,
                         .file_lo = data,
                         .file_hi = (const uint8_t *)data + len};
    if (m->has_ir_version && (m->ir_version < 0 || m->ir_version > NPU_ONNX_MAX_IR_VERSION)) {
        npu_err(DOM,
                "IR version %lld is not supported (up to %d is: ONNX %s; a newer model needs "
                "a newer importer)",
                (long long)m->ir_version, NPU_ONNX_MAX_IR_VERSION, NPU_ONNX_NEWEST_RELEASE);
        st = NPU_ERR_VERSION;
        goto out;
    }
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = m->opset_import[i];
        const char *d = s0(os->domain);
        if (!*d || !strcmp(d, "ai.onnx"))
            c.opset = os->has_version ? (int)NPU_MIN(os->version, 1 << 20) : 1;
    }
    if (c.opset < 0) {
        npu_err(DOM, "model imports no opset of the default ONNX domain");
        st = NPU_ERR_VERSION;
        goto out;
    }
    if (c.opset < 1 || c.opset > NPU_ONNX_MAX_OPSET) {
        npu_err(DOM,
                "opset %d of the default domain is not supported (1 to %d are: the ops of "
                "ONNX %s)",
                c.opset, NPU_ONNX_MAX_OPSET, NPU_ONNX_NEWEST_RELEASE);
        st = NPU_ERR_VERSION;
        goto out;
    }
    if (!m->graph) {
        npu_err(DOM, "model has no graph");
        st = NPU_ERR_CORRUPT;
        goto out;
    }
    c.g = npu_graph_new(m->graph->name && *m->graph->name ? m->graph->name : "main");
    if (!c.g) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    c.g->opset = c.opset;
    struct onnx_inlined *inl = NULL;
    const Onnx__GraphProto *gp = m->graph;
    st = onnx_inline_functions(m, &inl, &gp);
    if (!st)
        st = build(&c, gp, &o);
    onnx_inline_free(inl);
#ifndef NDEBUG
    if (!st && npu_graph_verify(c.g)) {
        npu_err(DOM, "imported graph fails verification (a bug in the importer)");
        st = NPU_ERR_INTERNAL;
    }
#endif
    if (st) {
        npu_graph_free(c.g);
        c.g = NULL;
    }
    *out = c.g;
out:
    free(c.int4_names);
    unpacked_free(m, data, len);
    return st;
}
