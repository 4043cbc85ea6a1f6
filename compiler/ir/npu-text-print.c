/* SPDX-License-Identifier: MIT */
/*
 * npu-text-print.c: prints the IR's text form (docs/ir.md has the grammar,
 * npu-text-parse.c reads it back). One line per input, constant, node and
 * output, MLIR-like:
 *
 *   %y: f32[1,64,768] = MatMul(%x, %w) {transB=0} <name="mm1", device=npu>
 *
 * Small constants are printed with their values; big ones as a blob reference
 * (FNV-1a 64 content hash, byte count and, when a sidecar file is written, the
 * offset of their bytes in it). Printing is deterministic and the parser reads
 * back exactly what the printer writes, so print -> parse -> print is an
 * identity (tests/compiler checks it on every test model). npu_ir_save
 * writes the text and its sidecar file.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "text-priv.h"

#define DOM "ir-text"
#define DEFAULT_INLINE_MAX 16

bool
ir_bare_char(int c)
{
    return isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-';
}

static void
print_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static bool is_bare(const char *s);

static void
print_name(FILE *f, const char *s)
{
    fputc('%', f);
    if (is_bare(s))
        fputs(s, f);
    else
        print_quoted(f, s);
}

/* Floats always carry a '.', 'e', "inf" or "nan" so that the parser can tell
 * them from ints; %.9g round-trips every f32. */
static void
print_float(FILE *f, double v, bool f64)
{
    char buf[64];
    if (isnan(v)) {
        fputs("nan", f);
        return;
    }
    if (isinf(v)) {
        fputs(v < 0 ? "-inf" : "inf", f);
        return;
    }
    snprintf(buf, sizeof(buf), f64 ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    fputs(buf, f);
}

static void
print_type(FILE *f, const struct npu_tensor *t)
{
    fprintf(f, "%s[", npu_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim; i++)
        fprintf(f, "%s%" PRId64, i ? "," : "", t->dims[i]);
    fputc(']', f);
    if (t->qscale != 0) {
        fputs(" q(", f);
        print_float(f, t->qscale, false);
        fprintf(f, ",%" PRId32 ")", t->qzero);
    }
}

static void
print_elems(FILE *f, const struct npu_tensor *t)
{
    int64_t n = npu_tensor_numel(t);
    fputc('[', f);
    for (int64_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        if (npu_dtype_is_float(t->dtype))
            print_float(f, npu_dtype_load_f64(t->dtype, t->data, i), t->dtype == NPU_DTYPE_FP64);
        else if (t->dtype == NPU_DTYPE_UINT64)
            fprintf(f, "%" PRIu64, ((const uint64_t *)t->data)[i]);
        else
            fprintf(f, "%" PRId64, npu_dtype_load_i64(t->dtype, t->data, i));
    }
    fputc(']', f);
}

static bool
is_bare(const char *s)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++)
        if (!ir_bare_char((unsigned char)*p))
            return false;
    return true;
}

static void
print_attr(FILE *f, const struct npu_attr *a)
{
    if (is_bare(a->name))
        fputs(a->name, f);
    else
        print_quoted(f, a->name);
    fputc('=', f);
    switch (a->type) {
    case NPU_ATTR_INT: fprintf(f, "%" PRId64, a->i); break;
    case NPU_ATTR_FLOAT: print_float(f, a->f, false); break;
    case NPU_ATTR_STRING: print_quoted(f, a->s); break;
    case NPU_ATTR_INTS:
        fputs(a->n ? "[" : "ints[", f);
        for (size_t i = 0; i < a->n; i++)
            fprintf(f, "%s%" PRId64, i ? "," : "", a->ints[i]);
        fputc(']', f);
        break;
    case NPU_ATTR_FLOATS:
        fputs(a->n ? "[" : "floats[", f);
        for (size_t i = 0; i < a->n; i++) {
            if (i)
                fputc(',', f);
            print_float(f, a->floats[i], false);
        }
        fputc(']', f);
        break;
    case NPU_ATTR_STRINGS:
        fputs(a->n ? "[" : "strings[", f);
        for (size_t i = 0; i < a->n; i++) {
            if (i)
                fputc(',', f);
            print_quoted(f, a->strs[i]);
        }
        fputc(']', f);
        break;
    case NPU_ATTR_TENSOR:
        fputs("tensor<", f);
        print_type(f, a->t);
        fputs(">", f);
        print_elems(f, a->t);
        break;
    }
}

static enum npu_status
print_const(FILE *f, struct npu_value *v, const struct npu_ir_print_opts *o)
{
    int64_t lim = o && o->inline_max > 0 ? o->inline_max : DEFAULT_INLINE_MAX;
    fputs("  const ", f);
    print_name(f, v->name);
    fputs(": ", f);
    print_type(f, &v->t);
    fputs(" = ", f);
    int64_t n = npu_tensor_numel(&v->t), nb = npu_tensor_nbytes(&v->t);
    if (n <= lim) {
        print_elems(f, &v->t);
        fputc('\n', f);
        return NPU_OK;
    }
    fprintf(f, "blob(fnv1a64=0x%016" PRIx64 ", bytes=%" PRId64, npu_value_hash(v), nb);
    if (o && o->sidecar) {
        long pos = ftell(o->sidecar);
        if (pos < 0)
            return NPU_ERR_IO;
        long aligned = (long)NPU_ALIGN((unsigned long)pos, 64);
        static const char zeros[64];
        if (aligned > pos &&
            fwrite(zeros, 1, (size_t)(aligned - pos), o->sidecar) != (size_t)(aligned - pos))
            return NPU_ERR_IO;
        if (nb && fwrite(v->t.data, 1, (size_t)nb, o->sidecar) != (size_t)nb)
            return NPU_ERR_IO;
        fprintf(f, ", offset=%ld", aligned);
    }
    fputs(")\n", f);
    return NPU_OK;
}

enum npu_status
npu_ir_print(const struct npu_graph *g, FILE *f, const struct npu_ir_print_opts *opts)
{
    fputs("# opennpu ir v1\ngraph ", f);
    print_quoted(f, g->name);
    fprintf(f, " opset=%d {\n", g->opset);
    for (int i = 0; i < g->ninputs; i++) {
        fputs("  input ", f);
        print_name(f, g->inputs[i]->name);
        fputs(": ", f);
        print_type(f, &g->inputs[i]->t);
        if (g->inputs[i]->is_state)
            fputs(" state", f);
        fputc('\n', f);
    }
    for (int i = 0; i < g->nvalues; i++)
        if (g->values[i]->kind == NPU_VALUE_CONST) {
            enum npu_status st = print_const(f, g->values[i], opts);
            if (st)
                return st;
        }
    npu_graph_for_each_node (g, n) {
        fputs("  ", f);
        for (int i = 0; i < n->nout; i++) {
            if (i)
                fputs(", ", f);
            print_name(f, n->out[i]->name);
            fputs(": ", f);
            print_type(f, &n->out[i]->t);
        }
        fprintf(f, " = %s(", npu_op_name(n->op));
        for (int i = 0; i < n->nin; i++) {
            if (i)
                fputs(", ", f);
            if (n->in[i])
                print_name(f, n->in[i]->name);
            else
                fputc('_', f);
        }
        fputc(')', f);
        if (n->nattr) {
            fputs(" {", f);
            for (int i = 0; i < n->nattr; i++) {
                if (i)
                    fputs(", ", f);
                print_attr(f, &n->attr[i]);
            }
            fputc('}', f);
        }
        bool meta = (n->name && *n->name) || n->device != NPU_DEVICE_ANY || n->cost != 0;
        if (meta) {
            const char *sep = "";
            fputs(" <", f);
            if (n->name && *n->name) {
                fputs("name=", f);
                print_quoted(f, n->name);
                sep = ", ";
            }
            if (n->device != NPU_DEVICE_ANY) {
                fprintf(f, "%sdevice=%s", sep, npu_device_name(n->device));
                sep = ", ";
            }
            if (n->cost != 0) {
                fprintf(f, "%scost=", sep);
                print_float(f, n->cost, true);
            }
            fputc('>', f);
        }
        fputc('\n', f);
    }
    for (int i = 0; i < g->noutputs; i++) {
        fputs("  output ", f);
        print_name(f, g->outputs[i]->name);
        fputc('\n', f);
    }
    fputs("}\n", f);
    return ferror(f) ? NPU_ERR_IO : NPU_OK;
}

char *
npu_ir_print_str(const struct npu_graph *g, const struct npu_ir_print_opts *opts)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    enum npu_status st = npu_ir_print(g, f, opts);
    fclose(f);
    if (st) {
        free(buf);
        return NULL;
    }
    return buf;
}

enum npu_status
npu_ir_save(const struct npu_graph *g, const char *path)
{
    size_t n = strlen(path);
    char *side = malloc(n + 5);
    if (!side)
        return NPU_ERR_NOMEM;
    snprintf(side, n + 5, "%s.bin", path);
    FILE *f = fopen(path, "w"), *s = fopen(side, "wb");
    enum npu_status st = NPU_ERR_IO;
    if (f && s) {
        struct npu_ir_print_opts o = {.sidecar = s};
        st = npu_ir_print(g, f, &o);
    } else {
        npu_err(DOM, "%s: %s", f ? side : path, strerror(errno));
    }
    if (f && fclose(f))
        st = NPU_ERR_IO;
    if (s && fclose(s))
        st = NPU_ERR_IO;
    free(side);
    return st;
}
