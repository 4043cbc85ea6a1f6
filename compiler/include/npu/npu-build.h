/* SPDX-License-Identifier: MIT */
/*
 * npu-build.h: from a model file to a compiled program, the way the model
 * API's NPU backends, npuc and npu-bench do it:
 *
 *   .npub                 loaded and validated (npu-npub.h)
 *   .onnx / .npuir        compile cache lookup; on a miss: import, front-end
 *                         passes (npu_compile), partitioning by cost
 *                         (npu-partition.h), lowering (npu_lower_graph),
 *                         codegen (npu_codegen), then the cache entry is
 *                         written
 *
 * The compile cache (docs/npub-format.md, docs/performance.md) is a folder of
 * .npub files named by a 64-bit key over the model's content hash (the file's
 * bytes and every external-data file it names), the compiler version, the
 * program and format versions, and the options that change the program.
 * Entries are written atomically; an entry that fails to load (damaged,
 * other version, other model) is ignored, rebuilt and replaced.
 */
#ifndef NPU_BUILD_H
#define NPU_BUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "npu/npu-backend.h"
#include "npu/npu-model.h"
#include "npu/npu-partition.h"
#include "npu/npu-program.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_npub; /* npu/npu-npub.h */

/* Environment variable naming the compile cache folder when the caller gives
 * none. */
#define NPU_CACHE_ENV "NPU_CACHE_DIR"
/* Environment variable overriding the default partitioning mode: "cost"
 * (default), "supported" (every node an NPU handler takes goes to the NPU;
 * what the accuracy tests use so that the NPU really computes), "cpu". */
#define NPU_PARTITION_ENV "NPU_PARTITION"

struct npu_build_options {
    const char *dim_values; /* symbolic input dims ("batch=2") */
    bool strict_dims;       /* an unknown name in dim_values is an error (npu-model.h) */
    const char *cache_dir;  /* NULL: $NPU_CACHE_DIR if set, else no cache */
    bool no_cache;          /* ignore the cache even if configured */
    int cpu_threads;        /* CPU op threads (partitioning measures with them) */
    enum npu_partition_mode partition;
    struct npu_backend_options backend;
    bool no_fusion; /* front-end fusions off */
    /* CPU cost model of partitioning by cost (npu-partition.h): auto (the
     * default: $NPU_CPU_COST, else measured when on_device, else board),
     * board or measured. Part of the cache key. */
    enum npu_cpu_cost_mode cpu_cost;
    bool on_device; /* the program will run next to a real NPU device (rknpu,
                     * rocket), so this host is the board's CPU */
    /* Print the IR after these passes, front end's or back end's ("all" or a
     * comma list; npuc --dump-after) to dump_file (NULL = stderr). */
    const char *dump_after;
    FILE *dump_file;
    /* Outputs for tools (may be NULL): */
    FILE *emit_ir;                       /* the lowered IR in text form (route b) */
    struct npu_partition_report *report; /* the partition decisions */
    /* Called with the lowered graph after codegen (a real compile only, not
     * on a cache hit or for a .npub); npu-bench reads per-node estimates. */
    void (*on_lowered)(const struct npu_graph *g, const struct npu_program *p, void *user);
    void *on_lowered_user;
    /* Called on the graph after the front-end passes, before the back end (npuc
     * --quantize runs the quantiser here, npu/npu-quant.h); a failure fails the
     * build. The compile cache is not used when set (the cache key does not
     * cover what the hook does). */
    enum npu_status (*transform)(struct npu_graph *g, void *user);
    void *transform_user;
};

/* ---- the back-end pipeline (npu-be-pipeline.c) -------------------------------------- */

struct npu_backend_compile_options {
    const struct npu_backend_options *backend;     /* NULL = defaults */
    const struct npu_partition_options *partition; /* NULL = every supported node on the NPU */
    struct npu_partition_report *report;           /* the partition's decisions (may be NULL) */
    /* Print the IR after these back-end passes: "all" or a comma list of
     * npu_backend_pass_names() (NULL: none), to dump_file (NULL = stderr). */
    const char *dump_after;
    FILE *dump_file;
    int verify;    /* > 0: verify the graph after each pass */
    FILE *emit_ir; /* the lowered IR in text form, before codegen (npuc --emit=ir) */
    /* the caller frees g right after: codegen gives each lowered constant's memory back
     * once it is in the program (npu_codegen_ex, NPU_CODEGEN_RELEASE_CONSTS) */
    bool release_consts;
};

/* The back end's passes in order (partition, centre_streams, lower,
 * prune_boundaries, widen_outputs), then codegen. g is modified. */
enum npu_status npu_backend_compile(struct npu_graph *g,
                                    const struct npu_backend_compile_options *o,
                                    struct npu_program **out);
/* Names of the back end's graph passes, NULL-terminated (for --dump-after). */
const char *const *npu_backend_pass_names(void);

struct npu_built {
    const struct npu_program *prog;
    bool from_cache;  /* the program came from the compile cache */
    bool from_npub;   /* the model file was an artifact */
    double compile_s; /* wall time of import + compile (0 when loaded) */
    double load_s;    /* wall time of the whole call */
    uint64_t model_hash, options_hash;
    char cache_path[1024]; /* the entry used or written, "" without a cache */
    /* model metadata (ONNX metadata_props; from the artifact for a .npub or a
     * cache hit), n_props entries; write them into any artifact made of prog */
    const struct npu_model_prop *props;
    uint32_t n_props;
    /* private */
    struct npu_program *owned;          /* from npu_codegen */
    struct npu_npub *art;               /* from a .npub */
    struct npu_model_prop *owned_props; /* read from the .onnx */
};

enum npu_status npu_build(const char *path, const struct npu_build_options *o,
                          struct npu_built **out);
void npu_built_free(struct npu_built *b);
/* Compiles an IR graph built in memory (taken: freed on return, success or
 * not) through the same passes as a model file, without the compile cache
 * (the graph has no file to hash). name is for messages. */
enum npu_status npu_build_graph(struct npu_graph *g, const char *name,
                                const struct npu_build_options *o, struct npu_built **out);

/* Content hash of a model: XXH64 over the file and every external-data file
 * its initializers name (in order, with their names). */
enum npu_status npu_model_content_hash(const char *path, uint64_t *out);
/* Hash of the options that change the compiled program, and their text. */
uint64_t npu_build_options_hash(const struct npu_build_options *o, char *text, size_t len);
/* The partitioning mode these options and the environment give. */
enum npu_partition_mode npu_build_partition_mode(const struct npu_build_options *o);
/* The CPU cost model these options and the environment give (board or
 * measured; NPU_ERR_INVALID, logged, for a bad $NPU_CPU_COST). */
enum npu_status npu_build_cpu_cost_mode(const struct npu_build_options *o,
                                        enum npu_cpu_cost_mode *out);
/* The cache folder these options use (NULL: none). */
const char *npu_build_cache_dir(const struct npu_build_options *o);

#ifdef __cplusplus
}
#endif

#endif /* NPU_BUILD_H */
