/* SPDX-License-Identifier: MIT */
/*
 * test-state-attn.c: a CPU step reading a KV cache where the NPU holds it. A hand-made
 * program (no compiler) whose K and V are state inputs in NPU_BUF_STATE, fp16 NC1HWC2 rows
 * (view (head_dim, heads x slots, 1)), and whose one CPU step is npu.Attention(Q, K, V,
 * mask) reading them in place (npu-program-cpu.c prog_cpu_attn_in_place, the kernel of
 * core/cpu/npu-cpu-attn16.c), on sim and on whatever "auto" opens (the kernel doubles as
 * rknpu / rocket in scripts/test.sh, where the step's sync from the device is a real
 * MEM_SYNC / PREP_BO ioctl). Checked: the first run uploads K and V (two inputs converted),
 * later runs pass them without data (two resident, nothing converted, no conversion step)
 * and still read the uploaded cache; the result matches a double loop on the fp16 values;
 * the run reports one in-place attention and the slots it read (the valid keys: the kernel
 * stops at the mask's last valid slot, npu_prog_run_stats.cpu_attn_slots);
 * the validator accepts the in-place read only for npu.Attention's K and V in that layout,
 * and names why otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-fp16.h"
#include "npu-layout.h"
#include "npu-test.h"
#include "npu/npu-device.h"
#include "npu/npu-program-check.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-program.h"

enum { TQ, TK, TV, TM, TY, NT };

struct prog {
    struct npu_program p;
    struct npu_prog_tensor t[NT];
    struct npu_prog_step s;
    int in_idx[4], out_idx[1], step_in[4], step_out[1];
    int64_t H, G, T, D;
};

static struct npu_prog_tensor
tensor(const char *name, int ndim, int64_t a, int64_t b, int64_t c)
{
    struct npu_prog_tensor t;
    memset(&t, 0, sizeof(t));
    t.name = name;
    t.t.dtype = NPU_DTYPE_FP32;
    t.t.ndim = ndim;
    t.t.dims[0] = a;
    t.t.dims[1] = b;
    t.t.dims[2] = c;
    t.io_input = -1;
    t.io_output = -1;
    return t;
}

static void
make(struct prog *g, int64_t H, int64_t G, int64_t T, int64_t D)
{
    memset(g, 0, sizeof(*g));
    g->H = H, g->G = G, g->T = T, g->D = D;
    uint64_t host = 0;
    g->t[TQ] = tensor("q", 3, H, G, D);
    g->t[TM] = tensor("mask", 3, 1, G, T);
    g->t[TY] = tensor("y", 3, H, G, D);
    const int host_t[3] = {TQ, TM, TY};
    for (int i = 0; i < 3; i++) {
        struct npu_prog_tensor *t = &g->t[host_t[i]];
        t->place = NPU_PLACE_HOST;
        t->offset = host;
        t->bytes = (uint64_t)npu_tensor_numel(&t->t) * 4;
        host += (t->bytes + 63) / 64 * 64;
    }
    uint64_t st = 0;
    const char *names[2] = {"past_k.0", "past_v.0"};
    for (int i = 0; i < 2; i++) {
        struct npu_prog_tensor *t = &g->t[TK + i];
        *t = tensor(names[i], 3, H, T, D);
        t->place = NPU_PLACE_NPU;
        t->buffer = NPU_BUF_STATE;
        t->offset = st;
        t->bytes = npu_nc1hwc2_bytes(2, (uint32_t)D, (uint32_t)(H * T), 1);
        t->layout = NPU_LAYOUT_NC1HWC2;
        t->mem_dtype = NPU_DTYPE_FP16;
        t->npu_c = (uint32_t)D;
        t->npu_h = (uint32_t)(H * T);
        t->npu_w = 1;
        t->npu_order = NPU_VIEW_HWC;
        st += (t->bytes + 63) / 64 * 64;
    }
    for (int i = 0; i < 4; i++) {
        g->in_idx[i] = i == 3 ? TM : i; /* q, k, v, mask */
        g->step_in[i] = g->in_idx[i];
        g->t[g->in_idx[i]].io_input = i;
    }
    g->out_idx[0] = g->step_out[0] = TY;
    g->t[TY].io_output = 0;
    g->s = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                  .op = NPU_OP_FUSED_ATTENTION,
                                  .in = g->step_in,
                                  .nin = 4,
                                  .out = g->step_out,
                                  .nout = 1,
                                  .name = "attn"};
    g->p.version = NPU_PROGRAM_VERSION;
    g->p.tensors = g->t;
    g->p.n_tensors = NT;
    g->p.steps = &g->s;
    g->p.n_steps = 1;
    g->p.inputs = g->in_idx;
    g->p.n_inputs = 4;
    g->p.outputs = g->out_idx;
    g->p.n_outputs = 1;
    g->p.host_bytes = host;
    g->p.state_bytes = st;
    g->p.producer = "test-state-attn.c";
}

static float
rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((int)(*s >> 9) % 2001 - 1000) / 500.0f;
}

/* y in double over the fp16 values of K and V */
static void
ref(const struct prog *g, const float *q, const float *m, const float *k, const float *v, double *y)
{
    const int64_t H = g->H, G = g->G, T = g->T, D = g->D;
    double *s = malloc(sizeof(double) * (size_t)T);
    for (int64_t h = 0; h < H; h++)
        for (int64_t r = 0; r < G; r++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < T; j++) {
                double a = 0;
                for (int64_t d = 0; d < D; d++)
                    a += (double)q[(h * G + r) * D + d] *
                         npu_fp16_to_fp32(npu_fp32_to_fp16(k[(h * T + j) * D + d]));
                s[j] = a / sqrt((double)D) + m[r * T + j];
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int64_t j = 0; j < T; j++)
                sum += s[j] = exp(s[j] - mx);
            for (int64_t d = 0; d < D; d++) {
                double a = 0;
                for (int64_t j = 0; j < T; j++)
                    a += s[j] / sum * npu_fp16_to_fp32(npu_fp32_to_fp16(v[(h * T + j) * D + d]));
                y[(h * G + r) * D + d] = a;
            }
        }
    free(s);
}

static void
run_case(const char *backend, int64_t H, int64_t G, int64_t T, int64_t D)
{
    struct npu_device *dev = NULL;
    if (npu_device_open(backend, &dev) || !dev) {
        printf("%s: no device, skipped\n", backend);
        return;
    }
    struct prog g;
    make(&g, H, G, T, D);
    char msg[256];
    CHECK_EQ_INT(NPU_OK, npu_program_validate(&g.p, msg, sizeof(msg)));
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_prog_model_create(dev, &g.p, NULL, &m));
    if (m)
        CHECK_EQ_INT(NPU_OK, npu_prog_session_create(m, 0, 1, &s));
    if (!s) {
        npu_prog_model_destroy(m);
        npu_device_close(dev);
        return;
    }
    const size_t nq = (size_t)(H * G * D), nkv = (size_t)(H * T * D), nm = (size_t)(G * T);
    float *q = malloc(4 * nq), *k = malloc(4 * nkv), *v = malloc(4 * nkv), *mask = malloc(4 * nm);
    double *want = malloc(8 * nq);
    uint32_t seed = 11;
    for (size_t i = 0; i < nkv; i++) {
        k[i] = rnd(&seed);
        v[i] = rnd(&seed);
    }
    for (int run = 0; run < 3; run++) {
        for (size_t i = 0; i < nq; i++)
            q[i] = rnd(&seed);
        const int64_t len = 1 + run * (T - 1) / 2; /* the valid keys grow: 1, .., T */
        for (int64_t r = 0; r < G; r++)
            for (int64_t j = 0; j < T; j++)
                mask[r * T + j] = j < len ? 0.0f : -10000.0f;
        struct npu_tensor in[4] = {
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, G, D}, .data = q},
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, T, D}, .data = run ? NULL : k},
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {H, T, D}, .data = run ? NULL : v},
            {.dtype = NPU_DTYPE_FP32, .ndim = 3, .dims = {1, G, T}, .data = mask},
        };
        struct npu_tensor out;
        struct npu_prog_run_stats rs;
        memset(&rs, 0, sizeof(rs)); /* steps, task_stats: none */
        enum npu_status st = npu_prog_session_run(s, in, 4, &out, 1, &rs);
        CHECK_EQ_INT(NPU_OK, st);
        if (st) {
            fprintf(stderr, "%s: %s\n", backend, npu_prog_session_error(s));
            break;
        }
        CHECK_EQ_INT(run ? 0 : 2, rs.inputs_converted);
        CHECK_EQ_INT(run ? 2 : 0, rs.inputs_resident);
        CHECK_EQ_INT(0, rs.convert_steps);
        CHECK_EQ_INT(1, rs.cpu_attn_steps);
        CHECK_EQ_INT(len, rs.cpu_attn_slots);
        ref(&g, q, mask, k, v, want);
        double worst = 0;
        const float *y = out.data;
        for (size_t i = 0; i < nq; i++) {
            double e = fabs(y[i] - want[i]) / (1e-4 * (1 + fabs(want[i])));
            worst = e > worst || e != e ? e : worst;
        }
        CHECK(worst <= 1.0);
        printf("%s: heads %lld, rows %lld, slots %lld, hd %lld, run %d (%s, %lld valid keys): "
               "%.3g of the tolerance\n",
               backend, (long long)H, (long long)G, (long long)T, (long long)D, run,
               run ? "cache resident" : "cache uploaded", (long long)len, worst);
    }
    free(q);
    free(k);
    free(v);
    free(mask);
    free(want);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
    npu_device_close(dev);
}

/* the validator's refusals, each naming why */
static void
refusals(void)
{
    struct prog g;
    char msg[512];
    make(&g, 2, 2, 32, 16);
    g.t[TK].npu_order = NPU_VIEW_NCHW;
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_program_validate(&g.p, msg, sizeof(msg)));
    CHECK(strstr(msg, "in NPU memory") && strstr(msg, "NC1HWC2 rows"));
    printf("refused: %s\n", msg);
    make(&g, 2, 2, 32, 16);
    g.s.op = NPU_OP_MATMUL;
    g.s.nin = 2;
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_program_validate(&g.p, msg, sizeof(msg)));
    CHECK(strstr(msg, "only K and V of npu.Attention") != NULL);
    printf("refused: %s\n", msg);
    make(&g, 2, 2, 32, 12);
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_program_validate(&g.p, msg, sizeof(msg)));
    CHECK(strstr(msg, "multiple of 8") != NULL);
    printf("refused: %s\n", msg);
    make(&g, 2, 2, 32, 16);
    g.t[TK].bytes -= 16;
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_program_validate(&g.p, msg, sizeof(msg)));
    printf("refused: %s\n", msg);
    make(&g, 2, 2, 32, 16);
    g.t[TQ].t.ndim = 2; /* [heads x rows, hd]: the same bytes, not the heads' form */
    g.t[TQ].t.dims[0] = 4;
    g.t[TQ].t.dims[1] = 16;
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_program_validate(&g.p, msg, sizeof(msg)));
    CHECK(strstr(msg, "Q is not") != NULL);
    printf("refused: %s\n", msg);
}

int
main(void)
{
    refusals();
    run_case("sim", 2, 2, 32, 16);   /* the LLaMA test checkpoint's GQA shape, smaller */
    run_case("sim", 12, 1, 160, 64); /* GPT-2 small's decode step */
    run_case("auto", 3, 1, 40, 24);
    return npu_test_done("test-state-attn");
}
