// SPDX-License-Identifier: MIT
/*
 * fuzz-json.c: libFuzzer target for the JSON reader (compiler/text/npu-json.c)
 * that config.json, the safetensors header, the shard index and tokenizer.json
 * go through: bytes -> npu_json_parse -> every node walked and checked (a
 * string is NUL-terminated at its length, containers have their items and
 * keys, an integer number's value agrees with its double) -> a few lookups ->
 * free. A refusal must come with a message. Replayed over
 * tests/fuzz/corpus-json by the normal suite (fuzz-json-corpus).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "npu-json.h"

static size_t
walk(const struct npu_json *v, int depth)
{
    if (depth > 200)
        abort(); /* the reader's limit is 128 */
    size_t n = 1;
    switch (v->type) {
    case NPU_JSON_NULL:
    case NPU_JSON_BOOL: break;
    case NPU_JSON_NUMBER:
        if (v->is_int && fabs((double)v->i - v->num) > fabs(v->num) * 1e-9 + 1)
            abort();
        break;
    case NPU_JSON_STRING:
        if (!v->str || v->str[v->len] != 0)
            abort();
        break;
    case NPU_JSON_ARRAY:
    case NPU_JSON_OBJECT:
        if (v->len && !v->items)
            abort();
        for (size_t i = 0; i < v->len; i++) {
            if (v->type == NPU_JSON_OBJECT) {
                if (!v->keys || !v->key_lens || !v->keys[i] || v->keys[i][v->key_lens[i]] != 0)
                    abort();
                /* the first member of that name is found by name (the first 16: a lookup
                 * is a linear scan) */
                if (i < 16 && strlen(v->keys[i]) == v->key_lens[i]) {
                    const struct npu_json *g = npu_json_get(v, v->keys[i]);
                    if (!g || g > &v->items[i])
                        abort();
                }
            }
            n += walk(&v->items[i], depth + 1);
        }
        break;
    default: abort();
    }
    (void)npu_json_type_name(v->type);
    return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_log();
    char err[256] = "";
    struct npu_json_doc *doc = npu_json_parse((const char *)data, size, err, sizeof(err));
    if (!doc) {
        if (!err[0])
            abort(); /* a refusal names its problem */
        return 0;
    }
    const struct npu_json *root = npu_json_root(doc);
    if (!root)
        abort();
    walk(root, 0);
    (void)npu_json_get(root, "weight_map");
    (void)npu_json_get(root, "");
    npu_json_free(doc);
    return 0;
}
