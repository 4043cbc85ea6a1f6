// SPDX-License-Identifier: MIT
/*
 * test-quant-errors.c: calibration lists that must fail, each with a message
 * naming the problem: a list that does not exist, a file that does not
 * exist, a wrong shape, a wrong dtype, too many and too few files on a line,
 * too few samples (the message says the minimum); w16a16i quantising a good
 * list; the option names. Usage: test-quant-errors MODEL.onnx WORKDIR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npu/npu-npy.h"
#include "npu/npu-onnx.h"
#include "npu/npu-passes.h"
#include "npu/npu-quant.h"

static int fails;
static char last[1024];

static void
sink(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)domain;
    (void)user;
    if (level == NPU_LOG_ERROR)
        snprintf(last, sizeof(last), "%s", msg);
}

static void
write_list(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void
expect(const struct npu_graph *g, const char *list, const char *want)
{
    struct npu_quant_dataset *d = NULL;
    last[0] = 0;
    enum npu_status st = npu_quant_dataset_load(list, g, &d);
    if (st == NPU_OK || !strstr(last, want)) {
        fprintf(stderr, "FAIL: %s: status %d, message '%s', wanted '%s'\n", list, st, last, want);
        fails++;
    } else {
        printf("ok: %s\n", last);
    }
    npu_quant_dataset_free(d);
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test-quant-errors MODEL.onnx WORKDIR\n");
        return 2;
    }
    const char *w = argv[2];
    mkdir(w, 0755);
    struct npu_graph *g = NULL;
    if (npu_onnx_load(argv[1], NULL, &g) || npu_compile(g, NULL)) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    npu_log_set_handler(sink, NULL);
    const struct npu_value *in = g->inputs[0];
    char p[1024], good[1024], text[8192];
    /* a good sample, a wrong shape, a wrong dtype */
    struct npu_tensor t = in->t;
    t.data = calloc(1, (size_t)npu_tensor_nbytes(&t));
    snprintf(good, sizeof(good), "%s/good.npy", w);
    npu_npy_write(good, &t);
    t.dims[t.ndim - 1] += 1;
    free(t.data);
    t.data = calloc(1, (size_t)npu_tensor_nbytes(&t));
    snprintf(p, sizeof(p), "%s/shape.npy", w);
    npu_npy_write(p, &t);
    free(t.data);
    t = in->t;
    t.dtype = NPU_DTYPE_FP16;
    t.data = calloc(1, (size_t)npu_tensor_nbytes(&t));
    snprintf(p, sizeof(p), "%s/dtype.npy", w);
    npu_npy_write(p, &t);
    free(t.data);

    snprintf(p, sizeof(p), "%s/none.txt", w);
    expect(g, p, "No such file");
    snprintf(p, sizeof(p), "%s/missing.txt", w);
    write_list(p, "good.npy\nnot-there.npy\n");
    expect(g, p, "not-there.npy");
    snprintf(p, sizeof(p), "%s/shape.txt", w);
    write_list(p, "good.npy\nshape.npy\n");
    expect(g, p, "has shape");
    snprintf(p, sizeof(p), "%s/dtype.txt", w);
    write_list(p, "dtype.npy\n");
    expect(g, p, "is f16");
    snprintf(p, sizeof(p), "%s/extra.txt", w);
    write_list(p, "good.npy good.npy\n");
    expect(g, p, "more files than");
    snprintf(p, sizeof(p), "%s/few.txt", w);
    write_list(p, "# a comment\ngood.npy\n\ngood.npy\n");
    expect(g, p, "needs at least 4");
    /* four samples load */
    snprintf(p, sizeof(p), "%s/ok.txt", w);
    snprintf(text, sizeof(text), "good.npy\n%s\ngood.npy\ngood.npy\n", good);
    write_list(p, text);
    struct npu_quant_dataset *d = NULL;
    if (npu_quant_dataset_load(p, g, &d) || d->nsamples != 4) {
        fprintf(stderr, "FAIL: a good list of 4 samples did not load: %s\n", last);
        fails++;
    }
    /* w16a16i: quantises with int16 layers (test-quant16 checks the arithmetic) */
    struct npu_quant_options o = {.mode = NPU_QUANT_W16A16I, .data = d};
    struct npu_quant_report rep;
    last[0] = 0;
    if (npu_quantize(g, &o, &rep) || rep.nquantised < 1 || strcmp(rep.mode, "w16a16i")) {
        fprintf(stderr, "FAIL: w16a16i did not quantise ('%s')\n", last);
        fails++;
    }
    npu_quant_report_free(&rep);
    npu_quant_dataset_free(d);
    enum npu_quant_algo a;
    enum npu_quant_mode m;
    if (npu_quant_algo_parse("kl", &a) || a != NPU_QUANT_KL ||
        !npu_quant_algo_parse("entropy", &a) || npu_quant_mode_parse("hybrid", &m) ||
        m != NPU_QUANT_HYBRID || !npu_quant_mode_parse("w4", &m)) {
        fprintf(stderr, "FAIL: option names\n");
        fails++;
    }
    npu_log_set_handler(NULL, NULL);
    npu_graph_free(g);
    return fails ? 1 : 0;
}
