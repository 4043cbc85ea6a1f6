/* SPDX-License-Identifier: MIT */
/*
 * npu-npub.h: the compiled artifact (.npub, docs/npub-format.md). An artifact
 * holds exactly one struct npu_program (npu-program.h) - packed weights,
 * regcmd images with their relocation tables and task descriptors, CPU steps
 * (op name, attributes, tensor indices), conversions, tensor and I/O
 * descriptions - in a versioned, checksummed container (XXH64 per section and
 * over the whole file).
 *
 * Loading treats the file as hostile: every offset, size, count, index, enum
 * value, string and relocation is checked before use, the program is then
 * checked as a whole (npu_program_validate) and every CPU step's output
 * shapes are re-inferred from its inputs and attributes; a bad file is refused
 * with NPU_ERR_CORRUPT (NPU_ERR_VERSION for a format from another version) and
 * a message naming the field. No input makes the loader crash or read outside
 * the file (tests/artifact/fuzz-npub.c).
 */
#ifndef NPU_NPUB_H
#define NPU_NPUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"
#include "npu/npu-model.h"
#include "npu/npu-program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest format this build reads and writes. The writer uses the oldest
 * version that can hold the artifact: 1 without model metadata (such a file
 * is exactly what earlier builds wrote and read), 2 with a PROPS section, 3
 * when the program has state (NPU_BUF_STATE) or run-time positioned
 * relocations (npu_prog_dynreloc). */
#define NPU_NPUB_FORMAT_VERSION 3
#define NPU_NPUB_FORMAT_MIN 1

/* Bounds on the model metadata (ONNX metadata_props) an artifact carries:
 * the writer refuses a list beyond them, the loader refuses a file beyond
 * them, and npu_npub_props_from_onnx leaves such entries out. Sizes in bytes
 * without the terminating NUL. */
#define NPU_NPUB_MAX_PROPS 256u
#define NPU_NPUB_MAX_PROP_KEY 256u
#define NPU_NPUB_MAX_PROP_VALUE 65536u
#define NPU_NPUB_MAX_PROPS_BYTES (1u << 20) /* every key and value together */

/* What the artifact records about how it was made. */
struct npu_npub_meta {
    uint64_t model_hash;   /* content hash of the source model (npu_cache_model_hash) */
    uint64_t options_hash; /* hash of the compile options that matter */
    const char *options;   /* their text form, "" if none */
    const char *source;    /* source model file name, "" if unknown */
    /* model metadata (npu-model.h), n_props entries; none: NULL, 0 */
    const struct npu_model_prop *props;
    uint32_t n_props;
    /* Filled by the loader: */
    uint32_t format_version;
    uint32_t compiler_version; /* major * 10000 + minor * 100 + patch */
    const char *compiler;      /* "opennpu 0.1.0" */
};

struct npu_npub;

/* Writes p to path atomically (a temporary file in the same folder, flushed,
 * then renamed over path). meta may be NULL. */
enum npu_status npu_npub_save(const struct npu_program *p, const struct npu_npub_meta *meta,
                              const char *path);
/* npu_npub_save with flags (NPU_NPUB_QUIET: a failure is logged as a warning). */
enum npu_status npu_npub_save_ex(const struct npu_program *p, const struct npu_npub_meta *meta,
                                 const char *path, unsigned flags);
/* Same into a malloc'd buffer (free() it). */
enum npu_status npu_npub_encode(const struct npu_program *p, const struct npu_npub_meta *meta,
                                void **buf, size_t *len);

/* Loads and validates an artifact. err (may be NULL) receives the reason of a
 * refusal, which is also logged. */
enum npu_status npu_npub_load(const char *path, struct npu_npub **out, char *err, size_t err_len);
/* Flags of npu_npub_load_ex and npu_npub_save_ex. */
enum npu_npub_load_flags {
    /* load: do not log a refusal (err still says why); save: log a file-system
     * failure as a warning (an optional write such as the compile cache) */
    NPU_NPUB_QUIET = 1u << 0,
};
enum npu_status npu_npub_load_ex(const char *path, struct npu_npub **out, char *err, size_t err_len,
                                 unsigned flags);
/* Same from memory (the bytes are copied). */
enum npu_status npu_npub_decode(const void *data, size_t len, struct npu_npub **out, char *err,
                                size_t err_len);
const struct npu_program *npu_npub_program(const struct npu_npub *a);
const struct npu_npub_meta *npu_npub_get_meta(const struct npu_npub *a);
size_t npu_npub_file_bytes(const struct npu_npub *a);
void npu_npub_free(struct npu_npub *a);

/* Checks a metadata list against the bounds above (keys non-empty and
 * unique); false with the reason in err (may be NULL). */
bool npu_npub_props_check(const struct npu_model_prop *v, uint32_t n, char *err, size_t err_len);
/* An ONNX model's metadata_props (ModelProto field 14), read from the top
 * level of its bytes without parsing the graph (fields are skipped by their
 * lengths, so the cost does not grow with the weights). Entries that break
 * the bounds (empty, over-long or NUL-containing strings, a repeated key:
 * the first wins, more than NPU_NPUB_MAX_PROPS) are left out with a warning
 * naming the key. *out is one malloc'd block (array and strings; free() it),
 * NULL when *n is 0. NPU_ERR_CORRUPT when the top level is not protobuf. */
enum npu_status npu_npub_props_from_onnx(const void *data, size_t len, struct npu_model_prop **out,
                                         uint32_t *n);
/* Same on a file (memory-mapped); NPU_ERR_IO when it cannot be read. */
enum npu_status npu_npub_props_from_onnx_file(const char *path, struct npu_model_prop **out,
                                              uint32_t *n);

/* Compiler version as a number and as text (compile-cache keys, artifacts). */
uint32_t npu_compiler_version(void);
const char *npu_compiler_version_str(void);
/* The running compiler's build identity: a hash of the linker's GNU build ID of the binary
 * that holds the compiler (0 when the toolchain wrote none). Part of every compile-cache key,
 * so a rebuilt compiler never reuses programs an older build compiled. */
uint64_t npu_compiler_build_id(void);

#ifdef __cplusplus
}
#endif

#endif /* NPU_NPUB_H */
