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
 * the file (tests/fuzz/fuzz-npub.c).
 */
#ifndef NPU_NPUB_H
#define NPU_NPUB_H

#include <stddef.h>
#include <stdint.h>

#include "npu/npu-common.h"
#include "npu/npu-program.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_NPUB_FORMAT_VERSION 1

/* What the artifact records about how it was made. */
struct npu_npub_meta {
    uint64_t model_hash;      /* content hash of the source model (npu_cache_model_hash) */
    uint64_t options_hash;    /* hash of the compile options that matter */
    const char *options;      /* their text form, "" if none */
    const char *source;       /* source model file name, "" if unknown */
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
/* Same into a malloc'd buffer (free() it). */
enum npu_status npu_npub_encode(const struct npu_program *p, const struct npu_npub_meta *meta,
                                void **buf, size_t *len);

/* Loads and validates an artifact. err (may be NULL) receives the reason of a
 * refusal, which is also logged. */
enum npu_status npu_npub_load(const char *path, struct npu_npub **out, char *err, size_t err_len);
/* Flags of npu_npub_load_ex. */
enum npu_npub_load_flags {
    NPU_NPUB_QUIET = 1u << 0, /* do not log a refusal (err still says why) */
};
enum npu_status npu_npub_load_ex(const char *path, struct npu_npub **out, char *err,
                                 size_t err_len, unsigned flags);
/* Same from memory (the bytes are copied). */
enum npu_status npu_npub_decode(const void *data, size_t len, struct npu_npub **out, char *err,
                                size_t err_len);
const struct npu_program *npu_npub_program(const struct npu_npub *a);
const struct npu_npub_meta *npu_npub_get_meta(const struct npu_npub *a);
size_t npu_npub_file_bytes(const struct npu_npub *a);
void npu_npub_free(struct npu_npub *a);

/* Compiler version as a number and as text (compile-cache keys, artifacts). */
uint32_t npu_compiler_version(void);
const char *npu_compiler_version_str(void);

#ifdef __cplusplus
}
#endif

#endif /* NPU_NPUB_H */
