/* SPDX-License-Identifier: MIT */
/*
 * tok-internal.h: the loaded tokenizer as the encoder (npu-tokenizer.c) and
 * the streaming decoder (npu-detok.c) share it. Private to compiler/text.
 */
#ifndef NPU_TOK_INTERNAL_H
#define NPU_TOK_INTERNAL_H

#include <npu/npu-tokenizer.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOK_DOM "tokenizer"

/* string -> id, open addressing; keys point into the tokenizer's strings */
struct tok_strmap {
    const char **keys;
    uint32_t *lens;
    int32_t *vals;
    size_t cap, n;
};

/* (left id, right id) -> merge rank and merged id */
struct tok_mergemap {
    uint64_t *keys; /* (a << 32 | b) + 1; 0 is empty */
    uint32_t *ranks;
    int32_t *out;
    size_t cap, n;
};

struct tok_added {
    char *content;
    size_t len;
    int32_t id;
    bool special, lstrip, rstrip, single_word;
};

enum tok_norm_kind { TOK_N_PREPEND, TOK_N_REPLACE, TOK_N_NFC, TOK_N_LOWERCASE, TOK_N_REPLACE_RE };
struct tok_norm {
    enum tok_norm_kind kind;
    char *a, *b; /* PREPEND: a; REPLACE: a -> b; REPLACE_RE: matches of re -> b */
    size_t alen, blen;
    void *re; /* pcre2_code_8 * (REPLACE_RE: CLIP's {"Regex": "\\s+"} -> " ") */
};

enum tok_split_behavior {
    TOK_SPLIT_REMOVED,
    TOK_SPLIT_ISOLATED,
    TOK_SPLIT_MERGED_PREV,
    TOK_SPLIT_MERGED_NEXT,
    TOK_SPLIT_CONTIGUOUS,
};

enum tok_pre_kind { TOK_P_BYTELEVEL, TOK_P_SPLIT, TOK_P_METASPACE };
struct tok_pre {
    enum tok_pre_kind kind;
    void *re; /* pcre2_code_8 * (BYTELEVEL with use_regex, SPLIT) */
    enum tok_split_behavior behavior;
    bool invert;
    bool add_prefix_space; /* BYTELEVEL */
    char *repl;            /* METASPACE replacement (UTF-8) */
    size_t repl_len;
    int prepend; /* METASPACE: 0 never, 1 first, 2 always */
    bool split;  /* METASPACE */
};

enum tok_dec_kind {
    TOK_D_BYTELEVEL,
    TOK_D_METASPACE,
    TOK_D_REPLACE,
    TOK_D_BYTEFALLBACK,
    TOK_D_FUSE,
    TOK_D_STRIP,
};

struct npu_tokenizer {
    /* id -> token string (NULL for an id not in use) */
    char **tok;
    uint32_t *tok_len;
    uint8_t *is_added; /* 1 added, 2 added and special */
    size_t n_ids;
    struct tok_strmap vocab; /* model vocabulary and added tokens */
    struct tok_mergemap merges;

    bool byte_fallback, fuse_unk, ignore_merges;
    /* BPE end_of_word_suffix (CLIP's "</w>"): appended to a word's last
     * character before the merges; NULL when the model has none */
    char *eow;
    size_t eow_len;
    int32_t unk_id;
    int32_t byte_ids[256]; /* <0xNN> tokens, -1 if absent */

    struct tok_added *added;
    size_t n_added;

    struct tok_norm *norm;
    size_t n_norm;
    struct tok_pre *pre;
    size_t n_pre;

    int32_t *prefix, *suffix; /* post-processor, single sequence */
    size_t n_prefix, n_suffix;

    /* decoding: per id, the bytes the decoder chain gives it */
    char **dec;
    uint32_t *dec_len;
    int dec_strip_first;      /* spaces removed from the start of the text (Strip) */
    bool dec_metaspace_first; /* Metaspace: the first token's replacements are dropped */

    int32_t bos, eos;
};

int32_t tok_strmap_get(const struct tok_strmap *m, const char *s, size_t len);
/* Checks that s[0..len) is UTF-8; on failure returns the offset of the bad byte. */
bool tok_utf8_valid(const char *s, size_t len, size_t *bad);
size_t tok_utf8_put(char *o, uint32_t cp);

#endif /* NPU_TOK_INTERNAL_H */
