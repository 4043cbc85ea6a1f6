/* SPDX-License-Identifier: MIT */
/*
 * npu-pbscan.c: the protobuf wire-format scanner of npu-pbscan.h.
 */
#include <stddef.h>

#include "npu-pbscan.h"

static bool
pb_varint(struct npu_pb *b, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && b->p < b->end; s += 7) {
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

static bool
next(struct npu_pb *b, uint32_t *field, struct npu_pb *sub, bool *bad)
{
    uint64_t tag, v;
    *bad = false;
    if (b->p >= b->end)
        return false;
    *bad = true;
    if (!pb_varint(b, &tag))
        return false;
    *field = (uint32_t)(tag >> 3);
    sub->p = sub->end = NULL;
    switch (tag & 7) {
    case 0:
        if (!pb_varint(b, &v))
            return false;
        break;
    case 1:
        if (b->end - b->p < 8)
            return false;
        b->p += 8;
        break;
    case 5:
        if (b->end - b->p < 4)
            return false;
        b->p += 4;
        break;
    case 2:
        if (!pb_varint(b, &v) || v > (uint64_t)(b->end - b->p))
            return false;
        sub->p = b->p;
        sub->end = b->p + v;
        b->p += v;
        break;
    default: return false; /* groups: not used by ONNX */
    }
    *bad = false;
    return true;
}

bool
npu_pb_next(struct npu_pb *b, uint32_t *field, struct npu_pb *sub, bool *bad)
{
    bool dummy;
    return next(b, field, sub, bad ? bad : &dummy);
}
