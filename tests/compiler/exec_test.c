/* SPDX-License-Identifier: MIT */
/*
 * exec_test.c: the model API on the cpu backend. Every generated model with a
 * test data set is loaded (import, passes, plan), run, and its outputs are
 * compared with the ones numpy or torch computed in gen_models.py; then
 * sessions of one model run concurrently from several threads and must all
 * give the reference answer; the API's error paths are checked.
 *
 * usage: exec_test <models dir>
 */
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-test.h"
#include "npu/npu-exec.h"
#include "npu/npu-fp16.h"
#include "npu/npu-model.h"
#include "npu/npu-onnx.h"

static const char *models_dir;

static const char *
dims_for(const char *name)
{
    return strstr(name, "torch_block") ? "batch=1,seq=6" : NULL;
}

struct dataset {
    struct npu_tensor in[8], out[8];
    int nin, nout;
};

static void
load_dataset(const char *model_dir, struct dataset *d)
{
    memset(d, 0, sizeof(*d));
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < 8; i++) {
            char p[1400];
            snprintf(p, sizeof(p), "%s/test_data_set_0/%s_%d.pb", model_dir,
                     kind ? "output" : "input", i);
            struct stat sb;
            if (stat(p, &sb))
                break;
            struct npu_tensor *t = kind ? &d->out[d->nout++] : &d->in[d->nin++];
            CHECK_EQ_INT(NPU_OK, npu_onnx_read_tensor(p, t, NULL));
        }
    }
}

static void
free_dataset(struct dataset *d)
{
    for (int i = 0; i < d->nin; i++)
        free(d->in[i].data);
    for (int i = 0; i < d->nout; i++)
        free(d->out[i].data);
}

/* max |got - want| / (1 + |want|) over all elements (fp16 scaled so that a
 * few ulps of fp16 pass the 1e-4 bound) */
static double
max_err(const struct npu_tensor *got, const struct npu_tensor *want)
{
    if (got->dtype != want->dtype || npu_tensor_numel(got) != npu_tensor_numel(want))
        return INFINITY;
    int64_t n = npu_tensor_numel(got);
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double a, b;
        switch (got->dtype) {
        case NPU_DTYPE_FP32:
            a = ((const float *)got->data)[i];
            b = ((const float *)want->data)[i];
            break;
        case NPU_DTYPE_FP16: /* compared at fp16's precision */
            a = npu_fp16_to_fp32(((const uint16_t *)got->data)[i]) / 64;
            b = npu_fp16_to_fp32(((const uint16_t *)want->data)[i]) / 64;
            break;
        case NPU_DTYPE_INT64:
            a = (double)((const int64_t *)got->data)[i];
            b = (double)((const int64_t *)want->data)[i];
            break;
        default: return INFINITY;
        }
        double d = fabs(a - b) / (1 + fabs(b));
        if (!(d <= e))
            e = d != d ? INFINITY : d;
    }
    return e;
}

static void
run_all_models(void)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/valid", models_dir);
    struct dirent **ents = NULL; /* unset when scandir fails */
    int n = scandir(p, &ents, NULL, alphasort), count = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char md[1300], mp[1320];
        snprintf(md, sizeof(md), "%s/%s", p, name);
        snprintf(mp, sizeof(mp), "%s/model.onnx", md);
        if (name[0] == '.') {
            free(ents[i]);
            continue;
        }
        struct dataset d;
        load_dataset(md, &d);
        /* variant 0: npu_model_load as users call it; 1: fused nodes through the
         * executor's epilogue and decompositions; 2: no passes at all */
        for (int variant = 0; variant < 3; variant++) {
            struct npu_model_options o = {.backend = "cpu", .dim_values = dims_for(name)};
            struct npu_model *m = NULL;
            enum npu_status st;
            if (variant == 0) {
                st = npu_model_load(mp, &o, &m);
            } else {
                struct npu_onnx_options oo = {.dim_values = o.dim_values};
                struct npu_graph *g = NULL;
                st = npu_onnx_load(mp, &oo, &g);
                if (!st)
                    st = npu_model_from_graph(g, &o,
                                              variant == 1 ? NPU_EXEC_NO_KERNEL_FUSION |
                                                                 NPU_EXEC_DECOMPOSE_FUSED
                                                           : NPU_EXEC_NO_PASSES,
                                              &m);
            }
            CHECK_EQ_INT(NPU_OK, st);
            struct npu_session *s = NULL;
            if (m)
                CHECK_EQ_INT(NPU_OK, npu_session_create(m, 0, &s));
            if (s) {
                CHECK_EQ_INT(d.nin, npu_model_num_inputs(m));
                CHECK_EQ_INT(d.nout, npu_model_num_outputs(m));
                struct npu_tensor outs[8];
                struct npu_run_stats stats;
                st = npu_session_run(s, d.in, d.nin, outs, d.nout, &stats);
                CHECK_EQ_INT(NPU_OK, st);
                for (int k = 0; !st && k < d.nout; k++) {
                    double e = max_err(&outs[k], &d.out[k]);
                    CHECK(e < 1e-4);
                    if (!(e < 1e-4))
                        fprintf(stderr,
                                "%s (variant %d): output %d differs from the reference "
                                "by %g\n",
                                name, variant, k, e);
                }
                CHECK(stats.wall_s >= stats.cpu_s && stats.cpu_s >= 0);
                printf("exec_test: %-22s v%d ok %3d nodes %8zu B activations %.3f ms\n", name,
                       variant, npu_model_graph(m)->nnodes, npu_model_activation_bytes(m),
                       stats.wall_s * 1e3);
                count += variant == 0;
            }
            npu_session_destroy(s);
            npu_model_free(m);
        }
        free_dataset(&d);
        free(ents[i]);
    }
    free(ents);
    CHECK(count > 10);
}

/* ---- concurrency ---------------------------------------------------------------- */

struct worker {
    struct npu_model *m;
    struct dataset *d;
    int runs, failures;
};

static void *
work(void *arg)
{
    struct worker *w = arg;
    struct npu_session *s = NULL;
    if (npu_session_create(w->m, 0, &s)) {
        w->failures = w->runs;
        return NULL;
    }
    for (int r = 0; r < w->runs; r++) {
        struct npu_tensor outs[8];
        if (npu_session_run(s, w->d->in, w->d->nin, outs, w->d->nout, NULL) != NPU_OK ||
            !(max_err(&outs[0], &w->d->out[0]) < 1e-4))
            w->failures++;
    }
    npu_session_destroy(s);
    return NULL;
}

static void
concurrency(void)
{
    char md[1200], mp[1300];
    snprintf(md, sizeof(md), "%s/valid/torch_block", models_dir);
    snprintf(mp, sizeof(mp), "%s/model.onnx", md);
    struct dataset d;
    load_dataset(md, &d);
    struct npu_model_options o = {
        .backend = "cpu", .dim_values = "batch=1,seq=6", .cpu_threads = 1};
    struct npu_model *m = NULL;
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o, &m));
    CHECK_STR("cpu", npu_model_backend(m));
    if (m) {
        enum { NT = 4 };
        pthread_t th[NT];
        struct worker w[NT];
        for (int i = 0; i < NT; i++) {
            w[i] = (struct worker){m, &d, 25, 0};
            pthread_create(&th[i], NULL, work, &w[i]);
        }
        for (int i = 0; i < NT; i++) {
            pthread_join(th[i], NULL);
            CHECK_EQ_INT(0, w[i].failures);
        }
    }
    npu_model_free(m);
    free_dataset(&d);
}

/* A compiled graph saved as IR text (+ sidecar) loads and runs like the model. */
static void
ir_text_model(void)
{
    char md[1200], mp[1300];
    snprintf(md, sizeof(md), "%s/valid/torch_block_tanh", models_dir);
    snprintf(mp, sizeof(mp), "%s/model.onnx", md);
    struct dataset d;
    load_dataset(md, &d);
    struct npu_model *m = NULL;
    struct npu_model_options cpu = {.backend = "cpu"}; /* npu_model_graph: cpu backend */
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &cpu, &m));
    char path[] = "/tmp/npu-exec-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    char ir[64], side[80];
    snprintf(ir, sizeof(ir), "%s.npuir", path);
    snprintf(side, sizeof(side), "%s.npuir.bin", path);
    if (m)
        CHECK_EQ_INT(NPU_OK, npu_ir_save(npu_model_graph(m), ir));
    struct npu_model *m2 = NULL;
    CHECK_EQ_INT(NPU_OK, npu_model_load(ir, &cpu, &m2));
    struct npu_session *s = NULL;
    if (m2 && !npu_session_create(m2, 0, &s)) {
        struct npu_tensor outs[8];
        CHECK_EQ_INT(NPU_OK, npu_session_run(s, d.in, d.nin, outs, d.nout, NULL));
        CHECK(max_err(&outs[0], &d.out[0]) < 1e-4);
    }
    npu_session_destroy(s);
    npu_model_free(m2);
    npu_model_free(m);
    remove(ir);
    remove(side);
    remove(path);
    free_dataset(&d);
}

static void
api_errors(void)
{
    struct npu_model *m = NULL;
    char mp[1300];
    snprintf(mp, sizeof(mp), "%s/valid/add_mul/model.onnx", models_dir);
    struct npu_model_options o = {.backend = "sim"}; /* the NPU back end exists now */
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o, &m));
    CHECK_STR("sim", npu_model_backend(m));
    npu_model_free(m);
    o.backend = "gpu";
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_model_load(mp, &o, &m));
    CHECK(m == NULL);
    CHECK(npu_model_load("/nonexistent.onnx", NULL, &m) != NPU_OK);
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, NULL, &m));
    struct npu_session *s = NULL;
    CHECK_EQ_INT(NPU_OK, npu_session_create(m, 0, &s));
    float x[6] = {0}, y[2] = {0};
    struct npu_tensor in[2] = {
        {.dtype = NPU_DTYPE_FP32, .ndim = 2, .dims = {2, 3}, .data = x},
        {.dtype = NPU_DTYPE_FP32, .ndim = 1, .dims = {2}, .data = y}, /* wrong: needs [3] */
    };
    struct npu_tensor out[1];
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_session_run(s, in, 2, out, 1, NULL));
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_session_run(s, in, 1, out, 1, NULL));
    npu_session_destroy(s);
    npu_model_free(m);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: exec_test <models dir>\n");
        return 2;
    }
    models_dir = argv[1];
    run_all_models();
    concurrency();
    ir_text_model();
    api_errors();
    return npu_test_done("exec_test");
}
