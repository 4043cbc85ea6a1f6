/* SPDX-License-Identifier: MIT */
/*
 * npu-pbscan.h: a minimal protobuf wire-format scanner for the few ONNX fields
 * read without the full protobuf-c decode (the initializer payloads the importer
 * keeps out of protobuf-c in npu-onnx-strip.c, the model's content hash in
 * npu-build.c, metadata_props in npu-npub-props.c). It lives in the front end,
 * the earliest stage that reads ONNX bytes. Bounds are checked on every step;
 * malformed input ends the scan.
 */
#ifndef NPU_PBSCAN_H
#define NPU_PBSCAN_H

#include <stdbool.h>
#include <stdint.h>

struct npu_pb {
    const uint8_t *p, *end;
};

/* Next field of b: its number, and for a length-delimited field its payload in
 * *sub (else sub->p = NULL). False at the end or on malformed input; *bad (may
 * be NULL) tells which. */
bool npu_pb_next(struct npu_pb *b, uint32_t *field, struct npu_pb *sub, bool *bad);

/* The same with the field's wire type and its whole encoding [*start, b->p);
 * *bad must not be NULL. */
bool npu_pb_field(struct npu_pb *b, uint32_t *num, unsigned *wire, const uint8_t **start,
                  struct npu_pb *payload, bool *bad);

/* One base-128 varint of b; false if b ends first or it runs past 64 bits. */
bool npu_pb_varint(struct npu_pb *b, uint64_t *v);

#endif /* NPU_PBSCAN_H */
