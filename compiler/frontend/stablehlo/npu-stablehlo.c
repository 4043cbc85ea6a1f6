// SPDX-License-Identifier: MIT
/*
 * npu-stablehlo.c: StableHLO text (what JAX's `lower(...).as_text()` prints)
 * to the IR, without MLIR. The module's functions are found first; then the
 * public entry (@main, else the only public function) is walked statement by
 * statement, each op mapped to IR nodes in their ONNX form (dot_general to
 * MatMul with the transposes and reshapes its dimension numbers need,
 * convolution to Conv in NCHW between transposes, broadcast_in_dim to
 * Reshape + Expand, reduce to ReduceSum/ReduceMax, ...). Calls of private
 * functions are inlined. Every node is inferred as it is made and its shape
 * compared with the type the program declares, so a mapping mistake or a
 * malformed program fails at the op that caused it, with its line.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-stablehlo.h"
#include "shlo-priv.h"

#define MAX_IN 64
#define MAX_CALL_DEPTH 32
#define MAX_FUNCS 256
#define MAX_ARGS 1024

struct func {
    char name[128];
    bool is_public;
    int nargs;
    char (*argname)[64];
    struct shlo_type *argt;
    const char *body, *body_end; /* inside the braces */
    const char *at;
    char why[192]; /* an argument type the reader refuses: fails when used */
};

struct binding {
    char name[64];
    struct npu_value *v;
};

struct scope {
    struct binding *b;
    int n, cap;
};

struct cx {
    struct npu_graph *g;
    const char *text; /* cleaned */
    struct func funcs[MAX_FUNCS];
    int nfuncs;
    int depth;
    unsigned uniq;
    char prefix[96];
    const struct shlo_decoded *bc; /* text decoded from MLIR bytecode */
};

struct stmt {
    const char *start, *rest, *pre_end, *sig, *end;
    char res[64];
    int nres;
    char op[96];
    const char *sop; /* op without "stablehlo." */
    struct npu_value *in[MAX_IN];
    int nin;
    struct shlo_type out;
    bool has_out;
};

static int
line_of(const struct cx *c, const char *p)
{
    int l = 1;
    for (const char *q = c->text; q < p; q++)
        l += *q == '\n';
    return l;
}

static enum npu_status NPU_PRINTF(4, 5)
    fail(const struct cx *c, const char *at, enum npu_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = at ? line_of(c, at) : 0;
    if (c->bc) { /* name the VHLO op the decoded line came from */
        int k = line > 0 && line < c->bc->nlines ? c->bc->line_op[line] : 0;
        npu_err(SHLO_DOM, "%s, decoded line %d%s%s%s: %s", c->bc->origin, line, k ? " (" : "",
                k > 0 && k <= c->bc->nop_names ? c->bc->op_names[k - 1] : "", k ? ")" : "", msg);
    } else
        npu_err(SHLO_DOM, "line %d: %s", line, msg);
    return st;
}

static void
type_str(const struct shlo_type *t, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "tensor<");
    for (int i = 0; i < t->ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%lldx", (long long)t->dims[i]);
    if (n < len)
        snprintf(buf + n, len - n, "%s>", t->dt == NPU_DTYPE_BOOL ? "i1" : npu_dtype_name(t->dt));
}

/* ---- scopes ---------------------------------------------------------------- */

static struct npu_value *
lookup(const struct scope *s, const char *name)
{
    for (int i = s->n - 1; i >= 0; i--)
        if (!strcmp(s->b[i].name, name))
            return s->b[i].v;
    return NULL;
}

static bool
bind(struct scope *s, const char *name, struct npu_value *v)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        struct binding *b = realloc(s->b, (size_t)cap * sizeof *b);
        if (!b)
            return false;
        s->b = b;
        s->cap = cap;
    }
    snprintf(s->b[s->n].name, sizeof s->b[s->n].name, "%s", name);
    s->b[s->n++].v = v;
    return true;
}

/* `%name` at p (p on '%'): the name without '%' into buf; returns the end. */
static const char *
read_ref(const char *p, const char *end, char *buf, size_t len)
{
    size_t n = 0;
    p++;
    while (p < end && (shlo_is_ident(*p) || *p == '#') && *p != '-') {
        if (n + 1 < len)
            buf[n++] = *p;
        p++;
    }
    buf[n] = 0;
    return p;
}

/* ---- node helpers ---------------------------------------------------------- */

static struct npu_value *
mk(struct cx *c, enum npu_op op, struct npu_value *const *in, int nin, struct npu_node **node)
{
    char nm[192];
    snprintf(nm, sizeof nm, "%s%s_%u", c->prefix, npu_op_name(op), c->uniq++);
    struct npu_node *n = npu_node_new(c->g, op, nm, in, nin, 1, NULL);
    if (!n)
        return NULL;
    if (node)
        *node = n;
    npu_graph_append(c->g, n);
    return n->out[0];
}

static bool
infer(struct cx *c, struct npu_value *v)
{
    return v && v->producer && npu_infer_node(c->g, v->producer) == NPU_OK;
}

static struct npu_value *
mk1(struct cx *c, enum npu_op op, struct npu_value *const *in, int nin)
{
    struct npu_value *v = mk(c, op, in, nin, NULL);
    return infer(c, v) ? v : NULL;
}

static struct npu_value *
const_i64(struct cx *c, const int64_t *v, int n)
{
    char nm[128];
    snprintf(nm, sizeof nm, "%sshape_%u", c->prefix, c->uniq++);
    return npu_graph_const_i64(c->g, nm, v, n, false);
}

static struct npu_value *
transpose(struct cx *c, struct npu_value *x, const int64_t *perm, int n)
{
    bool id = true;
    for (int i = 0; i < n; i++)
        id &= perm[i] == i;
    if (id || !x)
        return x;
    struct npu_node *node;
    struct npu_value *v = mk(c, NPU_OP_TRANSPOSE, &x, 1, &node);
    if (!v || npu_node_set_ints(c->g, node, "perm", perm, (size_t)n))
        return NULL;
    return infer(c, v) ? v : NULL;
}

static struct npu_value *
reshape(struct cx *c, struct npu_value *x, const int64_t *dims, int n)
{
    if (!x)
        return NULL;
    if (x->t.ndim == n && !memcmp(x->t.dims, dims, (size_t)n * sizeof *dims))
        return x;
    struct npu_value *in[2] = {x, const_i64(c, dims, n)};
    return in[1] ? mk1(c, NPU_OP_RESHAPE, in, 2) : NULL;
}

static bool
same_type(const struct npu_value *v, const struct shlo_type *t)
{
    return v->t.dtype == t->dt && v->t.ndim == t->ndim &&
           !memcmp(v->t.dims, t->dims, (size_t)t->ndim * sizeof t->dims[0]);
}

/* Binds the N results of a multi-result op as %r#0..%r#N-1, each checked against its
 * declared type first (WHAT names the op in the error). */
static enum npu_status
bind_results(const struct cx *c, struct scope *sc, const char *at, const char *res,
             struct npu_value *const *r, const struct shlo_type *rt, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        if (!r[i] || !same_type(r[i], &rt[i]))
            return fail(c, at, NPU_ERR_INVALID, "%s: result %d does not have the declared type",
                        what, i);
        char nm[80];
        snprintf(nm, sizeof nm, "%s#%d", res, i);
        if (!bind(sc, nm, r[i]))
            return NPU_ERR_NOMEM;
    }
    return NPU_OK;
}

/* The signature's top-level "->" (after it: the result types), NULL without one; a
 * reducer region (`reducer(...)`) at depth 0 ends the search. SIG may be NULL. */
static const char *
sig_arrow(const char *sig, const char *end)
{
    const char *arrow = NULL;
    int depth = 0;
    for (const char *q = sig; q && q < end; q++) {
        if (*q == '-' && q + 1 < end && q[1] == '>') {
            if (depth == 0)
                arrow = q + 2;
            q++;
            continue;
        }
        if (strchr("([{<", *q))
            depth++;
        else if (strchr(")]}>", *q))
            depth--;
        if (depth == 0 && end - q > 8 && !strncmp(q, "reducer", 7))
            break;
    }
    return arrow;
}

/* ---- statements ------------------------------------------------------------- */

static bool op_known(const char *op);

/* Splits a statement into results, op name, operands and result type. */
static enum npu_status
split_stmt(struct cx *c, const struct scope *sc, struct stmt *s)
{
    const char *p = s->start, *end = s->end;
    char why[160];
    s->nres = 0;
    s->res[0] = 0;
    if (*p == '%') {
        p = read_ref(p, end, s->res, sizeof s->res);
        s->nres = 1;
        if (p < end && *p == ':') {
            int64_t k = strtoll(p + 1, NULL, 10);
            if (k < 1 || k > MAX_IN)
                return fail(c, s->start, NPU_ERR_INVALID, "bad result count");
            s->nres = (int)k;
            p++;
            while (p < end && isdigit((unsigned char)*p))
                p++;
        }
        p = shlo_ws(p, end);
        if (p < end && *p == ',')
            return fail(c, s->start, NPU_ERR_UNSUPPORTED,
                        "results listed one by one (%%a, %%b = ...) are not supported");
        if (p >= end || *p != '=')
            return fail(c, s->start, NPU_ERR_INVALID, "expected '=' after the result name");
        p = shlo_ws(p + 1, end);
    }
    const char *o = p;
    if (p < end && *p == '"') {
        p = shlo_skip_string(p, end);
        snprintf(s->op, sizeof s->op, "%.*s", (int)(p - o - 2), o + 1);
    } else {
        while (p < end && shlo_is_ident(*p))
            p++;
        snprintf(s->op, sizeof s->op, "%.*s", (int)(p - o), o);
    }
    if (!s->op[0])
        return fail(c, s->start, NPU_ERR_INVALID, "expected an operation, found '%.20s'", o);
    s->sop = !strncmp(s->op, "stablehlo.", 10) ? s->op + 10 : s->op;
    s->rest = p;
    /* the signature colon: the last ':' at depth 0 */
    s->sig = NULL;
    int depth = 0;
    for (const char *q = p; q < end; q++) {
        if (*q == '"') {
            q = shlo_skip_string(q, end) - 1;
            continue;
        }
        if (*q == '>' && q[-1] == '-')
            continue;
        if (strchr("([{<", *q))
            depth++;
        else if (strchr(")]}>", *q))
            depth--;
        else if (*q == ':' && depth == 0) {
            s->sig = q + 1;
            if (q + 1 < end && q[1] == ':')
                s->sig = NULL, q++;
        }
        if (depth == 0 && end - q > 8 && !strncmp(q, "reducer", 7) && !shlo_is_ident(q[-1]))
            break; /* the region of the pretty reduce */
    }
    s->pre_end = s->sig ? s->sig - 1 : end;
    /* operands: %refs before the signature outside braces and angles */
    s->nin = 0;
    int braces = 0;
    for (const char *q = s->rest; q < s->pre_end; q++) {
        if (*q == '"') {
            q = shlo_skip_string(q, end) - 1;
            continue;
        }
        if (*q == '>' && q[-1] == '-')
            continue;
        if (*q == '{' || *q == '<')
            braces++;
        else if (*q == '}' || *q == '>')
            braces--;
        else if (*q == '%' && braces == 0) {
            char nm[64];
            const char *r = read_ref(q, s->pre_end, nm, sizeof nm);
            struct npu_value *v = lookup(sc, nm);
            if (!v && !op_known(s->op)) /* an op with its own binding syntax (while's %iterArg) */
                return fail(c, s->start, NPU_ERR_UNSUPPORTED,
                            "'%s' is not supported by the StableHLO reader (StableHLO %d.%d.%d "
                            "ops: see docs/jax.md)",
                            s->op, NPU_STABLEHLO_VERSION_MAJOR, NPU_STABLEHLO_VERSION_MINOR,
                            NPU_STABLEHLO_VERSION_PATCH);
            if (!v)
                return fail(c, q, NPU_ERR_INVALID, "'%%%s' is not defined", nm);
            if (s->nin >= MAX_IN)
                return fail(c, q, NPU_ERR_UNSUPPORTED, "more than %d operands", MAX_IN);
            s->in[s->nin++] = v;
            q = r - 1;
        }
    }
    /* result type: after the last top-level "->" of the signature, else its first type */
    s->has_out = false;
    if (s->sig && s->nres) {
        const char *t = s->sig, *arrow = sig_arrow(s->sig, end);
        if (arrow)
            t = arrow;
        t = shlo_ws(t, end);
        if (t < end && *t == '(')
            t++;
        /* without an arrow the types are a list whose last is the result's
         * (`select %p, %a, %b : tensor<..xi1>, tensor<..>`) */
        for (;;) {
            if (!shlo_parse_type(&t, end, &s->out, why, sizeof why))
                return fail(c, t, NPU_ERR_UNSUPPORTED, "%s: %s", s->op, why);
            const char *q = shlo_ws(t, end);
            if (arrow || q >= end || *q != ',')
                break;
            t = q + 1;
        }
        s->has_out = true;
    }
    return NPU_OK;
}

static enum npu_status
need_in(struct cx *c, const struct stmt *s, int n)
{
    if (s->nin != n)
        return fail(c, s->start, NPU_ERR_INVALID, "%s takes %d operands, found %d", s->op, n,
                    s->nin);
    if (s->nres != 1 || !s->has_out)
        return fail(c, s->start, NPU_ERR_INVALID, "%s: expected one result with a type", s->op);
    return NPU_OK;
}

/* A list attribute: `key = [..]` (or array<>, dense<>); -1 when absent. */
static int
attr_ints(const struct stmt *s, const char *key, int64_t *v, int max)
{
    const char *p = shlo_find_attr(s->rest, s->pre_end, key);
    if (!p)
        return -1;
    return shlo_int_list(&p, s->pre_end, v, max);
}

/* `key = [a] x [b]` (pretty dot_general) into a and b. */
static bool
attr_pair(const struct stmt *s, const char *key, int64_t *a, int *na, int64_t *b, int *nb)
{
    const char *p = shlo_find_attr(s->rest, s->pre_end, key);
    if (!p)
        return false;
    *na = shlo_int_list(&p, s->pre_end, a, NPU_MAX_DIMS);
    p = shlo_ws(p, s->pre_end);
    if (*na < 0 || p >= s->pre_end || *p != 'x')
        return (*na = -1), false;
    p++;
    *nb = shlo_int_list(&p, s->pre_end, b, NPU_MAX_DIMS);
    return *nb >= 0;
}

static bool
has_dup_or_range(const int64_t *v, int n, int rank)
{
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= rank)
            return true;
        for (int j = 0; j < i; j++)
            if (v[i] == v[j])
                return true;
    }
    return false;
}

static bool
in_list(int64_t x, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

static struct npu_value *
do_dot(struct cx *c, const struct stmt *s, struct npu_value *l, struct npu_value *r)
{
    int64_t lb[NPU_MAX_DIMS], rb[NPU_MAX_DIMS], lc[NPU_MAX_DIMS], rc[NPU_MAX_DIMS];
    int nlb = 0, nrb = 0, nlc = 0, nrc = 0;
    if (!attr_pair(s, "batching_dims", lb, &nlb, rb, &nrb)) {
        nlb = attr_ints(s, "lhs_batching_dimensions", lb, NPU_MAX_DIMS);
        nrb = attr_ints(s, "rhs_batching_dimensions", rb, NPU_MAX_DIMS);
        nlb = nlb < 0 ? 0 : nlb;
        nrb = nrb < 0 ? 0 : nrb;
    }
    if (!attr_pair(s, "contracting_dims", lc, &nlc, rc, &nrc)) {
        nlc = attr_ints(s, "lhs_contracting_dimensions", lc, NPU_MAX_DIMS);
        nrc = attr_ints(s, "rhs_contracting_dimensions", rc, NPU_MAX_DIMS);
        nlc = nlc < 0 ? 0 : nlc;
        nrc = nrc < 0 ? 0 : nrc;
    }
    int rl = l->t.ndim, rr = r->t.ndim;
    if (nlb != nrb || nlc != nrc || has_dup_or_range(lb, nlb, rl) ||
        has_dup_or_range(rb, nrb, rr) || has_dup_or_range(lc, nlc, rl) ||
        has_dup_or_range(rc, nrc, rr)) {
        fail(c, s->start, NPU_ERR_INVALID, "dot_general: bad dimension numbers");
        return NULL;
    }
    for (int i = 0; i < nlb; i++)
        if (l->t.dims[lb[i]] != r->t.dims[rb[i]]) {
            fail(c, s->start, NPU_ERR_INVALID, "dot_general: batch dimensions differ");
            return NULL;
        }
    int64_t K = 1;
    for (int i = 0; i < nlc; i++) {
        if (l->t.dims[lc[i]] != r->t.dims[rc[i]]) {
            fail(c, s->start, NPU_ERR_INVALID, "dot_general: contracting dimensions differ");
            return NULL;
        }
        K *= l->t.dims[lc[i]];
    }
    int64_t lf[NPU_MAX_DIMS], rf[NPU_MAX_DIMS];
    int nlf = 0, nrf = 0;
    for (int i = 0; i < rl; i++)
        if (!in_list(i, lb, nlb) && !in_list(i, lc, nlc))
            lf[nlf++] = i;
    for (int i = 0; i < rr; i++)
        if (!in_list(i, rb, nrb) && !in_list(i, rc, nrc))
            rf[nrf++] = i;
    int64_t pl[NPU_MAX_DIMS], pr[NPU_MAX_DIMS], M = 1, N = 1;
    int k = 0;
    for (int i = 0; i < nlb; i++)
        pl[k++] = lb[i];
    for (int i = 0; i < nlf; i++)
        pl[k++] = lf[i], M *= l->t.dims[lf[i]];
    for (int i = 0; i < nlc; i++)
        pl[k++] = lc[i];
    k = 0;
    for (int i = 0; i < nrb; i++)
        pr[k++] = rb[i];
    for (int i = 0; i < nrc; i++)
        pr[k++] = rc[i];
    for (int i = 0; i < nrf; i++)
        pr[k++] = rf[i], N *= r->t.dims[rf[i]];
    /* [batch..., M, K] x [batch..., K, N]: MatMul's batched form */
    int64_t ls[NPU_MAX_DIMS + 2], rs[NPU_MAX_DIMS + 2], os[NPU_MAX_DIMS];
    int no = 0;
    for (int i = 0; i < nlb; i++)
        ls[i] = rs[i] = os[no++] = l->t.dims[lb[i]];
    for (int i = 0; i < nlf; i++)
        os[no++] = l->t.dims[lf[i]];
    for (int i = 0; i < nrf; i++)
        os[no++] = r->t.dims[rf[i]];
    if (nlb + 2 > NPU_MAX_DIMS) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED, "dot_general: too many batch dimensions");
        return NULL;
    }
    ls[nlb] = M, ls[nlb + 1] = K;
    rs[nlb] = K, rs[nlb + 1] = N;
    struct npu_value *a = reshape(c, transpose(c, l, pl, rl), ls, nlb + 2);
    struct npu_value *b = reshape(c, transpose(c, r, pr, rr), rs, nlb + 2);
    if (!a || !b)
        return NULL;
    struct npu_value *in[2] = {a, b};
    struct npu_value *y = mk1(c, NPU_OP_MATMUL, in, 2);
    y = reshape(c, y, os, no);
    if (y && y->t.dtype != s->out.dt) {
        struct npu_node *n;
        struct npu_value *v = mk(c, NPU_OP_CAST, &y, 1, &n);
        if (!v || npu_node_set_int(c->g, n, "to", npu_dtype_to_onnx(s->out.dt)) || !infer(c, v))
            return NULL;
        y = v;
    }
    return y;
}

/* Integers of a bracketed group (nested lists flattened), p on its opener. */
static int
flat_ints(const char *p, const char *end, int64_t *v, int max)
{
    const char *e = shlo_skip_group(p, end);
    int n = 0;
    for (const char *q = p; q < e && n < max;) {
        if (isdigit((unsigned char)*q) ||
            (*q == '-' && q + 1 < e && isdigit((unsigned char)q[1]))) {
            char *x;
            v[n++] = strtoll(q, &x, 10);
            q = x;
        } else if (isalpha((unsigned char)*q)) { /* skip words such as i64, dense */
            while (q < e && isalnum((unsigned char)*q))
                q++;
        } else
            q++;
    }
    return n;
}

/* One `[b, 0, 1, f]` group of conv dimension numbers: positions of the
 * letters (a, b) and of the spatial indices. */
static const char *
conv_layout(const char *p, const char *end, char l1, char l2, int *p1, int *p2, int *sp, int *nsp)
{
    p = shlo_ws(p, end);
    if (p >= end || *p != '[')
        return NULL;
    p++;
    int pos = 0;
    *p1 = *p2 = -1;
    *nsp = 0;
    for (int i = 0; i < NPU_MAX_DIMS; i++)
        sp[i] = -1;
    for (;;) {
        p = shlo_ws(p, end);
        if (p >= end || pos > NPU_MAX_DIMS)
            return NULL;
        if (*p == ']')
            break;
        if (pos == NPU_MAX_DIMS)
            return NULL;
        if (*p == l1 && *p1 < 0)
            *p1 = pos, p++;
        else if (*p == l2 && *p2 < 0)
            *p2 = pos, p++;
        else if (*p >= '0' && *p <= '9') {
            int k = *p++ - '0';
            if (k >= NPU_MAX_DIMS || sp[k] >= 0 || (p < end && *p >= '0' && *p <= '9'))
                return NULL;
            sp[k] = pos;
            (*nsp)++;
        } else
            return NULL;
        pos++;
        p = shlo_ws(p, end);
        if (p < end && *p == ',')
            p++;
    }
    /* each letter once, spatial dims 0..n-1 each once */
    if (*p1 < 0 || *p2 < 0 || pos != *nsp + 2)
        return NULL;
    for (int i = 0; i < *nsp; i++)
        if (sp[i] < 0)
            return NULL;
    return p + 1;
}

/* A convolution with input dilation (lhs_dilate: jax.lax.conv_transpose,
 * flax ConvTranspose) over NCHW x and OIHW w: the window slides over x with
 * d - 1 zeros between its elements, padded (lo, hi), which is ConvTranspose
 * with strides d, the kernel flipped in space and laid out IOHW, and pads
 * keff - 1 - lo at the start and keff - 1 - hi at the end (keff the dilated
 * kernel's extent); an end pad below 0 by less than d is output_padding.
 * Window strides, groups and larger pads are refused. */
static struct npu_value *
conv_transpose(struct cx *c, const struct stmt *s, struct npu_value *xt, struct npu_value *wt,
               int ns, const int64_t *stride, const int64_t *pad, const int64_t *ld,
               const int64_t *rd, int64_t groups)
{
    int64_t pads[2 * NPU_MAX_DIMS], op[NPU_MAX_DIMS], st[NPU_MAX_DIMS], en[NPU_MAX_DIMS];
    int64_t ax[NPU_MAX_DIMS], sp[NPU_MAX_DIMS], perm[NPU_MAX_DIMS];
    bool any_op = false;
    for (int i = 0; i < ns; i++) {
        int64_t k = wt->t.dims[2 + i], keff = (k - 1) * rd[i] + 1;
        pads[i] = keff - 1 - pad[2 * i];
        pads[ns + i] = keff - 1 - pad[2 * i + 1];
        op[i] = 0;
        if (pads[ns + i] < 0 && -pads[ns + i] < ld[i])
            op[i] = -pads[ns + i], pads[ns + i] = 0, any_op = true;
        if (stride[i] != 1 || groups != 1 || pads[i] < 0 || pads[ns + i] < 0) {
            fail(c, s->start, NPU_ERR_UNSUPPORTED,
                 "convolution: input dilation (lhs_dilate, a transposed convolution) is "
                 "supported only with window strides 1, one group and padding within the "
                 "dilated kernel");
            return NULL;
        }
        st[i] = -1, en[i] = -k - 1, ax[i] = 2 + i, sp[i] = -1;
    }
    struct npu_value *sl[5] = {wt, const_i64(c, st, ns), const_i64(c, en, ns), const_i64(c, ax, ns),
                               const_i64(c, sp, ns)};
    if (!sl[1] || !sl[2] || !sl[3] || !sl[4])
        return NULL;
    struct npu_value *wf = mk1(c, NPU_OP_SLICE, sl, 5);
    for (int i = 0; i < ns + 2; i++)
        perm[i] = i < 2 ? 1 - i : i;
    struct npu_value *in[2] = {xt, transpose(c, wf, perm, ns + 2)};
    if (!in[1])
        return NULL;
    struct npu_node *node;
    struct npu_value *y = mk(c, NPU_OP_CONV_TRANSPOSE, in, 2, &node);
    if (!y || npu_node_set_ints(c->g, node, "strides", ld, (size_t)ns) ||
        npu_node_set_ints(c->g, node, "pads", pads, (size_t)(2 * ns)) ||
        npu_node_set_ints(c->g, node, "dilations", rd, (size_t)ns) ||
        (any_op && npu_node_set_ints(c->g, node, "output_padding", op, (size_t)ns)) || !infer(c, y))
        return NULL;
    return y;
}

static struct npu_value *
do_conv(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0], *w = s->in[1];
    const char *p = shlo_find_attr(s->rest, s->pre_end, "dim_numbers");
    if (!p) {
        p = shlo_find_attr(s->rest, s->pre_end, "dimension_numbers");
        if (p && !strncmp(p, "#stablehlo.conv<", 16))
            p += 16;
    }
    int ib, ifeat, isp[NPU_MAX_DIMS], ko, ki, ksp[NPU_MAX_DIMS], ob, of, osp[NPU_MAX_DIMS];
    int n1, n2, n3;
    const char *e = s->pre_end;
    if (p)
        p = conv_layout(p, e, 'b', 'f', &ib, &ifeat, isp, &n1);
    if (p) {
        p = shlo_ws(p, e);
        p = p < e && *p == 'x' ? conv_layout(p + 1, e, 'o', 'i', &ko, &ki, ksp, &n2) : NULL;
    }
    if (p) {
        p = shlo_ws(p, e);
        p = e - p > 2 && p[0] == '-' && p[1] == '>'
                ? conv_layout(p + 2, e, 'b', 'f', &ob, &of, osp, &n3)
                : NULL;
    }
    int rank = x->t.ndim;
    if (!p || n1 != rank - 2 || n2 != n1 || n3 != n1 || ib < 0 || ifeat < 0 || ko < 0 || ki < 0 ||
        ob < 0 || of < 0 || w->t.ndim != rank) {
        fail(c, s->start, NPU_ERR_INVALID, "convolution: missing or bad dimension numbers");
        return NULL;
    }
    int ns = n1;
    int64_t stride[NPU_MAX_DIMS], pad[2 * NPU_MAX_DIMS], ld[NPU_MAX_DIMS], rd[NPU_MAX_DIMS];
    for (int i = 0; i < ns; i++)
        stride[i] = ld[i] = rd[i] = 1, pad[2 * i] = pad[2 * i + 1] = 0;
    int n;
    if ((n = attr_ints(s, "stride", stride, ns)) >= 0 && n != ns)
        goto bad_window;
    if ((n = attr_ints(s, "window_strides", stride, ns)) >= 0 && n != ns)
        goto bad_window;
    if ((n = attr_ints(s, "lhs_dilate", ld, ns)) >= 0 && n != ns)
        goto bad_window;
    if ((n = attr_ints(s, "lhs_dilation", ld, ns)) >= 0 && n != ns)
        goto bad_window;
    if ((n = attr_ints(s, "rhs_dilate", rd, ns)) >= 0 && n != ns)
        goto bad_window;
    if ((n = attr_ints(s, "rhs_dilation", rd, ns)) >= 0 && n != ns)
        goto bad_window;
    const char *pp = shlo_find_attr(s->rest, s->pre_end, "pad");
    if (!pp)
        pp = shlo_find_attr(s->rest, s->pre_end, "padding");
    if (pp) {
        if (!strncmp(pp, "dense<", 6))
            pp += 5;
        n = flat_ints(pp, s->pre_end, pad, 2 * ns);
        if (n == 1)
            for (int i = 1; i < 2 * ns; i++)
                pad[i] = pad[0];
        else if (n != 2 * ns)
            goto bad_window;
    }
    bool transposed = false;
    for (int i = 0; i < ns; i++) {
        transposed |= ld[i] != 1;
        if (pad[2 * i] < 0 || pad[2 * i + 1] < 0 || stride[i] < 1 || rd[i] < 1 || ld[i] < 1)
            goto bad_window;
    }
    const char *rv = shlo_find_attr(s->rest, s->pre_end, "reverse");
    if (!rv) /* the generic form: array<i1: ..> or dense<...> (hex from bytecode) */
        rv = shlo_find_attr(s->rest, s->pre_end, "window_reversal");
    if (rv) {
        if (!strncmp(rv, "array<", 6))
            while (rv < s->pre_end && *rv != ':' && *rv != '>')
                rv++;
        else if (!strncmp(rv, "dense<", 6))
            rv += 6;
        for (const char *q = rv; q < s->pre_end && *q != ']' && *q != '>'; q++)
            if (!strncmp(q, "true", 4) || *q == '1') {
                fail(c, s->start, NPU_ERR_UNSUPPORTED, "convolution: window reversal");
                return NULL;
            }
    }
    int64_t groups = 1, bgroups = 1;
    attr_ints(s, "feature_group_count", &groups, 1);
    attr_ints(s, "batch_group_count", &bgroups, 1);
    if (bgroups != 1 || groups < 1) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED, "convolution: batch_group_count %lld",
             (long long)bgroups);
        return NULL;
    }
    int64_t px[NPU_MAX_DIMS], pw[NPU_MAX_DIMS], po[NPU_MAX_DIMS];
    px[0] = ib, px[1] = ifeat, pw[0] = ko, pw[1] = ki;
    po[ob] = 0, po[of] = 1;
    for (int i = 0; i < ns; i++)
        px[2 + i] = isp[i], pw[2 + i] = ksp[i], po[osp[i]] = 2 + i;
    struct npu_value *xt = transpose(c, x, px, rank), *wt = transpose(c, w, pw, rank);
    if (!xt || !wt)
        return NULL;
    struct npu_value *in[2] = {xt, wt};
    struct npu_node *node;
    if (transposed)
        return transpose(c, conv_transpose(c, s, xt, wt, ns, stride, pad, ld, rd, groups), po,
                         rank);
    struct npu_value *y = mk(c, NPU_OP_CONV, in, 2, &node);
    int64_t pads[2 * NPU_MAX_DIMS];
    for (int i = 0; i < ns; i++)
        pads[i] = pad[2 * i], pads[ns + i] = pad[2 * i + 1];
    if (!y || npu_node_set_ints(c->g, node, "strides", stride, (size_t)ns) ||
        npu_node_set_ints(c->g, node, "pads", pads, (size_t)(2 * ns)) ||
        npu_node_set_ints(c->g, node, "dilations", rd, (size_t)ns) ||
        npu_node_set_int(c->g, node, "group", groups) || !infer(c, y))
        return NULL;
    return transpose(c, y, po, rank);
bad_window:
    fail(c, s->start, NPU_ERR_INVALID, "convolution: bad window attributes");
    return NULL;
}

static struct npu_value *
do_broadcast(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0];
    int64_t d[NPU_MAX_DIMS];
    int n = attr_ints(s, "dims", d, NPU_MAX_DIMS);
    if (n < 0)
        n = attr_ints(s, "broadcast_dimensions", d, NPU_MAX_DIMS);
    if (n != x->t.ndim || has_dup_or_range(d, n, s->out.ndim)) {
        fail(c, s->start, NPU_ERR_INVALID, "broadcast_in_dim: bad or missing dims");
        return NULL;
    }
    /* operand dims in increasing target order first */
    int64_t perm[NPU_MAX_DIMS], sd[NPU_MAX_DIMS];
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && d[perm[j - 1]] > d[perm[j]]; j--) {
            int64_t t = perm[j];
            perm[j] = perm[j - 1];
            perm[j - 1] = t;
        }
    for (int i = 0; i < n; i++)
        sd[i] = d[perm[i]];
    x = transpose(c, x, perm, n);
    if (!x)
        return NULL;
    int64_t shape[NPU_MAX_DIMS];
    for (int i = 0; i < s->out.ndim; i++)
        shape[i] = 1;
    for (int i = 0; i < n; i++) {
        if (x->t.dims[i] != 1 && x->t.dims[i] != s->out.dims[sd[i]]) {
            fail(c, s->start, NPU_ERR_INVALID,
                 "broadcast_in_dim: operand dim %d (%lld) does not "
                 "fit the result's %lld",
                 i, (long long)x->t.dims[i], (long long)s->out.dims[sd[i]]);
            return NULL;
        }
        shape[sd[i]] = x->t.dims[i];
    }
    x = reshape(c, x, shape, s->out.ndim);
    if (!x || same_type(x, &s->out))
        return x;
    struct npu_value *in[2] = {x, const_i64(c, s->out.dims, s->out.ndim)};
    return in[1] ? mk1(c, NPU_OP_EXPAND, in, 2) : NULL;
}

static const struct {
    const char *name;
    enum npu_op red, elt;
} reduce_bodies[] = {
    {"stablehlo.add", NPU_OP_REDUCE_SUM, NPU_OP_ADD},
    {"stablehlo.maximum", NPU_OP_REDUCE_MAX, NPU_OP_MAX},
    {"stablehlo.minimum", NPU_OP_REDUCE_MIN, NPU_OP_MIN},
    /* on i1 (jnp.all, the in-bounds mask of jnp.take's fill mode): min / max of 0 and 1 */
    {"stablehlo.and", NPU_OP_REDUCE_MIN, NPU_OP_AND},
    {"stablehlo.or", NPU_OP_REDUCE_MAX, NPU_OP_OR},
    {"stablehlo.multiply", NPU_OP_REDUCE_PROD, NPU_OP_MUL}, /* jnp.prod */
};
enum { BODY_ADD, BODY_MAX, BODY_MIN, BODY_AND, BODY_OR, BODY_MUL, NBODIES };

static bool
is_identity_init(const struct npu_value *init, int body)
{
    if (!npu_value_data(init) || npu_value_numel(init) != 1)
        return false;
    double v = npu_value_get_f64(init, 0);
    switch (body) {
    case BODY_ADD: return v == 0;
    case BODY_AND: return v != 0;
    case BODY_OR: return v == 0;
    case BODY_MUL: return v == 1;
    case BODY_MIN:
        return v == INFINITY || v >= 3.4e38 ||
               (npu_dtype_is_int(init->t.dtype) && v >= 2147483647.0);
    default: /* max: -inf or the lowest finite value of the type */
        return v == -INFINITY || v <= -3.4e38 ||
               (npu_dtype_is_int(init->t.dtype) && v <= -2147483648.0);
    }
}

/* The body of a reduce or reduce_window: one of reduce_bodies (and the
 * return), else -1 with the error naming what was found. */
static int
reduce_body(struct cx *c, const struct stmt *s, const char *what)
{
    int found = -1, kinds = 0;
    for (int i = 0; i < NBODIES; i++) {
        size_t l = strlen(reduce_bodies[i].name);
        for (const char *q = s->rest; q + l <= s->end; q++)
            if (!memcmp(q, reduce_bodies[i].name, l) && (q + l == s->end || !shlo_is_ident(q[l]))) {
                found = i, kinds++;
                break;
            }
    }
    const char *other = NULL;
    for (const char *q = s->rest; q + 10 <= s->end && !other; q++)
        if (!memcmp(q, "stablehlo.", 10) && (q + 16 > s->end || memcmp(q, "stablehlo.return", 16)))
            if (found < 0 ||
                memcmp(q, reduce_bodies[found].name, strlen(reduce_bodies[found].name)))
                other = q;
    if (kinds != 1 || other) {
        const char *q = other ? other : s->rest;
        int l = 0;
        while (q + l < s->end && shlo_is_ident(q[l]) && l < 40)
            l++;
        fail(c, s->start, NPU_ERR_UNSUPPORTED,
             "%s: only a body of one stablehlo.add, maximum, minimum, multiply, and or or is "
             "supported%s%.*s",
             what, other ? ", found " : "", other ? l : 0, q);
        return -1;
    }
    return found;
}

static struct npu_value *
cast_to(struct cx *c, struct npu_value *x, enum npu_dtype dt)
{
    if (!x || x->t.dtype == dt)
        return x;
    struct npu_node *n;
    struct npu_value *v = mk(c, NPU_OP_CAST, &x, 1, &n);
    if (!v || npu_node_set_int(c->g, n, "to", npu_dtype_to_onnx(dt)) || !infer(c, v))
        return NULL;
    return v;
}

/* Reduce* over dims (keepdims 0) of the body's kind; i1 and/or through i32. */
static struct npu_value *
reduce_dims(struct cx *c, struct npu_value *x, const int64_t *dims, int nd, int body)
{
    enum npu_dtype dt = x->t.dtype;
    if (body == BODY_AND || body == BODY_OR) {
        if (dt != NPU_DTYPE_BOOL)
            return NULL;
        x = cast_to(c, x, NPU_DTYPE_INT32);
    }
    struct npu_value *in[2] = {x, const_i64(c, dims, nd)};
    struct npu_node *node;
    struct npu_value *y = in[0] && in[1] ? mk(c, reduce_bodies[body].red, in, 2, &node) : NULL;
    if (!y || npu_node_set_int(c->g, node, "keepdims", 0) || !infer(c, y))
        return NULL;
    return cast_to(c, y, dt);
}

static struct npu_value *
do_reduce(struct cx *c, const struct stmt *s)
{
    if (s->nin != 2) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED,
             "reduce: only one operand and one init value are supported (found %d operands)",
             s->nin);
        return NULL;
    }
    int found = reduce_body(c, s, "reduce");
    if (found < 0)
        return NULL;
    if ((found == BODY_AND || found == BODY_OR) && s->in[0]->t.dtype != NPU_DTYPE_BOOL) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED, "reduce: %s is supported on i1 only",
             reduce_bodies[found].name);
        return NULL;
    }
    int64_t dims[NPU_MAX_DIMS];
    int nd = attr_ints(s, "dimensions", dims, NPU_MAX_DIMS);
    if (nd < 0 || has_dup_or_range(dims, nd, s->in[0]->t.ndim)) {
        fail(c, s->start, NPU_ERR_INVALID, "reduce: bad or missing dimensions");
        return NULL;
    }
    struct npu_value *y = s->in[0];
    if (nd > 0 && !(y = reduce_dims(c, y, dims, nd, found)))
        return NULL;
    if (!is_identity_init(s->in[1], found)) {
        struct npu_value *in[2] = {y, s->in[1]};
        y = mk1(c, reduce_bodies[found].elt, in, 2);
    }
    return y;
}

static struct npu_value *
do_slice(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0];
    int r = x->t.ndim;
    int64_t st[NPU_MAX_DIMS], en[NPU_MAX_DIMS], sp[NPU_MAX_DIMS], ax[NPU_MAX_DIMS];
    int n1 = attr_ints(s, "start_indices", st, NPU_MAX_DIMS);
    if (n1 >= 0) {
        int n2 = attr_ints(s, "limit_indices", en, NPU_MAX_DIMS);
        int n3 = attr_ints(s, "strides", sp, NPU_MAX_DIMS);
        if (n3 < 0)
            for (n3 = 0; n3 < r; n3++)
                sp[n3] = 1;
        if (n1 != r || n2 != r || n3 != r)
            goto bad;
    } else { /* pretty: %x [a:b(:s), ...] */
        const char *p = s->rest;
        while (p < s->pre_end && *p != '[')
            p++;
        if (p >= s->pre_end)
            goto bad;
        p++;
        for (int i = 0; i < r; i++) {
            char *q;
            st[i] = strtoll(p, &q, 10);
            if (*q != ':')
                goto bad;
            en[i] = strtoll(q + 1, &q, 10);
            sp[i] = 1;
            if (*q == ':')
                sp[i] = strtoll(q + 1, &q, 10);
            p = shlo_ws(q, s->pre_end);
            if (p < s->pre_end && *p == ',')
                p++;
            p = shlo_ws(p, s->pre_end);
        }
        if (p >= s->pre_end || *p != ']')
            goto bad;
    }
    for (int i = 0; i < r; i++) {
        if (st[i] < 0 || en[i] < st[i] || en[i] > x->t.dims[i] || sp[i] < 1)
            goto bad;
        ax[i] = i;
    }
    struct npu_value *in[5] = {x, const_i64(c, st, r), const_i64(c, en, r), const_i64(c, ax, r),
                               const_i64(c, sp, r)};
    if (!in[1] || !in[2] || !in[3] || !in[4])
        return NULL;
    return mk1(c, NPU_OP_SLICE, in, 5);
bad:
    fail(c, s->start, NPU_ERR_INVALID, "slice: bad or missing start/limit/stride indices");
    return NULL;
}

static struct npu_value *
do_constant(struct cx *c, const struct stmt *s)
{
    const char *p = s->rest;
    const char *v = shlo_find_attr(s->rest, s->pre_end, "value");
    if (v)
        p = v;
    p = shlo_ws(p, s->pre_end);
    char why[160];
    if (s->pre_end - p < 6 || strncmp(p, "dense<", 6)) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED, "constant: only dense<...> literals are supported");
        return NULL;
    }
    struct npu_tensor t = {.dtype = s->out.dt, .ndim = s->out.ndim};
    memcpy(t.dims, s->out.dims, sizeof t.dims);
    int64_t nb = npu_tensor_nbytes(&t);
    if (nb < 0 || nb > ((int64_t)1 << 31)) {
        fail(c, s->start, NPU_ERR_INVALID, "constant: too large");
        return NULL;
    }
    t.data = npu_graph_alloc(c->g, (size_t)(nb ? nb : 1));
    if (!t.data)
        return NULL;
    if (!shlo_parse_dense(p + 6, s->pre_end, t.dtype, npu_tensor_numel(&t), t.data, why,
                          sizeof why)) {
        fail(c, s->start, NPU_ERR_INVALID, "constant: %s", why);
        return NULL;
    }
    char nm[192];
    snprintf(nm, sizeof nm, "%s%s", c->prefix, s->res);
    return npu_graph_add_const_owned(c->g, nm, &t);
}

static struct npu_value *
do_iota(struct cx *c, const struct stmt *s)
{
    int64_t d = -1;
    if (attr_ints(s, "dim", &d, 1) < 0)
        attr_ints(s, "iota_dimension", &d, 1);
    if (d < 0 || d >= s->out.ndim) {
        fail(c, s->start, NPU_ERR_INVALID, "iota: bad or missing dimension");
        return NULL;
    }
    struct npu_tensor t = {.dtype = s->out.dt, .ndim = s->out.ndim};
    memcpy(t.dims, s->out.dims, sizeof t.dims);
    int64_t numel = npu_tensor_numel(&t), nb = npu_tensor_nbytes(&t);
    if (nb < 0 || nb > ((int64_t)1 << 28)) {
        fail(c, s->start, NPU_ERR_INVALID, "iota: too large");
        return NULL;
    }
    t.data = npu_graph_alloc(c->g, (size_t)(nb ? nb : 1));
    if (!t.data)
        return NULL;
    int64_t inner = 1;
    for (int i = (int)d + 1; i < t.ndim; i++)
        inner *= t.dims[i];
    for (int64_t i = 0; i < numel; i++) {
        double v = (double)((i / inner) % t.dims[d]);
        switch (t.dtype) {
        case NPU_DTYPE_FP32: ((float *)t.data)[i] = (float)v; break;
        case NPU_DTYPE_FP16: ((uint16_t *)t.data)[i] = npu_fp32_to_fp16((float)v); break;
        case NPU_DTYPE_INT32: ((int32_t *)t.data)[i] = (int32_t)v; break;
        case NPU_DTYPE_INT64: ((int64_t *)t.data)[i] = (int64_t)v; break;
        default:
            fail(c, s->start, NPU_ERR_UNSUPPORTED, "iota of %s", npu_dtype_name(t.dtype));
            return NULL;
        }
    }
    char nm[192];
    snprintf(nm, sizeof nm, "%s%s", c->prefix, s->res);
    return npu_graph_add_const_owned(c->g, nm, &t);
}

static struct npu_value *
do_compare(struct cx *c, const struct stmt *s)
{
    static const char *dirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
    int dir = -1;
    for (const char *q = s->rest; q + 2 <= s->pre_end && dir < 0; q++) {
        if (q > s->rest && (shlo_is_ident(q[-1]) || q[-1] == '%'))
            continue;
        for (int i = 0; i < 6; i++)
            if (!memcmp(q, dirs[i], 2) && (q + 2 == s->pre_end || !shlo_is_ident(q[2])))
                dir = i;
    }
    if (dir < 0) {
        fail(c, s->start, NPU_ERR_INVALID, "compare: missing comparison direction");
        return NULL;
    }
    static const enum npu_op ops[] = {NPU_OP_EQUAL,   NPU_OP_EQUAL,         NPU_OP_GREATER_OR_EQUAL,
                                      NPU_OP_GREATER, NPU_OP_LESS_OR_EQUAL, NPU_OP_LESS};
    struct npu_value *y = mk1(c, ops[dir], s->in, 2);
    if (y && dir == 1)
        y = mk1(c, NPU_OP_NOT, &y, 1);
    return y;
}

/* ---- ops beyond the first list (the shloprobe programs, docs/jax.md) ------ */

/* A constant of dtype dt and shape dims filled with v. */
static struct npu_value *
const_num(struct cx *c, enum npu_dtype dt, double v, int ndim, const int64_t *dims)
{
    struct npu_tensor t = {.dtype = dt, .ndim = ndim};
    if (ndim)
        memcpy(t.dims, dims, (size_t)ndim * sizeof *dims);
    int64_t numel = npu_tensor_numel(&t), nb = npu_tensor_nbytes(&t);
    if (numel < 0 || nb < 0 || nb > ((int64_t)1 << 28))
        return NULL;
    t.data = npu_graph_alloc(c->g, (size_t)(nb ? nb : 1));
    char lit[48], why[96], nm[128];
    snprintf(lit, sizeof lit, "%.17g>", v);
    if (!t.data || !shlo_parse_dense(lit, lit + strlen(lit), dt, numel, t.data, why, sizeof why))
        return NULL;
    snprintf(nm, sizeof nm, "%sconst_%u", c->prefix, c->uniq++);
    return npu_graph_add_const_owned(c->g, nm, &t);
}

static struct npu_value *
binop(struct cx *c, enum npu_op op, struct npu_value *a, struct npu_value *b)
{
    struct npu_value *in[2] = {a, b};
    return a && b ? mk1(c, op, in, 2) : NULL;
}

/* The result types after the signature's top-level "->": one, or a
 * parenthesised list. Returns the count, -1 with the error given. */
static int
result_types(struct cx *c, const struct stmt *s, struct shlo_type *t, int max)
{
    char why[160];
    const char *end = s->end, *arrow = sig_arrow(s->sig, end);
    if (!arrow) {
        fail(c, s->start, NPU_ERR_INVALID, "%s: no result types", s->op);
        return -1;
    }
    const char *p = shlo_ws(arrow, end);
    bool paren = p < end && *p == '(';
    p += paren;
    int n = 0;
    for (;;) {
        if (n == max) {
            fail(c, s->start, NPU_ERR_UNSUPPORTED, "%s: more than %d results", s->op, max);
            return -1;
        }
        if (!shlo_parse_type(&p, end, &t[n++], why, sizeof why)) {
            fail(c, s->start, NPU_ERR_UNSUPPORTED, "%s: %s", s->op, why);
            return -1;
        }
        p = shlo_ws(p, end);
        if (p < end && *p == '{') /* result attributes */
            p = shlo_ws(shlo_skip_group(p, end), end);
        if (!paren || p >= end || *p != ',')
            break;
        p++;
    }
    return n;
}

/* jnp.argmax / argmin: `%r:2 = reduce(%x init: %v0), (%iota init: %i0)` with
 * JAX's reducer (the first compare is the value's: GT for argmax, LT for
 * argmin; ties keep the lower index). Recognised by that shape, %iota a
 * constant iota along the one reduced dimension; mapped to ReduceMax/Min and
 * ArgMax/Min (first index). JAX's reducer also picks NaN; ArgMax does not
 * promise that. */
static enum npu_status
do_reduce_arg(struct cx *c, struct scope *sc, const struct stmt *s)
{
    const char *ini = NULL;
    for (const char *q = s->rest; q + 5 <= s->pre_end && !ini; q++)
        if (!memcmp(q, "init:", 5))
            ini = q;
    struct npu_value *x = s->in[0], *idx = ini ? s->in[2] : s->in[1];
    struct npu_value *x0 = ini ? s->in[1] : s->in[2];
    int64_t d = -1;
    int nd = attr_ints(s, "dimensions", &d, 1);
    const char *cmp = NULL;
    for (const char *q = s->rest; q + 17 <= s->end && !cmp; q++)
        if (!memcmp(q, "stablehlo.compare", 17))
            cmp = q + 17;
    bool is_max = false, ok = nd == 1 && d >= 0 && d < x->t.ndim && cmp && s->nres == 2 &&
                              idx->t.ndim == x->t.ndim && npu_value_data(idx) &&
                              npu_dtype_is_int(idx->t.dtype) &&
                              !memcmp(idx->t.dims, x->t.dims, (size_t)x->t.ndim * sizeof d);
    if (ok) { /* the compare's direction: the first two-letter word on its line (pretty
               * `compare  GT, ..`, generic `comparison_direction GT>`) */
        ok = false;
        for (const char *q = cmp; q + 2 <= s->end && *q != '\n' && !ok; q++) {
            if (shlo_is_ident(q[-1]) || (q + 2 < s->end && shlo_is_ident(q[2])))
                continue;
            if (!memcmp(q, "GT", 2) || !memcmp(q, "GE", 2))
                ok = is_max = true;
            else if (!memcmp(q, "LT", 2) || !memcmp(q, "LE", 2))
                ok = true, is_max = false;
        }
    }
    if (ok) { /* the second operand must count along d */
        int64_t inner = 1, n = npu_value_numel(idx);
        for (int i = (int)d + 1; i < idx->t.ndim; i++)
            inner *= idx->t.dims[i];
        for (int64_t i = 0; i < n && ok; i++)
            ok = npu_value_get_f64(idx, i) == (double)((i / inner) % idx->t.dims[d]);
    }
    if (!ok)
        return fail(c, s->start, NPU_ERR_UNSUPPORTED,
                    "reduce: several operands are supported only in the argmax / argmin form "
                    "(a value and an iota along the one reduced dimension)");
    struct shlo_type rt[2];
    if (result_types(c, s, rt, 2) != 2)
        return fail(c, s->start, NPU_ERR_INVALID, "reduce: expected two result types");
    struct npu_value *v = reduce_dims(c, x, &d, 1, is_max ? BODY_MAX : BODY_MIN);
    if (v && !is_identity_init(x0, is_max ? BODY_MAX : BODY_MIN))
        v = binop(c, is_max ? NPU_OP_MAX : NPU_OP_MIN, v, x0);
    struct npu_node *n;
    struct npu_value *a = mk(c, is_max ? NPU_OP_ARGMAX : NPU_OP_ARGMIN, &x, 1, &n);
    if (!a || npu_node_set_int(c->g, n, "axis", d) || npu_node_set_int(c->g, n, "keepdims", 0) ||
        !infer(c, a))
        a = NULL;
    a = cast_to(c, a, rt[1].dt);
    if (!v || !a)
        return fail(c, s->start, NPU_ERR_INVALID, "reduce (argmax form) could not be mapped");
    struct npu_value *r[2] = {v, a};
    return bind_results(c, sc, s->start, s->res, r, rt, 2, "reduce");
}

/* reduce_window: a window sum spanning one axis with padding (n-1, 0) (or
 * (0, n-1)) is jnp.cumsum's lowering: CumSum (reverse). Otherwise the
 * windowed dims become the spatial dims of a pool over [1, rest, spatial..]:
 * max is MaxPool, min is -MaxPool(-x), add is AveragePool counting the
 * padding times the window size. The init must be the body's identity (it is
 * what padding pads with); base dilation and dilated sums are refused. */
static struct npu_value *
do_reduce_window(struct cx *c, const struct stmt *s)
{
    if (s->nin != 2) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED,
             "reduce_window: only one operand and one init value are supported (found %d "
             "operands)",
             s->nin);
        return NULL;
    }
    int body = reduce_body(c, s, "reduce_window");
    if (body < 0)
        return NULL;
    struct npu_value *x = s->in[0];
    int r = x->t.ndim;
    int64_t wd[NPU_MAX_DIMS], ws[NPU_MAX_DIMS], bd[NPU_MAX_DIMS], wdl[NPU_MAX_DIMS];
    int64_t pad[2 * NPU_MAX_DIMS];
    for (int i = 0; i < r; i++)
        ws[i] = bd[i] = wdl[i] = 1, pad[2 * i] = pad[2 * i + 1] = 0;
    int n;
    if (attr_ints(s, "window_dimensions", wd, NPU_MAX_DIMS) != r ||
        ((n = attr_ints(s, "window_strides", ws, NPU_MAX_DIMS)) >= 0 && n != r) ||
        ((n = attr_ints(s, "base_dilations", bd, NPU_MAX_DIMS)) >= 0 && n != r) ||
        ((n = attr_ints(s, "window_dilations", wdl, NPU_MAX_DIMS)) >= 0 && n != r))
        goto bad;
    const char *pp = shlo_find_attr(s->rest, s->pre_end, "padding");
    if (pp) {
        if (!strncmp(pp, "dense<", 6))
            pp += 5;
        n = flat_ints(pp, s->pre_end, pad, 2 * r);
        if (n == 1)
            for (int i = 1; i < 2 * r; i++)
                pad[i] = pad[0];
        else if (n != 2 * r)
            goto bad;
    }
    for (int i = 0; i < r; i++) {
        if (wd[i] < 1 || ws[i] < 1 || wdl[i] < 1 || pad[2 * i] < 0 || pad[2 * i + 1] < 0)
            goto bad;
        if (bd[i] != 1) {
            fail(c, s->start, NPU_ERR_UNSUPPORTED, "reduce_window: base dilation is not supported");
            return NULL;
        }
    }
    if (body == BODY_AND || body == BODY_OR || body == BODY_MUL) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED, "reduce_window: %s is not supported",
             reduce_bodies[body].name);
        return NULL;
    }
    if (!is_identity_init(s->in[1], body)) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED,
             "reduce_window: only the identity of its body as init is supported");
        return NULL;
    }
    int sp[NPU_MAX_DIMS], nsp = 0, rest[NPU_MAX_DIMS], nrest = 0;
    for (int i = 0; i < r; i++) {
        if (wd[i] > 1 || ws[i] > 1 || wdl[i] > 1 || pad[2 * i] || pad[2 * i + 1])
            sp[nsp++] = i;
        else
            rest[nrest++] = i;
    }
    if (nsp == 0)
        return x;
    if (body == BODY_ADD && nsp == 1) { /* cumsum? */
        int k = sp[0];
        int64_t len = x->t.dims[k];
        bool fwd = pad[2 * k] == len - 1 && pad[2 * k + 1] == 0;
        bool rev = pad[2 * k] == 0 && pad[2 * k + 1] == len - 1;
        if (wd[k] == len && ws[k] == 1 && wdl[k] == 1 && (fwd || rev) && len > 1) {
            int64_t ax = k;
            struct npu_value *in[2] = {x, const_i64(c, &ax, 1)};
            struct npu_node *node;
            struct npu_value *y = in[1] ? mk(c, NPU_OP_CUMSUM, in, 2, &node) : NULL;
            if (!y || npu_node_set_int(c->g, node, "reverse", rev) || !infer(c, y))
                return NULL;
            return y;
        }
    }
    if (nsp > 3) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED, "reduce_window: windows over %d dimensions", nsp);
        return NULL;
    }
    if (body == BODY_ADD) {
        for (int i = 0; i < nsp; i++)
            if (wdl[sp[i]] != 1) {
                fail(c, s->start, NPU_ERR_UNSUPPORTED,
                     "reduce_window: a dilated window sum is not supported");
                return NULL;
            }
    }
    int64_t perm[NPU_MAX_DIMS], inv[NPU_MAX_DIMS], shape[NPU_MAX_DIMS], P = 1;
    for (int i = 0; i < nrest; i++)
        perm[i] = rest[i], P *= x->t.dims[rest[i]];
    for (int i = 0; i < nsp; i++)
        perm[nrest + i] = sp[i];
    for (int i = 0; i < r; i++)
        inv[perm[i]] = i;
    shape[0] = 1, shape[1] = P;
    int64_t k[NPU_MAX_DIMS], st[NPU_MAX_DIMS], dl[NPU_MAX_DIMS], pads[2 * NPU_MAX_DIMS];
    for (int i = 0; i < nsp; i++) {
        shape[2 + i] = x->t.dims[sp[i]];
        k[i] = wd[sp[i]], st[i] = ws[sp[i]], dl[i] = wdl[sp[i]];
        pads[i] = pad[2 * sp[i]], pads[nsp + i] = pad[2 * sp[i] + 1];
    }
    struct npu_value *y = reshape(c, transpose(c, x, perm, r), shape, 2 + nsp);
    if (y && body == BODY_MIN)
        y = mk1(c, NPU_OP_NEG, &y, 1);
    struct npu_node *node;
    y = y ? mk(c, body == BODY_ADD ? NPU_OP_AVERAGE_POOL : NPU_OP_MAX_POOL, &y, 1, &node) : NULL;
    if (!y || npu_node_set_ints(c->g, node, "kernel_shape", k, (size_t)nsp) ||
        npu_node_set_ints(c->g, node, "strides", st, (size_t)nsp) ||
        npu_node_set_ints(c->g, node, "pads", pads, (size_t)(2 * nsp)) ||
        (body == BODY_ADD ? npu_node_set_int(c->g, node, "count_include_pad", 1)
                          : npu_node_set_ints(c->g, node, "dilations", dl, (size_t)nsp)) ||
        !infer(c, y))
        return NULL;
    if (body == BODY_MIN)
        y = mk1(c, NPU_OP_NEG, &y, 1);
    if (y && body == BODY_ADD) {
        double cnt = 1;
        for (int i = 0; i < nsp; i++)
            cnt *= (double)k[i];
        y = binop(c, NPU_OP_MUL, y, const_num(c, y->t.dtype, cnt, 0, NULL));
    }
    if (!y)
        return NULL;
    int64_t os[NPU_MAX_DIMS];
    for (int i = 0; i < nrest; i++)
        os[i] = x->t.dims[rest[i]];
    for (int i = 0; i < nsp; i++)
        os[nrest + i] = y->t.dims[2 + i];
    return transpose(c, reshape(c, y, os, r), inv, r);
bad:
    fail(c, s->start, NPU_ERR_INVALID, "reduce_window: bad or missing window attributes");
    return NULL;
}

/* Indices (any integer type) as i64 clamped into [0, hi]: StableHLO clamps
 * gather and dynamic_slice starts, ONNX Gather does not. */
static struct npu_value *
clamp_index(struct cx *c, struct npu_value *i, int64_t hi)
{
    i = cast_to(c, i, NPU_DTYPE_INT64);
    i = binop(c, NPU_OP_MAX, i, const_num(c, NPU_DTYPE_INT64, 0, 0, NULL));
    return binop(c, NPU_OP_MIN, i, const_num(c, NPU_DTYPE_INT64, (double)hi, 0, NULL));
}

/* gather in the take form JAX emits for jnp.take / x[idx] / nn.Embed: one
 * collapsed dimension a (= start_index_map), whole slices elsewhere, the
 * index vector of size 1 (or implicit). Gather(axis a) on the clamped
 * indices, then the transpose putting the offset dims where offset_dims
 * says. */
static struct npu_value *
do_gather(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0], *idx = s->in[1];
    int r = x->t.ndim, ri = idx->t.ndim;
    int64_t off[NPU_MAX_DIMS], col[NPU_MAX_DIMS], sim[NPU_MAX_DIMS], ss[NPU_MAX_DIMS];
    int64_t obd[NPU_MAX_DIMS], ivd = 0; /* printed only when not 0 */
    int noff = attr_ints(s, "offset_dims", off, NPU_MAX_DIMS);
    int ncol = attr_ints(s, "collapsed_slice_dims", col, NPU_MAX_DIMS);
    int nsim = attr_ints(s, "start_index_map", sim, NPU_MAX_DIMS);
    int nss = attr_ints(s, "slice_sizes", ss, NPU_MAX_DIMS);
    int nob = attr_ints(s, "operand_batching_dims", obd, NPU_MAX_DIMS);
    attr_ints(s, "index_vector_dim", &ivd, 1);
    if (noff < 0)
        noff = 0; /* printed only when not empty */
    if (ncol < 0)
        ncol = 0;
    bool ok = nsim == 1 && ncol == 1 && col[0] == sim[0] && sim[0] >= 0 && sim[0] < r && nss == r &&
              nob <= 0 && noff == r - 1 &&
              (ivd == ri || (ivd == ri - 1 && ri > 0 && idx->t.dims[ivd] == 1));
    int a = ok ? (int)sim[0] : 0;
    for (int i = 0; ok && i < r; i++)
        ok = ss[i] == (i == a ? 1 : x->t.dims[i]);
    int nb = ok ? (ivd == ri ? ri : ri - 1) : 0;
    if (ok && (nb + r - 1 != s->out.ndim || has_dup_or_range(off, noff, s->out.ndim)))
        ok = false;
    if (!ok) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED,
             "gather: only the take form is supported (one collapsed dimension that is the "
             "start_index_map, whole slices elsewhere, one index per position)");
        return NULL;
    }
    for (int i = 1; i < noff; i++)
        if (off[i] <= off[i - 1]) {
            fail(c, s->start, NPU_ERR_INVALID, "gather: offset_dims must be increasing");
            return NULL;
        }
    int64_t bs[NPU_MAX_DIMS];
    for (int i = 0; i < nb; i++)
        bs[i] = idx->t.dims[i];
    struct npu_value *ix = reshape(c, idx, bs, nb);
    ix = ix ? clamp_index(c, ix, x->t.dims[a] - 1) : NULL;
    struct npu_value *in[2] = {x, ix};
    struct npu_node *node;
    struct npu_value *y = ix ? mk(c, NPU_OP_GATHER, in, 2, &node) : NULL;
    if (!y || npu_node_set_int(c->g, node, "axis", a) || !infer(c, y))
        return NULL;
    /* Gather gives x[:a] + batch + x[a+1:] */
    int64_t perm[NPU_MAX_DIMS];
    bool is_off[NPU_MAX_DIMS] = {false};
    for (int k = 0; k < noff; k++) {
        perm[off[k]] = k < a ? k : k + nb;
        is_off[off[k]] = true;
    }
    for (int p = 0, j = 0; p < s->out.ndim; p++)
        if (!is_off[p])
            perm[p] = a + j++;
    return transpose(c, y, perm, s->out.ndim);
}

/* dynamic_slice: constant starts become a Slice (clamped here); a start
 * known only at run time becomes a Gather of clamp(start) + iota(size) on
 * its axis. */
static struct npu_value *
do_dynamic_slice(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0];
    int r = x->t.ndim;
    int64_t sz[NPU_MAX_DIMS];
    int n = attr_ints(s, "sizes", sz, NPU_MAX_DIMS);
    if (n < 0)
        n = attr_ints(s, "slice_sizes", sz, NPU_MAX_DIMS);
    if (n != r || s->nin != r + 1) {
        fail(c, s->start, NPU_ERR_INVALID,
             "dynamic_slice: expected the operand, %d scalar starts and %d sizes", r, r);
        return NULL;
    }
    int64_t st[NPU_MAX_DIMS], en[NPU_MAX_DIMS], ax[NPU_MAX_DIMS], sp[NPU_MAX_DIMS];
    int ns = 0;
    for (int i = 0; i < r; i++) {
        struct npu_value *v = s->in[1 + i];
        if (sz[i] < 0 || sz[i] > x->t.dims[i] || v->t.ndim != 0 || !npu_dtype_is_int(v->t.dtype)) {
            fail(c, s->start, NPU_ERR_INVALID, "dynamic_slice: bad size or start %d", i);
            return NULL;
        }
        if (!npu_value_data(v))
            continue;
        int64_t b = (int64_t)npu_value_get_f64(v, 0), hi = x->t.dims[i] - sz[i];
        b = b < 0 ? 0 : b > hi ? hi : b;
        st[ns] = b, en[ns] = b + sz[i], ax[ns] = i, sp[ns++] = 1;
    }
    struct npu_value *y = x;
    if (ns) {
        struct npu_value *in[5] = {x, const_i64(c, st, ns), const_i64(c, en, ns),
                                   const_i64(c, ax, ns), const_i64(c, sp, ns)};
        if (!in[1] || !in[2] || !in[3] || !in[4] || !(y = mk1(c, NPU_OP_SLICE, in, 5)))
            return NULL;
    }
    for (int i = 0; i < r && y; i++) {
        struct npu_value *v = s->in[1 + i];
        if (npu_value_data(v))
            continue;
        int64_t one = 1, iota[4096];
        if (sz[i] > 4096) {
            fail(c, s->start, NPU_ERR_UNSUPPORTED,
                 "dynamic_slice: run-time start with size > 4096");
            return NULL;
        }
        for (int64_t k = 0; k < sz[i]; k++)
            iota[k] = k;
        struct npu_value *b = reshape(c, clamp_index(c, v, x->t.dims[i] - sz[i]), &one, 1);
        b = binop(c, NPU_OP_ADD, b, const_i64(c, iota, (int)sz[i]));
        struct npu_value *in[2] = {y, b};
        struct npu_node *node;
        y = b ? mk(c, NPU_OP_GATHER, in, 2, &node) : NULL;
        if (!y || npu_node_set_int(c->g, node, "axis", i) || !infer(c, y))
            return NULL;
    }
    return y;
}

/* dynamic_update_slice (a KV cache's write, lax.dynamic_update_slice): the
 * update spans the operand on every axis but one, a; its rows go to
 * clamp(start) + iota on a by ScatterND, with a moved to the front. */
static struct npu_value *
do_dynamic_update_slice(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0], *u = s->in[1];
    int r = x->t.ndim, a = -1;
    if (s->nin != r + 2 || u->t.ndim != r || u->t.dtype != x->t.dtype) {
        fail(c, s->start, NPU_ERR_INVALID,
             "dynamic_update_slice: expected the operand, an update of its rank and %d scalar "
             "starts",
             r);
        return NULL;
    }
    for (int i = 0; i < r; i++) {
        struct npu_value *v = s->in[2 + i];
        if (v->t.ndim != 0 || !npu_dtype_is_int(v->t.dtype) || u->t.dims[i] > x->t.dims[i]) {
            fail(c, s->start, NPU_ERR_INVALID, "dynamic_update_slice: bad start or size %d", i);
            return NULL;
        }
        if (u->t.dims[i] == x->t.dims[i])
            continue; /* the start clamps to 0 */
        if (a >= 0) {
            fail(c, s->start, NPU_ERR_UNSUPPORTED,
                 "dynamic_update_slice: an update smaller than the operand on more than one "
                 "axis is not supported");
            return NULL;
        }
        a = i;
    }
    if (a < 0) /* the update replaces everything */
        return u;
    int64_t perm[NPU_MAX_DIMS], inv[NPU_MAX_DIMS], iota[4096], shp[2] = {u->t.dims[a], 1};
    if (u->t.dims[a] > 4096) {
        fail(c, s->start, NPU_ERR_UNSUPPORTED, "dynamic_update_slice: more than 4096 rows");
        return NULL;
    }
    for (int64_t k = 0; k < u->t.dims[a]; k++)
        iota[k] = k;
    perm[0] = a;
    for (int i = 0, k = 1; i < r; i++)
        if (i != a)
            perm[k++] = i;
    for (int i = 0; i < r; i++)
        inv[perm[i]] = i;
    int64_t one = 1;
    struct npu_value *b =
        reshape(c, clamp_index(c, s->in[2 + a], x->t.dims[a] - u->t.dims[a]), &one, 1);
    b = reshape(c, binop(c, NPU_OP_ADD, b, const_i64(c, iota, (int)u->t.dims[a])), shp, 2);
    struct npu_value *in[3] = {transpose(c, x, perm, r), b, transpose(c, u, perm, r)};
    if (!in[0] || !in[1] || !in[2])
        return NULL;
    return transpose(c, mk1(c, NPU_OP_SCATTER_ND, in, 3), inv, r);
}

/* chlo.top_k (jax.lax.top_k): the k largest along the last axis, in order,
 * and their indices (ties keep the lower index first, as XLA's): TopK, the
 * int64 indices cast to the declared type. Binds %r#0 and %r#1. */
static enum npu_status
do_top_k(struct cx *c, struct scope *sc, const struct stmt *s)
{
    int64_t k = -1;
    struct shlo_type rt[2];
    if (s->nin != 1 || s->nres != 2 || attr_ints(s, "k", &k, 1) != 1 || k < 0 ||
        s->in[0]->t.ndim < 1 || k > s->in[0]->t.dims[s->in[0]->t.ndim - 1] ||
        result_types(c, s, rt, 2) != 2)
        return fail(c, s->start, NPU_ERR_INVALID,
                    "chlo.top_k: expected one operand, `k = N` within its last axis and two "
                    "results");
    char nm[192];
    snprintf(nm, sizeof nm, "%sTopK_%u", c->prefix, c->uniq++);
    struct npu_value *in[2] = {s->in[0], const_i64(c, &k, 1)};
    struct npu_node *n = in[1] ? npu_node_new(c->g, NPU_OP_TOP_K, nm, in, 2, 2, NULL) : NULL;
    if (!n)
        return fail(c, s->start, NPU_ERR_INVALID, "chlo.top_k could not be mapped");
    npu_graph_append(c->g, n);
    struct npu_value *r[2] = {NULL, NULL};
    if (!npu_node_set_int(c->g, n, "axis", -1) && !npu_node_set_int(c->g, n, "largest", 1) &&
        !npu_node_set_int(c->g, n, "sorted", 1) && npu_infer_node(c->g, n) == NPU_OK)
        r[0] = n->out[0], r[1] = cast_to(c, n->out[1], rt[1].dt);
    return bind_results(c, sc, s->start, s->res, r, rt, 2, "chlo.top_k");
}

/* pad: edge padding (not negative) with the scalar padding value; interior
 * padding is refused. */
static struct npu_value *
do_pad(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0];
    int r = x->t.ndim;
    int64_t lo[NPU_MAX_DIMS], hi[NPU_MAX_DIMS], in_[NPU_MAX_DIMS], pads[2 * NPU_MAX_DIMS];
    int nl = attr_ints(s, "low", lo, NPU_MAX_DIMS), nh = attr_ints(s, "high", hi, NPU_MAX_DIMS);
    int ni = attr_ints(s, "interior", in_, NPU_MAX_DIMS);
    if (nl < 0)
        nl = attr_ints(s, "edge_padding_low", lo, NPU_MAX_DIMS);
    if (nh < 0)
        nh = attr_ints(s, "edge_padding_high", hi, NPU_MAX_DIMS);
    if (ni < 0)
        ni = attr_ints(s, "interior_padding", in_, NPU_MAX_DIMS);
    if (nl != r || nh != r || (ni >= 0 && ni != r) || s->in[1]->t.ndim != 0) {
        fail(c, s->start, NPU_ERR_INVALID, "pad: bad or missing low / high / interior");
        return NULL;
    }
    for (int i = 0; i < r; i++) {
        if ((ni > 0 && in_[i] != 0) || lo[i] < 0 || hi[i] < 0) {
            fail(c, s->start, NPU_ERR_UNSUPPORTED,
                 "pad: interior or negative padding is not supported");
            return NULL;
        }
        pads[i] = lo[i], pads[r + i] = hi[i];
    }
    struct npu_value *in[3] = {x, const_i64(c, pads, 2 * r), s->in[1]};
    return in[1] ? mk1(c, NPU_OP_PAD, in, 3) : NULL;
}

/* reverse: a Slice with step -1 on each reversed axis. */
static struct npu_value *
do_reverse(struct cx *c, const struct stmt *s)
{
    struct npu_value *x = s->in[0];
    int64_t d[NPU_MAX_DIMS], st[NPU_MAX_DIMS], en[NPU_MAX_DIMS], sp[NPU_MAX_DIMS];
    int n = attr_ints(s, "dims", d, NPU_MAX_DIMS);
    if (n < 0)
        n = attr_ints(s, "dimensions", d, NPU_MAX_DIMS);
    if (n < 0 || has_dup_or_range(d, n, x->t.ndim)) {
        fail(c, s->start, NPU_ERR_INVALID, "reverse: bad or missing dims");
        return NULL;
    }
    if (n == 0)
        return x;
    for (int i = 0; i < n; i++)
        st[i] = -1, en[i] = -x->t.dims[d[i]] - 1, sp[i] = -1;
    struct npu_value *in[5] = {x, const_i64(c, st, n), const_i64(c, en, n), const_i64(c, d, n),
                               const_i64(c, sp, n)};
    if (!in[1] || !in[2] || !in[3] || !in[4])
        return NULL;
    return mk1(c, NPU_OP_SLICE, in, 5);
}

static enum npu_status emit_func(struct cx *c, const struct func *f, struct npu_value *const *args,
                                 int nargs, struct npu_value **outs, int *nouts, int max_outs);

static const struct func *
find_func(const struct cx *c, const char *name)
{
    for (int i = 0; i < c->nfuncs; i++)
        if (!strcmp(c->funcs[i].name, name))
            return &c->funcs[i];
    return NULL;
}

/* `@name` (or `@"name"`) at the first '@' from p into name. */
static void
func_ref(const char *p, const char *end, char *name, size_t len)
{
    while (p < end && *p != '@')
        p++;
    size_t n = 0;
    name[0] = 0;
    if (p >= end)
        return;
    p++;
    if (p < end && *p == '"') {
        const char *q = shlo_skip_string(p, end);
        snprintf(name, len, "%.*s", (int)(q - p - 2), p + 1);
    } else {
        while (p < end && shlo_is_ident(*p) && n + 1 < len)
            name[n++] = *p++;
        name[n] = 0;
    }
}

/* A call of @name with the statement's operands, its results bound to the
 * statement's names (%r, or %r#i for several): `call`, and `composite`
 * through its decomposition. */
static enum npu_status
do_call(struct cx *c, struct scope *sc, const struct stmt *s, const char *name)
{
    const struct func *f = find_func(c, name);
    if (!f)
        return fail(c, s->start, NPU_ERR_INVALID, "call of unknown function @%s", name);
    if (c->depth >= MAX_CALL_DEPTH)
        return fail(c, s->start, NPU_ERR_UNSUPPORTED, "calls nested deeper than %d (recursion?)",
                    MAX_CALL_DEPTH);
    struct npu_value *outs[MAX_IN];
    int nouts = 0;
    char saved[sizeof c->prefix];
    memcpy(saved, c->prefix, sizeof saved);
    snprintf(c->prefix, sizeof c->prefix, "%.40s%.40s/", saved, name);
    c->depth++;
    enum npu_status st = emit_func(c, f, s->in, s->nin, outs, &nouts, MAX_IN);
    c->depth--;
    memcpy(c->prefix, saved, sizeof saved);
    if (st)
        return st;
    if (nouts != (s->nres ? s->nres : 0))
        return fail(c, s->start, NPU_ERR_INVALID, "@%s returns %d values, the call binds %d", name,
                    nouts, s->nres);
    for (int i = 0; i < nouts; i++) {
        char nm[80];
        if (nouts == 1)
            snprintf(nm, sizeof nm, "%s", s->res);
        else
            snprintf(nm, sizeof nm, "%s#%d", s->res, i);
        if (!bind(sc, nm, outs[i]))
            return NPU_ERR_NOMEM;
    }
    return NPU_OK;
}

static const struct {
    const char *name;
    enum npu_op op;
    int nin;
} simple_ops[] = {
    {"add", NPU_OP_ADD, 2},
    {"subtract", NPU_OP_SUB, 2},
    {"multiply", NPU_OP_MUL, 2},
    {"divide", NPU_OP_DIV, 2},
    {"maximum", NPU_OP_MAX, 2},
    {"minimum", NPU_OP_MIN, 2},
    {"negate", NPU_OP_NEG, 1},
    {"exponential", NPU_OP_EXP, 1},
    {"log", NPU_OP_LOG, 1},
    {"tanh", NPU_OP_TANH, 1},
    {"logistic", NPU_OP_SIGMOID, 1},
    {"sqrt", NPU_OP_SQRT, 1},
    {"select", NPU_OP_WHERE, 3},
    {"abs", NPU_OP_ABS, 1},
    {"power", NPU_OP_POW, 2},
    {"sine", NPU_OP_SIN, 1},
    {"cosine", NPU_OP_COS, 1},
    {"floor", NPU_OP_FLOOR, 1},
    {"ceil", NPU_OP_CEIL, 1},
    {"sign", NPU_OP_SIGN, 1},
    {"round_nearest_even", NPU_OP_ROUND, 1},
};

/* The ops emit_stmt maps (to tell an undefined operand from an op the
 * reader does not know, whose operand syntax may differ). */
static bool
op_known(const char *op)
{
    static const char *const others[] = {
        "return",
        "func.return",
        "stablehlo.return",
        "call",
        "func.call",
        "stablehlo.composite",
        "chlo.erf",
        "chlo.top_k",
        "chlo.is_inf",
        "chlo.is_pos_inf",
        "chlo.is_neg_inf",
        "sdy.sharding_constraint",
        "stablehlo.rsqrt",
        "stablehlo.exponential_minus_one",
        "stablehlo.log_plus_one",
        "stablehlo.and",
        "stablehlo.or",
        "stablehlo.xor",
        "stablehlo.not",
        "stablehlo.clamp",
        "stablehlo.is_finite",
        "stablehlo.remainder",
        "stablehlo.reduce_window",
        "stablehlo.gather",
        "stablehlo.dynamic_slice",
        "stablehlo.dynamic_update_slice",
        "stablehlo.pad",
        "stablehlo.reverse",
        "stablehlo.constant",
        "stablehlo.iota",
        "stablehlo.dot_general",
        "stablehlo.dot",
        "stablehlo.convolution",
        "stablehlo.broadcast_in_dim",
        "stablehlo.reshape",
        "stablehlo.transpose",
        "stablehlo.reduce",
        "stablehlo.convert",
        "stablehlo.compare",
        "stablehlo.concatenate",
        "stablehlo.slice",
        "stablehlo.custom_call",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (!strcmp(op, others[i]))
            return true;
    if (strncmp(op, "stablehlo.", 10))
        return false;
    for (size_t i = 0; i < sizeof simple_ops / sizeof simple_ops[0]; i++)
        if (!strcmp(op + 10, simple_ops[i].name))
            return true;
    return false;
}

/* One statement; *done is set by a return. */
static enum npu_status
emit_stmt(struct cx *c, struct scope *sc, struct stmt *s, struct npu_value **outs, int *nouts,
          int max_outs, bool *done)
{
    enum npu_status st = split_stmt(c, sc, s);
    if (st)
        return st;
    const char *o = s->sop;
    struct npu_value *y = NULL;
    if (!strcmp(s->op, "return") || !strcmp(s->op, "func.return") ||
        !strcmp(s->op, "stablehlo.return")) {
        if (s->nin > max_outs)
            return fail(c, s->start, NPU_ERR_UNSUPPORTED, "too many results");
        for (int i = 0; i < s->nin; i++)
            outs[i] = s->in[i];
        *nouts = s->nin;
        *done = true;
        return NPU_OK;
    }
    if (!strcmp(s->op, "call") || !strcmp(s->op, "func.call")) {
        char name[128];
        func_ref(s->rest, s->pre_end, name, sizeof name);
        return do_call(c, sc, s, name);
    }
    if (!strcmp(s->op, "stablehlo.composite")) { /* jax.lax.composite: its decomposition */
        char name[128];
        const char *d = shlo_find_attr(s->rest, s->pre_end, "decomposition");
        if (!d)
            return fail(c, s->start, NPU_ERR_INVALID, "composite: no decomposition");
        func_ref(d, s->pre_end, name, sizeof name);
        return do_call(c, sc, s, name);
    }
    if (!strcmp(s->op, "stablehlo.reduce") && (s->nres == 2 || s->nin == 4))
        return s->nin == 4 ? do_reduce_arg(c, sc, s)
                           : fail(c, s->start, NPU_ERR_UNSUPPORTED,
                                  "reduce: several operands are supported only in the argmax / "
                                  "argmin form");
    if (!strcmp(s->op, "sdy.sharding_constraint")) { /* one device: nothing to do */
        if ((st = need_in(c, s, 1)))
            return st;
        y = mk1(c, NPU_OP_IDENTITY, s->in, 1);
        goto check;
    }
    if (!strcmp(s->op, "chlo.top_k"))
        return do_top_k(c, sc, s);
    if (!strcmp(s->op, "chlo.is_inf") || !strcmp(s->op, "chlo.is_pos_inf") ||
        !strcmp(s->op, "chlo.is_neg_inf")) { /* jnp.isinf, isposinf, isneginf */
        if ((st = need_in(c, s, 1)))
            return st;
        struct npu_node *n;
        y = mk(c, NPU_OP_IS_INF, s->in, 1, &n);
        if (!y || npu_node_set_int(c->g, n, "detect_negative", s->op[8] != 'p') ||
            npu_node_set_int(c->g, n, "detect_positive", s->op[8] != 'n') || !infer(c, y))
            y = NULL;
        goto check;
    }
    if (!strcmp(s->op, "chlo.erf")) { /* jax.nn.gelu(approximate=False) */
        if ((st = need_in(c, s, 1)))
            return st;
        y = mk1(c, NPU_OP_ERF, s->in, 1);
        goto check;
    }
    if (!strncmp(s->op, "stablehlo.", 10)) {
        bool known = false;
        for (size_t i = 0; i < sizeof simple_ops / sizeof simple_ops[0]; i++)
            if (!strcmp(o, simple_ops[i].name)) {
                if ((st = need_in(c, s, simple_ops[i].nin)))
                    return st;
                y = mk1(c, simple_ops[i].op, s->in, s->nin);
                known = true;
                break;
            }
        if (known)
            ;
        else if (!strcmp(o, "rsqrt")) {
            if ((st = need_in(c, s, 1)))
                return st;
            y = mk1(c, NPU_OP_SQRT, s->in, 1);
            y = y ? mk1(c, NPU_OP_RECIPROCAL, &y, 1) : NULL;
        } else if (!strcmp(o, "exponential_minus_one") || !strcmp(o, "log_plus_one")) {
            if ((st = need_in(c, s, 1)))
                return st;
            struct npu_value *one = const_num(c, s->in[0]->t.dtype, 1, 0, NULL);
            if (*o == 'e') {
                y = mk1(c, NPU_OP_EXP, s->in, 1);
                y = binop(c, NPU_OP_SUB, y, one);
            } else {
                y = binop(c, NPU_OP_ADD, s->in[0], one);
                y = y ? mk1(c, NPU_OP_LOG, &y, 1) : NULL;
            }
        } else if (!strcmp(o, "and") || !strcmp(o, "or") || !strcmp(o, "xor") ||
                   !strcmp(o, "not")) {
            bool un = *o == 'n';
            if ((st = need_in(c, s, un ? 1 : 2)))
                return st;
            bool b = s->in[0]->t.dtype == NPU_DTYPE_BOOL;
            if (!b && !npu_dtype_is_int(s->in[0]->t.dtype))
                return fail(c, s->start, NPU_ERR_INVALID, "%s: operands must be i1 or integers",
                            s->op);
            enum npu_op op = *o == 'a'   ? (b ? NPU_OP_AND : NPU_OP_BITWISE_AND)
                             : *o == 'o' ? (b ? NPU_OP_OR : NPU_OP_BITWISE_OR)
                             : *o == 'x' ? (b ? NPU_OP_XOR : NPU_OP_BITWISE_XOR)
                                         : (b ? NPU_OP_NOT : NPU_OP_BITWISE_NOT);
            y = mk1(c, op, s->in, s->nin);
        } else if (!strcmp(o, "is_finite")) { /* |x| < inf: false for inf and NaN */
            if ((st = need_in(c, s, 1)))
                return st;
            y = mk1(c, NPU_OP_ABS, s->in, 1);
            y = binop(c, NPU_OP_LESS, y, const_num(c, s->in[0]->t.dtype, INFINITY, 0, NULL));
        } else if (!strcmp(o, "remainder")) { /* C's fmod / %: the sign of the dividend */
            if ((st = need_in(c, s, 2)))
                return st;
            struct npu_node *n;
            y = mk(c, NPU_OP_MOD, s->in, 2, &n);
            if (!y || npu_node_set_int(c->g, n, "fmod", 1) || !infer(c, y))
                y = NULL;
        } else if (!strcmp(o, "clamp")) { /* clamp %min, %x, %max */
            if ((st = need_in(c, s, 3)))
                return st;
            y = binop(c, NPU_OP_MIN, binop(c, NPU_OP_MAX, s->in[1], s->in[0]), s->in[2]);
        } else if (!strcmp(o, "reduce_window")) {
            if (s->nres != 1 || !s->has_out)
                return fail(c, s->start, NPU_ERR_UNSUPPORTED, "reduce_window: one result expected");
            y = do_reduce_window(c, s);
        } else if (!strcmp(o, "gather")) {
            if ((st = need_in(c, s, 2)))
                return st;
            y = do_gather(c, s);
        } else if (!strcmp(o, "dynamic_slice")) {
            if (s->nres != 1 || !s->has_out || s->nin < 1)
                return fail(c, s->start, NPU_ERR_INVALID,
                            "dynamic_slice: expected operands and one result");
            y = do_dynamic_slice(c, s);
        } else if (!strcmp(o, "dynamic_update_slice")) {
            if (s->nres != 1 || !s->has_out || s->nin < 2)
                return fail(c, s->start, NPU_ERR_INVALID,
                            "dynamic_update_slice: expected operands and one result");
            y = do_dynamic_update_slice(c, s);
        } else if (!strcmp(o, "pad")) {
            if ((st = need_in(c, s, 2)))
                return st;
            y = do_pad(c, s);
        } else if (!strcmp(o, "reverse")) {
            if ((st = need_in(c, s, 1)))
                return st;
            y = do_reverse(c, s);
        } else if (!strcmp(o, "constant")) {
            if ((st = need_in(c, s, 0)))
                return st;
            y = do_constant(c, s);
        } else if (!strcmp(o, "iota")) {
            if ((st = need_in(c, s, 0)))
                return st;
            y = do_iota(c, s);
        } else if (!strcmp(o, "dot_general") || !strcmp(o, "dot")) {
            if ((st = need_in(c, s, 2)))
                return st;
            if (!strcmp(o, "dot")) { /* plain dot: [.., K] x [K, ..] */
                if (s->in[0]->t.ndim < 1 || s->in[1]->t.ndim < 1 || s->in[0]->t.ndim > 2 ||
                    s->in[1]->t.ndim > 2)
                    return fail(c, s->start, NPU_ERR_INVALID, "dot: operands must be 1-D or 2-D");
                y = mk1(c, NPU_OP_MATMUL, s->in, 2);
            } else
                y = do_dot(c, s, s->in[0], s->in[1]);
        } else if (!strcmp(o, "convolution")) {
            if ((st = need_in(c, s, 2)))
                return st;
            y = do_conv(c, s);
        } else if (!strcmp(o, "broadcast_in_dim")) {
            if ((st = need_in(c, s, 1)))
                return st;
            y = do_broadcast(c, s);
        } else if (!strcmp(o, "reshape")) {
            if ((st = need_in(c, s, 1)))
                return st;
            int64_t numel = 1;
            for (int i = 0; i < s->out.ndim; i++)
                numel *= s->out.dims[i];
            if (numel != npu_value_numel(s->in[0]))
                return fail(c, s->start, NPU_ERR_INVALID, "reshape: element counts differ");
            y = reshape(c, s->in[0], s->out.dims, s->out.ndim);
        } else if (!strcmp(o, "transpose")) {
            if ((st = need_in(c, s, 1)))
                return st;
            int64_t perm[NPU_MAX_DIMS];
            int n = attr_ints(s, "dims", perm, NPU_MAX_DIMS);
            if (n < 0)
                n = attr_ints(s, "permutation", perm, NPU_MAX_DIMS);
            if (n != s->in[0]->t.ndim || has_dup_or_range(perm, n, n))
                return fail(c, s->start, NPU_ERR_INVALID, "transpose: bad or missing dims");
            y = transpose(c, s->in[0], perm, n);
        } else if (!strcmp(o, "reduce")) {
            if (s->nres != 1 || !s->has_out)
                return fail(c, s->start, NPU_ERR_UNSUPPORTED, "reduce: one result expected");
            y = do_reduce(c, s);
        } else if (!strcmp(o, "convert")) {
            if ((st = need_in(c, s, 1)))
                return st;
            if (s->in[0]->t.dtype == s->out.dt)
                y = s->in[0];
            else {
                struct npu_node *n;
                y = mk(c, NPU_OP_CAST, s->in, 1, &n);
                if (!y || npu_node_set_int(c->g, n, "to", npu_dtype_to_onnx(s->out.dt)) ||
                    !infer(c, y))
                    y = NULL;
            }
        } else if (!strcmp(o, "compare")) {
            if ((st = need_in(c, s, 2)))
                return st;
            y = do_compare(c, s);
        } else if (!strcmp(o, "concatenate")) {
            if (s->nin < 1 || s->nres != 1 || !s->has_out)
                return fail(c, s->start, NPU_ERR_INVALID, "concatenate: no operands");
            int64_t ax = -1;
            if (attr_ints(s, "dim", &ax, 1) < 0)
                attr_ints(s, "dimension", &ax, 1);
            if (ax < 0 || ax >= s->out.ndim)
                return fail(c, s->start, NPU_ERR_INVALID, "concatenate: bad or missing dimension");
            struct npu_node *n;
            y = mk(c, NPU_OP_CONCAT, s->in, s->nin, &n);
            if (!y || npu_node_set_int(c->g, n, "axis", ax) || !infer(c, y))
                y = NULL;
        } else if (!strcmp(o, "slice")) {
            if ((st = need_in(c, s, 1)))
                return st;
            y = do_slice(c, s);
        } else if (!strcmp(o, "custom_call")) {
            const char *p = s->rest, *tn = NULL;
            size_t tl = 0;
            const char *a = shlo_find_attr(s->rest, s->pre_end, "call_target_name");
            if (a && *a == '"') {
                tn = a + 1;
                tl = (size_t)(shlo_skip_string(a, s->pre_end) - a - 2);
            } else {
                while (p < s->pre_end && *p != '@')
                    p++;
                if (p < s->pre_end) {
                    tn = ++p;
                    if (*p == '"') {
                        tn = p + 1;
                        tl = (size_t)(shlo_skip_string(p, s->pre_end) - p - 2);
                    } else
                        while (p < s->pre_end && shlo_is_ident(*p))
                            p++, tl++;
                }
            }
            if (tn && tl == 8 && !strncmp(tn, "Sharding", 8) && s->nin == 1) {
                /* a sharding annotation: one device, nothing to do */
                y = mk1(c, NPU_OP_IDENTITY, s->in, 1);
            } else if (!tn || tl != strlen(NPU_STABLEHLO_MATMUL_TARGET) ||
                       strncmp(tn, NPU_STABLEHLO_MATMUL_TARGET, tl))
                return fail(
                    c, s->start, NPU_ERR_UNSUPPORTED,
                    "custom_call target '%.*s' is not supported (StableHLO reader %d.%d.%d; "
                    "only @%s and @Sharding)",
                    (int)(tn ? tl : 0), tn ? tn : "", NPU_STABLEHLO_VERSION_MAJOR,
                    NPU_STABLEHLO_VERSION_MINOR, NPU_STABLEHLO_VERSION_PATCH,
                    NPU_STABLEHLO_MATMUL_TARGET);
            else {
                if ((st = need_in(c, s, 2)))
                    return st;
                y = mk1(c, NPU_OP_MATMUL, s->in, 2);
            }
        } else
            return fail(c, s->start, NPU_ERR_UNSUPPORTED,
                        "'%s' is not supported by the StableHLO reader (StableHLO %d.%d.%d ops: "
                        "see docs/jax.md)",
                        s->op, NPU_STABLEHLO_VERSION_MAJOR, NPU_STABLEHLO_VERSION_MINOR,
                        NPU_STABLEHLO_VERSION_PATCH);
    } else
        return fail(c, s->start, NPU_ERR_UNSUPPORTED,
                    "'%s' is not supported by the StableHLO reader (StableHLO %d.%d.%d)", s->op,
                    NPU_STABLEHLO_VERSION_MAJOR, NPU_STABLEHLO_VERSION_MINOR,
                    NPU_STABLEHLO_VERSION_PATCH);
check:
    if (!y)
        return fail(c, s->start, NPU_ERR_INVALID, "%s could not be mapped (see above)", s->op);
    if (!same_type(y, &s->out)) {
        char a[128], b[128];
        struct shlo_type got = {.dt = y->t.dtype, .ndim = y->t.ndim};
        memcpy(got.dims, y->t.dims, sizeof got.dims);
        type_str(&got, a, sizeof a);
        type_str(&s->out, b, sizeof b);
        return fail(c, s->start, NPU_ERR_INVALID,
                    "%s: the result is %s but the program declares %s", s->op, a, b);
    }
    return bind(sc, s->res, y) ? NPU_OK : NPU_ERR_NOMEM;
}

static enum npu_status
emit_func(struct cx *c, const struct func *f, struct npu_value *const *args, int nargs,
          struct npu_value **outs, int *nouts, int max_outs)
{
    struct scope sc = {0};
    enum npu_status st = NPU_OK;
    if (f->why[0]) {
        st = fail(c, f->at, NPU_ERR_UNSUPPORTED, "%s", f->why);
        goto out;
    }
    if (nargs != f->nargs) {
        st = fail(c, f->at, NPU_ERR_INVALID, "@%s takes %d arguments, called with %d", f->name,
                  f->nargs, nargs);
        goto out;
    }
    for (int i = 0; i < nargs; i++) {
        if (!same_type(args[i], &f->argt[i])) {
            st = fail(c, f->at, NPU_ERR_INVALID, "@%s: argument %d has the wrong type", f->name, i);
            goto out;
        }
        if (!bind(&sc, f->argname[i], args[i])) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
    }
    bool done = false;
    const char *p = f->body, *end = f->body_end;
    while (!done) {
        p = shlo_ws(p, end);
        if (p >= end)
            break;
        struct stmt s = {.start = p};
        s.end = shlo_stmt_end(p, end);
        const char *q = shlo_ws(s.end, end);
        if (end - q > 7 && !strncmp(q, "reducer", 7)) { /* the pretty reduce's region */
            while (q < end && *q != '{')
                q++;
            s.end = shlo_skip_group(q, end);
        }
        if (s.end == p) {
            st = fail(c, p, NPU_ERR_INVALID, "unexpected '%c'", *p);
            goto out;
        }
        if ((st = emit_stmt(c, &sc, &s, outs, nouts, max_outs, &done)))
            goto out;
        p = s.end;
    }
    if (!done)
        st = fail(c, f->at, NPU_ERR_INVALID, "@%s has no return", f->name);
out:
    free(sc.b);
    return st;
}

/* ---- module ---------------------------------------------------------------- */

static enum npu_status
parse_func(struct cx *c, const char *p, const char *end, const char **next)
{
    char why[160];
    if (c->nfuncs >= MAX_FUNCS)
        return fail(c, p, NPU_ERR_UNSUPPORTED, "more than %d functions", MAX_FUNCS);
    struct func *f = &c->funcs[c->nfuncs];
    memset(f, 0, sizeof *f);
    f->at = p;
    p = shlo_ws(p + 9, end);
    f->is_public = true;
    if (end - p > 7 && !strncmp(p, "private", 7))
        f->is_public = false, p += 7;
    else if (end - p > 6 && !strncmp(p, "public", 6))
        p += 6;
    p = shlo_ws(p, end);
    if (p >= end || *p != '@')
        return fail(c, p, NPU_ERR_INVALID, "expected a function name");
    p++;
    size_t n = 0;
    if (p < end && *p == '"') {
        const char *q = shlo_skip_string(p, end);
        snprintf(f->name, sizeof f->name, "%.*s", (int)(q - p - 2), p + 1);
        p = q;
    } else {
        while (p < end && shlo_is_ident(*p)) {
            if (n + 1 < sizeof f->name)
                f->name[n++] = *p;
            p++;
        }
    }
    p = shlo_ws(p, end);
    if (p >= end || *p != '(')
        return fail(c, p, NPU_ERR_INVALID, "@%s: expected '('", f->name);
    const char *ae = shlo_skip_group(p, end) - 1;
    p++;
    int cap = 0;
    for (;;) {
        p = shlo_ws(p, ae);
        if (p >= ae)
            break;
        if (*p != '%')
            return fail(c, p, NPU_ERR_INVALID, "@%s: expected an argument", f->name);
        if (f->nargs == cap) {
            cap = cap ? 2 * cap : 16;
            if (cap > MAX_ARGS)
                return fail(c, p, NPU_ERR_UNSUPPORTED, "more than %d arguments", MAX_ARGS);
            void *a = realloc(f->argname, (size_t)cap * sizeof *f->argname);
            if (!a)
                return NPU_ERR_NOMEM;
            f->argname = a;
            a = realloc(f->argt, (size_t)cap * sizeof *f->argt);
            if (!a)
                return NPU_ERR_NOMEM;
            f->argt = a;
        }
        p = read_ref(p, ae, f->argname[f->nargs], sizeof f->argname[0]);
        p = shlo_ws(p, ae);
        if (p >= ae || *p != ':')
            return fail(c, p, NPU_ERR_INVALID, "@%s: expected ':' after an argument", f->name);
        p++;
        if (!shlo_parse_type(&p, ae, &f->argt[f->nargs], why, sizeof why)) {
            /* refused only if the function is used: skip to the next argument */
            if (!f->why[0]) {
                char m[sizeof f->why];
                snprintf(m, sizeof m, "@%s argument %d: %s", f->name, f->nargs, why);
                memcpy(f->why, m, sizeof m);
            }
            memset(&f->argt[f->nargs], 0, sizeof f->argt[0]);
            while (p < ae && *p != ',') {
                if (strchr("(<[{", *p))
                    p = shlo_skip_group(p, ae);
                else if (*p == '"')
                    p = shlo_skip_string(p, ae);
                else
                    p++;
            }
        }
        f->nargs++;
        p = shlo_ws(p, ae);
        if (p < ae && *p == '{')
            p = shlo_skip_group(p, ae);
        p = shlo_ws(p, ae);
        if (p < ae && *p == ',')
            p++;
    }
    p = ae + 1;
    /* results and attributes up to the body */
    while (p < end && *p != '{') {
        if (*p == '(' || *p == '<' || *p == '[') {
            p = shlo_skip_group(p, end);
            continue;
        }
        if (*p == '-' && p + 1 < end && p[1] == '>') {
            p += 2;
            continue;
        }
        if (end - p > 10 && !strncmp(p, "attributes", 10)) {
            p = shlo_ws(p + 10, end);
            if (p < end && *p == '{')
                p = shlo_skip_group(p, end);
            continue;
        }
        if (*p == '\n' && shlo_ws(p, end) < end && !strncmp(shlo_ws(p, end), "func.func", 9))
            break; /* a declaration without a body */
        p++;
    }
    if (p < end && *p == '{') {
        const char *be = shlo_skip_group(p, end);
        f->body = p + 1;
        f->body_end = be - 1;
        p = be;
    }
    c->nfuncs++;
    *next = p;
    return NPU_OK;
}

static enum npu_status parse_text(const char *text, size_t len, const char *entry,
                                  const struct shlo_decoded *bc, struct npu_graph **out);

enum npu_status
npu_stablehlo_parse_entry(const char *text, size_t len, const char *entry, struct npu_graph **out)
{
    if (!out)
        return NPU_ERR_INVALID;
    *out = NULL;
    if (!text) {
        npu_err(SHLO_DOM, "no text");
        return NPU_ERR_INVALID;
    }
    if (len >= 4 && !memcmp(text, "ML\xefR", 4)) {
        struct shlo_decoded d;
        enum npu_status st = shlo_bytecode_decode(text, len, &d);
        if (st) {
            npu_err(SHLO_DOM, "%s%s: %s", st == NPU_ERR_INVALID ? "corrupt " : "", d.origin,
                    d.error);
            return st;
        }
        st = parse_text(d.text, d.len, entry, &d, out);
        shlo_decoded_free(&d);
        return st;
    }
    return parse_text(text, len, entry, NULL, out);
}

enum npu_status
npu_stablehlo_parse(const char *text, size_t len, struct npu_graph **out)
{
    return npu_stablehlo_parse_entry(text, len, NULL, out);
}

enum npu_status
npu_stablehlo_bytecode_to_text(const void *buf, size_t len, char **text, size_t *tlen)
{
    if (!text || !tlen)
        return NPU_ERR_INVALID;
    *text = NULL;
    *tlen = 0;
    struct shlo_decoded d;
    enum npu_status st = shlo_bytecode_decode(buf, len, &d);
    if (st) {
        npu_err(SHLO_DOM, "%s%s: %s", st == NPU_ERR_INVALID ? "corrupt " : "", d.origin, d.error);
        return st;
    }
    *text = d.text;
    *tlen = d.len;
    d.text = NULL;
    shlo_decoded_free(&d);
    return NPU_OK;
}

static enum npu_status
parse_text(const char *text, size_t len, const char *entry, const struct shlo_decoded *bc,
           struct npu_graph **out)
{
    enum npu_status st = NPU_OK;
    *out = NULL;
    if (memchr(text, 0, len)) {
        npu_err(SHLO_DOM, "the text contains NUL bytes: not StableHLO text");
        return NPU_ERR_INVALID;
    }
    struct cx *c = calloc(1, sizeof *c);
    char *clean = c ? shlo_clean(text, len) : NULL;
    if (!clean) {
        free(c);
        return NPU_ERR_NOMEM;
    }
    c->text = clean;
    c->bc = bc;
    const char *p = clean, *end = clean + strlen(clean);
    while (p < end) {
        if (*p == '"') {
            p = shlo_skip_string(p, end);
            continue;
        }
        if (end - p > 9 && !strncmp(p, "func.func", 9) && (p == clean || !shlo_is_ident(p[-1]))) {
            if ((st = parse_func(c, p, end, &p)))
                goto out;
            continue;
        }
        p++;
    }
    const struct func *main_fn = find_func(c, entry ? entry : "main");
    if (entry && (!main_fn || !main_fn->body)) {
        st = fail(c, NULL, NPU_ERR_INVALID, "no function @%s with a body", entry);
        goto out;
    }
    if (!entry && (!main_fn || !main_fn->is_public)) {
        main_fn = NULL;
        for (int i = 0; i < c->nfuncs; i++)
            if (c->funcs[i].is_public && c->funcs[i].body) {
                if (main_fn) {
                    st = fail(c, NULL, NPU_ERR_INVALID, "no @main and several public functions");
                    goto out;
                }
                main_fn = &c->funcs[i];
            }
    }
    if (!main_fn || !main_fn->body) {
        st = fail(c, NULL, NPU_ERR_INVALID, "no public function with a body (func.func @main)");
        goto out;
    }
    c->g = npu_graph_new(main_fn->name);
    if (!c->g) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    struct npu_value **args = calloc((size_t)main_fn->nargs + 1, sizeof *args);
    struct npu_value *outs[MAX_IN];
    int nouts = 0;
    if (!args) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    if (main_fn->why[0])
        st = fail(c, main_fn->at, NPU_ERR_UNSUPPORTED, "%s", main_fn->why);
    for (int i = 0; i < main_fn->nargs && !st; i++) {
        const struct shlo_type *t = &main_fn->argt[i];
        args[i] = npu_graph_add_input(c->g, main_fn->argname[i], t->dt, t->ndim, t->dims);
        if (!args[i])
            st = NPU_ERR_INVALID;
    }
    if (!st)
        st = emit_func(c, main_fn, args, main_fn->nargs, outs, &nouts, MAX_IN);
    free(args);
    for (int i = 0; !st && i < nouts; i++) {
        struct npu_value *v = outs[i];
        if (v->kind != NPU_VALUE_NODE || v->is_output) {
            v = mk1(c, NPU_OP_IDENTITY, &v, 1);
            if (!v) {
                st = NPU_ERR_INVALID;
                break;
            }
        }
        st = npu_graph_add_output(c->g, v);
    }
    if (!st && nouts == 0)
        st = fail(c, main_fn->at, NPU_ERR_INVALID, "@%s returns nothing", main_fn->name);
    if (!st) {
        *out = c->g;
        c->g = NULL;
    }
out:
    if (c->g)
        npu_graph_free(c->g);
    for (int i = 0; i <= c->nfuncs && i < MAX_FUNCS; i++) { /* and one parsed in part */
        free(c->funcs[i].argname);
        free(c->funcs[i].argt);
    }
    free(clean);
    free(c);
    return st;
}

enum npu_status
npu_stablehlo_load(const char *path, struct npu_graph **out)
{
    if (out)
        *out = NULL;
    if (!path) {
        npu_err(SHLO_DOM, "(null): no file given");
        return NPU_ERR_IO;
    }
    char *buf;
    size_t len;
    enum npu_status st = npu_read_file(path, SHLO_DOM, &buf, &len);
    if (st)
        return st;
    st = npu_stablehlo_parse(buf, len, out);
    free(buf);
    return st;
}
