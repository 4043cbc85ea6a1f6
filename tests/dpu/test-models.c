/* SPDX-License-Identifier: MIT */
/*
 * test-models.c: the test models (tests/models/data, torch-exported) through the front-end
 * passes, the back end with the DPU lowerings and the strict simulator, against the CPU executor
 * on the same seeded inputs: cosine similarity >= 0.999 of every output (the target),
 * and the job figures (submits, tasks, nodes left on the CPU, modeled NPU time, timing
 * model v1). Usage: test-models DATA_DIR [model...].
 */
#include "graph-case.h"
#include "npu/npu-onnx.h"
#include "npu/npu-timing.h"

static void
fill_inputs(struct npu_graph *g, struct npu_tensor *in, uint32_t seed)
{
    for (int i = 0; i < g->ninputs && i < 4; i++) {
        const struct npu_tensor *t = &g->inputs[i]->t;
        int64_t n = npu_tensor_numel(t);
        memset(&in[i], 0, sizeof(in[i]));
        in[i].dtype = t->dtype;
        in[i].ndim = t->ndim;
        memcpy(in[i].dims, t->dims, sizeof(t->dims));
        uint32_t s = seed * 7919u + (uint32_t)i;
        if (t->dtype == NPU_DTYPE_INT64) {
            int64_t *v = malloc((size_t)n * 8);
            bool mask = strstr(g->inputs[i]->name, "mask") != NULL;
            for (int64_t k = 0; k < n; k++)
                v[k] = mask ? (k % 16 < 14) : (int64_t)(tu_rand(&s) % 500);
            in[i].data = v;
        } else {
            float *v = malloc((size_t)n * 4);
            for (int64_t k = 0; k < n; k++)
                v[k] = (float)((double)tu_rand(&s) / 4294967296.0 * 2.0 - 1.0);
            in[i].data = v;
        }
    }
}

#define MAX_OUT 8

/* The back end on g (taken) and the strict simulator: copies of all outputs, job figures. */
static enum npu_status
run_npu(struct npu_graph *g, const struct npu_backend_options *o, const struct npu_tensor *in,
        struct npu_tensor *out, int nout, struct tu_npu_result *res)
{
    struct npu_program *p = NULL;
    struct prun r;
    memset(res, 0, sizeof(*res));
    enum npu_status st = npu_lower_graph(g, o);
    if (!st)
        st = npu_graph_verify(g);
    if (!st)
        npu_graph_for_each_node (g, n)
            res->n_cpu += !npu_op_is_rk(n->op);
    if (!st)
        st = npu_codegen(g, o, &p);
    npu_graph_free(g);
    if (st)
        return st;
    if ((st = prun_open(&r, p)) == NPU_OK) {
        struct npu_tensor o1[32];
        if (p->n_outputs > 32 || p->n_outputs < nout)
            st = NPU_ERR_UNSUPPORTED;
        if (!st)
            st = prun_run(&r, in, o1);
        for (int k = 0; !st && k < nout; k++) {
            out[k] = o1[k];
            size_t nb = (size_t)npu_tensor_nbytes(&o1[k]);
            out[k].data = malloc(nb);
            memcpy(out[k].data, o1[k].data, nb);
        }
        if (!st) {
            res->modeled_s = r.modeled_s;
            res->submits = r.submits;
            res->tasks = r.tasks;
            res->macs = r.macs;
            res->dma_bytes = r.dma_bytes;
        }
    }
    prun_close(&r);
    npu_program_free(p);
    return st;
}

/* Back-end options for the NPU side (--fp16-partials, --no-fusions: experiments). */
static struct npu_backend_options opts;

static void
run_model(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
    struct npu_graph *g1 = NULL, *g2 = NULL;
    if (npu_onnx_load(path, NULL, &g1) || npu_onnx_load(path, NULL, &g2)) {
        fprintf(stderr, "%s: cannot load\n", path);
        npu_test_checks++, npu_test_failures++;
        npu_graph_free(g1);
        npu_graph_free(g2);
        return;
    }
    struct npu_compile_options co = {0};
    CHECK_EQ_INT(NPU_OK, npu_compile(g1, &co));
    CHECK_EQ_INT(NPU_OK, npu_compile(g2, &co));
    struct npu_tensor in[4];
    int nin = g1->ninputs < 4 ? g1->ninputs : 4;
    fill_inputs(g1, in, 11);
    char onames[MAX_OUT][64]; /* (the graphs are consumed by the runs) */
    for (int k = 0; k < g1->noutputs && k < MAX_OUT; k++)
        snprintf(onames[k], sizeof(onames[k]), "%s", g1->outputs[k]->name);
    struct npu_tensor want[MAX_OUT], got[MAX_OUT];
    memset(want, 0, sizeof(want));
    memset(got, 0, sizeof(got));
    int nout = 0;
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, tu_run_cpu_outputs(g1, in, nin, want, MAX_OUT, &nout));
    enum npu_status st = run_npu(g2, &opts, in, got, nout, &res);
    CHECK_EQ_INT(NPU_OK, st);
    /* every output: cosine >= 0.999 (the target) */
    for (int k = 0; !st && k < nout; k++) {
        if (!want[k].data || !got[k].data ||
            npu_tensor_numel(&want[k]) != npu_tensor_numel(&got[k])) {
            CHECK(!"output missing or of another size");
            continue;
        }
        int64_t n = npu_tensor_numel(&want[k]);
        const float *a = got[k].data, *b = want[k].data;
        double dot = 0, na = 0, nb = 0, mx = 0, mref = 0;
        for (int64_t i = 0; i < n; i++) {
            dot += (double)a[i] * b[i];
            na += (double)a[i] * a[i];
            nb += (double)b[i] * b[i];
            mx = fmax(mx, fabs((double)a[i] - b[i]));
            mref = fmax(mref, fabs((double)b[i]));
        }
        double cosine = na > 0 && nb > 0 ? dot / sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
        if (!k) {
            /* MAC utilisation = useful MACs / (512 fp16 MACs per cycle x 1 GHz x time) */
            double util = res.modeled_s > 0 ? (double)res.macs / (512e9 * res.modeled_s) : 0;
            printf("  %-14s submits %u  tasks %u  CPU nodes %d  modeled NPU %.1f us (timing "
                   "model v1), MAC utilisation %.1f %%\n",
                   name, res.submits, res.tasks, res.n_cpu, res.modeled_s * 1e6, 100 * util);
        }
        printf("    %-24s cosine %.6f  max|err| %.3g (max|ref| %.3g)\n", onames[k], cosine, mx,
               mref);
        CHECK(cosine >= 0.999);
    }
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    for (int k = 0; k < MAX_OUT; k++) {
        free(want[k].data);
        free(got[k].data);
    }
}

/* Modeled time of every rk.* node after lowering, summed by the last component of the
 * node name with digits removed (e.g. "LayerNormalization", "MatMul", "Add"). */
static void
breakdown(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
    struct npu_graph *g = NULL;
    struct npu_compile_options co = {0};
    if (npu_onnx_load(path, NULL, &g) || npu_compile(g, &co) || npu_lower_graph(g, NULL)) {
        npu_graph_free(g);
        return;
    }
    struct {
        char key[64];
        double us;
        int n;
    } acc[64];
    int na = 0;
    double total = 0;
    npu_graph_for_each_node (g, n) {
        if (!npu_op_is_rk(n->op))
            continue;
        double us = npu_node_float(n, "modeled_us", 0);
        char key[64];
        const char *sl = strrchr(n->name, '/');
        snprintf(key, sizeof(key), "%s %s", npu_op_name(n->op), sl ? sl + 1 : n->name);
        for (char *c = key; *c; c++)
            if (*c >= '0' && *c <= '9')
                *c = 0;
        char *u = strrchr(key, '_');
        if (u && !u[1])
            *u = 0;
        int k;
        for (k = 0; k < na && strcmp(acc[k].key, key); k++)
            ;
        if (k == na && na < 64) {
            snprintf(acc[na].key, sizeof(acc[na].key), "%s", key);
            acc[na].us = 0;
            acc[na].n = 0;
            na++;
        }
        if (k < 64) {
            acc[k].us += us;
            acc[k].n++;
        }
        total += us;
    }
    printf("  %s: modeled time by node kind (%s, submits excluded):\n", name,
           npu_timing_model()->label);
    for (int k = 0; k < na; k++)
        printf("    %-36s %4d nodes %10.1f us  %5.1f %%\n", acc[k].key, acc[k].n, acc[k].us,
               100 * acc[k].us / total);
    printf("    %-36s %15.1f us\n", "total", total);
    npu_graph_free(g);
}

/* The graph after the front-end passes and after lowering, as IR text (debugging). */
static void
dump_ir(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
    struct npu_graph *g = NULL;
    struct npu_compile_options co = {0};
    if (npu_onnx_load(path, NULL, &g) || npu_compile(g, &co)) {
        npu_graph_free(g);
        return;
    }
    printf("# %s after the front-end passes\n", name);
    npu_ir_print(g, stdout, NULL);
    if (!npu_lower_graph(g, NULL)) {
        printf("# %s lowered\n", name);
        npu_ir_print(g, stdout, NULL);
    }
    npu_graph_free(g);
}

int
main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[1], "--ir")) {
        dump_ir(argv[2], argv[3]);
        return 0;
    }
    if (argc > 3 && !strcmp(argv[1], "--breakdown")) {
        breakdown(argv[2], argv[3]);
        return 0;
    }
    while (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-') {
        if (!strcmp(argv[1], "--fp16-partials"))
            opts.fp16_partials = 1;
        else if (!strcmp(argv[1], "--no-fusions"))
            opts.no_act_fusion = opts.no_ew_fusion = opts.no_center_fold = true;
        else
            break;
        argv++;
        argc--;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test-models [--fp16-partials] [--no-fusions] DATA_DIR "
                        "[model...]\n");
        return 2;
    }
    static const char *const def[] = {"siglip_tiny", "gpt2_tiny", "linear_gelu", "cnn_small",
                                      "external_data"};
    printf("test models: NPU (strict simulator) vs CPU executor, every output:\n");
    if (argc > 2)
        for (int i = 2; i < argc; i++)
            run_model(argv[1], argv[i]);
    else
        for (size_t i = 0; i < NPU_ARRAY_SIZE(def); i++)
            run_model(argv[1], def[i]);
    return npu_test_done("dpu-models");
}
