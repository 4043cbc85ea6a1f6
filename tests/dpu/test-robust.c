/* SPDX-License-Identifier: MIT */
/*
 * test-robust.c: rk.Dpu nodes read from IR text are untrusted input (route b, npuc). The
 * lowered text of test models with the DPU lowerings (layer norm, attention, softmax,
 * GELU, residual adds, pooling, views/aliases) is mutated at random inside rk.Dpu lines'
 * attribute braces (digits changed, minus signs, numbers replaced by extreme ones,
 * characters dropped), parsed, compiled and, when that succeeds, run on the strict
 * simulator: every case must end in success or a clean error, never a crash, a sanitizer
 * report or a leak (run it under ASan/UBSan). Usage: test-robust DATA_DIR [iterations].
 */
#include <unistd.h>

#include "npu-test-log.h"
#include "npu-test-util.h"
#include "npu/npu-onnx.h"

static char *
lowered_text(const char *dir, const char *name, char **side, size_t *side_len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
    struct npu_graph *g = NULL;
    struct npu_compile_options co = {0};
    char *t = NULL;
    if (npu_onnx_load(path, NULL, &g) || npu_compile(g, &co) || npu_lower_graph(g, NULL)) {
        npu_graph_free(g);
        return NULL;
    }
    t = tu_ir_text(g, side, side_len);
    npu_graph_free(g);
    return t;
}

static int ok_parse, ok_code, ok_run;

static bool
run_program(const struct npu_program *p)
{
    struct prun r;
    bool ok = false;
    struct npu_tensor in[8], out[8];
    void *buf[8] = {0};
    int ni = p->n_inputs < 8 ? p->n_inputs : 8;
    if (p->n_inputs > 8 || prun_open(&r, p) != NPU_OK) {
        if (p->n_inputs <= 8)
            prun_close(&r);
        return false;
    }
    for (int i = 0; i < ni; i++) {
        const struct npu_prog_tensor *it = &p->tensors[p->inputs[i]];
        buf[i] = calloc(1, (size_t)it->bytes + 16);
        in[i] = it->t;
        in[i].data = buf[i];
    }
    ok = prun_run(&r, in, out) == NPU_OK;
    for (int i = 0; i < ni; i++)
        free(buf[i]);
    prun_close(&r);
    return ok;
}

static void
mutate_and_run(const char *text, const char *side, size_t side_len, uint32_t *seed)
{
    char *t = tu_mutate_ir(text, "= rk.Dpu", seed);
    struct npu_graph *g = NULL;
    if (npu_ir_parse(t, strlen(t), side, side_len, false, &g) == NPU_OK) {
        ok_parse++;
        struct npu_program *p = NULL;
        if (npu_codegen(g, NULL, &p) == NPU_OK) {
            ok_code++;
            ok_run += run_program(p);
        }
        npu_program_free(p);
        npu_graph_free(g);
    }
    free(t);
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/models/data";
    int iters = argc > 2 ? atoi(argv[2]) : 300;
    static const char *models[] = {"siglip_tiny", "gpt2_tiny", "cnn_small"};
    uint32_t seed = 4242;
    int cases = 0;
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        char *side = NULL;
        size_t side_len = 0;
        char *text = lowered_text(dir, models[i], &side, &side_len);
        CHECK(text != NULL);
        if (text) {
            CHECK(strstr(text, "= rk.Dpu") != NULL);
            /* the unmutated text compiles and runs */
            struct npu_graph *g = NULL;
            CHECK_EQ_INT(NPU_OK, npu_ir_parse(text, strlen(text), side, side_len, false, &g));
            struct npu_program *p = NULL;
            CHECK_EQ_INT(NPU_OK, npu_codegen(g, NULL, &p));
            CHECK(p && run_program(p));
            npu_program_free(p);
            npu_graph_free(g);
            npu_log_set_handler(npu_test_log_quiet, NULL); /* thousands of expected refusals */
            for (int k = 0; k < iters; k++, cases++)
                mutate_and_run(text, side, side_len, &seed);
            npu_log_set_handler(NULL, NULL);
        }
        free(text);
        free(side);
    }
    printf("%d mutated lowered graphs (rk.Dpu attributes): %d parsed, %d compiled, %d ran on the "
           "simulator; the rest refused cleanly\n",
           cases, ok_parse, ok_code, ok_run);
    return npu_test_done("dpu-robust");
}
