/* SPDX-License-Identifier: MIT */
/*
 * bench-npu-siglip.c: modeled time (the timing model in use, v2 by default) of SigLIP-B/16's matrix
 * products and patch embedding as the back end compiles them, run on the
 * simulator (strict): per shape the tasks, modeled time, DMA bytes and MAC
 * utilisation (useful MACs / (512 MAC/cycle x 1 GHz x modeled time)), against
 * the arithmetic floor M*K*N / 512e9. The submit overhead (60 us) is shown
 * separately: in a whole model one submit carries many ops.
 *
 * usage: bench-npu-siglip [--fp16-partials]
 */
#include "npu-test-util.h"
#include "npu/npu-timing.h"

struct shape {
    const char *what;
    int M, K, N, count; /* count per layer (x12 layers) */
};

static void
run_shape(const struct shape *s, const struct npu_backend_options *o, double *frame_s,
          double *frame_floor)
{
    struct tu_mm p = {
        .rank = 2, .M = s->M, .K = s->K, .N = s->N, .bias = true, .range = 4, .seed = 7};
    struct npu_graph *g = tu_matmul_graph(&p);
    size_t na = (size_t)s->M * s->K;
    float *a = malloc(na * 4);
    uint32_t seed = 3;
    tu_fill(a, na, &seed, 4);
    struct npu_tensor in = g->inputs[0]->t, out = {0};
    in.data = a;
    struct tu_npu_result r;
    enum npu_status st = tu_run_npu(g, o, &in, &out, &r);
    CHECK_EQ_INT(NPU_OK, st);
    double floor_s = (double)s->M * s->K * s->N / (512.0 * 1e9);
    double task_s = r.modeled_s - npu_timing_model()->submit_overhead_s; /* without the submit */
    printf("%-22s %4dx%4dx%4d  tasks %2u  modeled %7.1f us (+%.0f submit)  floor %7.1f us  "
           "util %5.1f%%  DMA %6.2f MB\n",
           s->what, s->M, s->K, s->N, r.tasks, task_s * 1e6,
           npu_timing_model()->submit_overhead_s * 1e6, floor_s * 1e6, 100.0 * floor_s / task_s,
           r.dma_bytes / 1e6);
    *frame_s += task_s * s->count * 12;
    *frame_floor += floor_s * s->count * 12;
    free(a);
    free(out.data);
}

int
main(int argc, char **argv)
{
    struct npu_backend_options o = {0};
    if (argc > 1 && !strcmp(argv[1], "--fp16-partials"))
        o.fp16_partials = 1;
    static const struct shape shapes[] = {
        {"q/k/v proj (each)", 196, 768, 768, 3}, {"qkv fused", 196, 768, 2304, 0},
        {"attn out proj", 196, 768, 768, 1},     {"mlp fc1", 196, 768, 3072, 1},
        {"mlp fc2", 196, 3072, 768, 1},
    };
    double frame = 0, floor = 0;
    printf("SigLIP-B/16 matrix products, modeled (%s)%s\n", npu_timing_model()->label,
           o.fp16_partials ? ", fp16 partial sums" : "");
    for (size_t i = 0; i < NPU_ARRAY_SIZE(shapes); i++)
        run_shape(&shapes[i], &o, &frame, &floor);
    /* patch embedding: Conv 3 -> 768, 16x16 stride 16 on 224x224 */
    struct tu_conv pc = {.C = 3,
                         .H = 224,
                         .W = 224,
                         .K = 768,
                         .kh = 16,
                         .kw = 16,
                         .sy = 16,
                         .sx = 16,
                         .bias = true,
                         .range = 4,
                         .seed = 9};
    struct npu_graph *g = tu_conv_graph(&pc);
    size_t nx = 3 * 224 * 224;
    float *x = malloc(nx * 4);
    uint32_t seed = 5;
    tu_fill(x, nx, &seed, 4);
    struct npu_tensor in = g->inputs[0]->t, out = {0};
    in.data = x;
    struct tu_npu_result r;
    CHECK_EQ_INT(NPU_OK, tu_run_npu(g, &o, &in, &out, &r));
    double pf = 196.0 * 768 * 768 / 512e9, pt = r.modeled_s - npu_timing_model()->submit_overhead_s;
    printf("%-22s 3x224x224 16x16/16 -> 768  tasks %2u  modeled %7.1f us  floor %7.1f us  "
           "util %5.1f%%\n",
           "patch embedding", r.tasks, pt * 1e6, pf * 1e6, 100 * pf / pt);
    frame += pt;
    floor += pf;
    printf("per frame (12 layers, separate q/k/v, + patch embedding): modeled %.2f ms, floor "
           "%.2f ms, utilisation %.1f%% (%s; attention products, norms and "
           "activations not included)\n",
           frame * 1e3, floor * 1e3, 100 * floor / frame, npu_timing_model()->label);
    free(x);
    free(out.data);
    return npu_test_done("bench-npu-siglip");
}
