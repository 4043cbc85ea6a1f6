/* SPDX-License-Identifier: MIT */
/*
 * test-state-attn-cost.c: GPT-2 small's decode attention block under the default cost
 * partition, through the whole compiler: the new k / v rows come from two [768 x 768]
 * products (NPU by cost), are written into the [12, 160, 64] state caches in place by
 * npu.StateWrite on the NPU, and npu.Attention (CPU by cost: 42.5 us against 550.8 on
 * the NPU) reads the caches where the NPU holds them (npu_partition_kv_read_in_place,
 * npu-lower.c attn_reads_state, the runtime's prog_cpu_attn_in_place). Checked: the
 * program's attention is one CPU step whose K and V are the NPU_BUF_STATE tensors, no
 * conversion step reads the state, both writes are run-time positioned relocations (in
 * place); over four steps (the caches uploaded once, then resident) the rows and the
 * attention's output match the CPU backend given the host caches each step. The CPU
 * cost model (RK3588 CPU model v1) prices that attention by the bytes it reads, K and V as
 * fp16 (498,304 bytes, 42.5 us), not their logical fp32 (989,824 bytes, 83.5 us), in the
 * graph the partition prices.
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
#include "npu/npu-npub.h"
#include "npu/npu-partition.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-program.h"

enum { H = 12, T = 160, D = 64, X = H * D };

static int
wval(int i, int k)
{
    return (i * 37 + k * 11) % 7 - 3;
}

static char *
graph_text(void)
{
    size_t cap = 12u << 20, o = 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    o += (size_t)snprintf(t + o, cap - o,
                          "# opennpu ir v1\n"
                          "graph \"attn\" opset=18 {\n"
                          "  input %%x: f32[1,%d]\n"
                          "  input %%K: f32[%d,%d,%d] state\n"
                          "  input %%V: f32[%d,%d,%d] state\n"
                          "  input %%q: f32[%d,1,%d]\n"
                          "  input %%mask: f32[1,1,%d]\n"
                          "  input %%pos: i64[1]\n"
                          "  const %%rs: i64[3] = [%d,1,%d]\n",
                          X, H, T, D, H, T, D, H, D, T, H, D);
    for (int k = 0; k < 2; k++) {
        o += (size_t)snprintf(t + o, cap - o, "  const %%W%d: f32[%d,%d] = [", k, X, X);
        for (int i = 0; i < X * X && o + 16 < cap; i++)
            o += (size_t)snprintf(t + o, cap - o, "%s%d", i ? "," : "", wval(i, k));
        o += (size_t)snprintf(t + o, cap - o, "]\n");
    }
    snprintf(t + o, cap - o,
             "  %%kp: f32[1,%d] = MatMul(%%x, %%W0) <name=\"kp\">\n"
             "  %%k: f32[%d,1,%d] = Reshape(%%kp, %%rs) <name=\"k\">\n"
             "  %%kw: f32[%d,%d,%d] = npu.StateWrite(%%K, %%k, %%pos) {axis=1} <name=\"kw\">\n"
             "  %%vp: f32[1,%d] = MatMul(%%x, %%W1) <name=\"vp\">\n"
             "  %%v: f32[%d,1,%d] = Reshape(%%vp, %%rs) <name=\"v\">\n"
             "  %%vw: f32[%d,%d,%d] = npu.StateWrite(%%V, %%v, %%pos) {axis=1} <name=\"vw\">\n"
             "  %%y: f32[%d,1,%d] = npu.Attention(%%q, %%kw, %%vw, %%mask) <name=\"attn\">\n"
             "  output %%kp\n  output %%vp\n  output %%y\n"
             "}\n",
             X, H, D, H, T, D, X, H, D, H, T, D, H, D);
    return t;
}

static enum npu_status
load(const char *backend, struct npu_model **m, struct npu_session **se)
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
    struct npu_model_options o = {.backend = backend, .cpu_threads = 1};
    enum npu_status st = npu_model_load_graph(g, "attn", &o, m);
    if (!st)
        st = npu_session_create(*m, 0, se);
    if (st)
        fprintf(stderr, "%s: cannot compile: %s\n", backend, npu_last_error());
    return st;
}

static float
val(int i, int seed)
{
    return (float)((i * 37 + seed * 11) % 29 - 14) / 16.0f;
}

/* The CPU model's price of the graph's attention: K and V read as the fp16 rows the NPU
 * appends to in place (npu_partition_kv_read_in_place), the rest fp32; the same node without
 * its graph (a step of unknown provenance, fp32 inputs) at the logical fp32 bytes. */
static void
check_attn_price(void)
{
    char *text = graph_text();
    struct npu_graph *g = NULL;
    CHECK(text && !npu_ir_parse(text, strlen(text), NULL, 0, false, &g));
    free(text);
    if (!g)
        return;
    CHECK_EQ_INT(NPU_OK, npu_graph_update_uses(g));
    struct npu_node *at = NULL;
    npu_graph_for_each_node (g, n)
        if (n->op == NPU_OP_FUSED_ATTENTION)
            at = n;
    CHECK(at != NULL);
    if (at) {
        struct npu_cpu_model_terms t16, t32;
        double s16 = npu_cpu_model_cost(g, at, 1, &t16);
        double s32 = npu_cpu_model_cost(NULL, at, 1, &t32);
        const double q = 4.0 * H * D, kv = (double)H * T * D, mask = 4.0 * T;
        CHECK_NEAR(q + 2 * 2 * kv + mask + q, t16.bytes, 0); /* 498,304 */
        CHECK_NEAR(q + 2 * 4 * kv + mask + q, t32.bytes, 0); /* 989,824 */
        CHECK_NEAR(t16.bytes / npu_cpu_model_v1.dram_bytes_per_s + npu_cpu_model_v1.dispatch_s, s16,
                   1e-12); /* memory-bound */
        printf("CPU attention, RK3588 CPU model v1, one thread: %.1f us reading K and V as fp16 "
               "in place (%.0f bytes); %.1f us at their logical fp32 (%.0f bytes)\n",
               s16 * 1e6, t16.bytes, s32 * 1e6, t32.bytes);
    }
    npu_graph_free(g);
}

int
main(void)
{
    unsetenv("NPU_PARTITION"); /* the default: by cost */
    check_attn_price();
    struct npu_model *mc = NULL, *mn = NULL;
    struct npu_session *sc = NULL, *sn = NULL;
    CHECK_EQ_INT(NPU_OK, load("cpu", &mc, &sc));
    CHECK_EQ_INT(NPU_OK, load("sim", &mn, &sn));
    const struct npu_program *p = sn ? npu_model_program(mn) : NULL;
    CHECK(p != NULL);
    if (!sc || !sn || !p) {
        npu_session_destroy(sc);
        npu_session_destroy(sn);
        npu_model_free(mc);
        npu_model_free(mn);
        return npu_test_done("test-state-attn-cost");
    }
    int attn = 0, in_place = 0, state_converted = 0;
    uint32_t dyn = 0;
    for (int j = 0; j < p->n_jobs; j++)
        dyn += p->jobs[j].n_dynrelocs;
    for (int k = 0; k < p->n_steps; k++) {
        const struct npu_prog_step *st = &p->steps[k];
        if (st->kind == NPU_STEP_CONVERT && st->nin > 0 &&
            p->tensors[st->in[0]].buffer == NPU_BUF_STATE &&
            p->tensors[st->in[0]].place == NPU_PLACE_NPU)
            state_converted++;
        if (st->kind != NPU_STEP_CPU || st->op != NPU_OP_FUSED_ATTENTION)
            continue;
        attn++;
        for (int i = 1; i <= 2 && i < st->nin; i++)
            in_place += p->tensors[st->in[i]].place == NPU_PLACE_NPU &&
                        p->tensors[st->in[i]].buffer == NPU_BUF_STATE;
    }
    CHECK_EQ_INT(1, attn);            /* the attention on the CPU, by cost */
    CHECK_EQ_INT(2, in_place);        /* reading K and V where the NPU holds them */
    CHECK_EQ_INT(0, state_converted); /* nothing of the caches converted per run */
    CHECK_EQ_INT(2, (int)dyn);        /* both writes on the NPU, in place */
    /* the .npub round trip (the compile cache): the loader's shape inference of the CPU
     * attention sees fp32 K and V (held as fp16) */
    void *buf = NULL;
    size_t len = 0;
    struct npu_npub *a = NULL;
    char err[256] = "";
    CHECK_EQ_INT(NPU_OK, npu_npub_encode(p, NULL, &buf, &len));
    CHECK_EQ_INT(NPU_OK, npu_npub_decode(buf, len, &a, err, sizeof(err)));
    if (err[0])
        fprintf(stderr, "npub: %s\n", err);
    npu_npub_free(a);
    free(buf);

    static float x[X], K[H * T * D], V[H * T * D], q[H * D], mask[T];
    float *got[3], *want[3];
    const int64_t on[3] = {X, X, H * D};
    for (int i = 0; i < H * T * D; i++) {
        K[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(val(i, 3)));
        V[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(val(i, 4)));
    }
    int bad = 0;
    for (int step = 0; step < 4; step++) {
        const int64_t pos = 100 + step;
        for (int i = 0; i < X; i++)
            x[i] = npu_fp16_to_fp32(npu_fp32_to_fp16(val(i, 7 + step) / 512.0f));
        for (int i = 0; i < H * D; i++)
            q[i] = val(i, 20 + step) / 4.0f;
        for (int j = 0; j < T; j++)
            mask[j] = j <= pos ? 0.0f : -10000.0f;
        struct npu_tensor in[6] = {
            {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {1, X}, .data = x},
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, T, D}, .data = K},
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, T, D}, .data = V},
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, 1, D}, .data = q},
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {1, 1, T}, .data = mask},
            {.dtype = NPU_DTYPE_INT64, .ndim = 1, .dims = {1}, .data = (void *)&pos},
        };
        struct npu_tensor oc[3], onn[3];
        CHECK_EQ_INT(NPU_OK, npu_session_run(sc, in, 6, oc, 3, NULL));
        if (step) /* resident: given without data */
            in[1].data = in[2].data = NULL;
        struct npu_prog_run_stats rs;
        memset(&rs, 0, sizeof(rs));
        CHECK_EQ_INT(NPU_OK, npu_session_run_detailed(sn, in, 6, onn, 3, &rs));
        CHECK_EQ_INT(step ? 2 : 0, (int)rs.inputs_resident);
        for (int k = 0; k < 3; k++) {
            want[k] = oc[k].data;
            got[k] = onn[k].data;
        }
        if (!got[0] || !want[0])
            break;
        double worst = 0;
        for (int k = 0; k < 3; k++)
            for (int64_t i = 0; i < on[k]; i++) {
                double e = fabs(got[k][i] - want[k][i]) / (4e-3 * (1 + fabs(want[k][i])));
                worst = e > worst || e != e ? e : worst;
            }
        bad += !(worst <= 1.0);
        printf("step %d (position %lld, caches %s): worst %.3g of the tolerance\n", step,
               (long long)pos, step ? "resident" : "uploaded", worst);
        /* the CPU reference's caches: the rows the CPU computed, written at pos */
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                K[((size_t)h * T + pos) * D + d] =
                    npu_fp16_to_fp32(npu_fp32_to_fp16(want[0][h * D + d]));
                V[((size_t)h * T + pos) * D + d] =
                    npu_fp16_to_fp32(npu_fp32_to_fp16(want[1][h * D + d]));
            }
    }
    CHECK_EQ_INT(0, bad);
    npu_session_destroy(sc);
    npu_session_destroy(sn);
    npu_model_free(mc);
    npu_model_free(mn);
    return npu_test_done("test-state-attn-cost");
}
