/* SPDX-License-Identifier: MIT */
/*
 * npu-infer.c: dtype and shape inference for every op of npu-ops.h, in the
 * newest ONNX form (the importer upgrades older forms first). Value-dependent
 * shapes (Reshape, Expand, Tile, Slice, Pad, Range, ConstantOfShape, Resize,
 * Split, Squeeze/Unsqueeze axes, Reduce axes) need their operand's contents:
 * a constant, or a value that inference itself computed (`known`) because it
 * is small and derived from shapes, which is how the Shape/Gather/Concat
 * chains that exporters emit resolve once the input shapes are concrete.
 *
 * This file is the driver: the entry points, the dispatch over the ops (the
 * elementwise, matmul, normalization, cast, quantization and constant ops are
 * inferred right there), the compile-time evaluation of small outputs and the
 * hook for the back end's rk.* ops. The op families are in infer-shape-ops.c
 * and infer-nn.c, the helpers they share in infer-util.c.
 */
#include "infer-priv.h"

/* Outputs up to this many elements get their contents computed at compile
 * time when every input is known (shape arithmetic, masks, small tables). */
#define KNOWN_MAX_ELEMS (1 << 16)

/* The back end's inference of rk.* ops (npu_ir_register_rk_infer). */
static npu_ext_infer_fn rk_infer;

void
npu_ir_register_rk_infer(npu_ext_infer_fn fn)
{
    __atomic_store_n(&rk_infer, fn, __ATOMIC_RELEASE);
}

static int64_t
prod(const int64_t *d, int a, int b)
{
    int64_t p = 1;
    for (int i = a; i < b; i++)
        p *= d[i];
    return p;
}

/* ---- per-op groups ---------------------------------------------------------- */

static enum npu_status
infer_broadcast_n(struct npu_node *n, int first, int count, enum npu_dtype out_dt, bool same_dt)
{
    struct npu_tensor acc = {0};
    for (int i = first; i < first + count; i++) {
        NEED_IN(i);
        const struct npu_tensor *t = ir_T(n, i);
        if (same_dt && t->dtype != ir_T(n, first)->dtype)
            FAIL("input dtypes differ (%s vs %s)", npu_dtype_name(ir_T(n, first)->dtype),
                 npu_dtype_name(t->dtype));
        if (i == first) {
            acc = *t;
        } else if (!ir_broadcast(&acc, t, &acc)) {
            FAIL("input shapes cannot be broadcast together (input %d '%s')", i, n->in[i]->name);
        }
    }
    return ir_set_out(n, 0, out_dt ? out_dt : ir_T(n, first)->dtype, acc.ndim, acc.dims);
}

static enum npu_status
matmul_shape(struct npu_node *n, const struct npu_tensor *a, const struct npu_tensor *b,
             enum npu_dtype dt, int out)
{
    if (a->ndim < 1 || b->ndim < 1)
        FAIL("MatMul operands must have rank >= 1");
    struct npu_tensor A = *a, B = *b;
    bool va = A.ndim == 1, vb = B.ndim == 1;
    if (va) {
        A.ndim = 2;
        A.dims[1] = A.dims[0];
        A.dims[0] = 1;
    }
    if (vb) {
        B.ndim = 2;
        B.dims[1] = 1;
    }
    int64_t M = A.dims[A.ndim - 2], K = A.dims[A.ndim - 1], K2 = B.dims[B.ndim - 2],
            N = B.dims[B.ndim - 1];
    if (K != K2)
        FAIL("inner dimensions differ (%lld vs %lld)", (long long)K, (long long)K2);
    struct npu_tensor ba = {.ndim = A.ndim - 2}, bb = {.ndim = B.ndim - 2}, bo;
    for (int i = 0; i < ba.ndim; i++)
        ba.dims[i] = A.dims[i];
    for (int i = 0; i < bb.ndim; i++)
        bb.dims[i] = B.dims[i];
    if (!ir_broadcast(&ba, &bb, &bo))
        FAIL("batch dimensions cannot be broadcast");
    int64_t d[NPU_MAX_DIMS + 2];
    int r = 0;
    for (int i = 0; i < bo.ndim; i++)
        d[r++] = bo.dims[i];
    if (!va)
        d[r++] = M;
    if (!vb)
        d[r++] = N;
    return ir_set_out(n, out, dt, r, d);
}

static enum npu_status
infer_shape(struct npu_graph *g, struct npu_node *n, bool eval)
{
    const struct npu_tensor *x = ir_T(n, 0);
    enum npu_dtype dt;
    switch (n->op) {
    case NPU_OP_ADD:
    case NPU_OP_SUB:
    case NPU_OP_MUL:
    case NPU_OP_DIV:
    case NPU_OP_MOD: return infer_broadcast_n(n, 0, 2, 0, true);
    case NPU_OP_POW: return infer_broadcast_n(n, 0, 2, 0, false);
    case NPU_OP_PRELU: {
        enum npu_status st = infer_broadcast_n(n, 0, 2, 0, true);
        if (!st && (n->out[0]->t.ndim != x->ndim ||
                    memcmp(n->out[0]->t.dims, x->dims, sizeof(int64_t) * (size_t)x->ndim)))
            FAIL("slope must broadcast to the input shape");
        return st;
    }
    case NPU_OP_MAX:
    case NPU_OP_MIN:
    case NPU_OP_SUM:
    case NPU_OP_MEAN:
        if (n->nin < 1)
            FAIL("no inputs");
        return infer_broadcast_n(n, 0, n->nin, 0, true);
    case NPU_OP_EQUAL:
    case NPU_OP_LESS:
    case NPU_OP_GREATER:
    case NPU_OP_LESS_OR_EQUAL:
    case NPU_OP_GREATER_OR_EQUAL: return infer_broadcast_n(n, 0, 2, NPU_DTYPE_BOOL, true);
    case NPU_OP_AND:
    case NPU_OP_OR:
    case NPU_OP_XOR:
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_BOOL)
            FAIL("inputs must be bool");
        return infer_broadcast_n(n, 0, 2, NPU_DTYPE_BOOL, true);
    case NPU_OP_WHERE: {
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_BOOL)
            FAIL("condition must be bool, not %s", npu_dtype_name(x->dtype));
        NEED_IN(1);
        NEED_IN(2);
        if (ir_T(n, 1)->dtype != ir_T(n, 2)->dtype)
            FAIL("X and Y dtypes differ (%s vs %s)", npu_dtype_name(ir_T(n, 1)->dtype),
                 npu_dtype_name(ir_T(n, 2)->dtype));
        return infer_broadcast_n(n, 0, 3, ir_T(n, 1)->dtype, false);
    }
    case NPU_OP_NOT:
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_BOOL)
            FAIL("input must be bool");
        return ir_same_as(n, 0, 0);
    case NPU_OP_BITWISE_AND:
    case NPU_OP_BITWISE_OR:
    case NPU_OP_BITWISE_XOR:
        NEED_IN(0);
        if (!npu_dtype_is_int(x->dtype))
            FAIL("inputs must be integers, not %s", npu_dtype_name(x->dtype));
        return infer_broadcast_n(n, 0, 2, 0, true);
    case NPU_OP_BITWISE_NOT:
        NEED_IN(0);
        if (!npu_dtype_is_int(x->dtype))
            FAIL("input must be an integer tensor, not %s", npu_dtype_name(x->dtype));
        return ir_same_as(n, 0, 0);
    case NPU_OP_SQRT:
    case NPU_OP_EXP:
    case NPU_OP_LOG:
    case NPU_OP_RECIPROCAL:
    case NPU_OP_SIGMOID:
    case NPU_OP_TANH:
    case NPU_OP_HARD_SIGMOID:
    case NPU_OP_HARD_SWISH:
    case NPU_OP_ELU:
    case NPU_OP_SELU:
    case NPU_OP_GELU:
    case NPU_OP_SOFTPLUS:
    case NPU_OP_MISH:
    case NPU_OP_ERF:
    case NPU_OP_FLOOR:
    case NPU_OP_CEIL:
    case NPU_OP_ROUND:
    case NPU_OP_SIN:
    case NPU_OP_COS:
    case NPU_OP_FUSED_SILU:
    case NPU_OP_FUSED_GELU_TANH:
        NEED_IN(0);
        if (!npu_dtype_is_float(x->dtype))
            FAIL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
        return ir_same_as(n, 0, 0);
    case NPU_OP_ABS:
    case NPU_OP_NEG:
    case NPU_OP_RELU:
    case NPU_OP_LEAKY_RELU:
    case NPU_OP_SIGN:
    case NPU_OP_IDENTITY:
    case NPU_OP_CLIP:
    case NPU_OP_TRILU:
    case NPU_OP_CUMSUM: NEED_IN(0); return ir_same_as(n, 0, 0);
    case NPU_OP_DROPOUT: {
        NEED_IN(0);
        enum npu_status st = ir_same_as(n, 0, 0);
        if (!st && n->nout > 1)
            st = ir_set_out(n, 1, NPU_DTYPE_BOOL, x->ndim, x->dims);
        return st;
    }
    case NPU_OP_CAST:
        NEED_IN(0);
        dt = npu_dtype_from_onnx(npu_node_int(n, "to", 0));
        if (!dt)
            FAIL("unsupported target type %lld", (long long)npu_node_int(n, "to", 0));
        return ir_set_out(n, 0, dt, x->ndim, x->dims);
    case NPU_OP_CAST_LIKE:
        NEED_IN(0);
        NEED_IN(1);
        return ir_set_out(n, 0, ir_T(n, 1)->dtype, x->ndim, x->dims);
    case NPU_OP_MATMUL:
        NEED_IN(0);
        NEED_IN(1);
        if (x->dtype != ir_T(n, 1)->dtype)
            FAIL("operand dtypes differ (%s vs %s)", npu_dtype_name(x->dtype),
                 npu_dtype_name(ir_T(n, 1)->dtype));
        if (ir_T(n, 2)) { /* our fused bias (docs/ir.md): one value per output column */
            enum npu_status st = matmul_shape(n, x, ir_T(n, 1), x->dtype, 0);
            const struct npu_tensor *o = &n->out[0]->t;
            if (!st && (o->ndim < 1 || ir_T(n, 2)->dtype != x->dtype ||
                        npu_tensor_numel(ir_T(n, 2)) != o->dims[o->ndim - 1]))
                FAIL("fused bias must have one %s per output column", npu_dtype_name(x->dtype));
            return st;
        }
        return matmul_shape(n, x, ir_T(n, 1), x->dtype, 0);
    case NPU_OP_MATMUL_INTEGER:
        NEED_IN(0);
        NEED_IN(1);
        return matmul_shape(n, x, ir_T(n, 1), NPU_DTYPE_INT32, 0);
    case NPU_OP_QLINEAR_MATMUL:
        NEED_IN(0);
        NEED_IN(3);
        NEED_IN(7);
        return matmul_shape(n, x, ir_T(n, 3), ir_T(n, 7)->dtype, 0);
    case NPU_OP_GEMM: {
        NEED_IN(0);
        NEED_IN(1);
        const struct npu_tensor *b = ir_T(n, 1);
        if (x->ndim != 2 || b->ndim != 2)
            FAIL("A and B must be matrices (ranks %d, %d)", x->ndim, b->ndim);
        bool ta = npu_node_int(n, "transA", 0), tb = npu_node_int(n, "transB", 0);
        int64_t M = x->dims[ta ? 1 : 0], K = x->dims[ta ? 0 : 1];
        int64_t K2 = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1];
        if (K != K2)
            FAIL("inner dimensions differ (%lld vs %lld)", (long long)K, (long long)K2);
        int64_t d[2] = {M, N};
        if (ir_T(n, 2)) {
            struct npu_tensor o, mn = {.ndim = 2, .dims = {M, N}};
            if (!ir_broadcast(&mn, ir_T(n, 2), &o) || o.dims[0] != M || o.dims[1] != N ||
                o.ndim != 2)
                FAIL("C does not broadcast to [%lld,%lld]", (long long)M, (long long)N);
        }
        return ir_set_out(n, 0, x->dtype, 2, d);
    }
    case NPU_OP_CONV: return ir_infer_conv(n, 0, 1, x ? x->dtype : 0, false);
    case NPU_OP_CONV_TRANSPOSE: return ir_infer_conv(n, 0, 1, x ? x->dtype : 0, true);
    case NPU_OP_CONV_INTEGER: return ir_infer_conv(n, 0, 1, NPU_DTYPE_INT32, false);
    case NPU_OP_QLINEAR_CONV: NEED_IN(7); return ir_infer_conv(n, 0, 3, ir_T(n, 7)->dtype, false);
    case NPU_OP_EINSUM: return ir_infer_einsum(n);
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVERAGE_POOL: return ir_infer_pool(n);
    case NPU_OP_GLOBAL_AVERAGE_POOL:
    case NPU_OP_GLOBAL_MAX_POOL: {
        NEED_IN(0);
        if (x->ndim < 3)
            FAIL("needs rank >= 3");
        int64_t d[NPU_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            d[i] = i < 2 ? x->dims[i] : 1;
        return ir_set_out(n, 0, x->dtype, x->ndim, d);
    }
    case NPU_OP_BATCH_NORMALIZATION:
    case NPU_OP_INSTANCE_NORMALIZATION: {
        NEED_IN(0);
        if (x->ndim < 2)
            FAIL("needs rank >= 2");
        int np = n->op == NPU_OP_BATCH_NORMALIZATION ? 5 : 3;
        for (int i = 1; i < np; i++) {
            NEED_IN(i);
            if (npu_value_numel(n->in[i]) != x->dims[1])
                FAIL("parameter %d ('%s') must have %lld elements", i, n->in[i]->name,
                     (long long)x->dims[1]);
        }
        enum npu_status st = ir_same_as(n, 0, 0);
        for (int i = 1; !st && i < n->nout; i++)
            st = ir_set_out(n, i, x->dtype, 1, &x->dims[1]);
        return st;
    }
    case NPU_OP_GROUP_NORMALIZATION: {
        /* scale and bias: [C] per channel (opset 21) or [num_groups] per group
         * (opset 18; the same thing when num_groups == C) */
        NEED_IN(0);
        NEED_IN(1);
        NEED_IN(2);
        if (x->ndim < 2)
            FAIL("needs rank >= 2");
        if (!npu_dtype_is_float(x->dtype))
            FAIL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
        if (!npu_node_attr(n, "num_groups"))
            FAIL("attribute num_groups is required");
        int64_t G = npu_node_int(n, "num_groups", 0), C = x->dims[1];
        if (G <= 0 || C % G)
            FAIL("num_groups %lld must be positive and divide the %lld channels", (long long)G,
                 (long long)C);
        for (int i = 1; i < 3; i++) {
            int64_t k = npu_value_numel(n->in[i]);
            if (ir_T(n, i)->ndim != 1 || (k != C && k != G))
                FAIL("%s must have shape [%lld] (per channel) or [%lld] (per group, opset 18)",
                     i == 1 ? "scale" : "bias", (long long)C, (long long)G);
        }
        if (npu_value_numel(n->in[1]) != npu_value_numel(n->in[2]))
            FAIL("scale and bias must have the same shape");
        return ir_same_as(n, 0, 0);
    }
    case NPU_OP_LAYER_NORMALIZATION: {
        NEED_IN(0);
        NEED_IN(1);
        int64_t a;
        if (!ir_norm_axis(npu_node_int(n, "axis", -1), x->ndim, &a))
            FAIL("axis out of range");
        struct npu_tensor ns = {.ndim = x->ndim - (int)a}, o;
        for (int i = 0; i < ns.ndim; i++)
            ns.dims[i] = x->dims[a + i];
        for (int i = 1; i < 3; i++)
            if (ir_T(n, i) && (!ir_broadcast(&ns, ir_T(n, i), &o) || o.ndim != ns.ndim ||
                               memcmp(o.dims, ns.dims, sizeof(int64_t) * (size_t)ns.ndim)))
                FAIL("%s does not broadcast to the normalized shape", i == 1 ? "scale" : "bias");
        enum npu_status st = ir_same_as(n, 0, 0);
        int64_t d[NPU_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            d[i] = i < a ? x->dims[i] : 1;
        dt = npu_dtype_from_onnx(npu_node_int(n, "stash_type", 1));
        for (int i = 1; !st && i < n->nout; i++)
            st = ir_set_out(n, i, dt ? dt : NPU_DTYPE_FP32, x->ndim, d);
        return st;
    }
    case NPU_OP_SOFTMAX:
    case NPU_OP_LOG_SOFTMAX: {
        NEED_IN(0);
        int64_t a;
        if (!ir_norm_axis(npu_node_int(n, "axis", -1), x->ndim, &a))
            FAIL("axis out of range");
        return ir_same_as(n, 0, 0);
    }
    case NPU_OP_REDUCE_MEAN:
    case NPU_OP_REDUCE_SUM:
    case NPU_OP_REDUCE_MAX:
    case NPU_OP_REDUCE_MIN:
    case NPU_OP_REDUCE_PROD:
    case NPU_OP_REDUCE_L2:
    case NPU_OP_REDUCE_SUM_SQUARE:
    case NPU_OP_REDUCE_L1:
    case NPU_OP_REDUCE_LOG_SUM:
    case NPU_OP_REDUCE_LOG_SUM_EXP: return ir_infer_reduce(n);
    case NPU_OP_IS_NAN:
    case NPU_OP_IS_INF:
        NEED_IN(0);
        if (!npu_dtype_is_float(x->dtype))
            FAIL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
        return ir_set_out(n, 0, NPU_DTYPE_BOOL, x->ndim, x->dims);
    case NPU_OP_CELU:
        NEED_IN(0);
        if (x->dtype != NPU_DTYPE_FP32 && x->dtype != NPU_DTYPE_FP16)
            FAIL("input must be fp32 or fp16, not %s", npu_dtype_name(x->dtype));
        return ir_same_as(n, 0, 0);
    case NPU_OP_ONE_HOT: return ir_infer_one_hot(n);
    case NPU_OP_GATHER_ND: return ir_infer_gather_nd(n);
    case NPU_OP_GRID_SAMPLE: {
        NEED_IN(0);
        NEED_IN(1);
        const struct npu_tensor *gr = ir_T(n, 1);
        if (!npu_dtype_is_float(x->dtype) || gr->dtype != x->dtype)
            FAIL("X and grid must be float tensors of one dtype");
        if (x->ndim != 4)
            FAIL("rank-%d input (4-d [N, C, H, W] is supported)", x->ndim);
        if (gr->ndim != 4 || gr->dims[0] != x->dims[0] || gr->dims[3] != 2)
            FAIL("grid must be [N, Ho, Wo, 2] with N = %lld", (long long)x->dims[0]);
        int64_t d[4] = {x->dims[0], x->dims[1], gr->dims[1], gr->dims[2]};
        return ir_set_out(n, 0, x->dtype, 4, d);
    }
    case NPU_OP_ARGMAX:
    case NPU_OP_ARGMIN: return ir_infer_argminmax(n);
    case NPU_OP_RESHAPE: return ir_infer_reshape(n);
    case NPU_OP_FLATTEN: {
        NEED_IN(0);
        int64_t a = npu_node_int(n, "axis", 1);
        if (a < 0)
            a += x->ndim;
        if (a < 0 || a > x->ndim)
            FAIL("axis out of range");
        int64_t d[2] = {prod(x->dims, 0, (int)a), prod(x->dims, (int)a, x->ndim)};
        return ir_set_out(n, 0, x->dtype, 2, d);
    }
    case NPU_OP_TRANSPOSE: {
        NEED_IN(0);
        size_t cnt;
        const int64_t *perm = npu_node_ints(n, "perm", &cnt);
        int64_t d[NPU_MAX_DIMS];
        bool seen[NPU_MAX_DIMS] = {0};
        if (perm && (int)cnt != x->ndim)
            FAIL("perm has %zu entries for rank %d", cnt, x->ndim);
        for (int i = 0; i < x->ndim; i++) {
            int64_t p = perm ? perm[i] : x->ndim - 1 - i;
            if (p < 0 || p >= x->ndim || seen[p])
                FAIL("perm is not a permutation");
            seen[p] = true;
            d[i] = x->dims[p];
        }
        return ir_set_out(n, 0, x->dtype, x->ndim, d);
    }
    case NPU_OP_SQUEEZE: return ir_infer_squeeze(n, false);
    case NPU_OP_UNSQUEEZE: return ir_infer_squeeze(n, true);
    case NPU_OP_CONCAT: return ir_infer_concat(n);
    case NPU_OP_SPLIT: return ir_infer_split(n);
    case NPU_OP_SLICE: return ir_infer_slice(n);
    case NPU_OP_GATHER:
    case NPU_OP_GATHER_ELEMENTS: return ir_infer_gather(n);
    case NPU_OP_PAD: return ir_infer_pad(n);
    case NPU_OP_EXPAND: return ir_infer_expand(n);
    case NPU_OP_TILE: return ir_infer_tile(n);
    case NPU_OP_SHAPE:
    case NPU_OP_SIZE: return ir_infer_shape_ops(g, n, eval);
    case NPU_OP_CONSTANT: {
        const struct npu_tensor *t =
            npu_attrs_tensor(&(struct npu_attrs){n->attr, (size_t)n->nattr}, "value");
        if (!t)
            FAIL("Constant without a tensor value");
        enum npu_status st = ir_set_out(n, 0, t->dtype, t->ndim, t->dims);
        if (!st && eval)
            n->out[0]->known = t->data;
        return st;
    }
    case NPU_OP_CONSTANT_OF_SHAPE: {
        NEED_DATA(0, "shape");
        int64_t d[NPU_MAX_DIMS];
        int r = ir_read_ints(n->in[0], d, NPU_MAX_DIMS);
        if (r < 0)
            FAIL("shape must be an integer vector of at most %d entries", NPU_MAX_DIMS);
        const struct npu_attr *v = npu_node_attr(n, "value");
        dt = NPU_DTYPE_FP32;
        if (v) {
            if (v->type != NPU_ATTR_TENSOR || npu_tensor_numel(v->t) != 1)
                FAIL("value must be a one-element tensor");
            dt = v->t->dtype;
        }
        return ir_set_out(n, 0, dt, r, d);
    }
    case NPU_OP_RANGE: return ir_infer_range(n);
    case NPU_OP_RESIZE: return ir_infer_resize(n);
    case NPU_OP_DEPTH_TO_SPACE:
    case NPU_OP_SPACE_TO_DEPTH: return ir_infer_depth_space(n);
    case NPU_OP_SCATTER_ND:
    case NPU_OP_SCATTER_ELEMENTS: return ir_infer_scatter(n);
    case NPU_OP_STATE_WRITE: return ir_infer_state_write(n);
    case NPU_OP_TOP_K: return ir_infer_topk(n);
    case NPU_OP_RNN:
    case NPU_OP_GRU:
    case NPU_OP_LSTM: return ir_infer_rnn(n);
    case NPU_OP_QUANTIZE_LINEAR:
        NEED_IN(0);
        NEED_IN(1);
        dt = ir_T(n, 2) ? ir_T(n, 2)->dtype : NPU_DTYPE_UINT8;
        if (npu_node_int(n, "output_dtype", 0))
            dt = npu_dtype_from_onnx(npu_node_int(n, "output_dtype", 0));
        if (dt != NPU_DTYPE_UINT8 && dt != NPU_DTYPE_INT8 && dt != NPU_DTYPE_INT16 &&
            dt != NPU_DTYPE_UINT16 && dt != NPU_DTYPE_INT32)
            FAIL("unsupported quantised type %s", npu_dtype_name(dt));
        return ir_set_out(n, 0, dt, x->ndim, x->dims);
    case NPU_OP_DEQUANTIZE_LINEAR:
        NEED_IN(0);
        NEED_IN(1);
        return ir_set_out(n, 0, ir_T(n, 1)->dtype, x->ndim, x->dims);
    case NPU_OP_FUSED_ATTENTION: return ir_infer_attention(n);
    case NPU_OP_RMS_NORMALIZATION: return ir_infer_rms_norm(n);
    case NPU_OP_CENTER_CROP_PAD: return ir_infer_center_crop_pad(n);
    case NPU_OP_COL2IM: return ir_infer_col2im(n);
    case NPU_OP_AFFINE_GRID: return ir_infer_affine_grid(n);
    case NPU_OP_NONE:
    case NPU_OP_COUNT: break;
    default:
        /* the NPU back end's lowered rk.* ops, through the hook it registers */
        if (npu_op_is_rk(n->op)) {
            npu_ext_infer_fn fn = __atomic_load_n(&rk_infer, __ATOMIC_ACQUIRE);
            if (fn)
                return fn(g, n);
            FAIL("an NPU back-end op, but no back end is registered to infer it");
        }
        break;
    }
    FAIL("no shape inference for this op");
}

/* Ops whose contents the small evaluator (npu-eval.c) can compute. */
static bool
evaluable(enum npu_op op)
{
    switch (op) {
    case NPU_OP_SHAPE:
    case NPU_OP_SIZE:
    case NPU_OP_CONSTANT: return false; /* handled above */
    default: return !npu_op_is_rk(op);  /* NPU programs are not evaluated */
    }
}

static enum npu_status
infer_known(struct npu_graph *g, struct npu_node *n)
{
    if (!evaluable(n->op))
        return NPU_OK;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && !npu_value_data(n->in[i]))
            return NPU_OK;
    if (n->nin == 0 && n->op != NPU_OP_CONSTANT)
        return NPU_OK;
    for (int i = 0; i < n->nout; i++)
        if (npu_value_numel(n->out[i]) > KNOWN_MAX_ELEMS)
            return NPU_OK;
    const struct npu_tensor *in[64];
    struct npu_tensor tin[64], *out[64], tout[64];
    if (n->nin > 64 || n->nout > 64)
        return NPU_OK;
    for (int i = 0; i < n->nin; i++) {
        if (n->in[i]) {
            tin[i] = n->in[i]->t;
            tin[i].data = (void *)npu_value_data(n->in[i]);
            in[i] = &tin[i];
        } else {
            in[i] = NULL;
        }
    }
    for (int i = 0; i < n->nout; i++) {
        tout[i] = n->out[i]->t;
        tout[i].data = npu_graph_alloc(g, (size_t)npu_tensor_nbytes(&tout[i]));
        if (!tout[i].data)
            return NPU_ERR_NOMEM;
        out[i] = &tout[i];
    }
    if (npu_eval_node(n, in, out) != NPU_OK)
        return NPU_OK; /* not evaluable here: stays unknown */
    for (int i = 0; i < n->nout; i++)
        n->out[i]->known = tout[i].data;
    return NPU_OK;
}

enum npu_status
ir_infer_node(struct npu_graph *g, struct npu_node *n, bool eval)
{
    for (int i = 0; i < n->nin; i++) {
        const struct npu_value *v = n->in[i];
        if (v && (v->t.dtype == NPU_DTYPE_UNDEFINED || npu_tensor_nbytes(&v->t) < 0))
            FAIL("input %d ('%s') has no type", i, v->name);
    }
    int maxout = 1;
    switch (n->op) {
    case NPU_OP_SPLIT: maxout = 64; break;
    case NPU_OP_DROPOUT:
    case NPU_OP_MAX_POOL:
    case NPU_OP_TOP_K: maxout = 2; break;
    case NPU_OP_LAYER_NORMALIZATION:
    case NPU_OP_LSTM: maxout = 3; break;
    case NPU_OP_RNN:
    case NPU_OP_GRU: maxout = 2; break;
    case NPU_OP_BATCH_NORMALIZATION: maxout = 5; break;
    default: maxout = npu_op_is_rk(n->op) ? 8 : 1; break;
    }
    if (n->nout < 1 || n->nout > maxout)
        FAIL("has %d outputs; the op defines %s%d", n->nout, maxout > 1 ? "1 to " : "", maxout);
    if (eval)
        for (int i = 0; i < n->nout; i++)
            n->out[i]->known = NULL;
    enum npu_status st = infer_shape(g, n, eval);
    if (st || !eval)
        return st;
    return infer_known(g, n);
}

enum npu_status
npu_infer_node(struct npu_graph *g, struct npu_node *n)
{
    return ir_infer_node(g, n, true);
}

enum npu_status
npu_graph_infer(struct npu_graph *g)
{
    npu_graph_for_each_node (g, n) {
        enum npu_status st = npu_infer_node(g, n);
        if (st)
            return st;
    }
    return NPU_OK;
}
