// SPDX-License-Identifier: MIT
/*
 * fuzz-tokenizer.c: libFuzzer target for the tokenizer (compiler/text). An
 * input starting with byte 0x01 is text for a fixed small byte-level tokenizer
 * with the GPT-2 regex (encode, then decode what came out); any other input is
 * a tokenizer.json to load, then encode a fixed mixed text with, decode the
 * result and stream a few arbitrary ids. Replayed over corpus-fuzz/ by
 * `meson test` (fuzz-tokenizer-corpus); for real fuzzing see tests/fuzz/meson.build
 * (-Dfuzz=true builds `fuzz-tokenizer`).
 */
#include <npu/npu-tokenizer.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char small_json[] =
    "{\"added_tokens\":[{\"id\":9,\"content\":\"<|e|>\",\"special\":true,\"lstrip\":true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"}]},"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\","
    "\"individual_digits\":true},{\"type\":\"ByteLevel\",\"add_prefix_space\":true}]},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":"
    "\"<|e|>\"}},{\"Sequence\":{\"id\":\"A\"}}],\"special_tokens\":{\"<|e|>\":{\"ids\":[9]}}},"
    "\"decoder\":{\"type\":\"ByteLevel\"},"
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"u\",\"fuse_unk\":true,\"vocab\":{\"a\":0,"
    "\"b\":1,\"ab\":2,\"\\u0120\":3,\"\\u0120ab\":4,\"u\":5},\"merges\":[\"a b\",\"\\u0120 ab\"]}}";

static void
quiet(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)level;
    (void)domain;
    (void)msg;
    (void)user;
}

static void
roundtrip(const struct npu_tokenizer *t, const char *text, size_t len)
{
    int32_t *ids;
    size_t n;
    if (npu_tokenizer_encode(t, text, len, 1, &ids, &n) == NPU_OK) {
        char *out;
        size_t olen;
        if (npu_tokenizer_decode(t, ids, n, NPU_DETOK_SKIP_SPECIAL, &out, &olen) == NPU_OK)
            free(out);
        free(ids);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    npu_log_set_handler(quiet, NULL);
    struct npu_tokenizer *t = NULL;
    if (size && data[0] == 1) {
        if (npu_tokenizer_load_json(small_json, strlen(small_json), &t) == NPU_OK)
            roundtrip(t, (const char *)data + 1, size - 1);
        npu_tokenizer_free(t);
        return 0;
    }
    if (npu_tokenizer_load_json((const char *)data, size, &t) != NPU_OK)
        return 0;
    static const char text[] = "Hi <|e|> there, it's 12 \xF0\x9F\x98\x80 \xE6\x97\xA5  \n\t x";
    roundtrip(t, text, sizeof(text) - 1);
    struct npu_detok *d = npu_detok_new(t, 0);
    if (d) {
        const char *s;
        size_t l;
        for (size_t i = 0; i < 8 && i < size; i++)
            npu_detok_push(d, (int32_t)data[i] * 3, &s, &l);
        npu_detok_flush(d, &s, &l);
        npu_detok_free(d);
    }
    npu_tokenizer_free(t);
    return 0;
}
