/* SPDX-License-Identifier: MIT */
/*
 * test-partition.c: partitioning by cost (compiler/artifact/npu-partition.c)
 * on small graphs where the answer is clear:
 *  - with a fixed cost oracle (costs in the node names, conversions at 1 GB/s,
 *    60 us per submit): NPU for a node much faster there; CPU for a tiny op;
 *    CPU for an op faster on the NPU alone whose conversions and submit
 *    outweigh the gain; a CPU-faster op between two NPU ops joins them (one
 *    job instead of two); an unsupported op splits the NPU work into two
 *    jobs; an NPU island too small to pay for itself goes back to the CPU
 *    (where greedy put it); caller-placed nodes keep their device; the
 *    "supported" and "cpu" modes; every estimate checked against the total
 *    computed here by hand;
 *  - with the real back end: a 196x768x768 MatMul goes to the NPU with its
 *    modeled cost (timing model v1) and a measured CPU cost, an op without an
 *    NPU handler stays on the CPU with the reason, CPU costs land in the
 *    cache file once and are reused;
 *  - the --explain table prints every node.
 */
#include <stdio.h>
#include <unistd.h>

#include "npu-partition.h"
#include "npu-test.h"
#include "npu/npu-ir.h"

/* Oracle: a node named "name:npu=N,cpu=M" (microseconds; npu=- unsupported). */
static bool
o_supports(const struct npu_graph *g, const struct npu_node *n, char *why, size_t len, void *u)
{
    const char *p = strstr(n->name, "npu=");
    bool ok = p && p[4] != '-';
    if (!ok)
        snprintf(why, len, "test oracle: unsupported");
    return ok;
}

static double
field(const struct npu_node *n, const char *key)
{
    const char *p = strstr(n->name, key);
    return p ? atof(p + strlen(key)) * 1e-6 : 1.0;
}

static double
o_npu(const struct npu_graph *g, const struct npu_node *n, void *u)
{
    return field(n, "npu=");
}

static double
o_cpu(const struct npu_graph *g, const struct npu_node *n, void *u)
{
    return field(n, "cpu=");
}

static const struct npu_partition_oracle oracle = {o_supports, o_npu, o_cpu, 1e9, NULL};

/* A chain x -> Relu(name[0]) -> Relu(name[1]) ... of [1, 1000] fp32 (4000 bytes:
 * 4 us to convert at 1 GB/s); the last value is the output. */
static struct npu_graph *
chain(const char *const *names, int n)
{
    struct npu_graph *g = npu_graph_new("chain");
    int64_t dims[2] = {1, 1000};
    struct npu_value *v = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 2, dims);
    for (int i = 0; i < n; i++) {
        struct npu_node *nd = npu_node_new(g, NPU_OP_RELU, names[i], &v, 1, 1, NULL);
        npu_graph_append(g, nd);
        CHECK_EQ_INT(NPU_OK, npu_infer_node(g, nd));
        v = nd->out[0];
    }
    npu_graph_add_output(g, v);
    return g;
}

static const char *
placement(struct npu_graph *g, char *buf)
{
    int k = 0;
    npu_graph_for_each_node(g, n)
        buf[k++] = n->device == NPU_DEVICE_NPU ? 'N' : n->device == NPU_DEVICE_CPU ? 'C' : '?';
    buf[k] = 0;
    return buf;
}

/* Partitions a chain with the oracle; checks the placement and the estimate. */
static void
expect_chain(const char *const *names, int n, const char *want, double want_us, int want_jobs,
             enum npu_partition_mode mode)
{
    struct npu_graph *g = chain(names, n);
    struct npu_partition_options o = {.mode = mode, .oracle = &oracle};
    struct npu_partition_report r;
    char got[32];
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, &r));
    placement(g, got);
    if (strcmp(got, want))
        fprintf(stderr, "chain %s...: placement %s, expected %s\n", names[0], got, want);
    CHECK_STR(want, got);
    CHECK_NEAR(want_us, r.total_s * 1e6, 1e-6);
    CHECK_EQ_INT(want_jobs, r.npu_jobs);
    CHECK_EQ_INT(n, r.n);
    double sum = 0;
    for (int i = 0; i < r.n; i++) {
        const struct npu_partition_node *pn = &r.nodes[i];
        sum += (pn->device == NPU_DEVICE_NPU ? pn->npu_s : pn->cpu_s) + pn->convert_s +
               pn->submit_s;
    }
    CHECK_NEAR(r.total_s, sum, 1e-12); /* the per-node attribution adds up */
    CHECK(r.total_s <= r.greedy_s + 1e-12);
    CHECK(r.total_s <= r.all_cpu_s + 1e-12 || mode != NPU_PARTITION_COST);
    npu_partition_report_free(&r);
    npu_graph_free(g);
}

static void
test_oracle(void)
{
    /* clearly NPU: 100 + 4 in + 4 out + 60 submit = 168 < 10000 */
    const char *a[] = {"mm:npu=100,cpu=10000"};
    expect_chain(a, 1, "N", 168, 1, NPU_PARTITION_COST);
    /* clearly CPU: tiny */
    const char *b[] = {"add:npu=2,cpu=1"};
    expect_chain(b, 1, "C", 1, 0, NPU_PARTITION_COST);
    /* NPU faster alone (10 < 40), but 10 + 8 + 60 = 78 > 40 */
    const char *c[] = {"small:npu=10,cpu=40"};
    expect_chain(c, 1, "C", 40, 0, NPU_PARTITION_COST);
    /* merge: B is faster on the CPU alone, yet on the NPU it saves a submit and
     * two conversions: 100 + 50 + 100 + 8 + 60 = 318 (vs 240 + 16 + 120 = 376 split) */
    const char *d[] = {"A:npu=100,cpu=5000", "B:npu=50,cpu=40", "C:npu=100,cpu=5000"};
    expect_chain(d, 3, "NNN", 318, 1, NPU_PARTITION_COST);
    /* an unsupported op in the middle: two jobs, 100 + 10 + 100 + 4*4 + 2*60 = 346 */
    const char *e[] = {"A:npu=100,cpu=5000", "U:npu=-,cpu=10", "C:npu=100,cpu=5000"};
    expect_chain(e, 3, "NCN", 346, 2, NPU_PARTITION_COST);
    /* an island: greedy puts Y on the NPU (30 < 50); 5 + 50 + 5 = 60 beats
     * 5 + 30 + 5 + 8 + 60 = 108 */
    const char *f[] = {"X:npu=100,cpu=5", "Y:npu=30,cpu=50", "Z:npu=100,cpu=5"};
    expect_chain(f, 3, "CCC", 60, 0, NPU_PARTITION_COST);
    /* modes */
    expect_chain(d, 3, "NNN", 318, 1, NPU_PARTITION_SUPPORTED);
    expect_chain(f, 3, "NNN", 100 + 30 + 100 + 8 + 60, 1, NPU_PARTITION_SUPPORTED);
    expect_chain(e, 3, "CCC", 5000 + 10 + 5000, 0, NPU_PARTITION_CPU);

    /* greedy vs searched, and the explain table */
    struct npu_graph *g = chain(f, 3);
    struct npu_partition_options o = {.oracle = &oracle};
    struct npu_partition_report r;
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, &r));
    CHECK_NEAR(108e-6, r.greedy_s, 1e-12);
    CHECK_NEAR(60e-6, r.total_s, 1e-12);
    char *txt = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&txt, &len);
    npu_partition_report_print(&r, mf);
    fclose(mf);
    CHECK(strstr(txt, "Y:npu=30,cpu=50") != NULL);
    CHECK(strstr(txt, "outweigh") != NULL);
    CHECK(strstr(txt, "timing model v1") != NULL);
    CHECK(strstr(txt, "estimate: 0.060 ms") != NULL);
    free(txt);
    npu_partition_report_free(&r);
    npu_graph_free(g);

    /* a node the caller placed keeps its device */
    g = chain(a, 1);
    g->head->device = NPU_DEVICE_CPU;
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, NULL));
    CHECK_EQ_INT(NPU_DEVICE_CPU, g->head->device);
    npu_graph_free(g);
}

/* ---- the real back end ------------------------------------------------------------- */

static void
test_real(void)
{
    char dir[] = "/tmp/npu-part-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct npu_graph *g = npu_graph_new("mm");
    int64_t xd[2] = {196, 768};
    struct npu_value *x = npu_graph_add_input(g, "x", NPU_DTYPE_FP32, 2, xd);
    float *w = calloc(768 * 768, sizeof(float));
    for (int i = 0; i < 768 * 768; i++)
        w[i] = (float)((int)((unsigned)i * 7919u % 2001u) - 1000) / 30000.0f;
    struct npu_tensor wt = {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {768, 768}, .data = w};
    struct npu_value *wv = npu_graph_add_const(g, "w", &wt);
    struct npu_value *in[2] = {x, wv};
    struct npu_node *mm = npu_node_new(g, NPU_OP_MATMUL, "mm", in, 2, 1, NULL);
    npu_graph_append(g, mm);
    CHECK_EQ_INT(NPU_OK, npu_infer_node(g, mm));
    struct npu_value *y = mm->out[0];
    struct npu_node *am = npu_node_new(g, NPU_OP_ARGMAX, "argmax", &y, 1, 1, NULL);
    npu_node_set_int(g, am, "axis", 1);
    npu_graph_append(g, am);
    CHECK_EQ_INT(NPU_OK, npu_infer_node(g, am));
    npu_graph_add_output(g, am->out[0]);

    struct npu_partition_options o = {.cache_dir = dir, .cpu_threads = 1};
    struct npu_partition_report r;
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, &r));
    CHECK_EQ_INT(NPU_DEVICE_NPU, mm->device);
    CHECK_EQ_INT(NPU_DEVICE_CPU, am->device);
    CHECK(r.nodes[0].supported && r.nodes[0].npu_s > 0);
    /* the arithmetic floor of timing model v1: 48 kernel groups x 24 channel
     * groups x 196 rows at 1 GHz = 0.226 ms */
    CHECK(r.nodes[0].npu_s >= 48.0 * 24 * 196 / 1e9);
    CHECK(r.nodes[0].cpu_measured && r.nodes[0].cpu_s > 0);
    CHECK(!r.nodes[1].supported && strstr(r.nodes[1].why, "ArgMax") != NULL);
    printf("MatMul 196x768x768: NPU %.1f us modeled (timing model v1), CPU %.1f us measured "
           "(1 thread); ArgMax: %s\n", r.nodes[0].npu_s * 1e6, r.nodes[0].cpu_s * 1e6,
           r.nodes[1].why);
    npu_partition_report_print(&r, stdout);
    /* the CPU costs are in the cache file, one line per measurement */
    char path[300], line[600];
    snprintf(path, sizeof(path), "%s/cpu-costs-v1.tsv", dir);
    FILE *f = fopen(path, "r");
    int lines = 0;
    while (f && fgets(line, sizeof(line), f))
        lines++;
    if (f)
        fclose(f);
    CHECK_EQ_INT(2, lines);
    /* a second partition reuses them (nothing new is measured or written) */
    double mm_cpu = r.nodes[0].cpu_s;
    npu_partition_report_free(&r);
    mm->device = am->device = NPU_DEVICE_ANY;
    CHECK_EQ_INT(NPU_OK, npu_partition(g, &o, &r));
    CHECK_NEAR(mm_cpu, r.nodes[0].cpu_s, 0);
    f = fopen(path, "r");
    lines = 0;
    while (f && fgets(line, sizeof(line), f))
        lines++;
    if (f)
        fclose(f);
    CHECK_EQ_INT(2, lines);
    npu_partition_report_free(&r);
    npu_graph_free(g);
    free(w);
    unlink(path);
    rmdir(dir);
}

int
main(void)
{
    test_oracle();
    test_real();
    return npu_test_done("test-partition");
}
