// SPDX-License-Identifier: MIT
/*
 * shlo-lex.c: the character-level helpers of the StableHLO text reader:
 * cleaning the text (locations, comments), statement extents by bracket
 * nesting, MLIR types (`tensor<2x3xf32>`), integer lists in their several
 * spellings (`[1, 2]`, `array<i64: 1, 2>`, `dense<[1, 2]>`) and the elements
 * of `dense<...>` constants. Everything works on [p, end) ranges of the
 * cleaned text and never reads past end.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shlo-priv.h"

bool
shlo_is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$' || c == '-';
}

const char *
shlo_ws(const char *p, const char *end)
{
    while (p < end && isspace((unsigned char)*p))
        p++;
    return p;
}

/* Past the string literal starting at p (*p == '"'). */
const char *
shlo_skip_string(const char *p, const char *end)
{
    p++;
    while (p < end && *p != '"') {
        if (*p == '\\' && p + 1 < end)
            p++;
        p++;
    }
    return p < end ? p + 1 : end;
}

/* Removes `loc(...)` (balanced), `#loc... = ...` lines and `//` comments,
 * keeping newlines so line numbers stay those of the input. */
char *
shlo_clean(const char *text, size_t len)
{
    char *o = malloc(len + 1);
    if (!o)
        return NULL;
    size_t n = 0;
    const char *p = text, *end = text + len;
    bool line_start = true;
    while (p < end) {
        if (line_start) {
            const char *q = p;
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            if (q < end && *q == '#' && end - q >= 4 && !strncmp(q, "#loc", 4)) {
                while (q < end && *q != '\n')
                    q++;
                p = q;
                continue;
            }
        }
        char c = *p;
        line_start = c == '\n';
        if (c == '"') {
            const char *q = shlo_skip_string(p, end);
            memcpy(o + n, p, (size_t)(q - p));
            n += (size_t)(q - p);
            p = q;
            continue;
        }
        if (c == '/' && p + 1 < end && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        if (c == 'l' && end - p >= 4 && !strncmp(p, "loc(", 4) &&
            (n == 0 || !shlo_is_ident(o[n - 1]))) {
            int depth = 0;
            const char *q = p + 3;
            while (q < end) {
                if (*q == '"') {
                    q = shlo_skip_string(q, end);
                    continue;
                }
                if (*q == '(')
                    depth++;
                else if (*q == ')' && --depth == 0) {
                    q++;
                    break;
                }
                if (*q == '\n')
                    o[n++] = '\n';
                q++;
            }
            p = q;
            continue;
        }
        o[n++] = c;
        p++;
    }
    o[n] = 0;
    return o;
}

/* Nesting step for (, [, {, < and their closers; `->` is not a closer. */
static int
nest(const char *p)
{
    switch (*p) {
    case '(':
    case '[':
    case '{':
    case '<': return 1;
    case ')':
    case ']':
    case '}': return -1;
    case '>': return -1;
    default: return 0;
    }
}

/* End of the statement starting at p: the first newline at nesting depth 0
 * (or a closing brace at depth 0, which ends the enclosing block). */
const char *
shlo_stmt_end(const char *p, const char *end)
{
    int depth = 0;
    const char *start = p;
    while (p < end) {
        if (*p == '"') {
            p = shlo_skip_string(p, end);
            continue;
        }
        if (*p == '>' && p > start && p[-1] == '-') {
            p++;
            continue;
        }
        int d = nest(p);
        if (d < 0 && depth == 0)
            return p;
        depth += d;
        if (*p == '\n' && depth <= 0)
            return p;
        p++;
    }
    return end;
}

/* Past the bracketed group opening at p ((, [, { or <). */
const char *
shlo_skip_group(const char *p, const char *end)
{
    int depth = 0;
    while (p < end) {
        if (*p == '"') {
            p = shlo_skip_string(p, end);
            continue;
        }
        if (*p == '>' && p[-1] == '-') {
            p++;
            continue;
        }
        depth += nest(p);
        p++;
        if (depth <= 0)
            return p;
    }
    return end;
}

/* Finds `key` as a whole word followed by `=` in [p, end) at any depth;
 * returns the position after `=` and spaces, or NULL. */
const char *
shlo_find_attr(const char *p, const char *end, const char *key)
{
    size_t kl = strlen(key);
    for (const char *q = p; q + kl <= end; q++) {
        if (*q == '"') {
            q = shlo_skip_string(q, end) - 1;
            continue;
        }
        if (memcmp(q, key, kl) || (q > p && shlo_is_ident(q[-1])) ||
            (q + kl < end && shlo_is_ident(q[kl])))
            continue;
        const char *r = shlo_ws(q + kl, end);
        if (r < end && *r == '=' && (r + 1 >= end || r[1] != '='))
            return shlo_ws(r + 1, end);
    }
    return NULL;
}

static bool
parse_i64(const char **pp, const char *end, int64_t *v)
{
    const char *p = shlo_ws(*pp, end);
    char buf[32];
    size_t n = 0;
    if (p < end && (*p == '-' || *p == '+'))
        buf[n++] = *p++;
    while (p < end && isdigit((unsigned char)*p) && n < sizeof buf - 1)
        buf[n++] = *p++;
    buf[n] = 0;
    if (!n || !isdigit((unsigned char)buf[n - 1]))
        return false;
    *v = strtoll(buf, NULL, 10);
    *pp = p;
    return true;
}

/* An integer list: `[1, 2]`, `array<i64: 1, 2>`, `array<i64>`, `dense<[1, 2]>`,
 * `dense<1>` (one value), or a bare integer. Returns the count, -1 on error. */
int
shlo_int_list(const char **pp, const char *end, int64_t *v, int max)
{
    const char *p = shlo_ws(*pp, end);
    int n = 0;
    char close = 0;
    if (end - p >= 6 && !strncmp(p, "array<", 6)) {
        p += 6;
        while (p < end && *p != ':' && *p != '>')
            p++;
        if (p < end && *p == ':')
            p++;
        close = '>';
    } else if (end - p >= 6 && !strncmp(p, "dense<", 6)) {
        p = shlo_ws(p + 6, end);
        if (p < end && *p == '[')
            p++;
        close = '>';
    } else if (p < end && *p == '[') {
        p++;
        close = ']';
    } else {
        int64_t x;
        if (!parse_i64(&p, end, &x) || max < 1)
            return -1;
        v[0] = x;
        *pp = p;
        return 1;
    }
    for (;;) {
        p = shlo_ws(p, end);
        if (p < end && (*p == close || *p == ']')) {
            if (*p == ']' && close == '>')
                p = shlo_ws(p + 1, end);
            if (p < end && *p == close)
                p++;
            break;
        }
        int64_t x;
        if (n >= max || !parse_i64(&p, end, &x))
            return -1;
        v[n++] = x;
        p = shlo_ws(p, end);
        if (p < end && *p == ',')
            p++;
    }
    *pp = p;
    return n;
}

static enum npu_dtype
elem_type(const char *s, size_t n)
{
    static const struct {
        const char *name;
        enum npu_dtype dt;
    } tab[] = {
        {"f32", NPU_DTYPE_FP32},    {"f16", NPU_DTYPE_FP16},    {"f64", NPU_DTYPE_FP64},
        {"i1", NPU_DTYPE_BOOL},     {"i8", NPU_DTYPE_INT8},     {"i16", NPU_DTYPE_INT16},
        {"i32", NPU_DTYPE_INT32},   {"i64", NPU_DTYPE_INT64},   {"ui8", NPU_DTYPE_UINT8},
        {"ui16", NPU_DTYPE_UINT16}, {"ui32", NPU_DTYPE_UINT32}, {"ui64", NPU_DTYPE_UINT64},
        {"si8", NPU_DTYPE_INT8},    {"si16", NPU_DTYPE_INT16},  {"si32", NPU_DTYPE_INT32},
        {"si64", NPU_DTYPE_INT64},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strlen(tab[i].name) == n && !strncmp(tab[i].name, s, n))
            return tab[i].dt;
    return NPU_DTYPE_UNDEFINED;
}

/* `tensor<2x3xf32>` / `tensor<f32>`. On error, why says what is wrong. */
bool
shlo_parse_type(const char **pp, const char *end, struct shlo_type *t, char *why, size_t wlen)
{
    const char *p = shlo_ws(*pp, end);
    memset(t, 0, sizeof *t);
    if (end - p < 7 || strncmp(p, "tensor<", 7)) {
        const char *q = p;
        while (q < end && q - p < 40 && !isspace((unsigned char)*q) && *q != ',' && *q != ')')
            q++;
        snprintf(why, wlen, "expected a ranked tensor type, found '%.*s'", (int)(q - p), p);
        return false;
    }
    p += 7;
    for (;;) {
        if (p < end && (*p == '?' || (*p == '*'))) {
            snprintf(why, wlen, "dynamic shapes are not supported (tensor<%c...>)", *p);
            return false;
        }
        if (p < end && isdigit((unsigned char)*p)) {
            int64_t d = 0;
            while (p < end && isdigit((unsigned char)*p)) {
                d = d * 10 + (*p - '0');
                if (d > ((int64_t)1 << 40)) {
                    snprintf(why, wlen, "dimension too large");
                    return false;
                }
                p++;
            }
            if (p >= end || *p != 'x') {
                snprintf(why, wlen, "malformed tensor type");
                return false;
            }
            if (t->ndim >= NPU_MAX_DIMS) {
                snprintf(why, wlen, "more than %d dimensions", NPU_MAX_DIMS);
                return false;
            }
            t->dims[t->ndim++] = d;
            p++;
            continue;
        }
        break;
    }
    const char *s = p;
    while (p < end && isalnum((unsigned char)*p))
        p++;
    t->dt = elem_type(s, (size_t)(p - s));
    if (!t->dt) {
        snprintf(why, wlen, "element type '%.*s' is not supported", (int)(p - s > 20 ? 20 : p - s),
                 s);
        return false;
    }
    p = shlo_ws(p, end);
    if (p < end && *p == ',') { /* encoding: not ours */
        snprintf(why, wlen, "tensor encodings are not supported");
        return false;
    }
    if (p >= end || *p != '>') {
        snprintf(why, wlen, "malformed tensor type");
        return false;
    }
    *pp = p + 1;
    return true;
}

/* Parses one element token of a dense literal into a double (or the raw
 * bits of a hex literal, *is_hex set). */
static bool
dense_elem(const char **pp, const char *end, double *v, uint64_t *bits, bool *is_hex)
{
    const char *p = shlo_ws(*pp, end);
    *is_hex = false;
    if (end - p >= 4 && !strncmp(p, "true", 4)) {
        *v = 1;
        *pp = p + 4;
        return true;
    }
    if (end - p >= 5 && !strncmp(p, "false", 5)) {
        *v = 0;
        *pp = p + 5;
        return true;
    }
    if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        const char *q = p + 2;
        uint64_t b = 0;
        int nd = 0;
        while (q < end && isxdigit((unsigned char)*q) && nd < 16) {
            int c = *q;
            b = b << 4 | (uint64_t)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
            q++;
            nd++;
        }
        if (!nd)
            return false;
        *bits = b;
        *is_hex = true;
        *pp = q;
        return true;
    }
    char buf[64];
    size_t n = 0;
    while (p < end && n < sizeof buf - 1 &&
           (isalnum((unsigned char)*p) || *p == '-' || *p == '+' || *p == '.'))
        buf[n++] = *p++;
    buf[n] = 0;
    if (!n)
        return false;
    char *e;
    if (!strcmp(buf, "inf") || !strcmp(buf, "+inf"))
        *v = INFINITY;
    else if (!strcmp(buf, "-inf"))
        *v = -INFINITY;
    else if (!strcmp(buf, "nan"))
        *v = NAN;
    else {
        *v = strtod(buf, &e);
        if (*e)
            return false;
    }
    *pp = p;
    return true;
}

static void
put_elem(void *data, enum npu_dtype dt, int64_t i, double v, uint64_t bits, bool is_hex)
{
    size_t es = npu_dtype_size(dt);
    if (is_hex) { /* the element's own bit pattern */
        memcpy((char *)data + i * (int64_t)es, &bits, es);
        return;
    }
    switch (dt) {
    case NPU_DTYPE_FP32: ((float *)data)[i] = (float)v; break;
    case NPU_DTYPE_FP64: ((double *)data)[i] = v; break;
    case NPU_DTYPE_FP16: ((uint16_t *)data)[i] = npu_fp32_to_fp16((float)v); break;
    case NPU_DTYPE_BOOL: ((uint8_t *)data)[i] = v != 0; break;
    case NPU_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)v; break;
    case NPU_DTYPE_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
    case NPU_DTYPE_INT16: ((int16_t *)data)[i] = (int16_t)v; break;
    case NPU_DTYPE_UINT16: ((uint16_t *)data)[i] = (uint16_t)v; break;
    case NPU_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)v; break;
    case NPU_DTYPE_UINT32: ((uint32_t *)data)[i] = (uint32_t)v; break;
    case NPU_DTYPE_INT64: ((int64_t *)data)[i] = (int64_t)v; break;
    case NPU_DTYPE_UINT64: ((uint64_t *)data)[i] = (uint64_t)v; break;
    default: break;
    }
}

/* The elements of `dense<...>` (p just after "dense<") into data (numel
 * elements of dt): a splat, a nested list, or a "0x..." hex blob. */
bool
shlo_parse_dense(const char *p, const char *end, enum npu_dtype dt, int64_t numel, void *data,
                 char *why, size_t wlen)
{
    p = shlo_ws(p, end);
    size_t es = npu_dtype_size(dt);
    if (p < end && *p == '"') { /* hex blob of the raw little-endian bytes */
        const char *q = shlo_skip_string(p, end) - 1;
        p++;
        if (q - p < 2 || p[0] != '0' || p[1] != 'x') {
            snprintf(why, wlen, "dense string literal is not a hex blob");
            return false;
        }
        p += 2;
        size_t nhex = (size_t)(q - p);
        size_t want = (size_t)numel * es;
        if (nhex != 2 * want && nhex != 2 * es) {
            snprintf(why, wlen, "hex blob has %zu bytes, the type needs %zu", nhex / 2, want);
            return false;
        }
        unsigned char *o = data;
        for (size_t i = 0; i < nhex / 2; i++) {
            int hi = p[2 * i], lo = p[2 * i + 1];
            if (!isxdigit(hi) || !isxdigit(lo)) {
                snprintf(why, wlen, "bad hex digit in dense blob");
                return false;
            }
            o[i] = (unsigned char)((isdigit(hi) ? hi - '0' : tolower(hi) - 'a' + 10) << 4 |
                                   (isdigit(lo) ? lo - '0' : tolower(lo) - 'a' + 10));
        }
        if (nhex == 2 * es && numel > 1) /* splat blob */
            for (int64_t i = 1; i < numel; i++)
                memcpy(o + i * (int64_t)es, o, es);
        return true;
    }
    int64_t n = 0;
    int depth = 0;
    while (p < end) {
        p = shlo_ws(p, end);
        if (p >= end)
            break;
        if (*p == '[') {
            depth++;
            p++;
            continue;
        }
        if (*p == ']') {
            depth--;
            p++;
            continue;
        }
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '>' && depth == 0)
            break;
        if (*p == '(') {
            snprintf(why, wlen, "complex constants are not supported");
            return false;
        }
        double v = 0;
        uint64_t bits = 0;
        bool hex;
        if (!dense_elem(&p, end, &v, &bits, &hex)) {
            snprintf(why, wlen, "malformed dense element");
            return false;
        }
        if (n >= numel) {
            snprintf(why, wlen, "dense literal has more than the %lld elements of its type",
                     (long long)numel);
            return false;
        }
        put_elem(data, dt, n++, v, bits, hex);
    }
    if (n == 1 && numel > 1) {
        for (int64_t i = 1; i < numel; i++)
            memcpy((char *)data + i * (int64_t)es, data, es);
        n = numel;
    }
    if (n != numel) {
        snprintf(why, wlen, "dense literal has %lld elements, its type %lld", (long long)n,
                 (long long)numel);
        return false;
    }
    return true;
}
