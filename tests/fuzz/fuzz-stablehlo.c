// SPDX-License-Identifier: MIT
/*
 * fuzz-stablehlo.c: libFuzzer target for the StableHLO front end
 * (compiler/frontend/stablehlo): the MLIR text JAX prints
 * (`jax.jit(f).lower(...).as_text()`) and the MLIR bytecode of a VHLO portable
 * artifact ("ML\xEFR..."), both through npu_stablehlo_parse; bytecode is also
 * decoded to text on its own. What parses must verify and print. Replayed
 * over tests/fuzz/corpus-shlo (the programs of tests/pjrt and the VHLO
 * artifacts, and every crash found) by the normal suite
 * (fuzz-stablehlo-corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "npu/npu-ir.h"
#include "npu/npu-stablehlo.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_log();
    if (size >= 4 && !memcmp(data, "ML\xEFR", 4)) {
        char *text = NULL;
        size_t tlen = 0;
        if (npu_stablehlo_bytecode_to_text(data, size, &text, &tlen) == NPU_OK) {
            if (!text || text[tlen] != 0)
                abort();
            free(text);
        }
    }
    struct npu_graph *g = NULL;
    if (npu_stablehlo_parse((const char *)data, size, &g) != NPU_OK) {
        if (g)
            abort(); /* *out is NULL on failure */
        return 0;
    }
    if (npu_graph_verify(g) != NPU_OK)
        abort();
    free(npu_ir_print_str(g, NULL));
    npu_graph_free(g);
    return 0;
}
