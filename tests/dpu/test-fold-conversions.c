/* SPDX-License-Identifier: MIT */
/*
 * test-fold-conversions.c: the back-end pass fold_conversions (compiler/backend/
 * fold-conversions.c) on hand-built lowered graphs, without running them:
 *  1. x -> QuantizeLinear (scale 0.5, zero 3) -> rk.ToNpu (int8): the Quantize goes, the
 *     conversion reads x and its int8 result carries the scale and zero point.
 *  2. The same with the conversion's result already carrying another quantisation (a text
 *     graph's tensor annotation): a different scale, or the same scale with another zero
 *     point, keeps the Quantize (folding would make the conversion quantise with the
 *     Quantize's zero point and relabel the NPU tensor, which readers of its annotation, a
 *     dequantising rk.ToHost, would then read with another zero point than before).
 */
#include "graph-case.h"
#include "npu/npu-backend.h"

static struct npu_value *
i8_const(struct npu_graph *g, const char *name, int8_t v)
{
    struct npu_tensor t = {.dtype = NPU_DTYPE_INT8, .ndim = 0, .data = &v};
    return npu_graph_add_const(g, name, &t);
}

/* x [1, 16] -> Q(0.5, 3) -> rk.ToNpu int8 (result annotated pre_scale / pre_zero when
 * pre_scale != 0) -> rk.ToHost int8 -> output */
static struct npu_graph *
build(float pre_scale, int32_t pre_zero, struct npu_node **to_npu)
{
    struct npu_graph *g = npu_graph_new("fold");
    int64_t d[2] = {1, 16};
    float s = 0.5f;
    struct npu_value *x = gc_input(g, "x", 2, d);
    struct npu_value *qin[3] = {x, gc_const(g, "s", 0, d, &s), i8_const(g, "z", 3)};
    struct npu_value *q = gc_done(g, gc_node(g, NPU_OP_QUANTIZE_LINEAR, "q", qin, 3, 1));
    struct npu_node *tn = gc_node(g, NPU_OP_RK_TO_NPU, "tn", &q, 1, 1);
    npu_node_set_string(g, tn, "dtype", npu_dtype_name(NPU_DTYPE_INT8));
    struct npu_value *y = gc_done(g, tn);
    CHECK(q && y);
    y->t.qscale = pre_scale;
    y->t.qzero = pre_zero;
    struct npu_node *th = gc_node(g, NPU_OP_RK_TO_HOST, "th", &y, 1, 1);
    npu_node_set_string(g, th, "dtype", npu_dtype_name(NPU_DTYPE_INT8));
    *to_npu = tn;
    return gc_output(g, gc_done(g, th));
}

static int
count_op(const struct npu_graph *g, enum npu_op op)
{
    int k = 0;
    npu_graph_for_each_node (g, n)
        k += n->op == op;
    return k;
}

static void
check(float pre_scale, int32_t pre_zero, bool folds)
{
    struct npu_node *tn;
    struct npu_graph *g = build(pre_scale, pre_zero, &tn);
    CHECK(g != NULL);
    CHECK_EQ_INT(NPU_OK, npu_be_pass_fold_conversions(g));
    CHECK_EQ_INT(folds ? 0 : 1, count_op(g, NPU_OP_QUANTIZE_LINEAR));
    CHECK(tn->in[0]->t.dtype == (folds ? NPU_DTYPE_FP32 : NPU_DTYPE_INT8));
    if (folds) {
        CHECK(tn->out[0]->t.qscale == 0.5f);
        CHECK_EQ_INT(3, tn->out[0]->t.qzero);
    } else {
        CHECK(tn->out[0]->t.qscale == pre_scale);
        CHECK_EQ_INT(pre_zero, tn->out[0]->t.qzero);
    }
    printf("annotation %g / %d: %s\n", (double)pre_scale, (int)pre_zero, folds ? "folded" : "kept");
    npu_graph_free(g);
}

int
main(void)
{
    npu_backend_register(); /* the rk ops' inference */
    check(0.0f, 0, true);   /* no annotation */
    check(0.5f, 3, true);   /* the same quantisation */
    check(0.25f, 3, false); /* another scale */
    check(0.5f, 0, false);  /* the same scale, another zero point */
    return npu_test_done("dpu-fold-conversions");
}
