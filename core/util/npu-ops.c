/* SPDX-License-Identifier: MIT */
/* npu-ops.c: op name table and attribute getters (see npu-ops.h). */
#include "npu/npu-ops.h"

#include <string.h>

#include "npu/npu-common.h"

static const char *const op_names[NPU_OP_COUNT] = {[NPU_OP_NONE] = "?",
#define NPU_OP_NAME(e, n) [NPU_OP_##e] = n,
                                                   NPU_OP_LIST(NPU_OP_NAME)
#undef NPU_OP_NAME
};

const char *
npu_op_name(enum npu_op op)
{
    return (unsigned)op < NPU_OP_COUNT ? op_names[op] : "?";
}

bool
npu_op_is_rk(enum npu_op op)
{
    const char *nm = npu_op_name(op);
    return nm[0] == 'r' && nm[1] == 'k' && nm[2] == '.';
}

enum npu_op
npu_op_from_name(const char *name)
{
    for (int i = 1; i < NPU_OP_COUNT; i++)
        if (!strcmp(op_names[i], name))
            return (enum npu_op)i;
    return NPU_OP_NONE;
}

const struct npu_attr *
npu_attrs_find(const struct npu_attrs *a, const char *name)
{
    if (!a)
        return NULL;
    /* kernels look attributes up at every run: the first byte rules out most names without a
     * strcmp call */
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].name && a->v[i].name[0] == name[0] && !strcmp(a->v[i].name, name))
            return &a->v[i];
    return NULL;
}

int64_t
npu_attrs_int(const struct npu_attrs *a, const char *name, int64_t def)
{
    const struct npu_attr *at = npu_attrs_find(a, name);
    return at && at->type == NPU_ATTR_INT ? at->i : def;
}

float
npu_attrs_float(const struct npu_attrs *a, const char *name, float def)
{
    const struct npu_attr *at = npu_attrs_find(a, name);
    if (!at)
        return def;
    if (at->type == NPU_ATTR_FLOAT)
        return at->f;
    if (at->type == NPU_ATTR_INT)
        return (float)at->i;
    return def;
}

const char *
npu_attrs_string(const struct npu_attrs *a, const char *name, const char *def)
{
    const struct npu_attr *at = npu_attrs_find(a, name);
    return at && at->type == NPU_ATTR_STRING ? at->s : def;
}

const int64_t *
npu_attrs_ints(const struct npu_attrs *a, const char *name, size_t *n)
{
    const struct npu_attr *at = npu_attrs_find(a, name);
    if (at && at->type == NPU_ATTR_INTS) {
        *n = at->n;
        return at->ints;
    }
    *n = 0;
    return NULL;
}

const float *
npu_attrs_floats(const struct npu_attrs *a, const char *name, size_t *n)
{
    const struct npu_attr *at = npu_attrs_find(a, name);
    if (at && at->type == NPU_ATTR_FLOATS) {
        *n = at->n;
        return at->floats;
    }
    *n = 0;
    return NULL;
}

const struct npu_tensor *
npu_attrs_tensor(const struct npu_attrs *a, const char *name)
{
    const struct npu_attr *at = npu_attrs_find(a, name);
    return at && at->type == NPU_ATTR_TENSOR ? at->t : NULL;
}
