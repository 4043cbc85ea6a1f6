/* SPDX-License-Identifier: MIT */
/*
 * llm-json.h: a small JSON reader for Hugging Face config.json and
 * model.safetensors.index.json, and the safetensors header (which is JSON).
 * It parses the whole text into a tree of nodes in one malloc'd block list;
 * strings are unescaped (\uXXXX to UTF-8, surrogate pairs joined). Depth and
 * size are bounded so hostile input gets an error, never a crash. Written
 * here rather than taken from Debian (json-glib pulls GLib, which the
 * compiler layer must not use; jansson would be a new dependency for three
 * small files whose subset of JSON is easy to check).
 */
#ifndef NPU_LLM_JSON_H
#define NPU_LLM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum llm_json_type {
    LLM_JSON_NULL,
    LLM_JSON_BOOL,
    LLM_JSON_NUMBER,
    LLM_JSON_STRING,
    LLM_JSON_ARRAY,
    LLM_JSON_OBJECT,
};

struct llm_json {
    enum llm_json_type type;
    bool b;
    double num;
    bool is_int; /* a number written without fraction or exponent */
    int64_t i;
    char *s;                /* STRING */
    struct llm_json **kids; /* ARRAY items, OBJECT values */
    char **keys;            /* OBJECT keys */
    size_t n;
};

/* Parses len bytes. On failure returns NULL and writes "offset N: problem"
 * into err. Free with llm_json_free. */
struct llm_json *llm_json_parse(const char *text, size_t len, char *err, size_t errlen);
void llm_json_free(struct llm_json *j);
/* The member key of an object (NULL when j is no object or key is absent). */
const struct llm_json *llm_json_get(const struct llm_json *j, const char *key);

#endif /* NPU_LLM_JSON_H */
