// SPDX-License-Identifier: MIT
/*
 * npu-tokenize: text to token ids and back with a Hugging Face tokenizer.json
 * (npu/npu-tokenizer.h), for people checking a tokenizer and for the tests.
 *
 *   npu-tokenize TOKENIZER.json|DIR [--no-special] [--tokens] TEXT    ids, one line
 *   npu-tokenize TOKENIZER.json|DIR --stdin                           text from stdin
 *   npu-tokenize TOKENIZER.json|DIR --decode [--skip-special] IDS     text (streamed)
 *   npu-tokenize TOKENIZER.json|DIR --info                            vocab size, BOS, EOS
 *
 * IDS are separated by commas and/or spaces. The decode streams through
 * npu_detok_push(), one id at a time, as npu-generate does.
 */
#include <npu/npu-tokenizer.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
usage(FILE *f)
{
    fprintf(f, "usage: npu-tokenize TOKENIZER.json|DIR [--no-special] [--tokens] TEXT\n"
               "       npu-tokenize TOKENIZER.json|DIR [--no-special] [--tokens] --stdin\n"
               "       npu-tokenize TOKENIZER.json|DIR --decode [--skip-special] IDS\n"
               "       npu-tokenize TOKENIZER.json|DIR --info\n"
               "Encodes TEXT to token ids (BOS etc. added unless --no-special), or decodes\n"
               "ids (separated by commas or spaces) to text.\n");
}

static char *
read_stdin(size_t *len)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, stdin);
        n += r;
        if (r == 0)
            break;
        if (n == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb)
                free(b);
            b = nb;
        }
    }
    *len = n;
    return b;
}

static int
decode(const struct npu_tokenizer *t, const char *arg, unsigned flags)
{
    struct npu_detok *d = npu_detok_new(t, flags);
    if (!d)
        return 1;
    const char *p = arg;
    int rc = 0;
    for (;;) {
        while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX) {
            fprintf(stderr, "npu-tokenize: '%.20s' is not a token id\n", p);
            rc = 1;
            goto out;
        }
        p = end;
        const char *s;
        size_t len;
        if (npu_detok_push(d, (int32_t)v, &s, &len)) {
            rc = 1;
            goto out;
        }
        fwrite(s, 1, len, stdout);
    }
    const char *s;
    size_t len;
    if (npu_detok_flush(d, &s, &len)) {
        rc = 1;
        goto out;
    }
    fwrite(s, 1, len, stdout);
    putchar('\n');
out:
    npu_detok_free(d);
    return rc;
}

int
main(int argc, char **argv)
{
    const char *path = NULL, *arg = NULL;
    int mode_decode = 0, info = 0, from_stdin = 0, add_special = 1, tokens = 0;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--decode"))
            mode_decode = 1;
        else if (!strcmp(argv[i], "--info"))
            info = 1;
        else if (!strcmp(argv[i], "--stdin"))
            from_stdin = 1;
        else if (!strcmp(argv[i], "--no-special"))
            add_special = 0;
        else if (!strcmp(argv[i], "--skip-special"))
            flags |= NPU_DETOK_SKIP_SPECIAL;
        else if (!strcmp(argv[i], "--tokens"))
            tokens = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--")) {
            if (i + 1 < argc)
                arg = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "npu-tokenize: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!path)
            path = argv[i];
        else if (!arg)
            arg = argv[i];
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!path || (!arg && !from_stdin && !info) || (mode_decode && from_stdin)) {
        usage(stderr);
        return 2;
    }
    struct npu_tokenizer *t;
    if (npu_tokenizer_load(path, &t))
        return 1;
    int rc = 0;
    if (info) {
        printf("vocab_size %zu\nbos %d\neos %d\n", npu_tokenizer_vocab_size(t),
               npu_tokenizer_bos(t), npu_tokenizer_eos(t));
    } else if (mode_decode) {
        rc = decode(t, arg, flags);
    } else {
        size_t len;
        char *text = from_stdin ? read_stdin(&len) : NULL;
        if (from_stdin && !text) {
            fprintf(stderr, "npu-tokenize: cannot read stdin\n");
            rc = 1;
        } else {
            int32_t *ids;
            size_t n;
            if (!text)
                len = strlen(arg);
            if (npu_tokenizer_encode(t, text ? text : arg, len, add_special, &ids, &n)) {
                rc = 1;
            } else {
                for (size_t i = 0; i < n; i++) {
                    if (tokens)
                        printf("%s%d:%s", i ? " " : "", ids[i],
                               npu_tokenizer_id_to_token(t, ids[i]));
                    else
                        printf("%s%d", i ? " " : "", ids[i]);
                }
                putchar('\n');
                free(ids);
            }
        }
        free(text);
    }
    npu_tokenizer_free(t);
    return rc;
}
