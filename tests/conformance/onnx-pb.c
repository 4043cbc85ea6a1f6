/* SPDX-License-Identifier: MIT */
/*
 * onnx-pb.c: protobuf wire-format walking for the conformance runner (see
 * onnx-pb.h). Field numbers are those of onnx.proto (ONNX 1.12):
 *   ModelProto      opset_import 8, graph 7, functions 25
 *   OperatorSetId   domain 1, version 2
 *   GraphProto      node 1, initializer 5, input 11, output 12
 *   NodeProto       op_type 4, attribute 5, domain 7
 *   AttributeProto  g 6, graphs 11
 *   ValueInfoProto  name 1, type 2
 *   TypeProto       tensor_type 1 (elem_type 1, shape 2), sequence 4, map 5,
 *                   sparse_tensor 8, optional 9
 *   TensorShape     dim 1 (dim_value 1, dim_param 2)
 *   TensorProto     dims 1, data_type 2, float_data 4, int32_data 5,
 *                   string_data 6, int64_data 7, name 8, raw_data 9,
 *                   double_data 10, uint64_data 11, data_location 14
 * Every length is checked against the enclosing message.
 */
#include "onnx-pb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pb {
    const uint8_t *p, *end;
};

struct pb_field {
    uint32_t num;
    int wt;       /* 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
    uint64_t v;   /* varint or fixed value */
    struct pb sub; /* wt 2 */
};

static bool
pb_varint(struct pb *b, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            return false;
        uint8_t c = *b->p++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* Next field of b into f; false at the end (*err set on malformed data). */
static bool
pb_next(struct pb *b, struct pb_field *f, bool *err)
{
    uint64_t key;
    if (b->p >= b->end)
        return false;
    if (!pb_varint(b, &key))
        goto bad;
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    switch (f->wt) {
    case 0:
        if (!pb_varint(b, &f->v))
            goto bad;
        return true;
    case 1:
        if (b->end - b->p < 8)
            goto bad;
        memcpy(&f->v, b->p, 8);
        b->p += 8;
        return true;
    case 5: {
        uint32_t w;
        if (b->end - b->p < 4)
            goto bad;
        memcpy(&w, b->p, 4);
        f->v = w;
        b->p += 4;
        return true;
    }
    case 2: {
        uint64_t n;
        if (!pb_varint(b, &n) || n > (uint64_t)(b->end - b->p))
            goto bad;
        f->sub.p = b->p;
        f->sub.end = b->p + n;
        b->p += n;
        return true;
    }
    default:
        goto bad;
    }
bad:
    *err = true;
    return false;
}

static void
pb_copy_str(const struct pb *s, char *dst, size_t cap)
{
    size_t n = (size_t)(s->end - s->p);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s->p, n);
    dst[n] = '\0';
}

static const struct {
    int code;
    const char *name;
    enum npu_dtype dt;
} onnx_types[] = {
    {1, "float", NPU_DTYPE_FP32},     {2, "uint8", NPU_DTYPE_UINT8},
    {3, "int8", NPU_DTYPE_INT8},      {4, "uint16", NPU_DTYPE_UINT16},
    {5, "int16", NPU_DTYPE_INT16},    {6, "int32", NPU_DTYPE_INT32},
    {7, "int64", NPU_DTYPE_INT64},    {8, "string", NPU_DTYPE_UNDEFINED},
    {9, "bool", NPU_DTYPE_BOOL},      {10, "float16", NPU_DTYPE_FP16},
    {11, "double", NPU_DTYPE_FP64},   {12, "uint32", NPU_DTYPE_UINT32},
    {13, "uint64", NPU_DTYPE_UINT64}, {14, "complex64", NPU_DTYPE_UNDEFINED},
    {15, "complex128", NPU_DTYPE_UNDEFINED}, {16, "bfloat16", NPU_DTYPE_UNDEFINED},
};

enum npu_dtype
pb_onnx_dtype(int elem_type)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(onnx_types); i++)
        if (onnx_types[i].code == elem_type)
            return onnx_types[i].dt;
    return NPU_DTYPE_UNDEFINED;
}

const char *
pb_onnx_type_name(int elem_type)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(onnx_types); i++)
        if (onnx_types[i].code == elem_type)
            return onnx_types[i].name;
    return "unknown";
}

/* ---- ModelProto summary ---- */

static enum npu_status
add_op(struct pb_model *m, const char *domain, const char *op)
{
    char key[PB_NAME];
    if (!domain[0] || !strcmp(domain, "ai.onnx"))
        snprintf(key, sizeof(key), "%s", op);
    else
        snprintf(key, sizeof(key), "%s:%s", domain, op);
    for (int i = 0; i < m->nops; i++)
        if (!strcmp(m->ops[i], key))
            return NPU_OK;
    if (m->nops >= PB_MAX_OPS)
        return NPU_ERR_UNSUPPORTED;
    snprintf(m->ops[m->nops++], PB_NAME, "%s", key);
    return NPU_OK;
}

static enum npu_status
parse_type(struct pb s, struct pb_io *io)
{
    struct pb_field f;
    bool err = false;
    io->ndim = -1;
    while (pb_next(&s, &f, &err)) {
        if (f.num != 1 || f.wt != 2)
            continue; /* sequence/map/optional/sparse: not a tensor */
        io->is_tensor = true;
        struct pb_field g;
        struct pb t = f.sub;
        while (pb_next(&t, &g, &err)) {
            if (g.num == 1 && g.wt == 0) {
                io->elem_type = (int)g.v;
            } else if (g.num == 2 && g.wt == 2) {
                io->ndim = 0;
                struct pb_field d;
                struct pb sh = g.sub;
                while (pb_next(&sh, &d, &err)) {
                    if (d.num != 1 || d.wt != 2)
                        continue;
                    if (io->ndim >= NPU_MAX_DIMS)
                        return NPU_ERR_UNSUPPORTED;
                    int k = io->ndim++;
                    io->dims[k] = -1;
                    io->params[k][0] = '\0';
                    struct pb_field e;
                    struct pb dim = d.sub;
                    while (pb_next(&dim, &e, &err)) {
                        if (e.num == 1 && e.wt == 0)
                            io->dims[k] = (int64_t)e.v;
                        else if (e.num == 2 && e.wt == 2)
                            pb_copy_str(&e.sub, io->params[k], PB_NAME);
                    }
                }
            }
        }
    }
    return err ? NPU_ERR_CORRUPT : NPU_OK;
}

static enum npu_status
parse_value_info(struct pb s, struct pb_io *io)
{
    struct pb_field f;
    bool err = false;
    enum npu_status st;
    memset(io, 0, sizeof(*io));
    io->ndim = -1;
    while (pb_next(&s, &f, &err)) {
        if (f.num == 1 && f.wt == 2)
            pb_copy_str(&f.sub, io->name, PB_NAME);
        else if (f.num == 2 && f.wt == 2 && (st = parse_type(f.sub, io)))
            return st;
    }
    return err ? NPU_ERR_CORRUPT : NPU_OK;
}

static enum npu_status parse_graph(struct pb s, struct pb_model *m, bool top);

static enum npu_status
parse_node(struct pb s, struct pb_model *m)
{
    struct pb_field f;
    bool err = false;
    char op[PB_NAME] = "", domain[PB_NAME] = "";
    enum npu_status st;
    while (pb_next(&s, &f, &err)) {
        if (f.num == 4 && f.wt == 2) {
            pb_copy_str(&f.sub, op, sizeof(op));
        } else if (f.num == 7 && f.wt == 2) {
            pb_copy_str(&f.sub, domain, sizeof(domain));
        } else if (f.num == 5 && f.wt == 2) {
            struct pb_field a;
            struct pb attr = f.sub;
            while (pb_next(&attr, &a, &err)) {
                if ((a.num == 6 || a.num == 11) && a.wt == 2) {
                    m->has_subgraphs = true;
                    if ((st = parse_graph(a.sub, m, false)))
                        return st;
                }
            }
        }
    }
    if (err)
        return NPU_ERR_CORRUPT;
    return add_op(m, domain, op);
}

static enum npu_status
parse_graph(struct pb s, struct pb_model *m, bool top)
{
    struct pb_field f;
    bool err = false;
    enum npu_status st;
    /* Initializer names, to drop them from the inputs (IR < 4 lists both). */
    char (*inits)[PB_NAME] = NULL;
    int ninits = 0, cap = 0;
    struct pb_io *ins = NULL;
    int nins = 0;

    if (top) {
        ins = calloc(PB_MAX_IO, sizeof(*ins));
        if (!ins)
            return NPU_ERR_NOMEM;
    }
    st = NPU_OK;
    while (pb_next(&s, &f, &err)) {
        if (f.wt != 2)
            continue;
        if (f.num == 1) {
            if ((st = parse_node(f.sub, m)))
                break;
        } else if (!top) {
            continue;
        } else if (f.num == 5) {
            if (ninits == cap) {
                cap = cap ? cap * 2 : 16;
                void *n = realloc(inits, (size_t)cap * sizeof(*inits));
                if (!n) {
                    st = NPU_ERR_NOMEM;
                    break;
                }
                inits = n;
            }
            /* TensorProto.name is field 8. */
            struct pb_field g;
            struct pb t = f.sub;
            inits[ninits][0] = '\0';
            while (pb_next(&t, &g, &err))
                if (g.num == 8 && g.wt == 2)
                    pb_copy_str(&g.sub, inits[ninits], PB_NAME);
            ninits++;
        } else if (f.num == 11 || f.num == 12) {
            bool in = f.num == 11;
            int *n = in ? &nins : &m->noutputs;
            if (*n >= PB_MAX_IO) {
                st = NPU_ERR_UNSUPPORTED;
                break;
            }
            struct pb_io *io = in ? &ins[*n] : &m->outputs[*n];
            if ((st = parse_value_info(f.sub, io)))
                break;
            (*n)++;
        }
    }
    if (!st && err)
        st = NPU_ERR_CORRUPT;
    if (top && !st) {
        for (int i = 0; i < nins; i++) {
            bool init = false;
            for (int j = 0; j < ninits && !init; j++)
                init = !strcmp(inits[j], ins[i].name);
            if (!init)
                m->inputs[m->ninputs++] = ins[i];
        }
    }
    free(inits);
    free(ins);
    return st;
}

enum npu_status
pb_model_summary(const uint8_t *buf, size_t len, struct pb_model *m)
{
    struct pb s = {buf, buf + len};
    struct pb_field f;
    bool err = false, have_graph = false;
    enum npu_status st;
    memset(m, 0, sizeof(*m));
    while (pb_next(&s, &f, &err)) {
        if (f.num == 8 && f.wt == 2) {
            char domain[PB_NAME] = "";
            int64_t version = 0;
            struct pb_field g;
            struct pb o = f.sub;
            while (pb_next(&o, &g, &err)) {
                if (g.num == 1 && g.wt == 2)
                    pb_copy_str(&g.sub, domain, sizeof(domain));
                else if (g.num == 2 && g.wt == 0)
                    version = (int64_t)g.v;
            }
            if (!domain[0] || !strcmp(domain, "ai.onnx"))
                m->opset = version;
        } else if (f.num == 7 && f.wt == 2) {
            if ((st = parse_graph(f.sub, m, true)))
                return st;
            have_graph = true;
        } else if (f.num == 25 && f.wt == 2) {
            m->has_functions = true;
        }
    }
    if (err || !have_graph)
        return NPU_ERR_CORRUPT;
    return NPU_OK;
}

/* ---- TensorProto ---- */

/* Stores element k of a typed (non-raw) field into t. */
static void
store_elem(struct npu_tensor *t, int64_t k, uint64_t v)
{
    void *d = t->data;
    switch (t->dtype) {
    case NPU_DTYPE_FP32: { uint32_t w = (uint32_t)v; memcpy((float *)d + k, &w, 4); break; }
    case NPU_DTYPE_FP64: memcpy((double *)d + k, &v, 8); break;
    case NPU_DTYPE_INT64: case NPU_DTYPE_UINT64: ((uint64_t *)d)[k] = v; break;
    case NPU_DTYPE_INT32: case NPU_DTYPE_UINT32: ((uint32_t *)d)[k] = (uint32_t)v; break;
    case NPU_DTYPE_INT16: case NPU_DTYPE_UINT16: case NPU_DTYPE_FP16:
        ((uint16_t *)d)[k] = (uint16_t)v;
        break;
    case NPU_DTYPE_INT8: case NPU_DTYPE_UINT8: case NPU_DTYPE_BOOL:
        ((uint8_t *)d)[k] = (uint8_t)v;
        break;
    default: break;
    }
}

/* The typed field a dtype's values live in when raw_data is absent. */
static uint32_t
typed_field(enum npu_dtype dt)
{
    switch (dt) {
    case NPU_DTYPE_FP32: return 4;
    case NPU_DTYPE_INT64: return 7;
    case NPU_DTYPE_FP64: return 10;
    case NPU_DTYPE_UINT32: case NPU_DTYPE_UINT64: return 11;
    default: return 5; /* int32_data: int8/16/32, uint8/16, bool, float16 bits */
    }
}

enum npu_status
pb_read_tensor(const uint8_t *buf, size_t len, struct npu_tensor *t, char *name, int *elem_type)
{
    struct pb s = {buf, buf + len};
    struct pb_field f;
    bool err = false;
    int et = 0, ndim = 0;
    int64_t dims[NPU_MAX_DIMS];
    struct pb raw = {NULL, NULL};
    bool have_raw = false, external = false;

    memset(t, 0, sizeof(*t));
    if (name)
        name[0] = '\0';
    /* Pass 1: type, shape, name, raw data. */
    while (pb_next(&s, &f, &err)) {
        if (f.num == 1 && f.wt == 0) {
            if (ndim >= NPU_MAX_DIMS)
                return NPU_ERR_UNSUPPORTED;
            dims[ndim++] = (int64_t)f.v;
        } else if (f.num == 1 && f.wt == 2) {
            struct pb p = f.sub;
            uint64_t v;
            while (p.p < p.end) {
                if (!pb_varint(&p, &v))
                    return NPU_ERR_CORRUPT;
                if (ndim >= NPU_MAX_DIMS)
                    return NPU_ERR_UNSUPPORTED;
                dims[ndim++] = (int64_t)v;
            }
        } else if (f.num == 2 && f.wt == 0) {
            et = (int)f.v;
        } else if (f.num == 8 && f.wt == 2 && name) {
            pb_copy_str(&f.sub, name, PB_NAME);
        } else if (f.num == 9 && f.wt == 2) {
            raw = f.sub;
            have_raw = true;
        } else if (f.num == 14 && f.wt == 0 && f.v == 1) {
            external = true;
        }
    }
    if (err)
        return NPU_ERR_CORRUPT;
    if (elem_type)
        *elem_type = et;
    enum npu_dtype dt = pb_onnx_dtype(et);
    if (dt == NPU_DTYPE_UNDEFINED || external)
        return NPU_ERR_UNSUPPORTED;
    t->dtype = dt;
    t->ndim = ndim;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndim);
    int64_t n = npu_tensor_numel(t), nb = npu_tensor_nbytes(t);
    if (n < 0 || nb < 0 || nb > ((int64_t)1 << 34))
        return NPU_ERR_CORRUPT;
    t->data = aligned_alloc(64, NPU_ALIGN((size_t)nb + 1, (size_t)64));
    if (!t->data)
        return NPU_ERR_NOMEM;
    if (have_raw) {
        if ((int64_t)(raw.end - raw.p) != nb)
            goto corrupt;
        memcpy(t->data, raw.p, (size_t)nb);
        return NPU_OK;
    }
    /* Pass 2: the typed field, packed or not. */
    uint32_t want = typed_field(dt);
    int64_t k = 0;
    s.p = buf;
    while (pb_next(&s, &f, &err)) {
        if (f.num != want)
            continue;
        if (f.wt == 2) {
            struct pb p = f.sub;
            while (p.p < p.end) {
                uint64_t v;
                if (want == 4 || want == 10) { /* packed fixed32 / fixed64 */
                    size_t w = want == 4 ? 4 : 8;
                    if ((size_t)(p.end - p.p) < w)
                        goto corrupt;
                    v = 0;
                    memcpy(&v, p.p, w);
                    p.p += w;
                } else if (!pb_varint(&p, &v)) {
                    goto corrupt;
                }
                if (k >= n)
                    goto corrupt;
                store_elem(t, k++, v);
            }
        } else {
            if (k >= n)
                goto corrupt;
            store_elem(t, k++, f.v);
        }
    }
    if (err || k != n)
        goto corrupt;
    return NPU_OK;
corrupt:
    free(t->data);
    t->data = NULL;
    return NPU_ERR_CORRUPT;
}

enum npu_status
pb_slurp(const char *path, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NPU_ERR_IO;
    if (fseek(f, 0, SEEK_END) < 0) {
        fclose(f);
        return NPU_ERR_IO;
    }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) < 0) {
        fclose(f);
        return NPU_ERR_IO;
    }
    uint8_t *b = malloc((size_t)n + 1);
    if (!b) {
        fclose(f);
        return NPU_ERR_NOMEM;
    }
    if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        fclose(f);
        return NPU_ERR_IO;
    }
    fclose(f);
    *buf = b;
    *len = (size_t)n;
    return NPU_OK;
}
