/* SPDX-License-Identifier: MIT */
/*
 * npu-onnx-func.c: model-local functions (ModelProto.functions, IR 8 and
 * later), as the torch.export-based exporter leaves them. Every call of a
 * function is inlined before the graph is built: the body's nodes are copied
 * with their internal names made unique per call ("<call>/<name>"), the formal
 * inputs and outputs bound to the call's actual names, attributes that refer
 * to the caller's (ref_attr_name) resolved from the call node or else from the
 * function's defaults (FunctionProto.attribute_proto, IR 9, which the system's
 * onnx.proto of ONNX 1.12 does not know yet: it is read from the unknown
 * fields), and calls inside bodies expanded in turn (nested functions, at
 * most NPU_ONNX_MAX_FUNC_DEPTH deep, so recursion is refused). The result is
 * a shallow copy of the main graph with a new node list; the importer then
 * treats it like any other graph.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx-priv.h"

#define DOM "onnx"
#define NPU_ONNX_MAX_FUNC_DEPTH 16
#define MAX_INLINED_NODES (1 << 22)
/* FunctionProto.attribute_proto (IR 9): field 11, length-delimited */
#define FUNC_ATTR_PROTO_FIELD 11

struct onnx_inlined {
    Onnx__GraphProto graph;  /* shallow copy of the main graph, nodes replaced */
    Onnx__NodeProto **nodes; /* graph.node */
    size_t nnodes, cap;
    void **owned; /* everything allocated here */
    size_t nowned, capowned;
    Onnx__AttributeProto **unpacked; /* default attributes decoded from unknown fields */
    size_t nunpacked, capunpacked;
    unsigned ncalls;
};

struct call_frame {
    const Onnx__FunctionProto *f;
    const Onnx__NodeProto *call;
    const struct call_frame *outer; /* the caller's frame for attribute lookups, or NULL */
    char prefix[256];
    const char *const *actual_in, *const *actual_out; /* bound names */
    size_t nin, nout;
};

static const char *
s0(const char *s)
{
    return s ? s : "";
}

static bool
same_domain(const char *a, const char *b)
{
    a = s0(a), b = s0(b);
    if (!strcmp(a, "ai.onnx"))
        a = "";
    if (!strcmp(b, "ai.onnx"))
        b = "";
    return !strcmp(a, b);
}

static void *
own(struct onnx_inlined *x, void *p)
{
    if (!p)
        return NULL;
    if (x->nowned == x->capowned) {
        size_t cap = x->capowned ? 2 * x->capowned : 256;
        void **v = realloc(x->owned, cap * sizeof(*v));
        if (!v) {
            free(p);
            return NULL;
        }
        x->owned = v, x->capowned = cap;
    }
    x->owned[x->nowned++] = p;
    return p;
}

static char *
own_str(struct onnx_inlined *x, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return own(x, s);
}

static const Onnx__FunctionProto *
find_function(const Onnx__ModelProto *m, const char *domain, const char *name)
{
    for (size_t i = 0; name && i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (f && f->name && !strcmp(f->name, name) && same_domain(f->domain, domain))
            return f;
    }
    return NULL;
}

/* The function's default value of attribute `name` (attribute_proto, field
 * 11, decoded from the unknown fields on first use), or NULL. */
static const Onnx__AttributeProto *
function_default(struct onnx_inlined *x, const Onnx__FunctionProto *f, const char *name,
                 enum npu_status *st)
{
    const ProtobufCMessage *base = &f->base;
    for (unsigned i = 0; i < base->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &base->unknown_fields[i];
        if (u->tag != FUNC_ATTR_PROTO_FIELD || u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
            continue;
        /* protobuf-c keeps a length-prefixed unknown field with its length varint */
        const uint8_t *d = u->data;
        size_t len = u->len, pre = 0;
        uint64_t plen = 0;
        for (int sh = 0; pre < len && sh < 64; sh += 7) {
            plen |= (uint64_t)(d[pre] & 0x7f) << sh;
            if (!(d[pre++] & 0x80))
                break;
        }
        if (pre <= len && plen == len - pre)
            d += pre, len -= pre;
        Onnx__AttributeProto *a = onnx__attribute_proto__unpack(NULL, len, d);
        if (!a) {
            npu_err(DOM, "function '%s': a default attribute (attribute_proto) is corrupt",
                    s0(f->name));
            *st = NPU_ERR_CORRUPT;
            return NULL;
        }
        if (x->nunpacked == x->capunpacked) {
            size_t cap = x->capunpacked ? 2 * x->capunpacked : 16;
            Onnx__AttributeProto **v = realloc(x->unpacked, cap * sizeof(*v));
            if (!v) {
                onnx__attribute_proto__free_unpacked(a, NULL);
                *st = NPU_ERR_NOMEM;
                return NULL;
            }
            x->unpacked = v, x->capunpacked = cap;
        }
        x->unpacked[x->nunpacked++] = a;
        if (a->name && !strcmp(a->name, name))
            return a;
    }
    return NULL;
}

/* Name of a body value inside this call: a formal input/output maps to the
 * actual name, anything else gets the call's prefix. "" stays "". */
static const char *
map_name(struct onnx_inlined *x, const struct call_frame *fr, const char *name)
{
    if (!name || !*name)
        return "";
    const Onnx__FunctionProto *f = fr->f;
    for (size_t i = 0; i < f->n_input; i++)
        if (f->input[i] && !strcmp(f->input[i], name))
            return i < fr->nin ? fr->actual_in[i] : "";
    for (size_t i = 0; i < f->n_output; i++)
        if (f->output[i] && !strcmp(f->output[i], name))
            return fr->actual_out[i];
    return own_str(x, fr->prefix, name);
}

static enum npu_status push_node(struct onnx_inlined *x, Onnx__NodeProto *np);

static enum npu_status expand(struct onnx_inlined *x, const Onnx__ModelProto *m,
                              const Onnx__NodeProto *call, const struct call_frame *outer,
                              const char *const *in, const char *const *out, int depth);

/* Attribute `a` of a body node, with ref_attr_name resolved against the call
 * node (then the function's defaults). *res is NULL when the attribute is
 * left out (a reference the call does not set and the function has no default). */
static enum npu_status
resolve_attr(struct onnx_inlined *x, const struct call_frame *fr, const Onnx__AttributeProto *a,
             const Onnx__AttributeProto **res)
{
    *res = a;
    if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
        a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS || a->g || a->n_graphs) {
        npu_err(DOM,
                "function '%s': attribute '%s' is a graph (control flow inside a model-local "
                "function is not supported)",
                s0(fr->f->name), s0(a->name));
        return NPU_ERR_UNSUPPORTED;
    }
    if (!a->ref_attr_name || !*a->ref_attr_name)
        return NPU_OK;
    const Onnx__AttributeProto *src = NULL;
    for (size_t k = 0; k < fr->call->n_attribute && !src; k++)
        if (fr->call->attribute[k]->name && !strcmp(fr->call->attribute[k]->name, a->ref_attr_name))
            src = fr->call->attribute[k];
    enum npu_status st = NPU_OK;
    if (!src)
        src = function_default(x, fr->f, a->ref_attr_name, &st);
    if (st)
        return st;
    if (!src) {
        *res = NULL;
        return NPU_OK;
    }
    /* the caller's attribute may itself refer to its caller's (nested calls) */
    if (src->ref_attr_name && *src->ref_attr_name) {
        if (!fr->outer) {
            npu_err(DOM, "function '%s': attribute '%s' refers to '%s' outside any function",
                    s0(fr->f->name), s0(a->name), src->ref_attr_name);
            return NPU_ERR_CORRUPT;
        }
        const Onnx__AttributeProto *up;
        if ((st = resolve_attr(x, fr->outer, src, &up)))
            return st;
        if (!up) {
            *res = NULL;
            return NPU_OK;
        }
        src = up;
    }
    Onnx__AttributeProto *c = own(x, malloc(sizeof(*c)));
    if (!c)
        return NPU_ERR_NOMEM;
    *c = *src;
    c->name = a->name;
    c->ref_attr_name = NULL;
    *res = c;
    return NPU_OK;
}

static enum npu_status
copy_body_node(struct onnx_inlined *x, const Onnx__ModelProto *m, const struct call_frame *fr,
               const Onnx__NodeProto *b, int depth)
{
    enum npu_status st;
    const char **ins = own(x, calloc(b->n_input + 1, sizeof(char *)));
    const char **outs = own(x, calloc(b->n_output + 1, sizeof(char *)));
    if (!ins || !outs)
        return NPU_ERR_NOMEM;
    for (size_t k = 0; k < b->n_input; k++)
        if (!(ins[k] = map_name(x, fr, b->input[k])))
            return NPU_ERR_NOMEM;
    for (size_t k = 0; k < b->n_output; k++)
        if (!(outs[k] = map_name(x, fr, b->output[k])))
            return NPU_ERR_NOMEM;
    Onnx__AttributeProto **attrs = own(x, calloc(b->n_attribute + 1, sizeof(*attrs)));
    if (!attrs)
        return NPU_ERR_NOMEM;
    size_t na = 0;
    for (size_t k = 0; k < b->n_attribute; k++) {
        const Onnx__AttributeProto *r;
        if ((st = resolve_attr(x, fr, b->attribute[k], &r)))
            return st;
        if (r)
            attrs[na++] = (Onnx__AttributeProto *)r;
    }
    Onnx__NodeProto *c = own(x, malloc(sizeof(*c)));
    char *nm = own_str(x, fr->prefix, b->name && *b->name ? b->name : s0(b->op_type));
    if (!c || !nm)
        return NPU_ERR_NOMEM;
    *c = *b;
    c->name = nm;
    c->input = (char **)ins;
    c->output = (char **)outs;
    c->attribute = attrs;
    c->n_attribute = na;
    /* a call of another local function inside the body */
    if (find_function(m, b->domain, b->op_type))
        return expand(x, m, c, fr, (const char *const *)ins, (const char *const *)outs, depth + 1);
    return push_node(x, c);
}

static enum npu_status
push_node(struct onnx_inlined *x, Onnx__NodeProto *np)
{
    if (x->nnodes >= MAX_INLINED_NODES) {
        npu_err(DOM, "inlining model-local functions gives more than %d nodes", MAX_INLINED_NODES);
        return NPU_ERR_UNSUPPORTED;
    }
    if (x->nnodes == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        Onnx__NodeProto **v = realloc(x->nodes, cap * sizeof(*v));
        if (!v)
            return NPU_ERR_NOMEM;
        x->nodes = v, x->cap = cap;
    }
    x->nodes[x->nnodes++] = np;
    return NPU_OK;
}

static enum npu_status
check_function_opset(const Onnx__ModelProto *m, const Onnx__FunctionProto *f)
{
    int64_t model = -1, fn = -1;
    for (size_t i = 0; i < m->n_opset_import; i++)
        if (same_domain(m->opset_import[i]->domain, ""))
            model = m->opset_import[i]->version;
    for (size_t i = 0; i < f->n_opset_import; i++)
        if (same_domain(f->opset_import[i]->domain, ""))
            fn = f->opset_import[i]->version;
    if (fn >= 0 && model >= 0 && fn != model) {
        npu_err(DOM,
                "function '%s' imports opset %lld of the default domain, the model %lld (one "
                "opset per model is supported)",
                s0(f->name), (long long)fn, (long long)model);
        return NPU_ERR_UNSUPPORTED;
    }
    return NPU_OK;
}

static enum npu_status
expand(struct onnx_inlined *x, const Onnx__ModelProto *m, const Onnx__NodeProto *call,
       const struct call_frame *outer, const char *const *in, const char *const *out, int depth)
{
    const Onnx__FunctionProto *f = find_function(m, call->domain, call->op_type);
    if (depth > NPU_ONNX_MAX_FUNC_DEPTH) {
        npu_err(DOM,
                "node '%s' (%s): model-local functions nested more than %d deep (a recursive "
                "function?)",
                s0(call->name), s0(call->op_type), NPU_ONNX_MAX_FUNC_DEPTH);
        return NPU_ERR_UNSUPPORTED;
    }
    enum npu_status st = check_function_opset(m, f);
    if (st)
        return st;
    if (call->n_input > f->n_input || call->n_output > f->n_output) {
        npu_err(DOM, "node '%s' (%s): %zu inputs and %zu outputs, the function has %zu and %zu",
                s0(call->name), s0(call->op_type), call->n_input, call->n_output, f->n_input,
                f->n_output);
        return NPU_ERR_INVALID;
    }
    struct call_frame fr = {.f = f, .call = call, .outer = outer, .nin = call->n_input};
    snprintf(fr.prefix, sizeof(fr.prefix), "%.200s#%u/",
             call->name && *call->name ? call->name : s0(call->op_type), x->ncalls++);
    /* an output the call leaves unnamed still needs a name inside the body */
    const char **aout = own(x, calloc(f->n_output + 1, sizeof(char *)));
    if (!aout)
        return NPU_ERR_NOMEM;
    for (size_t i = 0; i < f->n_output; i++) {
        const char *o = i < call->n_output ? out[i] : NULL;
        aout[i] = o && *o ? o : own_str(x, fr.prefix, s0(f->output[i]));
        if (!aout[i])
            return NPU_ERR_NOMEM;
    }
    fr.actual_in = in;
    fr.actual_out = aout;
    fr.nout = f->n_output;
    for (size_t i = 0; i < f->n_node; i++)
        if ((st = copy_body_node(x, m, &fr, f->node[i], depth)))
            return st;
    return NPU_OK;
}

void
onnx_inline_free(struct onnx_inlined *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->nowned; i++)
        free(x->owned[i]);
    for (size_t i = 0; i < x->nunpacked; i++)
        onnx__attribute_proto__free_unpacked(x->unpacked[i], NULL);
    free(x->owned);
    free(x->unpacked);
    free(x->nodes);
    free(x);
}

enum npu_status
onnx_inline_functions(const Onnx__ModelProto *m, struct onnx_inlined **out,
                      const Onnx__GraphProto **gp)
{
    *out = NULL;
    *gp = m->graph;
    if (!m->n_functions || !m->graph)
        return NPU_OK;
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (!f || !f->name || !*f->name) {
            npu_err(DOM, "model-local function %zu has no name", i);
            return NPU_ERR_CORRUPT;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(m->functions[j]->name, f->name) &&
                same_domain(m->functions[j]->domain, f->domain)) {
                npu_err(DOM, "model-local function '%s' (domain '%s') is defined twice", f->name,
                        s0(f->domain));
                return NPU_ERR_CORRUPT;
            }
    }
    struct onnx_inlined *x = calloc(1, sizeof(*x));
    if (!x)
        return NPU_ERR_NOMEM;
    enum npu_status st = NPU_OK;
    const Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; !st && i < g->n_node; i++) {
        const Onnx__NodeProto *np = g->node[i];
        if (!find_function(m, np->domain, np->op_type)) {
            st = push_node(x, (Onnx__NodeProto *)np);
            continue;
        }
        st = expand(x, m, np, NULL, (const char *const *)np->input, (const char *const *)np->output,
                    1);
    }
    if (st) {
        onnx_inline_free(x);
        return st;
    }
    x->graph = *g;
    x->graph.node = x->nodes;
    x->graph.n_node = x->nnodes;
    *out = x;
    *gp = &x->graph;
    npu_info(DOM, "inlined %u call(s) of model-local functions: %zu nodes", x->ncalls, x->nnodes);
    return NPU_OK;
}
