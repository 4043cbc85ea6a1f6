/* SPDX-License-Identifier: MIT */
/*
 * npu-golden.c: parser and writer of the golden-regcmd v1 text format (npu-golden.h).
 * Malformed input is reported with the line number and never crashes; the parsed structure
 * keeps header lines and task keys in source order so that writing it back reproduces the
 * file byte for byte.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "npu-golden.h"

#define FORMAT_LINE "format: golden-regcmd v1"

struct parser {
    struct npu_golden *g;
    const char *name;
    int line;
    enum npu_status st;
};

static void __attribute__((format(printf, 2, 3))) perr(struct parser *p, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (p->st != NPU_OK)
        return;
    p->st = NPU_ERR_CORRUPT;
    n = snprintf(p->g->errmsg, sizeof(p->g->errmsg), "%s:%d: ", p->name, p->line);
    if (n < 0 || (size_t)n >= sizeof(p->g->errmsg))
        return;
    va_start(ap, fmt);
    vsnprintf(p->g->errmsg + n, sizeof(p->g->errmsg) - (size_t)n, fmt, ap);
    va_end(ap);
}

static char *
xstrndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);

    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static bool
grow(void **p, uint32_t n, size_t es)
{
    /* Capacity doubles at powers of two: n is the current count. */
    void *np;
    uint32_t cap;

    if (n && (n & (n - 1)))
        return true;
    cap = n ? n * 2 : 4;
    if (!cap || (size_t)cap > SIZE_MAX / es)
        return false;
    np = realloc(*p, (size_t)cap * es);
    if (!np)
        return false;
    *p = np;
    return true;
}

enum npu_status
npu_golden_add_header(struct npu_golden *g, const char *key, const char *value)
{
    struct npu_golden_kv *kv;

    if (!grow((void **)&g->header, g->n_header, sizeof(*g->header)))
        return NPU_ERR_NOMEM;
    kv = &g->header[g->n_header];
    kv->key = strdup(key);
    kv->value = value ? strdup(value) : NULL;
    if (!kv->key || (value && !kv->value)) {
        free(kv->key);
        free(kv->value);
        return NPU_ERR_NOMEM;
    }
    g->n_header++;
    return NPU_OK;
}

static enum npu_status
add_buffer_entry(struct npu_golden *g, const char *name, size_t name_len, uint32_t start,
                 uint32_t size, const char *note)
{
    struct npu_golden_buffer *b;

    if (!grow((void **)&g->buffers, g->n_buffers, sizeof(*g->buffers)))
        return NPU_ERR_NOMEM;
    b = &g->buffers[g->n_buffers];
    b->name = xstrndup(name, name_len);
    b->note = strdup(note ? note : "");
    b->start = start;
    b->size = size;
    if (!b->name || !b->note) {
        free(b->name);
        free(b->note);
        return NPU_ERR_NOMEM;
    }
    g->n_buffers++;
    return NPU_OK;
}

enum npu_status
npu_golden_add_buffer(struct npu_golden *g, const char *name, uint32_t start, uint32_t size,
                      const char *note)
{
    char line[512];
    enum npu_status st;

    if (!name || !*name || strpbrk(name, " \t+@"))
        return NPU_ERR_INVALID;
    snprintf(line, sizeof(line), "%s 0x%08x 0x%x%s%s", name, start, size, note && *note ? " " : "",
             note ? note : "");
    st = npu_golden_add_header(g, "buffer", line);
    if (st == NPU_OK)
        st = add_buffer_entry(g, name, strlen(name), start, size, note);
    return st;
}

struct npu_golden_task *
npu_golden_add_task(struct npu_golden *g, uint32_t index)
{
    struct npu_golden_task *t;

    if (!grow((void **)&g->tasks, g->n_tasks, sizeof(*g->tasks)))
        return NULL;
    t = &g->tasks[g->n_tasks++];
    memset(t, 0, sizeof(*t));
    t->index = index;
    t->amount = t->enable = t->int_mask = t->addr = -1;
    t->chain = t->next = t->dup_of = t->op_idx = -1;
    return t;
}

static enum npu_status
task_set_n(struct npu_golden_task *t, const char *key, size_t kl, const char *value, size_t vl)
{
    struct npu_golden_kv *kv;

    if (!grow((void **)&t->keys, t->n_keys, sizeof(*t->keys)))
        return NPU_ERR_NOMEM;
    kv = &t->keys[t->n_keys];
    kv->key = xstrndup(key, kl);
    kv->value = xstrndup(value, vl);
    if (!kv->key || !kv->value) {
        free(kv->key);
        free(kv->value);
        return NPU_ERR_NOMEM;
    }
    t->n_keys++;
    return NPU_OK;
}

enum npu_status
npu_golden_task_set(struct npu_golden_task *t, const char *key, const char *value)
{
    for (uint32_t i = 0; i < t->n_keys; i++) {
        if (!strcmp(t->keys[i].key, key)) {
            char *v = strdup(value);
            if (!v)
                return NPU_ERR_NOMEM;
            free(t->keys[i].value);
            t->keys[i].value = v;
            return NPU_OK;
        }
    }
    return task_set_n(t, key, strlen(key), value, strlen(value));
}

enum npu_status
npu_golden_task_add_qword(struct npu_golden_task *t, uint64_t q, uint32_t flags, int32_t buffer,
                          uint32_t buf_offset)
{
    if (!grow((void **)&t->q, t->n_q, sizeof(*t->q)))
        return NPU_ERR_NOMEM;
    t->q[t->n_q++] = (struct npu_golden_qword){q, flags, buffer, buf_offset};
    return NPU_OK;
}

const char *
npu_golden_task_get(const struct npu_golden_task *t, const char *key)
{
    for (uint32_t i = 0; i < t->n_keys; i++)
        if (!strcmp(t->keys[i].key, key))
            return t->keys[i].value;
    return NULL;
}

const char *
npu_golden_header(const struct npu_golden *g, const char *key)
{
    for (uint32_t i = 0; i < g->n_header; i++)
        if (g->header[i].value && !strcmp(g->header[i].key, key))
            return g->header[i].value;
    return NULL;
}

int
npu_golden_find_buffer(const struct npu_golden *g, const char *name)
{
    for (uint32_t i = 0; i < g->n_buffers; i++)
        if (!strcmp(g->buffers[i].name, name))
            return (int)i;
    return -1;
}

/* Parses an integer that must fill the whole string; false otherwise. */
static bool
parse_int(const char *s, int64_t *out)
{
    char *end;
    long long v;

    if (!*s || isspace((unsigned char)*s))
        return false;
    errno = 0;
    v = strtoll(s, &end, 0);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool
parse_hex_n(const char *s, size_t n, unsigned maxdig, uint64_t *out)
{
    uint64_t v = 0;

    if (!n || n > maxdig)
        return false;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (!isxdigit(c))
            return false;
        v = v << 4 | (uint64_t)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
    }
    *out = v;
    return true;
}

/* Recomputes the known task keys; a present key with a malformed number is an error. */
static enum npu_status
index_task(struct npu_golden_task *t, char *why, size_t why_len)
{
    static const struct {
        const char *key;
        size_t off;
    } known[] = {
        {"amount", offsetof(struct npu_golden_task, amount)},
        {"enable", offsetof(struct npu_golden_task, enable)},
        {"int_mask", offsetof(struct npu_golden_task, int_mask)},
        {"addr", offsetof(struct npu_golden_task, addr)},
        {"chain", offsetof(struct npu_golden_task, chain)},
        {"next", offsetof(struct npu_golden_task, next)},
        {"dup_of", offsetof(struct npu_golden_task, dup_of)},
        {"op_idx", offsetof(struct npu_golden_task, op_idx)},
    };
    for (size_t k = 0; k < NPU_ARRAY_SIZE(known); k++) {
        int64_t *dst = (int64_t *)((char *)t + known[k].off);
        const char *v = npu_golden_task_get(t, known[k].key);

        *dst = -1;
        /* "none" means absent; a number may carry a note in parentheses ("0x300(assumed)"). */
        if (!v || !strcmp(v, "none"))
            continue;
        char num[32];
        size_t nl = strcspn(v, "(");
        if (nl >= sizeof(num) || (v[nl] == '(' && v[strlen(v) - 1] != ')'))
            nl = sizeof(num) - 1, num[0] = '\0';
        else
            memcpy(num, v, nl), num[nl] = '\0';
        if (!parse_int(num, dst) || *dst < 0 || *dst > UINT32_MAX) {
            snprintf(why, why_len, "task %u: %s=%s is not a number", t->index, known[k].key, v);
            return NPU_ERR_CORRUPT;
        }
    }
    return NPU_OK;
}

enum npu_status
npu_golden_index(struct npu_golden *g)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < g->n_tasks; i++) {
        if (index_task(&g->tasks[i], g->errmsg, sizeof(g->errmsg)) != NPU_OK)
            return NPU_ERR_CORRUPT;
        for (uint32_t j = 0; j < g->tasks[i].n_q; j++)
            n += !!(g->tasks[i].q[j].flags & NPU_GQ_RELOC);
    }
    free(g->relocs);
    g->relocs = NULL;
    g->n_relocs = 0;
    if (!n)
        return NPU_OK;
    g->relocs = calloc(n, sizeof(*g->relocs));
    if (!g->relocs)
        return NPU_ERR_NOMEM;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        for (uint32_t j = 0; j < g->tasks[i].n_q; j++) {
            const struct npu_golden_qword *q = &g->tasks[i].q[j];
            if (q->flags & NPU_GQ_RELOC)
                g->relocs[g->n_relocs++] =
                    (struct npu_golden_reloc){i, j, q->buffer, q->buf_offset};
        }
    return NPU_OK;
}

static void
parse_header(struct parser *p, const char *s, size_t n)
{
    const char *colon;
    char *key = NULL, *val = NULL;

    /* "# key: value"; a comment without ": " is kept as a key-only line. */
    colon = memmem(s, n, ": ", 2);
    key = xstrndup(s, colon ? (size_t)(colon - s) : n);
    if (colon)
        val = xstrndup(colon + 2, n - (size_t)(colon + 2 - s));
    if (!key || (colon && !val)) {
        p->st = NPU_ERR_NOMEM;
        goto out;
    }
    if (npu_golden_add_header(p->g, key, val) != NPU_OK) {
        p->st = NPU_ERR_NOMEM;
        goto out;
    }
    if (val && !strcmp(key, "buffer")) {
        /* name START SIZE [note] */
        const char *v = val, *nm, *e;
        int64_t start, size;
        char tok[32];

        nm = v;
        while (*v && *v != ' ')
            v++;
        size_t nl = (size_t)(v - nm);
        for (int k = 0; k < 2; k++) {
            while (*v == ' ')
                v++;
            e = v;
            while (*e && *e != ' ')
                e++;
            if ((size_t)(e - v) >= sizeof(tok) || e == v) {
                perr(p, "buffer line needs: name START SIZE note");
                goto out;
            }
            memcpy(tok, v, (size_t)(e - v));
            tok[e - v] = '\0';
            if (!parse_int(tok, k ? &size : &start) || (k ? size : start) < 0 ||
                (k ? size : start) > UINT32_MAX) {
                perr(p, "buffer %s: bad %s '%s'", tok, k ? "size" : "start", tok);
                goto out;
            }
            v = e;
        }
        while (*v == ' ')
            v++;
        if (!nl || memchr(nm, '+', nl) || memchr(nm, '@', nl)) {
            perr(p, "buffer line has no usable name");
            goto out;
        }
        if (start + size > ((int64_t)1 << 32)) {
            perr(p, "buffer %.*s crosses 4 GiB", (int)nl, nm);
            goto out;
        }
        for (uint32_t i = 0; i < p->g->n_buffers; i++)
            if (strlen(p->g->buffers[i].name) == nl && !memcmp(p->g->buffers[i].name, nm, nl)) {
                perr(p, "buffer %.*s declared twice", (int)nl, nm);
                goto out;
            }
        if (add_buffer_entry(p->g, nm, nl, (uint32_t)start, (uint32_t)size, v) != NPU_OK)
            p->st = NPU_ERR_NOMEM;
    }
out:
    free(key);
    free(val);
}

static void
parse_task(struct parser *p, const char *s, size_t n)
{
    const char *e = s + n, *c = s + 5; /* after "task " */
    const char *num = c;
    int64_t idx;
    char tmp[24];
    struct npu_golden_task *t;

    while (c < e && *c != ' ')
        c++;
    if (c == num || (size_t)(c - num) >= sizeof(tmp)) {
        perr(p, "task line needs an index: 'task N key=value ...'");
        return;
    }
    memcpy(tmp, num, (size_t)(c - num));
    tmp[c - num] = '\0';
    if (!parse_int(tmp, &idx) || idx < 0 || idx > UINT32_MAX) {
        perr(p, "bad task index '%s'", tmp);
        return;
    }
    t = npu_golden_add_task(p->g, (uint32_t)idx);
    if (!t) {
        p->st = NPU_ERR_NOMEM;
        return;
    }
    t->line = p->line;
    while (c < e) {
        const char *k, *eq, *v;

        if (*c != ' ') {
            perr(p, "task %u: expected ' key=value'", t->index);
            return;
        }
        c++;
        k = c;
        while (c < e && *c != ' ')
            c++;
        eq = memchr(k, '=', (size_t)(c - k));
        if (!eq || eq == k || eq + 1 == c) {
            perr(p, "task %u: '%.*s' is not key=value", t->index, (int)(c - k), k);
            return;
        }
        v = eq + 1;
        if (task_set_n(t, k, (size_t)(eq - k), v, (size_t)(c - v)) != NPU_OK) {
            p->st = NPU_ERR_NOMEM;
            return;
        }
    }
    {
        char why[160];

        if (index_task(t, why, sizeof(why)) != NPU_OK)
            perr(p, "%s", why);
    }
}

static void
parse_qword(struct parser *p, const char *s, size_t n)
{
    const char *e = s + n, *f[4];
    size_t fl[4];
    int nf = 0;
    uint64_t t, o, v;
    uint32_t flags = 0, off = 0;
    int32_t buf = -1;
    struct npu_golden_task *task;

    for (const char *c = s; c < e;) {
        while (c < e && *c == ' ')
            c++;
        if (c == e)
            break;
        if (nf == 4) {
            perr(p, "qword line has more than 4 fields");
            return;
        }
        f[nf] = c;
        while (c < e && *c != ' ')
            c++;
        fl[nf] = (size_t)(c - f[nf]);
        nf++;
    }
    if (nf < 3 || !parse_hex_n(f[0], fl[0], 4, &t) || !parse_hex_n(f[1], fl[1], 4, &o) ||
        !parse_hex_n(f[2], fl[2], 8, &v)) {
        perr(p, "expected a qword line 'TTTT OOOO VVVVVVVV [flag]'");
        return;
    }
    if (!p->g->n_tasks) {
        perr(p, "qword line before the first task line");
        return;
    }
    task = &p->g->tasks[p->g->n_tasks - 1];
    if (task->dup_of >= 0) {
        perr(p, "task %u is dup_of=%lld and must not list qwords", task->index,
             (long long)task->dup_of);
        return;
    }
    if (nf == 4) {
        if (fl[3] == 1 && f[3][0] == '*') {
            flags = NPU_GQ_INSERTED;
        } else if (fl[3] == 2 && !memcmp(f[3], "*?", 2)) {
            flags = NPU_GQ_INSERTED | NPU_GQ_AMBIGUOUS;
        } else if (f[3][0] == '@') {
            const char *plus = memchr(f[3], '+', fl[3]);
            uint64_t ov;
            size_t nl;

            if (!plus || plus == f[3] + 1 || (size_t)(f[3] + fl[3] - plus) < 4 || plus[1] != '0' ||
                plus[2] != 'x' ||
                !parse_hex_n(plus + 3, (size_t)(f[3] + fl[3] - plus - 3), 8, &ov)) {
                perr(p, "address flag must be '@name+0xOFFSET'");
                return;
            }
            nl = (size_t)(plus - f[3] - 1);
            for (uint32_t i = 0; i < p->g->n_buffers; i++)
                if (strlen(p->g->buffers[i].name) == nl &&
                    !memcmp(p->g->buffers[i].name, f[3] + 1, nl))
                    buf = (int32_t)i;
            if (buf < 0) {
                perr(p, "buffer '%.*s' is not declared by a '# buffer:' line", (int)nl, f[3] + 1);
                return;
            }
            flags = NPU_GQ_RELOC;
            off = (uint32_t)ov;
        } else {
            perr(p, "unknown qword flag '%.*s' (expected *, *? or @name+0xOFF)", (int)fl[3], f[3]);
            return;
        }
    }
    if (npu_golden_task_add_qword(task, (t << 48) | (v << 16) | o, flags, buf, off) != NPU_OK)
        p->st = NPU_ERR_NOMEM;
}

static void
check_task_end(struct parser *p)
{
    const struct npu_golden_task *t;

    if (!p->g->n_tasks || p->st != NPU_OK)
        return;
    t = &p->g->tasks[p->g->n_tasks - 1];
    if (t->dup_of >= 0 || t->amount < 0)
        return;
    if ((int64_t)t->n_q != t->amount + 4) {
        int save = p->line;
        p->line = t->line;
        perr(p, "task %u: amount=%lld needs %lld qwords (body + 4 tail), found %u", t->index,
             (long long)t->amount, (long long)t->amount + 4, t->n_q);
        p->line = save;
    }
}

enum npu_status
npu_golden_parse(const char *text, size_t len, const char *name, struct npu_golden *g)
{
    struct parser p = {g, name ? name : "<golden>", 0, NPU_OK};
    const char *s = text, *end = text + len;

    memset(g, 0, sizeof(*g));
    while (s < end && p.st == NPU_OK) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        size_t n;

        p.line++;
        if (le > s && le[-1] == '\r')
            le--;
        n = (size_t)(le - s);
        if (memchr(s, '\0', n)) {
            perr(&p, "NUL byte in text");
        } else if (p.line == 1 &&
                   (n != strlen("# " FORMAT_LINE) || memcmp(s, "# " FORMAT_LINE, n))) {
            perr(&p, "first line must be '# " FORMAT_LINE "'");
        } else if (n == 0) {
            /* blank lines carry nothing */
        } else if (s[0] == '#') {
            if (n >= 2 && s[1] == ' ')
                parse_header(&p, s + 2, n - 2);
            else
                parse_header(&p, s + 1, n - 1);
        } else if (n >= 5 && !memcmp(s, "task ", 5)) {
            check_task_end(&p);
            parse_task(&p, s, n);
        } else {
            parse_qword(&p, s, n);
        }
        s = nl ? nl + 1 : end;
    }
    if (p.st == NPU_OK && !p.line)
        perr(&p, "empty file");
    check_task_end(&p);
    if (p.st == NPU_OK)
        p.st = npu_golden_index(g);
    if (p.st != NPU_OK) {
        char msg[sizeof(g->errmsg)];

        memcpy(msg, g->errmsg, sizeof(msg));
        npu_golden_free(g);
        memcpy(g->errmsg, msg, sizeof(msg));
        if (!msg[0])
            snprintf(g->errmsg, sizeof(g->errmsg), "%s: %s", p.name, npu_status_str(p.st));
    }
    return p.st;
}

enum npu_status
npu_golden_load(const char *path, struct npu_golden *g)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    enum npu_status st;

    memset(g, 0, sizeof(*g));
    if (!f) {
        snprintf(g->errmsg, sizeof(g->errmsg), "%s: %s", path, strerror(errno));
        return NPU_ERR_IO;
    }
    for (;;) {
        if (len == cap) {
            char *nb;
            cap = cap ? cap * 2 : 65536;
            nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(g->errmsg, sizeof(g->errmsg), "%s: out of memory", path);
                return NPU_ERR_NOMEM;
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        snprintf(g->errmsg, sizeof(g->errmsg), "%s: read error", path);
        free(buf);
        fclose(f);
        return NPU_ERR_IO;
    }
    fclose(f);
    st = npu_golden_parse(buf, len, path, g);
    free(buf);
    return st;
}

void
npu_golden_free(struct npu_golden *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n_header; i++) {
        free(g->header[i].key);
        free(g->header[i].value);
    }
    for (uint32_t i = 0; i < g->n_buffers; i++) {
        free(g->buffers[i].name);
        free(g->buffers[i].note);
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        for (uint32_t k = 0; k < g->tasks[i].n_keys; k++) {
            free(g->tasks[i].keys[k].key);
            free(g->tasks[i].keys[k].value);
        }
        free(g->tasks[i].keys);
        free(g->tasks[i].q);
    }
    free(g->header);
    free(g->buffers);
    free(g->tasks);
    free(g->relocs);
    memset(g, 0, sizeof(*g));
}

enum npu_status
npu_golden_write(const struct npu_golden *g, FILE *f)
{
    for (uint32_t i = 0; i < g->n_header; i++) {
        if (g->header[i].value)
            fprintf(f, "# %s: %s\n", g->header[i].key, g->header[i].value);
        else
            fprintf(f, "# %s\n", g->header[i].key);
    }
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const struct npu_golden_task *t = &g->tasks[i];

        fprintf(f, "task %u", t->index);
        for (uint32_t k = 0; k < t->n_keys; k++)
            fprintf(f, " %s=%s", t->keys[k].key, t->keys[k].value);
        fputc('\n', f);
        for (uint32_t j = 0; j < t->n_q; j++) {
            const struct npu_golden_qword *q = &t->q[j];

            fprintf(f, "%04x %04x %08x", (unsigned)(q->q >> 48), (unsigned)(q->q & 0xffff),
                    (unsigned)(q->q >> 16));
            if (q->flags & NPU_GQ_RELOC) {
                if (q->buffer < 0 || (uint32_t)q->buffer >= g->n_buffers)
                    return NPU_ERR_INVALID;
                fprintf(f, " @%s+0x%x", g->buffers[q->buffer].name, q->buf_offset);
            } else if (q->flags & NPU_GQ_AMBIGUOUS) {
                fputs(" *?", f);
            } else if (q->flags & NPU_GQ_INSERTED) {
                fputs(" *", f);
            }
            fputc('\n', f);
        }
    }
    return ferror(f) ? NPU_ERR_IO : NPU_OK;
}

char *
npu_golden_to_string(const struct npu_golden *g, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    enum npu_status st;

    if (!f)
        return NULL;
    st = npu_golden_write(g, f);
    if (fclose(f) || st != NPU_OK) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}
