/* SPDX-License-Identifier: MIT */
/*
 * test-npu-conv.c: Conv through the back end on the simulator (strict mode)
 * against the CPU executor: kernels 1/3/5/7, strides 1/2, padding, bias,
 * ReLU / clip, depthwise, grouped (per group and block-diagonal), 1-4 input
 * channels, maps large enough for row tiles, many kernels, many channels
 * (channel-block accumulation); batches of 2 and 3 images (the images as
 * channel blocks of one map, docs/npu-backend.md), Conv1d (H = 1) with
 * stride, padding, dilation, groups and bias, dilation as a zero-tap kernel;
 * cost() equal to the lowered rk.Conv's modeled time; refusals.
 *
 * Tolerance as in test-npu-matmul.c: data k/16 with |k| <= range are exact in
 * fp16, every partial sum is exact in fp32, so the only possible difference
 * from the CPU is an fp16 store: relative 2^-11 (plus 1e-7 absolute). A conv
 * chain checks an fp16 intermediate that stays in NPU memory.
 */
#include "npu-test-util.h"
#include "npu/npu-timing.h"

static int verbose;

static void
check_conv(const struct tu_conv *p, const struct npu_backend_options *o, int want_cpu,
           const char *label)
{
    struct npu_graph *g1 = tu_conv_graph(p), *g2 = tu_conv_graph(p);
    CHECK(g1 && g2);
    if (!g1 || !g2)
        return;
    size_t n = (size_t)(p->N ? p->N : 1) * p->C * (p->one_d ? 1 : p->H) * p->W;
    float *x = malloc(n * 4);
    uint32_t s = p->seed * 13 + 7;
    tu_fill(x, n, &s, p->range);
    struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
    in.data = x;
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
    enum npu_status st = tu_run_npu(g2, o, &in, &got, &res);
    CHECK_EQ_INT(NPU_OK, st);
    if (!st) {
        int64_t worst = 0;
        double e = tu_cmp(&got, &want, 1e-7, ldexp(1, -11), &worst);
        if (e > 1)
            fprintf(stderr, "%s: element %lld: npu %.9g cpu %.9g (%.3g of tolerance)\n", label,
                    (long long)worst, ((float *)got.data)[worst], ((float *)want.data)[worst], e);
        CHECK(e <= 1);
        CHECK_EQ_INT(want_cpu, res.n_cpu);
        CHECK_EQ_INT(1, res.n_rk);
        CHECK_EQ_INT(1, res.submits);
        if (verbose || e > 1)
            printf("%-52s tasks %3u  cpu nodes %d  modeled %8.1f us (%s)\n", label, res.tasks,
                   res.n_cpu, res.modeled_s * 1e6, npu_timing_model()->label);
    }
    free(x);
    free(want.data);
    free(got.data);
    /* cost() prices what the lowering emits: the rk.Conv's modeled time. A 1x1 conv reads
     * the result on the NPU too, so that it stays fp16 (a result only the host reads is
     * written as fp32 after lowering, npu_rk_conv_widen_outputs, which cost() does not
     * foresee) */
    struct npu_graph *g3 = tu_conv_graph(p);
    CHECK(g3 != NULL);
    if (!g3)
        return;
    struct npu_node *c1 = g3->tail;
    {
        struct npu_value *y = c1->out[0];
        float *w2 = calloc((size_t)8 * p->K, sizeof(float));
        for (int i = 0; i < 8 && i < p->K; i++)
            w2[i * p->K + i] = 1;
        struct npu_tensor wt = {
            .dtype = NPU_DTYPE_FP32, .ndim = y->t.ndim, .dims = {8, p->K, 1, 1}, .data = w2};
        struct npu_value *in2[2] = {y, npu_graph_add_const(g3, "w2", &wt)};
        free(w2);
        struct npu_node *c2 =
            npu_node_new(g3, NPU_OP_CONV, "conv2", in2, 2, 1, (const char *[]){"y2"});
        npu_graph_append(g3, c2);
        CHECK(npu_infer_node(g3, c2) == NPU_OK);
        npu_graph_add_output(g3, c2->out[0]);
    }
    npu_graph_update_uses(g3);
    double cost = npu_backend_cost(g3, c1, o);
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g3, o));
    int seen = 0;
    npu_graph_for_each_node (g3, q) {
        if (q->op != NPU_OP_RK_CONV || strcmp(q->name, "conv"))
            continue;
        double got_s = npu_node_float(q, "modeled_us", 0) * 1e-6;
        if (!(fabs(got_s - cost) < 1e-6 * got_s + 1e-9))
            fprintf(stderr, "%s: cost() %.9g s, lowered %.9g s\n", label, cost, got_s);
        CHECK(fabs(got_s - cost) < 1e-6 * got_s + 1e-9);
        seen++;
    }
    CHECK_EQ_INT(1, seen);
    npu_graph_free(g3);
}

/* ConvTranspose(x [1,C,H,W], W [C,K,k,k]) stride 1, pads, output_padding. */
static struct npu_graph *
convt_graph(int C, int H, int W, int K, int k, int pad, int opad, int stride, bool bias,
            uint32_t seed)
{
    struct npu_graph *g = npu_graph_new("convt");
    int64_t xd[4] = {1, C, H, W};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 4, xd);
    size_t nw = (size_t)C * K * k * k;
    float *w = malloc(nw * 4);
    uint32_t s = seed;
    tu_fill(w, nw, &s, 16);
    struct npu_tensor wt = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {C, K, k, k}, .data = w};
    struct npu_value *in[3] = {x, npu_graph_add_const(g, "w", &wt), NULL};
    free(w);
    if (bias) {
        float b[64];
        tu_fill(b, (size_t)K, &s, 16);
        in[2] = npu_graph_const_f32(g, "b", b, K, false);
    }
    struct npu_node *n =
        npu_node_new(g, NPU_OP_CONV_TRANSPOSE, "convt", in, bias ? 3 : 2, 1, (const char *[]){"y"});
    int64_t pads[4] = {pad, pad, pad, pad}, st[2] = {stride, stride}, op[2] = {opad, opad};
    npu_node_set_ints(g, n, "pads", pads, 4);
    npu_node_set_ints(g, n, "strides", st, 2);
    if (opad)
        npu_node_set_ints(g, n, "output_padding", op, 2);
    npu_graph_append(g, n);
    if (npu_infer_node(g, n)) {
        npu_graph_free(g);
        return NULL;
    }
    npu_graph_add_output(g, n->out[0]);
    return g;
}

static void
check_convt(int C, int H, int W, int K, int k, int pad, int opad, int stride, bool bias,
            int want_rk, const char *label)
{
    struct npu_graph *g1 = convt_graph(C, H, W, K, k, pad, opad, stride, bias, 77);
    struct npu_graph *g2 = convt_graph(C, H, W, K, k, pad, opad, stride, bias, 77);
    CHECK(g1 && g2);
    if (!g1 || !g2)
        return;
    size_t n = (size_t)C * H * W;
    float *x = malloc(n * 4);
    uint32_t s = 91;
    tu_fill(x, n, &s, 16);
    struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
    in.data = x;
    struct npu_backend_options o = {0};
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
    CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, &o, &in, &got, &res));
    double e = tu_cmp(&got, &want, 1e-7, ldexp(1, -11), NULL);
    CHECK(e <= 1);
    CHECK_EQ_INT(want_rk, res.n_rk);
    if (verbose)
        printf("%-52s %s, error %.2f of tolerance\n", label, res.n_rk ? "npu" : "cpu", e);
    free(x);
    free(want.data);
    free(got.data);
}

/* x -> Conv (3x3, bias, relu) -> Conv (1x1, bias) -> y; with cast = true the
 * intermediate goes through Cast(f16) / Cast(f32), which is what the NPU's
 * fp16 intermediate tensor does (FP32TOFP16 rounds to nearest even). */
static struct npu_graph *
chain_graph(bool cast, uint32_t seed)
{
    struct npu_graph *g = npu_graph_new("chain");
    int64_t xd[4] = {1, 24, 20, 20};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 4, xd);
    uint32_t s = seed;
    float w1[40 * 24 * 9], b1[40], w2[56 * 40], b2[56];
    tu_fill(w1, NPU_ARRAY_SIZE(w1), &s, 16);
    tu_fill(b1, 40, &s, 16);
    tu_fill(w2, NPU_ARRAY_SIZE(w2), &s, 16);
    tu_fill(b2, 56, &s, 16);
    struct npu_tensor t1 = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {40, 24, 3, 3}, .data = w1};
    struct npu_tensor t2 = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {56, 40, 1, 1}, .data = w2};
    struct npu_value *in1[3] = {x, npu_graph_add_const(g, "w1", &t1),
                                npu_graph_const_f32(g, "b1", b1, 40, false)};
    struct npu_node *c1 = npu_node_new(g, NPU_OP_CONV, "c1", in1, 3, 1, NULL);
    int64_t pads[4] = {1, 1, 1, 1};
    npu_node_set_ints(g, c1, "pads", pads, 4);
    npu_node_set_string(g, c1, "npu_act", "relu");
    npu_graph_append(g, c1);
    npu_infer_node(g, c1);
    struct npu_value *mid = c1->out[0];
    if (cast) {
        struct npu_node *a = npu_node_new(g, NPU_OP_CAST, "to16", &mid, 1, 1, NULL);
        npu_node_set_int(g, a, "to", npu_dtype_to_onnx(NPU_DTYPE_FP16));
        npu_graph_append(g, a);
        npu_infer_node(g, a);
        struct npu_node *b = npu_node_new(g, NPU_OP_CAST, "to32", a->out, 1, 1, NULL);
        npu_node_set_int(g, b, "to", npu_dtype_to_onnx(NPU_DTYPE_FP32));
        npu_graph_append(g, b);
        npu_infer_node(g, b);
        mid = b->out[0];
    }
    struct npu_value *in2[3] = {mid, npu_graph_add_const(g, "w2", &t2),
                                npu_graph_const_f32(g, "b2", b2, 56, false)};
    struct npu_node *c2 = npu_node_new(g, NPU_OP_CONV, "c2", in2, 3, 1, (const char *[]){"y"});
    npu_graph_append(g, c2);
    if (npu_infer_node(g, c2)) {
        npu_graph_free(g);
        return NULL;
    }
    npu_graph_add_output(g, c2->out[0]);
    return g;
}

int
main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    struct npu_backend_options o = {0};
    char label[128];
    uint32_t seed = 1;

    /* kernel x stride x padding sweep on a small map */
    static const int ks[] = {1, 3, 5, 7};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(ks); i++)
        for (int st = 1; st <= 2; st++)
            for (int pad = 0; pad <= 2; pad++) {
                int k = ks[i];
                if (pad > k / 2 + 1)
                    continue;
                struct tu_conv p = {.C = 12,
                                    .H = 17,
                                    .W = 15,
                                    .K = 20,
                                    .kh = k,
                                    .kw = k,
                                    .sy = st,
                                    .sx = st,
                                    .pt = pad,
                                    .pl = pad,
                                    .pb = pad,
                                    .pr = pad,
                                    .bias = (i + st) % 2 == 0,
                                    .range = 16,
                                    .seed = seed++};
                snprintf(label, sizeof(label), "conv %dx%d/%d pad %d 12x17x15->20%s", k, k, st, pad,
                         p.bias ? " bias" : "");
                check_conv(&p, &o, 0, label);
            }
    /* asymmetric kernel, stride and pads */
    struct tu_conv p = {.C = 16,
                        .H = 20,
                        .W = 23,
                        .K = 24,
                        .kh = 3,
                        .kw = 5,
                        .sy = 2,
                        .sx = 1,
                        .pt = 1,
                        .pl = 2,
                        .pb = 0,
                        .pr = 1,
                        .bias = true,
                        .range = 16,
                        .seed = 40};
    check_conv(&p, &o, 0, "conv 3x5 stride 2x1 pads 1,2,0,1");
    /* activations */
    p = (struct tu_conv){.C = 16,
                         .H = 14,
                         .W = 14,
                         .K = 32,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "relu",
                         .range = 16,
                         .seed = 41};
    check_conv(&p, &o, 0, "conv 3x3 bias relu");
    p.act = "clip";
    p.act_alpha = 0;
    p.act_beta = 6;
    check_conv(&p, &o, 0, "conv 3x3 bias relu6");
    p.act_alpha = -2.5f;
    p.act_beta = 3.25f;
    check_conv(&p, &o, 0, "conv 3x3 bias clip(-2.5, 3.25)");
    /* depthwise (group = C), multiplier 1 */
    static const int dwk[] = {3, 5};
    for (int i = 0; i < 2; i++)
        for (int st = 1; st <= 2; st++) {
            p = (struct tu_conv){.C = 48,
                                 .H = 19,
                                 .W = 21,
                                 .K = 48,
                                 .kh = dwk[i],
                                 .kw = dwk[i],
                                 .sy = st,
                                 .sx = st,
                                 .pt = dwk[i] / 2,
                                 .pl = dwk[i] / 2,
                                 .pb = dwk[i] / 2,
                                 .pr = dwk[i] / 2,
                                 .group = 48,
                                 .bias = true,
                                 .act = "relu",
                                 .range = 16,
                                 .seed = seed++};
            snprintf(label, sizeof(label), "depthwise %dx%d/%d 48x19x21 bias relu", dwk[i], dwk[i],
                     st);
            check_conv(&p, &o, 0, label);
        }
    p = (struct tu_conv){.C = 20,
                         .H = 9,
                         .W = 9,
                         .K = 20,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .group = 20,
                         .range = 16,
                         .seed = 50};
    check_conv(&p, &o, 0, "depthwise 3x3 20 channels (not a multiple of 8)");
    /* grouped: per group (aligned) and block-diagonal (unaligned) */
    p = (struct tu_conv){.C = 32,
                         .H = 12,
                         .W = 12,
                         .K = 64,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .group = 2,
                         .bias = true,
                         .range = 16,
                         .seed = 51};
    check_conv(&p, &o, 0, "grouped 2 groups 16->32 each (per-group tasks)");
    p = (struct tu_conv){
        .C = 12, .H = 10, .W = 10, .K = 18, .kh = 3, .kw = 3, .group = 3, .range = 16, .seed = 52};
    check_conv(&p, &o, 0, "grouped 3 groups 4->6 each (block diagonal)");
    /* 1-4 input channels */
    for (int c = 1; c <= 4; c++) {
        p = (struct tu_conv){.C = c,
                             .H = 30,
                             .W = 34,
                             .K = 16,
                             .kh = 3,
                             .kw = 3,
                             .sy = 1,
                             .sx = 1,
                             .pt = 1,
                             .pl = 1,
                             .pb = 1,
                             .pr = 1,
                             .bias = true,
                             .range = 16,
                             .seed = seed++};
        snprintf(label, sizeof(label), "conv 3x3 %d input channel(s)", c);
        check_conv(&p, &o, 0, label);
    }
    /* kernel == stride (ViT patch embedding): host space-to-depth (Reshape, Transpose,
     * Reshape: 2 CPU nodes before the job, the last Reshape done by the conversion to the
     * NPU, fold_conversions) + 1x1 conv; stride 16 is past CONV_CON3's 7 */
    p = (struct tu_conv){.C = 3,
                         .H = 64,
                         .W = 48,
                         .K = 40,
                         .kh = 16,
                         .kw = 16,
                         .sy = 16,
                         .sx = 16,
                         .bias = true,
                         .range = 8,
                         .seed = 55};
    check_conv(&p, &o, 2, "patch 16x16/16 3x64x48->40 (space-to-depth)");
    p = (struct tu_conv){.C = 3,
                         .H = 32,
                         .W = 32,
                         .K = 64,
                         .kh = 8,
                         .kw = 8,
                         .sy = 8,
                         .sx = 8,
                         .bias = true,
                         .act = "relu",
                         .range = 8,
                         .seed = 56};
    check_conv(&p, &o, 2, "patch 8x8/8 3x32x32->64 relu (space-to-depth)");
    /* the small-channel cases above ran in ARGB mode (packed pixels) */
    {
        p = (struct tu_conv){
            .C = 3, .H = 30, .W = 34, .K = 16, .kh = 3, .kw = 3, .range = 16, .seed = 57};
        struct npu_graph *g = tu_conv_graph(&p);
        struct npu_backend_options o2 = {0};
        CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, &o2));
        char *txt = npu_ir_print_str(g, NULL);
        CHECK(txt && strstr(txt, "layout=\"small_c\"") != NULL);
        free(txt);
        npu_graph_free(g);
    }
    /* small-channel image over the CBUF: row tiles of packed pixels */
    p = (struct tu_conv){.C = 3,
                         .H = 224,
                         .W = 224,
                         .K = 32,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "relu",
                         .range = 8,
                         .seed = 58};
    check_conv(&p, &o, 0, "conv 3x3 3x224x224->32 small-channel row tiles");
    /* large map: row tiles (input over the CBUF) */
    p = (struct tu_conv){.C = 32,
                         .H = 160,
                         .W = 160,
                         .K = 32,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "relu",
                         .range = 8,
                         .seed = 60};
    check_conv(&p, &o, 0, "conv 3x3 32x160x160 (row tiles)");
    p = (struct tu_conv){.C = 16,
                         .H = 150,
                         .W = 150,
                         .K = 16,
                         .kh = 5,
                         .kw = 5,
                         .sy = 2,
                         .sx = 2,
                         .pt = 2,
                         .pl = 2,
                         .pb = 2,
                         .pr = 2,
                         .range = 8,
                         .seed = 61};
    check_conv(&p, &o, 0, "conv 5x5/2 16x150x150 (row tiles, stride)");
    /* depthwise on a large map */
    p = (struct tu_conv){.C = 64,
                         .H = 112,
                         .W = 112,
                         .K = 64,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .group = 64,
                         .range = 8,
                         .seed = 62};
    check_conv(&p, &o, 0, "depthwise 3x3 64x112x112 (tiles)");
    /* many kernels (weights over the CBUF) */
    p = (struct tu_conv){.C = 64,
                         .H = 14,
                         .W = 14,
                         .K = 1000,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .range = 4,
                         .seed = 63};
    check_conv(&p, &o, 0, "conv 3x3 64x14x14->1000 (streamed weights)");
    p = (struct tu_conv){.C = 64,
                         .H = 60,
                         .W = 60,
                         .K = 512,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .range = 4,
                         .seed = 64};
    check_conv(&p, &o, 0, "conv 3x3 64x60x60->512 (rows x kernels)");
    /* many channels: channel-block accumulation */
    p = (struct tu_conv){.C = 1024,
                         .H = 12,
                         .W = 12,
                         .K = 64,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "clip",
                         .act_alpha = 0,
                         .act_beta = 4,
                         .range = 2,
                         .seed = 65};
    check_conv(&p, &o, 0, "conv 3x3 1024x12x12->64 (channel blocks) relu6");
    p.act_alpha = -1; /* clip with a non-zero lower bound after accumulation: split off */
    check_conv(&p, &o, 0, "conv 3x3 1024x12x12->64 clip(-1,4)");
    /* leaky relu: split off the conv (BS PReLU is unverified, facts §5.3) into its own DPU
     * pass (BS MUL + EW MAX, docs/npu-dpu-ops.md): no CPU step */
    p = (struct tu_conv){.C = 8,
                         .H = 8,
                         .W = 8,
                         .K = 8,
                         .kh = 3,
                         .kw = 3,
                         .act = "leaky_relu",
                         .act_alpha = 0.125f,
                         .range = 16,
                         .seed = 66};
    {
        struct npu_graph *g1 = tu_conv_graph(&p), *g2 = tu_conv_graph(&p);
        float x[8 * 8 * 8];
        uint32_t s = 3;
        tu_fill(x, 512, &s, 16);
        struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
        in.data = x;
        struct tu_npu_result res;
        CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
        CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, &o, &in, &got, &res));
        CHECK(tu_cmp(&got, &want, 1e-7, ldexp(1, -11), NULL) <= 1);
        CHECK_EQ_INT(0, res.n_cpu);
        free(want.data);
        free(got.data);
    }
    /* ConvTranspose: stride 1 as the conv with flipped, swapped kernels (NPU);
     * stride 2 stays on the CPU */
    check_convt(16, 10, 12, 24, 3, 0, 0, 1, true, 1, "ConvTranspose 3x3 s1 16->24 bias");
    check_convt(8, 9, 9, 16, 5, 2, 0, 1, false, 1, "ConvTranspose 5x5 s1 pad 2");
    check_convt(8, 9, 9, 16, 3, 1, 0, 2, false, 0, "ConvTranspose 3x3 s2 (CPU)");
    /* two convs in one job: the fp16 intermediate stays in NPU memory */
    {
        struct npu_graph *g1 = chain_graph(true, 5), *g2 = chain_graph(false, 5);
        size_t n = 24 * 20 * 20;
        float *x = malloc(n * 4);
        uint32_t s = 8;
        tu_fill(x, n, &s, 16);
        struct npu_tensor in = g1->inputs[0]->t, want = {0}, got = {0};
        in.data = x;
        struct tu_npu_result res;
        CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
        CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, &o, &in, &got, &res));
        /* same fp16 intermediate on both sides; the second conv sums fp16 x
         * fp16 products (exact) in fp32 in different orders: |err| <= K 2^-24
         * sum|w x| <= 40 x 2^-24 x 40 x 4 (|x| < 4 after the first layer) */
        double e = tu_cmp(&got, &want, 4e-4, 1e-6, NULL);
        CHECK(e <= 1);
        CHECK_EQ_INT(2, res.n_rk);
        CHECK_EQ_INT(1, res.submits);
        CHECK_EQ_INT(0, res.n_cpu);
        if (verbose)
            printf("%-52s 2 convs, 1 submit, %u tasks, error %.2f of tolerance\n",
                   "conv 3x3 + relu -> conv 1x1 (fp16 intermediate)", res.tasks, e);
        free(x);
        free(want.data);
        free(got.data);
    }
    /* dilation: a dense kernel with zero taps between the source's (the ATROUS encoding
     * is unverified, facts §6.14, and strict mode refuses it) */
    p = (struct tu_conv){.C = 8,
                         .H = 12,
                         .W = 12,
                         .K = 8,
                         .kh = 3,
                         .kw = 3,
                         .dy = 2,
                         .dx = 2,
                         .pt = 2,
                         .pl = 2,
                         .pb = 2,
                         .pr = 2,
                         .bias = true,
                         .range = 16,
                         .seed = 67};
    check_conv(&p, &o, 0, "conv 3x3 dilation 2 pad 2 (as 5x5 with zero taps)");
    p = (struct tu_conv){.C = 16,
                         .H = 14,
                         .W = 15,
                         .K = 16,
                         .kh = 3,
                         .kw = 2,
                         .dy = 3,
                         .dx = 4,
                         .sy = 2,
                         .group = 16,
                         .range = 16,
                         .seed = 68};
    check_conv(&p, &o, 0, "depthwise 3x2 dilation 3x4 stride 2x1");
    {
        /* past WEIGHT_SIZE2's 32 taps once dilated: CPU */
        p = (struct tu_conv){.C = 8,
                             .H = 40,
                             .W = 40,
                             .K = 8,
                             .kh = 3,
                             .kw = 3,
                             .dy = 16,
                             .dx = 16,
                             .range = 16,
                             .seed = 69};
        struct npu_graph *g = tu_conv_graph(&p);
        char why[200];
        CHECK(g && !npu_backend_supports(g, g->tail, &o, why, sizeof(why)));
        CHECK(g && strstr(why, "dilated kernel") != NULL);
        if (verbose && g)
            printf("dilated 3x3 / 16 stays on the CPU: %s\n", why);
        npu_graph_free(g);
    }
    /* batches: the images are channel blocks of one map (N * C, H, W), the conv one of
     * N * group groups (per-group tasks when aligned, else block-diagonal), the weights
     * shared */
    p = (struct tu_conv){.N = 2,
                         .C = 16,
                         .H = 13,
                         .W = 11,
                         .K = 32,
                         .kh = 3,
                         .kw = 3,
                         .sy = 2,
                         .sx = 2,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "relu",
                         .range = 16,
                         .seed = 70};
    check_conv(&p, &o, 0, "batch 2 conv 3x3/2 pad 1 16->32 bias relu");
    p = (struct tu_conv){.N = 3,
                         .C = 12,
                         .H = 9,
                         .W = 10,
                         .K = 20,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 0,
                         .pb = 2,
                         .pr = 1,
                         .bias = true,
                         .range = 16,
                         .seed = 71};
    check_conv(&p, &o, 0, "batch 3 conv 3x3 pads 1,0,2,1 12->20 (block diagonal)");
    p = (struct tu_conv){.N = 2,
                         .C = 48,
                         .H = 19,
                         .W = 21,
                         .K = 48,
                         .kh = 3,
                         .kw = 3,
                         .sy = 2,
                         .sx = 2,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .group = 48,
                         .bias = true,
                         .act = "relu",
                         .range = 16,
                         .seed = 72};
    check_conv(&p, &o, 0, "batch 2 depthwise 3x3/2 48 channels bias relu");
    p = (struct tu_conv){.N = 3,
                         .C = 20,
                         .H = 9,
                         .W = 9,
                         .K = 20,
                         .kh = 5,
                         .kw = 5,
                         .pt = 2,
                         .pl = 2,
                         .pb = 2,
                         .pr = 2,
                         .group = 20,
                         .range = 16,
                         .seed = 73};
    check_conv(&p, &o, 0, "batch 3 depthwise 5x5 20 channels");
    p = (struct tu_conv){.N = 2,
                         .C = 32,
                         .H = 12,
                         .W = 12,
                         .K = 64,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .group = 2,
                         .bias = true,
                         .range = 16,
                         .seed = 74};
    check_conv(&p, &o, 0, "batch 2 grouped 2 groups 16->32 (per-group tasks)");
    p = (struct tu_conv){.N = 3,
                         .C = 12,
                         .H = 10,
                         .W = 10,
                         .K = 18,
                         .kh = 3,
                         .kw = 3,
                         .group = 3,
                         .range = 16,
                         .seed = 75};
    check_conv(&p, &o, 0, "batch 3 grouped 3 groups 4->6 (block diagonal)");
    p = (struct tu_conv){.N = 3,
                         .C = 3,
                         .H = 20,
                         .W = 18,
                         .K = 16,
                         .kh = 3,
                         .kw = 3,
                         .sy = 2,
                         .sx = 2,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .range = 16,
                         .seed = 76};
    check_conv(&p, &o, 0, "batch 3 conv 3x3/2 3 input channels");
    p = (struct tu_conv){.N = 2,
                         .C = 64,
                         .H = 40,
                         .W = 40,
                         .K = 64,
                         .kh = 3,
                         .kw = 3,
                         .pt = 1,
                         .pl = 1,
                         .pb = 1,
                         .pr = 1,
                         .bias = true,
                         .range = 8,
                         .seed = 77};
    check_conv(&p, &o, 0, "batch 2 conv 3x3 64x40x40 (row tiles)");
    /* Conv1d: a 2-D conv with H = 1 (kernel 1 x K, pads [b, e] -> [0, b, 0, e]) */
    p = (struct tu_conv){.one_d = true,
                         .C = 16,
                         .W = 24,
                         .K = 32,
                         .kw = 3,
                         .pl = 1,
                         .pr = 1,
                         .bias = true,
                         .range = 16,
                         .seed = 80};
    check_conv(&p, &o, 0, "conv1d k3 pad 1 16x24->32 bias");
    p = (struct tu_conv){.one_d = true,
                         .N = 2,
                         .C = 32,
                         .W = 24,
                         .K = 32,
                         .kw = 3,
                         .sx = 2,
                         .pl = 1,
                         .pr = 1,
                         .bias = true,
                         .act = "relu",
                         .range = 16,
                         .seed = 81};
    check_conv(&p, &o, 0, "conv1d batch 2 k3/2 pad 1 32x24->32 bias relu");
    p = (struct tu_conv){.one_d = true,
                         .N = 3,
                         .C = 10,
                         .W = 50,
                         .K = 12,
                         .kw = 5,
                         .sx = 3,
                         .pl = 2,
                         .pr = 0,
                         .range = 16,
                         .seed = 82};
    check_conv(&p, &o, 0, "conv1d batch 3 k5/3 pads 2,0 10x50->12");
    p = (struct tu_conv){.one_d = true,
                         .N = 2,
                         .C = 8,
                         .W = 40,
                         .K = 16,
                         .kw = 3,
                         .dx = 4,
                         .pl = 4,
                         .pr = 4,
                         .bias = true,
                         .range = 16,
                         .seed = 83};
    check_conv(&p, &o, 0, "conv1d batch 2 k3 dilation 4 pad 4");
    p = (struct tu_conv){.one_d = true,
                         .N = 2,
                         .C = 24,
                         .W = 30,
                         .K = 24,
                         .kw = 7,
                         .pl = 3,
                         .pr = 3,
                         .group = 24,
                         .bias = true,
                         .range = 16,
                         .seed = 84};
    check_conv(&p, &o, 0, "conv1d batch 2 depthwise k7 pad 3");
    p = (struct tu_conv){.one_d = true,
                         .N = 2,
                         .C = 32,
                         .W = 20,
                         .K = 64,
                         .kw = 3,
                         .dx = 2,
                         .sx = 2,
                         .pl = 2,
                         .pr = 1,
                         .group = 2,
                         .bias = true,
                         .range = 16,
                         .seed = 85};
    check_conv(&p, &o, 0, "conv1d batch 2 grouped 2 k3 dilation 2 stride 2");
    p = (struct tu_conv){.one_d = true,
                         .N = 3,
                         .C = 6,
                         .W = 17,
                         .K = 9,
                         .kw = 3,
                         .pl = 1,
                         .pr = 1,
                         .group = 3,
                         .range = 16,
                         .seed = 86};
    check_conv(&p, &o, 0, "conv1d batch 3 grouped 3 (block diagonal)");
    p = (struct tu_conv){.one_d = true,
                         .C = 3,
                         .W = 300,
                         .K = 16,
                         .kw = 9,
                         .sx = 2,
                         .pl = 4,
                         .pr = 4,
                         .bias = true,
                         .act = "relu",
                         .range = 8,
                         .seed = 87};
    check_conv(&p, &o, 0, "conv1d 3 channels k9/2 length 300");
    {
        /* over CNA DATAIN_WIDTH (2047): CPU; batch of a ConvTranspose: CPU */
        p = (struct tu_conv){
            .one_d = true, .C = 8, .W = 3000, .K = 8, .kw = 3, .range = 16, .seed = 88};
        struct npu_graph *g = tu_conv_graph(&p);
        char why[200];
        CHECK(g && !npu_backend_supports(g, g->tail, &o, why, sizeof(why)));
        CHECK(g && strstr(why, "width") != NULL);
        npu_graph_free(g);
    }
    return npu_test_done("npu-conv");
}
