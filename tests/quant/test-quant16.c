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
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"
#include "npu/npu-program.h"
#include "npu/npu-quant.h"
#include "npu/npu-timing.h"
#include "quant-test-util.h"

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
    /* (on a data set that fails to load the graph is still float: nothing to count) */
    enum npu_status st = qt_quantize(g, h->list, &h->o, &h->rep);
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
    struct qt_paths p;
    if (qt_paths_init(&p, dir, "test-quant16"))
        return 77;
    const char *model = p.model, *calib = p.calib, *npub = p.npub;
    struct hook h = {.list = calib};
    h.o.mode = NPU_QUANT_W16A16I;
    h.o.accuracy = true;
    struct npu_build_options bo;
    struct npu_built *b;
    if (!qt_build(&p, hook, &h, "w16a16i", &bo, &b))
        return 1;
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

    struct qt_models m;
    struct qt_heldout r;
    struct hook h2 = h;
    memset(&h2.rep, 0, sizeof(h2.rep));
    h2.o.accuracy = false;
    qt_models_load(&m, &p, hook, &h2);
    if (fails || !m.cpu_q || !m.fp || !m.sim)
        goto out;
    qt_heldout_run(&m, &p, dir, &r);
    printf("%s w16a16i: %d held-out inputs; worst cosine vs fp32: quantised on cpu %.7f, on sim "
           "%.7f; cpu vs sim %.7f\n",
           dir, r.k, r.worst_q, r.worst_sim, r.worst_agree);
    CHECK(r.k > 0, "no held-out inputs");
    CHECK(r.worst_q >= min_cos, "quantised (cpu) cosine %.7f < %.7f", r.worst_q, min_cos);
    CHECK(r.worst_sim >= min_cos, "quantised (sim) cosine %.7f < %.7f", r.worst_sim, min_cos);
    CHECK(r.worst_agree >= agree, "sim vs cpu quantised cosine %.7f < %.7f", r.worst_agree, agree);
out:
    npu_quant_report_free(&h.rep);
    npu_quant_report_free(&h2.rep);
    qt_models_free(&m);
    unlink(npub);
    if (fails)
        fprintf(stderr, "%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
