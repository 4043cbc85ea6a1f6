/* SPDX-License-Identifier: MIT */
/*
 * gen-text.h: text <-> token ids for npu-generate, the one place the
 * tokenizer plugs in: gen_text_encode() turns --prompt TEXT into ids and a
 * gen_text_stream turns new ids into text as they come (UTF-8 complete
 * characters only), both through the folder's tokenizer.json
 * (npu/npu-tokenizer.h).
 */
#ifndef NPU_GEN_TEXT_H
#define NPU_GEN_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "npu/npu-common.h"

/* text -> ids (malloc'd, *n entries) with the tokenizer of model_dir. */
enum npu_status gen_text_encode(const char *model_dir, const char *text, int32_t **ids, int *n);

struct gen_text_stream;
/* A decoder that writes to out; NULL (logged) on failure. Without a usable tokenizer it
 * writes the ids and says so on stderr (with the tokenizer's reason), unless quiet. */
struct gen_text_stream *gen_text_stream_open(const char *model_dir, FILE *out, bool quiet);
/* Writes what token completes (possibly nothing yet), flushing out. */
void gen_text_stream_push(struct gen_text_stream *s, int32_t id);
/* Writes what is left and a newline; frees s. */
void gen_text_stream_close(struct gen_text_stream *s);

#endif /* NPU_GEN_TEXT_H */
