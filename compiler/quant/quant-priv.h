/* SPDX-License-Identifier: MIT */
/*
 * quant-priv.h: the quantiser's internals (compiler/quant): graph copies, the
 * observing fp32 run of the CPU executor, per-tensor statistics and the range
 * algorithms, shared by quant-calib.c, quant-rewrite.c and quant.c.
 */
#ifndef NPU_QUANT_PRIV_H
#define NPU_QUANT_PRIV_H

#include "exec-priv.h"
#include "npu/npu-cpu.h"
#include "npu/npu-quant.h"

#define QDOM "quant"
#define QUANT_BINS 2048

/* A copy of g (values, constants by copy, nodes, attributes, outputs), names kept. */
struct npu_graph *quant_graph_clone(const struct npu_graph *g);

/* The fp32 graph run with the values the quantiser reads kept to the end (slot i is
 * the graph's value i), and session memory. */
struct quant_run {
    struct exec_plan *plan; /* owns its graph */
    void *arena, *scratch;
    const struct npu_tensor *inputs; /* of the current sample */
};
/* Takes g (freed with the run, also on failure). layers_only: only the inputs and results
 * of the layers the rewrite would quantise (quant_candidate) are kept (and observed by
 * quant_calibrate), the others share memory as in a normal run; else every value. */
enum npu_status quant_run_init(struct quant_run *r, struct npu_graph *g, bool layers_only);
enum npu_status quant_run_sample(struct quant_run *r, struct npu_cpu_ctx *ctx,
                                 const struct npu_tensor *inputs);
/* The current contents of value v of the run's graph (found by name), or
 * NULL when the graph has no float value of that name. */
const struct npu_tensor *quant_run_value(struct quant_run *r, const char *name,
                                         struct npu_tensor *tmp);
void quant_run_fini(struct quant_run *r);

/* Per-tensor statistics of a float value, by its name in the graph. */
struct quant_stat {
    const char *name;
    bool seen;
    float lo, hi;   /* observed range */
    double *hist;   /* QUANT_BINS over [lo, hi] after pass 1; NULL for minmax */
    float clo, chi; /* the chosen range */
};
struct quant_stats {
    struct quant_stat *s;
    int n;
};
/* Runs the calibration samples (one pass for minmax, two with histograms) and
 * chooses each float value's range with the algorithm. */
enum npu_status quant_calibrate(struct quant_run *r, struct npu_cpu_ctx *ctx,
                                const struct npu_quant_options *o, struct quant_stats *st);
const struct quant_stat *quant_stat_find(const struct quant_stats *st, const char *name);
void quant_stats_free(struct quant_stats *st);

/* int8 scale and zero point of a range (0 always representable). */
void quant_params(float lo, float hi, float *scale, int8_t *zp);

#endif /* NPU_QUANT_PRIV_H */
