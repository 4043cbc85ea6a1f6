// SPDX-License-Identifier: MIT
/*
 * gen-text.c: npu-generate's text side (gen-text.h) for a build without a
 * tokenizer: --prompt TEXT is refused with a clear message, and the output
 * stream prints token ids separated by spaces (said once on stderr).
 * The tokenizer library replaces these three functions.
 */
#include "gen-text.h"

#include <stdlib.h>

struct gen_text_stream {
    FILE *out;
    int n;
};

enum npu_status
gen_text_encode(const char *model_dir, const char *text, int32_t **ids, int *n)
{
    (void)model_dir;
    (void)text;
    *ids = NULL;
    *n = 0;
    fprintf(stderr, "npu-generate: this build has no tokenizer yet; use --prompt-ids\n");
    return NPU_ERR_UNSUPPORTED;
}

struct gen_text_stream *
gen_text_stream_open(const char *model_dir, FILE *out)
{
    (void)model_dir;
    struct gen_text_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->out = out;
    fprintf(stderr, "npu-generate: this build has no tokenizer yet: the output is token ids\n");
    return s;
}

void
gen_text_stream_push(struct gen_text_stream *s, int32_t id)
{
    fprintf(s->out, "%s%d", s->n++ ? " " : "", id);
    fflush(s->out);
}

void
gen_text_stream_close(struct gen_text_stream *s)
{
    if (!s)
        return;
    fputc('\n', s->out);
    fflush(s->out);
    free(s);
}
