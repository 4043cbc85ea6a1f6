/* SPDX-License-Identifier: MIT */
/*
 * npu-verify.c: the IR verifier, run between passes in debug builds and on
 * every graph the text parser produces. It checks structure (each value
 * defined once, nodes in topological order, no edge to a value that is not in
 * the graph, producer back-pointers consistent) and types (by re-running shape
 * inference on each node and comparing with what the graph records), and logs
 * every problem it finds rather than only the first.
 */
#include <stdlib.h>

#include "ir-priv.h"

#define DOM "verify"

enum npu_status ir_infer_node(struct npu_graph *g, struct npu_node *n, bool eval);

static bool
same_shape(const struct npu_tensor *a, const struct npu_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

static void
shape_str(const struct npu_tensor *t, char *buf, size_t n)
{
    size_t o = (size_t)snprintf(buf, n, "%s[", npu_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (o < n)
        snprintf(buf + o, n - o, "]");
}

enum npu_status
npu_graph_verify(struct npu_graph *g)
{
    int errors = 0;
    /* state: 0 = not yet defined, 1 = defined */
    char *defined = calloc((size_t)g->next_value_id + 1, 1);
    char *in_graph = calloc((size_t)g->next_value_id + 1, 1);
    if (!defined || !in_graph) {
        free(defined);
        free(in_graph);
        return NPU_ERR_NOMEM;
    }
    for (int i = 0; i < g->nvalues; i++) {
        struct npu_value *v = g->values[i];
        if (v->id < 0 || v->id >= g->next_value_id) {
            npu_err(DOM, "value '%s' has a bad id", v->name);
            errors++;
            continue;
        }
        in_graph[v->id] = 1;
        if (npu_graph_find_value(g, v->name) != v) {
            npu_err(DOM, "value '%s' is not registered under its name", v->name);
            errors++;
        }
        if (v->kind != NPU_VALUE_NODE) {
            defined[v->id] = 1;
            if (v->t.dtype == NPU_DTYPE_UNDEFINED || npu_tensor_nbytes(&v->t) < 0) {
                npu_err(DOM, "%s '%s' has no valid type",
                        v->kind == NPU_VALUE_CONST ? "constant" : "input", v->name);
                errors++;
            }
            if (v->kind == NPU_VALUE_CONST && !v->t.data && npu_tensor_numel(&v->t) > 0) {
                npu_err(DOM, "constant '%s' has no data", v->name);
                errors++;
            }
            if (v->producer) {
                npu_err(DOM, "%s '%s' has a producer",
                        v->kind == NPU_VALUE_CONST ? "constant" : "input", v->name);
                errors++;
            }
        }
    }
    for (int i = 0; i < g->ninputs; i++)
        if (g->inputs[i]->kind != NPU_VALUE_INPUT) {
            npu_err(DOM, "graph input '%s' is not an input value", g->inputs[i]->name);
            errors++;
        }
    int count = 0;
    struct npu_node *prev = NULL;
    npu_graph_for_each_node (g, n) {
        count++;
        if (n->prev != prev) {
            ir_node_err(n, "node list is corrupt (prev link)");
            errors++;
        }
        prev = n;
        if (n->op <= NPU_OP_NONE || n->op >= NPU_OP_COUNT) {
            ir_node_err(n, "invalid op %d", (int)n->op);
            errors++;
            continue;
        }
        for (int i = 0; i < n->nin; i++) {
            struct npu_value *v = n->in[i];
            if (!v)
                continue;
            if (v->id < 0 || v->id >= g->next_value_id || !in_graph[v->id]) {
                ir_node_err(n, "input %d ('%s') is not a value of the graph", i, v->name);
                errors++;
            } else if (!defined[v->id]) {
                ir_node_err(n, "input %d ('%s') is used before it is defined%s", i, v->name,
                            v->producer ? " (nodes out of topological order)" : " (dangling)");
                errors++;
            }
        }
        for (int i = 0; i < n->nout; i++) {
            struct npu_value *v = n->out[i];
            if (!v || v->id < 0 || v->id >= g->next_value_id || !in_graph[v->id]) {
                ir_node_err(n, "output %d is not a value of the graph", i);
                errors++;
                continue;
            }
            if (defined[v->id]) {
                ir_node_err(n, "output '%s' is defined more than once", v->name);
                errors++;
            }
            if (v->kind != NPU_VALUE_NODE || v->producer != n || v->producer_idx != i) {
                ir_node_err(n, "output '%s' does not point back to its producer", v->name);
                errors++;
            }
            defined[v->id] = 1;
        }
        /* Re-infer into saved copies and compare. */
        struct npu_tensor saved[64];
        int nsave = n->nout < 64 ? n->nout : 64;
        for (int i = 0; i < nsave; i++)
            saved[i] = n->out[i]->t;
        enum npu_status st = ir_infer_node(g, n, false);
        for (int i = 0; i < nsave; i++) {
            struct npu_tensor inferred = n->out[i]->t;
            n->out[i]->t = saved[i];
            if (!st && !same_shape(&inferred, &saved[i])) {
                char a[160], b[160];
                shape_str(&saved[i], a, sizeof(a));
                shape_str(&inferred, b, sizeof(b));
                ir_node_err(n, "output '%s' is recorded as %s but infers as %s", n->out[i]->name, a,
                            b);
                errors++;
            }
        }
        if (st)
            errors++;
    }
    if (count != g->nnodes) {
        npu_err(DOM, "node count %d disagrees with the list (%d)", g->nnodes, count);
        errors++;
    }
    if (prev != g->tail) {
        npu_err(DOM, "node list tail is wrong");
        errors++;
    }
    for (int i = 0; i < g->noutputs; i++) {
        struct npu_value *v = g->outputs[i];
        if (!in_graph[v->id] || !defined[v->id]) {
            npu_err(DOM, "graph output '%s' is not defined", v->name);
            errors++;
        }
    }
    for (int i = 0; i < g->nvalues; i++) {
        struct npu_value *v = g->values[i];
        if (v->kind == NPU_VALUE_NODE && v->producer && !v->producer->attached) {
            npu_err(DOM, "value '%s' is produced by a node that is not in the graph", v->name);
            errors++;
        }
    }
    free(defined);
    free(in_graph);
    if (errors) {
        npu_err(DOM, "graph '%s': %d problem%s", g->name, errors, errors > 1 ? "s" : "");
        return NPU_ERR_INTERNAL;
    }
    return NPU_OK;
}
