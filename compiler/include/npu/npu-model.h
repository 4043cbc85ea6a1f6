/* SPDX-License-Identifier: MIT */
/*
 * npu-model.h: the model API that tools (npu-run, npu-bench), the GStreamer
 * elements and applications use. A model is loaded once (from .onnx, compiled
 * on load, or from a compiled .npub artifact); a session is one execution slot
 * (its own activation and I/O buffers, bound to one NPU core) that runs the
 * model. Different sessions of one model may run concurrently from different
 * threads; one session is used by one thread at a time.
 *
 * Implemented in compiler/ (libopennpu); backend names: "cpu" (CPU executor
 * only), "sim" (built-in NPU simulator), "rknpu", "rocket", "auto".
 */
#ifndef NPU_MODEL_H
#define NPU_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "npu/npu-common.h"
#include "npu/npu-tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct npu_model;
struct npu_session;

struct npu_model_options {
    const char *backend;   /* NULL = "auto" */
    const char *cache_dir; /* compiled-artifact cache; NULL = no cache */
    uint32_t core_mask;    /* NPU cores sessions may use; 0 = all */
    int cpu_threads;       /* threads for CPU ops; 0 = number of CPUs */
    /* Concrete sizes for symbolic input dims ("batch=1,seq=64"; also
     * "<input>:<axis>=N", see npu-onnx.h); unnamed or unlisted symbolic dims
     * default to 1. NULL = all defaults. */
    const char *dim_values;
    /* Refuse a plain name in dim_values that is no symbolic dim of the
     * model's inputs (what a user typed: npu-run, npuc). Off, such a name is
     * logged at info level and ignored (callers that pass one spec to many
     * models). */
    bool strict_dims;
    /* Register-pattern profile of the compile (enum npu_hw_profile,
     * npu-backend.h): 0 = auto ($NPU_HW_PROFILE, else verified on rknpu and
     * rocket, fast on sim); docs/evidence.md "Compile profiles". */
    int hw_profile;
    /* Compile for the layer split over several cores (npu_backend_options.layer_split:
     * NPU activations not reused within a job, products' sums not folded). */
    bool layer_split;
};

struct npu_io_info {
    const char *name;
    enum npu_dtype dtype;
    int ndim;
    int64_t dims[NPU_MAX_DIMS]; /* concrete (after dim_values were applied) */
};

struct npu_run_stats {
    double wall_s;           /* host wall time of the whole run */
    double cpu_s;            /* host time spent in CPU ops */
    double npu_modeled_s;    /* modeled NPU time, timing model v1 (0 on the cpu backend) */
    unsigned submits, tasks; /* NPU jobs and tasks */
    uint64_t dma_bytes;      /* modeled DMA traffic */
    double mac_utilisation;  /* useful MACs / (peak MAC rate * npu_modeled_s) */
};

/* Loads (and compiles, for .onnx) a model. On failure returns an error status
 * and logs the reason; *out is left NULL. */
enum npu_status npu_model_load(const char *path, const struct npu_model_options *opts,
                               struct npu_model **out);
void npu_model_free(struct npu_model *m);

int npu_model_num_inputs(const struct npu_model *m);
int npu_model_num_outputs(const struct npu_model *m);
/* Pointers stay valid for the model's lifetime. */
const struct npu_io_info *npu_model_input(const struct npu_model *m, int i);
const struct npu_io_info *npu_model_output(const struct npu_model *m, int i);
/* "cpu", "sim", ...: the backend the model actually runs on. */
const char *npu_model_backend(const struct npu_model *m);

/*
 * The model's metadata: the source ONNX model's metadata_props (key/value
 * strings such as preprocessing hints, "image_mean" = "[0.5, 0.5, 0.5]"),
 * carried into .npub artifacts by the compiler (docs/npub-format.md, section
 * PROPS), so an artifact and its .onnx give the same list. Entries are in the
 * source's order; keys are unique and non-empty. A model from .npuir text, or
 * an .onnx without metadata_props, has none. Entries larger than the
 * artifact's bounds (npu-npub.h: NPU_NPUB_MAX_PROP_*) are left out, with a
 * warning, whichever the file type.
 */
struct npu_model_prop {
    const char *key;
    const char *value;
};
int npu_model_num_props(const struct npu_model *m);
/* Entry i (0 <= i < npu_model_num_props), NULL when out of range; valid for
 * the model's lifetime. */
const struct npu_model_prop *npu_model_prop(const struct npu_model *m, int i);
/* The value of key (exact, case-sensitive match), NULL when absent. */
const char *npu_model_prop_value(const struct npu_model *m, const char *key);

/* core: the NPU core this session's jobs go to (0..2); ignored by "cpu". */
enum npu_status npu_session_create(struct npu_model *m, int core, struct npu_session **out);
void npu_session_destroy(struct npu_session *s);

/*
 * Runs the model once. inputs[i] must match npu_model_input(i) in dtype and
 * shape, data in row-major (NCHW) order. On success outputs[i] (caller's
 * array of npu_model_num_outputs entries) are views of session-owned memory,
 * valid until the next run or npu_session_destroy. stats may be NULL.
 */
enum npu_status npu_session_run(struct npu_session *s, const struct npu_tensor *inputs, int nin,
                                struct npu_tensor *outputs, int nout, struct npu_run_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* NPU_MODEL_H */
