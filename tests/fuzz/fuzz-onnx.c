/* SPDX-License-Identifier: MIT */
/*
 * fuzz-onnx.c: libFuzzer target for the ONNX importer: bytes -> import ->
 * verify -> print the IR text -> parse it back -> (small graphs) the pass
 * pipeline, verified after every pass -> free. Any crash, sanitizer
 * report, leak or hang here is a bug: the importer must turn every input into
 * a graph or a clean error. Built as a libFuzzer binary with -Dfuzz=true
 * (clang), and always as part of fuzz-onnx-replay, which runs the checked-in
 * corpus under the normal test suite.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "npu/npu-ir.h"
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_log();
    struct npu_graph *g = NULL;
    struct npu_onnx_options o = {.dim_values = "batch=2,seq=3"};
    enum npu_status st = npu_onnx_import(data, size, &o, &g);
    if (st != NPU_OK)
        return 0;
    if (npu_graph_verify(g) != NPU_OK)
        abort(); /* an imported graph must always verify */
    /* The text form must read back what it printed (blobs are kept inline up
     * to a modest size so that the round trip needs no sidecar). */
    struct npu_ir_print_opts po = {.inline_max = 4096};
    char *text = npu_ir_print_str(g, &po);
    if (text) {
        struct npu_graph *g2 = NULL;
        int64_t big = 0;
        for (int i = 0; i < g->nvalues; i++)
            if (g->values[i]->kind == NPU_VALUE_CONST && npu_value_numel(g->values[i]) > 4096)
                big = 1;
        if (npu_ir_parse(text, strlen(text), NULL, 0, true, &g2) != NPU_OK && !big)
            abort();
        if (g2 && !big) {
            char *text2 = npu_ir_print_str(g2, &po);
            if (!text2 || strcmp(text, text2))
                abort();
            free(text2);
        }
        npu_graph_free(g2);
        free(text);
    }
    /* Small graphs also go through the pass pipeline (constant folding runs
     * the CPU kernels, so the size cap keeps each input fast). */
    int64_t bytes = 0;
    for (int i = 0; i < g->nvalues; i++)
        bytes += npu_tensor_nbytes(&g->values[i]->t);
    if (g->nnodes <= 64 && bytes <= (1 << 16)) {
        struct npu_compile_options co = {.verify = 1};
        st = npu_compile(g, &co);
        if (st == NPU_ERR_INTERNAL)
            abort(); /* a pass broke the graph */
    }
    npu_graph_free(g);
    return 0;
}
