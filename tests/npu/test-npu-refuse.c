/* SPDX-License-Identifier: MIT */
/*
 * test-npu-refuse.c: nodes the NPU back end must refuse so that they run on
 * the CPU, because its path would compute something else (the conformance
 * failures on the sim backend, docs/conformance.md):
 *  - float64 tensors (the NPU has no fp64; fp16 overflows at 65504): Add,
 *    MatMul, Relu on doubles;
 *  - Dropout in training mode (training_mode a graph input or a constant
 *    true) or with its mask output used; the simplify pass must not drop a
 *    training-mode Dropout as a no-op either;
 *  - MaxPool whose indices output is used (a graph output counts);
 *  - float ops whose result becomes a run-time quantisation parameter
 *    (DynamicQuantizeLinear's expansion: fp16 moves whole quantised steps);
 *  - a sweep of the DPU lowerings' ops over every element type: only fp32 / fp16
 *    are supported (int64 / int32 / int8 / bool arithmetic and float64 are
 *    refused).
 * Each case checks supports() refuses with its reason, that the cost
 * partition (real costs) puts the node on the CPU with that reason in the
 * report `npuc --explain` prints, and that the "supported" partition does
 * too. Controls: the same graphs with the offending detail removed are
 * supported, and in the sandwich between two matmuls the cost partition puts
 * them on the NPU, so the CPU placement above is the refusal's doing.
 */
#include <stdio.h>
#include <string.h>

#include "npu-test-log.h"
#include "npu-test.h"
#include "npu/npu-backend.h"
#include "npu/npu-ir.h"
#include "npu/npu-partition.h"
#include "npu/npu-passes.h"

static int verbose;

static struct npu_graph *
parse(const char *text)
{
    struct npu_graph *g = NULL;
    enum npu_status st = npu_ir_parse(text, strlen(text), NULL, 0, true, &g);
    if (st)
        fprintf(stderr, "parse failed (%s):\n%s\n", npu_status_str(st), text);
    CHECK_EQ_INT(NPU_OK, st);
    return g;
}

static struct npu_node *
node_named(struct npu_graph *g, const char *name)
{
    npu_graph_for_each_node (g, n)
        if (n->name && !strcmp(n->name, name))
            return n;
    return NULL;
}

/* A graph made from a middle part between two [1, 64, 1024] x [1024, 1024] MatMuls (big
 * enough that the cost partition puts them on the NPU on any host: 67 M MACs each):
 * x -> MatMul -> %a -> (middle, defining %b) -> MatMul -> y. extra_io adds inputs /
 * outputs (full lines). */
static char *
sandwich(const char *extra_in, const char *middle, const char *extra_out)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf),
             "# opennpu ir v1\n"
             "graph \"refuse\" opset=13 {\n"
             "  input %%x: f32[1,64,1024]\n"
             "%s"
             "  const %%w1: f32[1024,1024] = blob(fnv1a64=0x0, bytes=4194304)\n"
             "  const %%w2: f32[1024,1024] = blob(fnv1a64=0x0, bytes=4194304)\n"
             "  %%a: f32[1,64,1024] = MatMul(%%x, %%w1) <name=\"mm1\">\n"
             "%s"
             "  %%y: f32[1,64,1024] = MatMul(%%b, %%w2) <name=\"mm2\">\n"
             "  output %%y\n"
             "%s"
             "}\n",
             extra_in, middle, extra_out);
    return buf;
}

/* supports() of node `name` must be `want`, with `reason` in its reason when refused;
 * the cost partition and the "supported" one must place it accordingly, the report
 * (npuc --explain's table) carrying the reason. */
static void
check_case(const char *what, const char *text, const char *name, bool want, const char *reason,
           bool cost_npu_when_supported)
{
    struct npu_graph *g = parse(text);
    if (!g)
        return;
    CHECK_EQ_INT(NPU_OK, npu_graph_update_uses(g));
    struct npu_node *n = node_named(g, name);
    CHECK(n != NULL);
    if (!n) {
        npu_graph_free(g);
        return;
    }
    char why[200] = "";
    bool got = npu_backend_supports(g, n, NULL, why, sizeof(why));
    CHECK_EQ_INT(want, got);
    if (!want && reason && !strstr(why, reason)) {
        fprintf(stderr, "%s: reason '%s' lacks '%s'\n", what, why, reason);
        CHECK(0);
    }
    if (verbose)
        printf("%-44s %-9s %s\n", what, got ? "supported" : "refused", got ? "" : why);

    /* cost partition with real costs (the default CPU cost model: RK3588 CPU model v1) */
    struct npu_partition_options o = {.mode = NPU_PARTITION_COST, .cpu_threads = 1};
    struct npu_partition_report r;
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, &r));
    n = node_named(g, name);
    if (!want) {
        CHECK_EQ_INT(NPU_DEVICE_CPU, n->device);
        bool found = false;
        for (int i = 0; i < r.n; i++)
            if (!strcmp(r.nodes[i].name, name)) {
                found = true;
                CHECK(!r.nodes[i].supported);
                CHECK(reason == NULL || strstr(r.nodes[i].why, reason) != NULL);
            }
        CHECK(found);
        char *txt = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&txt, &len);
        npu_partition_report_print(&r, mf);
        fclose(mf);
        CHECK(reason == NULL || strstr(txt, reason) != NULL);
        free(txt);
    } else if (cost_npu_when_supported) {
        if (n->device != NPU_DEVICE_NPU) {
            fprintf(stderr, "%s: the cost partition put the control on the CPU:\n", what);
            npu_partition_report_print(&r, stderr);
        } else if (verbose) {
            npu_partition_report_print(&r, stdout);
        }
        CHECK_EQ_INT(NPU_DEVICE_NPU, n->device);
    }
    npu_partition_report_free(&r);
    npu_graph_free(g);

    /* "supported" partition (conformance runs): the refused node on the CPU */
    g = parse(text);
    if (!g)
        return;
    o.mode = NPU_PARTITION_SUPPORTED;
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, NULL));
    n = node_named(g, name);
    CHECK_EQ_INT(want ? NPU_DEVICE_NPU : NPU_DEVICE_CPU, n->device);
    npu_graph_free(g);
}

static void
test_dropout(void)
{
    /* training_mode a graph input: refused */
    check_case("Dropout, training_mode an input",
               sandwich("  input %t: bool[]\n",
                        "  const %r: f32[] = [0.5]\n"
                        "  %b: f32[1,64,1024] = Dropout(%a, %r, %t) <name=\"drop\">\n",
                        ""),
               "drop", false, "training_mode", false);
    /* training_mode a constant true: refused */
    check_case("Dropout, training_mode constant true",
               sandwich("",
                        "  const %r: f32[] = [0.5]\n"
                        "  const %t: bool[] = [1]\n"
                        "  %b: f32[1,64,1024] = Dropout(%a, %r, %t) <name=\"drop\">\n",
                        ""),
               "drop", false, "training mode", false);
    /* the mask output used (a graph output): refused */
    check_case("Dropout, mask output used",
               sandwich("",
                        "  %b: f32[1,64,1024], %m: bool[1,64,1024] = Dropout(%a) "
                        "<name=\"drop\">\n",
                        "  output %m\n"),
               "drop", false, "mask output", false);
    /* control: inference mode (constant false), no mask: the identity, on the NPU */
    check_case("Dropout, training_mode constant false",
               sandwich("",
                        "  const %r: f32[] = [0.5]\n"
                        "  const %t: bool[] = [0]\n"
                        "  %b: f32[1,64,1024] = Dropout(%a, %r, %t) <name=\"drop\">\n",
                        ""),
               "drop", true, NULL, true);

    /* the front end keeps a training-mode Dropout (it is not a no-op) and drops an
     * inference-mode one */
    struct npu_graph *g = parse(sandwich("  input %t: bool[]\n",
                                         "  const %r: f32[] = [0.5]\n"
                                         "  %b: f32[1,64,1024] = Dropout(%a, %r, %t) "
                                         "<name=\"drop\">\n",
                                         ""));
    struct npu_compile_options co = {.verify = 1};
    CHECK_EQ_INT(NPU_OK, npu_compile(g, &co));
    CHECK(node_named(g, "drop") != NULL);
    npu_graph_free(g);
    g = parse(sandwich("",
                       "  const %r: f32[] = [0.5]\n"
                       "  const %t: bool[] = [0]\n"
                       "  %b: f32[1,64,1024] = Dropout(%a, %r, %t) <name=\"drop\">\n",
                       ""));
    CHECK_EQ_INT(NPU_OK, npu_compile(g, &co));
    CHECK(node_named(g, "drop") == NULL);
    npu_graph_free(g);
}

static void
test_fp64(void)
{
    /* double Add between casts: refused (fp16 would overflow 1e223, facts §2.9) */
    check_case("Add on float64",
               sandwich("",
                        "  %ad: f64[1,64,1024] = Cast(%a) {to=11}\n"
                        "  const %k: f64[] = [1.5]\n"
                        "  %sd: f64[1,64,1024] = Add(%ad, %k) <name=\"add64\">\n"
                        "  %b: f32[1,64,1024] = Cast(%sd) {to=1}\n",
                        ""),
               "add64", false, "float64", false);
    check_case("Relu on float64",
               sandwich("",
                        "  %ad: f64[1,64,1024] = Cast(%a) {to=11}\n"
                        "  %sd: f64[1,64,1024] = Relu(%ad) <name=\"relu64\">\n"
                        "  %b: f32[1,64,1024] = Cast(%sd) {to=1}\n",
                        ""),
               "relu64", false, "float64", false);
    check_case("MatMul on float64",
               "# opennpu ir v1\n"
               "graph \"mm64\" opset=13 {\n"
               "  input %x: f64[1,64,1024]\n"
               "  const %w: f64[1024,1024] = blob(fnv1a64=0x0, bytes=8388608)\n"
               "  %y: f64[1,64,1024] = MatMul(%x, %w) <name=\"mm64\">\n"
               "  output %y\n"
               "}\n",
               "mm64", false, "float64", false);
    /* control: the same Add on float32 */
    check_case("Add on float32",
               sandwich("",
                        "  const %k: f32[] = [1.5]\n"
                        "  %b: f32[1,64,1024] = Add(%a, %k) <name=\"add32\">\n",
                        ""),
               "add32", true, NULL, true);
}

static void
test_maxpool(void)
{
    static const char *fmt =
        "# opennpu ir v1\n"
        "graph \"pool\" opset=13 {\n"
        "  input %%x: f32[1,32,64,64]\n"
        "  const %%w: f32[32,32,1,1] = blob(fnv1a64=0x0, bytes=4096)\n"
        "  %%c: f32[1,32,64,64] = Conv(%%x, %%w) {kernel_shape=[1,1]} <name=\"conv\">\n"
        "  %%p: f32[1,32,32,32]%s = MaxPool(%%c) {kernel_shape=[2,2], strides=[2,2]} "
        "<name=\"pool\">\n"
        "  %%y: f32[1,32,32,32] = Relu(%%p)\n"
        "  output %%y\n"
        "%s"
        "}\n";
    char buf[2048];
    snprintf(buf, sizeof(buf), fmt, ", %i: i64[1,32,32,32]", "  output %i\n");
    check_case("MaxPool, indices a graph output", buf, "pool", false, "indices", false);
    snprintf(buf, sizeof(buf), fmt, ", %i: i64[1,32,32,32]", "");
    check_case("MaxPool, indices unused", buf, "pool", true, NULL, false);
    snprintf(buf, sizeof(buf), fmt, "", "");
    check_case("MaxPool, one output", buf, "pool", true, NULL, false);
}

static void
test_quant_param(void)
{
    /* DynamicQuantizeLinear's expansion (ONNX function body), shortened: the float ops
     * computing scale and zero point stay on the CPU */
    static const char *text = "# opennpu ir v1\n"
                              "graph \"dql\" opset=13 {\n"
                              "  input %x: f32[1,64,1024]\n"
                              "  const %zero: f32[] = [0.0]\n"
                              "  const %qmax: f32[] = [255.0]\n"
                              "  %mx: f32[] = ReduceMax(%x) {keepdims=0}\n"
                              "  %mn: f32[] = ReduceMin(%x) {keepdims=0}\n"
                              "  %mx0: f32[] = Max(%mx, %zero) <name=\"max0\">\n"
                              "  %mn0: f32[] = Min(%mn, %zero) <name=\"min0\">\n"
                              "  %rng: f32[] = Sub(%mx0, %mn0) <name=\"range\">\n"
                              "  %sc: f32[] = Div(%rng, %qmax) <name=\"scale\">\n"
                              "  %zf: f32[] = Div(%mn0, %sc) <name=\"zdiv\">\n"
                              "  %zn: f32[] = Sub(%zero, %zf) <name=\"zsub\">\n"
                              "  %zc: f32[] = Clip(%zn, %zero, %qmax) <name=\"zclip\">\n"
                              "  %zr: f32[] = Round(%zc)\n"
                              "  %zp: u8[] = Cast(%zr) {to=2}\n"
                              "  %y: u8[1,64,1024] = QuantizeLinear(%x, %sc, %zp)\n"
                              "  output %y\n"
                              "}\n";
    static const char *names[] = {"max0", "min0", "range", "scale", "zdiv", "zsub", "zclip"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char what[64];
        snprintf(what, sizeof(what), "quantisation parameter: %s", names[i]);
        check_case(what, text, names[i], false, "quantisation parameter", false);
    }
    /* control: the same Div whose result is only an output */
    check_case("Div of statistics, not a quantisation parameter",
               "# opennpu ir v1\n"
               "graph \"stat\" opset=13 {\n"
               "  input %x: f32[1,64,1024]\n"
               "  const %qmax: f32[] = [255.0]\n"
               "  %mx: f32[] = ReduceMax(%x) {keepdims=0}\n"
               "  %sc: f32[] = Div(%mx, %qmax) <name=\"scale\">\n"
               "  output %sc\n"
               "}\n",
               "scale", true, NULL, false);
    /* control: a MatMul whose result is quantised as data (QDQ model) stays supported */
    check_case("MatMul quantised as data",
               "# opennpu ir v1\n"
               "graph \"qdq\" opset=13 {\n"
               "  input %x: f32[1,64,1024]\n"
               "  const %w: f32[1024,1024] = blob(fnv1a64=0x0, bytes=4194304)\n"
               "  const %s: f32[] = [0.05]\n"
               "  const %z: u8[] = [128]\n"
               "  %m: f32[1,64,1024] = MatMul(%x, %w) <name=\"mm\">\n"
               "  %y: u8[1,64,1024] = QuantizeLinear(%m, %s, %z)\n"
               "  output %y\n"
               "}\n",
               "mm", true, NULL, false);
}

/* Every op with a handler, on every element type: only fp32 / fp16 (and int8 / uint8 for the
 * integer conv family) may be supported; a type the IR refuses for the op is skipped. The
 * fp32 form of each case is a control that must be supported. */
static void
test_dtype_sweep(void)
{
    static const struct {
        const char *op, *attrs;
        int nin; /* activations of the swept type */
    } ops[] = {
        {"Relu", "", 1},
        {"Neg", "", 1},
        {"Abs", "", 1},
        {"Identity", "", 1},
        {"Sigmoid", "", 1},
        {"Tanh", "", 1},
        {"Erf", "", 1},
        {"LeakyRelu", " {alpha=0.1}", 1},
        {"HardSigmoid", "", 1},
        {"HardSwish", "", 1},
        {"Softmax", " {axis=-1}", 1},
        {"Gelu", "", 1},
        {"Add", "", 2},
        {"Sub", "", 2},
        {"Mul", "", 2},
        {"Div", "", 2},
        {"Max", "", 2},
        {"Min", "", 2},
        {"Dropout", "", 1},
        {"Flatten", " {axis=1}", 1}, /* the data-movement family's check */
        {"MaxPool", " {kernel_shape=[2,2], strides=[2,2]}", 1},
        {"AveragePool", " {kernel_shape=[2,2], strides=[2,2]}", 1},
        {"GlobalAveragePool", "", 1},
        {"GlobalMaxPool", "", 1},
    };
    static const char *types[] = {"f32", "f16", "f64", "i64", "i32", "i16", "i8", "u8", "bool"};
    int refused = 0, skipped = 0;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
            const char *ty = types[t];
            bool is_pool = strstr(ops[i].op, "Pool") != NULL;
            const char *oshape = !strcmp(ops[i].op, "Flatten")      ? "[1,8192]"
                                 : !strncmp(ops[i].op, "Global", 6) ? "[1,16,1,1]"
                                 : is_pool                          ? "[1,16,8,16]"
                                                                    : "[1,16,16,32]";
            char text[1024];
            snprintf(text, sizeof(text),
                     "# opennpu ir v1\n"
                     "graph \"sweep\" opset=17 {\n"
                     "  input %%x: %s[1,16,16,32]\n"
                     "  input %%z: %s[1,16,16,32]\n"
                     "  %%y: %s%s = %s(%%x%s)%s <name=\"op\">\n"
                     "  output %%y\n"
                     "}\n",
                     ty, ty, ty, oshape, ops[i].op, ops[i].nin == 2 ? ", %z" : "", ops[i].attrs);
            struct npu_graph *g = NULL;
            npu_log_set_handler(npu_test_log_quiet,
                                NULL); /* the parser's type errors are expected */
            enum npu_status pst = npu_ir_parse(text, strlen(text), NULL, 0, true, &g);
            npu_log_set_handler(NULL, NULL);
            if (pst) {
                /* a type the op does not take (ONNX type constraints) */
                CHECK(t > 1);
                skipped++;
                continue;
            }
            CHECK_EQ_INT(NPU_OK, npu_graph_update_uses(g));
            char why[200] = "";
            bool ok = npu_backend_supports(g, g->tail, NULL, why, sizeof(why));
            if (t <= 1 && !ok)
                fprintf(stderr, "sweep: %s on %s refused: %s\n", ops[i].op, ty, why);
            if (t > 1 && ok)
                fprintf(stderr, "sweep: %s on %s supported\n", ops[i].op, ty);
            CHECK_EQ_INT(t <= 1, ok);
            CHECK(ok || why[0]);
            refused += !ok;
            npu_graph_free(g);
        }
    if (verbose)
        printf("dtype sweep: %zu ops x %zu types, %d refused, %d not valid for the op\n",
               sizeof(ops) / sizeof(ops[0]), sizeof(types) / sizeof(types[0]), refused, skipped);
}

int
main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    test_dropout();
    test_fp64();
    test_maxpool();
    test_quant_param();
    test_dtype_sweep();
    return npu_test_done("npu-refuse");
}
