// SPDX-License-Identifier: MIT
/*
 * test-quant.c: the quantiser end to end on a trained test model
 * (tests/quant/data/<model>: model.onnx, calib.txt, heldout.txt, made by
 * gen-quant-models.py). Quantises with the given algorithm (w8a8, or hybrid
 * with --keep-float), compiles with every node the NPU supports on the NPU,
 * and runs the held-out inputs three ways: the fp32 model on the CPU, the
 * quantised graph on the CPU executor, the compiled program on the
 * simulator. Each quantised output must be within the stated cosine of fp32;
 * the NPU must agree with the CPU's quantised arithmetic; the program must
 * hold int8 products. QuantizeLinear / DequantizeLinear run on the NPU
 * (compiler/backend/dpu-qdq.c): the program must have fewer NPU jobs than the
 * same build with them on the CPU (npu_dpu_qdq = 0).
 * Usage: test-quant DIR ALGO MIN_COS [KEEP_FLOAT].
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu/npu-build.h"
#include "npu/npu-exec.h"
#include "npu/npu-npub.h"
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"
#include "npu/npu-quant.h"
#include "npu/npu-timing.h"
#include "quant-test-util.h"

extern int npu_dpu_qdq; /* compiler/backend/dpu-qdq.c */

struct hook {
    struct npu_quant_options o;
    const char *list;
    struct npu_quant_report rep;
    int int8_layers;       /* QLinear nodes left in the graph */
    int per_tensor_layers; /* of them with one weight scale */
    bool keep_seen_float;
};

static enum npu_status
hook(struct npu_graph *g, void *user)
{
    struct hook *h = user;
    /* (on a data set that fails to load the graph is still float: nothing to count) */
    enum npu_status st = qt_quantize(g, h->list, &h->o, &h->rep);
    npu_graph_for_each_node (g, n) {
        /* one QuantizeLinear per float value and parameters (q / k / v share theirs) */
        if (n->op == NPU_OP_QUANTIZE_LINEAR)
            npu_graph_for_each_node (g, m)
                if (m != n && m->op == NPU_OP_QUANTIZE_LINEAR && m->in[0] == n->in[0] &&
                    npu_value_get_f64(m->in[1], 0) == npu_value_get_f64(n->in[1], 0) &&
                    npu_value_get_i64(m->in[2], 0) == npu_value_get_i64(n->in[2], 0))
                    CHECK(0, "%s and %s quantise the same value alike", n->name, m->name);
        /* one weight scale only where it costs at most NPU_QUANT_TENSOR_NOISE x the
         * rounding noise of per-channel scales (seen on the int8 weights: the kernels'
         * largest |q|, up to their rounding) */
        if ((n->op == NPU_OP_QLINEAR_CONV || n->op == NPU_OP_QLINEAR_MATMUL) &&
            npu_value_numel(n->in[4]) == 1 && !h->o.per_layer) {
            const struct npu_value *w = n->in[3];
            bool conv = n->op == NPU_OP_QLINEAR_CONV;
            int64_t K = conv ? w->t.dims[0] : w->t.dims[1], per = npu_value_numel(w) / K;
            double sum = 0, mx = 0;
            for (int64_t k = 0; k < K; k++) {
                double m = 0;
                for (int64_t e = 0; e < per; e++)
                    m = fmax(m, fabs((double)npu_value_get_i64(w, conv ? k * per + e : e * K + k)));
                sum += (m + 0.5) * (m + 0.5);
                mx = fmax(mx, m);
            }
            CHECK(K * mx * mx <= NPU_QUANT_TENSOR_NOISE * sum,
                  "%s: one weight scale although it costs %.1fx the noise", n->name,
                  K * mx * mx / sum);
            h->per_tensor_layers++;
        }
        h->int8_layers += n->op == NPU_OP_QLINEAR_CONV || n->op == NPU_OP_QLINEAR_MATMUL;
        if (h->o.keep_float && (n->op == NPU_OP_QLINEAR_CONV || n->op == NPU_OP_QLINEAR_MATMUL))
            CHECK(strcmp(n->name, h->o.keep_float), "%s was named float but is int8", n->name);
    }
    return st;
}

int
main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test-quant DIR ALGO MIN_COS [KEEP_FLOAT]\n");
        return 2;
    }
    const char *dir = argv[1];
    double min_cos = atof(argv[3]);
    struct qt_paths p;
    if (qt_paths_init(&p, dir, "test-quant"))
        return 77;
    const char *model = p.model, *npub = p.npub;
    struct hook h = {.list = p.calib};
    h.o.mode = argc > 4 ? NPU_QUANT_HYBRID : NPU_QUANT_W8A8;
    h.o.keep_float = argc > 4 ? argv[4] : NULL;
    h.o.accuracy = true;
    if (npu_quant_algo_parse(argv[2], &h.o.algo)) {
        fprintf(stderr, "unknown algorithm %s\n", argv[2]);
        return 2;
    }
    /* hybrid at the default threshold may keep everything float on a model
     * this small: a low threshold keeps only the named layer float */
    if (h.o.mode == NPU_QUANT_HYBRID)
        h.o.hybrid_threshold = 0.9;
    struct npu_build_options bo;
    struct npu_built *b;
    if (!qt_build(&p, hook, &h, "quantised", &bo, &b))
        return 1;
    npu_quant_report_print(&h.rep, stdout);
    CHECK(h.int8_layers > 0, "no int8 layer in the quantised graph");
    CHECK(h.rep.out_cos >= min_cos, "calibration-set output cosine %.6f < %.6f", h.rep.out_cos,
          min_cos);
    if (h.o.keep_float) {
        bool found = false;
        for (int i = 0; i < h.rep.nlayers; i++)
            if (!strcmp(h.rep.layers[i].name, h.o.keep_float)) {
                found = true;
                CHECK(!h.rep.layers[i].quantised, "%s quantised despite --keep-float",
                      h.o.keep_float);
                CHECK(strstr(h.rep.layers[i].why, "keep-float"), "why: %s", h.rep.layers[i].why);
            }
        CHECK(found, "layer %s not in the report", h.o.keep_float);
    }
    /* the same build with QuantizeLinear / DequantizeLinear on the CPU: more NPU jobs */
    int jobs = b->prog->n_jobs, steps = b->prog->n_steps;
    struct hook h0 = h;
    memset(&h0.rep, 0, sizeof(h0.rep));
    h0.o.accuracy = false;
    h0.int8_layers = 0;
    /* (and --per-channel: no layer with one weight scale) */
    h0.o.per_channel = true;
    h0.per_tensor_layers = 0;
    struct npu_build_options bo0 = bo;
    bo0.transform_user = &h0;
    struct npu_built *b0 = NULL;
    npu_dpu_qdq = 0;
    CHECK(!npu_build(model, &bo0, &b0), "build with Q / DQ on the CPU");
    npu_dpu_qdq = 1;
    if (b0) {
        printf("NPU jobs / program steps: %d / %d with QuantizeLinear / DequantizeLinear on the "
               "NPU, %d / %d with them on the CPU\n",
               jobs, steps, b0->prog->n_jobs, b0->prog->n_steps);
        CHECK(jobs < b0->prog->n_jobs, "Q / DQ on the NPU: %d jobs, not fewer than %d", jobs,
              b0->prog->n_jobs);
    }
    printf("int8 layers with one weight scale: %d of %d by default, %d of %d with "
           "--per-channel\n",
           h.per_tensor_layers, h.int8_layers, h0.per_tensor_layers, h0.int8_layers);
    CHECK(h0.per_tensor_layers == 0 || h.o.per_layer, "--per-channel left %d one-scale layers",
          h0.per_tensor_layers);
    npu_built_free(b0);
    npu_quant_report_free(&h0.rep);
    /* the program holds int8 products: tasks of QLinear nodes exist */
    struct npu_npub_meta meta = {.source = model};
    CHECK(!npu_npub_save(b->prog, &meta, npub), "cannot save %s", npub);
    npu_built_free(b);

    /* the quantised graph on the CPU executor */
    struct qt_models m;
    struct qt_heldout r;
    struct hook h2 = h;
    memset(&h2.rep, 0, sizeof(h2.rep));
    h2.o.accuracy = false;
    h2.int8_layers = 0;
    qt_models_load(&m, &p, hook, &h2);
    if (fails || !m.cpu_q || !m.fp || !m.sim)
        goto out;

    qt_heldout_run(&m, &p, dir, &r);
    printf("%s %s: %d held-out inputs; worst cosine vs fp32: quantised on cpu %.6f, on sim %.6f; "
           "cpu vs sim %.6f; NPU %.3f ms modeled (%s) in %u submits\n",
           dir, argv[2], r.k, r.worst_q, r.worst_sim, r.worst_agree, r.npu_s * 1e3,
           npu_timing_model()->label, r.submits);
    CHECK(r.k > 0, "no held-out inputs");
    CHECK(r.worst_q >= min_cos, "quantised (cpu) cosine %.6f < %.6f", r.worst_q, min_cos);
    CHECK(r.worst_sim >= min_cos, "quantised (sim) cosine %.6f < %.6f", r.worst_sim, min_cos);
    /* the float layers run in fp16 on the NPU, in fp32 on the CPU executor */
    CHECK(r.worst_agree >= 0.995, "sim vs cpu quantised cosine %.6f < 0.995", r.worst_agree);
out:
    npu_quant_report_free(&h.rep);
    npu_quant_report_free(&h2.rep);
    qt_models_free(&m);
    unlink(npub);
    if (fails)
        fprintf(stderr, "%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
