/* SPDX-License-Identifier: MIT */
/*
 * npu-json.h: a small JSON reader (RFC 8259) for the text layer: parses a
 * whole document into a tree kept in one arena, so a tokenizer.json of a
 * 150k-entry vocabulary costs one free. Strings are unescaped to UTF-8
 * (surrogate pairs joined; a lone surrogate is an error) and keep their
 * length, since they may hold NUL. Integers are also kept exactly (safetensors
 * offsets pass 2^53). Used by compiler/text and, above it, compiler/llm.
 */
#ifndef NPU_JSON_H
#define NPU_JSON_H

#include <stdbool.h>
#include <stddef.h>

enum npu_json_type {
    NPU_JSON_NULL,
    NPU_JSON_BOOL,
    NPU_JSON_NUMBER,
    NPU_JSON_STRING,
    NPU_JSON_ARRAY,
    NPU_JSON_OBJECT,
};

struct npu_json {
    enum npu_json_type type;
    bool b;
    double num;
    bool is_int;            /* NUMBER written without fraction or exponent that fits int64 */
    long long i;            /* NUMBER: its value when is_int */
    const char *str;        /* STRING: NUL-terminated, len bytes (may contain NUL) */
    size_t len;             /* STRING: bytes; ARRAY/OBJECT: number of items */
    struct npu_json *items; /* ARRAY/OBJECT: the values */
    const char **keys;      /* OBJECT: the keys, NUL-terminated */
    size_t *key_lens;       /* OBJECT: key lengths */
};

struct npu_json_doc;

/* Parses buf[0..len). On failure returns NULL and writes "line L, column C: problem" to err. */
struct npu_json_doc *npu_json_parse(const char *buf, size_t len, char *err, size_t errlen);
const struct npu_json *npu_json_root(const struct npu_json_doc *doc);
void npu_json_free(struct npu_json_doc *doc);

/* The member named key of an object, or NULL (also when o is NULL or not an object). */
const struct npu_json *npu_json_get(const struct npu_json *o, const char *key);
/* The name of a type for error messages ("string", "object", ...). */
const char *npu_json_type_name(enum npu_json_type t);

#endif /* NPU_JSON_H */
