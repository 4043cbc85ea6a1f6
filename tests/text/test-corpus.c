// SPDX-License-Identifier: MIT
/*
 * test-corpus.c: the tokenizers against implementations written by others.
 * For every line of corpus.json, the ids our encoder gives (with and without
 * the post-processor's special tokens) and the text our streaming decoder
 * gives (ids pushed one at a time; every piece it lets out must be valid
 * UTF-8) are compared with expected-NAME.json, which make-expected.mjs wrote
 * from @huggingface/transformers and, where they apply, gpt-3-encoder and
 * llama-tokenizer-js.
 *
 *   test-corpus TOKENIZER.json corpus.json expected-NAME.json
 */
#include "npu-json.h"
#include "npu-test-file.h"
#include "npu-test.h"
#include "tok-internal.h"

#include <npu/npu-tokenizer.h>

static bool
same_ids(const struct npu_json *want, const int32_t *ids, size_t n)
{
    if (!want || want->type != NPU_JSON_ARRAY || want->len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (want->items[i].num != ids[i])
            return false;
    return true;
}

static void
print_ids(const char *label, const int32_t *ids, size_t n, const struct npu_json *want)
{
    fprintf(stderr, "    %s ours:", label);
    for (size_t i = 0; i < n && i < 40; i++)
        fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n    %s want:", label);
    for (size_t i = 0; want && i < want->len && i < 40; i++)
        fprintf(stderr, " %d", (int)want->items[i].num);
    fprintf(stderr, "\n");
}

/* Decodes by pushing one id at a time; every piece must be valid UTF-8. */
static char *
stream_decode(const struct npu_tokenizer *t, const struct npu_json *ids, unsigned flags,
              bool *pieces_valid)
{
    struct npu_detok *d = npu_detok_new(t, flags);
    char *acc = calloc(1, 1);
    size_t n = 0;
    *pieces_valid = true;
    for (size_t i = 0; i <= ids->len; i++) {
        const char *s;
        size_t l;
        enum npu_status st = i < ids->len ? npu_detok_push(d, (int32_t)ids->items[i].num, &s, &l)
                                          : npu_detok_flush(d, &s, &l);
        if (st)
            break;
        if (!tok_utf8_valid(s, l, NULL))
            *pieces_valid = false;
        acc = realloc(acc, n + l + 1);
        memcpy(acc + n, s, l);
        n += l;
        acc[n] = '\0';
    }
    npu_detok_free(d);
    return acc;
}

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test-corpus TOKENIZER.json corpus.json expected.json\n");
        return 2;
    }
    struct npu_tokenizer *t;
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_load(argv[1], &t));
    if (npu_test_failures)
        return 1;
    size_t clen, elen;
    char *cbuf = npu_test_slurp(argv[2], &clen), *ebuf = npu_test_slurp(argv[3], &elen);
    CHECK(cbuf && ebuf);
    char err[200];
    struct npu_json_doc *cdoc = npu_json_parse(cbuf, clen, err, sizeof(err));
    struct npu_json_doc *edoc = npu_json_parse(ebuf, elen, err, sizeof(err));
    CHECK(cdoc && edoc);
    if (!cdoc || !edoc)
        return 1;
    const struct npu_json *corpus = npu_json_root(cdoc);
    const struct npu_json *cases = npu_json_get(npu_json_root(edoc), "cases");
    const struct npu_json *refs = npu_json_get(npu_json_root(edoc), "references");
    CHECK(cases && cases->len == corpus->len);
    if (!cases || cases->len != corpus->len)
        return 1;
    static const char *alt[] = {"gpt-3-encoder", "llama-tokenizer-js"};
    size_t agree_ids = 0, agree_ns = 0, agree_dec = 0, agree_skip = 0, agree_alt = 0, n_alt = 0;
    size_t n_rust = 0, agree_rust = 0, agree_rust_dec = 0;
    const char *alt_name = NULL;
    for (size_t i = 0; i < corpus->len; i++) {
        const struct npu_json *text = &corpus->items[i], *c = &cases->items[i];
        int32_t *ids = NULL, *ns = NULL;
        size_t n = 0, nn = 0;
        bool ok_ids = npu_tokenizer_encode(t, text->str, text->len, 1, &ids, &n) == NPU_OK &&
                      same_ids(npu_json_get(c, "ids"), ids, n);
        bool ok_ns = npu_tokenizer_encode(t, text->str, text->len, 0, &ns, &nn) == NPU_OK &&
                     same_ids(npu_json_get(c, "ids_no_special"), ns, nn);
        agree_ids += ok_ids;
        agree_ns += ok_ns;
        if (!ok_ids || !ok_ns) {
            fprintf(stderr, "line %zu \"%.50s\": ids differ from @huggingface/transformers\n", i,
                    text->str);
            if (!ok_ids)
                print_ids("special", ids, n, npu_json_get(c, "ids"));
            if (!ok_ns)
                print_ids("plain", ns, nn, npu_json_get(c, "ids_no_special"));
        }
        for (size_t k = 0; k < NPU_ARRAY_SIZE(alt); k++) {
            const struct npu_json *want = npu_json_get(c, alt[k]);
            if (!want)
                continue;
            alt_name = alt[k];
            n_alt++;
            /* gpt-3-encoder has no BOS; llama-tokenizer-js adds <s> as the template does */
            bool ok = k == 0 ? same_ids(want, ns, nn) : same_ids(want, ids, n);
            agree_alt += ok;
            if (!ok) {
                fprintf(stderr, "line %zu \"%.50s\": ids differ from %s\n", i, text->str, alt[k]);
                print_ids(alt[k], k == 0 ? ns : ids, k == 0 ? nn : n, want);
            }
        }
        const struct npu_json *rust = npu_json_get(c, "rust_ids");
        if (rust) {
            n_rust++;
            bool ok =
                same_ids(rust, ids, n) && same_ids(npu_json_get(c, "rust_ids_no_special"), ns, nn);
            agree_rust += ok;
            if (!ok) {
                fprintf(stderr, "line %zu \"%.50s\": ids differ from tokenizers (Rust)\n", i,
                        text->str);
                print_ids("rust", ids, n, rust);
            }
        }
        const struct npu_json *want_ids = npu_json_get(c, "ids");
        const struct npu_json *dec = npu_json_get(c, "decode");
        const struct npu_json *skip = npu_json_get(c, "decode_skip");
        bool valid1, valid2;
        char *d1 = stream_decode(t, want_ids, 0, &valid1);
        char *d2 = stream_decode(t, want_ids, NPU_DETOK_SKIP_SPECIAL, &valid2);
        const struct npu_json *rdec = npu_json_get(c, "rust_decode");
        const struct npu_json *rskip = npu_json_get(c, "rust_decode_skip");
        if (rdec && rskip) {
            bool ok = !strcmp(d1, rdec->str) && !strcmp(d2, rskip->str);
            agree_rust_dec += ok;
            if (!ok)
                fprintf(stderr, "line %zu: decode differs from tokenizers (Rust)\n", i);
        }
        bool ok_dec = valid1 && dec && !strcmp(d1, dec->str);
        bool ok_skip = valid2 && skip && !strcmp(d2, skip->str);
        agree_dec += ok_dec;
        agree_skip += ok_skip;
        if (!ok_dec)
            fprintf(stderr, "line %zu: decode \"%.60s\", want \"%.60s\"%s\n", i, d1,
                    dec ? dec->str : "?", valid1 ? "" : " (invalid UTF-8 piece)");
        if (!ok_skip)
            fprintf(stderr, "line %zu: decode (skip special) \"%.60s\", want \"%.60s\"%s\n", i, d2,
                    skip ? skip->str : "?", valid2 ? "" : " (invalid UTF-8 piece)");
        free(d1);
        free(d2);
        free(ids);
        free(ns);
    }
    /* id sequences that break UTF-8: U+FFFD where the reference puts it */
    const struct npu_json *dcases = npu_json_get(npu_json_root(edoc), "decode_cases");
    size_t agree_broken = 0, n_broken = dcases ? dcases->len : 0;
    for (size_t i = 0; i < n_broken; i++) {
        const struct npu_json *ids = npu_json_get(&dcases->items[i], "ids");
        const struct npu_json *want = npu_json_get(&dcases->items[i], "decode");
        bool valid;
        char *got = stream_decode(t, ids, 0, &valid);
        bool ok = valid && want && !strcmp(got, want->str);
        const struct npu_json *rwant = npu_json_get(&dcases->items[i], "rust_decode");
        if (rwant && strcmp(got, rwant->str))
            ok = false;
        agree_broken += ok;
        if (!ok)
            fprintf(stderr, "decode case %zu: \"%s\", want \"%s\"\n", i, got,
                    want ? want->str : "?");
        free(got);
    }
    CHECK_EQ_INT(n_broken, agree_broken);
    /* random id sequences: every piece the stream lets out is valid UTF-8 */
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    size_t vocab = npu_tokenizer_vocab_size(t), bad_pieces = 0;
    for (int seq = 0; seq < 200; seq++) {
        struct npu_detok *d = npu_detok_new(t, seq & 1 ? NPU_DETOK_SKIP_SPECIAL : 0);
        for (int k = 0; k <= 50; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            int32_t id = (int32_t)((rng >> 33) % vocab);
            if (seq & 2) /* favour the byte tokens (GPT-2: the first 256; LLaMA: 3..258) */
                id = (int32_t)((rng >> 33) % 260);
            const char *s;
            size_t l;
            enum npu_status st =
                k < 50 ? npu_detok_push(d, id, &s, &l) : npu_detok_flush(d, &s, &l);
            if (st == NPU_OK && !tok_utf8_valid(s, l, NULL))
                bad_pieces++;
        }
        npu_detok_free(d);
    }
    CHECK_EQ_INT(0, bad_pieces);
    size_t L = corpus->len;
    const struct npu_json *tv = npu_json_get(refs, "@huggingface/transformers");
    printf("%s: %zu lines; @huggingface/transformers %s: ids %zu/%zu, ids without special "
           "tokens %zu/%zu, streamed decode %zu/%zu, skipping special %zu/%zu",
           argv[1], L, tv ? tv->str : "?", agree_ids, L, agree_ns, L, agree_dec, L, agree_skip, L);
    if (n_rust) {
        const struct npu_json *rv = npu_json_get(refs, "tokenizers (Rust, npm binding)");
        printf("; tokenizers (Rust) %s: ids %zu/%zu, decode %zu/%zu", rv ? rv->str : "?",
               agree_rust, n_rust, agree_rust_dec, n_rust);
    }
    if (n_broken)
        printf("; broken UTF-8 id sequences %zu/%zu", agree_broken, n_broken);
    size_t departs = 0, gpt3_ws = 0;
    for (size_t i = 0; i < cases->len; i++) {
        departs += npu_json_get(&cases->items[i], "transformers_js_as_is") ||
                   npu_json_get(&cases->items[i], "transformers_js_ids_as_is") ||
                   npu_json_get(&cases->items[i], "transformers_js_decode_as_is");
        gpt3_ws += npu_json_get(&cases->items[i], "gpt3_encoder_js_whitespace") != NULL;
    }
    if (departs)
        printf("; on %zu lines transformers.js as it is departs from tokenizers (Rust) and the "
               "expectation is Rust's (recorded, see the file)",
               departs);
    if (gpt3_ws)
        printf("; gpt-3-encoder's JavaScript \\s on %zu line (recorded)", gpt3_ws);
    if (alt_name) {
        const struct npu_json *av = npu_json_get(refs, alt_name);
        printf("; %s %s: ids %zu/%zu", alt_name, av ? av->str : "?", agree_alt, n_alt);
    }
    printf("\n");
    CHECK_EQ_INT(L, agree_ids);
    CHECK_EQ_INT(L, agree_ns);
    CHECK_EQ_INT(L, agree_dec);
    CHECK_EQ_INT(L, agree_skip);
    CHECK_EQ_INT(n_alt, agree_alt);
    CHECK_EQ_INT(n_rust, agree_rust);
    CHECK_EQ_INT(n_rust, agree_rust_dec);
    npu_json_free(cdoc);
    npu_json_free(edoc);
    free(cbuf);
    free(ebuf);
    npu_tokenizer_free(t);
    return npu_test_done("tokenizer-corpus");
}
