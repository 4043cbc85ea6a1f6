/* SPDX-License-Identifier: MIT */
/*
 * onnx18_import_test.c: the importer on what gen_opset21.py writes. Every file
 * of bad/manifest.txt ("<file> <keyword>": opset and IR version above the
 * newest release, recursive or foreign-opset local functions, a call of an
 * undefined function, int4 graph inputs, short int4 data) is refused with an
 * error naming the keyword; the local-functions case imports into a graph
 * without any call left, its three calls and the nested one inlined (two
 * Gelu, three Add); the int4 weights arrive as int8 holding -8..7. The
 * outputs of the cases are checked by npu-conformance (test onnx18-graphs).
 *
 * usage: onnx18_import_test <dir of gen_opset21.py>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-test-onnx.h"

static void
bad_models(const char *dir)
{
    int count = npu_test_onnx_bad_files(dir);
    CHECK(count >= 7);
    printf("onnx18_import_test: %d bad files refused\n", count);
}

static struct npu_graph *
load_case(const char *dir, const char *name)
{
    char mp[1200];
    snprintf(mp, sizeof(mp), "%s/cases/test_%s/model.onnx", dir, name);
    struct npu_graph *g = NULL;
    npu_test_log[0] = 0;
    enum npu_status st = npu_onnx_load(mp, NULL, &g);
    CHECK(st == NPU_OK && g);
    if (st)
        fprintf(stderr, "%s: %s", name, npu_test_log);
    return g;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: onnx18_import_test <dir>\n");
        return 2;
    }
    npu_log_set_handler(npu_test_log_capture, NULL);
    bad_models(argv[1]);

    struct npu_graph *g = load_case(argv[1], "local_functions_nested_attrs");
    if (g) {
        CHECK_EQ_INT(2, npu_test_count_op(g, "Gelu"));
        CHECK_EQ_INT(3, npu_test_count_op(g, "Add")); /* AddBias: two nested calls and one direct */
        CHECK_EQ_INT(2, npu_test_count_op(g, "Mul"));
        int other = 0;
        npu_graph_for_each_node (g, n)
            other += n->op == NPU_OP_NONE;
        CHECK_EQ_INT(0, other);
        npu_graph_free(g);
    }
    g = load_case(argv[1], "matmul_int4_block_dq");
    if (g) {
        const struct npu_value *w = npu_graph_find_value(g, "w4");
        CHECK(w && w->kind == NPU_VALUE_CONST && w->t.dtype == NPU_DTYPE_INT8);
        int lo = 0, hi = 0;
        for (int64_t i = 0; w && i < npu_tensor_numel(&w->t); i++) {
            int v = ((const int8_t *)w->t.data)[i];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        CHECK(lo == -8 && hi == 7);
        npu_graph_free(g);
    }
    return npu_test_done("onnx18_import_test");
}
