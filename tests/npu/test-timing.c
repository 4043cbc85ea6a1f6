/* SPDX-License-Identifier: MIT */
/*
 * test-timing.c: one timing model. The compile-time cost of a single op (its handler's
 * cost(), npu_backend_cost, which the partition uses) must be what the simulator reports
 * for the program the back end makes of it: for single-op graphs (MatMul of a few shapes,
 * one of them needing many tasks, Conv 3x3, Add, Relu, Sigmoid through the LUT, MaxPool,
 * Softmax, LayerNormalization) the node's cost() is taken before lowering, then the graph
 * is lowered, generated and run on the strict simulator by the program executor, and the
 * modeled time of its NPU jobs is compared with cost() plus one submit overhead per job.
 * The codegen's own estimate (npu_prog_job.modeled_s) is compared too.
 *
 * All of it under v1 and under v2 (npu_timing_model_select()). And every consumer reads
 * the one table of npu/npu-timing.h: the v1 row holds the document's constants
 * (shared/hw/timing-model-v1.md), the v2 rows theirs (docs/timing-model-v2.md), selected
 * by name; v2 moves a weight-bound and an activation-bound matmul the expected way; the simulator's
 * jobs add its submit overhead to their tasks and carry its label, the partition charges its submit
 * overhead per NPU job (and prints it), prices a node without an estimate with its task
 * overhead and DMA rate, and the multi-core planner adds its submit overhead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "npu-mc-matmul.h"
#include "npu-rk.h"
#include "npu-test-util.h"
#include "npu/npu-partition.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-timing.h"

struct figures {
    double cost;     /* the handler's cost() before lowering */
    double compiled; /* sum of the program's jobs' compile-time estimates */
    double sim;      /* sum of the simulator's modeled job times */
    double widen;    /* what widen_outputs added to the rk.Conv tasks (see check_op) */
    double tasks_s;  /* sum of the simulator's task_s over the jobs' tasks */
    int jobs;
    unsigned tasks;
};

/* The single node named `name` of g: its cost(), then lowering, codegen and a run of the
 * program on the strict simulator. g is taken. */
static bool
measure(struct npu_graph *g, const char *name, struct figures *f)
{
    memset(f, 0, sizeof(*f));
    f->cost = -1;
    CHECK(g != NULL);
    if (!g)
        return false;
    npu_graph_update_uses(g);
    for (struct npu_node *n = g->head; n; n = n->next)
        if (!strcmp(n->name, name))
            f->cost = npu_backend_cost(g, n, NULL);
    struct npu_program *p = NULL;
    enum npu_status st = npu_lower_graph(g, NULL);
    /* widen_outputs (the last back-end pass) makes an rk.Conv whose result only the host
     * reads, as fp32, write fp32 instead of fp16; cost() prices the fp16 write. The
     * difference is the rk.Conv's modeled time with its "dtype" as lowered against the
     * same with fp16 (rk_conv_modeled, the codegen's per-task accounting). */
    for (struct npu_node *n = g->head; n; n = n->next) {
        const char *dt = npu_node_string(n, "dtype", "");
        if (st || n->op != NPU_OP_RK_CONV || strcmp(dt, "f32"))
            continue;
        double wide = rk_conv_modeled(n);
        st = npu_node_set_string(g, n, "dtype", "f16");
        double narrow = rk_conv_modeled(n);
        if (!st)
            st = npu_node_set_string(g, n, "dtype", "f32");
        f->widen += wide - narrow;
    }
    if (!st)
        st = npu_codegen(g, NULL, &p);
    npu_graph_free(g);
    CHECK_EQ_INT(NPU_OK, st);
    if (st)
        return false;
    struct npu_device *dev = NULL;
    struct npu_device_options dopt = {.strict = 1};
    struct npu_prog_model *m = NULL;
    struct npu_prog_session *s = NULL;
    struct npu_tensor in[8], out[8];
    int nin = 0;
    struct npu_prog_step_stats *steps = calloc((size_t)p->n_steps + 1, sizeof(*steps));
    enum { TASK_CAP = 4096 };
    struct npu_prog_task_stats *ts = calloc(TASK_CAP, sizeof(*ts));
    st = npu_device_open_ex("sim", &dopt, &dev);
    if (!st)
        st = npu_prog_model_create(dev, p, NULL, &m);
    if (!st)
        st = npu_prog_session_create(m, 0, 1, &s);
    if (!st) {
        uint32_t seed = 11;
        for (; nin < p->n_inputs && nin < 8; nin++) {
            in[nin] = p->tensors[p->inputs[nin]].t;
            int64_t n = npu_tensor_numel(&in[nin]);
            in[nin].data = malloc((size_t)n * 4 + 4);
            tu_fill_real(in[nin].data, (size_t)n, &seed);
        }
        struct npu_prog_run_stats rs = {.steps = steps, .task_stats = ts, .task_cap = TASK_CAP};
        st = npu_prog_session_run(s, in, nin, out, p->n_outputs, &rs);
        CHECK(rs.timing_valid);
        CHECK(rs.n_task_stats < TASK_CAP);
        for (size_t k = 0; k < rs.n_task_stats; k++)
            f->tasks_s += ts[k].modeled_s;
        for (int k = 0; k < p->n_steps; k++)
            if (p->steps[k].kind == NPU_STEP_NPU_JOB) {
                f->sim += steps[k].modeled_s;
                f->tasks += steps[k].tasks;
            }
    }
    CHECK_EQ_INT(NPU_OK, st);
    for (int j = 0; j < p->n_jobs; j++)
        f->compiled += p->jobs[j].modeled_s;
    f->jobs = p->n_jobs;
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    free(steps);
    free(ts);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(m);
    npu_device_close(dev);
    npu_program_free(p);
    return st == NPU_OK;
}

/* ---- single-op graphs ------------------------------------------------------------------- */

static struct npu_value *
input(struct npu_graph *g, const char *name, int nd, const int64_t *d)
{
    return npu_graph_add_input(g, name, NPU_DTYPE_FP32, nd, d);
}

static struct npu_value *
const_real(struct npu_graph *g, const char *name, int nd, const int64_t *d, uint32_t seed)
{
    struct npu_tensor t = {.dtype = NPU_DTYPE_FP32, .ndim = nd};
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (t.dims[i] = d[i]);
    t.data = malloc((size_t)n * 4);
    tu_fill_real(t.data, (size_t)n, &seed);
    struct npu_value *v = npu_graph_add_const(g, name, &t);
    free(t.data);
    return v;
}

/* Appends op(in...) named "op" and makes its output the graph's. */
static struct npu_node *
op_node(struct npu_graph *g, enum npu_op op, struct npu_value **in, int nin)
{
    struct npu_node *n = npu_node_new(g, op, "op", in, nin, 1, (const char *[]){"y"});
    npu_graph_append(g, n);
    return n;
}

static struct npu_graph *
finish(struct npu_graph *g, struct npu_node *n)
{
    if (npu_infer_node(g, n) != NPU_OK) {
        npu_graph_free(g);
        return NULL;
    }
    npu_graph_add_output(g, n->out[0]);
    return g;
}

static struct npu_graph *
g_add(int64_t c, int64_t h, int64_t w)
{
    struct npu_graph *g = npu_graph_new("add");
    int64_t d[4] = {1, c, h, w};
    struct npu_value *in[2] = {input(g, "a", 4, d), input(g, "b", 4, d)};
    return finish(g, op_node(g, NPU_OP_ADD, in, 2));
}

static struct npu_graph *
g_unary(enum npu_op op, int64_t c, int64_t h, int64_t w)
{
    struct npu_graph *g = npu_graph_new("unary");
    int64_t d[4] = {1, c, h, w};
    struct npu_value *x = input(g, "x", 4, d);
    return finish(g, op_node(g, op, &x, 1));
}

static struct npu_graph *
g_maxpool(int64_t c, int64_t h, int64_t w, int k, int s, int pad)
{
    struct npu_graph *g = npu_graph_new("pool");
    int64_t d[4] = {1, c, h, w};
    struct npu_value *x = input(g, "x", 4, d);
    struct npu_node *n = op_node(g, NPU_OP_MAX_POOL, &x, 1);
    int64_t kk[2] = {k, k}, ss[2] = {s, s}, pads[4] = {pad, pad, pad, pad};
    npu_node_set_ints(g, n, "kernel_shape", kk, 2);
    npu_node_set_ints(g, n, "strides", ss, 2);
    npu_node_set_ints(g, n, "pads", pads, 4);
    return finish(g, n);
}

static struct npu_graph *
g_softmax(int64_t b, int64_t r, int64_t c)
{
    struct npu_graph *g = npu_graph_new("softmax");
    int64_t d[3] = {b, r, c};
    struct npu_value *x = input(g, "x", 3, d);
    struct npu_node *n = op_node(g, NPU_OP_SOFTMAX, &x, 1);
    npu_node_set_int(g, n, "axis", -1);
    return finish(g, n);
}

static struct npu_graph *
g_layernorm(int64_t b, int64_t r, int64_t c)
{
    struct npu_graph *g = npu_graph_new("layernorm");
    int64_t d[3] = {b, r, c};
    struct npu_value *in[3] = {input(g, "x", 3, d), const_real(g, "gamma", 1, &c, 3),
                               const_real(g, "beta", 1, &c, 4)};
    struct npu_node *n = op_node(g, NPU_OP_LAYER_NORMALIZATION, in, 3);
    npu_node_set_int(g, n, "axis", -1);
    npu_node_set_float(g, n, "epsilon", 1e-5f);
    return finish(g, n);
}

/* ---- cost() against the simulator ------------------------------------------------------- */

/* cost() prices the node's NPU tasks; each job the program submits adds one submit
 * overhead on the simulator (and in the codegen's estimate), which the partition charges
 * separately (per NPU job, npu-partition.c). Host-side conversions are CONVERT steps of
 * the program, not NPU time, on either side. A MatMul / Conv whose result goes to the host
 * is widened to an fp32 write after cost() was taken (f.widen): cost() underestimates it
 * by that much today, 0 when the tasks are compute-bound and up to M x N x 2 bytes at
 * dma_bytes_per_s_core when they are DMA-bound (9.8 us on 64x768x768, 52 us on
 * 512x2048x512); the check accounts for it explicitly. The codegen's estimate sums the
 * lowered nodes' "modeled_us" float attributes, so it agrees to float precision only. */
static void
check_op(const char *label, struct npu_graph *g, const char *node)
{
    struct figures f;
    if (!measure(g, node, &f))
        return;
    const double submit = npu_timing_model()->submit_overhead_s;
    double want = f.cost + f.widen + f.jobs * submit;
    double gap = (f.sim - want) / want;
    printf("  %-36s cost %10.3f us  jobs %d  tasks %4u  compiled %10.3f us  simulated %10.3f us"
           "  widen %7.3f us  gap %+.1e\n",
           label, f.cost * 1e6, f.jobs, f.tasks, f.compiled * 1e6, f.sim * 1e6, f.widen * 1e6, gap);
    CHECK(f.cost > 0);
    CHECK(f.jobs >= 1);
    CHECK(fabs(gap) <= 1e-9);
    CHECK(fabs(f.compiled - f.sim) <= 1e-6 * f.sim);
    /* the simulator's job: the table's submit overhead once per job, then its tasks' chain */
    CHECK(fabs(f.sim - f.tasks_s - f.jobs * submit) <= 1e-12);
}

static void
test_single_ops(void)
{
    printf("cost() against the simulator's modeled time:\n");
    struct tu_mm mm[] = {
        {.rank = 2, .M = 4, .K = 64, .N = 32, .seed = 1},
        {.rank = 2, .M = 64, .K = 768, .N = 768, .seed = 2},
        {.rank = 2, .M = 196, .K = 768, .N = 3072, .bias = true, .seed = 3},
        {.rank = 2, .M = 512, .K = 2048, .N = 512, .seed = 4},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(mm); i++) {
        char label[64];
        snprintf(label, sizeof(label), "MatMul %dx%dx%d%s", mm[i].M, mm[i].K, mm[i].N,
                 mm[i].bias ? " + bias" : "");
        check_op(label, tu_matmul_graph(&mm[i]), "mm");
    }
    struct tu_conv cv = {.C = 16, .H = 32, .W = 32, .K = 32, .kh = 3, .kw = 3, .seed = 5};
    cv.pt = cv.pl = cv.pb = cv.pr = 1;
    cv.bias = true;
    check_op("Conv 3x3 16->32 32x32", tu_conv_graph(&cv), "conv");
    check_op("Add [1,24,16,20]", g_add(24, 16, 20), "op");
    check_op("Relu [1,24,16,20]", g_unary(NPU_OP_RELU, 24, 16, 20), "op");
    check_op("Sigmoid [1,24,16,20] (LUT)", g_unary(NPU_OP_SIGMOID, 24, 16, 20), "op");
    check_op("MaxPool 3x3/2 [1,19,9,13]", g_maxpool(19, 9, 13, 3, 2, 0), "op");
    check_op("MaxPool 2x2/2 [1,32,16,16]", g_maxpool(32, 16, 16, 2, 2, 0), "op");
    check_op("Softmax [1,16,64]", g_softmax(1, 16, 64), "op");
    check_op("LayerNormalization [1,16,128]", g_layernorm(1, 16, 128), "op");
}

/* ---- every consumer reads the same table ------------------------------------------------ */

static void
test_table(void)
{
    const struct npu_timing_model *tm = npu_timing_model_get("v1");
    CHECK(tm != NULL);
    if (!tm)
        return;
    if (!getenv("NPU_TIMING"))
        CHECK(npu_timing_model() == npu_timing_model_get("v2")); /* the default */
    CHECK(npu_timing_model_get("v3") == NULL);
    CHECK(npu_timing_model_get("") == NULL);
    CHECK(npu_timing_model_get(NULL) == NULL);
    CHECK_STR("v1", tm->name);
    CHECK_EQ_INT(1, tm->version);
    CHECK_STR("timing model v1", tm->label);
    CHECK_STR("shared/hw/timing-model-v1.md", tm->doc);
    /* the document's "Constants", exactly */
    CHECK(tm->clock_hz == 1.0e9);
    CHECK_EQ_INT(1024, tm->mac_per_cycle_int8);
    CHECK_EQ_INT(512, tm->mac_per_cycle_fp16);
    CHECK_EQ_INT(32, tm->kernel_group_int8);
    CHECK_EQ_INT(16, tm->kernel_group_fp16);
    CHECK_EQ_INT(32, tm->channel_group);
    CHECK_EQ_INT(16, tm->flying_elems_per_cycle);
    CHECK(tm->dma_bytes_per_s_core == 10.0e9);
    CHECK(tm->dma_bytes_per_s_total == 25.0e9);
    CHECK_EQ_INT(393216, tm->cbuf_bytes);
    CHECK(tm->task_overhead_s == 2.0e-6);
    CHECK(tm->submit_overhead_s == 60.0e-6);
    CHECK_EQ_INT(0, tm->per_mechanism);

    /* v2 and its bounds (docs/timing-model-v2.md "Constants") */
    const struct npu_timing_model *v2 = npu_timing_model_get("v2");
    const struct npu_timing_model *lo = npu_timing_model_get("v2-low");
    const struct npu_timing_model *hi = npu_timing_model_get("v2-high");
    CHECK(v2 != NULL && lo != NULL && hi != NULL);
    if (!v2 || !lo || !hi)
        return;
    CHECK_STR("v2", v2->name);
    CHECK_EQ_INT(2, v2->version);
    CHECK_STR("timing model v2", v2->label);
    CHECK_STR("docs/timing-model-v2.md", v2->doc);
    CHECK_EQ_INT(1, v2->per_mechanism);
    CHECK(v2->dma_bytes_per_s_core == 12.0e9);
    CHECK(v2->dma_bytes_per_s_total == 28.0e9);
    CHECK(v2->task_overhead_s == 3.0e-6);
    CHECK(v2->submit_overhead_s == 25.0e-6);
    CHECK(v2->cna_efficiency == 0.88);
    CHECK(v2->dma_eff_weight == 0.92);
    CHECK(v2->dma_eff_line == 0.65);
    CHECK(v2->dma_task_latency_s == 0.5e-6);
    CHECK(strstr(lo->label, "timing model v2") == lo->label);
    CHECK(strstr(hi->label, "timing model v2") == hi->label);
    CHECK(lo->dma_bytes_per_s_core > v2->dma_bytes_per_s_core);
    CHECK(hi->dma_bytes_per_s_core < v2->dma_bytes_per_s_core);
    CHECK(lo->task_overhead_s < v2->task_overhead_s && v2->task_overhead_s < hi->task_overhead_s);
    CHECK(lo->cna_efficiency <= 1.0 && hi->cna_efficiency < v2->cna_efficiency);

    /* selected by name; an unknown name changes nothing */
    CHECK_EQ_INT(0, npu_timing_model_select("v2"));
    CHECK(npu_timing_model() == v2);
    CHECK_EQ_INT(-1, npu_timing_model_select("v9"));
    CHECK(npu_timing_model() == v2);
    CHECK_EQ_INT(0, npu_timing_model_select("v1"));
    CHECK(npu_timing_model() == tm);

    /* v1's formula, and v2's per mechanism, on one task */
    double c, d;
    npu_timing_task(tm, 1, 1e-6, 1000, 30000, &c, &d);
    CHECK(c == 1e-6 && d == 30000 / 10.0e9);
    npu_timing_task(v2, 1, 1e-6, 1000, 30000, &c, &d);
    CHECK(c == 1e-6 / 0.88);
    CHECK(fabs(d - (0.5e-6 + 1000 / (12e9 * 0.92) + 29000 / (12e9 * 0.65))) < 1e-18);
    npu_timing_task(v2, 0, 1e-6, 0, 0, &c, &d);
    CHECK(c == 1e-6 && d == 0);
    /* the shared DRAM's load: v1 the bytes, v2 each stream's bytes over its efficiency */
    CHECK(npu_timing_dram_load(tm, 1000, 30000) == 30000.0);
    CHECK(fabs(npu_timing_dram_load(v2, 1000, 30000) - (1000 / 0.92 + 29000 / 0.65)) < 1e-9);
}

/* v2 against v1 on DMA-bound matmuls (the simulator's task chains, without the submit):
 * a GEMV streams its weights, which v2 moves at 92 % of 12 GB/s (the vendor GEMV's
 * ~11 GB/s) against v1's 10 GB/s, so v2 is faster; a matmul with few weights and many
 * activation lines moves them at 65 % of 12 GB/s, so v2 is slower. */
static void
test_v2_direction(void)
{
    struct tu_mm gemv = {.rank = 2, .M = 1, .K = 2048, .N = 2048, .seed = 7};
    struct tu_mm lines = {.rank = 2, .M = 1024, .K = 64, .N = 32, .seed = 8};
    struct figures f1, f2, l1, l2;
    CHECK_EQ_INT(0, npu_timing_model_select("v1"));
    bool ok =
        measure(tu_matmul_graph(&gemv), "mm", &f1) && measure(tu_matmul_graph(&lines), "mm", &l1);
    CHECK_EQ_INT(0, npu_timing_model_select("v2"));
    ok = ok && measure(tu_matmul_graph(&gemv), "mm", &f2) &&
         measure(tu_matmul_graph(&lines), "mm", &l2);
    CHECK_EQ_INT(0, npu_timing_model_select("v1"));
    CHECK(ok);
    if (!ok)
        return;
    printf("DMA-bound matmuls, tasks' chain: GEMV 1x2048x2048 v1 %.3f us, v2 %.3f us; "
           "1024x64x32 v1 %.3f us, v2 %.3f us\n",
           f1.tasks_s * 1e6, f2.tasks_s * 1e6, l1.tasks_s * 1e6, l2.tasks_s * 1e6);
    CHECK(f2.tasks_s < f1.tasks_s);
    /* about 10 / 11.04 of v1's: the weights dominate */
    CHECK(f2.tasks_s > 0.85 * f1.tasks_s && f2.tasks_s < 0.95 * f1.tasks_s);
    CHECK(l2.tasks_s > l1.tasks_s);
}

static void
test_sim_label(void)
{
    struct npu_device *dev = NULL;
    struct npu_device_info info;
    CHECK_EQ_INT(NPU_OK, npu_device_open("sim", &dev));
    if (!dev)
        return;
    CHECK_EQ_INT(NPU_OK, npu_device_get_info(dev, &info));
    CHECK_STR(npu_timing_model()->label, info.timing_model);
    CHECK(strstr(info.description, npu_timing_model()->label) != NULL);
    npu_device_close(dev);
}

static double
o_no_cost(const struct npu_graph *g, const struct npu_node *n, void *user)
{
    (void)g, (void)n, (void)user;
    return -1; /* a supported node without an estimate */
}

static double
o_cpu(const struct npu_graph *g, const struct npu_node *n, void *user)
{
    (void)g, (void)n, (void)user;
    return 1.0;
}

/* The partition: Add [1, 8] on the NPU (every supported node there). Its submit overhead,
 * the fallback price of a node whose handler gives no estimate, and the --explain header. */
static void
test_partition(void)
{
    const struct npu_timing_model *tm = npu_timing_model();
    for (int fallback = 0; fallback < 2; fallback++) {
        struct npu_graph *g = npu_graph_new("tiny");
        int64_t d[2] = {1, 8};
        struct npu_value *ab[2] = {input(g, "a", 2, d), input(g, "b", 2, d)};
        g = finish(g, op_node(g, NPU_OP_ADD, ab, 2));
        CHECK(g != NULL);
        if (!g)
            return;
        struct npu_partition_oracle orc = {
            .npu_cost = fallback ? o_no_cost : NULL, .cpu_cost = o_cpu, .convert_bytes_per_s = 1e9};
        struct npu_partition_options o = {.mode = NPU_PARTITION_SUPPORTED, .oracle = &orc};
        struct npu_partition_report r;
        CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, &r));
        CHECK_EQ_INT(1, r.n);
        CHECK_EQ_INT(1, r.npu_jobs);
        CHECK_EQ_INT(NPU_DEVICE_NPU, r.nodes[0].device);
        CHECK(r.nodes[0].submit_s == tm->submit_overhead_s);
        if (fallback) {
            /* half of each fp32 value's bytes (its fp16 size) moved once, as one task */
            int64_t b = 3 * 8 * 4 / 2;
            double c, dma;
            npu_timing_task(tm, 0, 0.0, 0, (uint64_t)b, &c, &dma);
            CHECK(r.nodes[0].npu_s == tm->task_overhead_s + dma);
            if (tm->version == 1)
                CHECK(r.nodes[0].npu_s ==
                      tm->task_overhead_s + (double)b / tm->dma_bytes_per_s_core);
        } else {
            CHECK(r.nodes[0].npu_s > 0);
        }
        char *text = NULL, want[96];
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        npu_partition_report_print(&r, f);
        fclose(f);
        snprintf(want, sizeof(want), "submit %.0f us per NPU job (%s)", tm->submit_overhead_s * 1e6,
                 tm->label);
        CHECK(text && strstr(text, want) != NULL);
        free(text);
        npu_partition_report_free(&r);
        npu_graph_free(g);
    }
}

/* The multi-core planner: a job is the table's submit overhead plus its longest chain. */
static void
test_mc_planner(void)
{
    const struct npu_timing_model *tm = npu_timing_model();
    for (unsigned cores = 1; cores <= 3; cores++) {
        struct npu_mc_plan p;
        CHECK_EQ_INT(NPU_OK,
                     npu_mc_plan_matmul_cores(64, 768, 3072, NPU_REF_MATMUL_FP16_FP16, cores, &p));
        double longest = 0;
        for (unsigned c = 0; c < p.cores; c++)
            longest = fmax(longest, p.share[c].est_s);
        CHECK(p.est_s == tm->submit_overhead_s + longest);
    }
}

/* ---- a bring-up report as a timing model (npu_timing_model_load_report) ----------------- */

static void
test_report_model(void)
{
    char msg[512] = "";
    CHECK(npu_timing_model_load_report("/nonexistent/report.json", msg, sizeof(msg)) == NULL);
    CHECK(strstr(msg, "/nonexistent/report.json") != NULL);
    char path[] = "/tmp/npu-timing-report-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs("{\"format\": \"something else\"}\n", f);
    fclose(f);
    CHECK(npu_timing_model_load_report(path, msg, sizeof(msg)) == NULL);
    CHECK(strstr(msg, "not an opennpu-bringup-report") != NULL);
    /* a board's figures: 4.0 us per chain task of 400 bytes, 40 us per submit, cores at
     * 6.5 and 7.5 GB/s of lines */
    f = fopen(path, "w");
    fputs(
        "{\"format\": \"opennpu-bringup-report\", \"version\": 1,\n"
        " \"device\": {\"timing_model\": \"\"},\n"
        " \"figures\": {\"task_overhead_s\": {\"value\": 4.0e-06, \"source\": \"measured\"},\n"
        "  \"submit_overhead_s\": {\"value\": 4.0e-05, \"source\": \"measured\"},\n"
        "  \"chain_task_bytes\": 400,\n"
        "  \"dma_bytes_per_s_core\": [{\"core\": 0, \"value\": 6.5e9, \"source\": \"measured\"},\n"
        "   {\"core\": 1, \"value\": 7.5e9, \"source\": \"measured\"}]},\n"
        " \"timing_model\": {\"name\": \"v2\"}}\n",
        f);
    fclose(f);
    const struct npu_timing_model *v2 = npu_timing_model_get("v2");
    const struct npu_timing_model *r = npu_timing_model_load_report(path, msg, sizeof(msg));
    CHECK(r != NULL);
    if (r) {
        char name[300];
        snprintf(name, sizeof(name), "report:%s", path);
        CHECK_STR(name, r->name);
        CHECK(strstr(r->label, "timing model report:") == r->label);
        CHECK(npu_timing_model_get(name) == r);
        /* the mean line rate over dma_eff_line; the task cost less v2's round trip and the
         * chain task's 400 bytes at that line rate; the submit as measured; the rest v2's */
        CHECK_NEAR(7.0e9 / 0.65, r->dma_bytes_per_s_core, 1.0);
        CHECK_NEAR(4.0e-6 - 0.5e-6 - 400 / 7.0e9, r->task_overhead_s, 1e-15);
        CHECK_NEAR(40e-6, r->submit_overhead_s, 1e-15);
        CHECK(r->per_mechanism == 1 && r->cna_efficiency == v2->cna_efficiency);
        CHECK(r->dma_bytes_per_s_total == v2->dma_bytes_per_s_total);
        CHECK_EQ_INT(0, npu_timing_model_select(path));
        CHECK(npu_timing_model() == r);
        CHECK_EQ_INT(0, npu_timing_model_select("v2"));
    }
    remove(path);
}

int
main(void)
{
    test_table();
    test_report_model();
    /* every consumer and cost() against the simulator, under each model */
    static const char *const names[] = {"v1", "v2"};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(names); i++) {
        printf("timing model %s:\n", names[i]);
        CHECK_EQ_INT(0, npu_timing_model_select(names[i]));
        test_sim_label();
        test_partition();
        test_mc_planner();
        test_single_ops();
    }
    CHECK_EQ_INT(0, npu_timing_model_select("v1"));
    test_v2_direction();
    return npu_test_done("npu-timing");
}
