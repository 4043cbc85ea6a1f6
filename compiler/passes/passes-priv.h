/* SPDX-License-Identifier: MIT */
/* passes-priv.h: pattern-matching helpers shared by the passes (not public). */
#ifndef NPU_PASSES_PRIV_H
#define NPU_PASSES_PRIV_H

#include "ir-priv.h"
#include "npu/npu-passes.h"

/* Producer of v if it is a node output with op `op` (any op when op is NONE). */
static inline struct npu_node *
producer_op(const struct npu_value *v, enum npu_op op)
{
    if (!v || v->kind != NPU_VALUE_NODE || !v->producer)
        return NULL;
    return op == NPU_OP_NONE || v->producer->op == op ? v->producer : NULL;
}

/* v is used by exactly one node input and is not a graph output. */
static inline bool
single_use(const struct npu_value *v)
{
    return v && v->nusers == 1 && !v->is_output;
}

static inline struct npu_node *
sole_user(const struct npu_value *v, enum npu_op op)
{
    if (!single_use(v))
        return NULL;
    return op == NPU_OP_NONE || v->users[0]->op == op ? v->users[0] : NULL;
}

/* For a two-input node using v, the other operand (NULL if v is not an input
 * or is both). */
static inline struct npu_value *
other_operand(const struct npu_node *n, const struct npu_value *v)
{
    if (n->nin != 2)
        return NULL;
    if (n->in[0] == v && n->in[1] != v)
        return n->in[1];
    if (n->in[1] == v && n->in[0] != v)
        return n->in[0];
    return NULL;
}

/* Relative tolerance for matching a constant against a mathematical value, by
 * the precision the constant was stored in. */
static inline double
const_tol(enum npu_dtype dt)
{
    return dt == NPU_DTYPE_FP16 ? 2e-3 : 1e-5;
}

/* v is a constant whose every element is x (within the dtype's tolerance). */
static inline bool
is_const_val(const struct npu_value *v, double x)
{
    return v && v->kind == NPU_VALUE_CONST &&
           npu_value_is_scalar_const(v, x, const_tol(v->t.dtype));
}

static inline bool
is_const_scalar(const struct npu_value *v)
{
    return v && v->kind == NPU_VALUE_CONST && npu_value_numel(v) == 1;
}

/* Inserts `n` before `last`, makes it define `result` (output 0), removes the
 * matched nodes and refreshes use lists. */
void pass_replace(struct npu_graph *g, struct npu_node *n, struct npu_node *last,
                  struct npu_value *result, struct npu_node **matched, int nmatched);

/* A constant copy of v's data reshaped to ndim/dims (same element count). */
struct npu_value *pass_const_reshaped(struct npu_graph *g, const struct npu_value *v, int ndim,
                                      const int64_t *dims);

/* Sorted, normalised axes of a Reduce node (from its constant axes input);
 * returns the count or -1 if not constant / empty. */
int pass_reduce_axes(const struct npu_node *n, int rank, int64_t *axes);

/* npu_act name of an activation op ("relu", "gelu_tanh", ...), NULL if none. */
const char *pass_act_name(enum npu_op op);

#endif /* NPU_PASSES_PRIV_H */
