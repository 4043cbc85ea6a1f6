/* SPDX-License-Identifier: MIT */
/*
 * hand-prog.h: hand-made compiled programs for the runtime and artifact tests,
 * built without the compiler's codegen so that the executor and the .npub
 * format are tested on their own. The NPU job is the hardware-proven A.1
 * matmul of facts Appendix A (core/hw npu_ref_matmul_emit: one 1x1-conv task,
 * fp16 in, fp32 out), laid out position independent (addresses 0, relocations
 * by buffer id) exactly as the contract of npu-program.h asks.
 *
 * The program ("matmul + bias + relu"), y = relu(a . b + bias), a [M][K] fp32,
 * b [K][N] constant:
 *   step 0  CONVERT  a (host, fp32 row-major) -> a16 (ACT, fp16 NC1HWC2 rows)
 *   step 1  NPU_JOB  c32 = a16 . b (A.1, weights packed in WEIGHTS)
 *   step 2  CONVERT  c32 (ACT, fp32 NC1HWC2 rows) -> c (host, fp32)
 *   step 3  CPU      cb = Add(c, bias)
 *   step 4  CPU      y = Relu(cb)
 * With io_on_npu the runtime converts the input and output itself: the input
 * is a16 and the program's output is c32 (steps 0, 2, 3, 4 are left out).
 */
#ifndef HAND_PROG_H
#define HAND_PROG_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu-fp16.h"
#include "npu-layout.h"
#include "npu-refprog.h"
#include "npu-task.h"
#include "npu/npu-program.h"

enum { HT_A, HT_A16, HT_C32, HT_C, HT_BIAS, HT_CB, HT_Y, HT_COUNT };

struct hand_prog {
    struct npu_program p;
    struct npu_prog_tensor t[HT_COUNT];
    struct npu_prog_step s[8];
    struct npu_prog_job job;
    struct npu_prog_task *tasks;
    struct npu_prog_reloc *relocs;
    uint64_t *regcmd;
    int io[32];
    uint8_t *weights;
    float *b, *bias; /* b rounded to fp16 (what the NPU multiplies) */
    uint32_t m, k, n;
};

static inline uint32_t
hp_rand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static inline void
hand_prog_free(struct hand_prog *h)
{
    free(h->tasks);
    free(h->relocs);
    free(h->regcmd);
    free(h->weights);
    free(h->b);
    free(h->bias);
    memset(h, 0, sizeof(*h));
}

static inline struct npu_prog_tensor
hp_tensor(const char *name, uint32_t rows, uint32_t cols, bool scalar_row)
{
    struct npu_prog_tensor t;
    memset(&t, 0, sizeof(t));
    t.name = name;
    t.t.dtype = NPU_DTYPE_FP32;
    t.t.ndim = scalar_row ? 1 : 2;
    t.t.dims[0] = scalar_row ? cols : rows;
    t.t.dims[1] = cols;
    t.io_input = -1;
    t.io_output = -1;
    return t;
}

/* Copies a laid-out image's command words, tasks (all named `name`) and relocations into
 * fresh arrays, as a job needs them; relocs gets one spare entry. -1 when out of memory. */
static inline int
hand_image_copy(const struct npu_regcmd_image *img, const char *name, uint64_t **regcmd,
                struct npu_prog_task **tasks, struct npu_prog_reloc **relocs)
{
    *regcmd = malloc(img->n_qwords * 8);
    *tasks = calloc(img->n_tasks, sizeof(**tasks));
    *relocs = calloc(img->n_relocs + 1, sizeof(**relocs));
    if (!*regcmd || !*tasks || !*relocs)
        return -1;
    memcpy(*regcmd, img->qwords, img->n_qwords * 8);
    for (uint32_t i = 0; i < img->n_tasks; i++)
        (*tasks)[i] =
            (struct npu_prog_task){img->tasks[i].start, img->tasks[i].n_body,
                                   img->tasks[i].enable_mask, img->tasks[i].int_mask, name};
    for (uint32_t i = 0; i < img->n_relocs; i++)
        (*relocs)[i] = (struct npu_prog_reloc){img->relocs[i].qword, img->relocs[i].buffer,
                                               img->relocs[i].offset};
    return 0;
}

/* Builds the program; returns 0 on success. */
static inline int
hand_prog_make(struct hand_prog *h, uint32_t m, uint32_t k, uint32_t n, bool io_on_npu,
               uint32_t seed)
{
    memset(h, 0, sizeof(*h));
    h->m = m;
    h->k = k;
    h->n = n;
    struct npu_weight_layout wl;
    if (npu_weight_layout_init(&wl, 2, n, k, 1, 1, false))
        return -1;
    h->b = malloc(sizeof(float) * k * n);
    h->bias = malloc(sizeof(float) * n);
    uint16_t *b16 = malloc(2 * (size_t)k * n);
    h->weights = calloc(1, wl.total_bytes);
    if (!h->b || !h->bias || !b16 || !h->weights)
        return -1;
    for (size_t i = 0; i < (size_t)k * n; i++) {
        float v = ((int)(hp_rand(&seed) % 2001) - 1000) / 1000.0f;
        b16[i] = npu_fp32_to_fp16(v);
        h->b[i] = npu_fp16_to_fp32(b16[i]);
    }
    for (uint32_t i = 0; i < n; i++)
        h->bias[i] = ((int)(hp_rand(&seed) % 2001) - 1000) / 500.0f;
    if (npu_weight_pack_matmul(&wl, h->weights, wl.total_bytes, b16, 0))
        return -1;
    free(b16);

    /* Tensors. ACT: a16 at 0, c32 after it (64-byte aligned). */
    uint64_t a16_bytes = npu_nc1hwc2_bytes(2, k, m, 1), c32_bytes = npu_nc1hwc2_bytes(4, n, m, 1);
    uint64_t c32_off = NPU_ALIGN(a16_bytes, 64);
    h->t[HT_A] = hp_tensor("a", m, k, false);
    h->t[HT_A].bytes = 4ull * m * k;
    h->t[HT_A16] = hp_tensor("a16", m, k, false);
    h->t[HT_A16].place = NPU_PLACE_NPU;
    h->t[HT_A16].buffer = NPU_BUF_ACT;
    h->t[HT_A16].bytes = a16_bytes;
    h->t[HT_A16].layout = NPU_LAYOUT_NC1HWC2;
    h->t[HT_A16].mem_dtype = NPU_DTYPE_FP16;
    h->t[HT_A16].npu_c = k;
    h->t[HT_A16].npu_h = m;
    h->t[HT_A16].npu_w = 1;
    h->t[HT_A16].npu_order = NPU_VIEW_HWC;
    h->t[HT_C32] = hp_tensor("c32", m, n, false);
    h->t[HT_C32].place = NPU_PLACE_NPU;
    h->t[HT_C32].buffer = NPU_BUF_ACT;
    h->t[HT_C32].offset = c32_off;
    h->t[HT_C32].bytes = c32_bytes;
    h->t[HT_C32].layout = NPU_LAYOUT_NC1HWC2;
    h->t[HT_C32].mem_dtype = NPU_DTYPE_FP32;
    h->t[HT_C32].npu_c = n;
    h->t[HT_C32].npu_h = m;
    h->t[HT_C32].npu_w = 1;
    h->t[HT_C32].npu_order = NPU_VIEW_HWC;
    /* Host arena: a at 0, c, then cb, y. */
    uint64_t off = NPU_ALIGN(4ull * m * k, 64);
    h->t[HT_C] = hp_tensor("c", m, n, false);
    h->t[HT_C].offset = off;
    h->t[HT_C].bytes = 4ull * m * n;
    off += NPU_ALIGN(4ull * m * n, 64);
    h->t[HT_BIAS] = hp_tensor("bias", 1, n, true);
    h->t[HT_BIAS].t.data = h->bias;
    h->t[HT_BIAS].bytes = 4ull * n;
    h->t[HT_CB] = hp_tensor("cb", m, n, false);
    h->t[HT_CB].offset = off;
    h->t[HT_CB].bytes = 4ull * m * n;
    off += NPU_ALIGN(4ull * m * n, 64);
    h->t[HT_Y] = hp_tensor("y", m, n, false);
    h->t[HT_Y].offset = off;
    h->t[HT_Y].bytes = 4ull * m * n;
    off += NPU_ALIGN(4ull * m * n, 64);

    /* The job: A.1 with input and output in ACT, weights in WEIGHTS. */
    struct npu_stream s;
    npu_stream_init(&s);
    struct npu_ref_matmul rm = {.kind = NPU_REF_MATMUL_FP16_FP32,
                                .m = m,
                                .k = k,
                                .n = n,
                                .input = {NPU_BUF_ACT, 0},
                                .weight = {NPU_BUF_WEIGHTS, 0},
                                .output = {NPU_BUF_ACT, (uint32_t)c32_off}};
    struct npu_regcmd_image img;
    if (npu_ref_matmul_emit(&s, &rm) || npu_stream_layout(&s, 0, 64, &img)) {
        npu_stream_fini(&s);
        return -1;
    }
    npu_stream_fini(&s);
    if (hand_image_copy(&img, "matmul", &h->regcmd, &h->tasks, &h->relocs)) {
        npu_image_fini(&img);
        return -1;
    }
    h->job = (struct npu_prog_job){h->regcmd, (uint32_t)img.n_qwords, h->tasks,  img.n_tasks,
                                   h->relocs, img.n_relocs,           img.align, 0};
    npu_image_fini(&img);

    /* Steps. io[]: operand lists. */
    int *io = h->io;
    int ns = 0;
    if (!io_on_npu) {
        io[0] = HT_A, io[1] = HT_A16;
        h->s[ns++] = (struct npu_prog_step){.kind = NPU_STEP_CONVERT,
                                            .in = &io[0],
                                            .nin = 1,
                                            .out = &io[1],
                                            .nout = 1,
                                            .name = "to_npu"};
    }
    h->s[ns++] = (struct npu_prog_step){.kind = NPU_STEP_NPU_JOB, .job = 0, .name = "matmul"};
    if (!io_on_npu) {
        io[2] = HT_C32, io[3] = HT_C;
        h->s[ns++] = (struct npu_prog_step){.kind = NPU_STEP_CONVERT,
                                            .in = &io[2],
                                            .nin = 1,
                                            .out = &io[3],
                                            .nout = 1,
                                            .name = "to_host"};
        io[4] = HT_C, io[5] = HT_BIAS, io[6] = HT_CB;
        h->s[ns++] = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                            .op = NPU_OP_ADD,
                                            .in = &io[4],
                                            .nin = 2,
                                            .out = &io[6],
                                            .nout = 1,
                                            .name = "bias"};
        io[7] = HT_CB, io[8] = HT_Y;
        h->s[ns++] = (struct npu_prog_step){.kind = NPU_STEP_CPU,
                                            .op = NPU_OP_RELU,
                                            .in = &io[7],
                                            .nin = 1,
                                            .out = &io[8],
                                            .nout = 1,
                                            .name = "relu"};
    }
    io[10] = io_on_npu ? HT_A16 : HT_A;
    io[11] = io_on_npu ? HT_C32 : HT_Y;
    h->t[io[10]].io_input = 0;
    h->t[io[11]].io_output = 0;

    h->p.version = NPU_PROGRAM_VERSION;
    h->p.tensors = h->t;
    h->p.n_tensors = HT_COUNT;
    h->p.steps = h->s;
    h->p.n_steps = ns;
    h->p.jobs = &h->job;
    h->p.n_jobs = 1;
    h->p.inputs = &io[10];
    h->p.n_inputs = 1;
    h->p.outputs = &io[11];
    h->p.n_outputs = 1;
    h->p.weights = h->weights;
    h->p.weights_bytes = wl.total_bytes;
    h->p.act_bytes = c32_off + c32_bytes;
    h->p.host_bytes = off;
    h->p.producer = "hand-prog.h";
    return 0;
}

/* y = relu(fp16(a) . b + bias) in double; relu/bias skipped for io_on_npu. */
static inline void
hand_prog_ref(const struct hand_prog *h, const float *a, bool io_on_npu, double *y, double *mag)
{
    for (uint32_t i = 0; i < h->m; i++)
        for (uint32_t j = 0; j < h->n; j++) {
            double acc = 0, mg = 0;
            for (uint32_t q = 0; q < h->k; q++) {
                double x = npu_fp16_to_fp32(npu_fp32_to_fp16(a[(size_t)i * h->k + q]));
                acc += x * h->b[(size_t)q * h->n + j];
                mg += fabs(x * h->b[(size_t)q * h->n + j]);
            }
            if (!io_on_npu) {
                acc = (float)acc + h->bias[j];
                acc = acc > 0 ? acc : 0;
            }
            y[(size_t)i * h->n + j] = acc;
            mag[(size_t)i * h->n + j] = mg;
        }
}

#endif /* HAND_PROG_H */
