/* SPDX-License-Identifier: MIT */
/*
 * ir_test.c: the IR on hand-built graphs: shape and dtype inference per op
 * (expected shapes worked out by hand from the ONNX spec), compile-time
 * evaluation of shape arithmetic, the verifier catching broken graphs, and the
 * text form (round trip, blobs with a sidecar, parse errors).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "npu-test.h"
#include "npu/npu-ir.h"
#include "npu/npu-passes.h"

static char last_log[1024];
static int nlogs;

static void
capture(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    snprintf(last_log, sizeof(last_log), "%s: %s", domain, msg);
    nlogs++;
}

static struct npu_value *
in(struct npu_graph *g, const char *name, enum npu_dtype dt, int nd, ...)
{
    int64_t d[NPU_MAX_DIMS];
    va_list ap;
    va_start(ap, nd);
    for (int i = 0; i < nd; i++)
        d[i] = va_arg(ap, int);
    va_end(ap);
    return npu_graph_add_input(g, name, dt, nd, d);
}

static struct npu_value *
ci64(struct npu_graph *g, int n, ...)
{
    int64_t d[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        d[i] = va_arg(ap, int);
    va_end(ap);
    return npu_graph_const_i64(g, "c", d, n, false);
}

static struct npu_node *
node(struct npu_graph *g, enum npu_op op, int nin, struct npu_value **ins, int nout)
{
    struct npu_node *n = npu_node_new(g, op, npu_op_name(op), ins, nin, nout, NULL);
    npu_graph_append(g, n);
    return n;
}

/* Infers n and checks output 0 against dtype and dims. */
static bool
shape_is(struct npu_graph *g, struct npu_node *n, enum npu_dtype dt, int nd, ...)
{
    if (npu_infer_node(g, n) != NPU_OK)
        return false;
    const struct npu_tensor *t = &n->out[0]->t;
    if (t->dtype != dt || t->ndim != nd)
        return false;
    va_list ap;
    va_start(ap, nd);
    bool ok = true;
    for (int i = 0; i < nd; i++)
        ok &= t->dims[i] == va_arg(ap, int);
    va_end(ap);
    return ok;
}

static void
test_inference(void)
{
    struct npu_graph *g = npu_graph_new("t");
    struct npu_value *x = in(g, "x", NPU_DTYPE_FP32, 4, 2, 3, 8, 8);
    struct npu_value *b = in(g, "b", NPU_DTYPE_FP32, 2, 8, 1);
    struct npu_value *v[6];
    struct npu_node *n;

    v[0] = x, v[1] = b;
    CHECK(shape_is(g, node(g, NPU_OP_ADD, 2, v, 1), NPU_DTYPE_FP32, 4, 2, 3, 8, 8));
    CHECK(shape_is(g, node(g, NPU_OP_LESS, 2, v, 1), NPU_DTYPE_BOOL, 4, 2, 3, 8, 8));

    /* Conv 3x3 stride 2 pad 1, 4 out channels: 8 -> 4 */
    float wdata[4 * 3 * 9] = {0};
    struct npu_tensor wt = {
        .dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {4, 3, 3, 3}, .data = wdata};
    v[1] = npu_graph_add_const(g, "w", &wt);
    n = node(g, NPU_OP_CONV, 2, v, 1);
    npu_node_set_ints(g, n, "strides", (int64_t[]){2, 2}, 2);
    npu_node_set_ints(g, n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 4, 4, 4));
    /* SAME_UPPER with stride 3: ceil(8/3) = 3 */
    n = node(g, NPU_OP_CONV, 2, v, 1);
    npu_node_set_string(g, n, "auto_pad", "SAME_UPPER");
    npu_node_set_ints(g, n, "strides", (int64_t[]){3, 3}, 2);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 4, 3, 3));
    /* group mismatch refused */
    n = node(g, NPU_OP_CONV, 2, v, 1);
    npu_node_set_int(g, n, "group", 3);
    CHECK(npu_infer_node(g, n) != NPU_OK);

    /* MaxPool 3x3 stride 2, ceil mode: (8-3)/2 ceil +1 = 4 */
    n = node(g, NPU_OP_MAX_POOL, 1, &x, 1);
    npu_node_set_ints(g, n, "kernel_shape", (int64_t[]){3, 3}, 2);
    npu_node_set_ints(g, n, "strides", (int64_t[]){2, 2}, 2);
    npu_node_set_int(g, n, "ceil_mode", 1);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 3, 4, 4));
    n = node(g, NPU_OP_GLOBAL_AVERAGE_POOL, 1, &x, 1);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 3, 1, 1));

    /* MatMul with batch broadcast and 1-D operands */
    struct npu_value *a = in(g, "a", NPU_DTYPE_FP32, 3, 5, 2, 7);
    struct npu_value *m = in(g, "m", NPU_DTYPE_FP32, 2, 7, 4);
    struct npu_value *vec = in(g, "vec", NPU_DTYPE_FP32, 1, 7);
    v[0] = a, v[1] = m;
    CHECK(shape_is(g, node(g, NPU_OP_MATMUL, 2, v, 1), NPU_DTYPE_FP32, 3, 5, 2, 4));
    v[1] = vec;
    CHECK(shape_is(g, node(g, NPU_OP_MATMUL, 2, v, 1), NPU_DTYPE_FP32, 2, 5, 2));
    v[0] = m;
    CHECK(npu_infer_node(g, node(g, NPU_OP_MATMUL, 2, v, 1)) != NPU_OK);
    /* Gemm transB */
    struct npu_value *wa = in(g, "wa", NPU_DTYPE_FP32, 2, 3, 7),
                     *wb = in(g, "wb", NPU_DTYPE_FP32, 2, 9, 7);
    v[0] = wa, v[1] = wb;
    n = node(g, NPU_OP_GEMM, 2, v, 1);
    npu_node_set_int(g, n, "transB", 1);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 2, 3, 9));

    /* Reshape with 0 and -1 */
    v[0] = x, v[1] = ci64(g, 3, 0, -1, 16);
    CHECK(shape_is(g, node(g, NPU_OP_RESHAPE, 2, v, 1), NPU_DTYPE_FP32, 3, 2, 12, 16));
    v[1] = ci64(g, 2, 5, -1);
    CHECK(npu_infer_node(g, node(g, NPU_OP_RESHAPE, 2, v, 1)) != NPU_OK); /* 384 % 5 */
    /* Flatten, Transpose, Squeeze/Unsqueeze */
    n = node(g, NPU_OP_FLATTEN, 1, &x, 1);
    npu_node_set_int(g, n, "axis", 2);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 2, 6, 64));
    n = node(g, NPU_OP_TRANSPOSE, 1, &x, 1);
    npu_node_set_ints(g, n, "perm", (int64_t[]){0, 2, 3, 1}, 4);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 8, 8, 3));
    v[0] = b, v[1] = ci64(g, 1, -1);
    CHECK(shape_is(g, node(g, NPU_OP_SQUEEZE, 2, v, 1), NPU_DTYPE_FP32, 1, 8));
    v[0] = b, v[1] = ci64(g, 2, 0, 3);
    CHECK(shape_is(g, node(g, NPU_OP_UNSQUEEZE, 2, v, 1), NPU_DTYPE_FP32, 4, 1, 8, 1, 1));
    /* Slice: negative start, step 2, clamped end */
    v[0] = x, v[1] = ci64(g, 2, -6, 0), v[2] = ci64(g, 2, 1000, 8), v[3] = ci64(g, 2, 2, 3),
    v[4] = ci64(g, 2, 2, 3);
    CHECK(shape_is(g, node(g, NPU_OP_SLICE, 5, v, 1), NPU_DTYPE_FP32, 4, 2, 3, 3, 3));
    /* Slice with a negative step: 7,5,3,1 */
    v[1] = ci64(g, 1, -1), v[2] = ci64(g, 1, -1000), v[3] = ci64(g, 1, 3), v[4] = ci64(g, 1, -2);
    CHECK(shape_is(g, node(g, NPU_OP_SLICE, 5, v, 1), NPU_DTYPE_FP32, 4, 2, 3, 8, 4));
    /* Concat, Split */
    v[0] = x, v[1] = x;
    n = node(g, NPU_OP_CONCAT, 2, v, 1);
    npu_node_set_int(g, n, "axis", -3);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 6, 8, 8));
    v[1] = ci64(g, 2, 3, 5);
    n = node(g, NPU_OP_SPLIT, 2, v, 2);
    npu_node_set_int(g, n, "axis", 3);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 3, 8, 3) && n->out[1]->t.dims[3] == 5);
    n = node(g, NPU_OP_SPLIT, 1, v, 3);
    npu_node_set_int(g, n, "axis", 2); /* 8 into 3: 3,3,2 */
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 3, 3, 8) && n->out[2]->t.dims[2] == 2);
    /* Gather: data [2,3,8,8] axis 1 with indices [4,5] -> [2,4,5,8,8] */
    struct npu_value *idx = in(g, "idx", NPU_DTYPE_INT64, 2, 4, 5);
    v[0] = x, v[1] = idx;
    n = node(g, NPU_OP_GATHER, 2, v, 1);
    npu_node_set_int(g, n, "axis", 1);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 5, 2, 4, 5, 8, 8));
    /* Pad, Expand, Tile */
    v[0] = x, v[1] = ci64(g, 8, 0, 0, 1, 2, 0, 0, 3, 4);
    CHECK(shape_is(g, node(g, NPU_OP_PAD, 2, v, 1), NPU_DTYPE_FP32, 4, 2, 3, 12, 14));
    v[0] = b, v[1] = ci64(g, 3, 4, 1, 5);
    CHECK(shape_is(g, node(g, NPU_OP_EXPAND, 2, v, 1), NPU_DTYPE_FP32, 3, 4, 8, 5));
    v[1] = ci64(g, 2, 2, 3);
    CHECK(shape_is(g, node(g, NPU_OP_TILE, 2, v, 1), NPU_DTYPE_FP32, 2, 16, 3));
    /* Reductions and ArgMax */
    v[0] = x, v[1] = ci64(g, 2, 1, -1);
    n = node(g, NPU_OP_REDUCE_MEAN, 2, v, 1);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 1, 8, 1));
    n = node(g, NPU_OP_REDUCE_SUM, 2, v, 1);
    npu_node_set_int(g, n, "keepdims", 0);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 2, 2, 8));
    /* the opset < 18 form: axes as an attribute, no axes input (graphs built in memory) */
    static const int64_t ax_attr[2] = {1, -1};
    n = node(g, NPU_OP_REDUCE_MEAN, 1, v, 1);
    CHECK_EQ_INT(NPU_OK, npu_node_set_ints(g, n, "axes", ax_attr, 2));
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 1, 8, 1));
    n = node(g, NPU_OP_ARGMAX, 1, v, 1);
    npu_node_set_int(g, n, "axis", 2);
    npu_node_set_int(g, n, "keepdims", 0);
    CHECK(shape_is(g, n, NPU_DTYPE_INT64, 3, 2, 3, 8));
    /* Resize by scales and by sizes */
    float sc[4] = {1, 1, 2, 0.5f};
    v[0] = x, v[1] = NULL, v[2] = npu_graph_const_f32(g, "sc", sc, 4, false);
    CHECK(shape_is(g, node(g, NPU_OP_RESIZE, 3, v, 1), NPU_DTYPE_FP32, 4, 2, 3, 16, 4));
    v[2] = NULL, v[3] = ci64(g, 4, 2, 3, 5, 7);
    CHECK(shape_is(g, node(g, NPU_OP_RESIZE, 4, v, 1), NPU_DTYPE_FP32, 4, 2, 3, 5, 7));
    /* Einsum */
    v[0] = a, v[1] = m;
    n = node(g, NPU_OP_EINSUM, 2, v, 1);
    npu_node_set_string(g, n, "equation", "bij,jk->bik");
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 3, 5, 2, 4));
    n = node(g, NPU_OP_EINSUM, 2, v, 1);
    npu_node_set_string(g, n, "equation", "...ij,jk");
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 3, 5, 2, 4));
    /* Cast, Where, LayerNorm, Quantize */
    n = node(g, NPU_OP_CAST, 1, &x, 1);
    npu_node_set_int(g, n, "to", 10);
    CHECK(shape_is(g, n, NPU_DTYPE_FP16, 4, 2, 3, 8, 8));
    struct npu_value *cond = in(g, "cond", NPU_DTYPE_BOOL, 1, 8);
    v[0] = cond, v[1] = x, v[2] = b;
    CHECK(shape_is(g, node(g, NPU_OP_WHERE, 3, v, 1), NPU_DTYPE_FP32, 4, 2, 3, 8, 8));
    float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    v[0] = x, v[1] = npu_graph_const_f32(g, "g", ones, 8, false);
    n = node(g, NPU_OP_LAYER_NORMALIZATION, 2, v, 1);
    CHECK(shape_is(g, n, NPU_DTYPE_FP32, 4, 2, 3, 8, 8));
    v[1] = npu_graph_const_f32(g, "s", ones, 1, true);
    CHECK(shape_is(g, node(g, NPU_OP_QUANTIZE_LINEAR, 2, v, 1), NPU_DTYPE_UINT8, 4, 2, 3, 8, 8));
    /* Attention: Q [2,4,6,16] K [2,4,10,16] V [2,4,10,32] -> [2,4,6,32] */
    v[0] = in(g, "q", NPU_DTYPE_FP32, 4, 2, 4, 6, 16);
    v[1] = in(g, "k", NPU_DTYPE_FP32, 4, 2, 4, 10, 16);
    v[2] = in(g, "v", NPU_DTYPE_FP32, 4, 2, 4, 10, 32);
    v[3] = in(g, "mask", NPU_DTYPE_FP32, 4, 2, 1, 1, 10);
    CHECK(shape_is(g, node(g, NPU_OP_FUSED_ATTENTION, 4, v, 1), NPU_DTYPE_FP32, 4, 2, 4, 6, 32));
    /* Range and ConstantOfShape (value-dependent) */
    v[0] = npu_graph_const_i64(g, "s", (int64_t[]){2}, 1, true);
    v[1] = npu_graph_const_i64(g, "l", (int64_t[]){11}, 1, true);
    v[2] = npu_graph_const_i64(g, "d", (int64_t[]){3}, 1, true);
    n = node(g, NPU_OP_RANGE, 3, v, 1);
    CHECK(shape_is(g, n, NPU_DTYPE_INT64, 1, 3));
    CHECK(n->out[0]->known && ((const int64_t *)n->out[0]->known)[2] == 8);
    v[0] = ci64(g, 2, 3, 4);
    CHECK(shape_is(g, node(g, NPU_OP_CONSTANT_OF_SHAPE, 1, v, 1), NPU_DTYPE_FP32, 2, 3, 4));
    /* Mixed dtypes refused with the node named */
    v[0] = x, v[1] = idx;
    n = node(g, NPU_OP_ADD, 2, v, 1);
    nlogs = 0;
    CHECK(npu_infer_node(g, n) != NPU_OK);
    CHECK(nlogs > 0 && strstr(last_log, "'Add' (Add)") && strstr(last_log, "dtypes differ"));
    npu_graph_free(g);
}

/* Shape -> Gather -> Unsqueeze -> Concat -> Reshape is known at compile time
 * and simplify_shapes leaves only the Reshape (with a constant shape). */
static void
test_shape_chain(void)
{
    struct npu_graph *g = npu_graph_new("chain");
    struct npu_value *x = in(g, "x", NPU_DTYPE_FP32, 3, 2, 5, 6), *v[4];
    struct npu_node *shp = node(g, NPU_OP_SHAPE, 1, &x, 1);
    v[0] = shp->out[0], v[1] = npu_graph_const_i64(g, "zero", (int64_t[]){0}, 1, true);
    struct npu_node *ga = node(g, NPU_OP_GATHER, 2, v, 1);
    v[0] = ga->out[0], v[1] = ci64(g, 1, 0);
    struct npu_node *un = node(g, NPU_OP_UNSQUEEZE, 2, v, 1);
    v[0] = un->out[0], v[1] = ci64(g, 1, -1);
    struct npu_node *cc = node(g, NPU_OP_CONCAT, 2, v, 1);
    npu_node_set_int(g, cc, "axis", 0);
    v[0] = x, v[1] = cc->out[0];
    struct npu_node *rs = node(g, NPU_OP_RESHAPE, 2, v, 1);
    npu_graph_add_output(g, rs->out[0]);
    CHECK_EQ_INT(NPU_OK, npu_graph_infer(g));
    CHECK_EQ_INT(2, rs->out[0]->t.ndim);
    CHECK_EQ_INT(30, rs->out[0]->t.dims[1]);
    CHECK_EQ_INT(NPU_OK, npu_graph_verify(g));
    char *dumped = NULL;
    size_t dlen = 0;
    FILE *df = open_memstream(&dumped, &dlen);
    struct npu_compile_options o = {
        .verify = 1, .dump_after = "input,simplify_shapes", .dump_file = df};
    CHECK_EQ_INT(NPU_OK, npu_compile(g, &o));
    fclose(df);
    /* the dump names the passes and each dumped graph parses back */
    CHECK(dumped && strstr(dumped, "IR after input") && strstr(dumped, "IR after simplify_shapes"));
    CHECK(dumped && !strstr(dumped, "IR after dce"));
    const char *second = dumped ? strstr(dumped, "# ---- IR after simplify_shapes") : NULL;
    struct npu_graph *gd = NULL;
    /* (simplify_shapes runs twice: parse the first dump of it only) */
    const char *end = second ? strstr(second + 5, "# ----") : NULL;
    size_t slen = second ? (end ? (size_t)(end - second) : strlen(second)) : 0;
    if (second)
        CHECK_EQ_INT(NPU_OK, npu_ir_parse(second, slen, NULL, 0, true, &gd));
    if (!gd)
        fprintf(stderr, "%s\n%s\n", last_log, second ? second : "");
    CHECK(gd && gd->nnodes == 1);
    npu_graph_free(gd);
    free(dumped);
    CHECK_EQ_INT(1, g->nnodes);
    CHECK_EQ_INT(NPU_OP_RESHAPE, g->head->op);
    CHECK(g->head->in[1]->kind == NPU_VALUE_CONST);
    npu_graph_free(g);
}

static void
test_verifier(void)
{
    struct npu_graph *g = npu_graph_new("v");
    struct npu_value *x = in(g, "x", NPU_DTYPE_FP32, 1, 4);
    struct npu_node *a = node(g, NPU_OP_RELU, 1, &x, 1);
    struct npu_node *b = node(g, NPU_OP_NEG, 1, &a->out[0], 1);
    npu_graph_add_output(g, b->out[0]);
    CHECK_EQ_INT(NPU_OK, npu_graph_infer(g));
    CHECK_EQ_INT(NPU_OK, npu_graph_verify(g));
    /* wrong recorded shape */
    b->out[0]->t.dims[0] = 5;
    nlogs = 0;
    CHECK(npu_graph_verify(g) != NPU_OK);
    CHECK(strstr(last_log, "problem") != NULL);
    b->out[0]->t.dims[0] = 4;
    /* out of topological order */
    npu_graph_remove(g, a);
    npu_graph_append(g, a);
    a->out[0]->producer = a;
    CHECK(npu_graph_verify(g) != NPU_OK);
    /* dangling: producer removed */
    npu_graph_remove(g, a);
    CHECK(npu_graph_verify(g) != NPU_OK);
    npu_graph_free(g);
}

static void
test_text(void)
{
    struct npu_graph *g = npu_graph_new("text \"graph\"");
    struct npu_value *x = in(g, "onnx::weird name", NPU_DTYPE_FP32, 2, 3, 40), *v[3];
    x->t.qscale = 0.125f;
    x->t.qzero = -3;
    float big[40 * 5];
    for (int i = 0; i < 200; i++)
        big[i] = (float)i * 0.1f - 7.0f;
    struct npu_tensor bt = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {40, 5}, .data = big};
    v[0] = x, v[1] = npu_graph_add_const(g, "w", &bt);
    struct npu_node *mm = node(g, NPU_OP_MATMUL, 2, v, 1);
    mm->device = NPU_DEVICE_NPU;
    mm->cost = 1.5e-6;
    float half = 0.5f;
    v[0] = mm->out[0], v[1] = npu_graph_const_f32(g, "h", &half, 1, true);
    struct npu_node *mu = node(g, NPU_OP_MUL, 2, v, 1);
    v[0] = mu->out[0];
    struct npu_node *cl = node(g, NPU_OP_LEAKY_RELU, 1, v, 1);
    npu_node_set_float(g, cl, "alpha", 0.1f);
    npu_node_set_ints(g, cl, "empty", NULL, 0);
    npu_node_set_string(g, cl, "s", "a\"b\\c\n");
    npu_node_set_floats(g, cl, "fl", (float[]){1.0f, -2.5f, 1e-20f}, 3);
    npu_graph_add_output(g, cl->out[0]);
    CHECK_EQ_INT(NPU_OK, npu_graph_infer(g));
    CHECK_EQ_INT(NPU_OK, npu_graph_verify(g));

    char path[] = "/tmp/npu-ir-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_EQ_INT(NPU_OK, npu_ir_save(g, path));
    struct npu_graph *g2 = NULL;
    CHECK_EQ_INT(NPU_OK, npu_ir_load(path, &g2));
    char *t1 = npu_ir_print_str(g, NULL), *t2 = g2 ? npu_ir_print_str(g2, NULL) : NULL;
    CHECK(t1 && t2 && !strcmp(t1, t2));
    if (t1 && t2 && strcmp(t1, t2))
        fprintf(stderr, "---\n%s---\n%s", t1, t2);
    CHECK(t1 && strstr(t1, "device=npu") && strstr(t1, "blob(fnv1a64=0x"));
    CHECK(t1 && strstr(t1, "q(0.125,-3)"));
    /* blob data survives the sidecar */
    struct npu_value *w2 = g2 ? npu_graph_find_value(g2, "w") : NULL;
    CHECK(w2 && w2->kind == NPU_VALUE_CONST && !memcmp(w2->t.data, big, sizeof(big)));
    /* a corrupted sidecar is detected by the hash */
    char side[300];
    snprintf(side, sizeof(side), "%s.bin", path);
    FILE *f = fopen(side, "r+b");
    if (f) {
        fseek(f, 8, SEEK_SET);
        fputc(0x55, f);
        fclose(f);
    }
    struct npu_graph *g3 = NULL;
    nlogs = 0;
    CHECK(npu_ir_load(path, &g3) != NPU_OK && strstr(last_log, "hash"));
    remove(side);
    remove(path);
    free(t1);
    free(t2);
    npu_graph_free(g2);

    /* parse errors name the line */
    static const char *bad[] = {
        "graph \"g\" opset=17 {\n  input %x: f32[2]\n  %y: f32[3] = Relu(%x)\n  output %y\n}\n",
        "graph \"g\" opset=17 {\n  input %x: f32[2]\n  %y: f32[2] = Nope(%x)\n}\n",
        "graph \"g\" opset=17 {\n  input %x: f32[2]\n  %y: f32[2] = Relu(%z)\n}\n",
        "graph \"g\" opset=17 {\n  input %x: f32[2]\n  input %x: f32[2]\n}\n",
        "graph \"g\" opset=17 {\n  const %c: f32[2] = [1.0]\n}\n",
        "graph \"g\" opset=17 {\n  input %x: q7[2]\n}\n",
        "graph \"g\" opset=17 {\n  input %x: f32[2]\n",
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(bad); i++) {
        struct npu_graph *gb = NULL;
        nlogs = 0;
        CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_ir_parse(bad[i], strlen(bad[i]), NULL, 0, false, &gb));
        CHECK(gb == NULL && nlogs > 0);
        CHECK(strstr(last_log, "line ") != NULL);
    }
    npu_graph_free(g);
}

/* npu_graph_owns: arena bytes (small ones and a mapped big block) are the graph's, borrowed
 * and heap memory not; a mapped big block comes zeroed. */
static void
test_owns(void)
{
    struct npu_graph *g = npu_graph_new("owns");
    CHECK(g);
    if (!g)
        return;
    unsigned char *small = npu_graph_alloc(g, 100);
    const size_t big_n = (size_t)3 << 20;
    unsigned char *big = npu_graph_alloc(g, big_n);
    float *heap = malloc(64 * sizeof(float));
    CHECK(small && big && heap);
    if (small && big && heap) {
        CHECK(npu_graph_owns(g, small, 100));
        CHECK(npu_graph_owns(g, big, big_n));
        CHECK(npu_graph_owns(g, big + 4096, 8));
        CHECK(!npu_graph_owns(g, big, big_n + 4096)); /* past the block */
        CHECK(!npu_graph_owns(g, heap, 64 * sizeof(float)));
        CHECK(!npu_graph_owns(g, NULL, 0));
        size_t nz = 0;
        for (size_t i = 0; i < big_n; i += 4093)
            nz += big[i] != 0;
        CHECK(nz == 0);
        /* a constant borrowing the caller's array is not the graph's */
        struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {64}, .data = heap};
        struct npu_value *c = npu_graph_add_const_owned(g, "borrowed", &t);
        CHECK(c && !npu_graph_owns(g, c->t.data, 64 * sizeof(float)));
        struct npu_value *d = npu_graph_add_const(g, "copied", &t);
        CHECK(d && npu_graph_owns(g, d->t.data, 64 * sizeof(float)));
    }
    free(heap);
    npu_graph_free(g);
}

int
main(void)
{
    npu_log_set_handler(capture, NULL);
    test_inference();
    test_shape_chain();
    test_verifier();
    test_text();
    test_owns();
    return npu_test_done("ir_test");
}
