/* SPDX-License-Identifier: MIT */
/* onnx-priv.h: shared between the importer's files (not public). */
#ifndef NPU_ONNX_PRIV_H
#define NPU_ONNX_PRIV_H

#include "npu/npu-ir.h"
#include "npu/npu-onnx.h"
#include "onnx.pb-c.h"

/* TensorProto.DataType codes the IR has no type of its own for. */
#define ONNX_UINT4 21
#define ONNX_INT4 22

/* Converts a TensorProto into a tensor whose data is allocated in g's arena
 * (or malloc'd when g is NULL). `what` names the tensor in messages. INT4 and
 * UINT4 tensors are unpacked into int8 / uint8, one element a byte. */
enum npu_status onnx_tensor_to_npu(const Onnx__TensorProto *tp, const char *base_dir,
                                   const char *what, struct npu_graph *g, struct npu_tensor *out);
/* Same, for a tensor whose raw_data lies in `borrow` (the mapped model file, which g takes
 * over): where the payload needs no conversion and is aligned for its element type, the
 * tensor's data points into it instead of a copy (*borrowed set). borrow may be NULL. */
struct onnx_borrow {
    const uint8_t *lo, *hi;
    bool used; /* set once a tensor points into [lo, hi) */
    /* the file [lo, hi) maps (-1: none): payloads that are copied (not aligned for their
     * type) are read from it with pread, so that their pages are never mapped */
    int fd;
    /* the borrowed payloads, [lo, hi) each (grown as needed; the caller frees it) */
    struct onnx_span {
        const uint8_t *lo, *hi;
    } * spans;
    size_t n_spans, cap_spans;
};
enum npu_status onnx_tensor_to_npu_borrow(const Onnx__TensorProto *tp, const char *base_dir,
                                          const char *what, struct npu_graph *g,
                                          struct npu_tensor *out, struct onnx_borrow *borrow);
enum npu_status onnx_read_file(const char *path, unsigned char **buf, size_t *len);

/* The model without the main graph's initializer payloads (npu-onnx-strip.c): buf (NULL
 * when the model was left as it is: malformed, unusual or without initializers) holds the
 * wire format minus the raw_data of ModelProto.graph.initializer[*]; raw[i] is initializer
 * i's payload in the original buffer (present false where it had none). */
struct onnx_raw_span {
    const uint8_t *p;
    size_t n;
    bool present;
};
struct onnx_stripped {
    uint8_t *buf;
    size_t len;
    struct onnx_raw_span *raw;
    size_t n_raw;
};
enum npu_status onnx_strip_raw(const void *data, size_t len, struct onnx_stripped *out);
void onnx_stripped_free(struct onnx_stripped *s);

/* npu_onnx_import, whose graph may point into borrow (the mapped model file; NULL: copy
 * every payload). The caller hands the mapping to the graph when borrow->used. */
enum npu_status onnx_import_borrow(const void *data, size_t len,
                                   const struct npu_onnx_options *opts, struct npu_graph **out,
                                   struct onnx_borrow *borrow);

/* The deepest nesting of a model's wire format (npu-onnx-depth.c). */
struct onnx_depth {
    int graphs;   /* GraphProtos inside one another (the main graph is 1) */
    int messages; /* messages inside one another (the ModelProto is 0) */
    bool capped;  /* stopped measuring: deeper than the figures say */
};
/* Measures the nesting of the serialized model (iteratively: safe for any
 * input) and refuses, with a logged message naming the depth, one deeper than
 * NPU_ONNX_MAX_GRAPH_DEPTH / NPU_ONNX_MAX_MESSAGE_DEPTH. out may be NULL. */
enum npu_status onnx_check_depth(const void *data, size_t len, struct onnx_depth *out);

/* The newest ONNX release whose operator sets the importer accepts (the
 * v1.22.0 tag of onnx/onnx, whose backend node tests are checked in under
 * tests/conformance/onnx-1.22.0), its newest opset of the default domain and
 * its IR version. Opsets 22 to 27 changed the ops we have only in the element
 * types they allow (bfloat16, float8, int4, float4, int2, refused by the
 * element type check where we lack them), QuantizeLinear/DequantizeLinear's
 * `output_dtype`, and Range-27's `stash_type` (fp16 ranges computed in
 * float, as ours always are); docs/conformance.md lists them. */
#define NPU_ONNX_MAX_OPSET 27
#define NPU_ONNX_NEWEST_RELEASE "1.22.0"
#define NPU_ONNX_MAX_IR_VERSION 13

/* Model-local functions (npu-onnx-func.c): *gp is the graph to build, m's
 * own or, when m calls local functions, a copy with every call inlined
 * (*out, freed with onnx_inline_free() after the build; NULL otherwise). */
struct onnx_inlined;
enum npu_status onnx_inline_functions(const Onnx__ModelProto *m, struct onnx_inlined **out,
                                      const Onnx__GraphProto **gp);
void onnx_inline_free(struct onnx_inlined *x);

/* Import state shared by the graph builder and the op upgrades. */
struct onnx_ctx {
    struct npu_graph *g;
    int opset;
    const char *base_dir;
    struct onnx_borrow *borrow;       /* the mapped model file the graph may point into, or NULL */
    const uint8_t *file_lo, *file_hi; /* the model's buffer (payloads left there by the strip) */
    /* constants that were INT4/UINT4 in the model (widened to 8 bits): a
     * QuantizeLinear whose zero point is one of them saturates to 4 bits */
    const char **int4_names;
    size_t n_int4, cap_int4;
};

/* Builds the IR node for one ONNX node (attributes already converted into
 * `tmp`, a detached node holding op, name and attrs), upgrading older opset
 * forms to the newest; appends the node(s) and infers them. */
enum npu_status onnx_add_node(struct onnx_ctx *c, struct npu_node *tmp, const char *op_type,
                              struct npu_value **in, int nin, struct npu_value **out, int nout);

#endif /* NPU_ONNX_PRIV_H */
