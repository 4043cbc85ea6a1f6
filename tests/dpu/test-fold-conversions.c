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
 *  3. x a state input, or a constant: the Quantize stays (branch review5). A state's dtype
 *     and layout in device memory are the session's contract (the runtime keeps a state input
 *     whose only reader is its rk.ToNpu resident, npu-memplan.c; npu_prog_session_write_state
 *     and routed copies write it as fp16 / fp32): folded, the state would be held as int8
 *     with the Quantize's scale, a host write into it refused and another program's route
 *     into it misread. A constant is the constant folder's, not a conversion's (as
 *     fold_reshape leaves both).
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
enum xkind { X_INPUT, X_STATE, X_CONST };

static struct npu_graph *
build(float pre_scale, int32_t pre_zero, enum xkind xk, struct npu_node **to_npu)
{
    struct npu_graph *g = npu_graph_new("fold");
    int64_t d[2] = {1, 16};
    float s = 0.5f, xv[16];
    for (int i = 0; i < 16; i++)
        xv[i] = 0.25f * (float)i - 2.0f;
    struct npu_value *x = xk == X_CONST ? gc_const(g, "x", 2, d, xv) : gc_input(g, "x", 2, d);
    x->is_state = xk == X_STATE;
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
check_x(float pre_scale, int32_t pre_zero, enum xkind xk, bool folds)
{
    struct npu_node *tn;
    struct npu_graph *g = build(pre_scale, pre_zero, xk, &tn);
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
    static const char *const kinds[] = {"input", "state input", "constant"};
    printf("x a %s, annotation %g / %d: %s\n", kinds[xk], (double)pre_scale, (int)pre_zero,
           folds ? "folded" : "kept");
    npu_graph_free(g);
}

static void
check(float pre_scale, int32_t pre_zero, bool folds)
{
    check_x(pre_scale, pre_zero, X_INPUT, folds);
}

int
main(void)
{
    npu_backend_register(); /* the rk ops' inference */
    check(0.0f, 0, true);   /* no annotation */
    check(0.5f, 3, true);   /* the same quantisation */
    check(0.25f, 3, false); /* another scale */
    check(0.5f, 0, false);  /* the same scale, another zero point */
    check_x(0.0f, 0, X_STATE, false);
    check_x(0.0f, 0, X_CONST, false);
    return npu_test_done("dpu-fold-conversions");
}
