/* SPDX-License-Identifier: MIT */
/*
 * generate.c: an application of the language-model API (npu/npu-llm.h),
 * built against the installed library with pkg-config (Makefile beside it).
 * It loads a Hugging Face checkpoint folder on the backend -b names (default
 * "sim"), generates up to 16 tokens greedily after the prompt's ids with a
 * callback that prints each token id as it comes, then continues the same
 * conversation with 4 more tokens (the KV cache keeps the context), resets
 * and generates again from the prompt, which gives the first run's ids.
 *
 *   generate [-b BACKEND] MODEL_DIR ID,ID,...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <npu/npu-llm.h>

struct seen {
    int32_t ids[64];
    int n;
};

/* Called once per new token; returning nonzero would stop the generation. */
static int
on_token(int32_t token, const float *logits, void *user)
{
    struct seen *s = user;
    (void)logits;
    if (s->n < 64)
        s->ids[s->n++] = token;
    printf(" %d", token);
    fflush(stdout);
    return 0;
}

int
main(int argc, char **argv)
{
    const char *backend = "sim";
    int a = 1;
    if (a + 1 < argc && !strcmp(argv[a], "-b")) {
        backend = argv[a + 1];
        a += 2;
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: generate [-b BACKEND] MODEL_DIR ID,ID,...\n");
        return 2;
    }
    int32_t prompt[256];
    int n = 0;
    for (char *p = argv[a + 1]; *p && n < 256;) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || v < 0) {
            fprintf(stderr, "generate: '%s' is not a list of token ids\n", argv[a + 1]);
            return 2;
        }
        prompt[n++] = (int32_t)v;
        p = *e == ',' ? e + 1 : e;
    }
    struct npu_llm_options o = {.backend = backend, .max_context = 64};
    struct npu_llm *m;
    enum npu_status st = npu_llm_load(argv[a], &o, &m);
    if (st) {
        fprintf(stderr, "generate: %s: %s\n", argv[a], npu_status_str(st));
        return 1;
    }
    const struct npu_llm_info *in = npu_llm_get_info(m);
    printf("%s on %s, KV cache %zu bytes\n", in->architecture, in->backend, in->kv_cache_bytes);

    struct seen first = {0}, more = {0}, again = {0};
    struct npu_llm_stats s;
    printf("first:");
    st = npu_llm_generate(m, prompt, n, 16, NULL, NULL, on_token, &first, &s);
    printf("\n  (%d new tokens, stopped: %s)\n", s.new_tokens, npu_llm_stop_name(s.stop));
    if (!st) {
        /* continue the context: no new prompt tokens, 4 more */
        printf("more:");
        st = npu_llm_generate(m, NULL, 0, 4, NULL, NULL, on_token, &more, &s);
        printf("\n  (context now %d tokens)\n", npu_llm_context_length(m));
    }
    if (!st) {
        npu_llm_reset(m);
        printf("again:");
        st = npu_llm_generate(m, prompt, n, 16, NULL, NULL, on_token, &again, &s);
        printf("\n");
    }
    if (!st && (again.n != first.n || memcmp(again.ids, first.ids, sizeof(int32_t) * first.n))) {
        fprintf(stderr, "generate: after a reset the ids differ from the first run\n");
        st = NPU_ERR_INTERNAL;
    }
    npu_llm_free(m);
    if (st)
        fprintf(stderr, "generate: %s\n", npu_status_str(st));
    return st ? 1 : 0;
}
