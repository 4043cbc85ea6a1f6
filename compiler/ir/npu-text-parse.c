/* SPDX-License-Identifier: MIT */
/*
 * npu-text-parse.c: reads the IR's text form (docs/ir.md has the grammar,
 * npu-text-print.c writes it) back into a graph, line by line: constants'
 * data inline or from the sidecar file (blobs, checked against their hash),
 * each node inferred as it is added and checked against its declared types,
 * the graph verified at the end. Errors name the line. npu_ir_load reads a
 * file and its sidecar.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "text-priv.h"

#define DOM "ir-text"
#define MISSING_BLOB_MAX ((int64_t)1 << 30)

struct parser {
    const char *p, *end;
    int line;
    struct npu_graph *g;
    const unsigned char *side;
    size_t side_len;
    bool allow_missing;
    int64_t missing_bytes; /* zero-filled so far (capped) */
    bool failed;
};

static void NPU_PRINTF(2, 3) perr(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    npu_err(DOM, "line %d: %s", ps->line, msg);
    ps->failed = true;
}

static void
skip_ws(struct parser *ps, bool newlines)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '#') {
            while (ps->p < ps->end && *ps->p != '\n')
                ps->p++;
        } else if (c == '\n' && newlines) {
            ps->line++;
            ps->p++;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            ps->p++;
        } else {
            break;
        }
    }
}

static bool
accept(struct parser *ps, const char *tok)
{
    skip_ws(ps, false);
    size_t n = strlen(tok);
    if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, tok, n)) {
        ps->p += n;
        return true;
    }
    return false;
}

static bool
expect(struct parser *ps, const char *tok)
{
    if (accept(ps, tok))
        return true;
    perr(ps, "expected '%s'", tok);
    return false;
}

static char *
parse_quoted(struct parser *ps)
{
    skip_ws(ps, false);
    if (ps->p >= ps->end || *ps->p != '"') {
        perr(ps, "expected a quoted string");
        return NULL;
    }
    ps->p++;
    size_t cap = 32, n = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\n') {
        char c = *ps->p++;
        if (c == '\\' && ps->p < ps->end) {
            c = *ps->p++;
            if (c == 'x' && ps->end - ps->p >= 2 && isxdigit((unsigned char)ps->p[0]) &&
                isxdigit((unsigned char)ps->p[1])) {
                char hx[3] = {ps->p[0], ps->p[1], 0};
                c = (char)strtol(hx, NULL, 16);
                ps->p += 2;
            }
        }
        if (n + 2 > cap) {
            cap *= 2;
            char *t = realloc(s, cap);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        s[n++] = c;
    }
    s[n] = 0;
    if (ps->p >= ps->end || *ps->p != '"') {
        perr(ps, "unterminated string");
        free(s);
        return NULL;
    }
    ps->p++;
    return s;
}

static char *
parse_word(struct parser *ps)
{
    skip_ws(ps, false);
    const char *s = ps->p;
    while (ps->p < ps->end && ir_bare_char((unsigned char)*ps->p))
        ps->p++;
    if (ps->p == s) {
        perr(ps, "expected a word");
        return NULL;
    }
    return strndup(s, (size_t)(ps->p - s));
}

/* %name or %"quoted" (malloc'd) */
static char *
parse_name(struct parser *ps)
{
    if (!expect(ps, "%"))
        return NULL;
    if (ps->p < ps->end && *ps->p == '"')
        return parse_quoted(ps);
    return parse_word(ps);
}

static bool
parse_i64(struct parser *ps, int64_t *v)
{
    skip_ws(ps, false);
    char *e;
    errno = 0;
    long long x = strtoll(ps->p, &e, 10);
    if (e == ps->p || errno) {
        perr(ps, "expected an integer");
        return false;
    }
    ps->p = e;
    *v = x;
    return true;
}

/* Reads a number token; *is_float tells whether it had float syntax. */
static bool
parse_num(struct parser *ps, double *d, int64_t *i, uint64_t *u, bool *is_float)
{
    skip_ws(ps, false);
    const char *s = ps->p;
    const char *q = s;
    if (q < ps->end && (*q == '-' || *q == '+'))
        q++;
    if (ps->end - q >= 3 && (!strncmp(q, "inf", 3) || !strncmp(q, "nan", 3))) {
        *is_float = true;
        *d = !strncmp(q, "nan", 3) ? NAN : (*s == '-' ? -INFINITY : INFINITY);
        ps->p = q + 3;
        return true;
    }
    const char *t = q;
    while (t < ps->end && (isalnum((unsigned char)*t) || *t == '.' ||
                           ((*t == '-' || *t == '+') && (t[-1] == 'e' || t[-1] == 'E'))))
        t++;
    if (t == q) {
        perr(ps, "expected a number");
        return false;
    }
    *is_float = memchr(q, '.', (size_t)(t - q)) || memchr(q, 'e', (size_t)(t - q));
    char *e;
    errno = 0;
    if (*is_float) {
        /* strtod reports ERANGE for subnormals, which we print and must read */
        *d = strtod(s, &e);
        errno = 0;
    } else if (*s == '-') {
        *i = strtoll(s, &e, 10);
        *d = (double)*i;
        *u = (uint64_t)*i;
    } else {
        *u = strtoull(s, &e, 10);
        *i = *u > INT64_MAX ? INT64_MAX : (int64_t)*u;
        *d = (double)*u;
    }
    if (e != t || errno) {
        perr(ps, "bad number");
        return false;
    }
    ps->p = t;
    return true;
}

static bool
parse_type(struct parser *ps, struct npu_tensor *t)
{
    memset(t, 0, sizeof(*t));
    skip_ws(ps, false);
    const char *s = ps->p;
    while (ps->p < ps->end && isalnum((unsigned char)*ps->p))
        ps->p++;
    char dt[16];
    size_t n = (size_t)(ps->p - s);
    if (n == 0 || n >= sizeof(dt)) {
        perr(ps, "expected a dtype");
        return false;
    }
    memcpy(dt, s, n);
    dt[n] = 0;
    t->dtype = npu_dtype_from_name(dt);
    if (!t->dtype) {
        perr(ps, "unknown dtype '%s'", dt);
        return false;
    }
    if (!expect(ps, "["))
        return false;
    if (!accept(ps, "]")) {
        do {
            if (t->ndim >= NPU_MAX_DIMS) {
                perr(ps, "more than %d dims", NPU_MAX_DIMS);
                return false;
            }
            if (!parse_i64(ps, &t->dims[t->ndim]))
                return false;
            if (t->dims[t->ndim] < 0) {
                perr(ps, "negative dim");
                return false;
            }
            t->ndim++;
        } while (accept(ps, ","));
        if (!expect(ps, "]"))
            return false;
    }
    if (npu_tensor_nbytes(t) < 0) {
        perr(ps, "shape overflows");
        return false;
    }
    if (accept(ps, "q(")) {
        double d;
        int64_t i, z;
        uint64_t u;
        bool fl;
        if (!parse_num(ps, &d, &i, &u, &fl) || !expect(ps, ",") || !parse_i64(ps, &z) ||
            !expect(ps, ")"))
            return false;
        t->qscale = (float)d;
        t->qzero = (int32_t)z;
    }
    return true;
}

/* Allocates t->data and reads the elements; each takes at least two
 * characters of text, which bounds what a short text can make us allocate. */
static bool
parse_elems(struct parser *ps, struct npu_tensor *t)
{
    int64_t n = npu_tensor_numel(t);
    if (n > (ps->end - ps->p) / 2 + 1) {
        perr(ps, "%lld elements cannot fit in the rest of the text", (long long)n);
        return false;
    }
    t->data = npu_graph_alloc(ps->g, (size_t)npu_tensor_nbytes(t));
    if (!t->data || !expect(ps, "["))
        return false;
    for (int64_t k = 0; k < n; k++) {
        if (k && !expect(ps, ","))
            return false;
        double d;
        int64_t i;
        uint64_t u;
        bool fl;
        if (!parse_num(ps, &d, &i, &u, &fl))
            return false;
        if (npu_dtype_is_float(t->dtype))
            ir_store_f64(t->dtype, t->data, k, d);
        else if (t->dtype == NPU_DTYPE_UINT64)
            ((uint64_t *)t->data)[k] = u;
        else
            ir_store_i64(t->dtype, t->data, k, fl ? ir_f64_to_i64(d) : i);
    }
    return expect(ps, "]");
}

static bool
parse_blob(struct parser *ps, struct npu_tensor *t)
{
    int64_t bytes = -1, offset = -1;
    uint64_t hash = 0;
    if (!expect(ps, "blob(") || !expect(ps, "fnv1a64="))
        return false;
    skip_ws(ps, false);
    char *e;
    hash = strtoull(ps->p, &e, 16);
    if (e == ps->p) {
        perr(ps, "bad hash");
        return false;
    }
    ps->p = e;
    if (!expect(ps, ",") || !expect(ps, "bytes=") || !parse_i64(ps, &bytes))
        return false;
    if (accept(ps, ",")) {
        if (!expect(ps, "offset=") || !parse_i64(ps, &offset))
            return false;
    }
    if (!expect(ps, ")"))
        return false;
    if (bytes != npu_tensor_nbytes(t)) {
        perr(ps, "blob of %lld bytes for a type of %lld", (long long)bytes,
             (long long)npu_tensor_nbytes(t));
        return false;
    }
    if (offset < 0 || !ps->side) {
        /* zero-filled stand-in for reading dumps; a dump cannot ask for more
         * memory than a real model would have */
        if (ps->allow_missing && bytes <= MISSING_BLOB_MAX - ps->missing_bytes) {
            ps->missing_bytes += bytes;
            t->data = npu_graph_alloc(ps->g, (size_t)bytes);
            return t->data != NULL;
        }
        perr(ps,
             ps->allow_missing ? "blobs without a sidecar exceed 1 GiB (%lld more bytes)"
                               : "constant data (%lld bytes) is in a sidecar that was not given",
             (long long)bytes);
        return false;
    }
    if ((uint64_t)offset > ps->side_len || (uint64_t)bytes > ps->side_len - (uint64_t)offset) {
        perr(ps, "blob [%lld, +%lld) lies outside the %zu-byte sidecar", (long long)offset,
             (long long)bytes, ps->side_len);
        return false;
    }
    t->data = npu_graph_alloc(ps->g, (size_t)bytes);
    if (!t->data)
        return false;
    memcpy(t->data, ps->side + offset, (size_t)bytes);
    if (npu_fnv1a64(t->data, (size_t)bytes) != hash) {
        perr(ps, "blob content does not match its hash");
        return false;
    }
    return true;
}

static bool
parse_attr(struct parser *ps, struct npu_node *n)
{
    struct npu_graph *g = ps->g;
    skip_ws(ps, false);
    char *name = ps->p < ps->end && *ps->p == '"' ? parse_quoted(ps) : parse_word(ps);
    bool ok = false;
    if (!name || !expect(ps, "="))
        goto out;
    skip_ws(ps, false);
    enum npu_status st = NPU_OK;
    if (ps->p < ps->end && *ps->p == '"') {
        char *s = parse_quoted(ps);
        if (!s)
            goto out;
        st = npu_node_set_string(g, n, name, s);
        free(s);
    } else if (accept(ps, "tensor<")) {
        struct npu_tensor t;
        if (!parse_type(ps, &t) || !expect(ps, ">") || !parse_elems(ps, &t))
            goto out;
        st = npu_node_set_tensor(g, n, name, &t);
    } else if (accept(ps, "ints[")) {
        st = npu_node_set_ints(g, n, name, NULL, 0);
        if (!expect(ps, "]"))
            goto out;
    } else if (accept(ps, "floats[")) {
        st = npu_node_set_floats(g, n, name, NULL, 0);
        if (!expect(ps, "]"))
            goto out;
    } else if (accept(ps, "strings[")) {
        st = npu_node_set_strings(g, n, name, NULL, 0);
        if (!expect(ps, "]"))
            goto out;
    } else if (accept(ps, "[")) {
        skip_ws(ps, false);
        if (ps->p < ps->end && *ps->p == '"') {
            const char *strs[256];
            size_t cnt = 0;
            do {
                char *s = parse_quoted(ps);
                if (!s || cnt == 256) {
                    free(s);
                    perr(ps, "bad string list");
                    for (size_t i = 0; i < cnt; i++)
                        free((void *)strs[i]);
                    goto out;
                }
                strs[cnt++] = s;
            } while (accept(ps, ","));
            st = npu_node_set_strings(g, n, name, strs, cnt);
            for (size_t i = 0; i < cnt; i++)
                free((void *)strs[i]);
        } else {
            int64_t iv[1024];
            float fv[1024];
            size_t cnt = 0;
            bool any_float = false;
            do {
                double d;
                int64_t i;
                uint64_t u;
                bool fl;
                if (cnt == 1024) {
                    perr(ps, "list too long");
                    goto out;
                }
                if (!parse_num(ps, &d, &i, &u, &fl))
                    goto out;
                any_float |= fl;
                iv[cnt] = i;
                fv[cnt] = (float)d;
                cnt++;
            } while (accept(ps, ","));
            st = any_float ? npu_node_set_floats(g, n, name, fv, cnt)
                           : npu_node_set_ints(g, n, name, iv, cnt);
        }
        if (!expect(ps, "]"))
            goto out;
    } else {
        double d;
        int64_t i;
        uint64_t u;
        bool fl;
        if (!parse_num(ps, &d, &i, &u, &fl))
            goto out;
        st = fl ? npu_node_set_float(g, n, name, (float)d) : npu_node_set_int(g, n, name, i);
    }
    ok = st == NPU_OK;
out:
    free(name);
    return ok;
}

static struct npu_value *
lookup(struct parser *ps, const char *name)
{
    struct npu_value *v = npu_graph_find_value(ps->g, name);
    if (!v)
        perr(ps, "unknown value '%%%s'", name);
    return v;
}

static bool
parse_node(struct parser *ps)
{
    struct npu_graph *g = ps->g;
    char *onames[64];
    struct npu_tensor otypes[64];
    int nout = 0;
    bool ok = false;
    struct npu_value *ins[256];
    int nin = 0;
    char *opname = NULL;
    do {
        if (nout == 64) {
            perr(ps, "too many outputs");
            goto out;
        }
        onames[nout] = parse_name(ps);
        if (!onames[nout])
            goto out;
        nout++;
        if (!expect(ps, ":") || !parse_type(ps, &otypes[nout - 1]))
            goto out;
    } while (accept(ps, ","));
    if (!expect(ps, "="))
        goto out;
    skip_ws(ps, false);
    const char *s = ps->p;
    while (ps->p < ps->end && (isalnum((unsigned char)*ps->p) || *ps->p == '.' || *ps->p == '_'))
        ps->p++;
    opname = strndup(s, (size_t)(ps->p - s));
    enum npu_op op = opname ? npu_op_from_name(opname) : NPU_OP_NONE;
    if (!op) {
        perr(ps, "unknown op '%s'", opname ? opname : "");
        goto out;
    }
    if (!expect(ps, "("))
        goto out;
    if (!accept(ps, ")")) {
        do {
            if (nin == 256) {
                perr(ps, "too many inputs");
                goto out;
            }
            if (accept(ps, "_")) {
                ins[nin++] = NULL;
                continue;
            }
            char *nm = parse_name(ps);
            if (!nm)
                goto out;
            ins[nin] = lookup(ps, nm);
            free(nm);
            if (!ins[nin++])
                goto out;
        } while (accept(ps, ","));
        if (!expect(ps, ")"))
            goto out;
    }
    for (int i = 0; i < nout; i++)
        if (npu_graph_find_value(g, onames[i])) {
            perr(ps, "value '%%%s' is defined twice", onames[i]);
            goto out;
        }
    struct npu_node *n = npu_node_new(g, op, "", ins, nin, nout, (const char *const *)onames);
    if (!n)
        goto out;
    for (int i = 0; i < nout; i++) {
        if (strcmp(n->out[i]->name, onames[i])) {
            perr(ps, "duplicate output name '%%%s'", onames[i]);
            goto out;
        }
        n->out[i]->t = otypes[i];
    }
    npu_graph_append(g, n);
    if (accept(ps, "{")) {
        if (!accept(ps, "}")) {
            do {
                if (!parse_attr(ps, n))
                    goto out;
            } while (accept(ps, ","));
            if (!expect(ps, "}"))
                goto out;
        }
    }
    if (accept(ps, "<")) {
        do {
            char *key = parse_word(ps);
            if (!key || !expect(ps, "=")) {
                free(key);
                goto out;
            }
            if (!strcmp(key, "name")) {
                char *nm = parse_quoted(ps);
                if (nm)
                    n->name = npu_graph_strdup(g, nm);
                free(nm);
            } else if (!strcmp(key, "device")) {
                char *d = parse_word(ps);
                if (d && !strcmp(d, "cpu"))
                    n->device = NPU_DEVICE_CPU;
                else if (d && !strcmp(d, "npu"))
                    n->device = NPU_DEVICE_NPU;
                else
                    perr(ps, "unknown device '%s'", d ? d : "");
                free(d);
            } else if (!strcmp(key, "cost")) {
                double d;
                int64_t i;
                uint64_t u;
                bool fl;
                if (parse_num(ps, &d, &i, &u, &fl))
                    n->cost = d;
            } else {
                perr(ps, "unknown node property '%s'", key);
            }
            free(key);
            if (ps->failed)
                goto out;
        } while (accept(ps, ","));
        if (!expect(ps, ">"))
            goto out;
    }
    /* Known contents and the consistency of the declared types. */
    struct npu_tensor saved[64];
    for (int i = 0; i < nout; i++)
        saved[i] = n->out[i]->t;
    if (ir_infer_node(g, n, true)) {
        perr(ps, "node does not type-check");
        goto out;
    }
    for (int i = 0; i < nout; i++) {
        const struct npu_tensor *a = &saved[i], *b = &n->out[i]->t;
        if (a->dtype != b->dtype || a->ndim != b->ndim ||
            memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim)) {
            perr(ps, "declared type of '%%%s' differs from the inferred one", n->out[i]->name);
            goto out;
        }
        n->out[i]->t.qscale = a->qscale;
        n->out[i]->t.qzero = a->qzero;
    }
    ok = true;
out:
    for (int i = 0; i < nout; i++)
        free(onames[i]);
    free(opname);
    return ok;
}

static bool
parse_line(struct parser *ps)
{
    struct npu_graph *g = ps->g;
    if (accept(ps, "input ")) {
        char *nm = parse_name(ps);
        struct npu_tensor t;
        bool ok = nm && expect(ps, ":") && parse_type(ps, &t);
        struct npu_value *v = NULL;
        if (ok) {
            if (npu_graph_find_value(g, nm))
                perr(ps, "value '%%%s' is defined twice", nm);
            else
                v = npu_graph_add_input(g, nm, t.dtype, t.ndim, t.dims);
        }
        if (v) {
            v->t.qscale = t.qscale;
            v->t.qzero = t.qzero;
            v->is_state = accept(ps, "state"); /* npu_value.is_state */
        }
        free(nm);
        return v != NULL;
    }
    if (accept(ps, "const ")) {
        char *nm = parse_name(ps);
        struct npu_tensor t;
        bool ok = nm && expect(ps, ":") && parse_type(ps, &t) && expect(ps, "=");
        if (ok && npu_graph_find_value(g, nm)) {
            perr(ps, "value '%%%s' is defined twice", nm);
            ok = false;
        }
        if (ok) {
            skip_ws(ps, false);
            ok = ps->p < ps->end && *ps->p == 'b' ? parse_blob(ps, &t) : parse_elems(ps, &t);
        }
        if (ok)
            ok = npu_graph_add_const_owned(g, nm, &t) != NULL;
        free(nm);
        return ok;
    }
    if (accept(ps, "output ")) {
        char *nm = parse_name(ps);
        struct npu_value *v = nm ? lookup(ps, nm) : NULL;
        free(nm);
        if (v && v->is_output) {
            perr(ps, "output listed twice");
            return false;
        }
        return v && npu_graph_add_output(g, v) == NPU_OK;
    }
    return parse_node(ps);
}

static enum npu_status parse_text(const char *text, size_t len, const void *sidecar,
                                  size_t sidecar_len, bool allow_missing_blobs,
                                  struct npu_graph **out);

enum npu_status
npu_ir_parse(const char *text, size_t len, const void *sidecar, size_t sidecar_len,
             bool allow_missing_blobs, struct npu_graph **out)
{
    /* strtod/strtoll need a terminator: the caller's text may not have one */
    *out = NULL;
    char *copy = malloc(len + 1);
    if (!copy)
        return NPU_ERR_NOMEM;
    memcpy(copy, text, len);
    copy[len] = 0;
    enum npu_status st = parse_text(copy, len, sidecar, sidecar_len, allow_missing_blobs, out);
    free(copy);
    return st;
}

static enum npu_status
parse_text(const char *text, size_t len, const void *sidecar, size_t sidecar_len,
           bool allow_missing_blobs, struct npu_graph **out)
{
    *out = NULL;
    struct parser ps = {.p = text,
                        .end = text + len,
                        .line = 1,
                        .side = sidecar,
                        .side_len = sidecar_len,
                        .allow_missing = allow_missing_blobs};
    skip_ws(&ps, true);
    if (!accept(&ps, "graph")) {
        npu_err(DOM, "line %d: expected 'graph'", ps.line);
        return NPU_ERR_CORRUPT;
    }
    char *name = parse_quoted(&ps);
    int64_t opset = 21;
    if (!name || !expect(&ps, "opset=") || !parse_i64(&ps, &opset) || !expect(&ps, "{")) {
        free(name);
        if (!ps.failed)
            npu_err(DOM, "line %d: bad graph header", ps.line);
        return NPU_ERR_CORRUPT;
    }
    ps.g = npu_graph_new(name);
    free(name);
    if (!ps.g)
        return NPU_ERR_NOMEM;
    ps.g->opset = (int)opset;
    for (;;) {
        skip_ws(&ps, false);
        if (ps.p < ps.end && *ps.p == '\n') {
            ps.p++;
            ps.line++;
            continue;
        }
        if (ps.p >= ps.end) {
            perr(&ps, "unexpected end of text (missing '}')");
            break;
        }
        if (*ps.p == '}') {
            ps.p++;
            break;
        }
        if (!parse_line(&ps)) {
            if (!ps.failed)
                perr(&ps, "bad line");
            break;
        }
        skip_ws(&ps, false);
        if (ps.p < ps.end && *ps.p != '\n' && *ps.p != '}') {
            perr(&ps, "trailing characters");
            break;
        }
    }
    if (!ps.failed) {
        skip_ws(&ps, true);
        if (ps.p != ps.end)
            perr(&ps, "text after the graph");
    }
    if (ps.failed) {
        npu_graph_free(ps.g);
        return NPU_ERR_CORRUPT;
    }
    if (npu_graph_verify(ps.g)) {
        npu_graph_free(ps.g);
        return NPU_ERR_CORRUPT;
    }
    *out = ps.g;
    return NPU_OK;
}

enum npu_status
npu_ir_load(const char *path, struct npu_graph **out)
{
    char *text = NULL, *side = NULL, *sp;
    size_t tl = 0, sl = 0, n = strlen(path);
    *out = NULL;
    enum npu_status st = npu_read_file(path, DOM, &text, &tl);
    if (st)
        return st;
    sp = malloc(n + 5);
    if (!sp) {
        free(text);
        return NPU_ERR_NOMEM;
    }
    snprintf(sp, n + 5, "%s.bin", path);
    FILE *f = fopen(sp, "rb");
    if (f) {
        fclose(f);
        st = npu_read_file(sp, DOM, &side, &sl);
    }
    if (!st)
        st = npu_ir_parse(text, tl, side, sl, false, out);
    free(sp);
    free(text);
    free(side);
    return st;
}
