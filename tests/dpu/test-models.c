/* SPDX-License-Identifier: MIT */
/*
 * test-models.c: the test models (tests/models/data, torch-exported) through the front-end
 * passes, the back end with be-dpu's ops and the strict simulator, against the CPU executor
 * on the same seeded inputs: cosine similarity >= 0.999 of output 0 (the target),
 * and the job figures (submits, tasks, nodes left on the CPU, modeled NPU time, timing
 * model v1). Usage: test-models DATA_DIR [model...].
 */
#include "graph-case.h"
#include "npu/npu-onnx.h"

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

/* The CPU executor on g (taken), all outputs; out[0] kept. */
static enum npu_status
run_cpu(struct npu_graph *g, const struct npu_tensor *in, int nin, struct npu_tensor *out)
{
    int nout = g->noutputs;
    struct npu_model *m = NULL;
    enum npu_status st = npu_model_from_graph(g, NULL, NPU_EXEC_NO_PASSES, &m);
    if (st)
        return st;
    struct npu_session *s = NULL;
    if ((st = npu_session_create(m, 0, &s))) {
        npu_model_free(m);
        return st;
    }
    struct npu_tensor o[8];
    st = npu_session_run(s, in, nin, o, nout, NULL);
    if (!st) {
        *out = o[0];
        size_t nb = (size_t)npu_tensor_nbytes(&o[0]);
        out->data = malloc(nb);
        memcpy(out->data, o[0].data, nb);
    }
    npu_session_destroy(s);
    npu_model_free(m);
    return st;
}

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
    struct npu_tensor want = {0}, got = {0};
    struct tu_npu_result res;
    CHECK_EQ_INT(NPU_OK, run_cpu(g1, in, nin, &want));
    enum npu_status st = tu_run_npu(g2, NULL, in, &got, &res);
    CHECK_EQ_INT(NPU_OK, st);
    if (!st && want.data) {
        int64_t n = npu_tensor_numel(&want);
        const float *a = got.data, *b = want.data;
        double dot = 0, na = 0, nb = 0, mx = 0, mref = 0;
        for (int64_t i = 0; i < n; i++) {
            dot += (double)a[i] * b[i];
            na += (double)a[i] * a[i];
            nb += (double)b[i] * b[i];
            mx = fmax(mx, fabs((double)a[i] - b[i]));
            mref = fmax(mref, fabs((double)b[i]));
        }
        double cosine = dot / sqrt(na * nb);
        printf("  %-14s cosine %.6f  max|err| %.3g (max|ref| %.3g)  submits %u  tasks %u  "
               "CPU nodes %d  modeled NPU %.1f us (timing model v1)\n",
               name, cosine, mx, mref, res.submits, res.tasks, res.n_cpu, res.modeled_s * 1e6);
        CHECK(cosine >= 0.999);
    }
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    free(want.data);
    free(got.data);
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
    npu_graph_for_each_node(g, n)
    {
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
    printf("  %s: modeled time by node kind (timing model v1, submits excluded):\n", name);
    for (int k = 0; k < na; k++)
        printf("    %-36s %4d nodes %10.1f us  %5.1f %%\n", acc[k].key, acc[k].n, acc[k].us,
               100 * acc[k].us / total);
    printf("    %-36s %15.1f us\n", "total", total);
    npu_graph_free(g);
}

int
main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[1], "--breakdown")) {
        breakdown(argv[2], argv[3]);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test-models DATA_DIR [model...]\n");
        return 2;
    }
    static const char *const def[] = {"siglip_tiny", "gpt2_tiny", "linear_gelu", "cnn_small",
                                      "external_data"};
    printf("test models: NPU (strict simulator) vs CPU executor, output 0:\n");
    if (argc > 2)
        for (int i = 2; i < argc; i++)
            run_model(argv[1], argv[i]);
    else
        for (size_t i = 0; i < NPU_ARRAY_SIZE(def); i++)
            run_model(argv[1], def[i]);
    return npu_test_done("dpu-models");
}
