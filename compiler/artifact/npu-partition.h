/* SPDX-License-Identifier: MIT */
/*
 * npu-partition.h: partitioning by cost (docs/performance.md "Partitioning").
 * Every node of a compiled graph goes to the NPU or the CPU
 * (npu_node.device) by comparing, for the whole graph,
 *
 *   sum over nodes of   NPU: the back-end handler's modeled cost
 *                             (timing model v1, supports/cost of
 *                             npu-backend.h)
 *                       CPU: the CPU kernel measured on the node's shapes
 *   + the conversions the placement implies: every value produced on one
 *     side and read on the other (or a graph input read by the NPU, or an
 *     NPU result that is a graph output) costs a host conversion, measured
 *     as this host's NC1HWC2/fp16 conversion rate times its bytes;
 *   + submit_overhead_s (60 us, timing model v1) per NPU job, a job being a
 *     maximal run of consecutive NPU nodes in the graph's order (what the
 *     codegen submits as one chain).
 *
 * The search starts from each node's cheaper side and improves by moves of
 * single nodes and of whole runs (a CPU run between two NPU runs joins them
 * when the merged job is cheaper), so it prefers few long NPU segments.
 * CPU costs are measured once per (op, input dtypes and dims, attributes,
 * threads) and kept in memory and in the compile cache folder
 * (cpu-costs-v1.tsv), since they depend on the host.
 */
#ifndef NPU_PARTITION_H
#define NPU_PARTITION_H

#include <stdbool.h>
#include <stdio.h>

#include "npu/npu-backend.h"
#include "npu/npu-ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* submit_overhead_s of timing model v1 (shared/hw/timing-model-v1.md). */
#define NPU_TM1_SUBMIT_OVERHEAD_S 60e-6

/* Where the costs come from; NULL members use the real ones (tests replace
 * them to make decisions whose answer is known). */
struct npu_partition_oracle {
    bool (*supports)(const struct npu_graph *g, const struct npu_node *n, char *why,
                     size_t why_len, void *user);
    double (*npu_cost)(const struct npu_graph *g, const struct npu_node *n, void *user);
    double (*cpu_cost)(const struct npu_graph *g, const struct npu_node *n, void *user);
    double convert_bytes_per_s; /* 0 = measured on this host */
    void *user;
};

enum npu_partition_mode {
    NPU_PARTITION_COST = 0,     /* by cost (the default) */
    NPU_PARTITION_SUPPORTED,    /* every supported node on the NPU */
    NPU_PARTITION_CPU,          /* everything on the CPU */
};

struct npu_partition_options {
    enum npu_partition_mode mode;
    const struct npu_backend_options *backend; /* NULL = defaults */
    const char *cache_dir;      /* CPU-cost cache folder; NULL = in memory only */
    int cpu_threads;            /* threads the CPU ops will run with (<= 0: all) */
    const struct npu_partition_oracle *oracle; /* NULL = real costs */
};

/* Per node, what the decision rested on (npuc --explain). */
struct npu_partition_node {
    const char *name;           /* node name, or "" (a copy owned by the report) */
    enum npu_op op;
    int index;                  /* position in the graph */
    bool supported;             /* by an NPU handler */
    char why[160];              /* reason when not supported */
    double npu_s;               /* modeled (timing model v1); < 0 unknown */
    double cpu_s;               /* measured on this host (or estimated: cpu_measured) */
    bool cpu_measured;
    double convert_s;           /* conversions of this node's inputs and outputs it implies */
    double submit_s;            /* submit overhead when it starts an NPU job */
    enum npu_node_device device;
};

struct npu_partition_report {
    struct npu_partition_node *nodes;
    int n;
    double total_s;             /* the chosen partition's estimate */
    double all_cpu_s;           /* everything on the CPU */
    double greedy_s;            /* each node on its cheaper side, before the search */
    int npu_nodes, npu_jobs;
    double convert_bytes_per_s; /* the rate used */
};

enum npu_status npu_partition(struct npu_graph *g, const struct npu_partition_options *o,
                              struct npu_partition_report *rep);
void npu_partition_report_free(struct npu_partition_report *r);
/* The --explain table. */
void npu_partition_report_print(const struct npu_partition_report *r, FILE *f);

/* The pass form (default options, no cache). */
enum npu_status npu_pass_partition(struct npu_graph *g);

/* ---- CPU costs (npu-cpucost.c) ------------------------------------------- */

/* Measured seconds of node n's CPU kernel on its shapes (cached); when the
 * kernel cannot run on synthetic inputs, an estimate from its bytes and
 * *measured = false. */
double npu_cpu_cost(const struct npu_graph *g, const struct npu_node *n, int threads,
                    const char *cache_dir, bool *measured);
/* This host's conversion rate, bytes of fp32 per second, fp32 NCHW -> fp16
 * NC1HWC2 (measured once per process). */
double npu_convert_rate(void);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PARTITION_H */
