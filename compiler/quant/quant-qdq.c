// SPDX-License-Identifier: MIT
/*
 * quant-qdq.c: the quantised graph as a QDQ ONNX model (npuc --emit-qdq). A
 * copy of the graph is brought to standard ONNX ops with the same arithmetic:
 *
 *   QLinearConv / QLinearMatMul (x_q, w_q, b_q)  ->  DequantizeLinear of x_q,
 *       of the int8 weights (per output channel: axis 0 for Conv, 1 for
 *       MatMul) and of the int32 bias (scale sx * sw), the float Conv / MatMul,
 *       QuantizeLinear to y_q (its saturation is the ReLU / Clip the int8
 *       result applies);
 *   fused activations, MatMul's fused bias, npu.SiLU, npu.GeluTanh,
 *   npu.Attention and Gelu -> their ONNX ops (opset 17 has no Gelu);
 *
 * then written with npu_onnx_save (frontend/onnx). The integer products are
 * exact in both (int8 x int8 sums in int32, or in fp32 of the dequantised
 * values, exact below 2^24), so ONNX Runtime computes what the CPU executor
 * computes for our graph up to fp32 rounding of the scales.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-onnx.h"
#include "quant-rewrite.h"

struct qctx {
    struct npu_graph *g;
    struct npu_node *pos; /* insert before (NULL: append) */
    const char *base;
    int k;
    enum npu_status st;
};

/* A node of op reading in, defining y (or a fresh value), inserted and inferred. */
static struct npu_value *
mk(struct qctx *c, enum npu_op op, struct npu_value *const *in, int nin, struct npu_value *y,
   const char *attr, int64_t iv, const int64_t *ints, size_t nints)
{
    if (c->st)
        return NULL;
    char name[300];
    snprintf(name, sizeof(name), "%s_qdq%d", c->base, c->k++);
    struct npu_node *n = y ? npu_node_new_v(c->g, op, name, in, nin, &y, 1)
                           : npu_node_new(c->g, op, name, in, nin, 1, NULL);
    if (!n) {
        c->st = NPU_ERR_NOMEM;
        return NULL;
    }
    if (attr && (ints ? npu_node_set_ints(c->g, n, attr, ints, nints)
                      : npu_node_set_int(c->g, n, attr, iv))) {
        c->st = NPU_ERR_NOMEM;
        return NULL;
    }
    if (c->pos)
        npu_graph_insert_before(c->g, c->pos, n);
    else
        npu_graph_append(c->g, n);
    if ((c->st = npu_infer_node(c->g, n)))
        return NULL;
    return n->out[0];
}

static struct npu_value *
cf(struct qctx *c, float v)
{
    char name[300];
    snprintf(name, sizeof(name), "%s_c%d", c->base, c->k++);
    struct npu_value *r = npu_graph_const_f32(c->g, name, &v, 1, true);
    if (!r)
        c->st = NPU_ERR_NOMEM;
    return r;
}

#define MK2(op, a, b, y) mk(c, op, (struct npu_value *[]){a, b}, 2, y, NULL, 0, NULL, 0)
#define MK1(op, a, y) mk(c, op, (struct npu_value *[]){a}, 1, y, NULL, 0, NULL, 0)

static void
qlinear(struct qctx *c, struct npu_node *n, struct npu_value *y)
{
    bool conv = n->op == NPU_OP_QLINEAR_CONV;
    struct npu_value *w = n->in[3], *ws = n->in[4];
    int64_t K = conv ? w->t.dims[0] : w->t.dims[1];
    struct npu_value *xf = mk(c, NPU_OP_DEQUANTIZE_LINEAR, n->in, 3, NULL, NULL, 0, NULL, 0);
    struct npu_value *wf =
        mk(c, NPU_OP_DEQUANTIZE_LINEAR, (struct npu_value *[]){w, ws, n->in[5]}, 3, NULL,
           npu_value_numel(ws) > 1 ? "axis" : NULL, conv ? 0 : 1, NULL, 0);
    struct npu_value *bf = NULL;
    if (n->nin > 8 && n->in[8]) {
        /* bias scale sx * sw per kernel, zero point 0 */
        char name[300];
        float *bs = npu_graph_alloc(c->g, sizeof(float) * (size_t)K);
        int32_t *bz = npu_graph_alloc(c->g, sizeof(int32_t) * (size_t)K);
        if (!bs || !bz) {
            c->st = NPU_ERR_NOMEM;
            return;
        }
        double sx = npu_value_get_f64(n->in[1], 0);
        for (int64_t k = 0; k < K; k++)
            bs[k] = (float)(sx * npu_value_get_f64(ws, npu_value_numel(ws) > 1 ? k : 0));
        struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {K}, .data = bs};
        snprintf(name, sizeof(name), "%s_b_scale", c->base);
        struct npu_value *bsv = npu_graph_add_const_owned(c->g, name, &t);
        t.dtype = NPU_DTYPE_INT32;
        t.data = bz;
        snprintf(name, sizeof(name), "%s_b_zp", c->base);
        struct npu_value *bzv = npu_graph_add_const_owned(c->g, name, &t);
        if (!bsv || !bzv) {
            c->st = NPU_ERR_NOMEM;
            return;
        }
        bf = mk(c, NPU_OP_DEQUANTIZE_LINEAR, (struct npu_value *[]){n->in[8], bsv, bzv}, 3, NULL,
                "axis", 0, NULL, 0);
    }
    if (c->st)
        return;
    struct npu_value *in[3] = {xf, wf, bf};
    char name[300];
    snprintf(name, sizeof(name), "%s_float", c->base);
    /* ONNX's MatMul has no bias: QLinearMatMul's (input 8) becomes an Add after it */
    struct npu_node *p = npu_node_new(c->g, conv ? NPU_OP_CONV : NPU_OP_MATMUL, n->name, in,
                                      bf && conv ? 3 : 2, 1, NULL);
    if (!p) {
        c->st = NPU_ERR_NOMEM;
        return;
    }
    for (int i = 0; conv && i < n->nattr; i++)
        if (npu_node_set_attr(c->g, p, &n->attr[i])) {
            c->st = NPU_ERR_NOMEM;
            return;
        }
    if (c->pos)
        npu_graph_insert_before(c->g, c->pos, p);
    else
        npu_graph_append(c->g, p);
    if ((c->st = npu_infer_node(c->g, p)))
        return;
    struct npu_value *pr = bf && !conv ? MK2(NPU_OP_ADD, p->out[0], bf, NULL) : p->out[0];
    if (c->st)
        return;
    mk(c, NPU_OP_QUANTIZE_LINEAR, (struct npu_value *[]){pr, n->in[6], n->in[7]}, 3, y, NULL, 0,
       NULL, 0);
}

static void
gelu_tanh(struct qctx *c, struct npu_value *x, struct npu_value *y)
{
    struct npu_value *x3 = MK2(NPU_OP_MUL, MK2(NPU_OP_MUL, x, x, NULL), x, NULL);
    struct npu_value *in = MK2(NPU_OP_ADD, MK2(NPU_OP_MUL, x3, cf(c, 0.044715f), NULL), x, NULL);
    struct npu_value *t =
        MK1(NPU_OP_TANH, MK2(NPU_OP_MUL, in, cf(c, (float)sqrt(2.0 / M_PI)), NULL), NULL);
    struct npu_value *h = MK2(NPU_OP_MUL, MK2(NPU_OP_ADD, t, cf(c, 1), NULL), x, NULL);
    MK2(NPU_OP_MUL, h, cf(c, 0.5f), y);
}

static void
gelu_erf(struct qctx *c, struct npu_value *x, struct npu_value *y)
{
    struct npu_value *e = MK1(NPU_OP_ERF, MK2(NPU_OP_MUL, x, cf(c, (float)M_SQRT1_2), NULL), NULL);
    struct npu_value *h = MK2(NPU_OP_MUL, MK2(NPU_OP_ADD, e, cf(c, 1), NULL), x, NULL);
    MK2(NPU_OP_MUL, h, cf(c, 0.5f), y);
}

static void
attention(struct qctx *c, struct npu_node *n, struct npu_value *y)
{
    struct npu_value *q = n->in[0], *k = n->in[1], *v = n->in[2];
    struct npu_value *mask = n->nin > 3 ? n->in[3] : NULL;
    int64_t perm[NPU_MAX_DIMS];
    int kr = k->t.ndim;
    for (int i = 0; i < kr; i++)
        perm[i] = i;
    perm[kr - 2] = kr - 1;
    perm[kr - 1] = kr - 2;
    float scale = npu_node_float(n, "scale", 0);
    if (scale == 0)
        scale = 1.0f / sqrtf((float)q->t.dims[q->t.ndim - 1]);
    struct npu_value *kt =
        mk(c, NPU_OP_TRANSPOSE, (struct npu_value *[]){k}, 1, NULL, "perm", 0, perm, (size_t)kr);
    struct npu_value *s = MK2(NPU_OP_MUL, MK2(NPU_OP_MATMUL, q, kt, NULL), cf(c, scale), NULL);
    if (mask)
        s = MK2(NPU_OP_ADD, s, mask, NULL);
    struct npu_value *p =
        mk(c, NPU_OP_SOFTMAX, (struct npu_value *[]){s}, 1, NULL, "axis", -1, NULL, 0);
    MK2(NPU_OP_MATMUL, p, v, y);
}

/* Replaces n by standard ops; false when n is standard already. */
static bool
standardise(struct npu_graph *g, struct npu_node *n, enum npu_status *st)
{
    bool act = npu_node_attr(n, "npu_act") != NULL;
    bool mm_bias = n->op == NPU_OP_MATMUL && n->nin > 2 && n->in[2];
    if (!(n->op == NPU_OP_QLINEAR_CONV || n->op == NPU_OP_QLINEAR_MATMUL ||
          n->op == NPU_OP_FUSED_SILU || n->op == NPU_OP_FUSED_GELU_TANH || n->op == NPU_OP_GELU ||
          n->op == NPU_OP_FUSED_ATTENTION || act || mm_bias))
        return false;
    struct qctx cx = {.g = g, .pos = n->next, .base = n->name && n->name[0] ? n->name : "node"};
    struct qctx *c = &cx;
    struct npu_value *y = n->out[0];
    if (n->nout != 1) {
        *st = NPU_ERR_UNSUPPORTED;
        return false;
    }
    npu_graph_remove(g, n);
    switch (n->op) {
    case NPU_OP_QLINEAR_CONV:
    case NPU_OP_QLINEAR_MATMUL: qlinear(c, n, y); break;
    case NPU_OP_FUSED_SILU:
        MK2(NPU_OP_MUL, n->in[0], MK1(NPU_OP_SIGMOID, n->in[0], NULL), y);
        break;
    case NPU_OP_FUSED_GELU_TANH: gelu_tanh(c, n->in[0], y); break;
    case NPU_OP_GELU:
        if (strcmp(npu_node_string(n, "approximate", "none"), "none"))
            gelu_tanh(c, n->in[0], y);
        else
            gelu_erf(c, n->in[0], y);
        break;
    case NPU_OP_FUSED_ATTENTION: attention(c, n, y); break;
    default: {
        /* Conv / Gemm / MatMul with a fused bias or activation */
        struct npu_node *core = quant_bare_copy(g, n, mm_bias ? 2 : n->nin, n->op);
        if (!core) {
            c->st = NPU_ERR_NOMEM;
            break;
        }
        if (c->pos)
            npu_graph_insert_before(g, c->pos, core);
        else
            npu_graph_append(g, core);
        if ((c->st = npu_infer_node(g, core)))
            break;
        struct npu_value *cur = core->out[0];
        if (mm_bias)
            cur = MK2(NPU_OP_ADD, cur, n->in[2], act ? NULL : y);
        if (act && !c->st) {
            struct npu_node *a = quant_act_node(g, n, cur, y);
            if (!a) {
                c->st = NPU_ERR_NOMEM;
                break;
            }
            if (c->pos)
                npu_graph_insert_before(g, c->pos, a);
            else
                npu_graph_append(g, a);
            c->st = npu_infer_node(g, a);
        }
    }
    }
    *st = c->st;
    return true;
}

enum npu_status
npu_quant_emit_qdq(const struct npu_graph *g, const char *path)
{
    struct npu_graph *c = quant_graph_clone(g);
    enum npu_status st = NPU_OK;
    if (!c)
        return NPU_ERR_NOMEM;
    npu_graph_for_each_node_safe (c, n, tmp) {
        /* a layer norm of a centred stream (quant.c centre_streams): ONNX's computes the
         * mean, which is then ~0 */
        npu_node_del_attr(n, "npu_centered");
        standardise(c, n, &st);
        if (st) {
            npu_err(QDOM, "%s: node '%s' (%s): cannot write it in standard ONNX ops", path, n->name,
                    npu_op_name(n->op));
            goto out;
        }
    }
    if ((st = npu_graph_update_uses(c)))
        goto out;
    npu_graph_gc_values(c);
    /* opset 17: LayerNormalization; per-axis QuantizeLinear from 13; int16 Quantize /
     * DequantizeLinear (w16a16i) from 21 */
    int opset = c->opset > 17 ? c->opset : 17;
    npu_graph_for_each_node (c, n)
        if ((n->op == NPU_OP_QUANTIZE_LINEAR || n->op == NPU_OP_DEQUANTIZE_LINEAR) &&
            ((n->nout && n->out[0]->t.dtype == NPU_DTYPE_INT16) ||
             (n->nin && n->in[0]->t.dtype == NPU_DTYPE_INT16)) &&
            opset < 21)
            opset = 21;
    st = npu_onnx_save(c, opset, path);
out:
    npu_graph_free(c);
    return st;
}
