// SPDX-License-Identifier: MIT
/*
 * test-quant16.c: w16a16i end to end on a trained test model (tests/quant/data/<model>,
 * as test-quant.c): quantised from calib.txt with int16 symmetric weights and
 * activations, compiled with every supported node on the NPU, the held-out inputs run
 * as the fp32 model (CPU), the quantised graph (CPU executor, exact int16 arithmetic)
 * and the program (simulator, the int16 CNA / DPU path). Checks: the products are
 * int16 QLinear nodes with zero points 0; the program holds int16 conv tasks (CORE
 * PROC_PRECISION int16) on the NPU; both quantised runs are within MIN_COS of fp32 and
 * within AGREE of each other; int16 beats int8 (the same model quantised w8a8 is
 * further from fp32 on the calibration set).
 * Usage: test-quant16 DIR MIN_COS AGREE.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu-rk3588-regs.h"
#include "npu/npu-build.h"
#include "npu/npu-exec.h"
#include "npu/npu-npub.h"
#include "npu/npu-npy.h"
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"
#include "npu/npu-program.h"
#include "npu/npu-quant.h"
#include "npu/npu-timing.h"

static int fails;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

struct hook {
    struct npu_quant_options o;
    const char *list;
    struct npu_quant_report rep;
    int int16_layers, other_q;
};

static enum npu_status
hook(struct npu_graph *g, void *user)
{
    struct hook *h = user;
    struct npu_quant_dataset *d = NULL;
    enum npu_status st = npu_quant_dataset_load(h->list, g, &d);
    if (st)
        return st;
    h->o.data = d;
    st = npu_quantize(g, &h->o, &h->rep);
    npu_quant_dataset_free(d);
    npu_graph_for_each_node (g, n) {
        if (n->op != NPU_OP_QLINEAR_CONV && n->op != NPU_OP_QLINEAR_MATMUL)
            continue;
        bool i16 = n->in[0]->t.dtype == NPU_DTYPE_INT16 && n->in[3]->t.dtype == NPU_DTYPE_INT16 &&
                   n->out[0]->t.dtype == NPU_DTYPE_INT16;
        for (int k = 2; i16 && k < 8; k += 3) /* x, w, y zero points */
            i16 = n->in[k] && n->in[k]->t.dtype == NPU_DTYPE_INT16 &&
                  npu_value_get_i64(n->in[k], 0) == 0;
        h->int16_layers += i16;
        h->other_q += !i16;
    }
    return st;
}

static double
cosine(const float *a, const float *b, int64_t n)
{
    double xy = 0, xx = 0, yy = 0;
    for (int64_t i = 0; i < n; i++) {
        xy += (double)a[i] * b[i];
        xx += (double)a[i] * a[i];
        yy += (double)b[i] * b[i];
    }
    return xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == yy ? 1 : 0);
}

static float *
run(struct npu_model *m, const struct npu_tensor *x, int64_t *n)
{
    struct npu_session *s = NULL;
    struct npu_tensor out[4];
    float *o = NULL;
    int nout = npu_model_num_outputs(m);
    if (nout < 1 || nout > 4 || npu_session_create(m, 0, &s) ||
        npu_session_run(s, x, 1, out, nout, NULL) || out[0].dtype != NPU_DTYPE_FP32)
        goto out;
    *n = npu_tensor_numel(&out[0]);
    if ((o = malloc(sizeof(float) * (size_t)*n)))
        memcpy(o, out[0].data, sizeof(float) * (size_t)*n);
out:
    npu_session_destroy(s);
    return o;
}

/* Conv tasks of the program whose CORE computes in int16 (MISC_CFG PROC_PRECISION 1),
 * and those among them that shift their sums (CORE CLIP_TRUNCATE != 0). */
static void
count_int16_tasks(const struct npu_program *p, int *conv16, int *shifted)
{
    *conv16 = *shifted = 0;
    for (int j = 0; j < p->n_jobs; j++)
        for (uint32_t q = 0; q < p->jobs[j].n_qwords; q++) {
            uint64_t w = p->jobs[j].regcmd[q];
            uint16_t off = (uint16_t)(w & 0xffff);
            uint32_t v = (uint32_t)(w >> 16);
            /* CORE MISC_CFG: written once per conv task */
            if (off == REG_CORE_MISC_CFG && (w >> 48) &&
                CORE_MISC_CFG_PROC_PRECISION__GET(v) == NPU_CNA_PRECISION_INT16)
                (*conv16)++;
            if (off == REG_CORE_CLIP_TRUNCATE && (w >> 48) &&
                CORE_CLIP_TRUNCATE_CLIP_TRUNCATE__GET(v))
                (*shifted)++;
        }
}

int
main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test-quant16 DIR MIN_COS AGREE\n");
        return 2;
    }
    const char *dir = argv[1];
    double min_cos = atof(argv[2]), agree = atof(argv[3]);
    char model[1024], calib[1024], held[1024], npub[1024];
    snprintf(model, sizeof(model), "%s/model.onnx", dir);
    snprintf(calib, sizeof(calib), "%s/calib.txt", dir);
    snprintf(held, sizeof(held), "%s/heldout.txt", dir);
    snprintf(npub, sizeof(npub), "/tmp/test-quant16-%d.npub", (int)getpid());
    if (access(model, R_OK)) {
        fprintf(stderr, "SKIP: %s missing\n", model);
        return 77;
    }
    struct hook h = {.list = calib};
    h.o.mode = NPU_QUANT_W16A16I;
    h.o.accuracy = true;
    struct npu_build_options bo = {.no_cache = true,
                                   .partition = NPU_PARTITION_SUPPORTED,
                                   .transform = hook,
                                   .transform_user = &h};
    struct npu_built *b = NULL;
    if (npu_build(model, &bo, &b)) {
        fprintf(stderr, "FAIL: w16a16i build of %s\n", model);
        return 1;
    }
    npu_quant_report_print(&h.rep, stdout);
    CHECK(h.int16_layers > 0 && h.other_q == 0, "%d int16 QLinear layers, %d others",
          h.int16_layers, h.other_q);
    CHECK(h.rep.mode && !strcmp(h.rep.mode, "w16a16i"), "report mode %s", h.rep.mode);
    int conv16, shifted;
    count_int16_tasks(b->prog, &conv16, &shifted);
    printf("program: %d NPU jobs, %d int16 conv tasks (%d with CLIP_TRUNCATE)\n", b->prog->n_jobs,
           conv16, shifted);
    CHECK(conv16 >= h.int16_layers, "%d int16 conv tasks for %d int16 layers", conv16,
          h.int16_layers);
    CHECK(shifted > 0, "no int16 task shifts its sums (a trained layer's worst case needs it)");
    struct npu_npub_meta meta = {.source = model};
    CHECK(!npu_npub_save(b->prog, &meta, npub), "cannot save %s", npub);
    npu_built_free(b);

    /* int8 of the same model on the calibration set: int16 must be closer to fp32 */
    struct hook h8 = {.list = calib};
    h8.o.mode = NPU_QUANT_W8A8;
    h8.o.accuracy = true;
    struct npu_graph *g8 = NULL;
    CHECK(!npu_onnx_load(model, NULL, &g8), "load");
    CHECK(g8 && !npu_compile(g8, NULL) && !hook(g8, &h8), "w8a8 quantise");
    printf("calibration-set output cosine: w16a16i %.7f, w8a8 %.7f\n", h.rep.out_cos,
           h8.rep.out_cos);
    CHECK(h.rep.out_cos >= h8.rep.out_cos, "w16a16i %.7f below w8a8 %.7f", h.rep.out_cos,
          h8.rep.out_cos);
    npu_graph_free(g8);
    npu_quant_report_free(&h8.rep);

    struct npu_graph *g = NULL;
    struct npu_model *cpu_q = NULL, *fp = NULL, *sim = NULL;
    struct hook h2 = h;
    memset(&h2.rep, 0, sizeof(h2.rep));
    h2.o.accuracy = false;
    CHECK(!npu_onnx_load(model, NULL, &g), "load");
    CHECK(g && !npu_compile(g, NULL) && !hook(g, &h2), "quantise for the CPU run");
    CHECK(g && !npu_model_from_graph(g, NULL, NPU_EXEC_NO_PASSES, &cpu_q), "cpu model");
    struct npu_model_options mo_cpu = {.backend = "cpu"}, mo_sim = {.backend = "sim"};
    CHECK(!npu_model_load(model, &mo_cpu, &fp), "fp32 model");
    CHECK(!npu_model_load(npub, &mo_sim, &sim), "sim model");
    if (fails || !cpu_q || !fp || !sim)
        goto out;
    FILE *f = fopen(held, "r");
    CHECK(f, "cannot open %s", held);
    char line[1024];
    double worst_q = 1, worst_sim = 1, worst_agree = 1;
    int k = 0;
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
        float *r = run(fp, &x, &n0), *q = run(cpu_q, &x, &n1), *s = run(sim, &x, &n2);
        CHECK(r && q && s && n0 == n1 && n0 == n2, "runs on %s", path);
        if (r && q && s && n0 == n1 && n0 == n2) {
            worst_q = fmin(worst_q, cosine(r, q, n0));
            worst_sim = fmin(worst_sim, cosine(r, s, n0));
            worst_agree = fmin(worst_agree, cosine(q, s, n0));
        }
        free(r);
        free(q);
        free(s);
        npu_npy_free(&x);
        k++;
    }
    if (f)
        fclose(f);
    printf("%s w16a16i: %d held-out inputs; worst cosine vs fp32: quantised on cpu %.7f, on sim "
           "%.7f; cpu vs sim %.7f\n",
           dir, k, worst_q, worst_sim, worst_agree);
    CHECK(k > 0, "no held-out inputs");
    CHECK(worst_q >= min_cos, "quantised (cpu) cosine %.7f < %.7f", worst_q, min_cos);
    CHECK(worst_sim >= min_cos, "quantised (sim) cosine %.7f < %.7f", worst_sim, min_cos);
    CHECK(worst_agree >= agree, "sim vs cpu quantised cosine %.7f < %.7f", worst_agree, agree);
out:
    npu_quant_report_free(&h.rep);
    npu_quant_report_free(&h2.rep);
    npu_model_free(cpu_q);
    npu_model_free(fp);
    npu_model_free(sim);
    unlink(npub);
    if (fails)
        fprintf(stderr, "%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
