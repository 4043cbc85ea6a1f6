/* SPDX-License-Identifier: MIT */
/*
 * test-npu-robust.c: lowered graphs read from text are untrusted input (route
 * b, npuc). The IR text of a few lowered graphs (conv with bias and clip,
 * channel-block matmul, small-channel conv, a LUT activation after channel
 * blocks, a residual Add fused into a matmul)
 * is mutated at random (digits of attribute values changed, numbers
 * replaced by extreme ones, attributes dropped), parsed, and when it parses,
 * compiled by codegen: every case must end in success or a clean error,
 * never a crash, a sanitizer report or a leak (run under ASan/UBSan in CI).
 */
#include <unistd.h>

#include "npu-test-log.h"
#include "npu-test-util.h"

static char *
lowered_text(struct npu_graph *g, char **side, size_t *side_len)
{
    struct npu_backend_options o = {0};
    if (npu_lower_graph(g, &o))
        return NULL;
    return tu_ir_text(g, side, side_len);
}

static int ok_parse, ok_code, ok_run;

static void
mutate_and_run(const char *text, const char *side, size_t side_len, uint32_t *seed)
{
    char *t = tu_mutate_ir(text, "= rk.", seed);
    struct npu_graph *g = NULL;
    if (npu_ir_parse(t, strlen(t), side, side_len, false, &g) == NPU_OK) {
        ok_parse++;
        struct npu_program *p = NULL;
        if (npu_codegen(g, NULL, &p) == NPU_OK) {
            ok_code++;
            /* and the simulator (strict) runs it or refuses it cleanly */
            struct prun r;
            if (prun_open(&r, p) == NPU_OK) {
                const struct npu_prog_tensor *it = &p->tensors[p->inputs[0]];
                void *x = calloc(1, (size_t)it->bytes + 16);
                struct npu_tensor in = it->t, out[4];
                in.data = x;
                if (prun_run(&r, &in, out) == NPU_OK)
                    ok_run++;
                free(x);
            }
            prun_close(&r);
        }
        npu_program_free(p);
        npu_graph_free(g);
    }
    free(t);
}

/* x -> MatMul (r), MatMul (y) + bias, Add(r, y): the Add runs in y's DPU (residual). */
static struct npu_graph *
residual_graph(void)
{
    struct npu_graph *g = npu_graph_new("res");
    int64_t xd[2] = {24, 64}, wd[2] = {64, 48};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 2, xd);
    float w[64 * 48], b[48];
    uint32_t s = 9;
    tu_fill(w, 64 * 48, &s, 8);
    tu_fill(b, 48, &s, 8);
    struct npu_tensor wt = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {64, 48}, .data = w};
    struct npu_value *in1[2] = {x, npu_graph_add_const(g, "wa", &wt)};
    struct npu_node *a = npu_node_new(g, NPU_OP_MATMUL, "a", in1, 2, 1, (const char *[]){"r"});
    npu_graph_append(g, a);
    tu_fill(w, 64 * 48, &s, 8);
    struct npu_value *in2[3] = {x, npu_graph_add_const(g, "wb", &wt),
                                npu_graph_const_f32(g, "c", b, 48, false)};
    struct npu_node *m = npu_node_new(g, NPU_OP_MATMUL, "b", in2, 3, 1, (const char *[]){"yb"});
    npu_graph_append(g, m);
    struct npu_value *in3[2] = {a->out[0], m->out[0]};
    struct npu_node *ad = npu_node_new(g, NPU_OP_ADD, "add", in3, 2, 1, (const char *[]){"y"});
    npu_graph_append(g, ad);
    npu_graph_add_output(g, ad->out[0]);
    (void)wd;
    if (npu_graph_infer(g)) {
        npu_graph_free(g);
        return NULL;
    }
    return g;
}

int
main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 400;
    struct tu_conv c1 = {.C = 16,
                         .H = 30,
                         .W = 30,
                         .K = 24,
                         .kh = 3,
                         .kw = 3,
                         .sy = 2,
                         .sx = 2,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "clip",
                         .act_alpha = -1,
                         .act_beta = 3,
                         .range = 8,
                         .seed = 1};
    struct tu_mm m1 = {.rank = 2,
                       .M = 100,
                       .K = 1536,
                       .N = 40,
                       .bias = true,
                       .act = "relu",
                       .range = 8,
                       .seed = 2};
    struct tu_conv c2 = {
        .C = 3, .H = 40, .W = 40, .K = 16, .kh = 3, .kw = 3, .range = 8, .seed = 3};
    /* EW-stage fusions: a LUT activation after channel blocks, a residual Add */
    struct tu_mm m2 = {.rank = 2,
                       .M = 30,
                       .K = 512,
                       .N = 48,
                       .bias = true,
                       .act = "gelu_tanh",
                       .range = 8,
                       .seed = 4};
    struct npu_graph *gs[5] = {tu_conv_graph(&c1), tu_matmul_graph(&m1), tu_conv_graph(&c2),
                               tu_matmul_graph(&m2), residual_graph()};
    npu_log_set_handler(npu_test_log_quiet, NULL); /* thousands of expected refusals */
    uint32_t seed = 12345;
    int cases = 0;
    for (int i = 0; i < 5; i++) {
        char *side = NULL;
        size_t side_len = 0;
        char *text = lowered_text(gs[i], &side, &side_len);
        CHECK(text != NULL);
        if (text) {
            /* the unmutated text compiles */
            struct npu_graph *g = NULL;
            CHECK_EQ_INT(NPU_OK, npu_ir_parse(text, strlen(text), side, side_len, false, &g));
            struct npu_program *p = NULL;
            CHECK_EQ_INT(NPU_OK, npu_codegen(g, NULL, &p));
            npu_program_free(p);
            npu_graph_free(g);
            for (int k = 0; k < iters; k++, cases++)
                mutate_and_run(text, side, side_len, &seed);
        }
        free(text);
        free(side);
        npu_graph_free(gs[i]);
    }
    printf("%d mutated lowered graphs: %d parsed, %d compiled, %d ran on the simulator; the rest "
           "refused cleanly\n",
           cases, ok_parse, ok_code, ok_run);
    return npu_test_done("npu-robust");
}
