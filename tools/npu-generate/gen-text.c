// SPDX-License-Identifier: MIT
/*
 * gen-text.c: npu-generate's text side (gen-text.h) on the tokenizer library
 * (npu/npu-tokenizer.h). --prompt TEXT is encoded with the model folder's
 * tokenizer.json, BOS added as its post-processor template says. New ids
 * stream out as complete UTF-8 characters (special tokens such as EOS
 * skipped, the leading space of a continuation kept). A folder without a
 * usable tokenizer still generates: the stream then prints the token ids
 * themselves, and says so once on stderr with the tokenizer's reason.
 */
#include "gen-text.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npu/npu-tokenizer.h"

struct gen_text_stream {
    FILE *out;
    struct npu_tokenizer *tok; /* NULL: print ids */
    struct npu_detok *detok;
    int n;
};

/* The folder the tokenizer files are in: model_dir, or for a hub cache folder
 * (models--org--name, as the checkpoint loader follows it) its refs/main snapshot. */
static const char *
tokenizer_dir(const char *model_dir, char *buf, size_t size)
{
    struct stat sb;
    char ref[256] = "";
    snprintf(buf, size, "%s/tokenizer.json", model_dir);
    if (!stat(buf, &sb))
        return model_dir;
    snprintf(buf, size, "%s/refs/main", model_dir);
    FILE *f = fopen(buf, "r");
    if (f) {
        if (!fgets(ref, sizeof(ref), f))
            ref[0] = 0;
        fclose(f);
        ref[strcspn(ref, "\r\n")] = 0;
    }
    int w = snprintf(buf, size, "%s/snapshots/%s", model_dir, ref);
    if (!ref[0] || strchr(ref, '/') || w < 0 || (size_t)w >= size || stat(buf, &sb))
        return model_dir;
    return buf;
}

enum npu_status
gen_text_encode(const char *model_dir, const char *text, int32_t **ids, int *n)
{
    struct npu_tokenizer *t = NULL;
    size_t len = 0;
    enum npu_status st;

    char buf[4096];
    *ids = NULL;
    *n = 0;
    st = npu_tokenizer_load(tokenizer_dir(model_dir, buf, sizeof(buf)), &t);
    if (st != NPU_OK) {
        fprintf(stderr, "npu-generate: --prompt needs the model folder's tokenizer.json "
                        "(or use --prompt-ids)\n");
        return st;
    }
    st = npu_tokenizer_encode(t, text, strlen(text), 1, ids, &len);
    npu_tokenizer_free(t);
    if (st != NPU_OK)
        return st;
    *n = (int)len;
    return NPU_OK;
}

/* --quiet: the tokenizer's reason for a missing or unusable tokenizer.json is a notice here
 * (the stream prints ids instead), not an error */
static void
drop_log(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)level;
    (void)domain;
    (void)msg;
    (void)user;
}

struct gen_text_stream *
gen_text_stream_open(const char *model_dir, FILE *out, bool quiet)
{
    struct gen_text_stream *s = calloc(1, sizeof(*s));
    enum npu_status st;

    if (!s)
        return NULL;
    char buf[4096];
    s->out = out;
    if (quiet)
        npu_log_set_handler(drop_log, NULL);
    st = npu_tokenizer_load(tokenizer_dir(model_dir, buf, sizeof(buf)), &s->tok);
    if (quiet)
        npu_log_set_handler(NULL, NULL);
    if (st != NPU_OK) {
        s->tok = NULL;
        if (!quiet)
            fprintf(stderr,
                    "npu-generate: no usable tokenizer in %s (above): the output is "
                    "token ids\n",
                    model_dir);
        return s;
    }
    s->detok = npu_detok_new(s->tok, NPU_DETOK_SKIP_SPECIAL | NPU_DETOK_CONTINUATION);
    if (!s->detok) {
        npu_tokenizer_free(s->tok);
        free(s);
        return NULL;
    }
    return s;
}

void
gen_text_stream_push(struct gen_text_stream *s, int32_t id)
{
    const char *p;
    size_t len;

    if (!s->tok) {
        fprintf(s->out, "%s%d", s->n++ ? " " : "", id);
    } else if (npu_detok_push(s->detok, id, &p, &len) == NPU_OK && len) {
        fwrite(p, 1, len, s->out);
    }
    fflush(s->out);
}

void
gen_text_stream_close(struct gen_text_stream *s)
{
    const char *p;
    size_t len;

    if (!s)
        return;
    if (s->detok && npu_detok_flush(s->detok, &p, &len) == NPU_OK && len)
        fwrite(p, 1, len, s->out);
    fputc('\n', s->out);
    fflush(s->out);
    npu_detok_free(s->detok);
    npu_tokenizer_free(s->tok);
    free(s);
}
