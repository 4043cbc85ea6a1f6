/* SPDX-License-Identifier: MIT */
/*
 * npu-spm.h: a C interface to Debian's libsentencepiece (a C++ library) for
 * the text encoder (npu-text-encoder.c): load a SentencePiece .model file
 * (SigLIP's spiece.model, or one made by spm_train) and encode text to ids,
 * exactly as spm_encode --output_format=id does. Built only when
 * libsentencepiece-dev is found (HAVE_SENTENCEPIECE); without it loading a
 * .model file is refused with that reason.
 */
#ifndef NPU_SPM_H
#define NPU_SPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _GstNpuSpm GstNpuSpm;

/* NULL on failure, with *error (malloc'ed, caller frees) saying why. */
GstNpuSpm *gst_npu_spm_load (const char *path, char **error);
void gst_npu_spm_free (GstNpuSpm * spm);
/* Encodes len bytes of UTF-8; *ids is malloc'ed. 0 on success, else -1 with
 * *error set (malloc'ed). No special tokens are added. */
int gst_npu_spm_encode (const GstNpuSpm * spm, const char *text, size_t len,
    int32_t ** ids, size_t *n, char **error);
/* -1 when the model has none */
int32_t gst_npu_spm_eos (const GstNpuSpm * spm);
size_t gst_npu_spm_vocab_size (const GstNpuSpm * spm);

#ifdef __cplusplus
}
#endif

#endif /* NPU_SPM_H */
