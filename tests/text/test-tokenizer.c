// SPDX-License-Identifier: MIT
/*
 * test-tokenizer.c: unit tests of compiler/text on small tokenizer.json files
 * written here: the JSON reader's errors, both merges formats, added tokens
 * (lstrip/rstrip, split before the model), byte fallback, the streaming
 * decoder holding bytes until a character completes (and U+FFFD for bytes
 * that never do), the leading-space rules of SentencePiece decoders, BOS/EOS
 * from a model folder's side files, and a clear refusal of malformed or
 * unsupported files.
 */
#include "npu-json.h"
#include "npu-test.h"
#include "tok-internal.h"

#include <npu/npu-tokenizer.h>

#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

/* The last error the library logged, for checking that messages name the field. */
static char last_err[512];

static void
capture(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)domain;
    (void)user;
    if (level == NPU_LOG_ERROR)
        snprintf(last_err, sizeof(last_err), "%s", msg);
}

static void
test_json(void)
{
    char err[200];
    const char *ok = "{\"a\": [1, -2.5e1, true, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}}";
    struct npu_json_doc *d = npu_json_parse(ok, strlen(ok), err, sizeof(err));
    CHECK(d != NULL);
    if (d) {
        const struct npu_json *a = npu_json_get(npu_json_root(d), "a");
        CHECK(a && a->type == NPU_JSON_ARRAY && a->len == 5);
        CHECK_NEAR(-25.0, a->items[1].num, 0);
        CHECK(a->items[2].b);
        CHECK(a->items[4].len == 8 && !memcmp(a->items[4].str, "x\xC3\xA9\xF0\x9F\x98\x80\n", 8));
        npu_json_free(d);
    }
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"[1, 2,]", "unexpected character"},
        {"{\"a\" 1}", "expected ':' after key \"a\""},
        {"\"\\ud800\"", "lone high surrogate"},
        {"\"\\udc00\"", "lone low surrogate"},
        {"[1] x", "trailing data"},
        {"\"abc", "unterminated string"},
        {"\"a\tb\"", "control character"},
        {"", "unexpected end of input"},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(bad); i++) {
        d = npu_json_parse(bad[i].text, strlen(bad[i].text), err, sizeof(err));
        CHECK(d == NULL);
        if (!strstr(err, bad[i].msg))
            fprintf(stderr, "json '%s': error '%s' lacks '%s'\n", bad[i].text, err, bad[i].msg);
        CHECK(strstr(err, bad[i].msg) != NULL);
        npu_json_free(d);
    }
    /* nesting is bounded */
    char deep[400];
    memset(deep, '[', 300);
    deep[300] = '\0';
    d = npu_json_parse(deep, 300, err, sizeof(err));
    CHECK(d == NULL && strstr(err, "nesting deeper"));
}

/* A byte-level tokenizer: the 256 byte characters, merges given by the caller. */
static char *
bytelevel_json(const char *extra_vocab, const char *merges, const char *pre, const char *post)
{
    static const char *hex = "0123456789abcdef";
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    n +=
        (size_t)snprintf(s + n, cap - n,
                         "{\"added_tokens\":[{\"id\":300,\"content\":\"<|end|>\",\"special\":true},"
                         "{\"id\":301,\"content\":\"<pad>\",\"special\":false,\"lstrip\":true,"
                         "\"rstrip\":true}],\"pre_tokenizer\":%s,\"post_processor\":%s,"
                         "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
                         "\"vocab\":{",
                         pre, post);
    for (unsigned b = 0; b < 256; b++) {
        /* the GPT-2 byte table, written as \u escapes */
        unsigned cp = b, k = 0;
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        if (!printable) {
            for (unsigned x = 0; x < b; x++)
                if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE))
                    k++;
            cp = 256 + k;
        }
        n += (size_t)snprintf(s + n, cap - n, "\"\\u%c%c%c%c\":%u,", hex[(cp >> 12) & 15],
                              hex[(cp >> 8) & 15], hex[(cp >> 4) & 15], hex[cp & 15], b);
    }
    n += (size_t)snprintf(s + n, cap - n, "%s},\"merges\":[%s]}}", extra_vocab, merges);
    return s;
}

static void
check_ids(const struct npu_tokenizer *t, const char *text, int add, const int32_t *want,
          size_t nwant)
{
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_encode(t, text, strlen(text), add, &ids, &n));
    bool same = n == nwant && (!n || !memcmp(ids, want, n * sizeof(*ids)));
    if (!same) {
        fprintf(stderr, "'%s':", text);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same);
    free(ids);
}

static void
test_bytelevel(void)
{
    /* "a b" strings and [a, b] pairs give the same tokenizer */
    const char *fmts[2] = {"\"a b\",\"ab c\",\"\\u0120 ab\"", "[\"a\",\"b\"],[\"ab\",\"c\"],"
                                                              "[\"\\u0120\",\"ab\"]"};
    for (int f = 0; f < 2; f++) {
        char *js = bytelevel_json(
            "\"ab\":256,\"abc\":257,\"\\u0120ab\":258", fmts[f],
            "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}",
            "{\"type\":\"ByteLevel\"}");
        struct npu_tokenizer *t = NULL;
        CHECK_EQ_INT(NPU_OK, npu_tokenizer_load_json(js, strlen(js), &t));
        free(js);
        if (!t)
            continue;
        CHECK_EQ_INT(302, npu_tokenizer_vocab_size(t));
        /* no post-processor BOS, and <|end|> is none of the EOS names known without side files */
        CHECK_EQ_INT(-1, npu_tokenizer_bos(t));
        CHECK_EQ_INT(-1, npu_tokenizer_eos(t));
        check_ids(t, "abc ab", 1, (int32_t[]){257, 258}, 2);
        /* the special token is split out before the model; <pad> strips spaces around it */
        check_ids(t, "ab<|end|>ab  <pad>  c", 0, (int32_t[]){256, 300, 256, 301, 'c'}, 5);
        /* 😀 = F0 9F 98 80: four byte tokens, decoded only once the last arrives */
        check_ids(t, "\xF0\x9F\x98\x80", 0, (int32_t[]){0xF0, 0x9F, 0x98, 0x80}, 4);
        struct npu_detok *d = npu_detok_new(t, 0);
        const char *s;
        size_t l;
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 'x', &s, &l));
        CHECK(l == 1 && s[0] == 'x');
        int32_t emoji[] = {0xF0, 0x9F, 0x98};
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(NPU_OK, npu_detok_push(d, emoji[i], &s, &l));
            CHECK_EQ_INT(0, l);
        }
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 0x80, &s, &l));
        CHECK(l == 4 && !memcmp(s, "\xF0\x9F\x98\x80", 4));
        /* an incomplete character interrupted: one U+FFFD, then the new byte */
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 0xE6, &s, &l));
        CHECK_EQ_INT(0, l);
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 'y', &s, &l));
        CHECK(l == 4 && !memcmp(s, "\xEF\xBF\xBDy", 4));
        /* a stray continuation byte, and an overlong lead */
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 0x80, &s, &l));
        CHECK(l == 3 && !memcmp(s, "\xEF\xBF\xBD", 3));
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 0xC0, &s, &l));
        CHECK(l == 3 && !memcmp(s, "\xEF\xBF\xBD", 3));
        /* bytes still held at the end come out as U+FFFD */
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 0xF0, &s, &l));
        CHECK_EQ_INT(0, l);
        CHECK_EQ_INT(NPU_OK, npu_detok_flush(d, &s, &l));
        CHECK(l == 3 && !memcmp(s, "\xEF\xBF\xBD", 3));
        /* bad ids */
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_detok_push(d, 302, &s, &l));
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_detok_push(d, -1, &s, &l));
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_detok_push(d, 299, &s, &l)); /* a hole */
        npu_detok_free(d);
        /* special tokens: kept or skipped */
        char *text;
        size_t tl;
        int32_t mix[] = {'h', 300, 'i'};
        CHECK_EQ_INT(NPU_OK, npu_tokenizer_decode(t, mix, 3, 0, &text, &tl));
        CHECK(!strcmp(text, "h<|end|>i"));
        free(text);
        CHECK_EQ_INT(NPU_OK, npu_tokenizer_decode(t, mix, 3, NPU_DETOK_SKIP_SPECIAL, &text, &tl));
        CHECK(!strcmp(text, "hi"));
        free(text);
        CHECK(npu_tokenizer_is_special(t, 300) && !npu_tokenizer_is_special(t, 301));
        CHECK(!strcmp(npu_tokenizer_id_to_token(t, 258), "\xC4\xA0"
                                                         "ab"));
        /* invalid UTF-8 input is refused with the offset */
        int32_t *ids;
        size_t n;
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_tokenizer_encode(t, "ab\xFFz", 4, 0, &ids, &n));
        CHECK(strstr(last_err, "offset 2") != NULL);
        CHECK_EQ_INT(NPU_ERR_INVALID, npu_tokenizer_encode(t, "\xED\xA0\x80", 3, 0, &ids, &n));
        /* empty text: an empty, freeable list */
        CHECK_EQ_INT(NPU_OK, npu_tokenizer_encode(t, "", 0, 1, &ids, &n));
        CHECK_EQ_INT(0, n);
        free(ids);
        npu_tokenizer_free(t);
    }
}

/* SentencePiece-style: Prepend/Replace normalizer, byte fallback, Strip decoder. */
static const char sp_json[] =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
    "{\"id\":1,\"content\":\"<s>\",\"special\":true},{\"id\":2,\"content\":\"</s>\",\"special\":"
    "true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":"
    "\"\\u2581\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},"
    "\"pre_tokenizer\":null,"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":"
    "\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{"
    "\"<s>\":{\"id\":\"<s>\",\"ids\":[1],\"tokens\":[\"<s>\"]}}},"
    "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{"
    "\"String\":\"\\u2581\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},"
    "{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]},"
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,\"byte_fallback\":true,"
    "\"vocab\":{\"<unk>\":0,\"<s>\":1,\"</s>\":2,\"<0xF0>\":3,\"<0x9F>\":4,\"<0x98>\":5,"
    "\"<0x80>\":6,\"\\u2581\":7,\"h\":8,\"i\":9,\"hi\":10,\"\\u2581hi\":11},"
    "\"merges\":[[\"h\",\"i\"],[\"\\u2581\",\"hi\"]]}}";

static void
test_sentencepiece(void)
{
    struct npu_tokenizer *t = NULL;
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_load_json(sp_json, strlen(sp_json), &t));
    if (!t)
        return;
    CHECK_EQ_INT(1, npu_tokenizer_bos(t));
    CHECK_EQ_INT(2, npu_tokenizer_eos(t));
    check_ids(t, "hi hi", 1, (int32_t[]){1, 11, 11}, 3);
    check_ids(t, "hi", 0, (int32_t[]){11}, 1);
    /* 😀 is not in the vocabulary: its four bytes */
    check_ids(t, "\xF0\x9F\x98\x80", 0, (int32_t[]){7, 3, 4, 5, 6}, 5);
    /* unknown characters without byte tokens fuse into one <unk> */
    check_ids(t, "xyz", 0, (int32_t[]){7, 0}, 2);
    /* the first token loses its leading space; a continuation keeps it */
    char *text;
    size_t tl;
    int32_t ids[] = {1, 11, 11};
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_decode(t, ids, 3, NPU_DETOK_SKIP_SPECIAL, &text, &tl));
    CHECK(!strcmp(text, "hi hi"));
    free(text);
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_decode(t, ids, 3, 0, &text, &tl));
    CHECK(!strcmp(text, "<s> hi hi"));
    free(text);
    CHECK_EQ_INT(NPU_OK,
                 npu_tokenizer_decode(t, ids + 1, 2,
                                      NPU_DETOK_SKIP_SPECIAL | NPU_DETOK_CONTINUATION, &text, &tl));
    CHECK(!strcmp(text, " hi hi"));
    free(text);
    /* byte fallback streams: nothing until the fourth byte */
    struct npu_detok *d = npu_detok_new(t, NPU_DETOK_CONTINUATION);
    const char *s;
    size_t l;
    for (int32_t id = 3; id <= 5; id++) {
        CHECK_EQ_INT(NPU_OK, npu_detok_push(d, id, &s, &l));
        CHECK_EQ_INT(0, l);
    }
    CHECK_EQ_INT(NPU_OK, npu_detok_push(d, 6, &s, &l));
    CHECK(l == 4 && !memcmp(s, "\xF0\x9F\x98\x80", 4));
    npu_detok_free(d);
    npu_tokenizer_free(t);
}

/* Metaspace with split (older SentencePiece exports), on the `tokenizers` library's own test
 * case: "Hey   friend!" pre-tokenises to "▁Hey", "▁", "▁", "▁friend!" (a space run gives one
 * piece per space). ignore_merges makes each piece in the vocabulary one token. */
static void
test_metaspace_split(void)
{
    const char *js =
        "{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"add_prefix_"
        "space\":true},\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\","
        "\"add_prefix_space\":true},\"model\":{\"type\":\"BPE\",\"ignore_merges\":true,"
        "\"unk_token\":\"?\",\"fuse_unk\":true,\"vocab\":{\"\\u2581Hey\":0,\"\\u2581\":1,"
        "\"\\u2581friend!\":2,\"?\":3},\"merges\":[]}}";
    struct npu_tokenizer *t = NULL;
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_load_json(js, strlen(js), &t));
    if (!t)
        return;
    check_ids(t, "Hey   friend!", 0, (int32_t[]){0, 1, 1, 2}, 4);
    check_ids(t, " Hey", 0, (int32_t[]){0}, 1); /* already starts with the replacement */
    char *text;
    size_t tl;
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_decode(t, (int32_t[]){0, 1, 1, 2}, 4, 0, &text, &tl));
    CHECK(!strcmp(text, "Hey   friend!"));
    free(text);
    npu_tokenizer_free(t);
}

/* CLIP's BPE: end_of_word_suffix "</w>" on a word's last symbol, and the Replace
 * normalizer with a regex pattern (CLIP: "\s+" -> " "; here runs of digits -> "c"). */
static void
test_end_of_word(void)
{
    const char *js =
        "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Replace\","
        "\"pattern\":{\"Regex\":\"[0-9]+\"},\"content\":\"c\"},{\"type\":\"Lowercase\"}]},"
        "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[a-z]+\"},"
        "\"behavior\":\"Removed\",\"invert\":true},"
        "\"model\":{\"type\":\"BPE\",\"end_of_word_suffix\":\"</w>\",\"unk_token\":\"?\","
        "\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"a</w>\":3,\"b</w>\":4,\"c</w>\":5,\"ab\":6,"
        "\"ab</w>\":7,\"abc</w>\":8,\"?\":9},"
        "\"merges\":[\"a b</w>\",\"a b\",\"ab c</w>\"]}}";
    struct npu_tokenizer *t = NULL;
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_load_json(js, strlen(js), &t));
    if (!t)
        return;
    /* "ab abc ba": ab</w> | ab c</w> -> abc</w> | b a</w> */
    check_ids(t, "AB   abc  Ba", 0, (int32_t[]){7, 8, 1, 3}, 4);
    /* "a12" -> "ac": a c</w>; "ab7" -> "abc": abc</w>; a lone "c" is c</w> */
    check_ids(t, "a12 ab7 c", 0, (int32_t[]){0, 5, 8, 5}, 4);
    npu_tokenizer_free(t);

    const char *bad = "{\"model\":{\"type\":\"BPE\",\"end_of_word_suffix\":3,\"vocab\":{"
                      "\"a\":0},\"merges\":[]}}";
    CHECK_EQ_INT(NPU_ERR_CORRUPT, npu_tokenizer_load_json(bad, strlen(bad), &t));
}

/* Split's five behaviours, on the example of the `tokenizers` documentation:
 * "the-final--countdown" split on "-". Each expected piece is a vocabulary entry
 * (ignore_merges), anything else would come out as the unknown token. */
static void
test_split_behaviors(void)
{
#ifdef NPU_HAVE_PCRE2
    static const struct {
        const char *behavior;
        int32_t ids[6];
        size_t n;
    } cases[] = {
        {"Removed", {0, 1, 2}, 3},
        {"Isolated", {0, 3, 1, 3, 3, 2}, 6},
        {"MergedWithPrevious", {6, 7, 3, 2}, 4},
        {"MergedWithNext", {0, 4, 3, 5}, 4},
        {"Contiguous", {0, 3, 1, 8, 2}, 5},
    };
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cases); i++) {
        char js[800];
        snprintf(js, sizeof(js),
                 "{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},"
                 "\"behavior\":\"%s\",\"invert\":false},\"model\":{\"type\":\"BPE\","
                 "\"ignore_merges\":true,\"unk_token\":\"?\",\"vocab\":{\"the\":0,"
                 "\"final\":1,\"countdown\":2,\"-\":3,\"-final\":4,\"-countdown\":5,"
                 "\"the-\":6,\"final-\":7,\"--\":8,\"?\":9},\"merges\":[]}}",
                 cases[i].behavior);
        struct npu_tokenizer *t = NULL;
        CHECK_EQ_INT(NPU_OK, npu_tokenizer_load_json(js, strlen(js), &t));
        if (!t)
            continue;
        check_ids(t, "the-final--countdown", 0, cases[i].ids, cases[i].n);
        npu_tokenizer_free(t);
    }
#endif
}

/* Files that must be refused, and the field the message must name. */
static void test_refusals(void){static const struct {const char * json, *msg;
enum npu_status st;
}
bad[] = {
    {"[]", "(top level): expected object", NPU_ERR_CORRUPT},
    {"{}", "model: missing", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", "model.type: 'Unigram'",
     NPU_ERR_UNSUPPORTED},
    {"{\"model\":{\"type\":\"BPE\",\"merges\":[]}}", "model.vocab: missing", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":\"x\"},\"merges\":[]}}",
     "model.vocab[\"a\"]: expected a non-negative integer id", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}",
     "model.merges[0]: \"a\" + \"b\": the second part is not in model.vocab", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a a a\"]}}",
     "model.merges[0]: \"a a a\" is not two tokens", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[7]}}",
     "model.merges[0]: expected", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}",
     "id 0 is given to both", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"unk_token\":\"?\"}}",
     "model.unk_token: \"?\" is not in model.vocab", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"dropout\":0.1}}",
     "model.dropout", NPU_ERR_UNSUPPORTED},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"added_tokens\":[{"
     "\"id\":1}]}",
     "added_tokens[0].content: missing", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{"
     "\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"BertPreTokenizer\"}]}}",
     "pre_tokenizer.pretokenizers[0].type: pre-tokenizer 'BertPreTokenizer' is not supported",
     NPU_ERR_UNSUPPORTED},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"normalizer\":{"
     "\"type\":\"NFKC\"}}",
     "normalizer.type: normalizer 'NFKC' is not supported", NPU_ERR_UNSUPPORTED},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"decoder\":{"
     "\"type\":\"WordPiece\"}}",
     "decoder.type: decoder 'WordPiece' is not supported", NPU_ERR_UNSUPPORTED},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"post_processor\":{"
     "\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\"}}],"
     "\"special_tokens\":{}}}",
     "post_processor.special_tokens[\"<s>\"].ids: missing", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{"
     "\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\"}}",
#ifdef NPU_HAVE_PCRE2
     "pre_tokenizer.pattern: regex does not compile", NPU_ERR_CORRUPT},
#else
     "pre_tokenizer.pattern: this build has no regex engine", NPU_ERR_UNSUPPORTED},
#endif
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{"
     "\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Sideways\"}}",
     "pre_tokenizer.behavior: 'Sideways'", NPU_ERR_CORRUPT},
    {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}", "not valid JSON: line 1",
     NPU_ERR_CORRUPT},
};
for (size_t i = 0; i < NPU_ARRAY_SIZE(bad); i++) {
    struct npu_tokenizer *t = (struct npu_tokenizer *)1;
    last_err[0] = '\0';
    enum npu_status st = npu_tokenizer_load_json(bad[i].json, strlen(bad[i].json), &t);
    CHECK_EQ_INT(bad[i].st, st);
    CHECK(t == NULL);
    if (!strstr(last_err, bad[i].msg))
        fprintf(stderr, "case %zu: error '%s' lacks '%s'\n", i, last_err, bad[i].msg);
    CHECK(strstr(last_err, bad[i].msg) != NULL);
}
/* a character the vocabulary lacks, with no unk and no byte fallback */
const char *nounk = "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}";
struct npu_tokenizer *t;
CHECK_EQ_INT(NPU_OK, npu_tokenizer_load_json(nounk, strlen(nounk), &t));
int32_t *ids;
size_t n;
CHECK_EQ_INT(NPU_ERR_INVALID, npu_tokenizer_encode(t, "ab", 2, 0, &ids, &n));
CHECK(strstr(last_err, "\"b\" is not in the vocabulary") != NULL);
npu_tokenizer_free(t);
/* missing files */
CHECK_EQ_INT(NPU_ERR_IO, npu_tokenizer_load("/nonexistent/tokenizer.json", &t));
CHECK(t == NULL);
}

/* A model folder: tokenizer.json plus tokenizer_config.json / config.json naming BOS/EOS. */
static void
test_folder(void)
{
    char dir[] = "/tmp/npu-tok-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    fputs(sp_json, f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
    f = fopen(path, "w");
    fputs("{\"bos_token\":{\"content\":\"</s>\"},\"eos_token\":\"<unk>\"}", f);
    fclose(f);
    struct npu_tokenizer *t;
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_load(dir, &t));
    CHECK_EQ_INT(2, npu_tokenizer_bos(t));
    CHECK_EQ_INT(0, npu_tokenizer_eos(t));
    npu_tokenizer_free(t);
    unlink(path);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    f = fopen(path, "w");
    fputs("{\"bos_token_id\":9,\"eos_token_id\":[10,2]}", f);
    fclose(f);
    CHECK_EQ_INT(NPU_OK, npu_tokenizer_load(dir, &t));
    CHECK_EQ_INT(9, npu_tokenizer_bos(t));
    CHECK_EQ_INT(10, npu_tokenizer_eos(t));
    npu_tokenizer_free(t);
    unlink(path);
    /* tokenizer_config.json's add_bos_token / add_eos_token replace tokenizer.json's template
     * (<s> $A) as Python transformers rebuilds it: false drops BOS (BOS stays named), true
     * adds the file's token, a token the file does not name is left out; without either key
     * the template stands */
    static const struct {
        const char *cfg;
        int32_t want[3];
        size_t n;
    } side[] = {
        {"{\"add_bos_token\":false,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}", {11}, 1},
        {"{\"add_bos_token\":true,\"add_eos_token\":true,\"bos_token\":\"<s>\","
         "\"eos_token\":{\"content\":\"</s>\"}}",
         {1, 11, 2},
         3},
        {"{\"add_eos_token\":true,\"eos_token\":\"</s>\"}", {11, 2}, 2},
        {"{\"add_bos_token\":true,\"bos_token\":null,\"eos_token\":\"</s>\"}", {11}, 1},
        {"{\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}", {1, 11}, 2},
    };
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
    for (size_t k = 0; k < NPU_ARRAY_SIZE(side); k++) {
        f = fopen(path, "w");
        fputs(side[k].cfg, f);
        fclose(f);
        t = NULL;
        CHECK_EQ_INT(NPU_OK, npu_tokenizer_load(dir, &t));
        if (!t)
            continue;
        check_ids(t, "hi", 1, side[k].want, side[k].n);
        check_ids(t, "hi", 0, (int32_t[]){11}, 1);
        CHECK_EQ_INT(1, npu_tokenizer_bos(t)); /* the template's, or the file's */
        npu_tokenizer_free(t);
    }
    unlink(path);
    snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
    unlink(path);
    /* a folder without tokenizer.json */
    CHECK_EQ_INT(NPU_ERR_IO, npu_tokenizer_load(dir, &t));
    CHECK(strstr(last_err, "tokenizer.json") != NULL);
    rmdir(dir);
}

/* Every prefix of a valid file, and the file with single bytes changed, loads or fails
 * cleanly (no crash, no leak: the sanitizer build runs this). */
static void
test_truncated(void)
{
    size_t len = strlen(sp_json), fails = 0;
    char *buf = malloc(len + 1);
    for (size_t cut = 0; cut < len; cut++) {
        struct npu_tokenizer *t = NULL;
        memcpy(buf, sp_json, cut);
        if (npu_tokenizer_load_json(buf, cut, &t) != NPU_OK)
            fails++;
        npu_tokenizer_free(t);
    }
    CHECK_EQ_INT(len, fails); /* no proper prefix of an object is a document */
    static const char flips[] = {'"', '}', ']', ',', ':', '\\', '0', 'x', ' ', '\0'};
    for (size_t at = 0; at < len; at += 3) {
        memcpy(buf, sp_json, len);
        buf[at] = flips[at % sizeof(flips)];
        struct npu_tokenizer *t = NULL;
        if (npu_tokenizer_load_json(buf, len, &t) == NPU_OK) {
            int32_t *ids;
            size_t n;
            if (npu_tokenizer_encode(t, "hi \xF0\x9F\x98\x80 there", 13, 1, &ids, &n) == NPU_OK)
                free(ids);
        }
        npu_tokenizer_free(t);
    }
    free(buf);
}

int
main(void)
{
    if (getenv("TOK_TEST_VERBOSE") == NULL)
        npu_log_set_handler(capture, NULL);
    test_json();
    test_bytelevel();
    test_sentencepiece();
    test_metaspace_split();
    test_split_behaviors();
    test_end_of_word();
    test_refusals();
    test_folder();
    test_truncated();
    return npu_test_done("tokenizer-unit");
}
