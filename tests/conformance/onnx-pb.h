/* SPDX-License-Identifier: MIT */
/*
 * onnx-pb.h: the conformance runner's own, minimal reader of ONNX protobuf
 * files: a summary of a ModelProto (which ops, domains and opsets it uses,
 * its graph inputs and outputs) and TensorProto .pb files (the test data).
 *
 * It is deliberately independent of the compiler's importer: the runner must
 * decide scope for models the importer may reject, and the expected outputs
 * must not be decoded by the code under test.
 */
#ifndef ONNX_PB_H
#define ONNX_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"
#include "npu/npu-tensor.h"

#define PB_MAX_OPS 64
#define PB_MAX_IO 32
#define PB_NAME 128

struct pb_io {
    char name[PB_NAME];
    int elem_type;  /* TensorProto.DataType, 0 if not a tensor */
    bool is_tensor; /* TypeProto.tensor_type (not sequence/map/optional/sparse) */
    int ndim;       /* -1: no shape given */
    int64_t dims[NPU_MAX_DIMS];
    char params[NPU_MAX_DIMS][PB_NAME]; /* dim_param, "" when dims[i] is a value */
};

/* Inputs of ops whose values fix output shapes (Reshape's shape, Slice's
 * starts, Resize's scales, ...): see pb_shape_operand(). */
#define PB_MAX_SHAPE_OPERANDS PB_MAX_IO

struct pb_model {
    int64_t opset;                   /* default-domain opset, 0 if absent */
    int nops;                        /* distinct (domain, op_type) pairs, subgraphs included */
    char ops[PB_MAX_OPS][PB_NAME];   /* "Add", or "domain:Op" outside the default domain */
    bool has_subgraphs;              /* a node carries a graph attribute (If, Loop, Scan) */
    bool has_functions;              /* the model defines local functions */
    int nfuncs;                      /* their "domain:name" keys (the ops their calls are) */
    char funcs[PB_MAX_OPS][PB_NAME]; /* ops holds their bodies' ops, not the calls */
    int ninputs, noutputs;           /* graph inputs exclude initializers */
    struct pb_io inputs[PB_MAX_IO], outputs[PB_MAX_IO];
    /* Graph inputs that shape operands are, or are computed from. */
    int nshape_operands;
    char shape_operands[PB_MAX_SHAPE_OPERANDS][PB_NAME];
    /* Graph inputs that are weight operands (pb_weight_operand), directly. */
    int nweight_operands;
    char weight_operands[PB_MAX_SHAPE_OPERANDS][PB_NAME];
};

/* True if input `idx` of `op` determines the shape of its outputs. */
bool pb_shape_operand(const char *op, int idx);
/* True if input `idx` of `op` is a parameter exported models hold as an
 * initializer (MatMul B, Gemm/Conv weights and bias, normalisation parameters). */
bool pb_weight_operand(const char *op, int idx);

/*
 * Rewrites a ModelProto so that the graph inputs named in names[] become
 * initializers holding the given serialized TensorProtos (tensors[i], lens[i],
 * e.g. the bytes of an input_K.pb file; the name is set to names[i]). Output
 * in a new malloc'd buffer.
 */
enum npu_status pb_bake_inputs(const uint8_t *model, size_t len, int n, const char *const *names,
                               const uint8_t *const *tensors, const size_t *lens, uint8_t **out,
                               size_t *out_len);

/* Fills *m from the ModelProto in buf. NPU_ERR_CORRUPT on malformed data,
 * NPU_ERR_UNSUPPORTED if a fixed-size table above overflows. */
enum npu_status pb_model_summary(const uint8_t *buf, size_t len, struct pb_model *m);

/* ONNX element type to ours; NPU_DTYPE_UNDEFINED for string, bfloat16, complex... */
enum npu_dtype pb_onnx_dtype(int elem_type);
/* "float", "string", "bfloat16", ... for messages. */
const char *pb_onnx_type_name(int elem_type);

/*
 * Decodes a TensorProto into *t (data malloc'd, 64-byte aligned, free with
 * free()); name (PB_NAME bytes, may be NULL) receives TensorProto.name.
 * elem_type receives the ONNX type even when it is not representable, in
 * which case NPU_ERR_UNSUPPORTED is returned.
 */
enum npu_status pb_read_tensor(const uint8_t *buf, size_t len, struct npu_tensor *t, char *name,
                               int *elem_type);

/* Reads a whole file into a malloc'd buffer. */
enum npu_status pb_slurp(const char *path, uint8_t **buf, size_t *len);

#endif /* ONNX_PB_H */
