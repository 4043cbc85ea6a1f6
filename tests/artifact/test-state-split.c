/* SPDX-License-Identifier: MIT */
/*
 * test-state-split.c: a decode step's in-place cache write (npu.StateWrite on a state
 * input, one run-time positioned relocation) inside a program split over three cores
 * (npu_model_options.layer_split, npu_session_split_layers, the simulator). The graph is a
 * small decode step's shape:
 *   a, b, c = x @ Wa, x @ Wb, x @ Wc        three independent products (a run to split)
 *   w       = StateWrite(S, row, pos){axis=1}   S [2, 32, 16] resident, written in place
 *   z       = w * 2                          reads the whole cache (after the write)
 *   d       = x @ Wd                         after it
 * Checked: the write shares the job with its neighbours (one NPU job: codegen no longer
 * cuts the job around a run-time write under layer_split), the split makes at most two
 * submits of it with at least one over several cores (NPU_SPLIT_FORCE=1: the tiny products
 * are shorter than a submit), the recording run has no order violation, and over runs at
 * positions before, at and after the recorded one (the state resident, no data given)
 * every row lands where its position says, earlier rows stay, z reads the written cache
 * and the products match the CPU backend's, to fp16 precision.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-fp16.h"
#include "npu-test.h"
#include "npu/npu-exec.h"
#include "npu/npu-ir.h"
#include "npu/npu-model.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-program.h"

enum { KH = 2, T = 32, D = 16, X = 64, N = 32 };

static float
val(int i, int seed)
{
    return (float)((i * 37 + seed * 11) % 29 - 14) / 16.0f;
}

/* the IR text of the graph, its four weights [X, N] written out */
static char *
graph_text(void)
{
    size_t cap = 200000, o = 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    o += (size_t)snprintf(t + o, cap - o,
                          "# opennpu ir v1\n"
                          "graph \"step\" opset=18 {\n"
                          "  input %%x: f32[1,%d]\n"
                          "  input %%S: f32[%d,%d,%d] state\n"
                          "  input %%row: f32[%d,1,%d]\n"
                          "  input %%pos: i64[1]\n"
                          "  const %%two: f32[] = [2]\n",
                          X, KH, T, D, KH, D);
    static const char names[4] = {'a', 'b', 'c', 'd'};
    for (int k = 0; k < 4; k++) {
        o += (size_t)snprintf(t + o, cap - o, "  const %%W%c: f32[%d,%d] = [", names[k], X, N);
        for (int i = 0; i < X * N; i++)
            o += (size_t)snprintf(t + o, cap - o, "%s%g", i ? "," : "", val(i, k + 1));
        o += (size_t)snprintf(t + o, cap - o, "]\n");
    }
    snprintf(t + o, cap - o,
             "  %%a: f32[1,%d] = MatMul(%%x, %%Wa) <name=\"a\">\n"
             "  %%b: f32[1,%d] = MatMul(%%x, %%Wb) <name=\"b\">\n"
             "  %%c: f32[1,%d] = MatMul(%%x, %%Wc) <name=\"c\">\n"
             "  %%w: f32[%d,%d,%d] = npu.StateWrite(%%S, %%row, %%pos) {axis=1} <name=\"w\">\n"
             "  %%z: f32[%d,%d,%d] = Mul(%%w, %%two) <name=\"z\">\n"
             "  %%d: f32[1,%d] = MatMul(%%x, %%Wd) <name=\"d\">\n"
             "  output %%a\n  output %%b\n  output %%c\n  output %%z\n  output %%d\n"
             "}\n",
             N, N, N, KH, T, D, KH, T, D, N);
    return t;
}

static enum npu_status
load(const char *backend, bool split, struct npu_model **m, struct npu_session **se)
{
    char *text = graph_text();
    struct npu_graph *g = NULL;
    *m = NULL;
    *se = NULL;
    if (!text || npu_ir_parse(text, strlen(text), NULL, 0, false, &g)) {
        fprintf(stderr, "the graph does not parse: %s\n", npu_last_error());
        free(text);
        return NPU_ERR_INVALID;
    }
    free(text);
    struct npu_model_options o = {.backend = backend, .cpu_threads = 1, .layer_split = split};
    enum npu_status st = npu_model_load_graph(g, "step", &o, m);
    if (!st)
        st = npu_session_create(*m, 0, se);
    if (st)
        fprintf(stderr, "%s: cannot compile: %s\n", backend, npu_last_error());
    return st;
}

/* outputs: a, b, c (N each), z (KH * T * D), d (N), copied into out in that order */
static enum npu_status
run(struct npu_session *se, const float *x, const float *S, const float *row, int64_t pos,
    float *out, struct npu_prog_run_stats *rs)
{
    struct npu_tensor in[4] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {1, X}, .data = (void *)x},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, T, D}, .data = (void *)S},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, 1, D}, .data = (void *)row},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &pos},
    };
    struct npu_tensor o[5];
    enum npu_status st =
        rs ? npu_session_run_detailed(se, in, 4, o, 5, rs) : npu_session_run(se, in, 4, o, 5, NULL);
    if (st)
        return st;
    size_t at = 0;
    for (int k = 0; k < 5; k++) {
        size_t n = (size_t)npu_tensor_numel(&o[k]);
        memcpy(out + at, o[k].data, n * sizeof(float));
        at += n;
    }
    return NPU_OK;
}

#define OUT_N (4 * N + KH * T * D)

static int
mismatches(const float *got, const float *want)
{
    int bad = 0;
    for (int i = 0; i < OUT_N; i++)
        if (fabsf(got[i] - want[i]) > 4e-3f * (1.0f + fabsf(want[i]))) {
            if (bad < 4)
                fprintf(stderr, "output element %d: %g, expected %g\n", i, got[i], want[i]);
            bad++;
        }
    return bad;
}

int
main(void)
{
    setenv("NPU_PARTITION", "supported", 1);
    setenv("NPU_SPLIT_FORCE", "1", 1); /* the products are shorter than a submit */
    struct npu_model *mc = NULL, *mn = NULL;
    struct npu_session *sc = NULL, *sn = NULL;
    CHECK_EQ_INT(NPU_OK, load("cpu", false, &mc, &sc));
    CHECK_EQ_INT(NPU_OK, load("sim", true, &mn, &sn));
    if (!sc || !sn) {
        npu_session_destroy(sc);
        npu_session_destroy(sn);
        npu_model_free(mc);
        npu_model_free(mn);
        return npu_test_done("test-state-split");
    }
    const struct npu_program *p = npu_model_program(mn);
    CHECK(p != NULL);
    uint32_t dyn = 0, jobs = 0, cpu = 0;
    for (int j = 0; p && j < p->n_jobs; j++)
        dyn += p->jobs[j].n_dynrelocs;
    for (int k = 0; p && k < p->n_steps; k++) {
        jobs += p->steps[k].kind == NPU_STEP_NPU_JOB;
        cpu += p->steps[k].kind == NPU_STEP_CPU;
    }
    CHECK_EQ_INT(1, (int)dyn);  /* the write on the NPU, in place */
    CHECK_EQ_INT(0, (int)cpu);  /* everything on the NPU */
    CHECK_EQ_INT(1, (int)jobs); /* the write shares the products' job */

    static float x[X], S[KH * T * D], rows[4][KH * D], got[OUT_N], want[OUT_N];
    for (int i = 0; i < X; i++)
        x[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(val(i, 7)));
    for (int i = 0; i < KH * T * D; i++)
        S[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(val(i, 8)));
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < KH * D; i++)
            rows[r][i] = npu_fp16_to_fp32(npu_fp32_to_fp16(val(i, 9 + r)));

    /* the split, recorded at position 20 (that run writes rows[0] there) */
    int64_t rec_pos = 20;
    struct npu_tensor in[4] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {1, X}, .data = x},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, T, D}, .data = S},
        {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {KH, 1, D}, .data = rows[0]},
        {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = &rec_pos},
    };
    struct npu_prog_split_info info;
    memset(&info, 0, sizeof(info));
    CHECK_EQ_INT(NPU_OK, npu_session_split_layers(sn, in, 4, 3, &info));
    CHECK_EQ_INT(1, (int)info.jobs_split);
    CHECK(info.parallel_segs >= 1);
    CHECK(info.submits <= 2);
    fprintf(stderr, "split: %u submits, %u of them multi-core (%u of %u tasks)\n", info.submits,
            info.parallel_segs, info.parallel_tasks, info.tasks);

    /* the CPU reference's state is given in full each run; the NPU's stays resident */
    static float ref[KH * T * D];
    memcpy(ref, S, sizeof(S));
    for (int h = 0; h < KH; h++) /* the recording run's row */
        memcpy(ref + ((size_t)h * T + 20) * D, rows[0] + h * D, sizeof(float) * D);
    const int64_t pos[3] = {3, 20, 31};
    for (int r = 0; r < 3; r++) {
        struct npu_prog_run_stats rs;
        memset(&rs, 0, sizeof(rs));
        CHECK_EQ_INT(NPU_OK, run(sn, x, NULL, rows[r + 1], pos[r], got, &rs));
        CHECK_EQ_INT(0, (int)rs.order_violations);
        CHECK(rs.submits <= 2);
        CHECK_EQ_INT(1, (int)rs.inputs_resident);
        CHECK_EQ_INT(NPU_OK, run(sc, x, ref, rows[r + 1], pos[r], want, NULL));
        CHECK_EQ_INT(0, mismatches(got, want));
        /* the reference's state after this write, for the next run */
        for (int h = 0; h < KH; h++)
            memcpy(ref + ((size_t)h * T + (size_t)pos[r]) * D, rows[r + 1] + h * D,
                   sizeof(float) * D);
    }
    npu_session_destroy(sc);
    npu_session_destroy(sn);
    npu_model_free(mc);
    npu_model_free(mn);
    return npu_test_done("test-state-split");
}
