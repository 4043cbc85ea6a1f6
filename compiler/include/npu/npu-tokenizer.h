/* SPDX-License-Identifier: MIT */
/*
 * npu-tokenizer.h: text to token ids and back, from a Hugging Face
 * tokenizer.json (docs/tokenizers.md).
 *
 * Supported: model "BPE" (vocab + merges in either format, "a b" strings or
 * ["a", "b"] pairs; byte_fallback, fuse_unk, ignore_merges, end_of_word_suffix),
 * added_tokens (split out of the text before normalisation, lstrip/rstrip
 * honoured), the normalizers Prepend, Replace (string or regex), NFC (with ICU), Lowercase and
 * Sequence, the pre-tokenizers ByteLevel (GPT-2 regex), Split (a regex such as LLaMA-3's or
 * Qwen2's, through PCRE2), Metaspace, Digits and Sequence, the decoders
 * ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip and Sequence, and
 * the post-processors TemplateProcessing, ByteLevel, RobertaProcessing,
 * BertProcessing and Sequence. That covers GPT-2, Qwen2, LLaMA-3 and SmolLM
 * (byte-level BPE) and LLaMA-2 / TinyLlama (SentencePiece-style BPE with byte
 * fallback) and CLIP (BPE with "</w>"). Anything else is refused at load with an error naming the
 * field.
 *
 *   struct npu_tokenizer *t;
 *   npu_tokenizer_load("model-dir", &t);             // or ".../tokenizer.json"
 *   npu_tokenizer_encode(t, text, strlen(text), 1, &ids, &n);   // 1: add BOS etc.
 *   struct npu_detok *d = npu_detok_new(t, NPU_DETOK_SKIP_SPECIAL);
 *   for each generated id: npu_detok_push(d, id, &s, &len); fwrite(s, 1, len, stdout);
 *   npu_detok_flush(d, &s, &len); ...; npu_detok_free(d);
 *
 * A tokenizer is immutable after load and may be shared between threads; a
 * detokenizer belongs to one stream.
 */
#ifndef NPU_TOKENIZER_H
#define NPU_TOKENIZER_H

#include <npu/npu-common.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct npu_tokenizer;

/* path: a tokenizer.json, or a folder holding one (a model folder). From the
 * folder, tokenizer_config.json (bos_token, eos_token) and config.json
 * (bos_token_id, eos_token_id) are read when present to name BOS and EOS; where
 * tokenizer_config.json says add_bos_token or add_eos_token, the special tokens
 * encode adds are BOS (if true) and EOS (if true) around the text, as Python
 * transformers rebuilds the post-processor, not tokenizer.json's template. */
enum npu_status npu_tokenizer_load(const char *path, struct npu_tokenizer **out);
/* The same from a tokenizer.json already in memory (no folder, no side files). */
enum npu_status npu_tokenizer_load_json(const char *json, size_t len, struct npu_tokenizer **out);
void npu_tokenizer_free(struct npu_tokenizer *t);

/* Encodes len bytes of UTF-8 text (invalid UTF-8 is refused, naming the byte
 * offset). add_special: apply the post-processor (BOS and the like) as
 * Hugging Face's encode(add_special_tokens=True) does. Special tokens written
 * in the text ("<|endoftext|>") are always recognised. *ids is malloc'ed; the
 * caller frees it. */
enum npu_status npu_tokenizer_encode(const struct npu_tokenizer *t, const char *text, size_t len,
                                     int add_special, int32_t **ids, size_t *n);

/* Ids for BOS and EOS, or -1 when the tokenizer names none. */
int32_t npu_tokenizer_bos(const struct npu_tokenizer *t);
int32_t npu_tokenizer_eos(const struct npu_tokenizer *t);
/* One past the largest id (model vocabulary and added tokens). */
size_t npu_tokenizer_vocab_size(const struct npu_tokenizer *t);
/* The token's string as the vocabulary spells it ("Ġthe", "▁the", "<0x0A>"),
 * NUL-terminated, or NULL for an id not in use. */
const char *npu_tokenizer_id_to_token(const struct npu_tokenizer *t, int32_t id);
/* Whether the id is an added token marked special (BOS, EOS, <|im_end|>, ...). */
int npu_tokenizer_is_special(const struct npu_tokenizer *t, int32_t id);

/* Streaming decode: ids go in one at a time; what comes out is always valid
 * UTF-8, bytes of an incomplete character are held until it completes. Bytes
 * that cannot become valid UTF-8 come out as U+FFFD, one per maximal invalid
 * sequence (as Rust's from_utf8_lossy). */
struct npu_detok;

enum npu_detok_flags {
    /* Special added tokens produce no text (skip_special_tokens=True). */
    NPU_DETOK_SKIP_SPECIAL = 1u << 0,
    /* The stream continues text decoded before (generated tokens after a
     * prompt): keep the spaces that SentencePiece-style decoders remove
     * from the start (Strip: leading spaces; Metaspace: the first token's). */
    NPU_DETOK_CONTINUATION = 1u << 1,
};

struct npu_detok *npu_detok_new(const struct npu_tokenizer *t, unsigned flags);
/* Adds one id. *out points to the text completed by it (*len bytes, also
 * NUL-terminated; valid until the next call on d); often empty. An id
 * outside the vocabulary is NPU_ERR_INVALID. */
enum npu_status npu_detok_push(struct npu_detok *d, int32_t id, const char **out, size_t *len);
/* Ends the stream: bytes still held come out (as U+FFFD, being incomplete).
 * The detokenizer may then start a new stream. */
enum npu_status npu_detok_flush(struct npu_detok *d, const char **out, size_t *len);
void npu_detok_free(struct npu_detok *d);

/* Convenience: decodes a whole id list into malloc'ed, NUL-terminated text. */
enum npu_status npu_tokenizer_decode(const struct npu_tokenizer *t, const int32_t *ids, size_t n,
                                     unsigned flags, char **text, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* NPU_TOKENIZER_H */
