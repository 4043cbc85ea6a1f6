// SPDX-License-Identifier: MIT
/*
 * llm-json.c: the JSON reader of llm-json.h (RFC 8259; recursive descent with
 * a depth limit of 64).
 */
#include "llm-json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

struct parser {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
    bool failed;
};

static void
fail(struct parser *ps, const char *what)
{
    if (ps->failed)
        return;
    ps->failed = true;
    snprintf(ps->err, ps->errlen, "offset %zu: %s", (size_t)(ps->p - ps->start), what);
}

static void
skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static struct llm_json *parse_value(struct parser *ps, int depth);

static int
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool
read_hex4(struct parser *ps, uint32_t *out)
{
    if (ps->end - ps->p < 4) {
        fail(ps, "truncated \\u escape");
        return false;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(ps->p[i]);
        if (h < 0) {
            fail(ps, "bad \\u escape");
            return false;
        }
        v = v * 16 + (uint32_t)h;
    }
    ps->p += 4;
    *out = v;
    return true;
}

static size_t
put_utf8(char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xc0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* ps->p at the opening quote; returns a malloc'd unescaped string */
static char *
parse_string(struct parser *ps)
{
    ps->p++;
    const char *s = ps->p;
    while (ps->p < ps->end && *ps->p != '"') {
        if (*ps->p == '\\')
            ps->p++;
        ps->p++;
    }
    if (ps->p >= ps->end) {
        fail(ps, "unterminated string");
        return NULL;
    }
    size_t raw = (size_t)(ps->p - s);
    char *o = malloc(raw + 1), *w = o;
    if (!o) {
        fail(ps, "out of memory");
        return NULL;
    }
    ps->p = s;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) {
            fail(ps, "control character in string");
            free(o);
            return NULL;
        }
        if (c != '\\') {
            *w++ = (char)c;
            continue;
        }
        char e = *ps->p++;
        switch (e) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (!read_hex4(ps, &cp)) {
                free(o);
                return NULL;
            }
            if (cp >= 0xd800 && cp < 0xdc00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
                ps->p[1] == 'u') {
                ps->p += 2;
                if (!read_hex4(ps, &lo)) {
                    free(o);
                    return NULL;
                }
                if (lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else {
                    w += put_utf8(w, 0xfffd);
                    cp = lo;
                }
            }
            if (cp >= 0xd800 && cp < 0xe000)
                cp = 0xfffd;
            w += put_utf8(w, cp); /* at most 4 bytes for 6+ bytes of escape */
            break;
        }
        default:
            fail(ps, "bad escape in string");
            free(o);
            return NULL;
        }
    }
    ps->p++; /* closing quote */
    *w = 0;
    return o;
}

static bool
push(struct llm_json *j, struct llm_json *kid, char *key, size_t *cap)
{
    if (j->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct llm_json **k = realloc(j->kids, nc * sizeof(*k));
        if (!k)
            return false;
        j->kids = k;
        if (j->type == LLM_JSON_OBJECT) {
            char **ks = realloc(j->keys, nc * sizeof(*ks));
            if (!ks)
                return false;
            j->keys = ks;
        }
        *cap = nc;
    }
    j->kids[j->n] = kid;
    if (j->type == LLM_JSON_OBJECT)
        j->keys[j->n] = key;
    j->n++;
    return true;
}

static struct llm_json *
parse_container(struct parser *ps, int depth, bool object)
{
    struct llm_json *j = calloc(1, sizeof(*j));
    size_t cap = 0;
    if (!j) {
        fail(ps, "out of memory");
        return NULL;
    }
    j->type = object ? LLM_JSON_OBJECT : LLM_JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    char close = object ? '}' : ']';
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return j;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a string key");
                goto bad;
            }
            if (!(key = parse_string(ps)))
                goto bad;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                fail(ps, "expected ':'");
                goto bad;
            }
            ps->p++;
        }
        struct llm_json *v = parse_value(ps, depth + 1);
        if (!v) {
            free(key);
            goto bad;
        }
        if (!push(j, v, key, &cap)) {
            free(key);
            llm_json_free(v);
            fail(ps, "out of memory");
            goto bad;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return j;
        }
        fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
        goto bad;
    }
bad:
    llm_json_free(j);
    return NULL;
}

static struct llm_json *
parse_value(struct parser *ps, int depth)
{
    if (depth > MAX_DEPTH) {
        fail(ps, "nested too deeply");
        return NULL;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of text");
        return NULL;
    }
    char c = *ps->p;
    if (c == '{' || c == '[')
        return parse_container(ps, depth, c == '{');
    struct llm_json *j = calloc(1, sizeof(*j));
    if (!j) {
        fail(ps, "out of memory");
        return NULL;
    }
    size_t left = (size_t)(ps->end - ps->p);
    if (c == '"') {
        j->type = LLM_JSON_STRING;
        if (!(j->s = parse_string(ps))) {
            free(j);
            return NULL;
        }
    } else if (left >= 4 && !memcmp(ps->p, "true", 4)) {
        j->type = LLM_JSON_BOOL;
        j->b = true;
        ps->p += 4;
    } else if (left >= 5 && !memcmp(ps->p, "false", 5)) {
        j->type = LLM_JSON_BOOL;
        ps->p += 5;
    } else if (left >= 4 && !memcmp(ps->p, "null", 4)) {
        j->type = LLM_JSON_NULL;
        ps->p += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t k = 0;
        bool frac = false;
        while (ps->p < ps->end && k < sizeof(buf) - 1 && strchr("+-0123456789.eE", *ps->p)) {
            if (strchr(".eE", *ps->p))
                frac = true;
            buf[k++] = *ps->p++;
        }
        buf[k] = 0;
        char *e;
        j->type = LLM_JSON_NUMBER;
        j->num = strtod(buf, &e);
        if (*e || k == 0 || (k == 1 && buf[0] == '-')) {
            free(j);
            fail(ps, "bad number");
            return NULL;
        }
        j->is_int = !frac && fabs(j->num) < 9.0e18;
        j->i = j->is_int ? strtoll(buf, NULL, 10) : (int64_t)j->num;
    } else {
        free(j);
        fail(ps, "unexpected character");
        return NULL;
    }
    return j;
}

struct llm_json *
llm_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    struct parser ps = {text, text + len, text, err, errlen, false};
    struct llm_json *j = parse_value(&ps, 0);
    if (!j)
        return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail(&ps, "text after the JSON value");
        llm_json_free(j);
        return NULL;
    }
    return j;
}

void
llm_json_free(struct llm_json *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n; i++) {
        llm_json_free(j->kids[i]);
        if (j->keys)
            free(j->keys[i]);
    }
    free(j->kids);
    free(j->keys);
    free(j->s);
    free(j);
}

const struct llm_json *
llm_json_get(const struct llm_json *j, const char *key)
{
    if (!j || j->type != LLM_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < j->n; i++)
        if (!strcmp(j->keys[i], key))
            return j->kids[i];
    return NULL;
}
