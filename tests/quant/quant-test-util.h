/* SPDX-License-Identifier: MIT */
/*
 * quant-test-util.h: what the end-to-end quantiser tests (test-quant.c, test-quant16.c)
 * share: the failure-counting CHECK, the paths of a test model's folder
 * (tests/quant/data/<model>), quantising a graph from the calibration list, loading
 * the three models compared (fp32 on the CPU, the quantised graph on the CPU
 * executor, the compiled program on the simulator) and running them on every
 * held-out input to find the worst cosines.
 */
#ifndef QUANT_TEST_UTIL_H
#define QUANT_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "npu/npu-build.h"
#include "npu/npu-exec.h"
#include "npu/npu-quant.h"

extern int fails;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

/* DIR/model.onnx, DIR/calib.txt, DIR/heldout.txt and a /tmp/NAME-PID.npub. */
struct qt_paths {
    char model[1024], calib[1024], held[1024], npub[1024];
};

/* Fills p for dir; 77 (skip, said on stderr) when the model is missing, else 0. */
int qt_paths_init(struct qt_paths *p, const char *dir, const char *name);

/* Quantises g with o from the calibration list (o->data is set to the data set,
 * freed before return). */
enum npu_status qt_quantize(struct npu_graph *g, const char *list, struct npu_quant_options *o,
                            struct npu_quant_report *rep);

/* Builds p->model with every node the NPU supports on the NPU and quantise(g, user) as
 * the transform, into *b (*bo the options, for a rebuild); false after "FAIL: WHAT build
 * of MODEL" on stderr. */
bool qt_build(const struct qt_paths *p,
              enum npu_status (*quantise)(struct npu_graph *g, void *user), void *user,
              const char *what, struct npu_build_options *bo, struct npu_built **b);

double qt_cosine(const float *a, const float *b, int64_t n);

/* Runs model m on x, output 0 copied into a malloc'd float buffer (NULL on failure);
 * the modeled NPU seconds and submits when npu_s / submits are not NULL. */
float *qt_run(struct npu_model *m, const struct npu_tensor *x, int64_t *n, double *npu_s,
              unsigned *submits);

struct qt_models {
    struct npu_model *cpu_q; /* the quantised graph on the CPU executor */
    struct npu_model *fp;    /* the fp32 model on the CPU */
    struct npu_model *sim;   /* the saved program on the simulator */
};

/* Loads the three models: the quantised one by loading p->model and applying
 * quantise(g, user). Failures are CHECKs. */
void qt_models_load(struct qt_models *m, const struct qt_paths *p,
                    enum npu_status (*quantise)(struct npu_graph *g, void *user), void *user);
void qt_models_free(struct qt_models *m);

struct qt_heldout {
    int k; /* held-out inputs run */
    double worst_q, worst_sim, worst_agree;
    double npu_s;     /* modeled NPU seconds of the last sim run */
    unsigned submits; /* of the last sim run */
};

/* Runs the three models on every input of p->held (paths relative to dir). */
void qt_heldout_run(const struct qt_models *m, const struct qt_paths *p, const char *dir,
                    struct qt_heldout *r);

#endif /* QUANT_TEST_UTIL_H */
