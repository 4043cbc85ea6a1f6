/* SPDX-License-Identifier: MIT */
/*
 * npu-pbscan.c: the protobuf wire-format scanner of npu-pbscan.h.
 */
#include <stddef.h>

#include "npu-pbscan.h"

bool
npu_pb_varint(struct npu_pb *b, uint64_t *v)
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

bool
npu_pb_field(struct npu_pb *b, uint32_t *num, unsigned *wire, const uint8_t **start,
             struct npu_pb *payload, bool *bad)
{
    uint64_t tag, v;
    *bad = false;
    if (b->p >= b->end)
        return false;
    *bad = true;
    *start = b->p;
    /* field 0 does not exist in protobuf: protobuf-c refuses it too */
    if (!npu_pb_varint(b, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX)
        return false;
    *num = (uint32_t)(tag >> 3);
    *wire = (unsigned)(tag & 7);
    payload->p = payload->end = NULL;
    switch (*wire) {
    case 0:
        if (!npu_pb_varint(b, &v))
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
        if (!npu_pb_varint(b, &v) || v > (uint64_t)(b->end - b->p))
            return false;
        payload->p = b->p;
        payload->end = b->p + v;
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
    unsigned wire;
    const uint8_t *start;
    return npu_pb_field(b, field, &wire, &start, sub, bad ? bad : &dummy);
}
