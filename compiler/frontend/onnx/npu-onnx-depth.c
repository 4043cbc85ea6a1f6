/* SPDX-License-Identifier: MIT */
/*
 * npu-onnx-depth.c: measures how deeply an ONNX model nests its messages before
 * protobuf-c decodes it. protobuf-c unpacks nested messages recursively with no
 * limit of its own, so a small file of `If` subgraphs nested thousands deep
 * (3,000 levels: 113 KB) overflows the stack inside onnx__model_proto__unpack;
 * the checks after decoding come too late. This scanner walks the wire format
 * iteratively (its stack is on the heap) following only the fields that can
 * recurse (graphs in attributes, nodes in graphs and functions, type protos in
 * value infos and attributes) and refuses a model deeper than the limits of
 * npu-onnx.h. Malformed wire data ends the scan of that message quietly: the
 * decoder reports it properly.
 */
#include <stdint.h>
#include <stdlib.h>

#include "onnx-priv.h"

#define DOM "onnx"
/* Beyond this many levels the scan stops measuring (the model is refused
 * anyway) so that the heap stack stays small for any file size. */
#define MEASURE_CAP 100000

enum msg {
    M_LEAF, /* not followed */
    M_MODEL,
    M_TRAINING,
    M_FUNCTION,
    M_GRAPH,
    M_NODE,
    M_ATTR,
    M_VALUE_INFO,
    M_TYPE,
    M_TYPE_WRAP, /* TypeProto.Sequence / Optional: elem_type = 1 */
    M_TYPE_MAP,  /* TypeProto.Map: value_type = 2 */
};

/* The message type of field `f` (length-delimited) of a message of type m. */
static enum msg
child(enum msg m, uint32_t f)
{
    switch (m) {
    case M_MODEL: return f == 7 ? M_GRAPH : f == 20 ? M_TRAINING : f == 25 ? M_FUNCTION : M_LEAF;
    case M_TRAINING: return f == 1 || f == 2 ? M_GRAPH : M_LEAF;
    case M_FUNCTION: return f == 7 ? M_NODE : f == 11 ? M_ATTR : M_LEAF;
    case M_GRAPH: return f == 1 ? M_NODE : f >= 11 && f <= 13 ? M_VALUE_INFO : M_LEAF;
    case M_NODE: return f == 5 ? M_ATTR : M_LEAF;
    case M_ATTR: return f == 6 || f == 11 ? M_GRAPH : f == 14 || f == 15 ? M_TYPE : M_LEAF;
    case M_VALUE_INFO: return f == 2 ? M_TYPE : M_LEAF;
    case M_TYPE: return f == 4 || f == 9 ? M_TYPE_WRAP : f == 5 ? M_TYPE_MAP : M_LEAF;
    case M_TYPE_WRAP: return f == 1 ? M_TYPE : M_LEAF;
    case M_TYPE_MAP: return f == 2 ? M_TYPE : M_LEAF;
    default: return M_LEAF;
    }
}

static bool
varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && *p < end; s += 7) {
        uint8_t c = *(*p)++;
        *v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

/* Steps over one field at *p; for a length-delimited field returns its payload
 * in [*sp, *se). False on malformed data. */
static bool
skip_field(const uint8_t **p, const uint8_t *end, uint32_t *field, const uint8_t **sp,
           const uint8_t **se)
{
    uint64_t tag, v;
    *sp = *se = NULL;
    if (!varint(p, end, &tag))
        return false;
    *field = (uint32_t)(tag >> 3);
    switch (tag & 7) {
    case 0: return varint(p, end, &v);
    case 1:
        if (end - *p < 8)
            return false;
        *p += 8;
        return true;
    case 5:
        if (end - *p < 4)
            return false;
        *p += 4;
        return true;
    case 2:
        if (!varint(p, end, &v) || v > (uint64_t)(end - *p))
            return false;
        *sp = *p;
        *se = *p + v;
        *p += v;
        return true;
    default: return false;
    }
}

struct frame {
    const uint8_t *p, *end;
    enum msg m;
    int graphs; /* GraphProtos on the path, this one included */
};

enum npu_status
onnx_check_depth(const void *data, size_t len, struct onnx_depth *out)
{
    struct onnx_depth d = {0};
    size_t cap = 64, n = 0;
    struct frame *st = malloc(cap * sizeof(*st));
    if (!st) {
        npu_err(DOM, "out of memory scanning the model's nesting");
        return NPU_ERR_NOMEM;
    }
    st[n++] = (struct frame){.p = data, .end = (const uint8_t *)data + len, .m = M_MODEL};
    enum npu_status rc = NPU_OK;
    while (n) {
        struct frame *f = &st[n - 1];
        if (f->p >= f->end) {
            n--;
            continue;
        }
        uint32_t field;
        const uint8_t *sp, *se;
        if (!skip_field(&f->p, f->end, &field, &sp, &se)) {
            n--; /* malformed: the decoder will say so */
            continue;
        }
        enum msg c = sp ? child(f->m, field) : M_LEAF;
        if (c == M_LEAF)
            continue;
        int graphs = f->graphs + (c == M_GRAPH);
        if ((int)n > d.messages) /* the child's depth: the ModelProto (st[0]) is 0 */
            d.messages = (int)n;
        if (graphs > d.graphs)
            d.graphs = graphs;
        if (n >= MEASURE_CAP) {
            d.capped = true;
            continue;
        }
        if (n == cap) {
            struct frame *ns = realloc(st, 2 * cap * sizeof(*st));
            if (!ns) {
                npu_err(DOM, "out of memory scanning the model's nesting");
                rc = NPU_ERR_NOMEM;
                goto out;
            }
            st = ns;
            cap *= 2;
        }
        st[n++] = (struct frame){.p = sp, .end = se, .m = c, .graphs = graphs};
    }
    if (d.graphs > NPU_ONNX_MAX_GRAPH_DEPTH) {
        npu_err(DOM,
                "model nests subgraphs %s%d deep; the limit is %d (refused before decoding, "
                "deeper nesting would overflow the stack)",
                d.capped ? "at least " : "", d.graphs, NPU_ONNX_MAX_GRAPH_DEPTH);
        rc = NPU_ERR_UNSUPPORTED;
    } else if (d.messages > NPU_ONNX_MAX_MESSAGE_DEPTH) {
        npu_err(DOM,
                "model nests protobuf messages %s%d deep (e.g. sequence types inside sequence "
                "types); the limit is %d (refused before decoding)",
                d.capped ? "at least " : "", d.messages, NPU_ONNX_MAX_MESSAGE_DEPTH);
        rc = NPU_ERR_UNSUPPORTED;
    }
out:
    free(st);
    if (out)
        *out = d;
    return rc;
}
