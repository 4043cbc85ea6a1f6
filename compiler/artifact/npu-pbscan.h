/* SPDX-License-Identifier: MIT */
/*
 * npu-pbscan.h: a minimal protobuf wire-format scanner for the few ONNX fields
 * compiler/artifact reads without the full protobuf-c decode (the model's
 * content hash in npu-build.c, metadata_props in npu-npub-props.c). Bounds are
 * checked on every step; malformed input ends the scan.
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

#endif /* NPU_PBSCAN_H */
