/* SPDX-License-Identifier: MIT */
/*
 * npu-pipeline.c: the pass pipeline, one readable list (npu_compile). Each
 * pass runs through run_pass(), which verifies the graph afterwards (debug
 * builds, or when asked) and prints the IR after the passes named in
 * dump_after / NPU_DEBUG=dump_ir. Later back-end passes (partitioning by cost,
 * tiling, NPU lowering) are appended to the list here.
 */
#include <stdlib.h>
#include <string.h>

#include "passes-priv.h"

#define DOM "passes"

struct run {
    struct npu_graph *g;
    const struct npu_compile_options *o;
    bool verify;
};

bool
npu_pass_listed(const char *list, const char *pass)
{
    if (!list)
        return false;
    if (!strcmp(list, "all"))
        return true;
    size_t n = strlen(pass);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, pass, n))
            return true;
        p += len + (e ? 1 : 0);
    }
    return false;
}

static bool
dump_wanted(const struct run *r, const char *pass)
{
    const char *list = r->o ? r->o->dump_after : NULL;
    if (!list)
        return (npu_debug_flags() & NPU_DEBUG_DUMP_IR) != 0;
    return npu_pass_listed(list, pass);
}

static void
dump(const struct run *r, const char *pass)
{
    if (!dump_wanted(r, pass))
        return;
    FILE *f = r->o && r->o->dump_file ? r->o->dump_file : stderr;
    fprintf(f, "# ---- IR after %s\n", pass);
    npu_ir_print(r->g, f, NULL);
}

static enum npu_status
run_pass(struct run *r, const char *name, enum npu_status (*fn)(struct npu_graph *))
{
    enum npu_status st = fn(r->g);
    if (st) {
        npu_err(DOM, "pass %s failed: %s", name, npu_status_str(st));
        return st;
    }
    if (r->verify && npu_graph_verify(r->g)) {
        npu_err(DOM, "graph is invalid after pass %s (a compiler bug)", name);
        return NPU_ERR_INTERNAL;
    }
    dump(r, name);
    return NPU_OK;
}

#define RUN(pass)                                                                                  \
    do {                                                                                           \
        enum npu_status st_ = run_pass(&r, #pass, npu_pass_##pass);                                \
        if (st_)                                                                                   \
            return st_;                                                                            \
    } while (0)

enum npu_status
npu_compile(struct npu_graph *g, const struct npu_compile_options *o)
{
#ifdef NDEBUG
    bool dbg = false;
#else
    bool dbg = true;
#endif
    struct run r = {g, o, o && o->verify >= 0 ? o->verify != 0 : dbg};
    bool fuse = !(o && o->no_fusion);
    dump(&r, "input");

    RUN(simplify_shapes); /* shape subgraphs -> constants, identities gone */
    RUN(fold_constants);  /* constant subgraphs evaluated */
    RUN(dce);
    if (fuse) {
        RUN(fuse_layernorm);
        RUN(fuse_gelu);
        RUN(fuse_silu);
        RUN(fuse_attention);
        RUN(fold_conv_bn);
        if (!o || !o->no_epilogue_fusion) {
            RUN(fuse_bias);       /* after conv-bn, so the folded bias absorbs it */
            RUN(fuse_activation); /* after bias, so the epilogue order is bias, act */
        }
        RUN(simplify_shapes); /* Transposes the fusions inserted may merge */
        RUN(dce);
    }
    return NPU_OK;
}

const char *const *
npu_compile_pass_names(void)
{
    static const char *const names[] = {"input",     "simplify_shapes", "fold_constants",
                                        "dce",       "fuse_layernorm",  "fuse_gelu",
                                        "fuse_silu", "fuse_attention",  "fold_conv_bn",
                                        "fuse_bias", "fuse_activation", NULL};
    /* (simplify_shapes and dce run again at the end) */
    return names;
}

/* ---- helpers shared by the passes ---------------------------------------------- */

void
pass_replace(struct npu_graph *g, struct npu_node *n, struct npu_node *last,
             struct npu_value *result, struct npu_node **matched, int nmatched)
{
    npu_graph_insert_before(g, last, n);
    npu_node_set_output(n, 0, result); /* n's fresh output is dropped by the gc below */
    for (int i = 0; i < nmatched; i++)
        if (matched[i] && matched[i]->attached)
            npu_graph_remove(g, matched[i]);
    npu_graph_gc_values(g);
}

struct npu_value *
pass_const_reshaped(struct npu_graph *g, const struct npu_value *v, int ndim, const int64_t *dims)
{
    struct npu_tensor t = v->t;
    t.data = (void *)npu_value_data(v);
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t.dims[i] = dims[i];
    if (npu_tensor_numel(&t) != npu_value_numel(v))
        return NULL;
    return npu_graph_add_const(g, v->name, &t);
}

int
pass_reduce_axes(const struct npu_node *n, int rank, int64_t *axes)
{
    struct npu_value *a = npu_node_in(n, 1);
    if (!a || a->kind != NPU_VALUE_CONST || npu_value_numel(a) < 1 ||
        npu_value_numel(a) > NPU_MAX_DIMS)
        return -1;
    int cnt = (int)npu_value_numel(a);
    for (int i = 0; i < cnt; i++) {
        int64_t x = npu_value_get_i64(a, i);
        if (x < -rank || x >= rank)
            return -1;
        axes[i] = x < 0 ? x + rank : x;
    }
    for (int i = 1; i < cnt; i++) /* insertion sort */
        for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
            int64_t t = axes[j];
            axes[j] = axes[j - 1];
            axes[j - 1] = t;
        }
    return cnt;
}
