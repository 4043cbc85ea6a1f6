/* SPDX-License-Identifier: MIT */
/*
 * test-npu-fuse.c: the EW-stage fusions of rk.Conv (docs/npu-backend.md §3) through the
 * whole back end on the simulator in strict mode, against the CPU executor:
 *   - a residual Add after a MatMul, computed by the product's DPU pass (EW add of the
 *     other operand through ERDMA): single tasks, channel blocks (fp32 and fp16 partial
 *     sums), with bias and ReLU; where the fusion is not valid (an activation after
 *     channel blocks) the Add must stay a pass of its own;
 *   - LUT activations (GELU, sigmoid, tanh) in the EW stage of the product, also after
 *     channel-block accumulation, against the CPU and against the unfused lowering.
 *
 * Tolerances. Residual cases use data that are multiples of 1/16 (exact in fp16), so
 * both products are exact in fp32; the residual operand is the NPU's fp16 copy of the
 * first product (at most half an fp16 ulp off: 2^-11 |r|) and the sum is stored as fp16
 * (2^-11 relative): abs 2^-11 max|r|, rel 2^-11 (fp16 partial sums add 2^-11 relative
 * per block boundary). LUT cases: the table errors of docs/npu-dpu-ops.md §3.3 (one-table
 * GELU 1.2e-3 abs, sigmoid / tanh 2.7e-4) plus the fp16 store.
 */
#include "npu-test-util.h"
#include "npu/npu-timing.h"

static int verbose;

struct rcase {
    int M, K, N;
    bool bias, swap;
    const char *act;
    int range;
    uint32_t seed;
    bool relu_after; /* the Add's result goes through a Relu (stays fp16 on the NPU) */
};

/* x[M,K] -> MatMul(Wa) = r; MatMul(x, Wb[, c]) {act} = y; Add(r, y) (or Add(y, r)). */
static struct npu_graph *
res_graph(const struct rcase *p, float *ra_max)
{
    struct npu_graph *g = npu_graph_new("res");
    int64_t xd[2] = {p->M, p->K};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 2, xd);
    uint32_t s = p->seed * 31 + 5;
    size_t nw = (size_t)p->K * p->N;
    float *wa = malloc(nw * 4), *wb = malloc(nw * 4), *c = malloc((size_t)p->N * 4);
    tu_fill(wa, nw, &s, p->range);
    tu_fill(wb, nw, &s, p->range);
    tu_fill(c, (size_t)p->N, &s, p->range);
    int64_t wd[2] = {p->K, p->N};
    struct npu_tensor ta = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {wd[0], wd[1]}, .data = wa};
    struct npu_tensor tb = ta;
    tb.data = wb;
    struct npu_value *va = npu_graph_add_const(g, "wa", &ta);
    struct npu_value *vb = npu_graph_add_const(g, "wb", &tb);
    struct npu_value *vc = p->bias ? npu_graph_const_f32(g, "c", c, p->N, false) : NULL;
    struct npu_value *in1[2] = {x, va};
    struct npu_node *m1 = npu_node_new(g, NPU_OP_MATMUL, "mm_a", in1, 2, 1, (const char *[]){"r"});
    npu_graph_append(g, m1);
    struct npu_value *in2[3] = {x, vb, vc};
    struct npu_node *m2 =
        npu_node_new(g, NPU_OP_MATMUL, "mm_b", in2, p->bias ? 3 : 2, 1, (const char *[]){"yb"});
    if (p->act)
        npu_node_set_string(g, m2, "npu_act", p->act);
    npu_graph_append(g, m2);
    struct npu_value *in3[2] = {p->swap ? m2->out[0] : m1->out[0],
                                p->swap ? m1->out[0] : m2->out[0]};
    struct npu_node *ad = npu_node_new(g, NPU_OP_ADD, "add", in3, 2, 1, (const char *[]){"y"});
    npu_graph_append(g, ad);
    if (p->relu_after) {
        struct npu_node *r =
            npu_node_new(g, NPU_OP_RELU, "relu", ad->out, 1, 1, (const char *[]){"z"});
        npu_graph_append(g, r);
        npu_graph_add_output(g, r->out[0]);
    } else {
        npu_graph_add_output(g, ad->out[0]);
    }
    if (npu_graph_infer(g)) {
        npu_graph_free(g);
        g = NULL;
    }
    free(wa);
    free(wb);
    free(c);
    (void)ra_max;
    return g;
}

/* max |x Wa| (the residual's magnitude, for its fp16 rounding) */
static float
residual_max(const struct rcase *p, const float *x)
{
    uint32_t s = p->seed * 31 + 5;
    size_t nw = (size_t)p->K * p->N;
    float *wa = malloc(nw * 4);
    tu_fill(wa, nw, &s, p->range);
    double m = 0;
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            double a = 0;
            for (int k = 0; k < p->K; k++)
                a += (double)x[(size_t)i * p->K + k] * wa[(size_t)k * p->N + j];
            m = fmax(m, fabs(a));
        }
    free(wa);
    return (float)m;
}

/* Runs a case; returns the number of rk.Dpu passes left (the Add when not fused), -1 on
 * failure. */
static int
check_res(const struct rcase *p, const struct npu_backend_options *o, bool expect_fused,
          const char *label)
{
    struct npu_graph *g1 = res_graph(p, NULL), *g2 = res_graph(p, NULL);
    CHECK(g1 && g2);
    if (!g1 || !g2)
        return -1;
    size_t nx = (size_t)p->M * p->K;
    float *x = malloc(nx * 4);
    uint32_t s = p->seed * 7 + 3;
    tu_fill(x, nx, &s, p->range);
    float rmax = residual_max(p, x);
    struct npu_tensor in = g1->inputs[0]->t;
    in.data = x;
    struct npu_tensor want = {0}, got = {0};
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, &in, 1, &want));
    enum npu_status st = tu_run_npu(g2, o, &in, &got, &res);
    CHECK_EQ_INT(NPU_OK, st);
    if (!st) {
        int64_t worst = 0;
        double rel = ldexp(1, -11) * (o && o->fp16_partials ? 1 + p->K / 32 : 1);
        double e = tu_cmp(&got, &want, ldexp(1, -11) * rmax + 1e-7, rel, &worst);
        if (e > 1)
            fprintf(stderr, "%s: element %lld: npu %.9g cpu %.9g (err %.3g of tolerance)\n", label,
                    (long long)worst, ((float *)got.data)[worst], ((float *)want.data)[worst], e);
        CHECK(e <= 1);
        CHECK_EQ_INT(1, res.submits);
        CHECK_EQ_INT(0, res.n_cpu);
        CHECK_EQ_INT(2, res.n_rk);
        /* fused: no DPU pass left for the Add */
        CHECK_EQ_INT(expect_fused ? 0 : 1, res.n_dpu);
        if (verbose || e > 1)
            printf("%-52s tasks %3u  modeled %8.1f us  (%s)  err %.2f  %s\n", label, res.tasks,
                   res.modeled_s * 1e6, npu_timing_model()->label, e,
                   res.n_dpu ? "Add apart" : "Add fused");
    }
    free(x);
    free(want.data);
    free(got.data);
    return st ? -1 : res.n_dpu;
}

/* The residual as a view: x -> MatMul (r [M, N]) -> Reshape [1, M, N] (a DPU view
 * without tasks) -> Add with MatMul(x3 [1, M, K]) + bias: the fused Add must read the
 * view's source bytes (the view has none of its own). */
static struct npu_graph *
alias_res_graph(void)
{
    struct npu_graph *g = npu_graph_new("alias_res");
    const int M = 12, K = 32, N = 24;
    int64_t xd[2] = {M, K}, x3d[3] = {1, M, K}, rs[3] = {1, M, N};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 2, xd);
    struct npu_value *x3 = npu_graph_add_input(g, "x3", NPU_DTYPE_FP32, 3, x3d);
    float w[32 * 24], b[24];
    uint32_t s = 41;
    tu_fill(w, (size_t)K * N, &s, 16);
    tu_fill(b, (size_t)N, &s, 16);
    struct npu_tensor wt = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {K, N}, .data = w};
    struct npu_value *in1[2] = {x, npu_graph_add_const(g, "wa", &wt)};
    struct npu_node *a = npu_node_new(g, NPU_OP_MATMUL, "a", in1, 2, 1, (const char *[]){"r"});
    npu_graph_append(g, a);
    struct npu_value *rin[2] = {a->out[0], npu_graph_const_i64(g, "shape", rs, 3, false)};
    struct npu_node *rv =
        npu_node_new(g, NPU_OP_RESHAPE, "view", rin, 2, 1, (const char *[]){"rv"});
    npu_graph_append(g, rv);
    tu_fill(w, (size_t)K * N, &s, 16);
    struct npu_value *in2[3] = {x3, npu_graph_add_const(g, "wb", &wt),
                                npu_graph_const_f32(g, "c", b, N, false)};
    struct npu_node *m = npu_node_new(g, NPU_OP_MATMUL, "b", in2, 3, 1, (const char *[]){"yb"});
    npu_graph_append(g, m);
    struct npu_value *in3[2] = {rv->out[0], m->out[0]};
    struct npu_node *ad = npu_node_new(g, NPU_OP_ADD, "add", in3, 2, 1, (const char *[]){"y"});
    npu_graph_append(g, ad);
    struct npu_node *re =
        npu_node_new(g, NPU_OP_RELU, "relu", ad->out, 1, 1, (const char *[]){"z"});
    npu_graph_append(g, re);
    npu_graph_add_output(g, re->out[0]);
    if (npu_graph_infer(g)) {
        npu_graph_free(g);
        return NULL;
    }
    return g;
}

static void
check_alias_res(void)
{
    struct npu_graph *g1 = alias_res_graph(), *g2 = alias_res_graph();
    CHECK(g1 && g2);
    if (!g1 || !g2)
        return;
    struct npu_tensor in[2] = {g1->inputs[0]->t, g1->inputs[1]->t};
    float x[12 * 32], x3[12 * 32];
    uint32_t s = 43;
    tu_fill(x, NPU_ARRAY_SIZE(x), &s, 16);
    tu_fill(x3, NPU_ARRAY_SIZE(x3), &s, 16);
    in[0].data = x;
    in[1].data = x3;
    struct npu_tensor want = {0}, got = {0};
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g1, in, 2, &want));
    CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, NULL, in, &got, &res));
    if (got.data && want.data) {
        /* |x|, |w| <= 1 (range 16): |r| <= 32, its fp16 copy within 2^-11 |r|; the result
         * stored as fp16 (relative 2^-11), as in check_res */
        double e = tu_cmp(&got, &want, ldexp(1, -11) * 32, ldexp(1, -11), NULL);
        CHECK(e <= 1);
        CHECK_EQ_INT(0, res.n_cpu);
        printf("%-52s tasks %3u  err %.2f  (the Add reads the view's source)\n",
               "residual through a view (Reshape alias)", res.tasks, e);
    }
    free(want.data);
    free(got.data);
}

/* MatMul with a LUT activation: fused (default) vs split (no_act_fusion) vs the CPU. */
static void
check_lut(int M, int K, int N, const char *act, double tol, const struct npu_backend_options *base,
          const char *label)
{
    struct tu_mm p = {.rank = 2, .M = M, .K = K, .N = N, .bias = true, .act = act, .seed = 21};
    struct npu_backend_options of = base ? *base : (struct npu_backend_options){0};
    struct npu_backend_options os = of;
    os.no_act_fusion = true;
    size_t na = (size_t)M * K;
    float *a = malloc(na * 4);
    uint32_t s = 77;
    tu_fill_real(a, na, &s);
    /* keep the pre-activation values O(1): scale by 1/sqrt(K) */
    for (size_t i = 0; i < na; i++)
        a[i] *= 3.0f / sqrtf((float)K);
    struct npu_graph *g0 = tu_matmul_graph(&p), *g1 = tu_matmul_graph(&p),
                     *g2 = tu_matmul_graph(&p);
    struct npu_tensor in = g0->inputs[0]->t;
    in.data = a;
    struct npu_tensor want = {0}, fused = {0}, split = {0};
    struct tu_npu_result rf, rs;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu(g0, &in, 1, &want));
    CHECK_EQ_INT(NPU_OK, tu_run_npu(g1, &of, &in, &fused, &rf));
    CHECK_EQ_INT(NPU_OK, tu_run_npu(g2, &os, &in, &split, &rs));
    if (fused.data && split.data && want.data) {
        /* the products carry fp16 rounding of the real-valued operands: 2e-3 sqrt(K) x
         * the scale (npu-matmul's statistical bound), plus the table */
        double pa = 2e-3 * 3.0 + tol;
        double ef = tu_cmp(&fused, &want, pa, 4e-3, NULL);
        double es = tu_cmp(&split, &want, pa, 4e-3, NULL);
        CHECK(ef <= 1);
        CHECK(es <= 1);
        CHECK_EQ_INT(0, rf.n_dpu); /* the activation runs inside the product */
        CHECK_EQ_INT(1, rs.n_dpu);
        CHECK(rf.modeled_s < rs.modeled_s);
        if (verbose || ef > 1 || es > 1)
            printf("%-52s fused %3u tasks %8.1f us err %.2f | split %3u tasks %8.1f us err "
                   "%.2f\n",
                   label, rf.tasks, rf.modeled_s * 1e6, ef, rs.tasks, rs.modeled_s * 1e6, es);
    }
    free(a);
    free(want.data);
    free(fused.data);
    free(split.data);
}

/* cost() before lowering = what the lowering emits: the product priced with its residual /
 * LUT, the fused Add at 0. */
static void
check_cost(struct npu_graph *g, bool fused, const char *label)
{
    CHECK(g != NULL);
    if (!g)
        return;
    npu_graph_update_uses(g);
    double mm[4], add = -1;
    const char *names[4];
    int k = 0;
    npu_graph_for_each_node (g, n) {
        if (n->op == NPU_OP_MATMUL && k < 4) {
            names[k] = n->name;
            mm[k++] = npu_backend_cost(g, n, NULL);
        } else if (n->op == NPU_OP_ADD) {
            add = npu_backend_cost(g, n, NULL);
        }
    }
    CHECK_EQ_INT(NPU_OK, npu_lower_graph(g, NULL));
    int matched = 0, adds = 0;
    npu_graph_for_each_node (g, n) {
        adds += n->op == NPU_OP_RK_DPU && strstr(n->name, "add");
        for (int i = 0; i < k; i++)
            if (n->op == NPU_OP_RK_CONV && !strcmp(n->name, names[i])) {
                double got = npu_node_float(n, "modeled_us", 0) * 1e-6;
                CHECK(fabs(got - mm[i]) < 1e-6 * got + 1e-9);
                matched++;
            }
    }
    CHECK_EQ_INT(k, matched);
    /* a fused Add is priced at 0 and has no pass; one apart keeps its price and its pass */
    CHECK(fused ? add == 0 && adds == 0 : add > 0 && adds == 1);
    printf("%-52s cost() = lowered for %d products, Add %s\n", label, matched,
           fused ? "fused (cost 0)" : "apart");
    npu_graph_free(g);
}

int
main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    struct npu_backend_options o = {0};

    /* residual: one task, bias, both operand orders, ReLU before the add */
    check_res(&(struct rcase){.M = 20, .K = 48, .N = 40, .bias = true, .range = 16, .seed = 1}, &o,
              true, "residual 20x48x40 + bias");
    check_res(&(struct rcase){.M = 7, .K = 32, .N = 24, .swap = true, .range = 16, .seed = 2}, &o,
              true, "residual 7x32x24, Add(y, r)");
    check_res(
        &(struct rcase){
            .M = 33, .K = 64, .N = 48, .bias = true, .act = "relu", .range = 16, .seed = 3},
        &o, true, "residual after bias + relu");
    /* channel blocks: the residual joins block 0 (fp32 and fp16 partial sums) */
    check_res(&(struct rcase){.M = 196, .K = 3072, .N = 64, .bias = true, .range = 2, .seed = 4},
              &o, true, "residual 196x3072x64 (channel blocks)");
    struct npu_backend_options o16 = {.fp16_partials = 1};
    check_res(&(struct rcase){.M = 50, .K = 256, .N = 32, .bias = true, .range = 4, .seed = 5},
              &(struct npu_backend_options){.force_channels = 64, .fp16_partials = 1}, true,
              "residual 50x256x32, 4 blocks, fp16 partials");
    (void)o16;
    /* an activation after channel blocks would run after the residual: not fused */
    check_res(
        &(struct rcase){
            .M = 50, .K = 256, .N = 32, .bias = true, .act = "relu", .range = 4, .seed = 6},
        &(struct npu_backend_options){.force_channels = 64}, false,
        "residual after relu + channel blocks (apart)");
    /* fusion switched off */
    check_res(&(struct rcase){.M = 20, .K = 48, .N = 40, .bias = true, .range = 16, .seed = 7},
              &(struct npu_backend_options){.no_ew_fusion = true}, false,
              "residual 20x48x40, no_ew_fusion (apart)");

    check_alias_res();

    /* LUT activations in the product's EW stage */
    check_lut(20, 64, 48, "gelu_tanh", 1.2e-3, NULL, "matmul 20x64x48 + gelu_tanh");
    check_lut(20, 64, 48, "gelu", 1.2e-3, NULL, "matmul 20x64x48 + gelu");
    check_lut(33, 40, 36, "sigmoid", 3e-4, NULL, "matmul 33x40x36 + sigmoid");
    check_lut(33, 40, 36, "tanh", 3e-4, NULL, "matmul 33x40x36 + tanh");
    check_lut(50, 256, 48, "gelu_tanh", 1.2e-3, &(struct npu_backend_options){.force_channels = 64},
              "matmul 50x256x48 + gelu_tanh, 4 blocks");
    check_lut(50, 256, 48, "sigmoid", 3e-4,
              &(struct npu_backend_options){.force_channels = 64, .fp16_partials = 1},
              "matmul 50x256x48 + sigmoid, 4 blocks fp16");
    check_lut(196, 768, 3072, "gelu_tanh", 1.2e-3, NULL, "matmul 196x768x3072 + gelu_tanh (fc1)");
    /* the partitioner's prices */
    check_cost(res_graph(&(struct rcase){.M = 196,
                                         .K = 3072,
                                         .N = 64,
                                         .bias = true,
                                         .range = 2,
                                         .seed = 4,
                                         .relu_after = true},
                         NULL),
               true, "cost: residual 196x3072x64");
    check_cost(res_graph(&(struct rcase){.M = 50,
                                         .K = 256,
                                         .N = 48,
                                         .bias = true,
                                         .act = "gelu_tanh",
                                         .range = 8,
                                         .seed = 30,
                                         .relu_after = true},
                         NULL),
               false, "cost: matmul + gelu_tanh, Add apart");
    return npu_test_done("npu-fuse");
}
