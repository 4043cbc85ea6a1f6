/* SPDX-License-Identifier: MIT */
/*
 * npu-onnx-strip.c: the model's wire format without the main graph's
 * initializer payloads, so that protobuf-c does not copy hundreds of megabytes
 * of weights out of the file only for the importer to copy them again. The
 * copy made here holds every byte of the model except the raw_data fields of
 * ModelProto.graph.initializer[*] (their enclosing lengths re-encoded); the
 * payloads stay where they are in the caller's buffer and are handed back as
 * spans, one per initializer in file order, which the importer puts back into
 * the decoded TensorProtos (so every check on them runs as before). Only
 * well-formed input is rewritten: anything unexpected (a malformed field, the
 * graph field twice, a field of the wrong wire type) leaves the model as it is
 * and protobuf-c decodes (or refuses) the original. Every length read from the
 * file is checked against the end of its enclosing message.
 */
#include <stdlib.h>
#include <string.h>

#include "npu-pbscan.h"
#include "onnx-priv.h"

#define MODEL_GRAPH 7       /* ModelProto.graph */
#define GRAPH_INITIALIZER 5 /* GraphProto.initializer */
#define TENSOR_RAW_DATA 9   /* TensorProto.raw_data */

static size_t
varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *
put_varint(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

/* The size of a TensorProto without its raw_data fields; false if malformed. */
static bool
tensor_size(struct npu_pb t, uint64_t *size)
{
    uint32_t num;
    unsigned wire;
    const uint8_t *start;
    struct npu_pb pl;
    bool bad;
    *size = 0;
    while (npu_pb_field(&t, &num, &wire, &start, &pl, &bad))
        if (!(num == TENSOR_RAW_DATA && wire == 2))
            *size += (uint64_t)(t.p - start);
    return !bad;
}

/* The size of a GraphProto with its initializers stripped, and their count. */
static bool
graph_size(struct npu_pb g, uint64_t *size, size_t *ninit)
{
    uint32_t num;
    unsigned wire;
    const uint8_t *start;
    struct npu_pb pl;
    bool bad;
    *size = 0;
    *ninit = 0;
    while (npu_pb_field(&g, &num, &wire, &start, &pl, &bad)) {
        if (num == GRAPH_INITIALIZER && wire == 2) {
            uint64_t ts;
            if (!tensor_size(pl, &ts))
                return false;
            size_t tag = (size_t)(pl.p - start) - varint_len((uint64_t)(pl.end - pl.p));
            *size += tag + varint_len(ts) + ts;
            (*ninit)++;
        } else {
            *size += (uint64_t)(g.p - start);
        }
    }
    return !bad;
}

/* Writes a length-delimited field: the tag bytes as they were in the file (the
 * start of the field up to its length), the new length, then the content. */
static uint8_t *
put_header(uint8_t *o, const uint8_t *start, const struct npu_pb *pl, uint64_t size)
{
    size_t tag = (size_t)(pl->p - start) - varint_len((uint64_t)(pl->end - pl->p));
    memcpy(o, start, tag);
    return put_varint(o + tag, size);
}

/* A field's length as the file encodes it may be longer than the shortest form
 * (protobuf allows padded varints): the tag ends where the length's encoding
 * starts, which put_header finds from the shortest form of the same value. A
 * padded length is rare and legal; strip_ok refuses such a model (it is
 * decoded as it is). */
static bool
minimal_length(const uint8_t *start, const struct npu_pb *pl)
{
    struct npu_pb b = {start, pl->p};
    uint64_t tag, len;
    if (!npu_pb_varint(&b, &tag) || !npu_pb_varint(&b, &len))
        return false;
    return b.p == pl->p && (size_t)(pl->p - start) == varint_len(tag) + varint_len(len);
}

static bool
tensor_ok(struct npu_pb t)
{
    uint32_t num;
    unsigned wire;
    const uint8_t *start;
    struct npu_pb pl;
    bool bad;
    while (npu_pb_field(&t, &num, &wire, &start, &pl, &bad))
        ;
    return !bad;
}

static bool
graph_ok(struct npu_pb g)
{
    uint32_t num;
    unsigned wire;
    const uint8_t *start;
    struct npu_pb pl;
    bool bad;
    while (npu_pb_field(&g, &num, &wire, &start, &pl, &bad))
        if (num == GRAPH_INITIALIZER && wire == 2 &&
            (!minimal_length(start, &pl) || !tensor_ok(pl)))
            return false;
    return !bad;
}

enum npu_status
onnx_strip_raw(const void *data, size_t len, struct onnx_stripped *out)
{
    memset(out, 0, sizeof(*out));
    struct npu_pb m = {data, (const uint8_t *)data + len};
    uint32_t num;
    unsigned wire;
    const uint8_t *start;
    struct npu_pb pl, gspan = {NULL, NULL};
    const uint8_t *gstart = NULL;
    bool bad;
    int ngraphs = 0;
    while (npu_pb_field(&m, &num, &wire, &start, &pl, &bad))
        if (num == MODEL_GRAPH) {
            ngraphs++;
            gspan = pl;
            gstart = start;
            if (wire != 2)
                return NPU_OK; /* protobuf-c refuses it */
        }
    if (bad || ngraphs != 1 || !minimal_length(gstart, &gspan) || !graph_ok(gspan))
        return NPU_OK; /* left as it is */
    uint64_t gsize;
    size_t ninit;
    if (!graph_size(gspan, &gsize, &ninit) || !ninit)
        return NPU_OK;
    if (ninit > SIZE_MAX / sizeof(*out->raw))
        return NPU_OK;
    uint8_t *buf = malloc(len); /* stripping only shortens */
    struct onnx_raw_span *raw = calloc(ninit, sizeof(*raw));
    if (!buf || !raw) {
        free(buf);
        free(raw);
        npu_err("onnx", "out of memory reading the model");
        return NPU_ERR_NOMEM;
    }
    uint8_t *o = buf;
    /* the ModelProto: every field as it is up to the graph, the stripped graph,
     * every field after it as it is */
    size_t head = (size_t)(gstart - (const uint8_t *)data);
    memcpy(o, data, head);
    o += head;
    o = put_header(o, gstart, &gspan, gsize);
    struct npu_pb g = gspan;
    size_t k = 0;
    while (npu_pb_field(&g, &num, &wire, &start, &pl, &bad)) {
        if (!(num == GRAPH_INITIALIZER && wire == 2)) {
            memcpy(o, start, (size_t)(g.p - start));
            o += g.p - start;
            continue;
        }
        uint64_t ts;
        tensor_size(pl, &ts);
        o = put_header(o, start, &pl, ts);
        struct npu_pb t = pl;
        const uint8_t *tstart;
        struct npu_pb tpl;
        while (npu_pb_field(&t, &num, &wire, &tstart, &tpl, &bad)) {
            if (num == TENSOR_RAW_DATA && wire == 2) {
                /* the last occurrence wins, as in protobuf's decoding */
                raw[k].p = tpl.p;
                raw[k].n = (size_t)(tpl.end - tpl.p);
                raw[k].present = true;
            } else {
                memcpy(o, tstart, (size_t)(t.p - tstart));
                o += t.p - tstart;
            }
        }
        k++;
    }
    size_t tail = (size_t)(m.end - gspan.end);
    memcpy(o, gspan.end, tail);
    o += tail;
    out->buf = buf;
    out->len = (size_t)(o - buf);
    out->raw = raw;
    out->n_raw = ninit;
    return NPU_OK;
}

void
onnx_stripped_free(struct onnx_stripped *s)
{
    free(s->buf);
    free(s->raw);
    memset(s, 0, sizeof(*s));
}
