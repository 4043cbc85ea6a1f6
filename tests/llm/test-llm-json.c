// SPDX-License-Identifier: MIT
/*
 * test-llm-json.c: compiler/llm's JSON reader (config.json, the safetensors
 * header): values of every type, escapes (\u with surrogate pairs to UTF-8, a
 * lone surrogate to U+FFFD), integers kept exact, and hostile input refused
 * with an offset: nesting past the limit, truncation, trailing text, control
 * characters, bad numbers and escapes.
 */
#include <stdio.h>
#include <string.h>

#include "llm-json.h"

static int fails;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                  \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static struct llm_json *
parse(const char *s, char *err)
{
    return llm_json_parse(s, strlen(s), err, 128);
}

int
main(void)
{
    char err[128];
    struct llm_json *j = parse(" {\"a\": [1, -2.5e1, true, false, null], \"s\": \"x\\n\\u00e9"
                               "\\ud83d\\ude00\\ud800z\", \"big\": 9007199254740993, \"o\": {}}",
                               err);
    CHECK(j && j->type == LLM_JSON_OBJECT && j->n == 4);
    const struct llm_json *a = llm_json_get(j, "a");
    CHECK(a && a->type == LLM_JSON_ARRAY && a->n == 5);
    if (a && a->n == 5) {
        CHECK(a->kids[0]->type == LLM_JSON_NUMBER && a->kids[0]->is_int && a->kids[0]->i == 1);
        CHECK(!a->kids[1]->is_int && a->kids[1]->num == -25.0);
        CHECK(a->kids[2]->type == LLM_JSON_BOOL && a->kids[2]->b);
        CHECK(a->kids[3]->type == LLM_JSON_BOOL && !a->kids[3]->b);
        CHECK(a->kids[4]->type == LLM_JSON_NULL);
    }
    const struct llm_json *s = llm_json_get(j, "s");
    /* x \n e-acute (C3 A9) grinning face (F0 9F 98 80) lone surrogate (EF BF BD) z */
    CHECK(s && s->type == LLM_JSON_STRING &&
          !strcmp(s->s, "x\n\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdz"));
    const struct llm_json *big = llm_json_get(j, "big");
    CHECK(big && big->is_int && big->i == 9007199254740993ll); /* exact beyond 2^53 */
    CHECK(llm_json_get(j, "o") && llm_json_get(j, "o")->n == 0);
    CHECK(!llm_json_get(j, "missing"));
    llm_json_free(j);

    static const char *const bad[] = {
        "",         "{", "{\"a\" 1}", "{\"a\": 1,}", "[1 2]", "\"abc",  "\"a\\qb\"", "\"\\u12g4\"",
        "\"a\nb\"", "-", "1.2.3",     "tru",         "{} x",  "{1: 2}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        j = parse(bad[i], err);
        if (j) {
            fprintf(stderr, "accepted bad JSON: '%s'\n", bad[i]);
            fails++;
            llm_json_free(j);
        }
        CHECK(!strncmp(err, "offset ", 7));
    }
    /* nesting: 64 levels parse, 65 do not */
    char deep[200];
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = 0;
    j = parse(deep, err);
    CHECK(j);
    llm_json_free(j);
    memset(deep, '[', 66);
    memset(deep + 66, ']', 66);
    deep[132] = 0;
    j = parse(deep, err);
    CHECK(!j && strstr(err, "nested too deeply"));
    /* not NUL-terminated: the length is what counts */
    j = llm_json_parse("[1]xyz", 3, err, sizeof(err));
    CHECK(j && j->n == 1);
    llm_json_free(j);
    if (fails)
        fprintf(stderr, "%d check(s) failed\n", fails);
    else
        printf("llm-json: all checks passed\n");
    return fails ? 1 : 0;
}
