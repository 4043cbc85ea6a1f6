// SPDX-License-Identifier: MIT
/*
 * test-json.c: the JSON reader of compiler/text (npu-json.h), which reads
 * tokenizer.json and, for compiler/llm, config.json, the safetensors header
 * and the shard index: values of every type, escapes (\u with surrogate pairs
 * to UTF-8), integers kept exact past 2^53 (safetensors offsets), and hostile
 * input refused with its line and column: nesting past the limit, truncation,
 * trailing text, control characters, lone surrogates, bad numbers and escapes.
 */
#include <stdio.h>
#include <string.h>

#include "npu-json.h"

static int fails;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                  \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static struct npu_json_doc *
parse(const char *s, char *err)
{
    return npu_json_parse(s, strlen(s), err, 128);
}

int
main(void)
{
    char err[128];
    struct npu_json_doc *doc = parse(" {\"a\": [1, -2.5e1, true, false, null, -7], \"s\": "
                                     "\"x\\n\\u00e9\\ud83d\\ude00z\", \"big\": 9007199254740993, "
                                     "\"huge\": 99999999999999999999, \"o\": {}}",
                                     err);
    const struct npu_json *j = doc ? npu_json_root(doc) : NULL;
    CHECK(j && j->type == NPU_JSON_OBJECT && j->len == 5);
    const struct npu_json *a = npu_json_get(j, "a");
    CHECK(a && a->type == NPU_JSON_ARRAY && a->len == 6);
    if (a && a->len == 6) {
        CHECK(a->items[0].type == NPU_JSON_NUMBER && a->items[0].is_int && a->items[0].i == 1);
        CHECK(!a->items[1].is_int && a->items[1].num == -25.0);
        CHECK(a->items[2].type == NPU_JSON_BOOL && a->items[2].b);
        CHECK(a->items[3].type == NPU_JSON_BOOL && !a->items[3].b);
        CHECK(a->items[4].type == NPU_JSON_NULL);
        CHECK(a->items[5].is_int && a->items[5].i == -7);
    }
    const struct npu_json *s = npu_json_get(j, "s");
    /* x \n e-acute (C3 A9) grinning face (F0 9F 98 80) z */
    CHECK(s && s->type == NPU_JSON_STRING && !strcmp(s->str, "x\n\xc3\xa9\xf0\x9f\x98\x80z"));
    const struct npu_json *big = npu_json_get(j, "big");
    CHECK(big && big->is_int && big->i == 9007199254740993ll); /* exact beyond 2^53 */
    const struct npu_json *huge = npu_json_get(j, "huge");
    CHECK(huge && huge->type == NPU_JSON_NUMBER && !huge->is_int); /* past int64: a double */
    CHECK(npu_json_get(j, "o") && npu_json_get(j, "o")->len == 0);
    CHECK(!npu_json_get(j, "missing"));
    npu_json_free(doc);

    static const char *const bad[] = {
        "",      "{",         "{\"a\" 1}",   "{\"a\": 1,}", "[1 2]",
        "\"abc", "\"a\\qb\"", "\"\\u12g4\"", "\"a\nb\"",    "-",
        "1.2.3", "tru",       "{} x",        "{1: 2}",      "\"\\ud800z\"",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        doc = parse(bad[i], err);
        if (doc) {
            fprintf(stderr, "accepted bad JSON: '%s'\n", bad[i]);
            fails++;
            npu_json_free(doc);
        }
        CHECK(!strncmp(err, "line ", 5) && strstr(err, "column "));
    }
    /* nesting: 128 levels parse, 130 do not */
    char deep[300];
    memset(deep, '[', 128);
    memset(deep + 128, ']', 128);
    deep[256] = 0;
    doc = parse(deep, err);
    CHECK(doc);
    npu_json_free(doc);
    memset(deep, '[', 130);
    memset(deep + 130, ']', 130);
    deep[260] = 0;
    doc = parse(deep, err);
    CHECK(!doc && strstr(err, "nesting deeper than"));
    /* not NUL-terminated: the length is what counts */
    doc = npu_json_parse("[1]xyz", 3, err, sizeof(err));
    CHECK(doc && npu_json_root(doc)->len == 1);
    npu_json_free(doc);
    if (fails)
        fprintf(stderr, "%d check(s) failed\n", fails);
    else
        printf("npu-json: all checks passed\n");
    return fails ? 1 : 0;
}
