/* SPDX-License-Identifier: MIT */
/*
 * npu-ir.h: the compiler's intermediate representation. A graph is a list of
 * nodes kept in topological order; each node applies one op of npu-ops.h to
 * typed values (struct npu_tensor: dtype, concrete shape, optional constant
 * data, optional quantisation parameters) and defines its output values
 * exactly once (SSA). All nodes, values, names and constant payloads live in
 * one arena owned by the graph and are freed together by npu_graph_free().
 *
 * Shapes are always concrete: the importer binds symbolic dims before it
 * builds the graph, so every pass and the executor can rely on dims[].
 *
 * Text form, passes, verifier: see docs/ir.md. Room for the NPU back end: each
 * node carries a `device` annotation and a `cost` estimate, both printed by
 * the text form; npu_ir_cost_hook lets a back end fill the cost.
 */
#ifndef NPU_IR_H
#define NPU_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "npu/npu-common.h"
#include "npu/npu-ops.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_graph;
struct npu_node;

/* ---- arena ---------------------------------------------------------------- */

/* 64-byte aligned, zeroed memory that lives until npu_graph_free(). Returns
 * NULL (and logs) only when the allocation itself fails or size is absurd. */
void *npu_graph_alloc(struct npu_graph *g, size_t size);
char *npu_graph_strdup(struct npu_graph *g, const char *s);
/* Total bytes the arena holds (for statistics and tests). */
size_t npu_graph_arena_bytes(const struct npu_graph *g);

/* ---- values --------------------------------------------------------------- */

enum npu_value_kind {
    NPU_VALUE_NODE = 0, /* defined by a node */
    NPU_VALUE_INPUT,    /* graph input, supplied at run time */
    NPU_VALUE_CONST,    /* constant (initializer, folded result); t.data holds it */
};

struct npu_value {
    int id;
    const char *name; /* unique in the graph */
    enum npu_value_kind kind;
    struct npu_tensor t; /* dtype, shape, qscale/qzero; t.data: CONST payload */
    /* NODE values whose contents inference could compute at compile time
     * (shape arithmetic): same layout as t.data would have. NULL if unknown. */
    const void *known;
    struct npu_node *producer; /* NODE values only */
    int producer_idx;          /* output index in the producer */
    bool is_output;            /* listed in the graph outputs */
    /* INPUT values: a state input (a KV cache): where its only reader is a conversion to
     * the NPU, codegen keeps it in NPU_BUF_STATE as the program's input, resident across
     * runs (npu-program.h), instead of converting it in every run (added later, additive;
     * not part of the IR text form). */
    bool is_state;
    /* Filled by npu_graph_update_uses(); stale after edits until called again. */
    struct npu_node **users;
    int nusers;
    uint64_t hash; /* FNV-1a 64 of CONST data, 0 until npu_value_hash() */
};

/* Constant or compile-time-known contents of v, or NULL. */
static inline const void *
npu_value_data(const struct npu_value *v)
{
    if (!v)
        return NULL;
    return v->kind == NPU_VALUE_CONST ? v->t.data : v->known;
}
static inline int64_t
npu_value_numel(const struct npu_value *v)
{
    return npu_tensor_numel(&v->t);
}
/* Reads element i of a value with data (any dtype) as int64 / double.
 * Caller guarantees data exists and i is in range. */
int64_t npu_value_get_i64(const struct npu_value *v, int64_t i);
double npu_value_get_f64(const struct npu_value *v, int64_t i);
/* True when v has data and every element equals x (within rel_tol for floats). */
bool npu_value_is_scalar_const(const struct npu_value *v, double x, double rel_tol);
/* Content hash of a CONST value (FNV-1a 64 over its bytes), cached in v->hash. */
uint64_t npu_value_hash(struct npu_value *v);
uint64_t npu_fnv1a64(const void *data, size_t n);
/* Constants need not be aligned for their element type: the ONNX importer borrows fp32
 * payloads from the model file's mapping wherever they lie (npu-onnx.c). Readers that load
 * through typed pointers (the CPU kernels, passes doing float arithmetic on whole arrays)
 * call npu_value_aligned_data() first; the others load with memcpy (npu_value_get_f64, the
 * weight packer, the layer-norm centring). npu_value_data_aligned: whether v's data (if
 * any) is aligned for its dtype. npu_value_aligned_data: v's constant data, aligned: an
 * unaligned payload is copied into g's arena once (v points there from then on; same
 * bytes, so v->hash stays); NULL for no data or out of memory (logged).
 * npu_graph_align_consts: that for every constant of g (the CPU executor's graph). */
bool npu_value_data_aligned(const struct npu_value *v);
/* Element i of fp32 data that may be unaligned, and its store: one plain load / store
 * where the target allows it. */
static inline float
npu_f32_at(const void *data, int64_t i)
{
    float f;
    memcpy(&f, (const char *)data + i * (int64_t)sizeof(f), sizeof(f));
    return f;
}
static inline void
npu_f32_put(void *data, int64_t i, float f)
{
    memcpy((char *)data + i * (int64_t)sizeof(f), &f, sizeof(f));
}
const void *npu_value_aligned_data(struct npu_graph *g, struct npu_value *v);
enum npu_status npu_graph_align_consts(struct npu_graph *g);

/* ---- nodes ---------------------------------------------------------------- */

enum npu_node_device {
    NPU_DEVICE_ANY = 0, /* not yet assigned (text form omits it) */
    NPU_DEVICE_CPU,
    NPU_DEVICE_NPU,
};
const char *npu_device_name(enum npu_node_device d);

struct npu_node {
    int id;
    enum npu_op op;
    const char *name;      /* from the model, for messages; may be "" */
    struct npu_value **in; /* nin entries; NULL = absent optional input */
    int nin;
    struct npu_value **out; /* nout entries, never NULL */
    int nout;
    struct npu_attr *attr; /* generic attributes (npu-ops.h) */
    int nattr, cap_attr;
    enum npu_node_device device;  /* partitioning decision, printed as device=... */
    double cost;                  /* estimated seconds (cost hook), 0 = unknown */
    struct npu_node *prev, *next; /* topological order */
    bool attached;                /* in the graph's node list */
    void *pass_data;              /* scratch for the pass that is running */
};

static inline struct npu_attrs
npu_node_attrs(const struct npu_node *n)
{
    struct npu_attrs a = {n->attr, (size_t)n->nattr};
    return a;
}
static inline int64_t
npu_node_int(const struct npu_node *n, const char *name, int64_t def)
{
    struct npu_attrs a = npu_node_attrs(n);
    return npu_attrs_int(&a, name, def);
}
static inline float
npu_node_float(const struct npu_node *n, const char *name, float def)
{
    struct npu_attrs a = npu_node_attrs(n);
    return npu_attrs_float(&a, name, def);
}
static inline const char *
npu_node_string(const struct npu_node *n, const char *name, const char *def)
{
    struct npu_attrs a = npu_node_attrs(n);
    return npu_attrs_string(&a, name, def);
}
static inline const int64_t *
npu_node_ints(const struct npu_node *n, const char *name, size_t *cnt)
{
    struct npu_attrs a = npu_node_attrs(n);
    return npu_attrs_ints(&a, name, cnt);
}
static inline const float *
npu_node_floats(const struct npu_node *n, const char *name, size_t *cnt)
{
    struct npu_attrs a = npu_node_attrs(n);
    return npu_attrs_floats(&a, name, cnt);
}
static inline const struct npu_attr *
npu_node_attr(const struct npu_node *n, const char *name)
{
    struct npu_attrs a = npu_node_attrs(n);
    return npu_attrs_find(&a, name);
}
static inline struct npu_value *
npu_node_in(const struct npu_node *n, int i)
{
    return i < n->nin ? n->in[i] : NULL;
}

/* Attribute setters copy names and payloads into the arena and replace an
 * existing attribute of the same name. */
enum npu_status npu_node_set_int(struct npu_graph *g, struct npu_node *n, const char *name,
                                 int64_t v);
enum npu_status npu_node_set_float(struct npu_graph *g, struct npu_node *n, const char *name,
                                   float v);
enum npu_status npu_node_set_string(struct npu_graph *g, struct npu_node *n, const char *name,
                                    const char *v);
enum npu_status npu_node_set_ints(struct npu_graph *g, struct npu_node *n, const char *name,
                                  const int64_t *v, size_t cnt);
enum npu_status npu_node_set_floats(struct npu_graph *g, struct npu_node *n, const char *name,
                                    const float *v, size_t cnt);
enum npu_status npu_node_set_strings(struct npu_graph *g, struct npu_node *n, const char *name,
                                     const char *const *v, size_t cnt);
/* Copies t (and its data) into the arena. */
enum npu_status npu_node_set_tensor(struct npu_graph *g, struct npu_node *n, const char *name,
                                    const struct npu_tensor *t);
/* Copies a whole attribute (any type). */
enum npu_status npu_node_set_attr(struct npu_graph *g, struct npu_node *n,
                                  const struct npu_attr *a);
void npu_node_del_attr(struct npu_node *n, const char *name);

/* ---- graph ---------------------------------------------------------------- */

struct npu_name_map; /* private */

struct npu_graph {
    const char *name;
    int opset; /* default-domain opset the model was written for */
    struct npu_node *head, *tail;
    int nnodes;
    struct npu_value **values; /* every live value, in creation order */
    int nvalues;
    struct npu_value **inputs;
    int ninputs;
    struct npu_value **outputs;
    int noutputs;
    /* private */
    struct npu_arena *arena;
    struct npu_name_map *names;
    int cap_values, cap_inputs, cap_outputs;
    int next_value_id, next_node_id;
    struct npu_node **use_pool;
    size_t cap_use_pool;
};

struct npu_graph *npu_graph_new(const char *name);
void npu_graph_free(struct npu_graph *g);
/* Hands g a read-only file mapping (mmap) that its constants may point into: g unmaps it
 * when freed. The importer uses it to keep a model's weights where the file maps them. */
enum npu_status npu_graph_adopt_mapping(struct npu_graph *g, void *addr, size_t len);
/* Whether [p, p + n) lies in memory g owns and may write: one chunk of its arena or one of
 * its adopted mappings (those are private, copy-on-write). False for borrowed memory. */
bool npu_graph_owns(const struct npu_graph *g, const void *p, size_t n);
/* Hands g a malloc'd block its constants borrow (npu_graph_add_const_owned): g frees it
 * when freed, so that a caller's weights go with the graph, before what is compiled from
 * it is loaded. Passes still treat it as borrowed (read-only). On failure the caller keeps
 * p. */
enum npu_status npu_graph_adopt_malloc(struct npu_graph *g, void *p);
/* When v is a constant nobody reads any more (no users, not an output) whose data lies in
 * a block g adopted by npu_graph_adopt_malloc and every value pointing into that block is
 * dead too: frees the block now and leaves those values without data. True if freed. (The lowering
 * calls it for the constants a lowered node read: an LLM's fp32 weights go as soon as their packed
 * copies exist.) */
bool npu_graph_free_unused_const(struct npu_graph *g, struct npu_value *v);
/* Gives back the memory of [p, p + n) when it is the whole of an arena block mapped on its
 * own (a constant of 1 MiB or more): its pages leave the process and read as zero after
 * (the mapping stays until the graph is freed). For a graph about to be freed whose
 * constant was copied elsewhere (codegen, NPU_CODEGEN_RELEASE_CONSTS). False: not such a
 * block, nothing done. */
bool npu_graph_release_data(const struct npu_graph *g, const void *p, size_t n);

/* Zeroed, 64-byte aligned memory from g's weight region: one reserved range whose
 * allocations follow each other in the order they are made, so that codegen can hand a
 * program the region itself when the NPU's constants lie there at the weight buffer's
 * offsets (no copy; npu-memplan.c). Plain arena memory where no region can be reserved. */
void *npu_graph_alloc_weights(struct npu_graph *g, size_t size);
struct npu_shared_mapping; /* npu/npu-program.h */
/* g's weight region (NULL: none yet) and the bytes handed out of it. */
struct npu_shared_mapping *npu_graph_weight_region(const struct npu_graph *g, size_t *used);

struct npu_value *npu_graph_find_value(const struct npu_graph *g, const char *name);
/* A fresh value with a unique name derived from `name` (suffixes .1, .2, ... are
 * added on collision). Kind NODE, dtype undefined until a producer sets it. */
struct npu_value *npu_value_new(struct npu_graph *g, const char *name);
/* Like npu_value_new but fails (NULL, logged) if the name exists. */
struct npu_value *npu_value_new_exact(struct npu_graph *g, const char *name);
/* Gives v the name `name`, which no other value of g may have (NPU_ERR_INVALID, logged);
 * out of memory: NPU_ERR_NOMEM, v keeps its name. */
enum npu_status npu_value_rename(struct npu_graph *g, struct npu_value *v, const char *name);

struct npu_value *npu_graph_add_input(struct npu_graph *g, const char *name, enum npu_dtype dt,
                                      int ndim, const int64_t *dims);
/* Constant with a copy of t->data (which must hold npu_tensor_nbytes bytes). */
struct npu_value *npu_graph_add_const(struct npu_graph *g, const char *name,
                                      const struct npu_tensor *t);
/* Same, but takes data that the caller allocated with npu_graph_alloc. */
struct npu_value *npu_graph_add_const_owned(struct npu_graph *g, const char *name,
                                            const struct npu_tensor *t);
/* npu_graph_add_const with the copy in g's weight region (npu_graph_alloc_weights): for
 * the constants a lowering makes for the NPU. */
struct npu_value *npu_graph_add_const_weights(struct npu_graph *g, const char *name,
                                              const struct npu_tensor *t);
/* Small helpers for passes and the importer. */
struct npu_value *npu_graph_const_i64(struct npu_graph *g, const char *name, const int64_t *v,
                                      int n, bool scalar);
struct npu_value *npu_graph_const_f32(struct npu_graph *g, const char *name, const float *v, int n,
                                      bool scalar);
enum npu_status npu_graph_add_output(struct npu_graph *g, struct npu_value *v);

/* Turns a NODE value into a CONST holding `data` (arena memory, t.dtype/dims kept)
 * and detaches it from its producer. */
void npu_value_make_const(struct npu_value *v, void *data);

/* Creates a detached node with nin inputs (may contain NULL) and nout fresh
 * output values named from out_names (or "<name>_out<i>" when NULL/""). */
struct npu_node *npu_node_new(struct npu_graph *g, enum npu_op op, const char *name,
                              struct npu_value *const *in, int nin, int nout,
                              const char *const *out_names);
/* Same, but defines the given existing values (which must have no producer)
 * instead of fresh ones. */
struct npu_node *npu_node_new_v(struct npu_graph *g, enum npu_op op, const char *name,
                                struct npu_value *const *in, int nin, struct npu_value *const *out,
                                int nout);
void npu_graph_append(struct npu_graph *g, struct npu_node *n);
void npu_graph_insert_before(struct npu_graph *g, struct npu_node *pos, struct npu_node *n);
/* Unlinks n; its outputs lose their producer (DCE removes them). */
void npu_graph_remove(struct npu_graph *g, struct npu_node *n);
/* Makes n define v as its output i (v keeps its name, users and output flag):
 * how fusions take over the last value of the pattern they replace. */
void npu_node_set_output(struct npu_node *n, int i, struct npu_value *v);
/* Replaces every use of `from` by `to` in node inputs (not graph outputs). */
void npu_graph_replace_uses(struct npu_graph *g, struct npu_value *from, struct npu_value *to);
/* Recomputes users/nusers of every value. */
enum npu_status npu_graph_update_uses(struct npu_graph *g);
/* Drops values that no node uses or defines and that are not inputs/outputs. */
void npu_graph_gc_values(struct npu_graph *g);

#define npu_graph_for_each_node(g, n) for (struct npu_node *n = (g)->head; n; n = n->next)
/* Safe against removal of n. */
#define npu_graph_for_each_node_safe(g, n, tmp)                                                    \
    for (struct npu_node *n = (g)->head, *tmp = n ? n->next : NULL; n;                             \
         n = tmp, tmp = n ? n->next : NULL)

/* ---- inference and verification ------------------------------------------ */

/* Infers dtype and shape of n's outputs from its inputs and attributes, and
 * computes their contents when they are small and all inputs are known
 * (shape arithmetic). Logs "node 'name' (Op): problem" on failure. */
enum npu_status npu_infer_node(struct npu_graph *g, struct npu_node *n);
enum npu_status npu_graph_infer(struct npu_graph *g);

/* Shape inference of the ops a later stage defines (the NPU back end's rk.*
 * ops, npu_op_is_rk): that stage registers it, so the IR knows nothing of
 * the stage. The back end registers itself before it builds or loads rk.*
 * nodes (npu_backend_register(), npu-backend.h); until then such a node fails
 * inference with a message saying so. Safe to call from several threads. */
typedef enum npu_status (*npu_ext_infer_fn)(struct npu_graph *g, struct npu_node *n);
void npu_ir_register_rk_infer(npu_ext_infer_fn fn);

/* Checks SSA, topological order, dangling edges, dtypes and shapes (by
 * re-running inference and comparing). Logs every problem found. */
enum npu_status npu_graph_verify(struct npu_graph *g);

/* Evaluates a node whose inputs all have data with the compiler's small
 * reference evaluator (shape arithmetic, integer and small float tensors);
 * fills out[i] (allocated by the caller). NPU_ERR_UNSUPPORTED if it cannot. */
enum npu_status npu_eval_node(const struct npu_node *n, const struct npu_tensor *const *in,
                              struct npu_tensor *const *out);

/* ---- text form ------------------------------------------------------------ */

struct npu_ir_print_opts {
    /* Constants with more elements than this are printed as a blob reference
     * (0 = default 16). */
    int64_t inline_max;
    /* If non-NULL, blob payloads are appended here (64-byte aligned offsets). If
     * NULL, the blob reference carries only the hash (enough for a dump). */
    FILE *sidecar;
};

enum npu_status npu_ir_print(const struct npu_graph *g, FILE *f,
                             const struct npu_ir_print_opts *opts);
/* Prints into a malloc'd string (caller frees). */
char *npu_ir_print_str(const struct npu_graph *g, const struct npu_ir_print_opts *opts);
/* Parses text (len bytes). sidecar may be NULL: blob constants then fail to
 * parse with a clear error unless allow_missing_blobs, in which case they get
 * zero-filled data (for reading dumps). */
enum npu_status npu_ir_parse(const char *text, size_t len, const void *sidecar, size_t sidecar_len,
                             bool allow_missing_blobs, struct npu_graph **out);
/* Writes path and path + ".bin" (sidecar). */
enum npu_status npu_ir_save(const struct npu_graph *g, const char *path);
enum npu_status npu_ir_load(const char *path, struct npu_graph **out);

/* ---- ONNX element type codes (TensorProto.DataType), used by Cast's `to`,
 * ConstantOfShape and QuantizeLinear's output_dtype attributes ------------- */
enum npu_dtype npu_dtype_from_onnx(int64_t code); /* UNDEFINED if not one of ours */
int npu_dtype_to_onnx(enum npu_dtype t);

/* ---- cost hook (for partitioning, later) --------------------------------- */

typedef double (*npu_ir_cost_fn)(const struct npu_node *n, enum npu_node_device d, void *user);
/* Sets n->cost for every node from fn(n, n->device). */
void npu_graph_apply_cost(struct npu_graph *g, npu_ir_cost_fn fn, void *user);

#ifdef __cplusplus
}
#endif

#endif /* NPU_IR_H */
