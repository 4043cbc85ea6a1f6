/* SPDX-License-Identifier: MIT */
/*
 * npu-be.h: the lowering stage's internal API, for the op handlers of this
 * folder: the lowering context and its helpers (new rk.* nodes, NPU copies
 * of inputs, results, constants), the handlers' refusal helpers, and the
 * conv/matmul entry the composite lowerings share. rk.* values, their
 * attribute formats and emitters are codegen's (codegen/npu-rk.h), which
 * this stage builds on; not installed. docs/npu-backend.md has the contract.
 */
#ifndef NPU_BE_H
#define NPU_BE_H

#include <stdbool.h>
#include <stdint.h>

#include "npu-hw.h"
#include "npu-rk.h"
#include "npu/npu-backend.h"
#include "npu/npu-ir.h"

/* ---- lowering ------------------------------------------------------------- */

struct npu_lower_ctx {
    struct npu_graph *g;
    const struct npu_backend_options *o;
    /* host value -> its NPU copy (rk.ToNpu output or an rk.* result), by value id */
    struct npu_value **npu_of;
    int n_npu_of;
};

/* The NPU copy of v to be read by a node inserted before `before`, with the
 * given view (NULL: canonical) and NPU element type (UNDEFINED: f16 for float
 * values, the dtype itself otherwise). Reuses an existing copy with the same
 * view and type, else inserts rk.ToNpu. NULL (logged) when v cannot be
 * viewed that way. Constants are not copied: lowerings pack them. */
struct npu_value *npu_lower_input(struct npu_lower_ctx *cx, struct npu_node *before,
                                  struct npu_value *v, const uint32_t *view, enum npu_dtype dt);

/* The NPU value already standing for v (v itself when it is an rk.* value, else the copy
 * or result an earlier lowering declared), NULL when there is none yet. */
struct npu_value *npu_lower_lookup(const struct npu_lower_ctx *cx, struct npu_value *v);

/* A new rk.* node (device=npu) inserted before `before`, with nout fresh
 * outputs named after `name`. Set its attributes, then call npu_lower_done. */
struct npu_node *npu_lower_new(struct npu_lower_ctx *cx, struct npu_node *before, enum npu_op op,
                               const char *name, struct npu_value *const *in, int nin, int nout);
/* Runs inference on a node made by npu_lower_new (fills its output types). */
enum npu_status npu_lower_done(struct npu_lower_ctx *cx, struct npu_node *n);

/* Declares that output `idx` of the node being lowered (orig) is computed on
 * the NPU as npu_val: later lowerings read npu_val directly, and an
 * rk.ToHost node now defines orig's output for host users (removed again by
 * the driver when nobody needs it). */
enum npu_status npu_lower_result(struct npu_lower_ctx *cx, struct npu_node *orig, int idx,
                                 struct npu_value *npu_val);

/* A new constant (arena copy of data) for packed weights, biases, tables. */
struct npu_value *npu_lower_const(struct npu_lower_ctx *cx, const char *name, enum npu_dtype dt,
                                  int ndim, const int64_t *dims, const void *data);

/* Logs why a lowering refused a node (info level) and returns
 * NPU_ERR_UNSUPPORTED; the driver then keeps the node on the CPU. */
enum npu_status npu_lower_refuse(const struct npu_node *n, const char *fmt, ...) NPU_PRINTF(2, 3);

/* A handler's refusal: the reason formatted into why (when why is not NULL), returns false. */
bool npu_be_refuse(char *why, size_t len, const char *fmt, ...) NPU_PRINTF(3, 4);

/* Refusals common to every source-op handler, called first by their supports(): float64
 * tensors (the NPU has none, facts §2.9), used outputs of a type the float pipeline does not
 * make (fp16 / fp32 only, unless integer_op: the int8 conv family checks its own), and
 * float results that flow into a run-time quantisation parameter (fp16 is too coarse
 * there). false with a one-line reason in why. */
bool npu_be_common_ok(const struct npu_graph *g, const struct npu_node *n, bool integer_op,
                      char *why, size_t why_len);

/* The verified profile's refusal (npu-hwprofile.c): true, with the pattern in why, when
 * o is the verified profile and n is one of o->hw_refused. npu_backend_supports() asks it
 * before the node's handler. */
bool npu_be_hw_refused(const struct npu_node *n, const struct npu_backend_options *o, char *why,
                       size_t why_len);

/* ---- conv / matmul tasks for composites (the conv/matmul lowering) ------------- */

/*
 * y = act(conv(x, w) + bias) as tiled CNA + CORE + DPU tasks appended to s, for
 * lowerings that build their own task lists (e.g. the DPU attention lowering, whose
 * Q.K^T and A.V read an activation as the weight operand):
 *   x: NC1HWC2 fp16 over (c, h, w) (the whole map; row tiles read windows);
 *   w: the weights in any buffer, packed as core/hw npu_weight_pack() packs k
 *      kernels of c channels x kh x kw (fp16): [group of 16 kernels][block of
 *      32 channels][ky][kx][kernel][channel]. An activation gets there by a
 *      layout copy (the DPU transpose copy, docs/npu-backend.md §7);
 *   y: NC1HWC2 of out_dt (f16 or f32) over (k, oh, ow), oh / ow from the
 *      geometry;
 *   bias: optional fp32 per output channel (k padded to 64 entries), relu or
 *      clip(act_min, act_max) fused as in rk.Conv.
 * Rows and kernels are tiled to fit the CBUF (the weight set stays one: no
 * channel-block accumulation). *modeled_s (may be NULL) gets the modeled time
 * of the tasks (timing model v1).
 */
struct npu_conv_call {
    struct npu_ref_buf x, w, y, bias;
    uint32_t c, h, w_px, k;
    uint32_t kh, kw, sy, sx;
    uint32_t pad_top, pad_left, pad_bottom, pad_right;
    enum npu_dtype out_dt;
    bool has_bias;
    int act; /* 0 none, 1 relu, 2 clip */
    float act_min, act_max;
};
enum npu_status npu_conv_emit_call(struct npu_stream *s, const struct npu_conv_call *c,
                                   double *modeled_s);

/* Whether the residual Add `add` will likely run in the DPU of the MatMul that produces
 * one of its operands (conv-fuse.c): its cost() is then 0 (priced in the MatMul's). */
bool npu_conv_residual_likely(const struct npu_graph *g, const struct npu_node *add,
                              const struct npu_backend_options *o);
/* Whether DequantizeLinear dq will be computed by the QLinear product before it (priced
 * there: its own cost is 0). */
bool npu_conv_deq_likely(const struct npu_graph *g, const struct npu_node *dq,
                         const struct npu_backend_options *o);
/* Whether activation a (sigmoid, tanh, GELU, SiLU) will be applied by the QLinear product
 * whose folded DequantizeLinear it reads, as a LUT in the product's EW stage. */
bool npu_conv_deq_act_likely(const struct npu_graph *g, const struct npu_node *a,
                             const struct npu_backend_options *o);

/* npu_weight_pack's fp16 packing of a non-depthwise layout l (pad_bits 0) straight from
 * fp32 weights: weight (kernel k, channel c, tap t) is src[k * kstride + c * taps + t]. dst
 * must hold l->total_bytes, zeroed (the padding channels are left as they are); same bytes as
 * converting to OIHW fp16 and calling npu_weight_pack (conv-weights.c). */
enum npu_status npu_be_pack_fp16(const struct npu_weight_layout *l, uint8_t *dst, const float *src,
                                 size_t kstride, uint32_t taps);

#endif /* NPU_BE_H */
