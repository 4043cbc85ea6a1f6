// SPDX-License-Identifier: MIT
/*
 * npu-json.c: the JSON reader of npu-json.h. Recursive descent with a depth
 * limit; every node, string and item array lives in an arena of large chunks
 * freed at once. Errors give the line and column of the offending byte.
 */
#include "npu-json.h"
#include "tok-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 128
#define ARENA_CHUNK (1u << 20)

struct arena_chunk {
    struct arena_chunk *next;
    size_t used, size;
    max_align_t data[];
};

struct npu_json_doc {
    struct arena_chunk *chunks;
    struct npu_json root;
};

struct parser {
    const char *p, *start, *end;
    struct npu_json_doc *doc;
    char *err;
    size_t errlen;
    bool failed;
};

static void *
arena_alloc(struct npu_json_doc *doc, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct arena_chunk *c = doc->chunks;
    if (!c || c->size - c->used < n) {
        size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        c->next = doc->chunks;
        doc->chunks = c;
    }
    void *r = (char *)c->data + c->used;
    c->used += n;
    return r;
}

static void fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = true;
    size_t line = 1, col = 1;
    for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (ps->err && ps->errlen)
        snprintf(ps->err, ps->errlen, "line %zu, column %zu: %s", line, col, msg);
}

static void
skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int
hex4(struct parser *ps, uint32_t *out)
{
    if (ps->end - ps->p < 4) {
        fail(ps, "truncated \\u escape");
        return -1;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else {
            fail(ps, "bad hex digit in \\u escape");
            return -1;
        }
    }
    ps->p += 4;
    *out = v;
    return 0;
}

/* Parses a string at ps->p (on the opening quote) into the arena. */
static int
parse_string(struct parser *ps, const char **out, size_t *out_len)
{
    ps->p++; /* opening quote */
    const char *q = ps->p;
    while (q < ps->end && *q != '"') {
        if (*q == '\\')
            q++;
        q++;
    }
    if (q >= ps->end) {
        fail(ps, "unterminated string");
        return -1;
    }
    /* unescaped output is never longer than the raw bytes */
    char *o = arena_alloc(ps->doc, (size_t)(q - ps->p) + 1);
    if (!o) {
        fail(ps, "out of memory");
        return -1;
    }
    size_t n = 0;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            fail(ps, "control character 0x%02x in string", c);
            return -1;
        }
        if (c != '\\') {
            o[n++] = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        char e = *ps->p++;
        switch (e) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (hex4(ps, &cp))
                return -1;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(ps, "lone low surrogate \\u%04X in string", cp);
                return -1;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    fail(ps, "lone high surrogate \\u%04X in string", cp);
                    return -1;
                }
                ps->p += 2;
                if (hex4(ps, &lo))
                    return -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(ps, "high surrogate \\u%04X not followed by a low one", cp);
                    return -1;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += tok_utf8_put(o + n, cp);
            break;
        }
        default:
            ps->p--;
            fail(ps, "bad escape '\\%c' in string", e);
            return -1;
        }
    }
    ps->p++; /* closing quote */
    o[n] = '\0';
    *out = o;
    *out_len = n;
    return 0;
}

static int parse_value(struct parser *ps, struct npu_json *v, int depth);

static int
parse_container(struct parser *ps, struct npu_json *v, int depth, bool object)
{
    char close = object ? '}' : ']';
    ps->p++;
    size_t n = 0, cap = 0;
    struct npu_json *tmp = NULL;
    const char **keys = NULL;
    size_t *klens = NULL;
    int rc = -1;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        rc = 0;
        goto done;
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            struct npu_json *t2 = realloc(tmp, cap * sizeof(*tmp));
            if (!t2)
                goto oom;
            tmp = t2;
            if (object) {
                const char **k2 = realloc(keys, cap * sizeof(*keys));
                if (!k2)
                    goto oom;
                keys = k2;
                size_t *l2 = realloc(klens, cap * sizeof(*klens));
                if (!l2)
                    goto oom;
                klens = l2;
            }
        }
        skip_ws(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a string key in object");
                goto out;
            }
            if (parse_string(ps, &keys[n], &klens[n]))
                goto out;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                fail(ps, "expected ':' after key \"%s\"", keys[n]);
                goto out;
            }
            ps->p++;
        }
        if (parse_value(ps, &tmp[n], depth + 1))
            goto out;
        n++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            break;
        }
        fail(ps, "expected ',' or '%c'", close);
        goto out;
    }
    rc = 0;
done:
    v->type = object ? NPU_JSON_OBJECT : NPU_JSON_ARRAY;
    v->len = n;
    if (n) {
        v->items = arena_alloc(ps->doc, n * sizeof(*tmp));
        if (!v->items)
            goto oom;
        memcpy(v->items, tmp, n * sizeof(*tmp));
        if (object) {
            v->keys = arena_alloc(ps->doc, n * sizeof(*keys));
            v->key_lens = arena_alloc(ps->doc, n * sizeof(*klens));
            if (!v->keys || !v->key_lens)
                goto oom;
            memcpy(v->keys, keys, n * sizeof(*keys));
            memcpy(v->key_lens, klens, n * sizeof(*klens));
        }
    }
    goto out;
oom:
    fail(ps, "out of memory");
    rc = -1;
out:
    free(klens);
    free(keys);
    free(tmp);
    return rc;
}

static int
parse_number(struct parser *ps, struct npu_json *v)
{
    const char *q = ps->p;
    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || *q < '0' || *q > '9') {
        fail(ps, "unexpected character '%c'", *ps->p);
        return -1;
    }
    while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
                           *q == '+' || *q == '-'))
        q++;
    char buf[64];
    size_t n = (size_t)(q - ps->p);
    if (n >= sizeof(buf)) {
        fail(ps, "number too long");
        return -1;
    }
    memcpy(buf, ps->p, n);
    buf[n] = '\0';
    char *endp;
    v->type = NPU_JSON_NUMBER;
    v->num = strtod(buf, &endp);
    if (*endp) {
        fail(ps, "bad number '%s'", buf);
        return -1;
    }
    if (!strpbrk(buf, ".eE")) {
        errno = 0;
        v->i = strtoll(buf, &endp, 10);
        v->is_int = !*endp && errno != ERANGE;
    }
    ps->p = q;
    return 0;
}

static int
literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        fail(ps, "unexpected character '%c'", *ps->p);
        return -1;
    }
    ps->p += n;
    return 0;
}

static int
parse_value(struct parser *ps, struct npu_json *v, int depth)
{
    memset(v, 0, sizeof(*v));
    if (depth > JSON_MAX_DEPTH) {
        fail(ps, "nesting deeper than %d", JSON_MAX_DEPTH);
        return -1;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of input");
        return -1;
    }
    switch (*ps->p) {
    case '{': return parse_container(ps, v, depth, true);
    case '[': return parse_container(ps, v, depth, false);
    case '"': v->type = NPU_JSON_STRING; return parse_string(ps, &v->str, &v->len);
    case 't':
        v->type = NPU_JSON_BOOL;
        v->b = true;
        return literal(ps, "true");
    case 'f': v->type = NPU_JSON_BOOL; return literal(ps, "false");
    case 'n': v->type = NPU_JSON_NULL; return literal(ps, "null");
    default: return parse_number(ps, v);
    }
}

struct npu_json_doc *
npu_json_parse(const char *buf, size_t len, char *err, size_t errlen)
{
    struct npu_json_doc *doc = calloc(1, sizeof(*doc));
    if (!doc) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    struct parser ps = {
        .p = buf, .start = buf, .end = buf + len, .doc = doc, .err = err, .errlen = errlen};
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        ps.p += 3;
    if (parse_value(&ps, &doc->root, 0))
        goto fail;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail(&ps, "trailing data after the document");
        goto fail;
    }
    return doc;
fail:
    npu_json_free(doc);
    return NULL;
}

const struct npu_json *
npu_json_root(const struct npu_json_doc *doc)
{
    return &doc->root;
}

void
npu_json_free(struct npu_json_doc *doc)
{
    if (!doc)
        return;
    struct arena_chunk *c = doc->chunks;
    while (c) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(doc);
}

const struct npu_json *
npu_json_get(const struct npu_json *o, const char *key)
{
    if (!o || o->type != NPU_JSON_OBJECT)
        return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < o->len; i++)
        if (o->key_lens[i] == kl && memcmp(o->keys[i], key, kl) == 0)
            return &o->items[i];
    return NULL;
}

const char *
npu_json_type_name(enum npu_json_type t)
{
    switch (t) {
    case NPU_JSON_NULL: return "null";
    case NPU_JSON_BOOL: return "boolean";
    case NPU_JSON_NUMBER: return "number";
    case NPU_JSON_STRING: return "string";
    case NPU_JSON_ARRAY: return "array";
    case NPU_JSON_OBJECT: return "object";
    }
    return "?";
}
