// SPDX-License-Identifier: MIT
/*
 * quant-test-util.c: the helpers test-quant.c and test-quant16.c share
 * (quant-test-util.h): model folder paths, quantising from the calibration list,
 * the three models compared and the held-out run that finds the worst cosines.
 */
#include "quant-test-util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu/npu-npy.h"
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"

int fails;

int
qt_paths_init(struct qt_paths *p, const char *dir, const char *name)
{
    snprintf(p->model, sizeof(p->model), "%s/model.onnx", dir);
    snprintf(p->calib, sizeof(p->calib), "%s/calib.txt", dir);
    snprintf(p->held, sizeof(p->held), "%s/heldout.txt", dir);
    snprintf(p->npub, sizeof(p->npub), "/tmp/%s-%d.npub", name, (int)getpid());
    if (access(p->model, R_OK)) {
        fprintf(stderr, "SKIP: %s missing\n", p->model);
        return 77;
    }
    return 0;
}

enum npu_status
qt_quantize(struct npu_graph *g, const char *list, struct npu_quant_options *o,
            struct npu_quant_report *rep)
{
    struct npu_quant_dataset *d = NULL;
    enum npu_status st = npu_quant_dataset_load(list, g, &d);
    if (st)
        return st;
    o->data = d;
    st = npu_quantize(g, o, rep);
    npu_quant_dataset_free(d);
    return st;
}

bool
qt_build(const struct qt_paths *p, enum npu_status (*quantise)(struct npu_graph *g, void *user),
         void *user, const char *what, struct npu_build_options *bo, struct npu_built **b)
{
    *bo = (struct npu_build_options){.no_cache = true,
                                     .partition = NPU_PARTITION_SUPPORTED,
                                     .transform = quantise,
                                     .transform_user = user};
    *b = NULL;
    if (npu_build(p->model, bo, b)) {
        fprintf(stderr, "FAIL: %s build of %s\n", what, p->model);
        return false;
    }
    return true;
}

double
qt_cosine(const float *a, const float *b, int64_t n)
{
    double xy = 0, xx = 0, yy = 0;
    for (int64_t i = 0; i < n; i++) {
        xy += (double)a[i] * b[i];
        xx += (double)a[i] * a[i];
        yy += (double)b[i] * b[i];
    }
    return xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == yy ? 1 : 0);
}

float *
qt_run(struct npu_model *m, const struct npu_tensor *x, int64_t *n, double *npu_s,
       unsigned *submits)
{
    struct npu_session *s = NULL;
    struct npu_tensor out[4];
    struct npu_run_stats rs = {0};
    float *o = NULL;
    int nout = npu_model_num_outputs(m);
    if (nout < 1 || nout > 4 || npu_session_create(m, 0, &s) ||
        npu_session_run(s, x, 1, out, nout, &rs) || out[0].dtype != NPU_DTYPE_FP32)
        goto out;
    *n = npu_tensor_numel(&out[0]);
    if (!(o = malloc(sizeof(float) * (size_t)*n)))
        goto out;
    memcpy(o, out[0].data, sizeof(float) * (size_t)*n);
    if (npu_s)
        *npu_s = rs.npu_modeled_s;
    if (submits)
        *submits = rs.submits;
out:
    npu_session_destroy(s);
    return o;
}

void
qt_models_load(struct qt_models *m, const struct qt_paths *p,
               enum npu_status (*quantise)(struct npu_graph *g, void *user), void *user)
{
    struct npu_graph *g = NULL;
    *m = (struct qt_models){0};
    CHECK(!npu_onnx_load(p->model, NULL, &g), "load");
    CHECK(g && !npu_compile(g, NULL) && !quantise(g, user), "quantise for the CPU run");
    CHECK(g && !npu_model_from_graph(g, NULL, NPU_EXEC_NO_PASSES, &m->cpu_q), "cpu model");
    struct npu_model_options mo_cpu = {.backend = "cpu"}, mo_sim = {.backend = "sim"};
    CHECK(!npu_model_load(p->model, &mo_cpu, &m->fp), "fp32 model");
    CHECK(!npu_model_load(p->npub, &mo_sim, &m->sim), "sim model");
}

void
qt_models_free(struct qt_models *m)
{
    npu_model_free(m->cpu_q);
    npu_model_free(m->fp);
    npu_model_free(m->sim);
}

void
qt_heldout_run(const struct qt_models *m, const struct qt_paths *p, const char *dir,
               struct qt_heldout *r)
{
    *r = (struct qt_heldout){.worst_q = 1, .worst_sim = 1, .worst_agree = 1};
    FILE *f = fopen(p->held, "r");
    CHECK(f, "cannot open %s", p->held);
    char line[1024];
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0])
            continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, line);
        struct npu_tensor x;
        if (npu_npy_read(path, &x)) {
            CHECK(0, "cannot read %s", path);
            break;
        }
        int64_t n0 = 0, n1 = 0, n2 = 0;
        float *fr = qt_run(m->fp, &x, &n0, NULL, NULL), *q = qt_run(m->cpu_q, &x, &n1, NULL, NULL);
        float *s = qt_run(m->sim, &x, &n2, &r->npu_s, &r->submits);
        CHECK(fr && q && s && n0 == n1 && n0 == n2, "runs on %s", path);
        if (fr && q && s && n0 == n1 && n0 == n2) {
            r->worst_q = fmin(r->worst_q, qt_cosine(fr, q, n0));
            r->worst_sim = fmin(r->worst_sim, qt_cosine(fr, s, n0));
            r->worst_agree = fmin(r->worst_agree, qt_cosine(q, s, n0));
        }
        free(fr);
        free(q);
        free(s);
        npu_npy_free(&x);
        r->k++;
    }
    if (f)
        fclose(f);
}
