/* SPDX-License-Identifier: MIT */
/*
 * npu-partition.h: partitioning by cost (docs/performance.md "Partitioning").
 * Every node of a compiled graph goes to the NPU or the CPU
 * (npu_node.device) by comparing, for the whole graph,
 *
 *   sum over nodes of   NPU: the back-end handler's modeled cost
 *                             (timing model v1, supports/cost of
 *                             npu-backend.h)
 *                       CPU: by the CPU cost model (below)
 *   + the conversions the placement implies: every value produced on one
 *     side and read on the other (or a graph input read by the NPU, or an
 *     NPU result that is a graph output) costs a host conversion, its bytes
 *     over the NC1HWC2/fp16 conversion rate of the same CPU cost model;
 *   + submit_overhead_s (npu/npu-timing.h: 60 us in v1) per NPU job, a job being a
 *     maximal run of consecutive NPU nodes in the graph's order (what the
 *     codegen submits as one chain).
 *
 * The search starts from each node's cheaper side and improves by moves of
 * single nodes and of whole runs (a CPU run between two NPU runs joins them
 * when the merged job is cheaper), so it prefers few long NPU segments; it
 * is run again from "every supported node on the NPU" and the cheaper of the
 * two results is kept.
 *
 * CPU cost models (npu_partition_options.cpu_cost, $NPU_CPU_COST):
 *   board     "RK3588 CPU model v1" (npu-cpumodel.c): analytic, deterministic,
 *             the same on every host - modeled, not measured on a board;
 *   measured  the CPU kernel timed on THIS host on the node's shapes, and this
 *             host's conversion rate; measured once per (op, input dtypes and
 *             dims, attributes, threads) and kept in memory and in the compile
 *             cache folder (cpu-costs-v1.tsv), since they depend on the host;
 *   auto      (the default) measured when the program will run next to a real
 *             NPU device (backends rknpu, rocket: this host IS the board's
 *             CPU), board otherwise (the simulator stands in for the board, so
 *             it must compile the program the board would; npuc's artifacts
 *             are for the board).
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

/* Where the costs come from; NULL members use the real ones (tests replace
 * them to make decisions whose answer is known). */
struct npu_partition_oracle {
    bool (*supports)(const struct npu_graph *g, const struct npu_node *n, char *why, size_t why_len,
                     void *user);
    double (*npu_cost)(const struct npu_graph *g, const struct npu_node *n, void *user);
    double (*cpu_cost)(const struct npu_graph *g, const struct npu_node *n, void *user);
    double convert_bytes_per_s; /* 0 = measured on this host */
    void *user;
};

enum npu_partition_mode {
    NPU_PARTITION_COST = 0,  /* by cost (the default) */
    NPU_PARTITION_SUPPORTED, /* every supported node on the NPU */
    NPU_PARTITION_CPU,       /* everything on the CPU */
};

/* Where CPU costs (and the conversion rate) come from. */
enum npu_cpu_cost_mode {
    NPU_CPU_COST_AUTO = 0, /* $NPU_CPU_COST if set, else measured when on_device, else board */
    NPU_CPU_COST_BOARD,    /* RK3588 CPU model v1 (modeled; nothing is measured) */
    NPU_CPU_COST_MEASURED, /* timed on this host */
};

/* Environment variable choosing the CPU cost model when the options say auto:
 * "auto", "board" or "measured". */
#define NPU_CPU_COST_ENV "NPU_CPU_COST"

struct npu_partition_options {
    enum npu_partition_mode mode;
    const struct npu_backend_options *backend; /* NULL = defaults */
    const char *cache_dir; /* CPU-cost cache folder (measured mode); NULL = in memory only */
    int cpu_threads;       /* threads the CPU ops will run with (<= 0: all) */
    const struct npu_partition_oracle *oracle; /* NULL = real costs */
    enum npu_cpu_cost_mode cpu_cost;
    bool on_device; /* the program will run next to a real NPU device (rknpu,
                     * rocket): what auto decides by */
};

/* Per node, what the decision rested on (npuc --explain). */
struct npu_partition_node {
    const char *name; /* node name, or "" (a copy owned by the report) */
    enum npu_op op;
    int index;         /* position in the graph */
    bool supported;    /* by an NPU handler */
    char why[160];     /* reason when not supported */
    double npu_s;      /* modeled (timing model v1); < 0 unknown */
    double cpu_s;      /* by the report's cpu_cost model */
    bool cpu_measured; /* measured on this host (false: modeled, or estimated from
                        * its bytes when the kernel could not run) */
    double convert_s;  /* conversions of this node's inputs and outputs it implies */
    double submit_s;   /* submit overhead when it starts an NPU job */
    enum npu_node_device device;
};

struct npu_partition_report {
    struct npu_partition_node *nodes;
    int n;
    double total_s;   /* the chosen partition's estimate */
    double all_cpu_s; /* everything on the CPU */
    double greedy_s;  /* each node on its cheaper side, before the search */
    int npu_nodes, npu_jobs;
    double convert_bytes_per_s;      /* the rate used */
    enum npu_cpu_cost_mode cpu_cost; /* the model used: board or measured (never auto) */
    bool cpu_oracle;                 /* CPU costs came from the caller's oracle */
};

enum npu_status npu_partition(struct npu_graph *g, const struct npu_partition_options *o,
                              struct npu_partition_report *rep);
void npu_partition_report_free(struct npu_partition_report *r);
/* The --explain table. */
void npu_partition_report_print(const struct npu_partition_report *r, FILE *f);

/* The pass form (default options, no cache). */
enum npu_status npu_pass_partition(struct npu_graph *g);

/* "auto", "board", "measured". */
const char *npu_cpu_cost_mode_name(enum npu_cpu_cost_mode m);
/* Parses one of those names; NPU_ERR_INVALID (nothing logged) otherwise. */
enum npu_status npu_cpu_cost_mode_parse(const char *s, enum npu_cpu_cost_mode *out);
/* The model a partition with these settings uses (board or measured): m when
 * not auto, else $NPU_CPU_COST when set and not auto, else measured when
 * on_device and board otherwise. A $NPU_CPU_COST that is not one of the three
 * names is an error (logged, NPU_ERR_INVALID). */
enum npu_status npu_cpu_cost_mode_resolve(enum npu_cpu_cost_mode m, bool on_device,
                                          enum npu_cpu_cost_mode *out);

/* ---- CPU costs, measured (npu-cpucost.c) ---------------------------------- */

/* Measured seconds of node n's CPU kernel on its shapes (cached); when the
 * kernel cannot run on synthetic inputs, an estimate from its bytes and
 * *measured = false. */
double npu_cpu_cost(const struct npu_graph *g, const struct npu_node *n, int threads,
                    const char *cache_dir, bool *measured);
/* This host's conversion rate, bytes of fp32 per second, fp32 NCHW -> fp16
 * NC1HWC2 (measured once per process). */
double npu_convert_rate(void);

/* ---- CPU costs, modeled: RK3588 CPU model v1 (npu-cpumodel.c) ------------- */

/* The constants (docs/performance.md "RK3588 CPU model v1"). */
struct npu_cpu_model {
    const char *name;               /* "RK3588 CPU model v1" */
    double big_cores;               /* Cortex-A76 cores used when threads <= 0 */
    double clock_hz;                /* A76 clock */
    double flop_per_cycle;          /* fp32 peak per core (2 NEON FMA pipes x 4 lanes x 2) */
    double gemm_efficiency;         /* fraction of the peak a GEMM reaches */
    double dram_bytes_per_s;        /* effective DRAM bandwidth of the CPU cluster */
    double dispatch_s;              /* per op */
    double add_cycles_per_elem;     /* Add on one core; other ops are relative to it */
    double convert_cycles_per_elem; /* host conversion fp32 <-> fp16 NC1HWC2, one core */
    double convert_bytes_per_elem;  /* its memory traffic per element */
};
extern const struct npu_cpu_model npu_cpu_model_v1;

enum npu_cpu_class {
    NPU_CPU_CLASS_GEMM, /* MatMul, Gemm, Conv, ConvTranspose, Einsum, npu.Attention */
    NPU_CPU_CLASS_ELEMENTWISE,
    NPU_CPU_CLASS_TRANSCENDENTAL, /* Exp, Tanh, Erf, Sigmoid, Gelu, ... */
    NPU_CPU_CLASS_REDUCTION,      /* reductions, normalisations, softmax, pooling */
    NPU_CPU_CLASS_MOVE,           /* Transpose, Gather, Concat, Slice, ... */
    NPU_CPU_CLASS_VIEW,           /* Reshape and friends (a copy in our executor) */
};
const char *npu_cpu_class_name(enum npu_cpu_class c);

/* How the model priced a node. */
struct npu_cpu_model_terms {
    enum npu_cpu_class cls;
    double cores; /* A76 cores the op runs on */
    double flops; /* GEMM-like ops: multiply and add counted apart */
    double elems; /* elements priced per element (GEMM class: softmax scores) */
    double cycles_per_elem;
    double bytes; /* read and written */
    double compute_s, memory_s, total_s;
};

/* Modeled seconds of node n on the RK3588 CPU with `threads` threads (<= 0:
 * the four big cores): max(compute, memory) + dispatch. terms may be NULL.
 * Deterministic; measures nothing. Bytes are those the kernel reads: an input's
 * dtype as given, except that an npu.Attention whose K and V are both caches the
 * NPU appends to in place (npu_partition_kv_read_in_place, graph g) reads them as
 * the fp16 rows the NPU holds (npu_cpu_attn16_decode); a caller pricing a compiled
 * program's step passes those inputs with their fp16 memory dtype instead. */
double npu_cpu_model_cost(const struct npu_graph *g, const struct npu_node *n, int threads,
                          struct npu_cpu_model_terms *terms);
/* Whether v, a K or V input of npu.Attention nodes, is the result of an in-place
 * npu.StateWrite on a state input (a KV cache the NPU appends to) that only such
 * attentions read: placed on the CPU, they read it where the NPU holds it, as fp16
 * rows (the lowering's attn_reads_state), so its crossing to the host is free. */
bool npu_partition_kv_read_in_place(const struct npu_value *v);
/* The model's host conversion rate, bytes of fp32 per second. */
double npu_cpu_model_convert_rate(void);

#ifdef __cplusplus
}
#endif

#endif /* NPU_PARTITION_H */
