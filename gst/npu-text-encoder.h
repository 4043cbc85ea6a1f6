/* SPDX-License-Identifier: MIT */
/*
 * npu-text-encoder.h: a text encoder (the text tower of CLIP or SigLIP) run
 * through the model API (npu/npu-model.h) on any backend, with its tokenizer:
 * text in, one L2-normalised embedding out. npuembed uses it for zero-shot
 * label embeddings (text-model, tokenizer) and npu-embed-store for
 * `query --text`. GLib, no GStreamer.
 *
 * The model: one integer input of shape [1, L] (named input_ids, or the
 * first input), optionally a second one named attention_mask (1 for tokens,
 * 0 for padding); a symbolic batch axis is 1 and a symbolic sequence axis
 * L = 77 with a tokenizer.json (CLIP), 64 with SentencePiece (SigLIP), the
 * lengths transformers pads to, unless the options' dim_values say else; the embedding is the output named text_embeds,
 * pooler_output, embeddings or embedding (else output 0) of shape [1, D],
 * or a per-token output [1, L, D] that is pooled here: at the first EOS for a
 * BPE (CLIP) tokenizer, the last position for SentencePiece (SigLIP).
 *
 * The tokenizer: a Hugging Face tokenizer.json (or its folder) through
 * npu/npu-tokenizer.h, CLIP-style (BOS + text + EOS); or a SentencePiece
 * .model (or a folder holding spiece.model and no tokenizer.json) through
 * libsentencepiece, SigLIP-style (text lowercased, ASCII
 * punctuation removed, runs of white space made one space, then the model's
 * pieces + EOS). Ids are padded to L with the EOS (as transformers pads
 * both: CLIP's pad token and SigLIP's are their EOS) and truncated to L
 * keeping the final EOS.
 */
#ifndef NPU_TEXT_ENCODER_H
#define NPU_TEXT_ENCODER_H

#include <glib.h>

#include "npu/npu-model.h"

G_BEGIN_DECLS

typedef struct _GstNpuTextEncoder GstNpuTextEncoder;

typedef enum
{
  GST_NPU_TEXT_TOKENIZER_JSON,  /* tokenizer.json (CLIP) */
  GST_NPU_TEXT_TOKENIZER_SPM,   /* SentencePiece .model (SigLIP) */
} GstNpuTextTokenizerKind;

#define GST_NPU_TEXT_ENCODER_ERROR (gst_npu_text_encoder_error_quark ())
GQuark gst_npu_text_encoder_error_quark (void);

/* opts: backend, cache and the like (NULL: auto). */
GstNpuTextEncoder *gst_npu_text_encoder_new (const gchar * model_path,
    const gchar * tokenizer_path, const struct npu_model_options *opts,
    GError ** error);
void gst_npu_text_encoder_free (GstNpuTextEncoder * enc);

guint gst_npu_text_encoder_dims (const GstNpuTextEncoder * enc);
guint gst_npu_text_encoder_seq_len (const GstNpuTextEncoder * enc);
GstNpuTextTokenizerKind gst_npu_text_encoder_kind (const GstNpuTextEncoder *
    enc);
const gchar *gst_npu_text_encoder_backend (const GstNpuTextEncoder * enc);

/* The L ids the model is given for text (padded / truncated); *n_tokens:
 * how many are not padding. ids has seq_len entries. */
gboolean gst_npu_text_encoder_tokenize (const GstNpuTextEncoder * enc,
    const gchar * text, gint32 * ids, guint * n_tokens, GError ** error);

/* The L2-normalised embedding of text into out (dims floats). */
gboolean gst_npu_text_encoder_encode (GstNpuTextEncoder * enc,
    const gchar * text, gfloat * out, GError ** error);

/* The same for token ids already made (specials included), padded with EOS
 * to L (a longer list is cut keeping its last id); ids outside the
 * tokenizer's vocabulary are refused. */
gboolean gst_npu_text_encoder_encode_ids (GstNpuTextEncoder * enc,
    const gint32 * ids, guint n_ids, gfloat * out, GError ** error);

G_END_DECLS

#endif /* NPU_TEXT_ENCODER_H */
