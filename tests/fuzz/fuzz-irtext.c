/* SPDX-License-Identifier: MIT */
/*
 * fuzz-irtext.c: libFuzzer target for the IR text parser (npu_ir_parse, which
 * npu_model_load uses for .npuir files): bytes -> parse -> verify -> print ->
 * parse -> print, and the two prints must be identical when the text has no
 * blob references (blobs without a sidecar parse as zeros). Replayed over
 * tests/fuzz/corpus-ir by the normal test suite.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "npu/npu-ir.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_log();
    struct npu_graph *g = NULL;
    if (npu_ir_parse((const char *)data, size, NULL, 0, true, &g) != NPU_OK)
        return 0;
    if (npu_graph_verify(g) != NPU_OK)
        abort(); /* the parser verifies what it returns */
    char *t1 = npu_ir_print_str(g, NULL);
    if (t1 && !strstr(t1, "blob(")) {
        struct npu_graph *g2 = NULL;
        if (npu_ir_parse(t1, strlen(t1), NULL, 0, false, &g2) != NPU_OK)
            abort();
        char *t2 = npu_ir_print_str(g2, NULL);
        if (!t2 || strcmp(t1, t2))
            abort();
        free(t2);
        npu_graph_free(g2);
    }
    free(t1);
    npu_graph_free(g);
    return 0;
}
