/* SPDX-License-Identifier: MIT */
/*
 * test-state-write.c: npu.StateWrite(S, ROW, POS){axis}, "write ROW into the state S at the
 * run-time position POS", end to end (docs/llm.md, "The KV cache"):
 *   - the IR text form: the graph below parses, infers [2, 32, 16] and prints back to the
 *     same text, a state input's flag (` state`) included; inference refuses a row of another
 * width, a position that is not one int and an axis out of range, naming the problem;
 *   - CPU semantics (the cpu backend, the reference): the row lands at POS along the axis
 *     and nothing else changes, int32 and int64 positions, and a position past the axis is
 *     an error naming it;
 *   - the NPU path (sim, and whatever "auto" opens: with the kernel double preloaded the
 *     rknpu or rocket backend, whose verified compile profile goes through the IR text and
 *     keeps the product on the CPU), the write on the NPU (NPU_PARTITION=supported): with S a
 *     state input the program holds S in NPU_BUF_STATE and writes the row there in place
 *     through one run-time positioned relocation; over three runs (S uploaded, then resident
 *     with no data) the rows written earlier stay and each run's row lands at its position,
 *     matching the CPU result to fp16 precision, with nothing of S converted in the resident
 *     runs; position 32 is refused before anything runs and leaves the state as it was;
 *   - without the state flag the lowering copies S and writes into the copy (the same
 *     results on the simulator).
 * The graph: z = StateWrite(S [2, 32, 16], row [2, 1, 16], pos, axis 1) * 2 (the product
 * keeps the write's result a value the NPU reads in place).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu-fp16.h"
#include "npu-test.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-program.h"

enum { KH = 2, T = 32, D = 16 };

static const char *const text =
    "# opennpu ir v1\n"
    "graph \"sw\" opset=18 {\n"
    "  input %S: f32[2,32,16]\n"
    "  input %row: f32[2,1,16]\n"
    "  input %pos: i64[1]\n"
    "  const %two: f32[] = [2]\n"
    "  %w: f32[2,32,16] = npu.StateWrite(%S, %row, %pos) {axis=1} <name=\"w\">\n"
    "  %z: f32[2,32,16] = Mul(%w, %two) <name=\"z\">\n"
    "  output %z\n"
    "}\n";

static struct npu_graph *
parse(const char *t)
{
    struct npu_graph *g = NULL;
    if (npu_ir_parse(t, strlen(t), NULL, 0, false, &g))
        return NULL;
    return g;
}

/* The text with `from` replaced by `to` (once), parsed: must fail naming `want`. */
static void
expect_bad(const char *from, const char *to, const char *want)
{
    char buf[2048];
    const char *p = strstr(text, from);
    CHECK(p != NULL);
    if (!p)
        return;
    snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
    struct npu_graph *g = parse(buf);
    CHECK(g == NULL);
    npu_graph_free(g);
    const char *e = npu_last_error();
    if (!e || !strstr(e, want)) {
        fprintf(stderr, "expected an error with '%s', got '%s'\n", want, e ? e : "(none)");
        CHECK(false);
    }
}

static void
test_text(void)
{
    struct npu_graph *g = parse(text);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK_EQ_INT(3, g->outputs[0]->t.ndim);
    CHECK_EQ_INT(32, g->outputs[0]->t.dims[1]);
    char *s1 = npu_ir_print_str(g, NULL);
    struct npu_graph *g2 = s1 ? parse(s1) : NULL;
    char *s2 = g2 ? npu_ir_print_str(g2, NULL) : NULL;
    CHECK(s1 && s2 && !strcmp(s1, s2));
    CHECK(s1 && strstr(s1, "npu.StateWrite(%S, %row, %pos) {axis=1}"));
    free(s1);
    free(s2);
    npu_graph_free(g2);
    npu_graph_free(g);
    /* a state input keeps its flag through the text (the verified profile compiles from it) */
    char buf[2048];
    const char *at = strstr(text, "f32[2,32,16]\n");
    snprintf(buf, sizeof(buf), "%.*sf32[2,32,16] state\n%s", (int)(at - text), text, at + 13);
    g = parse(buf);
    CHECK(g && g->inputs[0]->is_state && !g->inputs[1]->is_state);
    s1 = g ? npu_ir_print_str(g, NULL) : NULL;
    CHECK(s1 && strstr(s1, "input %S: f32[2,32,16] state\n") &&
          strstr(s1, "input %row: f32[2,1,16]\n"));
    free(s1);
    npu_graph_free(g);
    expect_bad("input %row: f32[2,1,16]", "input %row: f32[2,1,8]", "row dim 2 is 8");
    expect_bad("input %pos: i64[1]", "input %pos: f32[1]", "the position must be one int32");
    expect_bad("input %pos: i64[1]", "input %pos: i64[2]", "the position must be one int32");
    expect_bad("{axis=1}", "{axis=3}", "axis 3 out of range");
}

/* inputs: S (NULL = resident), row, pos */
static enum npu_status
run(struct npu_session *se, bool detailed, const float *S, const float *row, int64_t pos, float *z,
    struct npu_prog_run_stats *rs)
{
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, T, D}, .data = (void *)S},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, 1, D}, .data = (void *)row},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &pos},
    };
    struct npu_tensor out;
    enum npu_status st = detailed ? npu_session_run_detailed(se, in, 3, &out, 1, rs)
                                  : npu_session_run(se, in, 3, &out, 1, NULL);
    if (!st)
        memcpy(z, out.data, sizeof(float) * KH * T * D);
    return st;
}

/* the expected state after writing row at pos (in place into ref) */
static void
write_ref(float *ref, const float *row, int64_t pos)
{
    for (int h = 0; h < KH; h++)
        memcpy(ref + ((size_t)h * T + (size_t)pos) * D, row + (size_t)h * D, sizeof(float) * D);
}

/* z must be 2 * ref (tol: fp16 rounding on the NPU) */
static bool
matches(const float *z, const float *ref, float tol)
{
    for (int i = 0; i < KH * T * D; i++)
        if (fabsf(z[i] - 2.0f * ref[i]) > tol * (1.0f + fabsf(2.0f * ref[i]))) {
            fprintf(stderr, "element %d: %g, expected %g\n", i, z[i], 2.0f * ref[i]);
            return false;
        }
    return true;
}

static void
fill(float *x, int n, int seed)
{
    for (int i = 0; i < n; i++)
        x[i] = (float)((i * 37 + seed * 11) % 29 - 14) / 8.0f;
}

static void
test_cpu(void)
{
    struct npu_model_options o = {.backend = "cpu", .cpu_threads = 1};
    struct npu_model *m = NULL;
    struct npu_session *se = NULL;
    struct npu_graph *g = parse(text);
    CHECK(g != NULL);
    if (!g || npu_model_load_graph(g, "sw", &o, &m) || npu_session_create(m, 0, &se)) {
        CHECK(false);
        npu_model_free(m);
        return;
    }
    static float S[KH * T * D], ref[KH * T * D], row[KH * D], z[KH * T * D];
    fill(S, KH * T * D, 1);
    fill(row, KH * D, 2);
    memcpy(ref, S, sizeof(S));
    write_ref(ref, row, 31);
    CHECK_EQ_INT(NPU_OK, run(se, false, S, row, 31, z, NULL));
    CHECK(matches(z, ref, 0));
    CHECK(run(se, false, S, row, 32, z, NULL) != NPU_OK);
    const char *e = npu_last_error();
    CHECK(e && strstr(e, "position 32 outside 0..31 of axis 1"));
    CHECK(run(se, false, S, row, -1, z, NULL) != NPU_OK);
    npu_session_destroy(se);
    npu_model_free(m);
    /* an int32 position */
    char buf[2048];
    const char *at = strstr(text, "i64[1]");
    snprintf(buf, sizeof(buf), "%.*si32[1]%s", (int)(at - text), text, at + 6);
    m = NULL;
    se = NULL;
    g = parse(buf);
    CHECK(g != NULL);
    if (!g || npu_model_load_graph(g, "sw32", &o, &m) || npu_session_create(m, 0, &se)) {
        CHECK(false);
        npu_model_free(m);
        return;
    }
    int32_t p32 = 0;
    struct npu_tensor in[3] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, T, D}, .data = S},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, 1, D}, .data = row},
        {.dtype = NPU_DTYPE_INT32, .ndim = 1, .dims = {1}, .data = &p32},
    };
    struct npu_tensor out;
    memcpy(ref, S, sizeof(S));
    write_ref(ref, row, 0);
    CHECK_EQ_INT(NPU_OK, npu_session_run(se, in, 3, &out, 1, NULL));
    CHECK(matches(out.data, ref, 0));
    p32 = 40;
    CHECK(npu_session_run(se, in, 3, &out, 1, NULL) != NPU_OK);
    const char *e32 = npu_last_error();
    CHECK(e32 && strstr(e32, "position 40 outside 0..31"));
    npu_session_destroy(se);
    npu_model_free(m);
}

static void
test_npu(const char *backend, bool state)
{
    struct npu_model_options o = {.backend = backend, .cpu_threads = 1};
    struct npu_model *m = NULL;
    struct npu_session *se = NULL;
    struct npu_graph *g = parse(text);
    CHECK(g != NULL);
    if (!g)
        return;
    g->inputs[0]->is_state = state;
    if (npu_model_load_graph(g, "sw", &o, &m) || npu_session_create(m, 0, &se)) {
        fprintf(stderr, "%s: cannot compile: %s\n", backend, npu_last_error());
        CHECK(false);
        npu_model_free(m);
        return;
    }
    const struct npu_program *p = npu_model_program(m);
    CHECK(p != NULL);
    if (!p) {
        npu_session_destroy(se);
        npu_model_free(m);
        return;
    }
    uint32_t dyn = 0, cpu_steps = 0;
    for (int j = 0; j < p->n_jobs; j++)
        dyn += p->jobs[j].n_dynrelocs;
    for (int k = 0; k < p->n_steps; k++)
        cpu_steps += p->steps[k].kind == NPU_STEP_CPU;
    CHECK_EQ_INT(1, dyn); /* the row's write moves with pos */
    /* the Mul on the NPU too, unless the verified profile (kernel doubles) keeps its
     * pattern (DPU.BS_CFG.T) on the CPU */
    CHECK(cpu_steps == 0 || strcmp(backend, "sim"));
    const struct npu_prog_tensor *st = &p->tensors[p->inputs[0]];
    CHECK_EQ_INT(state, st->place == NPU_PLACE_NPU && st->buffer == NPU_BUF_STATE);
    static float S[KH * T * D], ref[KH * T * D], z[KH * T * D], r1[KH * D], r2[KH * D], r3[KH * D];
    fill(S, KH * T * D, 3);
    fill(r1, KH * D, 4);
    fill(r2, KH * D, 5);
    fill(r3, KH * D, 6);
    for (int i = 0; i < KH * T * D; i++) /* what fp16 holds */
        S[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(S[i]));
    memcpy(ref, S, sizeof(S));
    struct npu_prog_run_stats rs;
    memset(&rs, 0, sizeof(rs));
    write_ref(ref, r1, 3);
    CHECK_EQ_INT(NPU_OK, run(se, true, S, r1, 3, z, &rs));
    CHECK(matches(z, ref, 2e-3f));
    /* resident: no data for S; the row written at 3 stays */
    write_ref(ref, r2, 4);
    memset(&rs, 0, sizeof(rs));
    enum npu_status e2 = run(se, true, state ? NULL : ref, r2, 4, z, &rs);
    CHECK_EQ_INT(NPU_OK, e2);
    CHECK(matches(z, ref, 2e-3f));
    if (state) {
        CHECK_EQ_INT(1, rs.inputs_resident);
        /* converted: the row in, z out; nothing of S */
        CHECK(rs.input_convert_bytes < (uint64_t)st->bytes);
        /* a position past the axis: refused before anything runs, the state unchanged */
        CHECK(run(se, true, NULL, r3, T, z, &rs) != NPU_OK);
        const char *e = npu_last_error();
        CHECK(e && strstr(e, "position 32 outside 0..31"));
        write_ref(ref, r3, 31);
        CHECK_EQ_INT(NPU_OK, run(se, true, NULL, r3, 31, z, &rs));
        CHECK(matches(z, ref, 2e-3f));
    }
    npu_session_destroy(se);
    npu_model_free(m);
}

int
main(void)
{
    setenv("NPU_PARTITION", "supported", 1);
    test_text();
    test_cpu();
    test_npu("sim", true);
    test_npu("sim", false);
    test_npu("auto", true);
    return npu_test_done("test-state-write");
}
