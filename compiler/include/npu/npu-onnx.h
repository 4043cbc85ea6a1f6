/* SPDX-License-Identifier: MIT */
/*
 * npu-onnx.h: ONNX front end. Reads an ONNX model (opsets 1 to 21 of the
 * default domain) into an IR graph whose ops are all in their newest ONNX form
 * (docs/onnx-import.md lists the upgrades), with every dim concrete: symbolic
 * input dims are bound from `dim_values` or default to 1. Untrusted input is
 * the normal case: bad files give NPU_ERR_CORRUPT / INVALID / UNSUPPORTED /
 * VERSION with a logged message naming the node (name and op) or tensor and
 * the problem.
 */
#ifndef NPU_ONNX_H
#define NPU_ONNX_H

#include <stddef.h>

#include "npu/npu-common.h"
#include "npu/npu-ir.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_onnx_options {
    /* "batch=1,seq=64": values for symbolic (dim_param) input dims. An entry
     * "<input>:<axis>=N" sizes that axis when it is symbolic or unnamed, and a
     * dim_param not listed by name takes it (so other inputs with that dim
     * agree; two axes giving one name different values are refused).
     * Unlisted symbolic dims become 1. NULL = all 1. */
    const char *dim_values;
    /* Folder that external-data locations are relative to. npu_onnx_load uses
     * the model file's folder when this is NULL; npu_onnx_import refuses
     * external data when it is NULL. */
    const char *base_dir;
    /* Refuse a plain name in dim_values ("batch=4") that is the dim_param of
     * no graph input; off, it is logged at info level and ignored. */
    bool strict_dims;
};

/* Nesting limits, checked on the wire format before protobuf-c decodes the
 * model (its decoder recurses once per nested message with no limit, so a
 * deeper file would overflow the stack): subgraphs (If/Loop/Scan bodies)
 * inside subgraphs, and protobuf messages of any kind inside one another. A
 * model at the limits decodes on a thread with a 256 KB stack: protobuf-c
 * needs ~1.25 KB of stack per level (measured: 204 levels overflow 256 KB),
 * so 128 levels leave half the stack to the caller. Real models nest a few
 * levels. */
#define NPU_ONNX_MAX_GRAPH_DEPTH 32
#define NPU_ONNX_MAX_MESSAGE_DEPTH 128

/* Reads and imports a .onnx file. *out is NULL on failure. */
enum npu_status npu_onnx_load(const char *path, const struct npu_onnx_options *opts,
                              struct npu_graph **out);
/* Imports a model from memory (the fuzz target's entry point). */
enum npu_status npu_onnx_import(const void *data, size_t len, const struct npu_onnx_options *opts,
                                struct npu_graph **out);

/* Reads one serialized TensorProto (the input_*.pb / output_*.pb files of ONNX
 * test data sets). On success out->data is malloc'd (free() it) and *name, if
 * name is non-NULL, is a malloc'd copy of the tensor's name ("" if none). */
enum npu_status npu_onnx_read_tensor(const char *path, struct npu_tensor *out, char **name);
enum npu_status npu_onnx_parse_tensor(const void *data, size_t len, struct npu_tensor *out,
                                      char **name);

/* Writes g as an ONNX model (ir_version 8, default-domain opset `opset`): nodes,
 * constants as initializers, inputs and outputs with their types and shapes. g
 * must hold standard ONNX ops only: an npu.* or rk.* op or an npu_* fusion
 * attribute is refused (NPU_ERR_UNSUPPORTED, logged with the node). */
enum npu_status npu_onnx_save(const struct npu_graph *g, int opset, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* NPU_ONNX_H */
