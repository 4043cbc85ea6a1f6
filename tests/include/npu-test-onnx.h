/* SPDX-License-Identifier: MIT */
/*
 * npu-test-onnx.h: what the ONNX importer's tests share (onnx_test.c on
 * gen_models.py's files, onnx18_import_test.c on gen_opset21.py's): the
 * walk over a bad/manifest.txt whose every file must be refused with an
 * error naming its keyword (the log captured by npu-test-log.h), and the
 * count of a graph's nodes of one op.
 */
#ifndef NPU_TEST_ONNX_H
#define NPU_TEST_ONNX_H

#include <stdbool.h>

#include "npu-test-log.h"
#include "npu-test.h"
#include "npu/npu-ir.h"
#include "npu/npu-onnx.h"

/*
 * DIR/bad/manifest.txt, lines "<file> <keyword>" (the keyword is the rest of
 * the line and may hold spaces): each DIR/bad/<file> must be refused, no
 * graph returned, with a logged error containing the keyword. Returns the
 * number of files tried. Needs npu_test_log_capture installed.
 */
static inline int
npu_test_onnx_bad_files(const char *dir)
{
    char p[1024], line[512];
    snprintf(p, sizeof(p), "%s/bad/manifest.txt", dir);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    int count = 0;
    while (f && fgets(line, sizeof(line), f)) {
        char file[256], kw[256];
        if (sscanf(line, "%255s %255[^\n]", file, kw) != 2)
            continue;
        char mp[1400];
        snprintf(mp, sizeof(mp), "%s/bad/%s", dir, file);
        struct npu_graph *g = NULL;
        npu_test_log[0] = 0;
        enum npu_status st = npu_onnx_load(mp, NULL, &g);
        bool named = strstr(npu_test_log, kw) != NULL;
        CHECK(st != NPU_OK && g == NULL);
        CHECK(named);
        if (st == NPU_OK || !named)
            fprintf(stderr, "%s: expected an error mentioning '%s', got:\n%s", file, kw,
                    npu_test_log);
        npu_graph_free(g);
        count++;
    }
    if (f)
        fclose(f);
    return count;
}

/* how many of G's nodes are OP (by name) */
static inline int
npu_test_count_op(const struct npu_graph *g, const char *op)
{
    int c = 0;
    npu_graph_for_each_node (g, n)
        c += !strcmp(npu_op_name(n->op), op);
    return c;
}

#endif /* NPU_TEST_ONNX_H */
