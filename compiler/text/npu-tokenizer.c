// SPDX-License-Identifier: MIT
/*
 * npu-tokenizer.c: loading a Hugging Face tokenizer.json and encoding text
 * (npu-tokenizer.h). Encoding follows the `tokenizers` library's pipeline:
 * added tokens are split out of the raw text first; each remaining segment is
 * normalised, pre-tokenised into pieces and each piece run through the BPE
 * model; the post-processor then adds BOS and the like. The pre-tokenizers'
 * regexes (GPT-2's, LLaMA-3's, Qwen2's: Unicode classes, lookahead) run on
 * PCRE2 in UTF + UCP mode; NFC comes from ICU. Without those libraries (a
 * build that lacks them) a tokenizer.json that needs them is refused at load.
 */
#include "npu-json.h"
#include "tok-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef NPU_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif
#ifdef NPU_HAVE_ICU
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#endif

/* GPT-2's pre-tokenizer pattern, as the ByteLevel pre-tokenizer uses it (use_regex). */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---- small helpers ---------------------------------------------------------------------- */

size_t
tok_utf8_put(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the UTF-8 sequence starting at s (valid input assumed), 1 for a stray byte. */
static size_t
utf8_len(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if (c >= 0xF0)
        return 4;
    if (c >= 0xE0)
        return 3;
    if (c >= 0xC0)
        return 2;
    return 1;
}

bool
tok_utf8_valid(const char *str, size_t len, size_t *bad)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            if (c == 0xE0)
                lo = 0xA0;
            if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F;
        } else {
            goto fail;
        }
        if (i + n > len)
            goto fail;
        if (s[i + 1] < lo || s[i + 1] > hi)
            goto fail;
        for (size_t k = 2; k < n; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                goto fail;
        i += n;
    }
    return true;
fail:
    if (bad)
        *bad = i;
    return false;
}

static uint64_t
hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t
hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Open-addressing table size for `expect` keys: a power of two, at most half full. */
static size_t
map_cap(size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2 + 16)
        cap <<= 1;
    return cap;
}

static int
strmap_init(struct tok_strmap *m, size_t expect)
{
    size_t cap = map_cap(expect);
    m->keys = calloc(cap, sizeof(*m->keys));
    m->lens = calloc(cap, sizeof(*m->lens));
    m->vals = calloc(cap, sizeof(*m->vals));
    m->cap = cap;
    m->n = 0;
    return m->keys && m->lens && m->vals ? 0 : -1;
}

static void
strmap_free(struct tok_strmap *m)
{
    free(m->keys);
    free(m->lens);
    free(m->vals);
}

/* Inserts or overwrites; the key must outlive the map. Capacity was sized at init. */
static int
strmap_put(struct tok_strmap *m, const char *s, size_t len, int32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct tok_strmap g;
        if (strmap_init(&g, m->cap))
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                strmap_put(&g, m->keys[i], m->lens[i], m->vals[i]);
        strmap_free(m);
        *m = g;
    }
    size_t i = hash_bytes(s, len) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->lens[i] == len && memcmp(m->keys[i], s, len) == 0) {
            m->vals[i] = v;
            return 0;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = s;
    m->lens[i] = (uint32_t)len;
    m->vals[i] = v;
    m->n++;
    return 0;
}

int32_t
tok_strmap_get(const struct tok_strmap *m, const char *s, size_t len)
{
    if (!m->cap)
        return -1;
    size_t i = hash_bytes(s, len) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->lens[i] == len && memcmp(m->keys[i], s, len) == 0)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static int
mergemap_init(struct tok_mergemap *m, size_t expect)
{
    size_t cap = map_cap(expect);
    m->keys = calloc(cap, sizeof(*m->keys));
    m->ranks = calloc(cap, sizeof(*m->ranks));
    m->out = calloc(cap, sizeof(*m->out));
    m->cap = cap;
    return m->keys && m->ranks && m->out ? 0 : -1;
}

static void
mergemap_free(struct tok_mergemap *m)
{
    free(m->keys);
    free(m->ranks);
    free(m->out);
}

static uint64_t
pair_key(int32_t a, int32_t b)
{
    return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
}

/* The first rank for a pair wins, as in `tokenizers`. Capacity was sized at init. */
static void
mergemap_put(struct tok_mergemap *m, int32_t a, int32_t b, uint32_t rank, int32_t out)
{
    uint64_t k = pair_key(a, b);
    size_t i = hash_u64(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->keys[i] == k)
            return;
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = k;
    m->ranks[i] = rank;
    m->out[i] = out;
    m->n++;
}

static bool
mergemap_get(const struct tok_mergemap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *out)
{
    if (!m->cap)
        return false;
    uint64_t k = pair_key(a, b);
    size_t i = hash_u64(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->keys[i] == k) {
            *rank = m->ranks[i];
            *out = m->out[i];
            return true;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return false;
}

/* A growable byte buffer. */
struct buf {
    char *p;
    size_t n, cap;
};

static int
buf_add(struct buf *b, const void *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

/* A growable id list. */
struct ids {
    int32_t *v;
    size_t n, cap;
};

static int
ids_add(struct ids *l, int32_t id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        int32_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return 0;
}

/* A list of pieces (owned strings) between pre-tokenizer steps. */
struct piece {
    char *s;
    size_t len;
};
struct pieces {
    struct piece *v;
    size_t n, cap;
};

static int
pieces_add(struct pieces *l, const char *s, size_t len)
{
    if (!len)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct piece *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c)
        return -1;
    memcpy(c, s, len);
    c[len] = '\0';
    l->v[l->n].s = c;
    l->v[l->n].len = len;
    l->n++;
    return 0;
}

static void
pieces_free(struct pieces *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].s);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Replaces every occurrence of a in s by b. */
static int
replace_all(const char *s, size_t len, const char *a, size_t alen, const char *b, size_t blen,
            struct buf *out)
{
    size_t i = 0;
    while (i < len) {
        if (alen && i + alen <= len && memcmp(s + i, a, alen) == 0) {
            if (buf_add(out, b, blen))
                return -1;
            i += alen;
        } else {
            if (buf_add(out, s + i, 1))
                return -1;
            i++;
        }
    }
    return buf_add(out, "", 0);
}

/* GPT-2's byte <-> printable character table (bytes_to_unicode). */
static uint32_t
byte_to_cp(unsigned b)
{
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
        return b;
    unsigned n = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF)))
            n++;
    return 256 + n;
}

/* ---- loading ---------------------------------------------------------------------------- */

struct loader {
    struct npu_tokenizer *t;
    const char *what; /* file name for messages */
};

#define LERR(L, ...)                                                                               \
    do {                                                                                           \
        char m_[400];                                                                              \
        snprintf(m_, sizeof(m_), __VA_ARGS__);                                                     \
        npu_err(TOK_DOM, "%s: %s", (L)->what, m_);                                                 \
    } while (0)

static const char *
jstr(const struct npu_json *o, const char *key)
{
    const struct npu_json *v = npu_json_get(o, key);
    return v && v->type == NPU_JSON_STRING ? v->str : NULL;
}

static bool
jbool(const struct npu_json *o, const char *key, bool dflt)
{
    const struct npu_json *v = npu_json_get(o, key);
    return v && v->type == NPU_JSON_BOOL ? v->b : dflt;
}

static bool
is_null(const struct npu_json *v)
{
    return !v || v->type == NPU_JSON_NULL;
}

static enum npu_status
need_type(struct loader *L, const struct npu_json *v, enum npu_json_type ty, const char *field)
{
    if (!v) {
        LERR(L, "%s: missing (expected %s)", field, npu_json_type_name(ty));
        return NPU_ERR_CORRUPT;
    }
    if (v->type != ty) {
        LERR(L, "%s: expected %s, found %s", field, npu_json_type_name(ty),
             npu_json_type_name(v->type));
        return NPU_ERR_CORRUPT;
    }
    return NPU_OK;
}

static enum npu_status
json_id(struct loader *L, const struct npu_json *v, const char *field, int32_t *out)
{
    if (!v || v->type != NPU_JSON_NUMBER || v->num < 0 || v->num > 0x7fffffff ||
        v->num != (double)(int32_t)v->num) {
        LERR(L, "%s: expected a non-negative integer id", field);
        return NPU_ERR_CORRUPT;
    }
    *out = (int32_t)v->num;
    return NPU_OK;
}

static enum npu_status
set_token(struct loader *L, int32_t id, const char *s, size_t len)
{
    struct npu_tokenizer *t = L->t;
    if ((size_t)id >= t->n_ids)
        return NPU_ERR_INTERNAL;
    if (t->tok[id])
        return NPU_OK; /* the vocabulary's spelling stays */
    t->tok[id] = malloc(len + 1);
    if (!t->tok[id])
        return NPU_ERR_NOMEM;
    memcpy(t->tok[id], s, len);
    t->tok[id][len] = '\0';
    t->tok_len[id] = (uint32_t)len;
    return NPU_OK;
}

#ifdef NPU_HAVE_PCRE2
/* Oniguruma's Unicode \s, which `tokenizers` compiles its patterns with: U+0009-000D, NEL
 * and the Zl, Zp, Zs categories. PCRE2's UCP \s differs at the edges (it adds U+180E), and
 * JavaScript's (transformers.js) adds U+FEFF and drops NEL. */
static const char onig_space[] = "\\t\\n\\x0B\\f\\r\\x{85}\\p{Zl}\\p{Zp}\\p{Zs}";

/* Rewrites \s and \S of a pattern to Oniguruma's set; everything else is copied. */
static int
onig_spaces(const char *pat, size_t len, struct buf *out)
{
    bool in_class = false;
    for (size_t i = 0; i < len; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < len) {
            char e = pat[i + 1];
            int r;
            if (e == 's')
                r = in_class ? buf_add(out, onig_space, sizeof(onig_space) - 1)
                             : (buf_add(out, "[", 1) ||
                                buf_add(out, onig_space, sizeof(onig_space) - 1) ||
                                buf_add(out, "]", 1));
            else if (e == 'S' && !in_class)
                r = buf_add(out, "[^", 2) || buf_add(out, onig_space, sizeof(onig_space) - 1) ||
                    buf_add(out, "]", 1);
            else
                r = buf_add(out, pat + i, 2);
            if (r)
                return -1;
            i++;
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = true;
            /* a leading ] or ^] is a literal inside the class */
            if (buf_add(out, pat + i, 1))
                return -1;
            if (i + 1 < len && pat[i + 1] == '^') {
                if (buf_add(out, "^", 1))
                    return -1;
                i++;
            }
            if (i + 1 < len && pat[i + 1] == ']') {
                if (buf_add(out, "]", 1))
                    return -1;
                i++;
            }
            continue;
        }
        if (c == ']' && in_class)
            in_class = false;
        if (buf_add(out, &c, 1))
            return -1;
    }
    return buf_add(out, "", 0);
}

static enum npu_status
compile_re(struct loader *L, const char *pat, size_t len, bool literal, const char *field,
           void **out)
{
    int errcode;
    PCRE2_SIZE erroff;
    /* PCRE2_LITERAL refuses PCRE2_UCP (nothing in a literal needs it) */
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    struct buf rw = {0};
    if (!literal) {
        if (onig_spaces(pat, len, &rw)) {
            free(rw.p);
            return NPU_ERR_NOMEM;
        }
        pat = rw.p;
        len = rw.n;
    }
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, len, opts, &errcode, &erroff, NULL);
    free(rw.p);
    if (!re) {
        PCRE2_UCHAR msg[200];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        LERR(L, "%s: regex does not compile at offset %zu: %s", field, (size_t)erroff,
             (const char *)msg);
        return NPU_ERR_CORRUPT;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional speed-up; falls back silently */
    *out = re;
    return NPU_OK;
}
#else
static enum npu_status
compile_re(struct loader *L, const char *pat, size_t len, bool literal, const char *field,
           void **out)
{
    (void)pat;
    (void)len;
    (void)out;
    if (literal) {
        /* literal patterns need no regex engine; kept as a string (see split_piece) */
        return NPU_OK;
    }
    LERR(L, "%s: this build has no regex engine (PCRE2, libpcre2-dev)", field);
    return NPU_ERR_UNSUPPORTED;
}
#endif

static void
re_free(void *re)
{
#ifdef NPU_HAVE_PCRE2
    if (re)
        pcre2_code_free(re);
#else
    (void)re;
#endif
}

/* Replace normalizer with a regex: every match of nm->re becomes nm->b. */
static int
replace_re(const struct tok_norm *nm, const char *s, size_t len, struct buf *out)
{
#ifdef NPU_HAVE_PCRE2
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(nm->re, NULL);
    if (!md)
        return -1;
    size_t pos = 0;
    int rc = -1;
    while (pos <= len) {
        int m = pcre2_match(nm->re, (PCRE2_SPTR)s, len, pos, 0, md, NULL);
        if (m < 0)
            break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (buf_add(out, s + pos, ov[0] - pos) || buf_add(out, nm->b, nm->blen))
            goto out;
        if (ov[1] == ov[0]) { /* empty match: keep one character, go on */
            if (ov[0] >= len)
                break;
            size_t l = utf8_len((unsigned char)s[ov[0]]);
            if (ov[0] + l > len)
                l = len - ov[0];
            if (buf_add(out, s + ov[0], l))
                goto out;
            pos = ov[0] + l;
        } else {
            pos = ov[1];
        }
    }
    rc = pos < len ? buf_add(out, s + pos, len - pos) : buf_add(out, "", 0);
out:
    pcre2_match_data_free(md);
    return rc;
#else
    (void)nm;
    return buf_add(out, s, len);
#endif
}

/* One typed component of tokenizer.json (normalizer, pre_tokenizer, decoder): null
 * is none; else an object with a "type", where "Sequence" lists components of the
 * same kind under list_key, each loaded the same way, and any other type is one()'s. */
typedef enum npu_status (*component_fn)(struct loader *L, const struct npu_json *n,
                                        const char *field, const char *type, void *user);

static enum npu_status
load_component(struct loader *L, const struct npu_json *n, const char *field, const char *list_key,
               component_fn one, void *user)
{
    enum npu_status st;
    char f[160];
    if (is_null(n))
        return NPU_OK;
    if ((st = need_type(L, n, NPU_JSON_OBJECT, field)))
        return st;
    const char *type = jstr(n, "type");
    if (!type) {
        LERR(L, "%s.type: missing", field);
        return NPU_ERR_CORRUPT;
    }
    if (strcmp(type, "Sequence"))
        return one(L, n, field, type, user);
    const struct npu_json *list = npu_json_get(n, list_key);
    snprintf(f, sizeof(f), "%s.%s", field, list_key);
    if ((st = need_type(L, list, NPU_JSON_ARRAY, f)))
        return st;
    for (size_t i = 0; i < list->len; i++) {
        snprintf(f, sizeof(f), "%s.%s[%zu]", field, list_key, i);
        if ((st = load_component(L, &list->items[i], f, list_key, one, user)))
            return st;
    }
    return NPU_OK;
}

static enum npu_status
add_norm(struct loader *L, struct tok_norm nm)
{
    struct npu_tokenizer *t = L->t;
    struct tok_norm *v = realloc(t->norm, (t->n_norm + 1) * sizeof(*v));
    if (!v)
        return NPU_ERR_NOMEM;
    t->norm = v;
    t->norm[t->n_norm++] = nm;
    return NPU_OK;
}

static char *
dupn(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

/* A normalizer other than Sequence (load_component). */
static enum npu_status
load_normalizer(struct loader *L, const struct npu_json *n, const char *field, const char *type,
                void *user)
{
    (void)user;
    enum npu_status st;
    char f[160];
    struct tok_norm nm = {0};
    if (!strcmp(type, "Prepend")) {
        const struct npu_json *p = npu_json_get(n, "prepend");
        snprintf(f, sizeof(f), "%s.prepend", field);
        if ((st = need_type(L, p, NPU_JSON_STRING, f)))
            return st;
        nm.kind = TOK_N_PREPEND;
        nm.a = dupn(p->str, p->len);
        nm.alen = p->len;
        if (!nm.a)
            return NPU_ERR_NOMEM;
    } else if (!strcmp(type, "Replace")) {
        const struct npu_json *pat = npu_json_get(n, "pattern");
        const struct npu_json *c = npu_json_get(n, "content");
        const struct npu_json *s = npu_json_get(pat, "String");
        snprintf(f, sizeof(f), "%s.content", field);
        if ((st = need_type(L, c, NPU_JSON_STRING, f)))
            return st;
        const struct npu_json *rx = npu_json_get(pat, "Regex");
        if (rx && rx->type == NPU_JSON_STRING) {
            /* a regex pattern (CLIP: "\\s+" -> " "), through PCRE2 */
            snprintf(f, sizeof(f), "%s.pattern.Regex", field);
            if ((st = compile_re(L, rx->str, rx->len, false, f, &nm.re)))
                return st;
            nm.kind = TOK_N_REPLACE_RE;
            nm.b = dupn(c->str, c->len);
            nm.blen = c->len;
            if (!nm.b) {
                re_free(nm.re);
                return NPU_ERR_NOMEM;
            }
            goto add;
        }
        if (!s || s->type != NPU_JSON_STRING) {
            LERR(L, "%s.pattern: expected {\"String\": ...} or {\"Regex\": ...}", field);
            return NPU_ERR_UNSUPPORTED;
        }
        nm.kind = TOK_N_REPLACE;
        nm.a = dupn(s->str, s->len);
        nm.alen = s->len;
        nm.b = dupn(c->str, c->len);
        nm.blen = c->len;
        if (!nm.a || !nm.b) {
            free(nm.a);
            free(nm.b);
            return NPU_ERR_NOMEM;
        }
    } else if (!strcmp(type, "NFC")) {
#ifndef NPU_HAVE_ICU
        LERR(L, "%s: normalizer NFC needs ICU (libicu-dev), which this build lacks", field);
        return NPU_ERR_UNSUPPORTED;
#endif
        nm.kind = TOK_N_NFC;
    } else if (!strcmp(type, "Lowercase")) {
        nm.kind = TOK_N_LOWERCASE;
    } else {
        LERR(L, "%s.type: normalizer '%s' is not supported", field, type);
        return NPU_ERR_UNSUPPORTED;
    }
add:
    st = add_norm(L, nm);
    if (st) {
        free(nm.a);
        free(nm.b);
        re_free(nm.re);
    }
    return st;
}

static enum npu_status
add_pre(struct loader *L, struct tok_pre p)
{
    struct npu_tokenizer *t = L->t;
    struct tok_pre *v = realloc(t->pre, (t->n_pre + 1) * sizeof(*v));
    if (!v)
        return NPU_ERR_NOMEM;
    t->pre = v;
    t->pre[t->n_pre++] = p;
    return NPU_OK;
}

static void
pre_free(struct tok_pre *p)
{
#ifdef NPU_HAVE_PCRE2
    if (p->re)
        pcre2_code_free(p->re);
#endif
    free(p->repl);
}

static enum npu_status
parse_behavior(struct loader *L, const struct npu_json *n, const char *field,
               enum tok_split_behavior *out)
{
    const char *b = jstr(n, "behavior");
    static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                  "Contiguous"};
    for (size_t i = 0; b && i < NPU_ARRAY_SIZE(names); i++) {
        if (!strcmp(b, names[i])) {
            *out = (enum tok_split_behavior)i;
            return NPU_OK;
        }
    }
    LERR(L,
         "%s.behavior: '%s' is not one of Removed, Isolated, MergedWithPrevious, "
         "MergedWithNext, Contiguous",
         field, b ? b : "(missing)");
    return NPU_ERR_CORRUPT;
}

/* A pre-tokenizer other than Sequence (load_component). */
static enum npu_status
load_pretok(struct loader *L, const struct npu_json *n, const char *field, const char *type,
            void *user)
{
    (void)user;
    enum npu_status st;
    char f[160];
    struct tok_pre p = {0};
    if (!strcmp(type, "ByteLevel")) {
        p.kind = TOK_P_BYTELEVEL;
        p.add_prefix_space = jbool(n, "add_prefix_space", true);
        p.behavior = TOK_SPLIT_ISOLATED;
        if (jbool(n, "use_regex", true)) {
            snprintf(f, sizeof(f), "%s (GPT-2 pattern)", field);
            if ((st = compile_re(L, gpt2_pattern, sizeof(gpt2_pattern) - 1, false, f, &p.re)))
                return st;
        }
    } else if (!strcmp(type, "Split")) {
        const struct npu_json *pat = npu_json_get(n, "pattern");
        const struct npu_json *re = npu_json_get(pat, "Regex");
        const struct npu_json *s = npu_json_get(pat, "String");
        p.kind = TOK_P_SPLIT;
        if ((st = parse_behavior(L, n, field, &p.behavior)))
            return st;
        p.invert = jbool(n, "invert", false);
        snprintf(f, sizeof(f), "%s.pattern", field);
        if (re && re->type == NPU_JSON_STRING) {
            if ((st = compile_re(L, re->str, re->len, false, f, &p.re)))
                return st;
        } else if (s && s->type == NPU_JSON_STRING) {
#ifdef NPU_HAVE_PCRE2
            if ((st = compile_re(L, s->str, s->len, true, f, &p.re)))
                return st;
#else
            LERR(L, "%s: this build has no regex engine (PCRE2, libpcre2-dev)", f);
            return NPU_ERR_UNSUPPORTED;
#endif
        } else {
            LERR(L, "%s: expected {\"Regex\": ...} or {\"String\": ...}", f);
            return NPU_ERR_CORRUPT;
        }
    } else if (!strcmp(type, "Digits")) {
        p.kind = TOK_P_SPLIT;
        p.behavior = TOK_SPLIT_ISOLATED;
        const char *pat = jbool(n, "individual_digits", false) ? "\\p{N}" : "\\p{N}+";
        if ((st = compile_re(L, pat, strlen(pat), false, field, &p.re)))
            return st;
    } else if (!strcmp(type, "Metaspace")) {
        p.kind = TOK_P_METASPACE;
        const char *r = jstr(n, "replacement");
        if (!r)
            r = "\xE2\x96\x81"; /* U+2581 */
        p.repl = dupn(r, strlen(r));
        if (!p.repl)
            return NPU_ERR_NOMEM;
        p.repl_len = strlen(r);
        p.split = jbool(n, "split", true);
        const char *scheme = jstr(n, "prepend_scheme");
        if (scheme) {
            if (!strcmp(scheme, "always"))
                p.prepend = 2;
            else if (!strcmp(scheme, "first"))
                p.prepend = 1;
            else if (!strcmp(scheme, "never"))
                p.prepend = 0;
            else {
                LERR(L, "%s.prepend_scheme: '%s' is not always, first or never", field, scheme);
                free(p.repl);
                return NPU_ERR_CORRUPT;
            }
        } else {
            p.prepend = jbool(n, "add_prefix_space", true) ? 2 : 0;
        }
    } else {
        LERR(L, "%s.type: pre-tokenizer '%s' is not supported", field, type);
        return NPU_ERR_UNSUPPORTED;
    }
    st = add_pre(L, p);
    if (st)
        pre_free(&p);
    return st;
}

/* Decoder chain, flattened into the per-id byte strings (see npu-detok.c). */
struct dec_step {
    enum tok_dec_kind kind;
    const char *a, *b; /* REPLACE a -> b; METASPACE a: replacement */
    size_t alen, blen;
    int start, stop;       /* STRIP */
    bool metaspace_prefix; /* METASPACE strips the first token's leading space */
};

/* Where load_decoder appends its steps. */
struct dec_list {
    struct dec_step *steps;
    size_t n_steps, max;
};

/* A decoder other than Sequence (load_component), appended to the dec_list user. */
static enum npu_status
load_decoder(struct loader *L, const struct npu_json *n, const char *field, const char *type,
             void *user)
{
    struct dec_list *dl = user;
    enum npu_status st;
    char f[160];
    if (dl->n_steps == dl->max) {
        LERR(L, "%s: more than %zu decoders", field, dl->max);
        return NPU_ERR_UNSUPPORTED;
    }
    struct dec_step d = {0};
    if (!strcmp(type, "ByteLevel")) {
        d.kind = TOK_D_BYTELEVEL;
    } else if (!strcmp(type, "ByteFallback")) {
        d.kind = TOK_D_BYTEFALLBACK;
    } else if (!strcmp(type, "Fuse")) {
        d.kind = TOK_D_FUSE;
    } else if (!strcmp(type, "Replace")) {
        const struct npu_json *s = npu_json_get(npu_json_get(n, "pattern"), "String");
        const struct npu_json *c = npu_json_get(n, "content");
        snprintf(f, sizeof(f), "%s.content", field);
        if ((st = need_type(L, c, NPU_JSON_STRING, f)))
            return st;
        if (!s || s->type != NPU_JSON_STRING) {
            LERR(L, "%s.pattern: only {\"String\": ...} patterns are supported", field);
            return NPU_ERR_UNSUPPORTED;
        }
        d.kind = TOK_D_REPLACE;
        d.a = s->str;
        d.alen = s->len;
        d.b = c->str;
        d.blen = c->len;
    } else if (!strcmp(type, "Strip")) {
        const char *content = jstr(n, "content");
        const struct npu_json *start = npu_json_get(n, "start");
        const struct npu_json *stop = npu_json_get(n, "stop");
        d.kind = TOK_D_STRIP;
        d.start = start && start->type == NPU_JSON_NUMBER ? (int)start->num : 0;
        d.stop = stop && stop->type == NPU_JSON_NUMBER ? (int)stop->num : 0;
        if (!content || strcmp(content, " ") || d.stop != 0 || d.start < 0 || d.start > 16) {
            LERR(L, "%s: only Strip of leading spaces (content \" \", stop 0) is supported", field);
            return NPU_ERR_UNSUPPORTED;
        }
    } else if (!strcmp(type, "Metaspace")) {
        const char *r = jstr(n, "replacement");
        d.kind = TOK_D_METASPACE;
        d.a = r ? r : "\xE2\x96\x81";
        d.alen = strlen(d.a);
        const char *scheme = jstr(n, "prepend_scheme");
        d.metaspace_prefix =
            scheme ? strcmp(scheme, "never") != 0 : jbool(n, "add_prefix_space", true);
    } else {
        LERR(L, "%s.type: decoder '%s' is not supported", field, type);
        return NPU_ERR_UNSUPPORTED;
    }
    dl->steps[dl->n_steps++] = d;
    return NPU_OK;
}

/* The byte string one token decodes to through the per-token decoders. */
static enum npu_status
decode_token(const struct npu_tokenizer *t, int32_t id, const struct dec_step *steps,
             size_t n_steps, const int16_t *cp_to_byte, struct buf *out)
{
    struct buf cur = {0}, nxt = {0};
    enum npu_status st = NPU_ERR_NOMEM;
    if (buf_add(&cur, t->tok[id], t->tok_len[id]))
        goto out;
    for (size_t i = 0; i < n_steps; i++) {
        const struct dec_step *d = &steps[i];
        nxt.n = 0;
        switch (d->kind) {
        case TOK_D_BYTELEVEL: {
            /* every character through the table; a token with a character outside it is
             * taken as its own bytes (as `tokenizers` does) */
            bool all = true;
            for (size_t k = 0; k < cur.n;) {
                const unsigned char *s = (const unsigned char *)cur.p + k;
                size_t l = utf8_len(s[0]);
                uint32_t cp = s[0];
                if (l == 2)
                    cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
                else if (l > 2)
                    cp = 0x110000; /* table characters are all below U+0800 */
                if (cp >= 0x800 || cp_to_byte[cp] < 0) {
                    all = false;
                    break;
                }
                char b = (char)cp_to_byte[cp];
                if (buf_add(&nxt, &b, 1))
                    goto out;
                k += l;
            }
            if (!all) {
                nxt.n = 0;
                if (buf_add(&nxt, cur.p, cur.n))
                    goto out;
            }
            break;
        }
        case TOK_D_BYTEFALLBACK: {
            unsigned v;
            char tail;
            if (cur.n == 6 && sscanf(cur.p, "<0x%2X%c", &v, &tail) == 2 && tail == '>') {
                char b = (char)v;
                if (buf_add(&nxt, &b, 1))
                    goto out;
            } else if (buf_add(&nxt, cur.p, cur.n)) {
                goto out;
            }
            break;
        }
        case TOK_D_REPLACE:
        case TOK_D_METASPACE:
            if (replace_all(cur.p, cur.n, d->a, d->alen, d->kind == TOK_D_REPLACE ? d->b : " ",
                            d->kind == TOK_D_REPLACE ? d->blen : 1, &nxt))
                goto out;
            break;
        case TOK_D_FUSE:
        case TOK_D_STRIP:
            if (buf_add(&nxt, cur.p, cur.n))
                goto out;
            break;
        }
        struct buf tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
    if (buf_add(out, cur.p ? cur.p : "", cur.n))
        goto out;
    st = NPU_OK;
out:
    free(cur.p);
    free(nxt.p);
    return st;
}

static enum npu_status
build_decoder(struct loader *L, const struct npu_json *dj)
{
    struct npu_tokenizer *t = L->t;
    struct dec_step steps[16];
    struct dec_list dl = {steps, 0, NPU_ARRAY_SIZE(steps)};
    enum npu_status st = load_component(L, dj, "decoder", "decoders", load_decoder, &dl);
    if (st)
        return st;
    size_t n_steps = dl.n_steps;
    bool fused = false;
    for (size_t i = 0; i < n_steps; i++) {
        if (steps[i].kind == TOK_D_FUSE)
            fused = true;
        if (steps[i].kind == TOK_D_STRIP) {
            if (!fused && steps[i].start) {
                LERR(L, "decoder: Strip before Fuse (per-token strip) is not supported");
                return NPU_ERR_UNSUPPORTED;
            }
            t->dec_strip_first = steps[i].start;
        }
        if (steps[i].kind == TOK_D_METASPACE && steps[i].metaspace_prefix)
            t->dec_metaspace_first = true;
    }
    int16_t cp_to_byte[0x800];
    for (size_t i = 0; i < NPU_ARRAY_SIZE(cp_to_byte); i++)
        cp_to_byte[i] = -1;
    for (unsigned b = 0; b < 256; b++)
        cp_to_byte[byte_to_cp(b)] = (int16_t)b;
    t->dec = calloc(t->n_ids, sizeof(*t->dec));
    t->dec_len = calloc(t->n_ids, sizeof(*t->dec_len));
    if (!t->dec || !t->dec_len)
        return NPU_ERR_NOMEM;
    struct buf b = {0};
    for (size_t id = 0; id < t->n_ids; id++) {
        if (!t->tok[id])
            continue;
        b.n = 0;
        if ((st = decode_token(t, (int32_t)id, steps, n_steps, cp_to_byte, &b))) {
            free(b.p);
            return st;
        }
        t->dec[id] = dupn(b.p ? b.p : "", b.n);
        if (!t->dec[id]) {
            free(b.p);
            return NPU_ERR_NOMEM;
        }
        t->dec_len[id] = (uint32_t)b.n;
    }
    free(b.p);
    return NPU_OK;
}

static int32_t
token_id(const struct npu_tokenizer *t, const char *s)
{
    return tok_strmap_get(&t->vocab, s, strlen(s));
}

static enum npu_status
add_ids(struct loader *L, int32_t **v, size_t *n, int32_t id)
{
    int32_t *nv = realloc(*v, (*n + 1) * sizeof(*nv));
    if (!nv)
        return NPU_ERR_NOMEM;
    nv[(*n)++] = id;
    *v = nv;
    return NPU_OK;
}

/* A post-processor other than Sequence (load_component). */
static enum npu_status
load_post(struct loader *L, const struct npu_json *n, const char *field, const char *type,
          void *user)
{
    (void)user;
    struct npu_tokenizer *t = L->t;
    enum npu_status st;
    char f[160];
    if (!strcmp(type, "ByteLevel"))
        return NPU_OK; /* offsets only */
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        const struct npu_json *cls = npu_json_get(n, "cls"), *sep = npu_json_get(n, "sep");
        int32_t a = 0, b = 0;
        if (!cls || cls->type != NPU_JSON_ARRAY || cls->len != 2 || !sep ||
            sep->type != NPU_JSON_ARRAY || sep->len != 2) {
            LERR(L, "%s: cls and sep must be [token, id] pairs", field);
            return NPU_ERR_CORRUPT;
        }
        snprintf(f, sizeof(f), "%s.cls[1]", field);
        if ((st = json_id(L, &cls->items[1], f, &a)))
            return st;
        snprintf(f, sizeof(f), "%s.sep[1]", field);
        if ((st = json_id(L, &sep->items[1], f, &b)))
            return st;
        if ((st = add_ids(L, &t->prefix, &t->n_prefix, a)))
            return st;
        return add_ids(L, &t->suffix, &t->n_suffix, b);
    }
    if (strcmp(type, "TemplateProcessing")) {
        LERR(L, "%s.type: post-processor '%s' is not supported", field, type);
        return NPU_ERR_UNSUPPORTED;
    }
    const struct npu_json *single = npu_json_get(n, "single");
    const struct npu_json *specials = npu_json_get(n, "special_tokens");
    snprintf(f, sizeof(f), "%s.single", field);
    if ((st = need_type(L, single, NPU_JSON_ARRAY, f)))
        return st;
    bool seen_seq = false;
    for (size_t i = 0; i < single->len; i++) {
        const struct npu_json *it = &single->items[i];
        const struct npu_json *sp = npu_json_get(it, "SpecialToken");
        if (npu_json_get(it, "Sequence")) {
            seen_seq = true;
            continue;
        }
        const char *name = jstr(sp, "id");
        if (!name) {
            LERR(L,
                 "%s.single[%zu]: expected {\"SpecialToken\": {\"id\": ...}} or "
                 "{\"Sequence\": ...}",
                 field, i);
            return NPU_ERR_CORRUPT;
        }
        const struct npu_json *ids = npu_json_get(npu_json_get(specials, name), "ids");
        snprintf(f, sizeof(f), "%s.special_tokens[\"%s\"].ids", field, name);
        if ((st = need_type(L, ids, NPU_JSON_ARRAY, f)))
            return st;
        for (size_t k = 0; k < ids->len; k++) {
            int32_t id;
            if ((st = json_id(L, &ids->items[k], f, &id)))
                return st;
            if ((size_t)id >= t->n_ids) {
                LERR(L, "%s: id %d is outside the vocabulary (%zu)", f, id, t->n_ids);
                return NPU_ERR_CORRUPT;
            }
            if ((st = seen_seq ? add_ids(L, &t->suffix, &t->n_suffix, id)
                               : add_ids(L, &t->prefix, &t->n_prefix, id)))
                return st;
        }
    }
    return NPU_OK;
}

static enum npu_status
load_model(struct loader *L, const struct npu_json *m, const struct npu_json *added)
{
    struct npu_tokenizer *t = L->t;
    enum npu_status st;
    char f[200];
    if ((st = need_type(L, m, NPU_JSON_OBJECT, "model")))
        return st;
    const char *type = jstr(m, "type");
    if (type && strcmp(type, "BPE")) {
        LERR(L, "model.type: '%s' is not supported (only BPE)", type);
        return NPU_ERR_UNSUPPORTED;
    }
    const struct npu_json *vocab = npu_json_get(m, "vocab");
    const struct npu_json *merges = npu_json_get(m, "merges");
    if ((st = need_type(L, vocab, NPU_JSON_OBJECT, "model.vocab")))
        return st;
    if ((st = need_type(L, merges, NPU_JSON_ARRAY, "model.merges")))
        return st;
    const struct npu_json *v;
    if ((v = npu_json_get(m, "continuing_subword_prefix")) && !is_null(v) &&
        !(v->type == NPU_JSON_STRING && v->len == 0)) {
        LERR(L, "model.continuing_subword_prefix: not supported");
        return NPU_ERR_UNSUPPORTED;
    }
    if ((v = npu_json_get(m, "end_of_word_suffix")) && !is_null(v) &&
        !(v->type == NPU_JSON_STRING && v->len == 0)) {
        /* CLIP: "</w>" marks a word's last symbol (bpe_piece) */
        if (v->type != NPU_JSON_STRING) {
            LERR(L, "model.end_of_word_suffix: expected a string");
            return NPU_ERR_CORRUPT;
        }
        t->eow = dupn(v->str, v->len);
        if (!t->eow)
            return NPU_ERR_NOMEM;
        t->eow_len = v->len;
    }
    if ((v = npu_json_get(m, "dropout")) && !is_null(v) &&
        !(v->type == NPU_JSON_NUMBER && v->num == 0)) {
        LERR(L, "model.dropout: BPE dropout is not supported (encoding is deterministic)");
        return NPU_ERR_UNSUPPORTED;
    }
    t->byte_fallback = jbool(m, "byte_fallback", false);
    t->fuse_unk = jbool(m, "fuse_unk", false);
    t->ignore_merges = jbool(m, "ignore_merges", false);

    /* the id space: vocabulary and added tokens */
    int32_t max_id = -1;
    for (size_t i = 0; i < vocab->len; i++) {
        int32_t id;
        snprintf(f, sizeof(f), "model.vocab[\"%.60s\"]", vocab->keys[i]);
        if ((st = json_id(L, &vocab->items[i], f, &id)))
            return st;
        if (id > max_id)
            max_id = id;
    }
    if (!is_null(added)) {
        if ((st = need_type(L, added, NPU_JSON_ARRAY, "added_tokens")))
            return st;
        for (size_t i = 0; i < added->len; i++) {
            int32_t id;
            snprintf(f, sizeof(f), "added_tokens[%zu].id", i);
            if ((st = json_id(L, npu_json_get(&added->items[i], "id"), f, &id)))
                return st;
            if (id > max_id)
                max_id = id;
        }
    }
    if (max_id < 0) {
        LERR(L, "model.vocab: empty");
        return NPU_ERR_CORRUPT;
    }
    if (max_id >= (1 << 24)) {
        LERR(L, "model.vocab: id %d is implausibly large", max_id);
        return NPU_ERR_CORRUPT;
    }
    t->n_ids = (size_t)max_id + 1;
    t->tok = calloc(t->n_ids, sizeof(*t->tok));
    t->tok_len = calloc(t->n_ids, sizeof(*t->tok_len));
    t->is_added = calloc(t->n_ids, 1);
    if (!t->tok || !t->tok_len || !t->is_added)
        return NPU_ERR_NOMEM;
    if (strmap_init(&t->vocab, vocab->len + (added ? added->len : 0)))
        return NPU_ERR_NOMEM;
    for (size_t i = 0; i < vocab->len; i++) {
        int32_t id = (int32_t)vocab->items[i].num;
        if (t->tok[id]) {
            LERR(L, "model.vocab: id %d is given to both \"%.60s\" and \"%.60s\"", id, t->tok[id],
                 vocab->keys[i]);
            return NPU_ERR_CORRUPT;
        }
        if ((st = set_token(L, id, vocab->keys[i], vocab->key_lens[i])))
            return st;
        if (strmap_put(&t->vocab, t->tok[id], t->tok_len[id], id))
            return NPU_ERR_NOMEM;
    }

    /* merges: "a b" strings (older files) or ["a", "b"] pairs (tokenizers >= 0.20) */
    if (mergemap_init(&t->merges, merges->len))
        return NPU_ERR_NOMEM;
    struct buf joined = {0};
    for (size_t i = 0; i < merges->len; i++) {
        const struct npu_json *it = &merges->items[i];
        const char *a, *b;
        size_t alen, blen;
        if (it->type == NPU_JSON_STRING) {
            const char *sp = memchr(it->str, ' ', it->len);
            if (!sp || memchr(sp + 1, ' ', it->len - (size_t)(sp + 1 - it->str))) {
                LERR(L, "model.merges[%zu]: \"%.60s\" is not two tokens separated by one space", i,
                     it->str);
                free(joined.p);
                return NPU_ERR_CORRUPT;
            }
            a = it->str;
            alen = (size_t)(sp - it->str);
            b = sp + 1;
            blen = it->len - alen - 1;
        } else if (it->type == NPU_JSON_ARRAY && it->len == 2 &&
                   it->items[0].type == NPU_JSON_STRING && it->items[1].type == NPU_JSON_STRING) {
            a = it->items[0].str;
            alen = it->items[0].len;
            b = it->items[1].str;
            blen = it->items[1].len;
        } else {
            LERR(L, "model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]", i);
            free(joined.p);
            return NPU_ERR_CORRUPT;
        }
        int32_t ia = tok_strmap_get(&t->vocab, a, alen);
        int32_t ib = tok_strmap_get(&t->vocab, b, blen);
        joined.n = 0;
        if (buf_add(&joined, a, alen) || buf_add(&joined, b, blen)) {
            free(joined.p);
            return NPU_ERR_NOMEM;
        }
        int32_t io = tok_strmap_get(&t->vocab, joined.p, joined.n);
        if (ia < 0 || ib < 0 || io < 0) {
            LERR(L, "model.merges[%zu]: \"%.*s\" + \"%.*s\": %s is not in model.vocab", i,
                 (int)NPU_MIN(alen, 60), a, (int)NPU_MIN(blen, 60), b,
                 ia < 0   ? "the first part"
                 : ib < 0 ? "the second part"
                          : "the merged token");
            free(joined.p);
            return NPU_ERR_CORRUPT;
        }
        mergemap_put(&t->merges, ia, ib, (uint32_t)i, io);
    }
    free(joined.p);

    /* unk and byte-fallback tokens */
    t->unk_id = -1;
    const struct npu_json *unk = npu_json_get(m, "unk_token");
    if (!is_null(unk)) {
        if ((st = need_type(L, unk, NPU_JSON_STRING, "model.unk_token")))
            return st;
        t->unk_id = tok_strmap_get(&t->vocab, unk->str, unk->len);
        if (t->unk_id < 0) {
            LERR(L, "model.unk_token: \"%.60s\" is not in model.vocab", unk->str);
            return NPU_ERR_CORRUPT;
        }
    }
    for (unsigned b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof(name), "<0x%02X>", b);
        t->byte_ids[b] = t->byte_fallback ? token_id(t, name) : -1;
    }

    /* added tokens: in the id space, and split out of the text before the model */
    if (!is_null(added)) {
        t->added = calloc(added->len ? added->len : 1, sizeof(*t->added));
        if (!t->added)
            return NPU_ERR_NOMEM;
        for (size_t i = 0; i < added->len; i++) {
            const struct npu_json *it = &added->items[i];
            const struct npu_json *c = npu_json_get(it, "content");
            snprintf(f, sizeof(f), "added_tokens[%zu].content", i);
            if ((st = need_type(L, c, NPU_JSON_STRING, f)))
                return st;
            if (!c->len) {
                LERR(L, "%s: empty", f);
                return NPU_ERR_CORRUPT;
            }
            struct tok_added *a = &t->added[t->n_added++];
            a->id = (int32_t)npu_json_get(it, "id")->num;
            a->content = dupn(c->str, c->len);
            if (!a->content)
                return NPU_ERR_NOMEM;
            a->len = c->len;
            a->special = jbool(it, "special", false);
            a->lstrip = jbool(it, "lstrip", false);
            a->rstrip = jbool(it, "rstrip", false);
            a->single_word = jbool(it, "single_word", false);
            if ((st = set_token(L, a->id, c->str, c->len)))
                return st;
            t->is_added[a->id] = a->special ? 2 : 1;
            if (strmap_put(&t->vocab, t->tok[a->id], t->tok_len[a->id], a->id))
                return NPU_ERR_NOMEM;
        }
    }
    return NPU_OK;
}

static int
cmp_added_len(const void *pa, const void *pb)
{
    const struct tok_added *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static enum npu_status
load_doc(struct npu_tokenizer *t, const char *json, size_t len, const char *what)
{
    struct loader L = {.t = t, .what = what};
    char err[240];
    enum npu_status st;
    struct npu_json_doc *doc = npu_json_parse(json, len, err, sizeof(err));
    if (!doc) {
        LERR(&L, "not valid JSON: %s", err);
        return NPU_ERR_CORRUPT;
    }
    const struct npu_json *root = npu_json_root(doc);
    if ((st = need_type(&L, root, NPU_JSON_OBJECT, "(top level)")))
        goto out;
    const struct npu_json *trunc = npu_json_get(root, "truncation");
    const struct npu_json *pad = npu_json_get(root, "padding");
    (void)trunc; /* truncation and padding concern batches; ignored for single texts */
    (void)pad;
    if ((st = load_model(&L, npu_json_get(root, "model"), npu_json_get(root, "added_tokens"))))
        goto out;
    if ((st = load_component(&L, npu_json_get(root, "normalizer"), "normalizer", "normalizers",
                             load_normalizer, NULL)))
        goto out;
    if ((st = load_component(&L, npu_json_get(root, "pre_tokenizer"), "pre_tokenizer",
                             "pretokenizers", load_pretok, NULL)))
        goto out;
    if ((st = load_component(&L, npu_json_get(root, "post_processor"), "post_processor",
                             "processors", load_post, NULL)))
        goto out;
    if ((st = build_decoder(&L, npu_json_get(root, "decoder"))))
        goto out;
    if (t->n_added)
        qsort(t->added, t->n_added, sizeof(*t->added), cmp_added_len);
    t->bos = t->n_prefix ? t->prefix[0] : -1;
    t->eos = -1;
    static const char *eos_names[] = {"</s>",       "<|endoftext|>", "<|end_of_text|>",
                                      "<|im_end|>", "<|eot_id|>",    "<eos>"};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(eos_names) && t->eos < 0; i++) {
        int32_t id = token_id(t, eos_names[i]);
        if (id >= 0 && t->is_added[id])
            t->eos = id;
    }
out:
    if (st == NPU_ERR_NOMEM)
        LERR(&L, "out of memory");
    npu_json_free(doc);
    return st;
}

enum npu_status
npu_tokenizer_load_json(const char *json, size_t len, struct npu_tokenizer **out)
{
    if (!json || !out) {
        npu_err(TOK_DOM, "npu_tokenizer_load_json: NULL argument");
        return NPU_ERR_INVALID;
    }
    *out = NULL;
    struct npu_tokenizer *t = calloc(1, sizeof(*t));
    if (!t)
        return NPU_ERR_NOMEM;
    enum npu_status st = load_doc(t, json, len, "tokenizer.json");
    if (st) {
        npu_tokenizer_free(t);
        return st;
    }
    *out = t;
    return NPU_OK;
}

/* A token named in a side file: a string or {"content": ...}. */
static int32_t
side_token(const struct npu_tokenizer *t, const struct npu_json *v)
{
    if (v && v->type == NPU_JSON_OBJECT)
        v = npu_json_get(v, "content");
    if (!v || v->type != NPU_JSON_STRING)
        return -1;
    return tok_strmap_get(&t->vocab, v->str, v->len);
}

static int32_t
side_id(const struct npu_tokenizer *t, const struct npu_json *v)
{
    if (v && v->type == NPU_JSON_ARRAY && v->len)
        v = &v->items[0];
    if (!v || v->type != NPU_JSON_NUMBER || v->num < 0 || (size_t)v->num >= t->n_ids)
        return -1;
    return (int32_t)v->num;
}

/* The special tokens encode(add_special) puts around the text when tokenizer_config.json says
 * add_bos_token / add_eos_token: Python transformers then rebuilds the post-processor from
 * them (TokenizersBackend.update_post_processor in v5, LlamaTokenizerFast's in v4): BOS
 * (the file's bos_token) first when add_bos_token is true, EOS (its eos_token) last when
 * add_eos_token is, either left out when the file names no such token; tokenizer.json's own
 * template is not used then. Qwen2 has no BOS; some LLaMA-3 derived folders say
 * add_bos_token false over a template that adds one. */
static enum npu_status
side_template(struct npu_tokenizer *t, bool add_bos, int32_t bos, bool add_eos, int32_t eos)
{
    int32_t *pre = NULL, *suf = NULL;
    if ((add_bos && bos >= 0 && !(pre = malloc(sizeof(*pre)))) ||
        (add_eos && eos >= 0 && !(suf = malloc(sizeof(*suf))))) {
        free(pre);
        npu_err(TOK_DOM, "out of memory reading tokenizer_config.json");
        return NPU_ERR_NOMEM;
    }
    free(t->prefix);
    free(t->suffix);
    t->prefix = pre;
    t->suffix = suf;
    t->n_prefix = pre ? 1 : 0;
    t->n_suffix = suf ? 1 : 0;
    if (pre)
        pre[0] = bos;
    if (suf)
        suf[0] = eos;
    return NPU_OK;
}

/* BOS / EOS from tokenizer_config.json, else config.json (a model folder's side files), and
 * tokenizer_config.json's add_bos_token / add_eos_token (side_template). */
static enum npu_status
read_side_files(struct npu_tokenizer *t, const char *dir)
{
    static const char *files[] = {"tokenizer_config.json", "config.json"};
    int32_t bos = -1, eos = -1;
    int add_bos = -1, add_eos = -1; /* -1: the key is absent */
    enum npu_status st = NPU_OK;
    for (size_t k = 0; k < NPU_ARRAY_SIZE(files); k++) {
        char path[4096];
        size_t len;
        snprintf(path, sizeof(path), "%s/%s", dir, files[k]);
        char *buf;
        if (npu_read_file(path, NULL, &buf, &len))
            continue;
        char err[200];
        struct npu_json_doc *doc = npu_json_parse(buf, len, err, sizeof(err));
        if (!doc) {
            npu_warn(TOK_DOM, "%s: not valid JSON (%s); BOS/EOS not read from it", path, err);
            free(buf);
            continue;
        }
        const struct npu_json *r = npu_json_root(doc);
        if (k == 0) {
            bos = side_token(t, npu_json_get(r, "bos_token"));
            eos = side_token(t, npu_json_get(r, "eos_token"));
            const struct npu_json *ab = npu_json_get(r, "add_bos_token");
            const struct npu_json *ae = npu_json_get(r, "add_eos_token");
            if (ab)
                add_bos = ab->type == NPU_JSON_BOOL && ab->b;
            if (ae)
                add_eos = ae->type == NPU_JSON_BOOL && ae->b;
            if (add_bos >= 0 || add_eos >= 0)
                st = side_template(t, add_bos > 0, bos, add_eos > 0, eos);
        } else {
            if (bos < 0)
                bos = side_id(t, npu_json_get(r, "bos_token_id"));
            if (eos < 0)
                eos = side_id(t, npu_json_get(r, "eos_token_id"));
        }
        npu_json_free(doc);
        free(buf);
        if (st)
            return st;
    }
    if (bos >= 0)
        t->bos = bos;
    if (eos >= 0)
        t->eos = eos;
    return NPU_OK;
}

enum npu_status
npu_tokenizer_load(const char *path, struct npu_tokenizer **out)
{
    if (!path || !out) {
        npu_err(TOK_DOM, "npu_tokenizer_load: NULL argument");
        return NPU_ERR_INVALID;
    }
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb)) {
        npu_err(TOK_DOM, "%s: %s", path, strerror(errno));
        return NPU_ERR_IO;
    }
    char file[4096];
    bool dir = S_ISDIR(sb.st_mode);
    if (dir)
        snprintf(file, sizeof(file), "%s/tokenizer.json", path);
    else
        snprintf(file, sizeof(file), "%s", path);
    size_t len;
    char *buf;
    enum npu_status rst = npu_read_file(file, TOK_DOM, &buf, &len);
    if (rst)
        return rst;
    struct npu_tokenizer *t = calloc(1, sizeof(*t));
    if (!t) {
        free(buf);
        return NPU_ERR_NOMEM;
    }
    enum npu_status st = load_doc(t, buf, len, file);
    free(buf);
    if (st) {
        npu_tokenizer_free(t);
        return st;
    }
    if (dir && (st = read_side_files(t, path))) {
        npu_tokenizer_free(t);
        return st;
    }
    *out = t;
    return NPU_OK;
}

void
npu_tokenizer_free(struct npu_tokenizer *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_ids; i++) {
        if (t->tok)
            free(t->tok[i]);
        if (t->dec)
            free(t->dec[i]);
    }
    free(t->tok);
    free(t->tok_len);
    free(t->is_added);
    free(t->dec);
    free(t->dec_len);
    strmap_free(&t->vocab);
    mergemap_free(&t->merges);
    for (size_t i = 0; i < t->n_added; i++)
        free(t->added[i].content);
    free(t->added);
    for (size_t i = 0; i < t->n_norm; i++) {
        free(t->norm[i].a);
        free(t->norm[i].b);
        re_free(t->norm[i].re);
    }
    free(t->eow);
    free(t->norm);
    for (size_t i = 0; i < t->n_pre; i++)
        pre_free(&t->pre[i]);
    free(t->pre);
    free(t->prefix);
    free(t->suffix);
    free(t);
}

/* ---- encoding --------------------------------------------------------------------------- */

#ifdef NPU_HAVE_ICU
static int
nfc(const char *s, size_t len, struct buf *out)
{
    bool ascii = true;
    for (size_t i = 0; i < len && ascii; i++)
        ascii = (unsigned char)s[i] < 0x80;
    if (ascii)
        return buf_add(out, s, len);
    UErrorCode e = U_ZERO_ERROR;
    const UNormalizer2 *n2 = unorm2_getNFCInstance(&e);
    if (U_FAILURE(e))
        return -1;
    int32_t ulen = 0;
    int rc = -1;
    UChar *u = malloc((len + 1) * sizeof(UChar)), *v = NULL;
    char *o = NULL;
    if (!u)
        goto out;
    u_strFromUTF8(u, (int32_t)len + 1, &ulen, s, (int32_t)len, &e);
    if (U_FAILURE(e))
        goto out;
    int32_t vcap = ulen * 3 + 16;
    v = malloc((size_t)vcap * sizeof(UChar));
    if (!v)
        goto out;
    int32_t vlen = unorm2_normalize(n2, u, ulen, v, vcap, &e);
    if (U_FAILURE(e))
        goto out;
    int32_t olen = 0;
    o = malloc((size_t)vlen * 3 + 1);
    if (!o)
        goto out;
    u_strToUTF8(o, vlen * 3 + 1, &olen, v, vlen, &e);
    if (U_FAILURE(e))
        goto out;
    rc = buf_add(out, o, (size_t)olen);
out:
    free(o);
    free(v);
    free(u);
    return rc;
}
#endif

/* ASCII-and-Latin lowercase is not enough for Lowercase in general; it is only used by
 * tokenizers outside this file's scope, so it lowercases ASCII and says so in the docs. */
static int
normalize(const struct npu_tokenizer *t, const char *s, size_t len, struct buf *out)
{
    struct buf cur = {0}, nxt = {0};
    int rc = -1;
    if (buf_add(&cur, s, len))
        goto out;
    for (size_t i = 0; i < t->n_norm; i++) {
        const struct tok_norm *nm = &t->norm[i];
        nxt.n = 0;
        switch (nm->kind) {
        case TOK_N_PREPEND:
            if (cur.n && (buf_add(&nxt, nm->a, nm->alen) || buf_add(&nxt, cur.p, cur.n)))
                goto out;
            break;
        case TOK_N_REPLACE:
            if (replace_all(cur.p, cur.n, nm->a, nm->alen, nm->b, nm->blen, &nxt))
                goto out;
            break;
        case TOK_N_NFC:
#ifdef NPU_HAVE_ICU
            if (nfc(cur.p, cur.n, &nxt))
                goto out;
#endif
            break;
        case TOK_N_REPLACE_RE:
            if (replace_re(nm, cur.p, cur.n, &nxt))
                goto out;
            break;
        case TOK_N_LOWERCASE:
            if (buf_add(&nxt, cur.p, cur.n))
                goto out;
            for (size_t k = 0; k < nxt.n; k++)
                if (nxt.p[k] >= 'A' && nxt.p[k] <= 'Z')
                    nxt.p[k] = (char)(nxt.p[k] - 'A' + 'a');
            break;
        }
        struct buf tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
    rc = buf_add(out, cur.p ? cur.p : "", cur.n);
out:
    free(cur.p);
    free(nxt.p);
    return rc;
}

/* Splits one piece by a regex and the behaviour, appending the parts to out. */
static int
split_piece(const struct tok_pre *p, const char *s, size_t len, struct pieces *out)
{
#ifdef NPU_HAVE_PCRE2
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->re, NULL);
    if (!md)
        return -1;
    /* spans: [start, end, is_match] */
    size_t pos = 0, last = 0;
    int rc = 0;
    struct span {
        size_t a, b;
        bool m;
    } *sp = NULL;
    size_t nsp = 0, cap = 0;
#define PUSH_SPAN(A, B, M)                                                                         \
    do {                                                                                           \
        if (nsp == cap) {                                                                          \
            cap = cap ? cap * 2 : 16;                                                              \
            struct span *ns = realloc(sp, cap * sizeof(*ns));                                      \
            if (!ns) {                                                                             \
                rc = -1;                                                                           \
                goto out;                                                                          \
            }                                                                                      \
            sp = ns;                                                                               \
        }                                                                                          \
        sp[nsp].a = (A);                                                                           \
        sp[nsp].b = (B);                                                                           \
        sp[nsp].m = (M);                                                                           \
        nsp++;                                                                                     \
    } while (0)
    while (pos <= len) {
        int r = pcre2_match(p->re, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (r == PCRE2_ERROR_NOMATCH)
            break;
        if (r < 0) {
            rc = -1;
            goto out;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (b == a) { /* empty match: step one character */
            pos = a + (a < len ? utf8_len((unsigned char)s[a]) : 1);
            continue;
        }
        if (a > last)
            PUSH_SPAN(last, a, false);
        PUSH_SPAN(a, b, true);
        last = pos = b;
    }
    if (last < len)
        PUSH_SPAN(last, len, false);
    if (p->invert)
        for (size_t i = 0; i < nsp; i++)
            sp[i].m = !sp[i].m;
    /* combine by behaviour */
    size_t pend_a = 0, pend_b = 0;
    bool pend = false;
    for (size_t i = 0; i < nsp; i++) {
        size_t a = sp[i].a, b = sp[i].b;
        switch (p->behavior) {
        case TOK_SPLIT_REMOVED:
            if (!sp[i].m && pieces_add(out, s + a, b - a))
                rc = -1;
            break;
        case TOK_SPLIT_ISOLATED:
            if (pieces_add(out, s + a, b - a))
                rc = -1;
            break;
        case TOK_SPLIT_CONTIGUOUS:
            if (pend && sp[i].m && sp[i - 1].m) {
                pend_b = b;
                break;
            }
            if (pend && pieces_add(out, s + pend_a, pend_b - pend_a))
                rc = -1;
            pend = true;
            pend_a = a;
            pend_b = b;
            break;
        case TOK_SPLIT_MERGED_PREV:
            if (sp[i].m && pend) {
                pend_b = b;
                if (pieces_add(out, s + pend_a, pend_b - pend_a))
                    rc = -1;
                pend = false;
                break;
            }
            if (pend && pieces_add(out, s + pend_a, pend_b - pend_a))
                rc = -1;
            pend = !sp[i].m;
            pend_a = a;
            pend_b = b;
            if (sp[i].m && pieces_add(out, s + a, b - a))
                rc = -1;
            break;
        case TOK_SPLIT_MERGED_NEXT:
            if (sp[i].m) {
                if (pend && pieces_add(out, s + pend_a, pend_b - pend_a))
                    rc = -1;
                pend = true;
                pend_a = a;
                pend_b = b;
            } else if (pend) {
                pend_b = b;
                if (pieces_add(out, s + pend_a, pend_b - pend_a))
                    rc = -1;
                pend = false;
            } else if (pieces_add(out, s + a, b - a)) {
                rc = -1;
            }
            break;
        }
        if (rc)
            goto out;
    }
    if (pend && pieces_add(out, s + pend_a, pend_b - pend_a))
        rc = -1;
#undef PUSH_SPAN
out:
    free(sp);
    pcre2_match_data_free(md);
    return rc;
#else
    (void)p;
    return pieces_add(out, s, len);
#endif
}

static int
bytelevel_map(const char *s, size_t len, struct buf *out)
{
    for (size_t i = 0; i < len; i++) {
        char u[4];
        size_t n = tok_utf8_put(u, byte_to_cp((unsigned char)s[i]));
        if (buf_add(out, u, n))
            return -1;
    }
    return buf_add(out, "", 0);
}

/* Metaspace: spaces to the replacement, the prefix, and the split before each replacement. */
static int
metaspace_piece(const struct tok_pre *p, const char *s, size_t len, bool at_start,
                struct pieces *out)
{
    struct buf b = {0};
    int rc = -1;
    bool prepend = p->prepend == 2 || (p->prepend == 1 && at_start);
    /* the prefix goes in unless the text, spaces replaced, already starts with it */
    if (prepend && !(len && s[0] == ' ') &&
        !(len >= p->repl_len && memcmp(s, p->repl, p->repl_len) == 0))
        if (buf_add(&b, p->repl, p->repl_len))
            goto out;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ' ' ? buf_add(&b, p->repl, p->repl_len) : buf_add(&b, s + i, 1))
            goto out;
    if (!b.n) {
        rc = 0;
        goto out;
    }
    if (!p->split) {
        rc = pieces_add(out, b.p, b.n);
        goto out;
    }
    size_t start = 0;
    for (size_t i = 1; i + p->repl_len <= b.n; i++) {
        if (memcmp(b.p + i, p->repl, p->repl_len) == 0) {
            if (pieces_add(out, b.p + start, i - start))
                goto out;
            start = i;
        }
    }
    rc = pieces_add(out, b.p + start, b.n - start);
out:
    free(b.p);
    return rc;
}

static int
pretokenize(const struct npu_tokenizer *t, const char *s, size_t len, bool at_start,
            struct pieces *out)
{
    struct pieces cur = {0}, nxt = {0};
    int rc = -1;
    if (pieces_add(&cur, s, len))
        goto out;
    for (size_t k = 0; k < t->n_pre; k++) {
        const struct tok_pre *p = &t->pre[k];
        for (size_t i = 0; i < cur.n; i++) {
            const char *ps = cur.v[i].s;
            size_t pl = cur.v[i].len;
            if (p->kind == TOK_P_METASPACE) {
                if (metaspace_piece(p, ps, pl, at_start && i == 0, &nxt))
                    goto out;
            } else if (p->kind == TOK_P_SPLIT) {
                if (split_piece(p, ps, pl, &nxt))
                    goto out;
            } else { /* BYTELEVEL */
                struct buf pre = {0};
                /* every piece so far gets the prefix, as `tokenizers` does */
                if (p->add_prefix_space && ps[0] != ' ') {
                    if (buf_add(&pre, " ", 1)) {
                        free(pre.p);
                        goto out;
                    }
                }
                if (buf_add(&pre, ps, pl)) {
                    free(pre.p);
                    goto out;
                }
                struct pieces parts = {0};
                int r =
                    p->re ? split_piece(p, pre.p, pre.n, &parts) : pieces_add(&parts, pre.p, pre.n);
                free(pre.p);
                for (size_t j = 0; !r && j < parts.n; j++) {
                    struct buf m = {0};
                    r = bytelevel_map(parts.v[j].s, parts.v[j].len, &m) ||
                        pieces_add(&nxt, m.p, m.n);
                    free(m.p);
                }
                pieces_free(&parts);
                if (r)
                    goto out;
            }
        }
        pieces_free(&cur);
        cur = nxt;
        memset(&nxt, 0, sizeof(nxt));
    }
    *out = cur;
    memset(&cur, 0, sizeof(cur));
    rc = 0;
out:
    pieces_free(&cur);
    pieces_free(&nxt);
    return rc;
}

struct bpe_cand {
    uint32_t rank;
    uint32_t pos; /* left symbol */
    int32_t left, right;
};

static bool
cand_less(const struct bpe_cand *a, const struct bpe_cand *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

struct bpe_heap {
    struct bpe_cand *v;
    size_t n, cap;
};

static int
heap_push(struct bpe_heap *h, struct bpe_cand c)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct bpe_cand *v = realloc(h->v, cap * sizeof(*v));
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && cand_less(&c, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = c;
    return 0;
}

static struct bpe_cand
heap_pop(struct bpe_heap *h)
{
    struct bpe_cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && cand_less(&h->v[c + 1], &h->v[c]))
            c++;
        if (!cand_less(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* Merges sym in place by rank; O(n log n) in the symbols of the piece. */
static enum npu_status
bpe_merge(const struct npu_tokenizer *t, struct ids *sym)
{
    size_t n = sym->n;
    int32_t *next = malloc(n * sizeof(*next)), *prev = malloc(n * sizeof(*prev));
    struct bpe_heap h = {0};
    enum npu_status st = NPU_ERR_NOMEM;
    if (!next || !prev)
        goto out;
    for (size_t i = 0; i < n; i++) {
        next[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
        prev[i] = (int32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t r;
        int32_t o;
        if (mergemap_get(&t->merges, sym->v[i], sym->v[i + 1], &r, &o) &&
            heap_push(&h, (struct bpe_cand){r, (uint32_t)i, sym->v[i], sym->v[i + 1]}))
            goto out;
    }
    while (h.n) {
        struct bpe_cand c = heap_pop(&h);
        int32_t a = (int32_t)c.pos, b = next[a];
        /* stale: a was merged away (marked -2), or a neighbour changed */
        if (sym->v[a] != c.left || b < 0 || sym->v[b] != c.right || prev[a] == -2)
            continue;
        uint32_t r;
        int32_t o, unused;
        mergemap_get(&t->merges, c.left, c.right, &r, &o);
        sym->v[a] = o;
        next[a] = next[b];
        if (next[b] >= 0)
            prev[next[b]] = a;
        prev[b] = -2;
        sym->v[b] = -1;
        if (prev[a] >= 0 && mergemap_get(&t->merges, sym->v[prev[a]], o, &r, &unused) &&
            heap_push(&h, (struct bpe_cand){r, (uint32_t)prev[a], sym->v[prev[a]], o}))
            goto out;
        if (next[a] >= 0 && mergemap_get(&t->merges, o, sym->v[next[a]], &r, &unused) &&
            heap_push(&h, (struct bpe_cand){r, (uint32_t)a, sym->v[a], sym->v[next[a]]}))
            goto out;
    }
    /* compact the survivors in order */
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = next[i])
        sym->v[k++] = sym->v[i];
    sym->n = k;
    st = NPU_OK;
out:
    free(h.v);
    free(next);
    free(prev);
    return st;
}

/* Runs the BPE model over one piece. */
static enum npu_status
bpe_piece(const struct npu_tokenizer *t, const char *s, size_t len, struct ids *out)
{
    if (t->ignore_merges) {
        int32_t id = tok_strmap_get(&t->vocab, s, len);
        if (id >= 0 && !t->is_added[id])
            return ids_add(out, id) ? NPU_ERR_NOMEM : NPU_OK;
    }
    struct ids sym = {0};
    enum npu_status st = NPU_ERR_NOMEM;
    for (size_t i = 0; i < len;) {
        size_t l = utf8_len((unsigned char)s[i]);
        if (i + l > len)
            l = len - i;
        int32_t id;
        if (t->eow && i + l == len) {
            /* the word's last character carries the end-of-word suffix ("e</w>") */
            char key[4 + 64];
            if (l + t->eow_len > sizeof(key)) {
                npu_err(TOK_DOM, "end_of_word_suffix is longer than 64 bytes");
                st = NPU_ERR_UNSUPPORTED;
                goto out;
            }
            memcpy(key, s + i, l);
            memcpy(key + l, t->eow, t->eow_len);
            id = tok_strmap_get(&t->vocab, key, l + t->eow_len);
        } else {
            id = tok_strmap_get(&t->vocab, s + i, l);
        }
        if (id < 0 && t->byte_fallback) {
            bool all = true;
            for (size_t k = 0; k < l; k++)
                all = all && t->byte_ids[(unsigned char)s[i + k]] >= 0;
            if (all) {
                for (size_t k = 0; k < l; k++)
                    if (ids_add(&sym, t->byte_ids[(unsigned char)s[i + k]]))
                        goto out;
                i += l;
                continue;
            }
        }
        if (id < 0) {
            if (t->unk_id < 0) {
                npu_err(TOK_DOM,
                        "character \"%.*s\" is not in the vocabulary and the model has "
                        "no unk_token",
                        (int)l, s + i);
                st = NPU_ERR_INVALID;
                goto out;
            }
            id = t->unk_id;
            if (t->fuse_unk && sym.n && sym.v[sym.n - 1] == t->unk_id) {
                i += l;
                continue;
            }
        }
        if (ids_add(&sym, id))
            goto out;
        i += l;
    }
    /* merge the lowest-ranked adjacent pair (leftmost first) until none is left: a doubly
     * linked list of symbols and a min-heap of candidate pairs, checked when popped */
    if (sym.n > 1 && (st = bpe_merge(t, &sym)))
        goto out;
    st = NPU_ERR_NOMEM;
    for (size_t i = 0; i < sym.n; i++)
        if (ids_add(out, sym.v[i]))
            goto out;
    st = NPU_OK;
out:
    free(sym.v);
    return st;
}

/* Normalise, pre-tokenise and run the model over a segment between added tokens. */
static enum npu_status
encode_segment(const struct npu_tokenizer *t, const char *s, size_t len, bool at_start,
               struct ids *out)
{
    if (!len)
        return NPU_OK;
    struct buf nb = {0};
    struct pieces pcs = {0};
    enum npu_status st = NPU_ERR_NOMEM;
    if (normalize(t, s, len, &nb))
        goto out;
    if (pretokenize(t, nb.p, nb.n, at_start, &pcs))
        goto out;
    for (size_t i = 0; i < pcs.n; i++)
        if ((st = bpe_piece(t, pcs.v[i].s, pcs.v[i].len, out)))
            goto out;
    st = NPU_OK;
out:
    pieces_free(&pcs);
    free(nb.p);
    return st;
}

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool
is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (unsigned char)c >= 0x80;
}

enum npu_status
npu_tokenizer_encode(const struct npu_tokenizer *t, const char *text, size_t len, int add_special,
                     int32_t **ids, size_t *n)
{
    if (!t || (!text && len) || !ids || !n) {
        npu_err(TOK_DOM, "npu_tokenizer_encode: NULL argument");
        return NPU_ERR_INVALID;
    }
    *ids = NULL;
    *n = 0;
    size_t bad;
    if (!tok_utf8_valid(text, len, &bad)) {
        npu_err(TOK_DOM, "text is not valid UTF-8 (byte 0x%02x at offset %zu)",
                (unsigned char)text[bad], bad);
        return NPU_ERR_INVALID;
    }
    struct ids out = {0};
    enum npu_status st = NPU_ERR_NOMEM;
    if (add_special)
        for (size_t i = 0; i < t->n_prefix; i++)
            if (ids_add(&out, t->prefix[i]))
                goto fail;
    size_t seg = 0, i = 0;
    while (i < len) {
        const struct tok_added *hit = NULL;
        for (size_t k = 0; k < t->n_added; k++) {
            const struct tok_added *a = &t->added[k];
            if (a->len <= len - i && a->content[0] == text[i] &&
                memcmp(text + i, a->content, a->len) == 0) {
                if (a->single_word && ((i > 0 && is_word(text[i - 1])) ||
                                       (i + a->len < len && is_word(text[i + a->len]))))
                    continue;
                hit = a;
                break;
            }
        }
        if (!hit) {
            i += utf8_len((unsigned char)text[i]);
            continue;
        }
        size_t end = i;
        if (hit->lstrip)
            while (end > seg && is_space(text[end - 1]))
                end--;
        if ((st = encode_segment(t, text + seg, end - seg, seg == 0, &out)))
            goto fail;
        if (ids_add(&out, hit->id)) {
            st = NPU_ERR_NOMEM;
            goto fail;
        }
        i += hit->len;
        if (hit->rstrip)
            while (i < len && is_space(text[i]))
                i++;
        seg = i;
    }
    if ((st = encode_segment(t, text + seg, len - seg, seg == 0, &out)))
        goto fail;
    if (add_special)
        for (size_t k = 0; k < t->n_suffix; k++)
            if (ids_add(&out, t->suffix[k])) {
                st = NPU_ERR_NOMEM;
                goto fail;
            }
    if (!out.v) { /* an empty result is still a valid, freeable array */
        out.v = malloc(sizeof(*out.v));
        if (!out.v)
            return NPU_ERR_NOMEM;
    }
    *ids = out.v;
    *n = out.n;
    return NPU_OK;
fail:
    if (st == NPU_ERR_NOMEM)
        npu_err(TOK_DOM, "out of memory while encoding");
    free(out.v);
    return st;
}

int32_t
npu_tokenizer_bos(const struct npu_tokenizer *t)
{
    return t ? t->bos : -1;
}

int32_t
npu_tokenizer_eos(const struct npu_tokenizer *t)
{
    return t ? t->eos : -1;
}

size_t
npu_tokenizer_vocab_size(const struct npu_tokenizer *t)
{
    return t ? t->n_ids : 0;
}

const char *
npu_tokenizer_id_to_token(const struct npu_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || (size_t)id >= t->n_ids)
        return NULL;
    return t->tok[id];
}

int
npu_tokenizer_is_special(const struct npu_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || (size_t)id >= t->n_ids)
        return 0;
    return t->is_added[id] == 2;
}
